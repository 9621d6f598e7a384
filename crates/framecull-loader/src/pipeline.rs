//! One epoch in flight: decode workers take windows in plan order, no further ahead than a
//! few batches of the consumer (bounded memory), and the consumer assembles batches in plan
//! order (deterministic whatever the number of workers or their timing).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use super::epoch::{Job, Queue, Shared, Spooled};
use super::gpu::{Gpu, GpuBatch};
use super::isolate::WindowReader;
use super::plan::PlannedBatch;
use super::preprocess::{FrameJob, OutputSpec};
use super::shards::Feed;
use super::{
    Batch, BatchData, ClipSource, Loader, LoaderConfig, LoaderError, OnError, SkipReason, Stats,
};
mod worker;
use worker::{Done, Prepared, Read, worker};

/// The batches of one epoch, read in the background.
pub struct Epoch<'a> {
    loader: &'a mut Loader,
    /// Each batch's index in the epoch's plan, and the batch.
    batches: Vec<(usize, PlannedBatch)>,
    /// Index of each batch's first job; one more entry at the end.
    job_start: Vec<usize>,
    next_batch: usize,
    rx: Receiver<Done>,
    pending: HashMap<usize, Done>,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    started: Instant,
    failed: bool,
    /// Running checksum of the batches handed out (see [`Stats::checksum`](super::Stats)).
    hasher: xxhash_rust::xxh3::Xxh3,
    /// The loader's shard counts before this epoch.
    shard_base: (u64, u64),
}

impl<'a> Epoch<'a> {
    pub(super) fn start(loader: &'a mut Loader, batches: Vec<(usize, PlannedBatch)>) -> Epoch<'a> {
        let (jobs, job_start) = jobs_of(&batches);
        let jobs = Arc::new(jobs);
        let count = loader.config.workers.max(1).min(jobs.len().max(1));
        let shared = Arc::new(shared_state(loader, jobs.len(), count));
        let job_start_shared = Arc::new(job_start.clone());
        let (tx, rx) = channel();
        let mut workers = spawn_workers(loader, count, &jobs, &job_start_shared, &shared, &tx);
        let shard_reader = spawn_shard_reader(loader, &jobs, &job_start_shared, &shared);
        workers.extend(shard_reader);
        let shard_base = (loader.stats.shards_read, loader.stats.shard_bytes_read);
        Epoch {
            loader,
            batches,
            job_start,
            next_batch: 0,
            rx,
            pending: HashMap::new(),
            shared,
            workers,
            started: Instant::now(),
            failed: false,
            hasher: xxhash_rust::xxh3::Xxh3::new(),
            shard_base,
        }
    }

    /// Batches this epoch will deliver (a failed window only shortens its batch).
    pub fn len(&self) -> usize {
        self.batches.len()
    }

    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// The loader's counts and timings so far (this epoch's included).
    pub fn stats(&self) -> &super::Stats {
        &self.loader.stats
    }

    /// A batch's bytes in host memory (read back from the GPU when it lives there). A GPU
    /// batch's bytes count in the epoch's checksum when they are read back here.
    pub fn to_host(&mut self, batch: &Batch) -> Result<Vec<u8>, LoaderError> {
        let bytes = self.loader.to_host(batch)?;
        if self.loader.config.checksum && matches!(batch.data, BatchData::Gpu(_)) {
            self.hasher.update(&bytes);
            self.loader.stats.checksum = format!("{:016x}", self.hasher.digest());
        }
        Ok(bytes)
    }

    /// Give a used batch back: its memory holds a later batch (no fresh pages per batch).
    pub fn recycle(&mut self, batch: Batch) {
        self.loader.recycle(batch);
    }

    fn assemble(&mut self, b: usize) -> Result<Batch, LoaderError> {
        let (lo, hi) = (self.job_start[b], self.job_start[b + 1]);
        self.wait_for_jobs(lo, hi)?;
        self.consume(b);
        let (index, planned) = &self.batches[b];
        let (index, t) = (*index, planned.t as usize);
        let out = self.loader.config.output;
        let WindowsRead {
            lengths,
            clip_ids,
            windows,
            prepared,
        } = self.take_windows(b, lo, hi)?;
        let rows = lengths.len();
        let stats = &mut self.loader.stats;
        stats.batches += 1;
        stats.windows += rows as u64;
        let real: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        stats.frames += real;
        stats.padding_frames += (rows * t) as u64 - real;
        let data = match self.loader.gpu.as_mut() {
            None => BatchData::Host(self.host_bytes(prepared)),
            Some(gpu) => BatchData::Gpu(gpu_batch(gpu, &prepared, rows, t, &out, stats)?),
        };
        let shape = match out.layout {
            super::Layout::Bcthw => [rows, t, 3, out.height as usize, out.width as usize],
            super::Layout::Bthwc => [rows, t, out.height as usize, out.width as usize, 3],
        };
        let batch = Batch {
            index,
            shape,
            layout: out.layout,
            dtype: out.dtype,
            lengths,
            clip_ids,
            windows,
            data,
        };
        if self.loader.config.checksum {
            batch.hash_into(&mut self.hasher);
            self.loader.stats.checksum = format!("{:016x}", self.hasher.digest());
        }
        Ok(batch)
    }

    /// Wait until jobs `lo..hi` (a batch's windows) are all done, keeping each one that
    /// comes; the time waited counts in the stats.
    fn wait_for_jobs(&mut self, lo: usize, hi: usize) -> Result<(), LoaderError> {
        let waited = Instant::now();
        while (lo..hi).any(|j| !self.pending.contains_key(&j)) {
            match self.rx.recv() {
                Ok(done) => {
                    self.pending.insert(done.job, done);
                }
                Err(_) => {
                    return Err(LoaderError::Config("the loader's workers stopped".into()));
                }
            }
        }
        self.loader.stats.wait_secs += waited.elapsed().as_secs_f64();
        Ok(())
    }

    /// Batch `b` taken by the consumer: the shards read so far count in the stats, and the
    /// workers may read on to the batches within reach of it.
    fn consume(&mut self, b: usize) {
        let stats = &mut self.loader.stats;
        stats.shards_read = self.shard_base.0 + self.shared.shards_read.load(Ordering::Relaxed);
        stats.shard_bytes_read =
            self.shard_base.1 + self.shared.shard_bytes.load(Ordering::Relaxed);
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.consumed = b + 1;
        self.shared.wake.notify_all();
    }

    /// Take batch `b`'s windows (jobs `lo..hi`, all done) from those pending, in plan order,
    /// their times and counts added to the stats; a window that could not be read is left
    /// out, or ends the run with its error.
    fn take_windows(&mut self, b: usize, lo: usize, hi: usize) -> Result<WindowsRead, LoaderError> {
        let planned = &self.batches[b].1;
        let stats = &mut self.loader.stats;
        let mut read_windows = WindowsRead::default();
        for (j, sample) in (lo..hi).zip(&planned.samples) {
            let Some(done) = self.pending.remove(&j) else {
                continue;
            };
            add_window_counts(stats, &done);
            let clip = &self.loader.clips[sample.clip as usize];
            if let Some(failure) = done.cache_failure {
                return Err(LoaderError::Cache(failure));
            }
            match done.result {
                Ok(read) => read_windows.push(clip, read),
                Err((reason, message)) => {
                    skip_window(
                        stats,
                        &self.shared,
                        &self.loader.config,
                        clip,
                        reason,
                        message,
                    )?;
                }
            }
        }
        Ok(read_windows)
    }

    /// The windows' bytes one after another in a spare batch buffer; each window's buffer
    /// then goes to the pool the workers fill again, while it holds few.
    fn host_bytes(&self, prepared: Vec<Prepared>) -> Vec<u8> {
        let total = prepared
            .iter()
            .map(|p| match p {
                Prepared::Bytes(b) => b.len(),
                Prepared::Frames(_) => 0,
            })
            .sum();
        let mut bytes = self.loader.spare_batches.take();
        bytes.clear();
        bytes.reserve(total);
        let mut pool = self.shared.pool.lock().unwrap_or_else(|p| p.into_inner());
        for p in prepared {
            if let Prepared::Bytes(b) = p {
                bytes.extend_from_slice(&b);
                if pool.len() < 2 * self.workers.len() {
                    pool.push(b);
                }
            }
        }
        bytes
    }
}

/// The windows of `batches` in plan order, and the index of each batch's first window, with
/// one more entry at the end.
fn jobs_of(batches: &[(usize, PlannedBatch)]) -> (Vec<Job>, Vec<usize>) {
    let mut jobs = Vec::new();
    let mut job_start = Vec::with_capacity(batches.len() + 1);
    for (_, batch) in batches {
        job_start.push(jobs.len());
        jobs.extend(
            batch
                .samples
                .iter()
                .map(|&sample| Job { sample, t: batch.t }),
        );
    }
    job_start.push(jobs.len());
    (jobs, job_start)
}

/// What an epoch's threads share at its start, with `windows` windows to read and `count`
/// workers: nothing taken, and each clip read from `loader`'s shards waiting for its file.
fn shared_state(loader: &Loader, windows: usize, count: usize) -> Shared {
    Shared {
        queue: Mutex::new(Queue {
            taken: vec![false; windows],
            untaken: windows,
            at: vec![None; count],
            consumed: 0,
            spooled: match &loader.shards {
                Some(_) => vec![Spooled::Waiting; loader.clips.len()],
                None => Vec::new(),
            },
        }),
        keyframes: Mutex::new(HashMap::new()),
        wake: Condvar::new(),
        stop: AtomicBool::new(false),
        shards_read: AtomicU64::new(0),
        shard_bytes: AtomicU64::new(0),
        storage_failure: Mutex::new(None),
        pool: Mutex::new(Vec::new()),
    }
}

/// Start `count` decode workers on `jobs`, each sending the windows it reads to `tx`; a
/// worker that cannot start is logged and left out.
fn spawn_workers(
    loader: &Loader,
    count: usize,
    jobs: &Arc<Vec<Job>>,
    job_start: &Arc<Vec<usize>>,
    shared: &Arc<Shared>,
    tx: &Sender<Done>,
) -> Vec<JoinHandle<()>> {
    let gpu = loader.gpu.is_some();
    let mut workers = Vec::with_capacity(count);
    for i in 0..count {
        let (jobs, shared, tx) = (Arc::clone(jobs), Arc::clone(shared), tx.clone());
        let job_start = Arc::clone(job_start);
        let clips = Arc::clone(&loader.clips);
        let config = loader.config.clone();
        let isolation = loader.isolation.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("loader-{i}"))
            .spawn(move || {
                let reader = WindowReader::new(&config, isolation);
                worker(
                    i, &jobs, &job_start, &clips, &config, gpu, &shared, &tx, reader,
                )
            });
        match spawned {
            Ok(handle) => workers.push(handle),
            Err(e) => tracing::error!("cannot start a loader worker: {e}"),
        }
    }
    workers
}

/// Start the thread that reads `loader`'s shards, where the version is read from them,
/// spooling the clips of `jobs`; where it cannot start, every clip fails and none waits.
fn spawn_shard_reader(
    loader: &Loader,
    jobs: &Arc<Vec<Job>>,
    job_start: &Arc<Vec<usize>>,
    shared: &Arc<Shared>,
) -> Option<JoinHandle<()>> {
    let set = loader.shards.as_ref()?;
    let (set, jobs, feeding) = (Arc::clone(set), Arc::clone(jobs), Arc::clone(shared));
    let job_start = Arc::clone(job_start);
    let fingerprints = loader.fingerprints.clone();
    let is_image = loader.clips.iter().map(|c| c.is_image).collect();
    let (verify, ahead) = (
        loader.config.verify_fingerprints,
        loader.config.prefetch_batches.max(1),
    );
    let spawned = std::thread::Builder::new()
        .name("loader-shards".into())
        .spawn(move || {
            Feed {
                set: &set,
                fingerprints: &fingerprints,
                verify,
                is_image,
                jobs: &jobs,
                job_start: &job_start,
                ahead,
                shared: &feeding,
            }
            .run();
        });
    match spawned {
        Ok(handle) => Some(handle),
        Err(e) => {
            // No shard is read: every clip fails, none waits.
            let why = format!("cannot start the loader's shard reader: {e}");
            tracing::error!("{why}");
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            for spooled in &mut queue.spooled {
                *spooled = Spooled::Failed(SkipReason::Corrupt, why.clone());
            }
            None
        }
    }
}

/// The windows of a batch read so far, in slot order: their lengths, clips, frames and
/// output.
#[derive(Default)]
struct WindowsRead {
    lengths: Vec<u32>,
    clip_ids: Vec<String>,
    windows: Vec<super::WindowInfo>,
    prepared: Vec<Prepared>,
}

impl WindowsRead {
    /// Add the window `read` of `clip`.
    fn push(&mut self, clip: &ClipSource, read: Read) {
        self.lengths.push(read.frames.len() as u32);
        self.clip_ids.push(clip.clip_id.clone());
        let tb = read.time_base.as_f64();
        self.windows.push(super::WindowInfo {
            clip_id: clip.clip_id.clone(),
            row: clip.row,
            frames: read.frames.iter().map(|&(i, _)| i as u64).collect(),
            pts: read.frames.iter().map(|&(_, p)| p).collect(),
            secs: read.frames.iter().map(|&(_, p)| p as f64 * tb).collect(),
            time_base: read.time_base,
        });
        self.prepared.push(read.prepared);
    }
}

/// Add a window's read times and counts to `stats`.
fn add_window_counts(stats: &mut Stats, done: &Done) {
    let times = &done.times;
    stats.read_secs += times.read_secs;
    stats.decode_secs += times.decode_secs;
    stats.convert_secs += times.convert_secs;
    stats.frames_decoded += times.frames_decoded;
    stats.seeks += times.seeks;
    stats.preprocess_secs += done.preprocess_secs;
    stats.cache_hits += done.cache_hits;
    stats.cache_fills += done.cache_fills;
    stats.worker_processes += done.started;
}

/// A window of `clip` that could not be read (`reason`, `message`): counted in `stats` and
/// left out of its batch, unless its store stopped answering or `config.on_error` says to
/// fail, which end the run with the error.
fn skip_window(
    stats: &mut Stats,
    shared: &Shared,
    config: &LoaderConfig,
    clip: &ClipSource,
    reason: SkipReason,
    message: String,
) -> Result<(), LoaderError> {
    // A store that stopped answering (or refuses the key) ends the run with
    // its error, whatever `on_error` says: no window of it can be read.
    if let Some(failure) = clip.source.storage_failure() {
        return Err(LoaderError::Storage(failure));
    }
    let shard_failure = shared
        .storage_failure
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(failure) = shard_failure {
        return Err(LoaderError::Storage(failure));
    }
    let message = format!("{}: {message}", clip.path.display());
    if config.on_error == OnError::Fail {
        return Err(LoaderError::File {
            path: clip.path.clone(),
            reason: message,
        });
    }
    *stats.skipped_windows.entry(reason).or_default() += 1;
    if stats.errors.len() < 20 {
        stats.errors.push(message);
    }
    Ok(())
}

/// Preprocess the windows' frames (`rows` windows of `t` slots, padding after each window's
/// frames) on the GPU into one batch buffer, the GPU's times added to `stats`.
fn gpu_batch(
    gpu: &mut Gpu,
    prepared: &[Prepared],
    rows: usize,
    t: usize,
    out: &OutputSpec,
    stats: &mut Stats,
) -> Result<GpuBatch, LoaderError> {
    let mut jobs: Vec<Option<FrameJob>> = Vec::with_capacity(rows * t);
    for p in prepared {
        if let Prepared::Frames(w) = p {
            jobs.extend(
                w.frames
                    .iter()
                    .zip(&w.params)
                    .map(|(frame, &params)| Some(FrameJob { frame, params })),
            );
            jobs.extend(std::iter::repeat_n(None, t - w.frames.len()));
        }
    }
    let mut times = super::gpu::GpuTimes::default();
    let buffer = gpu.run(&jobs, out, &mut times)?;
    stats.upload_secs += times.upload_secs;
    stats.compute_secs += times.compute_secs;
    Ok(buffer)
}

impl Iterator for Epoch<'_> {
    type Item = Result<Batch, LoaderError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.next_batch >= self.batches.len() {
            return None;
        }
        let b = self.next_batch;
        self.next_batch += 1;
        let result = self.assemble(b);
        self.loader.stats.wall_secs += self.started.elapsed().as_secs_f64();
        self.started = Instant::now();
        if result.is_err() {
            self.failed = true;
        }
        Some(result)
    }
}

impl Drop for Epoch<'_> {
    fn drop(&mut self) {
        let stop = || {
            // Under the lock: a thread between its check of `stop` and its wait sees it.
            let _queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            self.shared.stop.store(true, Ordering::SeqCst);
            self.shared.wake.notify_all();
        };
        // An epoch read to its end: its threads end by themselves (the shard reader reads
        // the end of its shard); else they are stopped.
        let whole = !self.failed && self.next_batch >= self.batches.len();
        if !whole {
            stop();
        }
        for handle in self.workers.drain(..) {
            let _ = handle.join();
        }
        stop();
        if let Some(set) = &self.loader.shards {
            set.spool.clear();
            // What the shard reader read after the last batch (the shards' ends) counts too.
            let stats = &mut self.loader.stats;
            stats.shards_read = self.shard_base.0 + self.shared.shards_read.load(Ordering::Relaxed);
            stats.shard_bytes_read =
                self.shard_base.1 + self.shared.shard_bytes.load(Ordering::Relaxed);
        }
    }
}
