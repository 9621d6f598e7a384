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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use framecull_manifest::ledger;
use framecull_manifest::{ClipFileColumns, ClipFiles};
use framecull_media::clip::{self, ClipError, ClipSource, ClipWritten};
use framecull_media::source::Source;
use framecull_model::{MediaKind, ReadAs, SeekReference, StreamChoice};
use framecull_storage::{Root, StorageError};
use serde::{Deserialize, Serialize};

use framecull_manifest::{ManifestError, ManifestRow};
mod output;
use output::Output;

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
    let output = Output::open(root, dir)?;
    let mut ledger = Ledger::open(&output)?;
    let mut out = Materialized {
        files: ClipFiles {
            dir: output.recorded(),
            ..ClipFiles::default()
        },
        ..Materialized::default()
    };
    let total = rows.len() as u64;
    let mut results = written_before(rows, &ledger.entries, &output)?;
    out.present = results.iter().filter(|r| r.is_some()).count() as u64;
    let order = write_order(rows, &results);
    let jobs = jobs.max(1);
    let runs = runs_of(rows, &order, jobs);
    let next = AtomicUsize::new(0);
    let mut progress = Progress {
        done: out.present,
        total,
        started,
        on_progress,
    };
    progress.tell(0);
    let writer = ClipWriter {
        root,
        rows,
        references: &references,
        output: &output,
        runs: &runs,
        next: &next,
        stop,
    };
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Entry, NoClipFile>)>();
        for _ in 0..jobs.min(runs.len()) {
            let (tx, writer) = (tx.clone(), &writer);
            scope.spawn(move || writer.write_runs(&tx));
        }
        drop(tx);
        record_written(
            rx,
            &mut ledger,
            &output,
            &mut results,
            &mut out,
            &mut progress,
        );
    });
    output.publish_ledger(&ledger.entries);
    if results.iter().any(Option::is_none) {
        return Err(ManifestError::Stopped);
    }
    set_clip_columns(rows, results, &mut out);
    out.secs = started.elapsed().as_secs_f64();
    Ok(out)
}

/// A clip folder's ledger: its entries by clip id (a bucket's with the work folder's), and
/// its file in the work folder, open for appending.
struct Ledger {
    file: ledger::Ledger,
    entries: HashMap<String, Entry>,
}

impl Ledger {
    /// The ledger of `output`, its work folder made where missing and its file opened for
    /// appending.
    fn open(output: &Output) -> Result<Ledger, ManifestError> {
        let work = output.work_dir();
        std::fs::create_dir_all(work).map_err(|e| ManifestError::io(work, e))?;
        let mut entries = output.remote_ledger()?;
        let (file, read) = ledger::Ledger::open::<Entry>(&work.join(LEDGER))?;
        entries.extend(by_clip(read));
        Ok(Ledger { file, entries })
    }

    /// Append `entry`'s line to the ledger's file, synced to disk.
    fn append(&mut self, entry: &Entry) -> Result<(), NoClipFile> {
        self.file
            .append(entry)
            .map_err(NoClipFile::at(self.file.path()))
    }
}

/// Each row's clip file that an earlier run wrote, where the ledger records it and the file
/// there has the size it records; `None` for the clips still to write.
fn written_before(
    rows: &[ManifestRow],
    ledger: &HashMap<String, Entry>,
    output: &Output,
) -> Result<Vec<Option<Result<Entry, NoClipFile>>>, ManifestError> {
    // Each row's file: the one an earlier run recorded, where it is whole, else written now.
    let listing = output.listing()?;
    let results: Vec<Option<Result<Entry, NoClipFile>>> = rows
        .iter()
        .map(|row| {
            ledger
                .get(&row.clip_id)
                .filter(|e| output.size_of(&e.file, listing.as_ref()) == Some(e.bytes))
                .map(|e| Ok(e.clone()))
        })
        .collect();
    Ok(results)
}

/// The rows whose clips are still to write, by their source and then their place in it.
fn write_order(rows: &[ManifestRow], results: &[Option<Result<Entry, NoClipFile>>]) -> Vec<usize> {
    // The clips to write, those of a file one after another (rows come by clip id, a hash),
    // in order, in runs of one source each.
    let mut order: Vec<usize> = (0..rows.len()).filter(|&i| results[i].is_none()).collect();
    order.sort_by_key(|&i| (source_of(&rows[i]), rows[i].start_frame, rows[i].start_pts));
    order
}

/// `order` cut into runs of one source each, none longer than a quarter of a thread's share
/// of `jobs` threads.
fn runs_of<'a>(rows: &[ManifestRow], order: &'a [usize], jobs: usize) -> Vec<&'a [usize]> {
    let longest = order.len().div_ceil(jobs * 4).max(1);
    let mut runs: Vec<&[usize]> = Vec::new();
    for same in order.chunk_by(|&a, &b| source_of(&rows[a]) == source_of(&rows[b])) {
        runs.extend(same.chunks(longest));
    }
    runs
}

/// How far a materialization is, as its caller is told.
struct Progress<'a> {
    /// Clips done (written, present or failed) of `total`.
    done: u64,
    total: u64,
    started: Instant,
    on_progress: &'a mut dyn FnMut(MaterializeProgress),
}

impl Progress<'_> {
    /// Tell the caller how far the run is, with `bytes` written so far.
    fn tell(&mut self, bytes: u64) {
        (self.on_progress)(MaterializeProgress {
            done: self.done,
            total: self.total,
            bytes,
            secs: self.started.elapsed().as_secs_f64(),
        });
    }
}

/// What the threads that write clip files share: the rows, where their files go, and the
/// runs of clips they take one after another.
struct ClipWriter<'a> {
    root: &'a Root,
    rows: &'a [ManifestRow],
    /// The version's seek references, by file fingerprint.
    references: &'a HashMap<&'a str, &'a SeekReference>,
    output: &'a Output,
    runs: &'a [&'a [usize]],
    /// The next run to take.
    next: &'a AtomicUsize,
    stop: &'a AtomicBool,
}

impl ClipWriter<'_> {
    /// Take runs and write their clips until no run is left, the run stops or the receiver
    /// is gone, sending each row's entry (or why it has no file) to `tx`.
    fn write_runs(&self, tx: &Sender<(usize, Result<Entry, NoClipFile>)>) {
        while let Some(run) = self.runs.get(self.next.fetch_add(1, Ordering::Relaxed)) {
            // The source of the clip before, kept open for the next clips of the
            // same file: its frames are indexed once.
            let mut open: Option<(SourceKey, ClipSource)> = None;
            for &at in *run {
                if self.stop.load(Ordering::Relaxed) {
                    return;
                }
                let entry = self.write_clip(&self.rows[at], &mut open);
                if tx.send((at, entry)).is_err() {
                    return;
                }
            }
        }
    }

    /// Write `row`'s clip file through `open` (the source of the clip before) and put it
    /// where it goes: its ledger entry, with the object's fingerprint where it was uploaded.
    fn write_clip(
        &self,
        row: &ManifestRow,
        open: &mut Option<(SourceKey, ClipSource)>,
    ) -> Result<Entry, NoClipFile> {
        write_one(
            self.root,
            row,
            self.references.get(row.file_fingerprint.as_str()).copied(),
            self.output.work_dir(),
            open,
        )
        .and_then(|(file, w)| {
            let mut entry = Entry::of(&row.clip_id, &file, w)?;
            if let Some(fingerprint) = self.output.deliver(&file)? {
                entry.fingerprint = fingerprint;
            }
            Ok(entry)
        })
    }
}

/// Record each clip file the writing threads report, until they are done: its entry
/// appended to the ledger and counted in `out`, its result kept in `results` by row, and
/// the progress told.
fn record_written(
    rx: Receiver<(usize, Result<Entry, NoClipFile>)>,
    ledger: &mut Ledger,
    output: &Output,
    results: &mut [Option<Result<Entry, NoClipFile>>],
    out: &mut Materialized,
    progress: &mut Progress<'_>,
) {
    // Each file written is recorded here, one thread appending to the ledger.
    for (at, entry) in rx {
        let entry = entry.and_then(|entry| {
            ledger.append(&entry)?;
            out.written += 1;
            out.bytes += entry.bytes;
            out.reencoded_frames += entry.encoded;
            out.copied_frames += entry.copied;
            ledger.entries.insert(entry.clip_id.clone(), entry.clone());
            Ok(entry)
        });
        // A bucket's copy of the ledger, now and then (a rerun elsewhere resumes from
        // it; this machine's rerun from the staging folder's).
        if output.ledger_due() {
            output.publish_ledger(&ledger.entries);
        }
        results[at] = Some(entry);
        progress.done += 1;
        progress.tell(out.bytes);
    }
}

/// Set each row's `clip_*` columns from its result (every row has one): its file, counted
/// among `out`'s files, or why it has none, counted as missing and failed.
fn set_clip_columns(
    rows: &mut [ManifestRow],
    results: Vec<Option<Result<Entry, NoClipFile>>>,
    out: &mut Materialized,
) {
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

/// A ledger's entries by clip id (the last of each; a line cut short by a kill is skipped).
fn parse_ledger(bytes: &[u8]) -> HashMap<String, Entry> {
    by_clip(ledger::parse(bytes))
}

/// Entries by clip id, the last of each.
fn by_clip(entries: Vec<Entry>) -> HashMap<String, Entry> {
    entries
        .into_iter()
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
