//! Recursive walk of a dataset folder, or the listing of a dataset URL: which files are
//! media, with size and mtime.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use framecull_media::{self as media, ExtensionClass, Sniffed, Source};
use framecull_model::{OtherFile, OtherStatus};
use framecull_storage::{Object, Remote, StorageError};

/// A file found by the walk.
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// Relative to the dataset root, `/`-separated.
    pub rel_path: String,
    pub source: Source,
    pub size_bytes: u64,
    pub mtime_ns: i64,
    /// The content fingerprint when the listing tells it (objects: size and ETag); local
    /// files are fingerprinted when probed.
    pub fingerprint: Option<String>,
}

/// What the walk found, and the folders it could not read.
#[derive(Debug, Default)]
pub struct WalkResult {
    pub files: Vec<FoundFile>,
    /// Regular files that are not media, and entries that are not regular files (broken
    /// links, FIFOs, devices, sockets), with the reason.
    pub others: Vec<OtherFile>,
    /// Relative folders that could not be listed: files under them are not marked missing.
    pub unreadable_dirs: Vec<String>,
    /// Problems that are not about one file (symlink loops, permissions).
    pub warnings: Vec<String>,
}

/// Walk `root`, following symbolic links (loops are detected and skipped), skipping hidden
/// entries and `skip` (the project folder). Files with a media extension are taken;
/// files with an unknown extension (or none) are taken when their first bytes are media (by
/// the signature table or FFmpeg's format probe). Every other regular file is returned in
/// `others` with the reason, and so is every entry that is not a regular file (a broken
/// symbolic link, a FIFO, a device, a socket): those are only looked at (`lstat`, `stat`),
/// never opened, since a FIFO no one writes to blocks and `/dev/zero` reads without end.
pub fn walk(root: &Path, skip: &[PathBuf]) -> WalkResult {
    walk_where(root, skip, &|_| true)
}

/// [`walk`], taking only the files whose relative path `keep` accepts (a shard's files):
/// the others are not read at all.
pub fn walk_where(root: &Path, skip: &[PathBuf], keep: &dyn Fn(&str) -> bool) -> WalkResult {
    let mut result = WalkResult::default();
    let skip: Vec<PathBuf> = skip.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            if e.depth() == 0 {
                return true;
            }
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            let skipped = e.file_type().is_dir()
                && !skip.is_empty()
                && e.path().canonicalize().is_ok_and(|c| skip.contains(&c));
            !hidden && !skipped
        });
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let rel = e.path().map(|p| relative(root, p)).unwrap_or_default();
                if let Some(reason) = e.path().and_then(broken_link) {
                    if keep(&rel) {
                        result.others.push(OtherFile {
                            path: rel,
                            size_bytes: 0,
                            status: OtherStatus::NotAFile,
                            reason,
                        });
                    }
                } else if e.loop_ancestor().is_some() {
                    result
                        .warnings
                        .push(format!("symbolic link loop skipped: {rel}"));
                } else {
                    if e.depth() > 0 || e.path().is_some_and(|p| p != root) {
                        result.unreadable_dirs.push(rel.clone());
                    }
                    result.warnings.push(format!("cannot read {rel}: {e}"));
                }
                continue;
            }
        };
        if entry.file_type().is_dir() {
            continue;
        }
        let path = entry.path();
        let rel_path = relative(root, path);
        if !keep(&rel_path) {
            continue;
        }
        if !entry.file_type().is_file() {
            result.others.push(OtherFile {
                path: rel_path,
                size_bytes: 0,
                status: OtherStatus::NotAFile,
                reason: not_a_file(&entry),
            });
            continue;
        }
        let source = Source::File(path.to_path_buf());
        let not_media = not_media(&source);
        let meta = match entry.metadata() {
            Ok(m) => m,
            Err(e) => {
                result.warnings.push(format!("cannot stat {rel_path}: {e}"));
                continue;
            }
        };
        if let Some(reason) = not_media {
            result.others.push(OtherFile {
                path: rel_path,
                size_bytes: meta.len(),
                status: OtherStatus::NotMedia,
                reason,
            });
            continue;
        }
        result.files.push(FoundFile {
            rel_path,
            source,
            size_bytes: meta.len(),
            mtime_ns: mtime_ns(&meta),
            fingerprint: None,
        });
    }
    result
}

/// List the objects under a dataset URL, taking those whose relative path `keep` accepts.
/// Objects are classified by name as files are; only those with an unknown extension cost a
/// ranged read of their first bytes.
pub fn list_where(
    remote: &Arc<Remote>,
    keep: &dyn Fn(&str) -> bool,
) -> Result<WalkResult, StorageError> {
    let mut result = WalkResult::default();
    let listing = remote.list()?;
    if listing.is_empty() {
        // A prefix with a typo lists nothing, as an empty one does: say so.
        result.warnings.push(format!(
            "no objects under {}: check the bucket (or host) and the prefix",
            remote.url()
        ));
    }
    for listed in listing {
        if !keep(&listed.rel_path) {
            continue;
        }
        let source = Source::Object(Object {
            remote: remote.clone(),
            rel_path: listed.rel_path.clone(),
            size_bytes: listed.size_bytes,
        });
        if let Some(reason) = not_media(&source) {
            if let Some(e) = source.storage_failure() {
                return Err(e);
            }
            result.others.push(OtherFile {
                path: listed.rel_path,
                size_bytes: listed.size_bytes,
                status: OtherStatus::NotMedia,
                reason,
            });
            continue;
        }
        result.files.push(FoundFile {
            fingerprint: media::fingerprint::of_listing(
                listed.size_bytes,
                listed.e_tag.as_deref(),
                listed.version.as_deref(),
            ),
            rel_path: listed.rel_path,
            source,
            size_bytes: listed.size_bytes,
            mtime_ns: listed.modified_ns,
        });
    }
    Ok(result)
}

/// The reason of a symbolic link whose target does not exist (`broken symbolic link ->
/// TARGET`); `None` when `path` is not one.
fn broken_link(path: &Path) -> Option<String> {
    let link = std::fs::symlink_metadata(path).ok()?;
    if !link.file_type().is_symlink() || std::fs::metadata(path).is_ok() {
        return None;
    }
    let target = std::fs::read_link(path).ok()?;
    Some(format!(
        "broken symbolic link -> {}",
        framecull_model::path_text(target.as_os_str().as_encoded_bytes())
    ))
}

/// Why an entry that is neither a folder nor a regular file is not taken (`not a regular
/// file: FIFO`), with the link that led to it.
fn not_a_file(entry: &walkdir::DirEntry) -> String {
    use std::os::unix::fs::FileTypeExt;
    let t = entry.file_type();
    let what = if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "unknown type"
    };
    match std::fs::read_link(entry.path())
        .ok()
        .filter(|_| entry.path_is_symlink())
    {
        Some(target) => format!(
            "not a regular file: {what}, linked to {}",
            framecull_model::path_text(target.as_os_str().as_encoded_bytes())
        ),
        None => format!("not a regular file: {what}"),
    }
}

/// Why a file is not media, by its extension, else (an extension the table does not know)
/// by its first bytes; `None` when it is media.
fn not_media(source: &Source) -> Option<String> {
    let name = source.name();
    match media::classify_extension(name) {
        ExtensionClass::Image | ExtensionClass::Video => None,
        ExtensionClass::NonMedia => Some(format!(
            "not media: .{} files are not images or videos",
            name.extension()
                .map(|e| e.to_string_lossy().to_lowercase())
                .unwrap_or_default()
        )),
        ExtensionClass::Unknown => not_media_content(source),
    }
}

/// Why a file the extension table does not know is not media by its first bytes (the
/// signature table first, then FFmpeg's own format probe); `None` when it is media.
fn not_media_content(source: &Source) -> Option<String> {
    let head = match source.open().read_prefix(media::FFMPEG_PROBE_LEN as u64) {
        Ok(head) => head,
        Err(e) => return Some(format!("not read: {e}")),
    };
    match media::sniff(&head) {
        Sniffed::Image(_) | Sniffed::Video => None,
        Sniffed::Empty => Some("not media: an empty file".to_string()),
        Sniffed::Unknown if media::ffmpeg_recognises(&head).is_some() => None,
        Sniffed::Unknown => Some(
            "not media: neither its name nor its first bytes are an image or video format FFmpeg knows"
                .to_string(),
        ),
    }
}

/// `root/a/b.mp4` -> `a/b.mp4`, always with `/`.
/// `path` relative to `root`, `/`-separated, as reversible text (`model::path_text`: names
/// that are not UTF-8 or hold control characters are escaped, not lost).
pub fn relative(root: &Path, path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<&[u8]> = rel.components().map(|c| c.as_os_str().as_bytes()).collect();
    framecull_model::path_text(&parts.join(&b'/')).into_owned()
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}
