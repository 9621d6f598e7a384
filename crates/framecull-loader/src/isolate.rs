//! Windows read in worker processes: each decode thread of the loader hands its windows to a
//! `framecull worker loader` child ([`framecull_media::isolate`]), which decodes them and (on the
//! CPU path) preprocesses them into memory it shares with this process. A decoder that
//! crashes, loops or allocates without end costs its window (skipped like a corrupt file, with
//! the reason: `decoder crashed: signal 11 (SIGSEGV)`) and the child, not the training run; a
//! new child takes the next window. Objects in a bucket too: the child opens the store from
//! the environment it inherits and reports its requests and a storage failure with each
//! answer, which this process takes in ([`framecull_media::isolate::Reply`]), so a failure stops
//! the load as it would here.
//!
//! The protocol is JSON, one line per message, as `scan::worker`'s ([`LoaderService`], served
//! by [`framecull_media::isolate::serve`]); pixels never go through the pipe. A child is told
//! each clip once, with its first window.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::plan::Sample;
use super::preprocess::{Frame, FrameFormat, FrameParams, Matrix, Range, Scratch};
use super::source::{FramesRead, OPEN_DECODERS, Readers, WindowFrames, window_budget};
use super::{ClipSource, LoaderConfig, SkipReason};
use framecull_media::isolate::{
    CallError, Client, Protocol, Reply, Service, SharedMemory, SourceWire, Spec, Stores, absorb,
    hard_limit, path_from_wire, path_to_wire, worker_exe,
};
use framecull_media::reader::ReadTimes;
use framecull_model::{Ratio, SeekReference, StreamChoice};
use framecull_storage::StorageError;

#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // one per window
enum Request {
    /// The loader's settings, once, before any window.
    Setup { config: LoaderConfig },
    /// One window of clip `clip`: its output bytes (`out_len` of them) or, with `frames`,
    /// its decoded frames (the GPU path), into the shared memory.
    Window {
        clip: u32,
        /// The clip, with the first window this worker reads of it.
        define: Option<ClipWire>,
        sample: Sample,
        frames: bool,
        out_len: usize,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Response {
    Ready,
    Window(Answer),
    Failed(String),
}

#[derive(Serialize, Deserialize)]
struct Answer {
    made: Result<Made, (SkipReason, String)>,
    times: ReadTimes,
    /// The clip's keyframe positions, the first time they are known to this worker.
    keyframes: Option<Vec<f64>>,
    cache_hits: u64,
    cache_fills: u64,
    cache_failure: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Made {
    /// The window's output bytes are the first `out_len` of the shared memory.
    Bytes {
        frames: Vec<(usize, i64)>,
        time_base: Ratio,
        preprocess_secs: f64,
    },
    /// The window's frames, tightly packed one after the other in the shared memory.
    Frames {
        frames: Vec<FrameWire>,
        params: Vec<FrameParams>,
        time_base: Ratio,
    },
}

/// A decoded frame but its pixels, which are at `offset` of the shared memory.
#[derive(Serialize, Deserialize)]
struct FrameWire {
    width: u32,
    height: u32,
    format: FrameFormat,
    matrix: Matrix,
    range: Range,
    pts: i64,
    index: usize,
    offset: usize,
    len: usize,
}

/// A [`ClipSource`]; its path as bytes (a name need not be UTF-8).
#[derive(Serialize, Deserialize)]
struct ClipWire {
    clip_id: String,
    row: usize,
    path: Vec<u8>,
    source: SourceWire,
    is_image: bool,
    quarter_turns: u8,
    mirror: bool,
    start_pts: Option<i64>,
    end_pts: Option<i64>,
    start_secs: f64,
    end_secs: f64,
    frames: Option<(usize, usize)>,
    time_base: Option<Ratio>,
    reference: Option<SeekReference>,
    stream: StreamChoice,
    matrix: Option<Matrix>,
    content: Option<[f64; 4]>,
}

impl ClipWire {
    fn of(clip: &ClipSource, source: SourceWire) -> ClipWire {
        ClipWire {
            clip_id: clip.clip_id.clone(),
            row: clip.row,
            path: path_to_wire(&clip.path),
            source,
            is_image: clip.is_image,
            quarter_turns: clip.quarter_turns,
            mirror: clip.mirror,
            start_pts: clip.start_pts,
            end_pts: clip.end_pts,
            start_secs: clip.start_secs,
            end_secs: clip.end_secs,
            frames: clip.frames,
            time_base: clip.time_base,
            reference: clip.reference.as_deref().cloned(),
            stream: clip.stream,
            matrix: clip.matrix,
            content: clip.content,
        }
    }

    fn into_clip(self, stores: &mut Stores) -> Result<ClipSource, StorageError> {
        Ok(ClipSource {
            clip_id: self.clip_id,
            row: self.row,
            path: path_from_wire(self.path),
            source: self.source.into_source(stores)?,
            is_image: self.is_image,
            quarter_turns: self.quarter_turns,
            mirror: self.mirror,
            start_pts: self.start_pts,
            end_pts: self.end_pts,
            start_secs: self.start_secs,
            end_secs: self.end_secs,
            frames: self.frames,
            time_base: self.time_base,
            reference: self.reference.map(Arc::new),
            stream: self.stream,
            matrix: self.matrix,
            content: self.content,
        })
    }
}

/// Where the loader's workers run: `None` decodes in this process.
pub(crate) fn spec(config: &LoaderConfig) -> Option<Spec> {
    if !config.isolate {
        return None;
    }
    let Some(exe) = worker_exe() else {
        tracing::warn!(
            "no framecull binary to decode in (FRAMECULL_WORKER_EXE): the loader decodes in this process, where a crashing decoder ends it"
        );
        return None;
    };
    Some(worker_spec(exe, config.worker_memory_mib))
}

/// A `framecull worker loader` with an address space of `memory_mib` (0: no cap).
fn worker_spec(exe: PathBuf, memory_mib: u64) -> Spec {
    Spec {
        exe,
        args: vec!["worker".into(), SERVICE.into()],
        memory_bytes: (memory_mib > 0).then_some(memory_mib.saturating_mul(1 << 20)),
        memory_setting: "the loader's worker_memory_mib",
    }
}

/// The windows one decode thread reads: in its worker process when there is one, else here.
pub(crate) struct WindowReader {
    local: Readers,
    worker: Option<DecodeWorker>,
}

impl WindowReader {
    pub fn new(config: &LoaderConfig, spec: Option<Spec>) -> WindowReader {
        let worker = spec.and_then(|spec| match DecodeWorker::new(spec, config) {
            Ok(worker) => Some(worker),
            Err(e) => {
                tracing::warn!("no worker process for the loader ({e}): it decodes in this one");
                None
            }
        });
        WindowReader {
            local: Readers::new(OPEN_DECODERS, config.decoder_threads, config.cache.clone()),
            worker,
        }
    }

    /// The worker, while one can run.
    fn worker_for(&mut self) -> Option<&mut DecodeWorker> {
        let worker = self.worker.as_mut()?;
        worker.ready().then_some(worker)
    }

    /// [`Readers::read_window_into`], in the worker when there is one.
    #[allow(clippy::too_many_arguments)]
    pub fn read_window_into(
        &mut self,
        index: u32,
        clip: &ClipSource,
        sample: &Sample,
        config: &LoaderConfig,
        times: &mut ReadTimes,
        scratch: &mut Scratch,
        bytes: &mut [u8],
    ) -> Result<(FramesRead, f64), (SkipReason, String)> {
        let Some(worker) = self.worker_for() else {
            return self
                .local
                .read_window_into(clip, sample, config, times, scratch, bytes);
        };
        match worker.window(index, clip, sample, config, false, bytes.len(), times)? {
            Made::Bytes {
                frames,
                time_base,
                preprocess_secs,
            } => {
                bytes.copy_from_slice(&worker.memory.bytes()[..bytes.len()]);
                Ok(((frames, time_base), preprocess_secs))
            }
            Made::Frames { .. } => Err(worker.lost("the worker answered with frames")),
        }
    }

    /// [`Readers::read_window`], in the worker when there is one.
    pub fn read_window(
        &mut self,
        index: u32,
        clip: &ClipSource,
        sample: &Sample,
        config: &LoaderConfig,
        times: &mut ReadTimes,
    ) -> Result<WindowFrames, (SkipReason, String)> {
        let Some(worker) = self.worker_for() else {
            return self.local.read_window(clip, sample, config, times);
        };
        match worker.window(index, clip, sample, config, true, 0, times)? {
            Made::Frames {
                frames,
                params,
                time_base,
            } => {
                let end = frames.iter().map(|f| f.offset + f.len).max().unwrap_or(0);
                if worker.memory.reserve(end).is_err() || end > worker.memory.bytes().len() {
                    return Err(worker.lost("the worker's frames are out of reach"));
                }
                let frames = frames
                    .into_iter()
                    .map(|f| Frame {
                        width: f.width,
                        height: f.height,
                        format: f.format,
                        matrix: f.matrix,
                        range: f.range,
                        data: worker.memory.bytes()[f.offset..f.offset + f.len].to_vec(),
                        decoded: None,
                        pts: f.pts,
                        index: f.index,
                    })
                    .collect();
                Ok(WindowFrames {
                    frames,
                    params,
                    time_base,
                })
            }
            Made::Bytes { .. } => Err(worker.lost("the worker answered with bytes")),
        }
    }

    /// Keyframe positions of clip `index` (see [`Readers::clip_keyframes`]), once known.
    pub fn clip_keyframes(&self, index: u32, clip: &ClipSource) -> Option<Vec<f64>> {
        self.local
            .clip_keyframes(clip)
            .or_else(|| self.worker.as_ref()?.keyframes.get(&index).cloned())
    }

    /// Windows read from the frame cache, and clips written to it, so far.
    pub fn cache_counts(&self) -> (u64, u64) {
        let (hits, fills) = self
            .worker
            .as_ref()
            .map_or((0, 0), |r| (r.cache_hits, r.cache_fills));
        (self.local.cache_hits + hits, self.local.cache_fills + fills)
    }

    /// Worker processes started so far.
    pub fn processes_started(&self) -> u64 {
        self.worker.as_ref().map_or(0, |r| r.client.started())
    }

    /// Why the frame cache could not be written, once.
    pub fn take_cache_failure(&mut self) -> Option<String> {
        self.local
            .cache_failure
            .take()
            .or_else(|| self.worker.as_mut()?.cache_failure.take())
    }
}

/// One decode thread's worker process ([`Client`]: started on first use and after each
/// failure), and what it has told.
struct DecodeWorker {
    client: Client<LoaderService>,
    memory: SharedMemory,
    /// Clips the running worker has been told, and which start it was ([`Client::started`]).
    told: HashSet<u32>,
    told_by: u64,
    keyframes: HashMap<u32, Vec<f64>>,
    cache_hits: u64,
    cache_fills: u64,
    cache_failure: Option<String>,
}

impl DecodeWorker {
    fn new(spec: Spec, config: &LoaderConfig) -> Result<DecodeWorker, WorkerError> {
        let memory = SharedMemory::new().map_err(WorkerError::Memory)?;
        let setup = Request::Setup {
            config: config.clone(),
        };
        let client = Client::new(Some(spec))
            .sharing(memory.share().map_err(WorkerError::Memory)?)
            .with_setup(setup, |answer| matches!(answer, Response::Ready));
        Ok(DecodeWorker {
            client,
            memory,
            told: HashSet::new(),
            told_by: 0,
            keyframes: HashMap::new(),
            cache_hits: 0,
            cache_fills: 0,
            cache_failure: None,
        })
    }

    /// Whether a worker is running, starting one if needed; false when workers cannot start
    /// (a missing binary, one of another protocol), with a warning.
    fn ready(&mut self) -> bool {
        if !self.client.ready() {
            return false;
        }
        if self.client.started() != self.told_by {
            self.told.clear();
            self.told_by = self.client.started();
        }
        true
    }

    /// The worker is of no more use (a broken answer): the window's error, and a new worker
    /// for the next.
    fn lost(&mut self, why: &str) -> (SkipReason, String) {
        self.client.lose();
        (SkipReason::Corrupt, why.to_string())
    }

    /// Read one window in the worker.
    #[allow(clippy::too_many_arguments)]
    fn window(
        &mut self,
        index: u32,
        clip: &ClipSource,
        sample: &Sample,
        config: &LoaderConfig,
        frames: bool,
        out_len: usize,
        times: &mut ReadTimes,
    ) -> Result<Made, (SkipReason, String)> {
        if let Err(e) = self.memory.reserve(out_len) {
            return Err((
                SkipReason::Corrupt,
                format!("cannot share memory with the loader worker: {e}"),
            ));
        }
        let request = Request::Window {
            clip: index,
            define: if self.told.contains(&index) {
                None
            } else {
                Some(ClipWire::of(clip, SourceWire::of(&clip.source)))
            },
            sample: *sample,
            frames,
            out_len,
        };
        let reply: Reply<Response> =
            match self
                .client
                .request(&request, window_limit(clip, config), None)
            {
                Ok(reply) => reply,
                Err(CallError::Unreadable(_)) => {
                    return Err(self.lost("the loader worker's answer is unreadable"));
                }
                Err(e) => {
                    tracing::warn!("{}: {e}", clip.path.display());
                    return Err((SkipReason::Corrupt, e.to_string()));
                }
            };
        self.told.insert(index);
        absorb(clip.source.store(), &reply.storage);
        let answer = match reply.answer {
            Response::Window(answer) => answer,
            Response::Failed(why) => return Err(self.lost(&why)),
            _ => return Err(self.lost("the loader worker answered another request")),
        };
        times.add(&answer.times);
        if let Some(keys) = answer.keyframes {
            self.keyframes.insert(index, keys);
        }
        self.cache_hits += answer.cache_hits;
        self.cache_fills += answer.cache_fills;
        if answer.cache_failure.is_some() {
            self.cache_failure = answer.cache_failure;
        }
        answer.made
    }
}

/// Hard limit of one window in a worker: the window's own budget (its decode stops then),
/// plus time to answer ([`hard_limit`]). Filling the frame cache decodes the whole clip: a
/// budget in proportion, as the reader gives itself.
fn window_limit(clip: &ClipSource, config: &LoaderConfig) -> Duration {
    hard_limit(window_budget(clip, config))
}

/// The loader's worker: windows of clips for the loader's decode threads, into the memory it
/// shares with its parent.
struct LoaderService {
    memory: SharedMemory,
    /// The loader's settings and this worker's decoders, from the set-up on.
    state: Option<(LoaderConfig, Readers)>,
    /// Each clip as it was told, with its first window.
    clips: HashMap<u32, ClipSource>,
    told_keyframes: HashSet<u32>,
    scratch: Scratch,
}

impl Protocol for LoaderService {
    const NAME: &'static str = "loader";
    const PROTOCOL: u32 = 4;
    type Request = Request;
    type Response = Response;
}

impl Service for LoaderService {
    type Protocol = Self;

    fn answer(&mut self, request: Request, stores: &mut Stores) -> Response {
        match request {
            Request::Setup { config } => {
                let readers =
                    Readers::new(OPEN_DECODERS, config.decoder_threads, config.cache.clone());
                self.state = Some((config, readers));
                Response::Ready
            }
            Request::Window {
                clip,
                define,
                sample,
                frames,
                out_len,
            } => self.window(clip, define, &sample, (frames, out_len), stores),
        }
    }

    fn unreadable(reason: String) -> Response {
        Response::Failed(reason)
    }
}

impl LoaderService {
    /// One window of `clip`, told with `define` the first time.
    fn window(
        &mut self,
        clip: u32,
        define: Option<ClipWire>,
        sample: &Sample,
        (frames, out_len): (bool, usize),
        stores: &mut Stores,
    ) -> Response {
        let Some((config, readers)) = &mut self.state else {
            return Response::Failed("a window before set-up".into());
        };
        match define.map(|d| d.into_clip(stores)).transpose() {
            Ok(Some(source)) => {
                self.clips.insert(clip, source);
            }
            Ok(None) => {}
            Err(e) => return Response::Failed(e.to_string()),
        }
        let Some(source) = self.clips.get(&clip) else {
            return Response::Failed(format!("clip {clip} was never told"));
        };
        let mut answer = window(
            readers,
            source,
            sample,
            config,
            (frames, out_len),
            &mut self.memory,
            &mut self.scratch,
        );
        if !self.told_keyframes.contains(&clip) {
            answer.keyframes = readers.clip_keyframes(source);
            if answer.keyframes.is_some() {
                self.told_keyframes.insert(clip);
            }
        }
        Response::Window(answer)
    }
}

/// The loader's service name: `framecull worker loader` runs [`serve`].
pub const SERVICE: &str = LoaderService::NAME;

/// The `framecull worker loader` process: greet, then answer requests from stdin until it
/// closes. The shared memory is the one its parent passed ([`SharedMemory::inherited`]).
pub fn serve() -> std::io::Result<()> {
    framecull_media::init();
    framecull_media::isolate::keep_freed_memory();
    framecull_media::isolate::serve(&mut LoaderService {
        memory: SharedMemory::inherited()?,
        state: None,
        clips: HashMap::new(),
        told_keyframes: HashSet::new(),
        scratch: Scratch::default(),
    })
}

/// Why a loader thread has no worker process.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("shared memory: {0}")]
    Memory(std::io::Error),
}

/// Read one window in the worker, into the shared memory.
fn window(
    readers: &mut Readers,
    clip: &ClipSource,
    sample: &Sample,
    config: &LoaderConfig,
    (frames, out_len): (bool, usize),
    memory: &mut SharedMemory,
    scratch: &mut Scratch,
) -> Answer {
    framecull_media::isolate::inject_fault(&clip.path.to_string_lossy());
    let (hits, fills) = (readers.cache_hits, readers.cache_fills);
    let mut times = ReadTimes::default();
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if !frames {
            memory.reserve(out_len).map_err(|e| {
                (
                    SkipReason::Corrupt,
                    format!("cannot map the shared memory: {e}"),
                )
            })?;
            let bytes = &mut memory.bytes_mut()[..out_len];
            let ((frames, time_base), preprocess_secs) =
                readers.read_window_into(clip, sample, config, &mut times, scratch, bytes)?;
            return Ok(Made::Bytes {
                frames,
                time_base,
                preprocess_secs,
            });
        }
        let window = readers.read_window(clip, sample, config, &mut times)?;
        let lens: Vec<usize> = window
            .frames
            .iter()
            .map(|f| Frame::expected_len(f.width, f.height, f.format))
            .collect();
        memory.reserve(lens.iter().sum()).map_err(|e| {
            (
                SkipReason::Corrupt,
                format!("cannot grow the shared memory: {e}"),
            )
        })?;
        let mut offset = 0;
        let mut wires = Vec::with_capacity(window.frames.len());
        for (frame, len) in window.frames.iter().zip(lens) {
            frame.write_packed(&mut memory.bytes_mut()[offset..offset + len]);
            wires.push(FrameWire {
                width: frame.width,
                height: frame.height,
                format: frame.format,
                matrix: frame.matrix,
                range: frame.range,
                pts: frame.pts,
                index: frame.index,
                offset,
                len,
            });
            offset += len;
        }
        Ok(Made::Frames {
            frames: wires,
            params: window.params,
            time_base: window.time_base,
        })
    }))
    .unwrap_or_else(|_| {
        Err((
            SkipReason::Corrupt,
            "reading the window panicked".to_string(),
        ))
    });
    Answer {
        made,
        times,
        keyframes: None,
        cache_hits: readers.cache_hits - hits,
        cache_fills: readers.cache_fills - fills,
        cache_failure: readers.cache_failure.take(),
    }
}
