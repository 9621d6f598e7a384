//! Work that takes longer than a frame: one [`Job`] type for every background task of the
//! window (load a view, ingest a dataset, preview or write an export, list manifests, pick a
//! folder). Each runs on a named thread and reports through a bounded channel that the UI
//! drains each frame without blocking.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::time::Instant;

use anyhow::Context as _;

use super::view::{View, load};
use crate::analysis::rules::Setting;
use crate::catalog::Project;
use crate::model::{AnalysisLevel, ItemId};
use crate::scan::deep::AnalyzeOptions;
use crate::scan::pipeline::{Dataset, IngestOptions, Progress, ensure_demo};

/// Progress messages a job may have queued before it waits for the UI to take them.
const QUEUE: usize = 256;

enum Msg<T, P> {
    Progress(P),
    Done(T),
}

/// What [`Job::poll`] found.
pub enum Polled<T> {
    /// Still running.
    Running,
    /// Finished with this result.
    Done(T),
    /// The thread ended without a result (it panicked or could not start).
    Lost,
}

/// A background task with result `T` and progress messages `P`.
pub struct Job<T, P = ()> {
    rx: Receiver<Msg<T, P>>,
    cancel: Arc<AtomicBool>,
}

/// The job's side: report progress, read the cancel flag.
pub struct Reporter<T, P> {
    tx: SyncSender<Msg<T, P>>,
    cancel: Arc<AtomicBool>,
}

impl<T, P> Reporter<T, P> {
    /// Send progress; when the UI is behind by a full queue, the message is dropped unless
    /// `must` (stage changes must arrive, file counts may be skipped).
    pub fn report(&self, p: P, must: bool) {
        if must {
            let _ = self.tx.send(Msg::Progress(p));
        } else if let Err(TrySendError::Disconnected(_)) = self.tx.try_send(Msg::Progress(p)) {
            // The window is gone; the result will be dropped too.
        }
    }

    pub fn cancel_flag(&self) -> &AtomicBool {
        &self.cancel
    }
}

impl<T: Send + 'static, P: Send + 'static> Job<T, P> {
    /// Run `work` on a thread named `name`.
    pub fn spawn(
        name: &str,
        work: impl FnOnce(&Reporter<T, P>) -> T + Send + 'static,
    ) -> Job<T, P> {
        let (tx, rx) = sync_channel(QUEUE);
        let cancel = Arc::new(AtomicBool::new(false));
        let reporter = Reporter {
            tx,
            cancel: Arc::clone(&cancel),
        };
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let result = work(&reporter);
                let _ = reporter.tx.send(Msg::Done(result));
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start {name}: {e}");
        }
        Job { rx, cancel }
    }

    /// Take what the job reported since the last poll: its progress messages go to
    /// `on_progress`, in order; then whether it is finished.
    pub fn poll_with(&mut self, mut on_progress: impl FnMut(P)) -> Polled<T> {
        loop {
            match self.rx.try_recv() {
                Ok(Msg::Progress(p)) => on_progress(p),
                Ok(Msg::Done(t)) => return Polled::Done(t),
                Err(TryRecvError::Empty) => return Polled::Running,
                Err(TryRecvError::Disconnected) => return Polled::Lost,
            }
        }
    }

    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
}

impl<T: Send + 'static> Job<T> {
    /// A job without progress messages.
    pub fn run(name: &str, work: impl FnOnce() -> T + Send + 'static) -> Job<T> {
        Job::spawn(name, move |_| work())
    }

    pub fn poll(&mut self) -> Polled<T> {
        self.poll_with(|()| {})
    }
}

/// Poll the job in `slot`, emptying the slot when it has finished (or was lost, reported as
/// `lost`).
pub fn take_finished<T: Send + 'static>(
    slot: &mut Option<Job<T>>,
    lost: impl FnOnce() -> T,
) -> Option<T> {
    let polled = slot.as_mut()?.poll();
    match polled {
        Polled::Running => None,
        Polled::Done(t) => {
            *slot = None;
            Some(t)
        }
        Polled::Lost => {
            *slot = None;
            Some(lost())
        }
    }
}

pub fn spawn_load(project: PathBuf) -> Job<anyhow::Result<View>> {
    Job::run("framecull-load", move || load(&project))
}

/// Write the changed thresholds to the project's framecull.toml, recompute its flags with
/// them (no rescan), and load the view again.
pub fn spawn_save_settings(
    project: PathBuf,
    changes: Vec<(&'static Setting, Option<f64>)>,
) -> Job<anyhow::Result<View>> {
    Job::run("framecull-settings", move || {
        let save = || -> anyhow::Result<View> {
            let settings = Project::at(&project);
            for (setting, value) in &changes {
                settings
                    .save_setting(setting.key, *value, setting.integer)
                    .context("the settings were not saved")?;
            }
            let mut catalog = crate::catalog::Catalog::open(&project)?;
            crate::scan::derive::recompute_for_project(&mut catalog)
                .context("the settings were saved, but the flags were not recomputed")?;
            load(&project).context("the settings were saved, but the project did not reload")
        };
        save()
    })
}

/// An ingest running for the window, with what the status bar shows.
pub struct ScanJob {
    /// Finishes with the project folder and the scan's warnings.
    pub job: Job<anyhow::Result<(PathBuf, Vec<String>)>, Progress>,
    pub state: ScanState,
}

/// Where an ingest is, as its progress messages tell.
pub struct ScanState {
    /// What the current stage is doing, for the status bar.
    pub phase: &'static str,
    /// When the current stage began (its rate and ETA count from there).
    pub stage_started: Instant,
    pub done: u64,
    pub total: u64,
}

impl ScanState {
    /// Take one progress message; true when results became durable (a reload shows them).
    pub fn absorb(&mut self, p: Progress) -> bool {
        match p {
            Progress::Stage(stage) => {
                self.phase = stage.label();
                self.stage_started = Instant::now();
                self.done = 0;
                self.total = 0;
            }
            Progress::Walked { to_probe, .. } => {
                self.done = 0;
                self.total = to_probe;
            }
            Progress::Files { done, total, .. } => {
                self.done = done;
                self.total = total;
            }
            Progress::Stored => return true,
        }
        false
    }
}

/// Ingest `root` (writing the demo dataset there first when `demo`): scan, analyse, derive
/// flags. Finishes with the project folder to open and the warnings to show.
pub fn spawn_scan(root: PathBuf, demo: bool) -> ScanJob {
    spawn_ingest(move |on_progress| {
        if demo {
            ensure_demo(&root, on_progress)?;
        }
        Ok(Dataset::open(&root, None::<Project>)?)
    })
}

/// Scan a dataset in object storage (`s3://bucket/prefix`) into its default project
/// ([`Project::of_url`]); a project made there before is scanned again (only what changed).
pub fn spawn_scan_url(url: String) -> ScanJob {
    spawn_ingest(move |_| {
        let project = Project::of_url(&url);
        std::fs::create_dir_all(project.dir())?;
        Ok(Dataset::open(Path::new(&url), Some(project))?)
    })
}

/// Ingest again the dataset a project records (a folder or an object-storage prefix).
pub fn spawn_rescan(project: PathBuf) -> ScanJob {
    spawn_ingest(move |_| Ok(Dataset::of_project(Project::at(project))?))
}

/// The deep pass (every frame decoded) on the files `ids` of a project, as `framecull
/// analyze --where` runs it: what a triage estimated, measured; flags derived again.
pub fn spawn_deepen(project: PathBuf, ids: HashSet<ItemId>) -> ScanJob {
    let options = IngestOptions {
        scan: None,
        analyse: Some(AnalyzeOptions {
            level: AnalysisLevel::Deep,
            only: Some(ids),
            ..AnalyzeOptions::default()
        }),
    };
    spawn_ingest_with(options, move |_| {
        Ok(Dataset::of_project(Project::at(project))?)
    })
}

type Opener = dyn FnOnce(&mut dyn FnMut(Progress)) -> anyhow::Result<Dataset> + Send;

fn spawn_ingest(
    open: impl FnOnce(&mut dyn FnMut(Progress)) -> anyhow::Result<Dataset> + Send + 'static,
) -> ScanJob {
    spawn_ingest_with(IngestOptions::full(), open)
}

fn spawn_ingest_with(
    options: IngestOptions,
    open: impl FnOnce(&mut dyn FnMut(Progress)) -> anyhow::Result<Dataset> + Send + 'static,
) -> ScanJob {
    let open: Box<Opener> = Box::new(open);
    let job = Job::spawn("framecull-scan-job", move |r: &Reporter<_, Progress>| {
        run_scan(open, &options, r).context("the scan stopped")
    });
    ScanJob {
        job,
        state: ScanState {
            phase: "starting",
            stage_started: Instant::now(),
            done: 0,
            total: 0,
        },
    }
}

fn run_scan(
    open: Box<Opener>,
    options: &IngestOptions,
    r: &Reporter<anyhow::Result<(PathBuf, Vec<String>)>, Progress>,
) -> anyhow::Result<(PathBuf, Vec<String>)> {
    let mut on_progress = |p: Progress| {
        let must = !matches!(p, Progress::Files { .. });
        r.report(p, must);
    };
    let mut dataset = open(&mut on_progress)?;
    let summary = dataset.ingest(options, r.cancel_flag(), &mut on_progress)?;
    let warnings = summary.scan.map(|s| s.warnings).unwrap_or_default();
    Ok((dataset.project.dir().to_path_buf(), warnings))
}
