//! Scanning: walk a dataset, skip what is unchanged, probe the rest in parallel, store
//! results in batches. Cancellable at any point with the catalog left consistent.

pub mod curate;
pub mod deep;
pub mod demo;
pub mod derive;
pub mod labels;
pub mod merge;
mod options;
pub mod pipeline;
pub mod service;
pub mod shard;
mod walk;
pub mod worker;

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use rayon::prelude::*;

pub use walk::{FoundFile, WalkResult, list_where, relative, walk, walk_where};

use shard::ShardSpec;

use framecull_catalog::{Catalog, CatalogError, ConfigError, ItemUpdate, KnownFile, ScanCounts};
use framecull_media::{self as media, Source};
use framecull_model::{ItemStatus, MediaKind, OtherStatus, Probe, StreamChoice};
use framecull_storage::{Root, StorageError};

/// Bump when probing reads files differently: the next scan re-probes every file. 3: the
/// video stream is the one FFmpeg picks, recorded with the colour matrix it declares.
pub const PROBE_VERSION: u32 = 3;

#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Probe threads.
    pub jobs: usize,
    /// Longest time FFmpeg may spend opening and analysing one file.
    pub file_budget: Duration,
    /// Files stored per transaction (a batch is also flushed every 250 ms).
    pub batch_size: usize,
    /// Scan only this shard's files (`scan --shard I/N`): the project holds that shard alone.
    pub shard: Option<ShardSpec>,
    /// FFmpeg's probes in worker processes (see [`worker`]). Off: in this process.
    pub isolate: bool,
    /// Probe threads for a dataset in object storage, where a probe waits on its requests
    /// most of the time: this many requests in flight at once, whatever the cores.
    pub requests_in_flight: usize,
}

/// [`ScanOptions::requests_in_flight`] unless told otherwise.
pub const REQUESTS_IN_FLIGHT: usize = 32;

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
            file_budget: Duration::from_secs(20),
            batch_size: 512,
            shard: None,
            isolate: true,
            requests_in_flight: REQUESTS_IN_FLIGHT,
        }
    }
}

/// Progress of a scan, for the CLI's progress bar and the GUI.
#[derive(Debug, Clone)]
pub enum ScanEvent {
    /// The walk is done: `to_probe` files will be probed, `unchanged` are skipped.
    Walked {
        files: u64,
        to_probe: u64,
        unchanged: u64,
    },
    /// One more file probed.
    Probed {
        done: u64,
        total: u64,
        path: String,
        status: ItemStatus,
    },
    /// A batch was committed; `stored` files so far are durable.
    Committed { stored: u64 },
}

/// How a scan ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScanSummary {
    pub counts: ScanCounts,
    pub cancelled: bool,
    /// Files in the catalog whose status is a problem (error or unsupported) after the scan.
    pub problem_files: u64,
    /// Of `counts.other`, the entries that are not regular files (broken links, FIFOs,
    /// devices).
    pub not_files: u64,
    pub warnings: Vec<String>,
    pub elapsed_secs: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The project's framecull.toml does not parse: never the defaults in its place.
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot read dataset folder {path}: {source}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start probe threads: {0}")]
    Threads(String),
    /// The object store failed in a way that is not about one object (network, permission):
    /// what was stored before stays, and the same command resumes.
    #[error("{0}")]
    Storage(#[from] StorageError),
    #[error(
        "the project at {project} holds {recorded}, not {given}: use another --project for \
         each shard"
    )]
    ShardMismatch {
        project: PathBuf,
        recorded: String,
        given: String,
    },
}

/// Record the shard a project holds on its first scan; refuse a scan of another shard (or of
/// the whole dataset) into a shard's project, and a shard scan into a whole dataset's.
fn check_shard(catalog: &Catalog, shard: Option<ShardSpec>) -> Result<(), ScanError> {
    let recorded = catalog.shard()?;
    let given = shard.map(|s| s.to_string());
    let describe = |s: &Option<String>| match s {
        Some(s) => format!("shard {s}"),
        None => "the whole dataset".to_string(),
    };
    match (&recorded, &given) {
        (None, Some(g)) if catalog.count_items()? == 0 => {
            catalog.set_shard(g)?;
            Ok(())
        }
        (r, g) if r == g => Ok(()),
        (r, g) => Err(ScanError::ShardMismatch {
            project: catalog.project_dir().to_path_buf(),
            recorded: describe(r),
            given: describe(g),
        }),
    }
}

/// Scan `root` into `catalog`. `cancel` is checked before each file; when it is set, files
/// probed so far are stored and the scan returns with `cancelled: true`.
pub fn scan(
    catalog: &mut Catalog,
    root: &Root,
    options: &ScanOptions,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(ScanEvent),
) -> Result<ScanSummary, ScanError> {
    scan_with(catalog, root, options, None, cancel, on_event)
}

/// [`scan`], probing on `workers` when given (and `options.isolate`): a pool the deep pass
/// then analyses on, whose processes start once for both.
pub fn scan_with(
    catalog: &mut Catalog,
    root: &Root,
    options: &ScanOptions,
    workers: Option<&worker::WorkerPool>,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(ScanEvent),
) -> Result<ScanSummary, ScanError> {
    let started = Instant::now();
    media::init();
    if let Root::Local(dir) = root {
        std::fs::read_dir(dir).map_err(|source| ScanError::Root {
            path: dir.clone(),
            source,
        })?;
    }
    check_shard(catalog, options.shard)?;
    let in_shard = |p: &str| options.shard.is_none_or(|s| s.contains(p));
    let scan_id = catalog.begin_scan(&root.recorded())?;
    let project_dir = catalog.project_dir().to_path_buf();
    let walked = match root {
        Root::Local(dir) => walk_where(dir, &[project_dir], &in_shard),
        Root::Remote(remote) => list_where(remote, &in_shard)?,
    };
    let known = catalog.known_files()?;
    let config = project_config(catalog)?;
    // Another `[video] stream` choice: every file is probed again (a video's stream may be
    // another one now, and its analysis with it).
    let restream = catalog.probed_stream_choice()? != config.video.stream;

    let mut counts = ScanCounts {
        seen: walked.files.len() as u64,
        other: walked.others.len() as u64,
        ..ScanCounts::default()
    };
    let to_probe: Vec<&FoundFile> = walked
        .files
        .iter()
        .filter(|f| needs_probe(known.get(&f.rel_path), f, restream))
        .collect();
    counts.unchanged = counts.seen - to_probe.len() as u64;
    on_event(ScanEvent::Walked {
        files: counts.seen,
        to_probe: to_probe.len() as u64,
        unchanged: counts.unchanged,
    });

    let probed = probe_and_store(
        catalog, scan_id, &to_probe, options, &config, workers, cancel, on_event,
    )?;
    if let Some(e) = root.as_remote().and_then(|r| r.failure()) {
        return Err(ScanError::Storage(e));
    }
    counts.probed = probed;
    let cancelled = cancel.load(Ordering::SeqCst);

    if !cancelled {
        counts.missing = mark_gone(catalog, &walked, &known, &in_shard)?;
        catalog.replace_other_files(&walked.others)?;
        if restream {
            catalog.set_probed_stream_choice(config.video.stream)?;
        }
    }
    let problem_files = catalog.count_problems()?;
    counts.problems = problem_files;
    catalog.finish_scan(scan_id, cancelled, counts)?;
    let mut warnings = walked.warnings;
    warnings.extend(missing_decoders(
        &catalog.reasons_with_status(ItemStatus::Unsupported)?,
    ));
    let not_files = walked
        .others
        .iter()
        .filter(|f| f.status == OtherStatus::NotAFile)
        .count() as u64;
    Ok(ScanSummary {
        counts,
        cancelled,
        problem_files,
        not_files,
        warnings,
        elapsed_secs: started.elapsed().as_secs_f64(),
    })
}

/// Whether a walked file is probed: new, or changed since its probe, or probed by an older
/// probe or for another stream choice (`restream`).
fn needs_probe(known: Option<&KnownFile>, f: &FoundFile, restream: bool) -> bool {
    let Some(k) = known else {
        return true;
    };
    // Metadata read by an older probe is read again.
    restream
        || k.probe_version != PROBE_VERSION
        || k.status == ItemStatus::Missing
        || k.size_bytes != f.size_bytes
        || match &f.fingerprint {
            // An object's ETag or version says whether its content changed; its time changes
            // when the same bytes are uploaded again.
            Some(listed) => k.fingerprint.as_ref() != Some(listed),
            None => k.mtime_ns != f.mtime_ns,
        }
}

/// Mark missing the known files of this shard the walk did not meet (but those under a
/// folder it could not read): how many.
fn mark_gone(
    catalog: &mut Catalog,
    walked: &WalkResult,
    known: &HashMap<String, KnownFile>,
    in_shard: &dyn Fn(&str) -> bool,
) -> Result<u64, ScanError> {
    let seen: HashSet<&str> = walked.files.iter().map(|f| f.rel_path.as_str()).collect();
    let under_unreadable = |p: &str| {
        walked
            .unreadable_dirs
            .iter()
            .any(|d| d.is_empty() || p.starts_with(&format!("{d}/")))
    };
    let gone: Vec<String> = known
        .iter()
        .filter(|(p, k)| {
            k.status != ItemStatus::Missing
                && in_shard(p)
                && !seen.contains(p.as_str())
                && !under_unreadable(p)
        })
        .map(|(p, _)| p.clone())
        .collect();
    catalog.mark_missing(&gone)?;
    Ok(gone.len() as u64)
}

/// One warning per decoder this FFmpeg lacks, with how many files need it and a few of
/// them, instead of one error per file.
/// `unsupported` holds (path, reason) of the unsupported files.
pub fn missing_decoders(unsupported: &[(String, String)]) -> Vec<String> {
    let mut by_reason: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (path, reason) in unsupported {
        if reason.starts_with(media::MISSING_DECODER) {
            by_reason.entry(reason).or_default().push(path);
        }
    }
    by_reason
        .into_iter()
        .map(|(reason, paths)| {
            let shown: Vec<&str> = paths.iter().take(3).copied().collect();
            let more = if paths.len() > 3 { ", ..." } else { "" };
            let what = reason.trim_start_matches(media::MISSING_DECODER);
            let (files, verb) = match paths.len() {
                1 => ("1 file".to_string(), "needs"),
                n => (format!("{n} files"), "need"),
            };
            format!(
                "{files} {verb} {what}: {}{more}; install an FFmpeg build with it and rescan \
                 (framecull list --problems lists them)",
                shown.join(", ")
            )
        })
        .collect()
}

/// The project's settings (the defaults when it has no framecull.toml; an error naming the
/// file and line when it does not parse).
pub(crate) fn project_config(
    catalog: &Catalog,
) -> Result<framecull_analysis::flags::Config, ConfigError> {
    framecull_catalog::Project::at(catalog.project_dir()).config()
}

/// Probe files on a rayon pool and store them from this thread in batched transactions.
/// Returns how many files were stored.
#[allow(clippy::too_many_arguments)] // the scan's state, passed down once
fn probe_and_store(
    catalog: &mut Catalog,
    scan_id: i64,
    files: &[&FoundFile],
    options: &ScanOptions,
    config: &framecull_analysis::flags::Config,
    shared: Option<&worker::WorkerPool>,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(ScanEvent),
) -> Result<u64, ScanError> {
    if files.is_empty() {
        return Ok(0);
    }
    let remote = files
        .first()
        .is_some_and(|f| matches!(f.source, Source::Object(_)));
    let threads = if remote {
        options.requests_in_flight.max(options.jobs)
    } else {
        options.jobs
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("framecull-probe-{i}"))
        .build()
        .map_err(|e| ScanError::Threads(e.to_string()))?;
    let (tx, rx) = sync_channel::<ItemUpdate>(1024);
    let total = files.len() as u64;
    let budget = options.file_budget;
    let flush_every = Duration::from_millis(250);
    // Worker processes for FFmpeg's probes, taken by whichever thread probes next: as many
    // as the CPU work needs (the threads beyond `jobs` are there to wait on a store).
    let mut own = None;
    let workers = worker::shared_or_own(
        shared,
        options.isolate,
        config.limits.memory_bytes(),
        options.jobs,
        &mut own,
    );

    // Set when the object store fails for every file (network, permission): the file that
    // met it is not recorded, and no other file is started.
    let storage_failed = &AtomicBool::new(false);
    std::thread::scope(|s| {
        let producer = std::thread::Builder::new()
            .name("framecull-scan".into())
            .spawn_scoped(s, move || {
                pool.install(|| {
                    files.par_iter().for_each_with(tx, |tx, f| {
                        if cancel.load(Ordering::SeqCst) || storage_failed.load(Ordering::SeqCst) {
                            return;
                        }
                        let update = probe_one(f, budget, config.video.stream, workers);
                        if f.source.storage_failure().is_some() {
                            storage_failed.store(true, Ordering::SeqCst);
                            return;
                        }
                        // A closed channel means the writer stopped; nothing left to do.
                        let _ = tx.send(update);
                    });
                });
            })
            .map_err(|e| ScanError::Threads(e.to_string()))?;

        let stored = store_in_batches(
            &rx,
            options.batch_size,
            flush_every,
            cancel,
            |batch| catalog.upsert_items(scan_id, PROBE_VERSION, batch),
            |event| match event {
                Batched::Received(done, update) => on_event(ScanEvent::Probed {
                    done,
                    total,
                    path: update.path.clone(),
                    status: update.probe.status,
                }),
                Batched::Committed(stored) => on_event(ScanEvent::Committed { stored }),
            },
        );
        drop(rx);
        if producer.join().is_err() {
            tracing::error!("a probe thread panicked outside the per-file guard");
        }
        Ok(stored?)
    })
}

/// Progress of [`store_in_batches`].
pub(crate) enum Batched<'a, T> {
    /// The n-th result arrived.
    Received(u64, &'a T),
    /// This many results are durable.
    Committed(u64),
}

/// Receive results from producer threads and store them in batches of `batch_size`, or
/// whatever arrived within `flush_every`, until every sender is gone. On a storage error the
/// producers are told to stop (`cancel`) and the error is returned; what was committed
/// before stays. Returns how many results were stored.
pub(crate) fn store_in_batches<T, E>(
    rx: &Receiver<T>,
    batch_size: usize,
    flush_every: Duration,
    cancel: &AtomicBool,
    mut store: impl FnMut(&[T]) -> Result<(), E>,
    mut on_event: impl FnMut(Batched<'_, T>),
) -> Result<u64, E> {
    let mut batch: Vec<T> = Vec::with_capacity(batch_size);
    let (mut done, mut stored) = (0u64, 0u64);
    let mut last_flush = Instant::now();
    loop {
        let disconnected = match rx.recv_timeout(flush_every) {
            Ok(item) => {
                done += 1;
                on_event(Batched::Received(done, &item));
                batch.push(item);
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let due = batch.len() >= batch_size
            || (!batch.is_empty() && (disconnected || last_flush.elapsed() >= flush_every));
        if due {
            if let Err(e) = store(&batch) {
                cancel.store(true, Ordering::SeqCst);
                return Err(e);
            }
            stored += batch.len() as u64;
            batch.clear();
            last_flush = Instant::now();
            on_event(Batched::Committed(stored));
        }
        if disconnected {
            return Ok(stored);
        }
    }
}

/// Probe one file; a panic inside FFmpeg glue or a header parser becomes an error row.
fn probe_one(
    f: &FoundFile,
    budget: Duration,
    stream: StreamChoice,
    workers: &worker::WorkerPool,
) -> ItemUpdate {
    let opened = f.source.open();
    let probe = catch_unwind(AssertUnwindSafe(|| {
        media::probe_with(&opened, budget, &mut |deadline| {
            // Time spent waiting for a worker is not the file's.
            let asked = Instant::now();
            workers.with(|slot| {
                let left = deadline.saturating_duration_since(asked);
                slot.probe(&opened, Instant::now() + left, stream)
            })
        })
    }))
    .unwrap_or_else(|_| {
        Probe::failed(
            MediaKind::Other,
            ItemStatus::Error,
            "internal error while probing this file (a bug: please report it)",
        )
    });
    let fingerprint = match &f.source {
        _ if f.fingerprint.is_some() => f.fingerprint.clone(),
        Source::File(path) if f.size_bytes > 0 => {
            media::fingerprint::fingerprint(path, f.size_bytes).ok()
        }
        _ => None,
    };
    ItemUpdate {
        path: f.rel_path.clone(),
        size_bytes: f.size_bytes,
        mtime_ns: f.mtime_ns,
        fingerprint,
        probe,
    }
}
