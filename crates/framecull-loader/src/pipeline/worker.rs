//! A decode worker of an epoch: which window it reads next (on from its last one, where no
//! other worker's decoder is closer), and what it hands the consumer.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;

use crate::epoch::{Job, Shared, Spooled};
use crate::isolate::WindowReader;
use crate::preprocess::Scratch;
use crate::source::WindowFrames;
use crate::{ClipSource, LoaderConfig, SkipReason};
use framecull_media::reader::ReadTimes;

pub(super) enum Prepared {
    /// CPU path: the window's output bytes, `t` frames (padding zeroed).
    Bytes(Vec<u8>),
    /// GPU path: the decoded frames, preprocessed when the batch is assembled.
    Frames(WindowFrames),
}

/// A window read: its output, and which frames of the file it holds.
pub(super) struct Read {
    pub(super) prepared: Prepared,
    /// Index in the file and timestamp of each real frame, in slot order.
    pub(super) frames: Vec<(usize, i64)>,
    pub(super) time_base: framecull_model::Ratio,
}

pub(super) struct Done {
    pub(super) job: usize,
    pub(super) result: Result<Read, (SkipReason, String)>,
    pub(super) times: ReadTimes,
    pub(super) preprocess_secs: f64,
    /// Windows read from the cache, and clips written to it.
    pub(super) cache_hits: u64,
    pub(super) cache_fills: u64,
    /// Worker processes started for this window.
    pub(super) started: u64,
    /// The frame cache could not be written: the run ends with this.
    pub(super) cache_failure: Option<String>,
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
pub(super) fn worker(
    me: usize,
    jobs: &[Job],
    job_start: &[usize],
    clips: &[ClipSource],
    config: &LoaderConfig,
    gpu: bool,
    shared: &Shared,
    tx: &Sender<Done>,
    reader: WindowReader,
) {
    let out = config.output;
    let mut worker = Worker {
        me,
        jobs,
        job_start,
        clips,
        config,
        gpu,
        shared,
        scratch: Scratch::default(),
        reader,
        frame_bytes: out.frame_elements() * out.dtype.size_bytes(),
        ahead: config.prefetch_batches.max(1),
        // A window this close after the last one read goes on with the open decoder.
        near: near_after(config),
    };
    let _leave = Leave { me, shared };
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Some(j) = worker.take_window() else {
            return;
        };
        let Some(done) = worker.read(j) else {
            return;
        };
        if tx.send(done).is_err() {
            return;
        }
    }
}

/// How close after the last window read (in the unit of a window's start) a window is for
/// the open decoder to go on to it: two windows' span with a stride, else 4.
fn near_after(config: &LoaderConfig) -> f64 {
    match config.sampling.timing {
        crate::Timing::Stride(stride) => {
            f64::from(stride)
                * f64::from(
                    config
                        .sampling
                        .clip_len
                        .unwrap_or(config.sampling.max_frames),
                )
                * 2.0
        }
        crate::Timing::Fps(_) => 4.0,
    }
}

/// A decode worker of an epoch: which one it is, what the epoch's workers share, and its own
/// reader and buffers.
struct Worker<'a> {
    me: usize,
    jobs: &'a [Job],
    job_start: &'a [usize],
    clips: &'a [ClipSource],
    config: &'a LoaderConfig,
    /// Whether windows are preprocessed on the GPU (the worker hands over decoded frames).
    gpu: bool,
    shared: &'a Shared,
    scratch: Scratch,
    reader: WindowReader,
    /// Bytes of one output frame.
    frame_bytes: usize,
    /// Batches the worker may read ahead of the consumer.
    ahead: usize,
    near: f64,
}

impl Worker<'_> {
    /// The next window this worker reads (see [`pick`]), marked taken; while none within
    /// reach of the consumer can be taken, it waits. `None` when the epoch stops or every
    /// window is taken.
    fn take_window(&self) -> Option<usize> {
        let Worker {
            me,
            jobs,
            job_start,
            shared,
            ahead,
            near,
            ..
        } = *self;
        let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if shared.stop.load(Ordering::SeqCst) || queue.untaken == 0 {
                return None;
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
                return Some(j);
            }
            queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Read window `j` once its clip's file is there: what the consumer is handed, a failed
    /// or panicked read included. `None` when the epoch stops first.
    fn read(&mut self, j: usize) -> Option<Done> {
        let (jobs, clips) = (self.jobs, self.clips);
        let job = &jobs[j];
        let clip = &clips[job.sample.clip as usize];
        let spooled = wait_spooled(self.shared, job.sample.clip)?;
        let turned = upright(clip, &spooled);
        let clip = turned.as_ref().unwrap_or(clip);
        let mut times = ReadTimes::default();
        let (hits, fills) = self.reader.cache_counts();
        let started = self.reader.processes_started();
        let mut preprocess_secs = 0.0;
        // A panic in one window (a bug, or a decoder gone wrong) fails that window only.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.read_window(job, clip, spooled, &mut times, &mut preprocess_secs)
        }))
        .unwrap_or_else(|_| {
            Err((
                SkipReason::Corrupt,
                "reading the window panicked".to_string(),
            ))
        });
        Some(Done {
            job: j,
            result,
            times,
            preprocess_secs,
            cache_hits: self.reader.cache_counts().0 - hits,
            cache_fills: self.reader.cache_counts().1 - fills,
            started: self.reader.processes_started() - started,
            cache_failure: self.reader.take_cache_failure(),
        })
    }

    /// Read `job`'s window of `clip`, whose file is `spooled`: its decoded frames for the
    /// GPU, else its output bytes (in a buffer from the pool), the seconds spent
    /// preprocessing them set in `preprocess_secs`.
    fn read_window(
        &mut self,
        job: &Job,
        clip: &ClipSource,
        spooled: Spooled,
        times: &mut ReadTimes,
        preprocess_secs: &mut f64,
    ) -> Result<Read, (SkipReason, String)> {
        match spooled {
            Spooled::Failed(reason, why) => return Err((reason, why)),
            Spooled::Gone => {
                return Err((SkipReason::Missing, "spooled and removed".to_string()));
            }
            Spooled::Waiting | Spooled::Ready { .. } => {}
        }
        let index = job.sample.clip;
        let config = self.config;
        if self.gpu {
            let window = self
                .reader
                .read_window(index, clip, &job.sample, config, times)?;
            self.publish_keyframes(index, clip);
            let frames = window.frames.iter().map(|f| (f.index, f.pts)).collect();
            let time_base = window.time_base;
            return Ok(Read {
                prepared: Prepared::Frames(window),
                frames,
                time_base,
            });
        }
        let slots = job.t as usize;
        let mut bytes = self
            .shared
            .pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default();
        bytes.resize(slots * self.frame_bytes, 0);
        let ((frames, time_base), secs) = self.reader.read_window_into(
            index,
            clip,
            &job.sample,
            config,
            times,
            &mut self.scratch,
            &mut bytes,
        )?;
        *preprocess_secs = secs;
        self.publish_keyframes(index, clip);
        Ok(Read {
            prepared: Prepared::Bytes(bytes),
            frames,
            time_base,
        })
    }

    /// Share clip `index`'s keyframes with the other workers once this worker's reader
    /// knows them (stride sampling without the frame cache), where none has yet.
    fn publish_keyframes(&self, index: u32, clip: &ClipSource) {
        if matches!(self.config.sampling.timing, crate::Timing::Stride(_))
            && self.config.cache.is_none()
        {
            let mut known = self
                .shared
                .keyframes
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if !known.contains_key(&index)
                && let Some(keys) = self.reader.clip_keyframes(index, clip)
            {
                known.insert(index, Arc::new(keys));
            }
        }
    }
}

/// `clip` turned upright as its spooled file's EXIF orientation says, for a picture whose
/// orientation is not the normal one; `None` where it is read as it is.
fn upright(clip: &ClipSource, spooled: &Spooled) -> Option<ClipSource> {
    if let Spooled::Ready { orientation } = *spooled
        && clip.is_image
        && orientation != 1
    {
        let (quarter_turns, mirror) = framecull_model::orientation_turns(orientation);
        return Some(ClipSource {
            quarter_turns,
            mirror,
            ..clip.clone()
        });
    }
    None
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
