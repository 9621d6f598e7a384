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
use super::isolate::WindowReader;
use super::plan::PlannedBatch;
use super::preprocess::{FrameJob, Scratch};
use super::shards::Feed;
use super::source::WindowFrames;
use super::{Batch, BatchData, ClipSource, Loader, LoaderConfig, LoaderError, OnError, SkipReason};
use framecull_media::reader::ReadTimes;

enum Prepared {
    /// CPU path: the window's output bytes, `t` frames (padding zeroed).
    Bytes(Vec<u8>),
    /// GPU path: the decoded frames, preprocessed when the batch is assembled.
    Frames(WindowFrames),
}

/// A window read: its output, and which frames of the file it holds.
struct Read {
    prepared: Prepared,
    /// Index in the file and timestamp of each real frame, in slot order.
    frames: Vec<(usize, i64)>,
    time_base: framecull_model::Ratio,
}

struct Done {
    job: usize,
    result: Result<Read, (SkipReason, String)>,
    times: ReadTimes,
    preprocess_secs: f64,
    /// Windows read from the cache, and clips written to it.
    cache_hits: u64,
    cache_fills: u64,
    /// Worker processes started for this window.
    started: u64,
    /// The frame cache could not be written: the run ends with this.
    cache_failure: Option<String>,
}

/// The window worker `me` would read on to from its last window: the next free window of
/// that clip when close after it (`near`), unless another worker's decoder stands between
/// the two (that one reads on to it, decoding fewer frames).
fn next_window(
    jobs: &[Job],
    taken: &[bool],
    me: usize,
    at: &[Option<(u32, f64)>],
    near: f64,
) -> Option<usize> {
    let (clip, start) = at.get(me).copied().flatten()?;
    let next = (0..taken.len())
        .filter(|&j| !taken[j] && jobs[j].sample.clip == clip)
        .filter(|&j| jobs[j].sample.start > start && jobs[j].sample.start - start <= near)
        .min_by(|&a, &b| jobs[a].sample.start.total_cmp(&jobs[b].sample.start))?;
    let until = jobs[next].sample.start;
    let between = at
        .iter()
        .enumerate()
        .any(|(w, pos)| w != me && pos.is_some_and(|(c, p)| c == clip && p > start && p < until));
    (!between).then_some(next)
}

/// Windows a worker may take: those of the batches within `ahead` of the consumer.
/// Worker `me` takes, in this order of preference:
/// 1. the next window of the clip it just read, when close after it: the open decoder goes
///    on without a seek (two workers alternating over one clip would each decode all of it);
/// 2. else the first window of a clip (decoding starts at a keyframe, nothing is wasted);
/// 3. else, in the longest run of windows that are neither taken nor another worker's next
///    (rule 1: taking it would make that worker seek, or decode the frames twice), its first
///    window when nobody reads on to it, else (someone reads on from the window before) the
///    window of its second half that starts closest after a keyframe (the fewest frames
///    decoded only to reach it), else its middle.
///
/// With nothing left but other workers' next windows, the worker waits: the window's own
/// worker reads on to it for less than a seek costs. Output does not depend on this:
/// batches are assembled in plan order.
fn pick(
    jobs: &[Job],
    taken: &[bool],
    me: usize,
    at: &[Option<(u32, f64)>],
    near: f64,
    keyframes: &HashMap<u32, Arc<Vec<f64>>>,
) -> Option<usize> {
    if let Some(next) = next_window(jobs, taken, me, at, near) {
        return Some(next);
    }
    // Other workers' next windows count as taken.
    let mut busy = taken.to_vec();
    for w in (0..at.len()).filter(|&w| w != me) {
        if let Some(j) = next_window(jobs, taken, w, at, near) {
            busy[j] = true;
        }
    }
    // The first window of a clip nobody reads yet: decoding starts at a keyframe.
    if let Some(j) = (0..busy.len()).find(|&j| !busy[j] && jobs[j].sample.start == 0.0) {
        return Some(j);
    }
    let mut best: Option<(usize, usize)> = None;
    let mut j = 0;
    while j < busy.len() {
        if busy[j] {
            j += 1;
            continue;
        }
        let run_start = j;
        while j < busy.len() && !busy[j] {
            j += 1;
        }
        if best.is_none_or(|(_, len)| j - run_start > len) {
            best = Some((run_start, j - run_start));
        }
    }
    let (start, len) = best?;
    if start == 0 || !busy[start - 1] {
        return Some(start);
    }
    let middle = start + len / 2;
    // Frames decoded before the window's first: from the keyframe at or before it.
    let lead = |j: usize| {
        let sample = &jobs[j].sample;
        let keys = keyframes.get(&sample.clip)?;
        let k = keys.partition_point(|&k| k <= sample.start);
        Some(sample.start - keys[k.checked_sub(1)?])
    };
    let aligned = (start + (len - 1) / 2..start + len)
        .filter_map(|j| lead(j).map(|l| (l, j)))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    Some(aligned.map_or(middle, |(_, j)| j))
}

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
        let mut jobs = Vec::new();
        let mut job_start = Vec::with_capacity(batches.len() + 1);
        for (_, batch) in &batches {
            job_start.push(jobs.len());
            jobs.extend(
                batch
                    .samples
                    .iter()
                    .map(|&sample| Job { sample, t: batch.t }),
            );
        }
        job_start.push(jobs.len());
        let jobs = Arc::new(jobs);
        let count = loader.config.workers.max(1).min(jobs.len().max(1));
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                taken: vec![false; jobs.len()],
                untaken: jobs.len(),
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
        });
        let job_start_shared = Arc::new(job_start.clone());
        let (tx, rx) = channel();
        let gpu = loader.gpu.is_some();
        let mut workers = Vec::with_capacity(count);
        for i in 0..count {
            let (jobs, shared, tx) = (Arc::clone(&jobs), Arc::clone(&shared), tx.clone());
            let job_start = Arc::clone(&job_start_shared);
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
        if let Some(set) = &loader.shards {
            let (set, jobs, feeding) = (Arc::clone(set), Arc::clone(&jobs), Arc::clone(&shared));
            let job_start = Arc::clone(&job_start_shared);
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
                Ok(handle) => workers.push(handle),
                Err(e) => {
                    // No shard is read: every clip fails, none waits.
                    let why = format!("cannot start the loader's shard reader: {e}");
                    tracing::error!("{why}");
                    let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
                    for spooled in &mut queue.spooled {
                        *spooled = Spooled::Failed(SkipReason::Corrupt, why.clone());
                    }
                }
            }
        }
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
        let stats = &mut self.loader.stats;
        stats.wait_secs += waited.elapsed().as_secs_f64();
        stats.shards_read = self.shard_base.0 + self.shared.shards_read.load(Ordering::Relaxed);
        stats.shard_bytes_read =
            self.shard_base.1 + self.shared.shard_bytes.load(Ordering::Relaxed);
        {
            let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.consumed = b + 1;
            self.shared.wake.notify_all();
        }
        let (index, planned) = &self.batches[b];
        let (index, t) = (*index, planned.t as usize);
        let out = self.loader.config.output;
        let mut lengths = Vec::new();
        let mut clip_ids = Vec::new();
        let mut windows = Vec::new();
        let mut prepared = Vec::new();
        for (j, sample) in (lo..hi).zip(&planned.samples) {
            let Some(done) = self.pending.remove(&j) else {
                continue;
            };
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
            let clip = &self.loader.clips[sample.clip as usize];
            if let Some(failure) = done.cache_failure {
                return Err(LoaderError::Cache(failure));
            }
            match done.result {
                Ok(read) => {
                    lengths.push(read.frames.len() as u32);
                    clip_ids.push(clip.clip_id.clone());
                    let tb = read.time_base.as_f64();
                    windows.push(super::WindowInfo {
                        clip_id: clip.clip_id.clone(),
                        row: clip.row,
                        frames: read.frames.iter().map(|&(i, _)| i as u64).collect(),
                        pts: read.frames.iter().map(|&(_, p)| p).collect(),
                        secs: read.frames.iter().map(|&(_, p)| p as f64 * tb).collect(),
                        time_base: read.time_base,
                    });
                    prepared.push(read.prepared);
                }
                Err((reason, message)) => {
                    // A store that stopped answering (or refuses the key) ends the run with
                    // its error, whatever `on_error` says: no window of it can be read.
                    if let Some(failure) = clip.source.storage_failure() {
                        return Err(LoaderError::Storage(failure));
                    }
                    let shard_failure = self
                        .shared
                        .storage_failure
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .take();
                    if let Some(failure) = shard_failure {
                        return Err(LoaderError::Storage(failure));
                    }
                    let message = format!("{}: {message}", clip.path.display());
                    if self.loader.config.on_error == OnError::Fail {
                        return Err(LoaderError::File {
                            path: clip.path.clone(),
                            reason: message,
                        });
                    }
                    *stats.skipped_windows.entry(reason).or_default() += 1;
                    if stats.errors.len() < 20 {
                        stats.errors.push(message);
                    }
                }
            }
        }
        let rows = lengths.len();
        stats.batches += 1;
        stats.windows += rows as u64;
        let real: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        stats.frames += real;
        stats.padding_frames += (rows * t) as u64 - real;
        let data = match self.loader.gpu.as_mut() {
            None => {
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
                BatchData::Host(bytes)
            }
            Some(gpu) => {
                let mut jobs: Vec<Option<FrameJob>> = Vec::with_capacity(rows * t);
                for p in &prepared {
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
                let buffer = gpu.run(&jobs, &out, &mut times)?;
                stats.upload_secs += times.upload_secs;
                stats.compute_secs += times.compute_secs;
                BatchData::Gpu(buffer)
            }
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

/// Clears a worker's place in the queue when it ends (or panics outside a window), so no
/// other worker waits for it to read on.
struct Leave<'a> {
    me: usize,
    shared: &'a Shared,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.at[self.me] = None;
        self.shared.wake.notify_all();
    }
}

#[allow(clippy::too_many_arguments)]
fn worker(
    me: usize,
    jobs: &[Job],
    job_start: &[usize],
    clips: &[ClipSource],
    config: &LoaderConfig,
    gpu: bool,
    shared: &Shared,
    tx: &Sender<Done>,
    mut reader: WindowReader,
) {
    let mut scratch = Scratch::default();
    let out = config.output;
    let frame_bytes = out.frame_elements() * out.dtype.size_bytes();
    let ahead = config.prefetch_batches.max(1);
    // A window this close after the last one read goes on with the open decoder.
    let near = match config.sampling.timing {
        super::Timing::Stride(stride) => {
            f64::from(stride)
                * f64::from(
                    config
                        .sampling
                        .clip_len
                        .unwrap_or(config.sampling.max_frames),
                )
                * 2.0
        }
        super::Timing::Fps(_) => 4.0,
    };
    let _leave = Leave { me, shared };
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let j = {
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if shared.stop.load(Ordering::SeqCst) || queue.untaken == 0 {
                    return;
                }
                let limit = job_start[(queue.consumed + ahead).min(job_start.len() - 1)];
                // Lock order: the queue, then the keyframes (workers publish keyframes
                // holding only the latter).
                let keyframes = shared.keyframes.lock().unwrap_or_else(|p| p.into_inner());
                let picked = pick(jobs, &queue.taken[..limit], me, &queue.at, near, &keyframes);
                drop(keyframes);
                if let Some(j) = picked {
                    queue.taken[j] = true;
                    queue.untaken -= 1;
                    queue.at[me] = Some((jobs[j].sample.clip, jobs[j].sample.start));
                    // Waiting workers look again: what counts as someone's next window moved.
                    shared.wake.notify_all();
                    break j;
                }
                queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
        };
        let job = &jobs[j];
        let mut clip = &clips[job.sample.clip as usize];
        let turned;
        let spooled = match wait_spooled(shared, job.sample.clip) {
            Some(spooled) => spooled,
            None => return,
        };
        if let Spooled::Ready { orientation } = spooled
            && clip.is_image
            && orientation != 1
        {
            let (quarter_turns, mirror) = framecull_model::orientation_turns(orientation);
            turned = ClipSource {
                quarter_turns,
                mirror,
                ..clip.clone()
            };
            clip = &turned;
        }
        let mut times = ReadTimes::default();
        let (hits, fills) = reader.cache_counts();
        let started = reader.processes_started();
        let mut preprocess_secs = 0.0;
        // A panic in one window (a bug, or a decoder gone wrong) fails that window only.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match spooled {
                Spooled::Failed(reason, why) => return Err((reason, why)),
                Spooled::Gone => {
                    return Err((SkipReason::Missing, "spooled and removed".to_string()));
                }
                Spooled::Waiting | Spooled::Ready { .. } => {}
            }
            let index = job.sample.clip;
            let publish_keyframes = |reader: &WindowReader| {
                if matches!(config.sampling.timing, super::Timing::Stride(_))
                    && config.cache.is_none()
                {
                    let mut known = shared.keyframes.lock().unwrap_or_else(|p| p.into_inner());
                    if !known.contains_key(&index)
                        && let Some(keys) = reader.clip_keyframes(index, clip)
                    {
                        known.insert(index, Arc::new(keys));
                    }
                }
            };
            if gpu {
                let window = reader.read_window(index, clip, &job.sample, config, &mut times)?;
                publish_keyframes(&reader);
                let frames = window.frames.iter().map(|f| (f.index, f.pts)).collect();
                let time_base = window.time_base;
                return Ok(Read {
                    prepared: Prepared::Frames(window),
                    frames,
                    time_base,
                });
            }
            let slots = job.t as usize;
            let mut bytes = shared
                .pool
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop()
                .unwrap_or_default();
            bytes.resize(slots * frame_bytes, 0);
            let ((frames, time_base), secs) = reader.read_window_into(
                index,
                clip,
                &job.sample,
                config,
                &mut times,
                &mut scratch,
                &mut bytes,
            )?;
            preprocess_secs = secs;
            publish_keyframes(&reader);
            Ok(Read {
                prepared: Prepared::Bytes(bytes),
                frames,
                time_base,
            })
        }))
        .unwrap_or_else(|_| {
            Err((
                SkipReason::Corrupt,
                "reading the window panicked".to_string(),
            ))
        });
        let done = Done {
            job: j,
            result,
            times,
            preprocess_secs,
            cache_hits: reader.cache_counts().0 - hits,
            cache_fills: reader.cache_counts().1 - fills,
            started: reader.processes_started() - started,
            cache_failure: reader.take_cache_failure(),
        };
        if tx.send(done).is_err() {
            return;
        }
    }
}

/// Where clip `clip`'s file is when the version is read from its shards, once the feeder
/// has spooled it or given up on it (`Waiting`: not read from shards); `None` when the epoch
/// stops first.
fn wait_spooled(shared: &Shared, clip: u32) -> Option<Spooled> {
    let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return None;
        }
        match queue.spooled.get(clip as usize) {
            None => return Some(Spooled::Waiting),
            Some(Spooled::Waiting) => {}
            Some(spooled) => return Some(spooled.clone()),
        }
        queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Sample;

    fn jobs(starts: &[f64]) -> Vec<Job> {
        starts
            .iter()
            .map(|&start| Job {
                sample: Sample {
                    clip: 0,
                    start,
                    len: 16,
                    aug_seed: 0,
                },
                t: 16,
            })
            .collect()
    }

    #[test]
    fn a_worker_jumping_into_a_clip_starts_close_after_a_keyframe() {
        // Windows of 16 frames every 16 frames; window 0 is taken (by no worker that reads
        // on from it).
        let starts: Vec<f64> = (0..12).map(|i| f64::from(i * 16)).collect();
        let jobs = jobs(&starts);
        let mut taken = vec![false; jobs.len()];
        taken[0] = true;
        let none = HashMap::new();
        let idle = [None, None];
        // Without keyframes known: the middle of the free run (windows 1..12).
        assert_eq!(pick(&jobs, &taken, 0, &idle, 32.0, &none), Some(6));
        // Keyframes every 30 frames: of windows 6..11 (starts 96..176), the one that starts
        // the fewest frames after a keyframe.
        let keys: HashMap<u32, Arc<Vec<f64>>> =
            [(0, Arc::new((0..7).map(|k| f64::from(k * 30)).collect()))].into();
        let picked = pick(&jobs, &taken, 0, &idle, 32.0, &keys).unwrap();
        let lead = |j: usize| starts[j] - (starts[j] / 30.0).floor() * 30.0;
        assert!((6..12).contains(&picked));
        assert!((6..12).all(|j| lead(picked) <= lead(j)), "picked {picked}");
        // Someone's next window is preferred over any jump.
        let reading = [Some((0, 0.0)), None];
        assert_eq!(pick(&jobs, &taken, 0, &reading, 32.0, &keys), Some(1));
        // Another worker's next window is left to it: the jump lands past it.
        let picked = pick(&jobs, &taken, 1, &reading, 32.0, &keys).unwrap();
        assert!((6..12).contains(&picked), "picked {picked}");
    }

    #[test]
    fn a_worker_does_not_read_through_windows_another_worker_reads() {
        // One clip of six windows (starts 0..80), keyframes every 30 frames. Worker 0 read
        // 0..48; worker 1 jumped in at 64 and reads on to 80.
        let starts: Vec<f64> = (0..6).map(|i| f64::from(i * 16)).collect();
        let jobs = jobs(&starts);
        let keys: HashMap<u32, Arc<Vec<f64>>> =
            [(0, Arc::new((0..4).map(|k| f64::from(k * 30)).collect()))].into();
        let taken = [true, true, true, true, true, false];
        let at = [Some((0, 48.0)), Some((0, 64.0))];
        // Worker 0 would decode 64..80 again (or seek and decode 60..80): it waits.
        assert_eq!(pick(&jobs, &taken, 0, &at, 32.0, &keys), None);
        assert_eq!(pick(&jobs, &taken, 1, &at, 32.0, &keys), Some(5));
        // Worker 0 reads 32..48 and will read on to 48; a worker done with its own clip
        // takes the rest from the keyframe at 60 (4 frames before 64), not 48.
        let taken = [true, true, true, false, false, false];
        let at = [Some((0, 32.0)), Some((1, 80.0))];
        assert_eq!(pick(&jobs, &taken, 1, &at, 32.0, &keys), Some(4));
        assert_eq!(pick(&jobs, &taken, 0, &at, 32.0, &keys), Some(3));
    }
}
