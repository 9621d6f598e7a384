//! A manifest version's clips as files of their own (`export --materialize DIR`): each
//! video clip an MP4 that holds exactly its frames (`framecull_media::clip`, the frames the
//! loader reads for the row), each picture a copy. A clip file is named by its clip id and
//! appears only when complete; each file written is then recorded in the folder's ledger
//! (`.framecull-clips.jsonl`: its bytes, hash, fingerprint and frame counts), and the rows get
//! those as their `clip_*` columns. A rerun writes only the clips whose file is missing, or
//! has no ledger entry of its size (killed between the two), so a stopped run resumes where
//! it stopped.
//!
//! A bucket prefix (`s3://bucket/prefix`, as for datasets) takes the clip files as objects:
//! each is written in a local staging folder, uploaded (an object appears only when whole)
//! and removed there. The ledger is kept in the staging folder and copied to the prefix
//! (`PREFIX/.framecull-clips.jsonl`) as the run goes and when it ends, so a rerun on another
//! machine resumes from it; an object counts as present where the ledger has its size.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use framecull_manifest::{ClipFileColumns, ClipFiles};
use framecull_media::clip::{self, ClipError, ClipSource, ClipWritten};
use framecull_media::source::Source;
use framecull_model::{MediaKind, ReadAs, SeekReference, StreamChoice};
use framecull_storage::{Remote, Root, StorageError};
use serde::{Deserialize, Serialize};

use framecull_manifest::{ManifestError, ManifestRow};

/// The ledger of a clip folder: one JSON line per clip file written.
pub const LEDGER: &str = ".framecull-clips.jsonl";

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
    /// Every clip file of the rows, this run's and earlier ones', as the version records it.
    pub files: ClipFiles,
}

/// Progress: clips done (written, present or failed) of `total`, bytes written so far.
#[derive(Debug, Clone, Copy)]
pub struct MaterializeProgress {
    pub done: u64,
    pub total: u64,
    pub bytes: u64,
    pub secs: f64,
}

/// The file a row's clip is written to in `dir`: its clip id, with `video_extension` for a
/// video (`mp4`, or the container an intra-only codec's packets are copied into) and the
/// picture's own extension for a picture.
pub fn clip_file(dir: &Path, row: &ManifestRow, video_extension: &str) -> PathBuf {
    let ext = match row.kind {
        MediaKind::Video => video_extension.to_string(),
        _ => Path::new(&row.path)
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_else(|| "bin".into()),
    };
    dir.join(format!("{}.{ext}", row.clip_id))
}

/// Write the clip files of `rows` (read from `root`; seeks checked against `references`, the
/// version's seek references, by file fingerprint) into `dir` on `jobs` threads, skipping
/// those present, until done or `stop` is set ([`ManifestError::Stopped`]: what was written
/// stays). Each row's `clip_*` columns are set: its file, or why it has none.
///
/// The clips of a file are written one after another by one thread, its source opened and
/// indexed once for them; a file with many clips is cut into runs that threads share, so
/// the threads stay busy to the end.
pub fn materialize(
    root: &Root,
    rows: &mut [ManifestRow],
    references: &[SeekReference],
    dir: &Path,
    jobs: usize,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(MaterializeProgress),
) -> Result<Materialized, ManifestError> {
    let started = Instant::now();
    let references: HashMap<&str, &SeekReference> = references
        .iter()
        .map(|r| (r.file_fingerprint.as_str(), r))
        .collect();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ManifestError::Io { path, source }
    };
    let output = Output::open(root, dir)?;
    let work = output.work_dir();
    std::fs::create_dir_all(work).map_err(io(work))?;
    let ledger_path = work.join(LEDGER);
    let mut ledger = output.remote_ledger()?;
    ledger.extend(read_ledger(&ledger_path));
    let mut appender = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ledger_path)
        .map_err(io(&ledger_path))?;
    // A line a kill cut short ends here, not in the next entry.
    let ends_whole = std::fs::read(&ledger_path)
        .map_err(io(&ledger_path))?
        .last()
        .is_none_or(|&b| b == b'\n');
    if !ends_whole {
        appender.write_all(b"\n").map_err(io(&ledger_path))?;
    }
    let mut out = Materialized {
        files: ClipFiles {
            dir: output.recorded(),
            ..ClipFiles::default()
        },
        ..Materialized::default()
    };
    let total = rows.len() as u64;
    // Each row's file: the one an earlier run recorded, where it is whole, else written now.
    let listing = output.listing()?;
    let mut results: Vec<Option<Result<Entry, NoClipFile>>> = rows
        .iter()
        .map(|row| {
            ledger
                .get(&row.clip_id)
                .filter(|e| output.size_of(&e.file, listing.as_ref()) == Some(e.bytes))
                .map(|e| Ok(e.clone()))
        })
        .collect();
    out.present = results.iter().filter(|r| r.is_some()).count() as u64;
    // The clips to write, those of a file one after another (rows come by clip id, a hash),
    // in order, in runs of one source each.
    let mut order: Vec<usize> = (0..rows.len()).filter(|&i| results[i].is_none()).collect();
    order.sort_by_key(|&i| (source_of(&rows[i]), rows[i].start_frame, rows[i].start_pts));
    let jobs = jobs.max(1);
    let longest = order.len().div_ceil(jobs * 4).max(1);
    let mut runs: Vec<&[usize]> = Vec::new();
    for same in order.chunk_by(|&a, &b| source_of(&rows[a]) == source_of(&rows[b])) {
        runs.extend(same.chunks(longest));
    }
    let next = AtomicUsize::new(0);
    let mut done = out.present;
    on_progress(MaterializeProgress {
        done,
        total,
        bytes: 0,
        secs: started.elapsed().as_secs_f64(),
    });
    let shared: &[ManifestRow] = rows;
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Entry, NoClipFile>)>();
        for _ in 0..jobs.min(runs.len()) {
            let (tx, runs, next, output, references) =
                (tx.clone(), &runs, &next, &output, &references);
            scope.spawn(move || {
                while let Some(run) = runs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    // The source of the clip before, kept open for the next clips of the
                    // same file: its frames are indexed once.
                    let mut open: Option<(SourceKey, ClipSource)> = None;
                    for &at in *run {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let row = &shared[at];
                        let entry = write_one(
                            root,
                            row,
                            references.get(row.file_fingerprint.as_str()).copied(),
                            output.work_dir(),
                            &mut open,
                        )
                        .and_then(|(file, w)| {
                            let mut entry = Entry::of(&row.clip_id, &file, w)?;
                            if let Some(fingerprint) = output.deliver(&file)? {
                                entry.fingerprint = fingerprint;
                            }
                            Ok(entry)
                        });
                        if tx.send((at, entry)).is_err() {
                            return;
                        }
                    }
                }
            });
        }
        drop(tx);
        // Each file written is recorded here, one thread appending to the ledger.
        for (at, entry) in rx {
            let entry = entry.and_then(|entry| {
                let mut line = serde_json::to_vec(&entry)?;
                line.push(b'\n');
                appender
                    .write_all(&line)
                    .and_then(|()| appender.sync_data())
                    .map_err(NoClipFile::at(&ledger_path))?;
                out.written += 1;
                out.bytes += entry.bytes;
                out.reencoded_frames += entry.encoded;
                out.copied_frames += entry.copied;
                ledger.insert(entry.clip_id.clone(), entry.clone());
                Ok(entry)
            });
            // A bucket's copy of the ledger, now and then (a rerun elsewhere resumes from
            // it; this machine's rerun from the staging folder's).
            if output.ledger_due() {
                output.publish_ledger(&ledger);
            }
            results[at] = Some(entry);
            done += 1;
            on_progress(MaterializeProgress {
                done,
                total,
                bytes: out.bytes,
                secs: started.elapsed().as_secs_f64(),
            });
        }
    });
    output.publish_ledger(&ledger);
    if results.iter().any(Option::is_none) {
        return Err(ManifestError::Stopped);
    }
    for (row, result) in rows.iter_mut().zip(results.into_iter().flatten()) {
        row.clip = match result {
            Ok(e) => {
                out.files.files += 1;
                out.files.bytes += e.bytes;
                out.files.copied_frames += e.copied;
                out.files.encoded_frames += e.encoded;
                e.columns()
            }
            Err(reason) => {
                out.files.missing += 1;
                out.failed
                    .push(format!("{}: {} ({reason})", row.clip_id, row.path));
                ClipFileColumns {
                    note: Some(format!("no clip file: {reason}")),
                    ..ClipFileColumns::default()
                }
            }
        };
    }
    out.secs = started.elapsed().as_secs_f64();
    Ok(out)
}

/// Where clip files go: a local folder, or a bucket prefix they are uploaded to from a local
/// staging folder.
enum Output {
    Folder(PathBuf),
    Bucket {
        remote: Arc<Remote>,
        staging: PathBuf,
        /// When the ledger's copy in the bucket was last written.
        published: std::sync::Mutex<Instant>,
    },
}

/// How often a bucket's copy of the ledger is written again while clips are written.
const LEDGER_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl Output {
    /// `dir` as a folder, or as a bucket prefix (a URL: opened with the settings of the
    /// dataset's store, where the dataset is in one, else from the environment).
    fn open(root: &Root, dir: &Path) -> Result<Output, ManifestError> {
        if !Root::is_url(dir) {
            std::fs::create_dir_all(dir).map_err(|source| ManifestError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let canonical = std::fs::canonicalize(dir).map_err(|source| ManifestError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            return Ok(Output::Folder(canonical));
        }
        let url = dir.to_string_lossy();
        let url = url.trim_end_matches('/');
        let settings: Vec<(&str, &str)> = root
            .as_remote()
            .map(|r| {
                r.settings()
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        let remote = Remote::open_with(url, &settings).map_err(storage)?;
        // One staging folder a prefix, as one folder a local output: its ledger survives a
        // kill for this machine's rerun.
        let key = xxhash_rust::xxh3::xxh3_64(url.as_bytes());
        let staging = std::env::temp_dir().join(format!("framecull-clips-{key:016x}"));
        Ok(Output::Bucket {
            remote: Arc::new(remote),
            staging,
            published: std::sync::Mutex::new(Instant::now()),
        })
    }

    /// Where clip files are written: the folder, or the staging folder.
    fn work_dir(&self) -> &Path {
        match self {
            Output::Folder(dir) => dir,
            Output::Bucket { staging, .. } => staging,
        }
    }

    /// The folder or the URL, as the version records it.
    fn recorded(&self) -> String {
        match self {
            Output::Folder(dir) => framecull_model::text_of_path(dir).into_owned(),
            Output::Bucket { remote, .. } => remote.url().to_string(),
        }
    }

    /// The objects under a bucket prefix now, by name: their sizes (one listing); `None` for
    /// a folder, whose files are looked at one by one ([`Output::size_of`]).
    fn listing(&self) -> Result<Option<HashMap<String, u64>>, ManifestError> {
        match self {
            Output::Folder(_) => Ok(None),
            Output::Bucket { remote, .. } => Ok(Some(
                remote
                    .list()
                    .map_err(storage)?
                    .into_iter()
                    .map(|l| (l.rel_path, l.size_bytes))
                    .collect(),
            )),
        }
    }

    /// The size of clip file `name` there: a folder's file, or the object `listing` has.
    fn size_of(&self, name: &str, listing: Option<&HashMap<String, u64>>) -> Option<u64> {
        match (self, listing) {
            (_, Some(listed)) => listed.get(name).copied(),
            (Output::Folder(dir), None) => std::fs::metadata(dir.join(name)).ok().map(|m| m.len()),
            (Output::Bucket { .. }, None) => None,
        }
    }

    /// The ledger a bucket prefix holds (none for a folder, whose ledger is its own file).
    fn remote_ledger(&self) -> Result<HashMap<String, Entry>, ManifestError> {
        match self {
            Output::Folder(_) => Ok(HashMap::new()),
            Output::Bucket { remote, .. } => Ok(remote
                .get_all(LEDGER)
                .map_err(storage)?
                .map(|bytes| parse_ledger(&String::from_utf8_lossy(&bytes)))
                .unwrap_or_default()),
        }
    }

    /// Put the clip file `file`, complete in the work folder, where it goes: a bucket's is
    /// uploaded and its local copy removed, and its fingerprint is then the object's (its
    /// size and ETag, as a scan or the loader finds it), where the store gives one.
    fn deliver(&self, file: &Path) -> Result<Option<String>, StorageError> {
        let Output::Bucket { remote, .. } = self else {
            return Ok(None);
        };
        let name = file_name(file);
        // The object as the upload's answer gives it (no HEAD after it).
        let uploaded = remote.put_file(&name, file);
        let _ = std::fs::remove_file(file);
        let object = uploaded?;
        Ok(framecull_media::fingerprint::of_listing(
            object.size_bytes,
            object.e_tag.as_deref(),
            object.version.as_deref(),
        ))
    }

    /// Whether a bucket's copy of the ledger is due again.
    fn ledger_due(&self) -> bool {
        match self {
            Output::Folder(_) => false,
            Output::Bucket { published, .. } => published
                .lock()
                .is_ok_and(|at| at.elapsed() >= LEDGER_EVERY),
        }
    }

    /// Write a bucket's copy of the ledger: every entry known, with those another machine
    /// wrote there since (a failure only warns: the staging folder's ledger has them, and a
    /// rerun elsewhere writes those clips again).
    fn publish_ledger(&self, ledger: &HashMap<String, Entry>) {
        let Output::Bucket {
            remote, published, ..
        } = self
        else {
            return;
        };
        // Another machine's entries, written there since, kept beside this run's.
        let theirs = match remote.get_all(LEDGER) {
            Ok(Some(bytes)) => parse_ledger(&String::from_utf8_lossy(&bytes)),
            _ => HashMap::new(),
        };
        let mut entries: Vec<&Entry> = ledger
            .values()
            .chain(theirs.values().filter(|e| !ledger.contains_key(&e.clip_id)))
            .collect();
        entries.sort_by(|a, b| a.clip_id.cmp(&b.clip_id));
        let mut text = Vec::new();
        for entry in entries {
            if serde_json::to_writer(&mut text, entry).is_ok() {
                text.push(b'\n');
            }
        }
        if let Err(e) = remote.put(LEDGER, text) {
            tracing::warn!("the clip files' ledger was not copied to the bucket: {e}");
        }
        if let Ok(mut at) = published.lock() {
            *at = Instant::now();
        }
    }
}

/// A bucket's error as the export's.
fn storage(e: framecull_storage::StorageError) -> ManifestError {
    ManifestError::Invalid(e.to_string())
}

/// A clip file as the ledger records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    clip_id: String,
    /// Its name in the folder.
    file: String,
    bytes: u64,
    /// xxh3-128 of its bytes, and its content fingerprint.
    hash: String,
    fingerprint: String,
    frames: u64,
    copied: u64,
    encoded: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl Entry {
    /// The entry of clip `clip_id`, just written to `file`.
    fn of(clip_id: &str, file: &Path, w: ClipWritten) -> Result<Entry, NoClipFile> {
        let bytes = std::fs::metadata(file).map_err(NoClipFile::at(file))?.len();
        Ok(Entry {
            clip_id: clip_id.to_string(),
            file: file_name(file),
            bytes,
            hash: std::fs::File::open(file)
                .and_then(framecull_media::fingerprint::whole)
                .map_err(NoClipFile::at(file))?,
            fingerprint: framecull_media::fingerprint::fingerprint(file, bytes)
                .map_err(NoClipFile::at(file))?,
            frames: w.frames,
            copied: w.copied,
            encoded: w.reencoded,
            note: w.note,
        })
    }

    fn columns(&self) -> ClipFileColumns {
        let int = |v: u64| Some(i64::try_from(v).unwrap_or(i64::MAX));
        ClipFileColumns {
            file: Some(self.file.clone()),
            bytes: int(self.bytes),
            hash: Some(self.hash.clone()),
            fingerprint: Some(self.fingerprint.clone()),
            frames: int(self.frames),
            copied_frames: int(self.copied),
            encoded_frames: int(self.encoded),
            note: self.note.clone(),
        }
    }
}

/// The ledger's entries by clip id (the last of each; a line cut short by a kill is skipped).
fn read_ledger(path: &Path) -> HashMap<String, Entry> {
    parse_ledger(&std::fs::read_to_string(path).unwrap_or_default())
}

fn parse_ledger(text: &str) -> HashMap<String, Entry> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
        .map(|e| (e.clip_id.clone(), e))
        .collect()
}

fn file_name(file: &Path) -> String {
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Why a row has no clip file (the words its row's note and the run's failures carry).
#[derive(Debug, thiserror::Error)]
enum NoClipFile {
    #[error(transparent)]
    Clip(#[from] ClipError),
    #[error("{}: {source}", .path.display())]
    At {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Ledger(#[from] serde_json::Error),
}

impl NoClipFile {
    fn at(path: &Path) -> impl FnOnce(std::io::Error) -> NoClipFile + '_ {
        move |source| NoClipFile::At {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What identifies a video source open for clips: its path, stream and content.
type SourceKey = (String, Option<i64>, String);

/// The source of a row's clip, as [`SourceKey`] holds it.
fn source_of(row: &ManifestRow) -> (&str, Option<i64>, &str) {
    (&row.path, row.stream_index, &row.file_fingerprint)
}

/// Write one row's clip file into `dir`, through `open` (the source of the clip before)
/// where it is the same file: the file, and what it holds.
fn write_one(
    root: &Root,
    row: &ManifestRow,
    reference: Option<&SeekReference>,
    dir: &Path,
    open: &mut Option<(SourceKey, ClipSource)>,
) -> Result<(PathBuf, ClipWritten), NoClipFile> {
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
                    ClipSource::open(&source, read, reference)?
                }
            };
            let (_, clips) = open.insert((key, clips));
            let file = clip_file(dir, row, clips.extension());
            let written = clips.write(&row.bounds(), &file)?;
            Ok((file, written))
        }
        _ => {
            let file = clip_file(dir, row, "");
            let file = file.as_path();
            let bytes = source
                .open()
                .read_all()
                .map_err(NoClipFile::at(&source.location()))?;
            let part = clip::part_path(file);
            std::fs::write(&part, &bytes)
                .and_then(|()| std::fs::File::open(&part)?.sync_all())
                .and_then(|()| std::fs::rename(&part, file))
                .map_err(NoClipFile::at(file))?;
            Ok((
                file.to_path_buf(),
                ClipWritten {
                    frames: 1,
                    reencoded: 0,
                    copied: 1,
                    bytes: bytes.len() as u64,
                    note: None,
                },
            ))
        }
    }
}
