//! Content fingerprints: identity of a file's bytes that survives renames.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

/// Bytes hashed from each end of a large file.
const SAMPLE: u64 = 64 * 1024;

/// xxh3-128 of the size and the file's content: all of it up to 192 KiB; for larger
/// files the first, middle and last 64 KiB. Reads at most 192 KiB per file. A sampled
/// fingerprint can miss an edit in an unsampled region that keeps the size: exact
/// duplicate detection hashes whole files.
pub fn fingerprint(path: &Path, size_bytes: u64) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Xxh3::new();
    hasher.update(&size_bytes.to_le_bytes());
    let mut buf = vec![0u8; SAMPLE as usize];
    if size_bytes <= 3 * SAMPLE {
        let mut all = Vec::with_capacity(size_bytes as usize);
        file.read_to_end(&mut all)?;
        hasher.update(&all);
    } else {
        for offset in [0, size_bytes / 2 - SAMPLE / 2, size_bytes - SAMPLE] {
            file.seek(SeekFrom::Start(offset))?;
            file.read_exact(&mut buf)?;
            hasher.update(&buf);
        }
    }
    Ok(format!("{:032x}", hasher.digest128()))
}

/// xxh3-128 of every byte `reader` gives, as hex: a whole file's exact hash (duplicates, clip
/// files), where [`fingerprint`] samples.
pub fn whole(mut reader: impl Read) -> std::io::Result<String> {
    let mut hasher = Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:032x}", hasher.digest128()))
}

/// Fingerprint of an object in a store from its listing alone: xxh3-128 of its size and its
/// ETag, else its version id (a store changes both whenever the content changes). The ETag
/// comes first because listings and HEADs both give it, while a versioned bucket's version id
/// comes with a HEAD only (S3's ListObjectsV2 and GCS's XML listing have none): a scan's
/// fingerprint and the loader's check of the same object must agree. `None` when there is
/// neither, and for an empty object (as for an empty file).
pub fn of_listing(size_bytes: u64, e_tag: Option<&str>, version: Option<&str>) -> Option<String> {
    if size_bytes == 0 {
        return None;
    }
    let (what, tag) = match (e_tag, version) {
        (Some(e), _) => ("etag", e),
        (None, Some(v)) => ("version", v),
        (None, None) => return None,
    };
    let mut hasher = Xxh3::new();
    hasher.update(&size_bytes.to_le_bytes());
    hasher.update(what.as_bytes());
    hasher.update(tag.as_bytes());
    Some(format!("{:032x}", hasher.digest128()))
}
