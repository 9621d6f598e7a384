//! The scan's worker process (`framecull worker scan`): FFmpeg's probes, deep and triage
//! analyses, answered for a parent's [`super::worker::WorkerSlot`].

use std::time::{Duration, Instant};

use super::options::AnalyzeOptions;
use super::worker::{Request, Response, ScanProtocol};
use framecull_media::isolate::{Protocol, Service, Stores};
use framecull_model::{ItemStatus, MediaKind, Probe};

/// The scan's worker: FFmpeg's probe and a file's analysis.
struct ScanService;

impl Service for ScanService {
    type Protocol = ScanProtocol;

    fn answer(&mut self, request: Request, stores: &mut Stores) -> Response {
        answer(request, stores)
    }

    fn unreadable(reason: String) -> Response {
        Response::Failed(reason)
    }
}

/// The scan's service name: `framecull worker scan` runs [`serve`].
pub const SERVICE: &str = ScanProtocol::NAME;

/// The `framecull worker scan` process: greet, then answer requests from stdin until it
/// closes.
pub fn serve() -> std::io::Result<()> {
    framecull_media::init();
    framecull_media::isolate::serve(&mut ScanService)
}

fn answer(request: Request, stores: &mut Stores) -> Response {
    framecull_media::isolate::inject_fault(&match &request {
        Request::Probe { source, .. } => source.name(),
        Request::Analyse { item, .. } => item.path.clone(),
    });
    match request {
        Request::Probe {
            source,
            budget_secs,
            stream,
        } => {
            let source = match source.into_opened(stores) {
                Ok(source) => source,
                Err(e) => return Response::Failed(e.to_string()),
            };
            let deadline = Instant::now() + Duration::from_secs_f64(budget_secs);
            let probe = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                framecull_media::probe_with_ffmpeg(&source, deadline, stream)
            }))
            .unwrap_or_else(|_| {
                Probe::failed(
                    MediaKind::Video,
                    ItemStatus::Error,
                    "internal error while probing this file (a bug: please report it)",
                )
            });
            Response::Probed(probe)
        }
        Request::Analyse {
            root,
            item,
            budget_secs,
            cuts,
            level,
            threads,
        } => {
            let root = match root.into_root(stores) {
                Ok(root) => root,
                Err(e) => return Response::Failed(e.to_string()),
            };
            // Spelled out: `AnalyzeOptions::default()` asks the system for its CPU count
            // (several file reads), once per file here.
            let options = AnalyzeOptions {
                jobs: 1,
                file_budget: Duration::from_secs_f64(budget_secs),
                cuts,
                batch_size: 1,
                isolate: false,
                level,
                only: None,
                file_threads: Some(threads),
            };
            let (metrics, mut curves) = super::deep::analyse_in_process(&root, &item, &options);
            let frames = std::mem::take(&mut curves.frames);
            Response::Analysed {
                metrics,
                curves,
                frames,
            }
        }
    }
}
