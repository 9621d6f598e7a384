//! Deep analysis: one decode pass per file, in parallel, results stored in batches; then the
//! derived data (duplicate groups, flags) is recomputed over the whole catalog.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use super::ScanError;
pub use super::options::AnalyzeOptions;
use super::worker::{Analysed, WorkerPool, WorkerSlot};
use framecull_analysis::cuts::CutOptions;
use framecull_analysis::phash::{dihedral_hashes, phash};
use framecull_analysis::still;
use framecull_analysis::video::{FLAT_STD, VideoAnalyzer};
use framecull_catalog::{AnalysisResult, AnalysisTodo, Catalog, CatalogError};
use framecull_media::decode::{DecodeError, DecodeOptions, DecodeReport, decode_frames};
use framecull_media::packets::scan_packets;
use framecull_media::{Opened, Source};
use framecull_model::{
    AnalysisLevel, Curves, FrameRecord, FrameTable, ItemStatus, MediaKind, Metrics, StreamChoice,
};
use framecull_storage::Root;

/// Bump when an analysis, deep or triage, changes what it stores: older results are
/// recomputed (3: the box-averaged analysis copy moves every picture measure slightly; 5:
/// letterbox and pillarbox bars, `content_crop`; 6: interlacing, `field_order`). A
/// video's deep analysis of an older version is recomputed by the deep pass only.
pub const ANALYSIS_VERSION: u32 = 6;

/// The share of a video's bytes a triage decodes (keyframes first, then whole GOPs), beyond
/// the GOPs with a packet anomaly: what keeps it at a tenth to a twentieth of the deep
/// pass's cost (`framecull-bench triage`).
const TRIAGE_SAMPLE_SHARE: f64 = 0.05;

#[derive(Debug, Clone)]
pub enum AnalyzeEvent {
    Started { total: u64 },
    Analysed { done: u64, total: u64, path: String },
    Committed { stored: u64 },
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AnalyzeSummary {
    pub analysed: u64,
    /// Files not decoded because their pictures are over the project's `[limits]`.
    pub over_limit: u64,
    /// Files to analyse that the filter (`analyze --where`) left out.
    pub not_chosen: u64,
    pub up_to_date: u64,
    pub cancelled: bool,
    pub elapsed_secs: f64,
}

/// Analyse every item whose analysis is missing or stale.
pub fn analyze(
    catalog: &mut Catalog,
    root: &Root,
    options: &AnalyzeOptions,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(AnalyzeEvent),
) -> Result<AnalyzeSummary, ScanError> {
    analyze_with(catalog, root, options, None, cancel, on_event)
}

/// [`analyze`] on `workers` when given (and `options.isolate`), such as the pool the scan
/// before probed on: their processes are running already.
pub fn analyze_with(
    catalog: &mut Catalog,
    root: &Root,
    options: &AnalyzeOptions,
    workers: Option<&WorkerPool>,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(AnalyzeEvent),
) -> Result<AnalyzeSummary, ScanError> {
    let started = Instant::now();
    framecull_media::init();
    let mut todo = catalog.analysis_todo(ANALYSIS_VERSION, options.level)?;
    let before = todo.len();
    if let Some(only) = &options.only {
        todo.retain(|t| only.contains(&t.id));
    }
    let not_chosen = (before - todo.len()) as u64;
    // Pictures over the project's limits are not decoded (their flag says so); they stay to
    // do, so raising the limit analyses them.
    let limits = super::project_config(catalog)?.limits;
    let mut own = None;
    let workers = super::worker::shared_or_own(
        workers,
        options.isolate,
        limits.memory_bytes(),
        options.jobs,
        &mut own,
    );
    let before = todo.len();
    todo.retain(|t| match (t.width, t.height) {
        (Some(w), Some(h)) => limits.over(t.kind, w, h).is_none(),
        _ => true,
    });
    let over_limit = (before - todo.len()) as u64;
    let total_items = catalog.count_items()?;
    let total = todo.len() as u64;
    on_event(AnalyzeEvent::Started { total });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .thread_name(|i| format!("framecull-analyze-{i}"))
        .build()
        .map_err(|e| ScanError::Threads(e.to_string()))?;
    let (tx, rx) = sync_channel::<(usize, AnalysisResult)>(64);
    let order = longest_first(&todo);
    let order = &order;
    let stored = std::thread::scope(|s| -> Result<u64, ScanError> {
        let todo = &todo;
        let producer = std::thread::Builder::new()
            .name("framecull-analyze".into())
            .spawn_scoped(s, move || {
                let files = Files {
                    todo,
                    order,
                    root,
                    options,
                    cancel,
                };
                analyse_on_pool(&pool, &files, workers, tx);
            })
            .map_err(|e| ScanError::Threads(e.to_string()))?;
        let stored = store_results(catalog, &rx, todo, total, options, cancel, on_event);
        drop(rx);
        if producer.join().is_err() {
            tracing::error!("an analysis thread panicked outside the per-file guard");
        }
        Ok(stored?)
    })?;
    if let Some(e) = root.as_remote().and_then(|r| r.failure()) {
        return Err(ScanError::Storage(e));
    }
    Ok(AnalyzeSummary {
        analysed: stored,
        over_limit,
        not_chosen,
        up_to_date: total_items.saturating_sub(total + over_limit + not_chosen),
        cancelled: cancel.load(Ordering::SeqCst),
        elapsed_secs: started.elapsed().as_secs_f64(),
    })
}

/// Each file of `todo` by its estimated decode work, with its index in `todo`, longest
/// first.
fn longest_first(todo: &[AnalysisTodo]) -> Vec<(f64, usize)> {
    // Estimated decode work: pixels x frames (images count as one frame).
    let mut order: Vec<(f64, usize)> = todo
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let pixels = f64::from(t.width.unwrap_or(1)) * f64::from(t.height.unwrap_or(1));
            let frames = t.frame_estimate.unwrap_or(1.0).max(1.0);
            (pixels * frames, i)
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    order
}

/// Store the results that come on `rx` in batches, each result (of `total`, the files of
/// `todo`) and each commit told to `on_event`: how many were stored.
fn store_results(
    catalog: &mut Catalog,
    rx: &Receiver<(usize, AnalysisResult)>,
    todo: &[AnalysisTodo],
    total: u64,
    options: &AnalyzeOptions,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(AnalyzeEvent),
) -> Result<u64, CatalogError> {
    super::store_in_batches(
        rx,
        options.batch_size,
        Duration::from_millis(500),
        cancel,
        |batch: &[(usize, AnalysisResult)]| {
            catalog.store_analyses(ANALYSIS_VERSION, batch.iter().map(|(_, r)| r))
        },
        |event| match event {
            super::Batched::Received(done, (i, _)) => on_event(AnalyzeEvent::Analysed {
                done,
                total,
                path: todo[*i].path.clone(),
            }),
            super::Batched::Committed(stored) => on_event(AnalyzeEvent::Committed { stored }),
        },
    )
}

/// What every worker of an analysis reads: the files, the order they are taken in, and how
/// they are analysed.
struct Files<'a> {
    todo: &'a [AnalysisTodo],
    /// Each file's estimated decode work and its index in `todo`, longest first.
    order: &'a [(f64, usize)],
    root: &'a Root,
    options: &'a AnalyzeOptions,
    cancel: &'a AtomicBool,
}

/// Analyse `files` on `pool`, each thread of the pool with a worker of `workers` (in its own
/// process where they run so) for all its files; each result is sent on `tx`.
fn analyse_on_pool(
    pool: &rayon::ThreadPool,
    files: &Files<'_>,
    workers: &WorkerPool,
    tx: SyncSender<(usize, AnalysisResult)>,
) {
    let options = files.options;
    // Longest jobs first, each worker taking the next one: rayon's splitting
    // would hand each thread a contiguous half instead.
    let next = AtomicUsize::new(0);
    let threads = Threads::new(options.jobs.max(1), files.order.iter().map(|o| o.0));
    pool.scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            let (tx, next, threads) = (tx.clone(), &next, &threads);
            scope.spawn(move |_| {
                workers.with(|analyst| analyse_in_turn(files, next, threads, analyst, &tx));
            });
        }
    });
    drop(tx);
}

/// One worker's files: the next of `files` (`next` counts those taken) until none is left,
/// the analysis is cancelled, or it stops; each analysed with `analyst` on the decoder
/// `threads` it is due, and its result sent on `tx`.
fn analyse_in_turn(
    files: &Files<'_>,
    next: &AtomicUsize,
    threads: &Threads,
    analyst: &mut WorkerSlot,
    tx: &SyncSender<(usize, AnalysisResult)>,
) {
    let Files {
        todo,
        order,
        root,
        options,
        cancel,
    } = *files;
    loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        let Some(&(work, item_index)) = order.get(i) else {
            break;
        };
        // Tests stop a deep pass in its middle on a machine of any speed.
        framecull_model::slow_down(framecull_model::SLOW_ANALYSIS_ENV);
        if cancel.load(Ordering::SeqCst) {
            break;
        }
        let item = &todo[item_index];
        let wanted = match options.file_threads {
            Some(n) => n.clamp(1, options.jobs.max(1)),
            None if item.kind == MediaKind::Video => threads.share(work),
            None => 1,
        };
        let held = threads.take(wanted, work);
        tracing::debug!(
            "{}: {} decoder threads (due {wanted})",
            item.path,
            held.count()
        );
        let file_options = AnalyzeOptions {
            file_threads: Some(held.count()),
            ..options.clone()
        };
        let mut result = analyse_guarded(analyst, root, item, &file_options, cancel);
        // A worker that failed (a crash, its memory cap) on several threads: once more on one,
        // as a single thread would have read it.
        if held.count() > 1
            && result
                .as_ref()
                .is_some_and(|r| r.metrics.undecodable.is_some())
        {
            let one = AnalyzeOptions {
                file_threads: Some(1),
                ..options.clone()
            };
            result = analyse_guarded(analyst, root, item, &one, cancel);
        }
        drop(held);
        let Some(result) = result else {
            break;
        };
        // A network or permission failure is not this file's: the file is left to do and the
        // analysis stops.
        if root.as_remote().is_some_and(|r| r.failure().is_some())
            || tx.send((item_index, result)).is_err()
        {
            break;
        }
    }
}

/// The decoder threads of an analysis: `jobs` of them, shared by the files in flight.
struct Threads {
    jobs: usize,
    /// Threads free, and the work (pixels x frames) of the files not yet started.
    state: std::sync::Mutex<(usize, f64)>,
    freed: std::sync::Condvar,
}

impl Threads {
    fn new(jobs: usize, work: impl Iterator<Item = f64>) -> Threads {
        Threads {
            jobs,
            state: std::sync::Mutex::new((jobs, work.sum())),
            freed: std::sync::Condvar::new(),
        }
    }

    /// The threads a file of `work` is due, of the files not yet started ([`file_threads`]).
    fn share(&self, work: f64) -> usize {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        file_threads(self.jobs, work, state.1)
    }

    /// Take up to `wanted` threads for a file of `work` (its work no longer waits): those
    /// free, at least one, waiting for one when none is (a core never waits for a second to
    /// free up); given back when the guard drops.
    fn take(&self, wanted: usize, work: f64) -> HeldThreads<'_> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1 = (state.1 - work).max(0.0);
        while state.0 == 0 {
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        let count = wanted.clamp(1, state.0);
        state.0 -= count;
        HeldThreads {
            threads: self,
            count,
        }
    }
}

/// Threads one file holds.
struct HeldThreads<'a> {
    threads: &'a Threads,
    count: usize,
}

impl HeldThreads<'_> {
    fn count(&self) -> usize {
        self.count
    }
}

impl Drop for HeldThreads<'_> {
    fn drop(&mut self) {
        let mut state = self.threads.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 += self.count;
        self.threads.freed.notify_all();
    }
}

/// Decoder threads for a file of `work` (pixels x frames) when `left` is the work of every
/// file not yet started, itself included: its share of `jobs` by its share of that work,
/// rounded, at least one. Files come longest first, so a file that is most of what is left
/// decodes on several threads (one long video: all of them) and a file among many like it on
/// one, with the others beside it.
pub fn file_threads(jobs: usize, work: f64, left: f64) -> usize {
    if left <= 0.0 || work <= 0.0 {
        return 1;
    }
    ((work / left * jobs as f64).round() as usize).clamp(1, jobs.max(1))
}

/// Analyse one file in this process; a panic becomes the file's reason.
pub(crate) fn analyse_in_process(
    root: &Root,
    item: &AnalysisTodo,
    options: &AnalyzeOptions,
) -> (Metrics, Curves) {
    catch_unwind(AssertUnwindSafe(|| analyse_file(root, item, options))).unwrap_or_else(|_| {
        (
            Metrics {
                undecodable: Some(
                    "internal error while analysing this file (a bug: please report it)".into(),
                ),
                ..Metrics::default()
            },
            Curves::default(),
        )
    })
}

fn analyse_guarded(
    analyst: &mut WorkerSlot,
    root: &Root,
    item: &AnalysisTodo,
    options: &AnalyzeOptions,
    stop: &AtomicBool,
) -> Option<AnalysisResult> {
    let (metrics, curves) = match analyst.analyse(root, item, options, stop) {
        Analysed::Done(metrics, curves) => (metrics, curves),
        Analysed::Stopped => return None,
        Analysed::NoWorker => analyse_in_process(root, item, options),
    };
    Some(AnalysisResult {
        id: item.id,
        size_bytes: item.size_bytes,
        mtime_ns: item.mtime_ns,
        stream_index: item.stream_index,
        metrics,
        curves,
    })
}

/// Analyse one file: content hash, structure (images), then one decode pass.
pub fn analyse_file(
    root: &Root,
    item: &AnalysisTodo,
    options: &AnalyzeOptions,
) -> (Metrics, Curves) {
    let source = Source::in_root(root, &item.path, item.size_bytes).open_streaming();
    let deadline = Instant::now() + options.file_budget;
    let is_image = item.kind == MediaKind::Image;
    // Images are small: read once for the hash and the structural check.
    let (content_hash, structure_error) = if is_image {
        match source.read_all() {
            Ok(bytes) => (Some(hash_bytes(&bytes)), still::structure_error(&bytes)),
            Err(e) => (None, Some(format!("cannot read: {e}"))),
        }
    } else if options.level == AnalysisLevel::Triage {
        // A triage reads each byte once, for the packets: no content hash (the deep pass
        // hashes).
        (None, None)
    } else {
        (hash_reader(&source).ok(), None)
    };
    // A picture's triage is its deep analysis; a video's, what the triage reads (also for a
    // video the probe could not read: not hashed, so a deep pass still has work to do).
    let base = Metrics {
        level: if is_image {
            AnalysisLevel::Deep
        } else {
            options.level
        },
        content_hash,
        structure_error,
        ..Metrics::default()
    };
    // A file the probe could not read (its flag says why) is hashed, for exact duplicates,
    // not decoded: there is nothing to measure, and FFmpeg is not deterministic on some such
    // files (a corrupt AVIF sample table reads a different size on every run).
    if item.status == ItemStatus::Error {
        return (base, Curves::default());
    }
    match item.kind.as_str() {
        "image" => analyse_image(&source, item, deadline, base),
        "video" if options.level == AnalysisLevel::Triage => {
            triage_video(&source, item, deadline, base)
        }
        "video" => analyse_video(
            &source,
            item,
            deadline,
            &options.cuts,
            base,
            options.file_threads.unwrap_or(1),
        ),
        _ => (base, Curves::default()),
    }
}

/// A video's triage: every packet read, its keyframes and a few GOPs decoded ([`framecull_analysis::triage`]).
fn triage_video(
    source: &Opened,
    item: &AnalysisTodo,
    deadline: Instant,
    base: Metrics,
) -> (Metrics, Curves) {
    let stream = StreamChoice::recorded(item.stream_index);
    let mut sampled = framecull_analysis::triage::Sampled::new(item.fps);
    match scan_packets(
        source,
        stream,
        deadline,
        TRIAGE_SAMPLE_SHARE,
        item.size_bytes,
        &mut |f, follows| sampled.push(f, follows),
    ) {
        Ok(scan) => (
            framecull_analysis::triage::measure(&scan, &sampled, item.fps),
            sampled.curves(&scan),
        ),
        // Nothing read: the failure is the triage's (`base` is of its level, with no hash).
        Err(e) => decode_failure(e, base),
    }
}

fn decode_failure(e: DecodeError, mut m: Metrics) -> (Metrics, Curves) {
    if matches!(e, DecodeError::TimedOut) {
        m.timed_out = true;
        return (m, Curves::default());
    }
    m.undecodable = Some(e.to_string());
    (m, Curves::default())
}

fn apply_report(m: &mut Metrics, report: &DecodeReport) {
    m.discarded_frames = report.discarded_packets;
    m.decode_errors = report.decode_errors + u64::from(report.read_error.is_some());
    m.first_error = report.first_error.clone().or_else(|| {
        report
            .read_error
            .as_ref()
            .map(|e| format!("reading stopped: {e}"))
    });
    m.timed_out = report.timed_out;
    m.decoder_messages = report.error_messages;
    m.first_message.clone_from(&report.first_message);
}

/// A video's deep analysis: every frame decoded, on `threads` decoder threads. The
/// decoder's frames are the same on any number of threads, but on a damaged stream its errors
/// are not: a file that shows any error on several threads is decoded again on one, so the
/// row is the one a single thread gives.
fn analyse_video(
    source: &Opened,
    item: &AnalysisTodo,
    deadline: Instant,
    cuts: &CutOptions,
    base: Metrics,
    threads: usize,
) -> (Metrics, Curves) {
    // The decode again on one thread has a budget of its own, as long as the first's.
    let budget = deadline.saturating_duration_since(Instant::now());
    let again = || decode_video(source, item, Instant::now() + budget, cuts, 1);
    let decoded = match decode_video(source, item, deadline, cuts, threads) {
        Ok((_, _, report)) if threads > 1 && report.saw_errors() && !report.timed_out => {
            tracing::debug!(
                "{}: errors on {threads} threads, decoding again on one",
                item.path
            );
            again()
        }
        Err(_) if threads > 1 => again(),
        other => other,
    };
    let (analyzer, table, report) = match decoded {
        Ok(decoded) => decoded,
        Err(e) => return decode_failure(e, base),
    };
    let (mut metrics, mut curves) = analyzer.finish(
        report.declared_duration_secs,
        // The frames an edit list discards are counted by the header, shown never.
        report
            .declared_frames
            .map(|n| n - report.discarded_packets as i64),
    );
    curves.frames = table;
    metrics.content_hash = base.content_hash;
    apply_report(&mut metrics, &report);
    if report.frames == 0 && metrics.undecodable.is_none() {
        metrics.undecodable = Some(
            report
                .first_error
                .clone()
                .or(report.read_error.clone())
                .map_or("no frame could be decoded".into(), |e| {
                    format!("no frame could be decoded: {e}")
                }),
        );
    }
    (metrics, curves)
}

/// Decode every frame of the video into its analysis and frame table.
fn decode_video(
    source: &Opened,
    item: &AnalysisTodo,
    deadline: Instant,
    cuts: &CutOptions,
    threads: usize,
) -> Result<(VideoAnalyzer, FrameTable, DecodeReport), DecodeError> {
    let mut analyzer = VideoAnalyzer::new(item.fps, cuts.clone());
    // Exact decoding (no `AV_CODEC_FLAG2_FAST`): the frame table is the reference the loader
    // checks its own (exact) frames against; MPEG-2's fast mode changes pictures.
    let options = DecodeOptions {
        deadline: Some(deadline),
        fast: false,
        stream: StreamChoice::recorded(item.stream_index),
        threads,
        ..DecodeOptions::default()
    };
    let mut table = FrameTable::default();
    let report = decode_frames(source, &options, 0, &mut |f| {
        analyzer.push(f);
        table.frames.push(FrameRecord {
            pts: f.pts,
            clean_key: f.key && !f.corrupt,
            damaged: f.corrupt,
            hash: f.content_hash,
        });
        true
    })?;
    Ok((analyzer, table, report))
}

fn analyse_image(
    source: &Opened,
    item: &AnalysisTodo,
    deadline: Instant,
    base: Metrics,
) -> (Metrics, Curves) {
    // Let JPEG decode at 1/2, 1/4 or 1/8 size while staying above 256 px.
    let short = item.width.unwrap_or(0).min(item.height.unwrap_or(0));
    let lowres = (0..=3u8).rev().find(|&l| short >> l >= 256).unwrap_or(0);
    let options = DecodeOptions {
        deadline: Some(deadline),
        ..DecodeOptions::default()
    };
    let mut picture: Option<([Vec<u8>; 3], usize, usize)> = None;
    let report = match decode_frames(source, &options, lowres, &mut |f| {
        picture = Some((f.planes.map(<[u8]>::to_vec), f.width, f.height));
        false
    }) {
        Ok(r) => r,
        Err(e) if matches!(item.codec.as_deref(), Some("heif" | "avif")) => {
            let mut m = base;
            let format = item.codec.as_deref().unwrap_or_default().to_uppercase();
            m.no_decoder = Some(format!(
                "{format} pictures cannot be decoded with this FFmpeg build ({e}); \
                 metadata is known, picture measures are not"
            ));
            return (m, Curves::default());
        }
        Err(e) => return decode_failure(e, base),
    };
    let mut metrics = base;
    apply_report(&mut metrics, &report);
    let Some(([r, g, b], w, h)) = picture else {
        metrics.undecodable = Some(
            report
                .first_error
                .or(report.read_error)
                .map_or("the image could not be decoded".into(), |e| {
                    format!("the image could not be decoded: {e}")
                }),
        );
        return (metrics, Curves::default());
    };
    let orientation = item.exif_orientation.filter(|o| (1..=8).contains(o));
    let (q, upright) = still::analyse_picture([&r, &g, &b], w, h, orientation);
    metrics.decoded_frames = 1;
    metrics.brightness = Some(q.brightness);
    metrics.brightness_p5 = Some(q.brightness_p5);
    metrics.brightness_p95 = Some(q.brightness_p95);
    metrics.sharpness = Some(q.sharpness);
    metrics.entropy = Some(q.entropy);
    metrics.colorfulness = Some(q.colorfulness);
    metrics.phash = Some(phash(&upright));
    // A flat picture has no content to match: leave it to exact duplicates.
    let frame_hashes = if upright.std_dev() >= FLAT_STD {
        dihedral_hashes(&upright).to_vec()
    } else {
        Vec::new()
    };
    let curves = Curves {
        frame_hashes,
        ..Curves::default()
    };
    (metrics, curves)
}

fn hash_bytes(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

fn hash_reader(source: &Opened) -> std::io::Result<String> {
    framecull_media::fingerprint::whole(source.reader()?)
}

#[cfg(test)]
mod tests {
    use super::file_threads;

    #[test]
    fn a_file_decodes_on_its_share_of_the_threads_by_its_share_of_the_work_left() {
        // Alone, or most of what is left: every thread.
        assert_eq!(file_threads(2, 10.0, 10.0), 2);
        assert_eq!(file_threads(2, 8.0, 10.0), 2);
        assert_eq!(file_threads(8, 40.0, 100.0), 3);
        // One of two alike, one of many: one thread, the others beside it.
        assert_eq!(file_threads(2, 5.0, 10.0), 1);
        assert_eq!(file_threads(8, 1.0, 100.0), 1);
        // Nothing known: one.
        assert_eq!(file_threads(4, 0.0, 0.0), 1);
        assert_eq!(file_threads(1, 10.0, 10.0), 1);
    }
}
