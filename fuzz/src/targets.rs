//! The fuzz targets' bodies: each takes untrusted bytes the way framecull meets them and
//! checks what must hold (no panic, and a property where there is one). `cargo fuzz run
//! TARGET` drives them (fuzz_targets/); the main crate's `tests/it/fuzz_corpus.rs` replays the
//! committed corpus and every crasher through the same functions on the stable toolchain.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use framecull_media::{self as media, Sniffed};

/// A target: it panics when what must hold does not.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("sniff", sniff),
    ("image_header", image_header),
    ("structure", structure),
    ("manifest", manifest),
    ("config", config),
];

/// What a file is, from its first bytes (the walk and the probe ask this of every file).
pub fn sniff(data: &[u8]) {
    let head = &data[..data.len().min(media::sniff::SNIFF_LEN)];
    let again = media::sniff(head);
    // The verdict depends on the first bytes only.
    assert_eq!(format!("{:?}", media::sniff(data)), format!("{again:?}"));
}

/// The image header reader, on what the sniffer calls an image: a size within reason or a
/// reason, never a panic.
pub fn image_header(data: &[u8]) {
    if let Sniffed::Image(format) = media::sniff(data)
        && let Ok(info) = media::image_header(format, data)
    {
        let (w, h) = (info.width.unwrap(), info.height.unwrap());
        assert!(w > 0 && h > 0, "{w}x{h}");
        assert!(info.frame_count.unwrap() >= 1);
    }
}

/// The truncation walkers (JPEG segments, PNG chunks and CRCs, GIF blocks, WebP and BMP
/// sizes): a reason in words or `None`, never a panic.
pub fn structure(data: &[u8]) {
    if let Some(reason) = framecull_analysis::still::structure_error(data) {
        assert!(!reason.trim().is_empty());
    }
}

/// A version's metadata and a JSON-lines data file (chosen by the first byte), as the loader
/// and `framecull diff` open them. Parquet data files are not fuzzed here: polars' decoder
/// aborts the process on some damaged files (an allocation sized by a corrupt field), so a
/// version's data files are checked against the hashes it recorded before they are decoded
/// (`manifest::io::read_checked`).
pub fn manifest(data: &[u8]) {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    if which % 2 == 0 {
        let _ = serde_json::from_slice::<framecull_manifest::VersionMeta>(bytes);
    } else {
        let path = scratch("jsonl");
        std::fs::write(&path, bytes).unwrap();
        let _ = framecull_manifest::read_jsonl(&path);
    }
}

/// `framecull.toml`: settings that parse write back to text that parses to the same.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = toml::from_str::<framecull_analysis::flags::Config>(text) else {
        return;
    };
    let written = toml::to_string(&config).unwrap();
    let again: framecull_analysis::flags::Config = toml::from_str(&written).unwrap();
    assert_eq!(config, again, "{written}");
}

/// A file of this process for a target that must read from a path.
fn scratch(ext: &str) -> PathBuf {
    std::env::temp_dir().join(format!("framecull-fuzz-{}.{ext}", std::process::id()))
}
