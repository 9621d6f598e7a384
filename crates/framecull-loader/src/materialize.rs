//! A manifest version's clips as files of their own (`export --materialize DIR`): each
//! video clip an MP4 that holds exactly its frames (`framecull_media::clip`, the frames the
//! loader reads for the row), each picture a copy. A clip file is named by its clip id and
//! appears only when complete; a rerun writes only the clips whose file is missing, so a
//! stopped run resumes where it stopped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use framecull_media::clip::{self, ClipSource, ClipWritten};
use framecull_media::source::Source;
use framecull_model::{MediaKind, ReadAs, SeekReference, StreamChoice};
use framecull_storage::Root;
use serde::Serialize;

use framecull_manifest::{ManifestError, ManifestRow};

/// What a materialization did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Materialized {
    /// Clip files written by this run, and their bytes.
    pub written: u64,
    pub bytes: u64,
    /// Frames encoded again, and packets copied, in the clips written.
    pub reencoded_frames: u64,
    pub copied_frames: u64,
    /// Clips whose file was there from an earlier run.
    pub present: u64,
    /// Clips that could not be written, with the reason (`clip_id: reason`).
    pub failed: Vec<String>,
    pub secs: f64,
}

/// Progress: clips done (written, present or failed) of `total`, bytes written so far.
#[derive(Debug, Clone, Copy)]
pub struct MaterializeProgress {
    pub done: u64,
    pub total: u64,
    pub bytes: u64,
    pub secs: f64,
}

/// The file a row's clip is written to in `dir`: its clip id, with `.mp4` for a video and the
/// picture's own extension for a picture.
pub fn clip_file(dir: &Path, row: &ManifestRow) -> PathBuf {
    let ext = match row.kind {
        MediaKind::Video => "mp4".to_string(),
        _ => Path::new(&row.path)
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_else(|| "bin".into()),
    };
    dir.join(format!("{}.{ext}", row.clip_id))
}

/// Write the clip files of `rows` (read from `root`; seeks checked against `references`, the
/// version's seek references by file fingerprint) into `dir`, skipping those present, until
/// done or `stop` is set ([`ManifestError::Stopped`]: what was written stays).
pub fn materialize(
    root: &Root,
    rows: &[ManifestRow],
    references: &HashMap<String, SeekReference>,
    dir: &Path,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(MaterializeProgress),
) -> Result<Materialized, ManifestError> {
    let started = Instant::now();
    std::fs::create_dir_all(dir).map_err(|source| ManifestError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out = Materialized::default();
    // The source of the clip before, kept open for the next clips of the same file (rows of
    // a file follow one another): its frames are indexed once.
    let mut open: Option<(SourceKey, ClipSource)> = None;
    for (i, row) in rows.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return Err(ManifestError::Stopped);
        }
        let file = clip_file(dir, row);
        if file.exists() {
            out.present += 1;
        } else {
            match write_one(
                root,
                row,
                references.get(&row.file_fingerprint),
                &file,
                &mut open,
            ) {
                Ok(w) => {
                    out.written += 1;
                    out.bytes += w.bytes;
                    out.reencoded_frames += w.reencoded;
                    out.copied_frames += w.copied;
                }
                Err(reason) => out
                    .failed
                    .push(format!("{}: {} ({reason})", row.clip_id, row.path)),
            }
        }
        on_progress(MaterializeProgress {
            done: i as u64 + 1,
            total: rows.len() as u64,
            bytes: out.bytes,
            secs: started.elapsed().as_secs_f64(),
        });
    }
    out.secs = started.elapsed().as_secs_f64();
    Ok(out)
}

/// What identifies a video source open for clips: its path, stream and content.
type SourceKey = (String, Option<i64>, String);

/// Write one row's clip file, through `open` (the source of the clip before) where it is the
/// same file.
fn write_one(
    root: &Root,
    row: &ManifestRow,
    reference: Option<&SeekReference>,
    file: &Path,
    open: &mut Option<(SourceKey, ClipSource)>,
) -> Result<ClipWritten, String> {
    let source = Source::in_root(root, &row.path, row.size_bytes.max(0) as u64);
    match row.kind {
        MediaKind::Video => {
            let key = (
                row.path.clone(),
                row.stream_index,
                row.file_fingerprint.clone(),
            );
            let clips = match open.take() {
                Some((k, clips)) if k == key => clips,
                _ => {
                    let read = ReadAs {
                        stream: StreamChoice::recorded(
                            row.stream_index.and_then(|s| u32::try_from(s).ok()),
                        ),
                        ..ReadAs::default()
                    };
                    ClipSource::open(&source, read, reference).map_err(|e| e.to_string())?
                }
            };
            let (_, clips) = open.insert((key, clips));
            clips.write(&row.bounds(), file).map_err(|e| e.to_string())
        }
        _ => {
            let bytes = source.open().read_all().map_err(|e| e.to_string())?;
            let part = clip::part_path(file);
            std::fs::write(&part, &bytes)
                .and_then(|()| std::fs::File::open(&part)?.sync_all())
                .and_then(|()| std::fs::rename(&part, file))
                .map_err(|e| e.to_string())?;
            Ok(ClipWritten {
                frames: 1,
                reencoded: 0,
                copied: 1,
                bytes: bytes.len() as u64,
            })
        }
    }
}
