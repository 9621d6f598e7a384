//! The ingest use case, written once for every front end (window, command line, demo,
//! Python): open or create the project, scan, analyse, derive duplicates and flags, with one
//! progress event type and one cancel flag. Front ends translate its events into a progress
//! bar, a status line or log lines, and nothing more.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::deep::{AnalyzeEvent, AnalyzeOptions, AnalyzeSummary, analyze_with};
use super::derive::{DeriveError, DerivedSummary, recompute_for_project};
use super::{ScanError, ScanEvent, ScanOptions, ScanSummary, scan_with};
use framecull_catalog::{Catalog, CatalogError, Project};
use framecull_storage::{Root, StorageError};

/// The steps of an ingest, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Writing the demo dataset (only for the demo).
    Demo,
    Scan,
    Analyse,
    Flags,
}

impl Stage {
    pub fn label(self) -> &'static str {
        match self {
            Stage::Demo => "generating the demo dataset",
            Stage::Scan => "scanning",
            Stage::Analyse => "analysing",
            Stage::Flags => "deriving flags",
        }
    }
}

/// Progress of an ingest.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A stage begins.
    Stage(Stage),
    /// The walk is done: `to_probe` of `files` files need probing, the rest are unchanged.
    Walked { files: u64, to_probe: u64 },
    /// `done` of the stage's `total` files are finished; `path` is the latest.
    Files {
        done: u64,
        total: u64,
        path: Option<String>,
    },
    /// Results so far are durable: a view may reload to show them.
    Stored,
}

/// Which stages to run. Flags are derived after an analysis, and after a scan of a project
/// analysed before (so flags follow files that changed or went missing).
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// Scan the dataset first (`None`: analyse what the catalog holds).
    pub scan: Option<ScanOptions>,
    /// Deep analysis of new and changed files.
    pub analyse: Option<AnalyzeOptions>,
}

impl IngestOptions {
    /// Scan, analyse and derive flags, with default settings.
    pub fn full() -> Self {
        IngestOptions {
            scan: Some(ScanOptions::default()),
            analyse: Some(AnalyzeOptions::default()),
        }
    }
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct IngestSummary {
    pub scan: Option<ScanSummary>,
    pub analysis: Option<AnalyzeSummary>,
    /// `None` when flags were not derived (cancelled, or nothing analysed yet).
    pub derived: Option<DerivedSummary>,
    pub cancelled: bool,
}

impl IngestSummary {
    /// Files whose probe failed or that are unsupported, after the scan.
    pub fn problem_files(&self) -> u64 {
        self.scan.as_ref().map_or(0, |s| s.problem_files)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("cannot open dataset folder {path}: {source}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error(transparent)]
    Derive(#[from] DeriveError),
    #[error("cannot write the demo dataset: {0}")]
    Demo(#[from] crate::demo::DemoError),
    #[error("{0}")]
    Storage(#[from] StorageError),
    #[error(
        "{url} is not a folder: a dataset URL needs --project DIR, the local folder its \
         catalog is kept in"
    )]
    UrlNeedsProject { url: String },
}

/// A dataset opened for ingest: its canonical root (a folder or a URL), its project and
/// catalog.
pub struct Dataset {
    pub root: Root,
    pub project: Project,
    pub catalog: Catalog,
}

impl Dataset {
    /// Open the dataset at `root` (a folder, or a URL such as `s3://bucket/prefix`) with
    /// `project` (default: `<root>/.framecull`; a URL needs one), creating the project when it
    /// is new.
    pub fn open(root: &Path, project: Option<Project>) -> Result<Dataset, IngestError> {
        if Root::is_url(root) {
            let url = root.to_string_lossy().into_owned();
            let project = project.ok_or(IngestError::UrlNeedsProject { url: url.clone() })?;
            let root = Root::remote(&url)?;
            let catalog = project.create_or_open(&root.recorded())?;
            return Ok(Dataset {
                root,
                project,
                catalog,
            });
        }
        let root = root.canonicalize().map_err(|source| IngestError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        let project = project.unwrap_or_else(|| Project::of_dataset(&root));
        let catalog = project.create_or_open(&root)?;
        Ok(Dataset {
            root: Root::Local(root),
            project,
            catalog,
        })
    }

    /// Open an existing project for analysis of the dataset it records.
    pub fn of_project(project: Project) -> Result<Dataset, IngestError> {
        let catalog = project.open()?;
        let recorded = catalog.dataset_root()?.ok_or_else(|| IngestError::Root {
            path: project.dir().to_path_buf(),
            source: std::io::Error::other("the project records no dataset folder"),
        })?;
        let root = Root::of_recorded(&recorded)?;
        Ok(Dataset {
            root,
            project,
            catalog,
        })
    }

    /// Run the stages `options` asks for. Stops early, with `cancelled`, when `cancel` is set;
    /// everything finished before is durable and the next ingest resumes from there.
    pub fn ingest(
        &mut self,
        options: &IngestOptions,
        cancel: &AtomicBool,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<IngestSummary, IngestError> {
        let mut summary = IngestSummary::default();
        // One pool of workers for the scan's probes and the analysis after it: their
        // processes start once (each start loads FFmpeg's libraries, about 40 ms of CPU).
        let workers = match (&options.scan, &options.analyse) {
            (Some(s), Some(a)) if s.isolate && a.isolate => {
                let limits = super::project_config(&self.catalog)
                    .map_err(ScanError::from)?
                    .limits;
                let max = s.jobs.max(a.jobs);
                Some(super::worker::pool(limits.memory_bytes(), true, max))
            }
            _ => None,
        };
        if let Some(scan_options) = &options.scan {
            on_progress(Progress::Stage(Stage::Scan));
            let s = scan_with(
                &mut self.catalog,
                &self.root,
                scan_options,
                workers.as_ref(),
                cancel,
                &mut |e| {
                    on_progress(match e {
                        ScanEvent::Walked {
                            files, to_probe, ..
                        } => Progress::Walked { files, to_probe },
                        ScanEvent::Probed {
                            done, total, path, ..
                        } => Progress::Files {
                            done,
                            total,
                            path: Some(path),
                        },
                        ScanEvent::Committed { .. } => Progress::Stored,
                    })
                },
            )?;
            summary.cancelled |= s.cancelled;
            summary.scan = Some(s);
        }
        if summary.cancelled {
            return Ok(summary);
        }
        if let Some(analyse_options) = &options.analyse {
            on_progress(Progress::Stage(Stage::Analyse));
            let a = analyze_with(
                &mut self.catalog,
                &self.root,
                analyse_options,
                workers.as_ref(),
                cancel,
                &mut |e| match e {
                    AnalyzeEvent::Started { total } => on_progress(Progress::Files {
                        done: 0,
                        total,
                        path: None,
                    }),
                    AnalyzeEvent::Analysed { done, total, path } => on_progress(Progress::Files {
                        done,
                        total,
                        path: Some(path),
                    }),
                    AnalyzeEvent::Committed { .. } => on_progress(Progress::Stored),
                },
            )?;
            summary.cancelled |= a.cancelled;
            summary.analysis = Some(a);
        }
        if summary.cancelled || cancel.load(Ordering::SeqCst) {
            summary.cancelled = true;
            return Ok(summary);
        }
        if summary.analysis.is_some() || self.catalog.has_metrics()? {
            on_progress(Progress::Stage(Stage::Flags));
            summary.derived = Some(recompute_for_project(&mut self.catalog)?);
            on_progress(Progress::Stored);
        }
        Ok(summary)
    }
}

/// Write the demo dataset into `dir` unless a complete one is there already.
pub fn ensure_demo(dir: &Path, on_progress: &mut dyn FnMut(Progress)) -> Result<(), IngestError> {
    if crate::demo::is_complete(dir) {
        return Ok(());
    }
    on_progress(Progress::Stage(Stage::Demo));
    std::fs::create_dir_all(dir).map_err(|source| IngestError::Root {
        path: dir.to_path_buf(),
        source,
    })?;
    crate::demo::generate(dir)?;
    Ok(())
}
