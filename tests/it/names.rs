//! Any name the file system allows: bytes that are not UTF-8, newlines, leading dashes, a
//! name that spells an escape. Each file is scanned, analysed, exported and loaded under a
//! printable text that names it exactly (`model::path_text`).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use framecull::loader::{DeviceChoice, Loader, LoaderConfig};
use framecull::media::synth::{ImageKind, Pattern, VideoSpec};

/// (bytes of the name, the text framecull shows for it, what it holds).
const NAMES: &[(&[u8], &str, &str)] = &[
    (b"caf\xe9.png", "caf\\xe9.png", "png"),
    (b"two\nlines.png", "two\\x0alines.png", "png"),
    (b"-dash.png", "-dash.png", "png"),
    (b"lit\\xe9.png", "lit\\\\xe9.png", "png"),
    (b"vid\xff\xfe.mp4", "vid\\xff\\xfe.mp4", "mp4"),
    (b"-new\nline.mp4", "-new\\x0aline.mp4", "mp4"),
    (b"dir\x80/inner.mp4", "dir\\x80/inner.mp4", "mp4"),
    // No extension: found by its content, opened by FFmpeg through a link with no extension.
    (b"stream\xfe", "stream\\xfe", "ts"),
];

fn write(dir: &Path, name: &[u8], holds: &str, i: usize) {
    let path = dir.join(OsStr::from_bytes(name));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Written under a plain name (the encoders take UTF-8 paths), then renamed.
    let plain = format!("plain{i}.{holds}");
    if holds == "png" {
        common::image(dir, &plain, ImageKind::Png, 40 + 8 * i as u32, 32, None);
    } else {
        let mut spec = VideoSpec::new("mpeg4", 96, 64, 25, 12 + 4 * i as u32);
        spec.pattern = Pattern::MovingBox {
            speed: 2 + i as u32,
        };
        common::video(dir, &plain, &spec);
    }
    std::fs::rename(dir.join(&plain), &path).unwrap();
}

#[test]
fn names_of_any_bytes_are_scanned_analysed_exported_and_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for (i, (name, _, holds)) in NAMES.iter().enumerate() {
        write(&data, name, holds, i);
    }
    let project = tmp.path().join("project");
    let p = project.to_str().unwrap();
    let out = common::run(&["scan", data.to_str().unwrap(), "--deep", "--project", p]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));

    let rows = common::list_jsonl(&project);
    let mut shown: Vec<&str> = rows.keys().map(String::as_str).collect();
    let mut expected: Vec<&str> = NAMES.iter().map(|(_, text, _)| *text).collect();
    shown.sort();
    expected.sort();
    assert_eq!(shown, expected);
    for (_, text, holds) in NAMES {
        let row = &rows[*text];
        assert_eq!(row["status"], "ok", "{text}: {row}");
        let errors = row["flags"].as_array().unwrap().iter();
        assert_eq!(
            errors.filter(|f| f["severity"] == "error").count(),
            0,
            "{text}: {row}"
        );
        let measured = if *holds != "png" {
            "motion_mean"
        } else {
            "sharpness"
        };
        assert!(row[measured].is_number(), "{text} analysed: {row}");
    }
    // The text form of the list has one line per file, whatever the names hold.
    let out = common::run(&["list", "--project", p]);
    let listed = common::stdout(&out);
    for (_, text, _) in NAMES {
        assert_eq!(
            listed.lines().filter(|l| l.contains(text)).count(),
            1,
            "{text} in\n{listed}"
        );
    }

    // Exported as text, loaded from the very files.
    let out = common::run(&[
        "export",
        "--name",
        "all",
        "--project",
        p,
        "--format",
        "parquet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let config = LoaderConfig {
        device: DeviceChoice::Cpu,
        workers: 1,
        ..LoaderConfig::default()
    };
    let mut loader = Loader::open(&project.join("manifests/all"), None, config).unwrap();
    let mut loaded = std::collections::BTreeSet::new();
    let batches: Vec<_> = loader.epoch(0).map(|b| b.unwrap()).collect();
    for batch in &batches {
        for window in &batch.windows {
            assert!(!window.frames.is_empty());
            loaded.insert(window.row);
        }
    }
    let s = loader.stats();
    assert!(
        s.skipped_clips.is_empty(),
        "{:?} {:?}",
        s.skipped_clips,
        s.errors
    );
    assert!(s.skipped_windows.is_empty(), "{:?}", s.errors);
    assert_eq!(loaded.len(), NAMES.len(), "every file gave a window");
}

/// The dataset folder itself may have such a name: recorded exactly by the catalog, the
/// manifest's `dataset_root` and a shard's `shard.json`, so a rescan, the loader (which finds
/// the files through `dataset_root`) and a merge of shards all reach the same files.
#[test]
fn a_dataset_folder_whose_name_is_not_utf8_is_recorded_exactly() {
    use std::os::unix::ffi::OsStringExt;
    let tmp = tempfile::tempdir().unwrap();
    // Made under a plain name (the encoders take UTF-8 paths), then renamed.
    let plain = tmp.path().join("plain");
    for (i, (name, _, holds)) in NAMES.iter().enumerate().take(5) {
        write(&plain, name, holds, i);
    }
    let data = tmp.path().join(OsStr::from_bytes(b"set\xe9 \\x41 data"));
    std::fs::rename(&plain, &data).unwrap();
    let run = |args: &[&OsStr]| {
        let out = common::bin().args(args).output().unwrap();
        assert!(
            out.status.code().unwrap_or(2) <= 1,
            "{:?}: {}",
            args,
            common::stderr(&out)
        );
        out
    };
    let project = data.join(".framecull");
    let os = |s: &str| std::ffi::OsString::from(s);
    run(&[&os("scan"), data.as_os_str(), &os("--deep")]);
    // A rescan finds the project's root the same, and nothing to do.
    let again = run(&[&os("scan"), data.as_os_str()]);
    assert!(
        common::stderr(&again).contains("0 probed, 5 unchanged, 0 missing"),
        "{}",
        common::stderr(&again)
    );
    run(&[
        &os("export"),
        &os("--name"),
        &os("all"),
        &os("--project"),
        project.as_os_str(),
    ]);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join("manifests/all/v0001.json")).unwrap())
            .unwrap();
    let recorded = meta["dataset_root"].as_str().unwrap();
    assert!(recorded.ends_with("set\\xe9 \\\\x41 data"), "{recorded}");
    assert_eq!(
        framecull::model::path_of_text(recorded)
            .into_os_string()
            .into_vec(),
        data.clone().into_os_string().into_vec()
    );
    // The loader finds every file through the recorded root.
    let config = LoaderConfig {
        device: DeviceChoice::Cpu,
        workers: 1,
        ..LoaderConfig::default()
    };
    let mut loader = Loader::open(&project.join("manifests/all"), None, config).unwrap();
    let windows: usize = loader.epoch(0).map(|b| b.unwrap().windows.len()).sum();
    let s = loader.stats();
    assert!(s.skipped_clips.is_empty(), "{:?}", s.errors);
    assert_eq!(windows, 5);

    // Shards of it: each records the root in shard.json; the merge takes both.
    let mut shards = Vec::new();
    for i in 0..2 {
        let dir = tmp.path().join(format!("shard-{i}"));
        run(&[
            &os("scan"),
            data.as_os_str(),
            &os("--shard"),
            &os(&format!("{i}/2")),
            &os("--project"),
            dir.as_os_str(),
        ]);
        shards.push(dir);
    }
    let merged = tmp.path().join("merged");
    run(&[
        &os("merge"),
        shards[0].as_os_str(),
        shards[1].as_os_str(),
        &os("--project"),
        merged.as_os_str(),
    ]);
    let rows = common::list_jsonl(&merged);
    assert_eq!(rows.len(), 5, "{:?}", rows.keys());
}
