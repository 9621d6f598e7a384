//! FFmpeg work of scans and deep analysis in worker processes: each thread hands its files to
//! a `framecull worker scan` child (`media::isolate`), so that a demuxer or decoder that crashes,
//! loops or runs out of memory costs one file a row with the reason, not the whole run. A
//! dead worker is replaced for the next file. Signatures and image headers are read by safe
//! code in this process; only what FFmpeg reads goes to a worker. Objects in a bucket too: the
//! worker opens the store from the environment it inherits and reports, with each answer, the
//! requests it made and a failure that stops the run ([`framecull_media::isolate::Reply`]), which
//! this process takes in as if it had met them.
//!
//! The protocol is JSON, one line per message (`ScanProtocol`; `scan::service` answers it):
//! the worker greets with its service, protocol and build, then answers each request line
//! with one response line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::options::AnalyzeOptions;
use framecull_analysis::cuts::CutOptions;
use framecull_catalog::AnalysisTodo;
use framecull_media::Opened;
use framecull_media::isolate::{
    CallError, Client, Failure, Pool, Protocol, Reply, RootWire, SourceWire, Spec, absorb,
    hard_limit, worker_exe,
};
use framecull_model::{
    AnalysisLevel, Curves, FrameTable, ItemStatus, MediaKind, Metrics, Probe, StreamChoice,
};
use framecull_storage::Root;

#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request {
    Analyse {
        root: RootWire,
        item: AnalysisTodo,
        budget_secs: f64,
        cuts: CutOptions,
        level: AnalysisLevel,
        /// Decoder threads of a video.
        threads: usize,
    },
    /// FFmpeg's probe of one file ([`framecull_media::probe_with_ffmpeg`]).
    Probe {
        source: SourceWire,
        budget_secs: f64,
        stream: StreamChoice,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // one per file, made and read at once
pub(crate) enum Response {
    Analysed {
        metrics: Metrics,
        curves: Curves,
        /// `Curves::frames`, which curves' serde form leaves out (the catalog stores it apart).
        frames: FrameTable,
    },
    Probed(Probe),
    Failed(String),
}

/// Why a request to a worker (or its work in this process) has no answer to use.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// It crashed, hung, ran out of memory, exited or was stopped, or none runs.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The worker's reason, as it sent it.
    #[error("{0}")]
    Failed(String),
    #[error("the worker answered another request")]
    Unexpected,
}

/// Where and how workers run: `None` analyses in this process.
pub fn spec(memory_bytes: Option<u64>) -> Option<Spec> {
    Some(Spec {
        exe: worker_exe()?,
        args: vec!["worker".into(), ScanProtocol::NAME.into()],
        memory_bytes,
        memory_setting: "limits.max_memory_mib in framecull.toml",
    })
}

/// Worker slots shared by threads that need one for part of their work only: a scan's probing
/// threads, more than the cores when they wait on an object store (`--requests`), read
/// signatures and headers themselves and take a worker for FFmpeg's probe alone.
pub type WorkerPool = Pool<WorkerSlot>;

/// Workers for the threads of a scan's probes or an analysis: at most `max` (see [`Pool`]),
/// each capped at `memory_bytes`; none (FFmpeg in this process) where `isolate` is off or no
/// worker binary is found.
pub fn pool(memory_bytes: Option<u64>, isolate: bool, max: usize) -> WorkerPool {
    let spec = spec(memory_bytes).filter(|_| isolate);
    Pool::new(max, move || WorkerSlot::new(spec.clone()))
}

/// The pool a scan or an analysis works on: the caller's (`shared`, whose workers serve the
/// scan's probes and the analysis after it) where workers are isolated, else one of its own
/// made in `own`, of at most `max` workers capped at `memory_bytes` (none, FFmpeg in this
/// process, where `isolate` is off).
pub(crate) fn shared_or_own<'a>(
    shared: Option<&'a WorkerPool>,
    isolate: bool,
    memory_bytes: Option<u64>,
    max: usize,
    own: &'a mut Option<WorkerPool>,
) -> &'a WorkerPool {
    match shared {
        Some(shared) if isolate => shared,
        _ => own.insert(pool(memory_bytes, isolate, max)),
    }
}

/// The scan's worker as its parent knows it: FFmpeg's probe and a file's analysis (served by
/// `scan::service`).
pub(crate) struct ScanProtocol;

impl Protocol for ScanProtocol {
    const NAME: &'static str = "scan";
    const PROTOCOL: u32 = 6;
    type Request = Request;
    type Response = Response;
}

/// What became of a file handed to a worker for analysis.
#[allow(clippy::large_enum_variant)] // one per file, matched at once
pub enum Analysed {
    /// Its measures, or the reason it has none.
    Done(Metrics, Curves),
    /// `stop` was set meanwhile: the file stays to do.
    Stopped,
    /// No worker runs: the caller analyses the file in its own process.
    NoWorker,
}

/// One thread's scan worker ([`Client`]: started on first use and after each failure).
pub struct WorkerSlot {
    client: Client<ScanProtocol>,
}

impl WorkerSlot {
    pub fn new(spec: Option<Spec>) -> WorkerSlot {
        WorkerSlot {
            client: Client::new(spec),
        }
    }

    /// Analyse one file in the worker: its measures (a failure's reason among them), or that
    /// `stop` was set meanwhile (the worker was ended without an answer: the file stays to
    /// do), or that no worker runs (the caller analyses it in its own process).
    pub fn analyse(
        &mut self,
        root: &Root,
        item: &AnalysisTodo,
        options: &AnalyzeOptions,
        stop: &AtomicBool,
    ) -> Analysed {
        if !self.client.ready() {
            return Analysed::NoWorker;
        }
        let request = Request::Analyse {
            root: RootWire::of(root),
            item: item.clone(),
            budget_secs: options.file_budget.as_secs_f64(),
            cuts: options.cuts.clone(),
            level: options.level,
            threads: options.file_threads.unwrap_or(1),
        };
        // A video on several threads may be decoded again on one, with a budget of its own.
        let budget = match options.file_threads {
            Some(n) if n > 1 => options.file_budget * 2,
            _ => options.file_budget,
        };
        let answer = self.call(&request, hard_limit(budget), &item.path, Some(stop));
        if answer.is_err() && stop.load(Ordering::SeqCst) {
            // Abandoned for the stop (or failed as it came): left to do, not recorded.
            return Analysed::Stopped;
        }
        let (metrics, curves) = match absorbed(answer, root.as_remote().map(|r| &**r)) {
            Ok(Response::Analysed {
                metrics,
                mut curves,
                frames,
            }) => {
                curves.frames = frames;
                (metrics, curves)
            }
            Ok(other) => failed_analysis(unexpected(other).to_string()),
            Err(e) => failed_analysis(e.to_string()),
        };
        Analysed::Done(metrics, curves)
    }

    /// FFmpeg's probe of `opened`, stopping at `deadline`; in this process when there is no
    /// worker.
    pub fn probe(&mut self, opened: &Opened, deadline: Instant, stream: StreamChoice) -> Probe {
        if !self.client.ready() {
            return framecull_media::probe_with_ffmpeg(opened, deadline, stream);
        }
        let source = SourceWire::of_opened(opened);
        let budget = deadline.saturating_duration_since(Instant::now());
        let name = source.name();
        let request = Request::Probe {
            source,
            budget_secs: budget.as_secs_f64(),
            stream,
        };
        let answer = self.call(&request, hard_limit(budget), &name, None);
        match absorbed(answer, opened.store()) {
            Ok(Response::Probed(probe)) => probe,
            Ok(other) => Probe::failed(
                MediaKind::Video,
                ItemStatus::Error,
                unexpected(other).to_string(),
            ),
            Err(e) => Probe::failed(MediaKind::Video, ItemStatus::Error, e.to_string()),
        }
    }

    /// One request and its answer; a failure's reason (the worker is gone, and a new one
    /// starts for the next file). `stop`: abandon the request when it is set.
    fn call(
        &mut self,
        request: &Request,
        limit: Duration,
        path: &str,
        stop: Option<&AtomicBool>,
    ) -> Result<Reply<Response>, WorkerError> {
        self.client.request(request, limit, stop).map_err(|e| {
            if !matches!(e, CallError::Failed(Failure::Stopped)) {
                tracing::warn!("{path}: {e}");
            }
            WorkerError::Call(e)
        })
    }
}

/// A worker's answer, its storage reports taken in by `remote` (the store the request read).
fn absorbed(
    reply: Result<Reply<Response>, WorkerError>,
    remote: Option<&framecull_storage::Remote>,
) -> Result<Response, WorkerError> {
    let reply = reply?;
    absorb(remote, &reply.storage);
    Ok(reply.answer)
}

/// An answer that is not the request's: the worker's reason where it failed.
fn unexpected(response: Response) -> WorkerError {
    match response {
        Response::Failed(reason) => WorkerError::Failed(reason),
        _ => WorkerError::Unexpected,
    }
}

fn failed_analysis(reason: String) -> (Metrics, Curves) {
    (
        Metrics {
            undecodable: Some(reason),
            ..Metrics::default()
        },
        Curves::default(),
    )
}
