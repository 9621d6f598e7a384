//! Work that takes longer than a frame, on named threads, reported through channels the UI
//! polls each frame.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Instant;

use super::view::{View, load};
use crate::catalog::{Catalog, PROJECT_DIR_NAME};
use crate::scan::deep::{AnalyzeEvent, AnalyzeOptions, analyze};
use crate::scan::{ScanEvent, ScanOptions, derive, scan};

pub fn spawn_load(project: PathBuf) -> Receiver<Result<View, String>> {
    let (tx, rx) = channel();
    let spawned = std::thread::Builder::new()
        .name("framecull-load".into())
        .spawn(move || {
            let _ = tx.send(load(&project).map_err(|e| format!("{e:#}")));
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the loader thread: {e}");
    }
    rx
}

#[derive(Debug, Clone)]
pub enum ScanMsg {
    Phase(&'static str),
    Progress {
        done: u64,
        total: u64,
    },
    /// Some results are durable: reload to show them.
    Stored,
    Finished(Result<PathBuf, String>),
}

pub struct ScanJob {
    pub rx: Receiver<ScanMsg>,
    pub cancel: Arc<AtomicBool>,
    pub started: Instant,
    pub phase: &'static str,
    pub done: u64,
    pub total: u64,
}

/// Scan `root` (optionally generating the demo first), analyse, derive flags.
pub fn spawn_scan(root: PathBuf, demo: bool) -> ScanJob {
    let (tx, rx) = channel();
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let spawned = std::thread::Builder::new()
        .name("framecull-scan-job".into())
        .spawn(move || {
            let result = run_scan(&root, demo, &flag, &tx).map_err(|e| format!("{e:#}"));
            let _ = tx.send(ScanMsg::Finished(result));
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the scan thread: {e}");
    }
    ScanJob {
        rx,
        cancel,
        started: Instant::now(),
        phase: "starting",
        done: 0,
        total: 0,
    }
}

fn run_scan(
    root: &std::path::Path,
    demo: bool,
    cancel: &AtomicBool,
    tx: &Sender<ScanMsg>,
) -> anyhow::Result<PathBuf> {
    if demo && !crate::demo::is_complete(root) {
        let _ = tx.send(ScanMsg::Phase("generating the demo dataset"));
        std::fs::create_dir_all(root)?;
        crate::demo::generate(root)?;
    }
    let root = root.canonicalize()?;
    let project = root.join(PROJECT_DIR_NAME);
    let mut catalog = Catalog::create_or_open(&project, &root)?;
    let _ = tx.send(ScanMsg::Phase("scanning"));
    scan(
        &mut catalog,
        &root,
        &ScanOptions::default(),
        cancel,
        &mut |e| match e {
            ScanEvent::Walked { to_probe, .. } => {
                let _ = tx.send(ScanMsg::Progress {
                    done: 0,
                    total: to_probe,
                });
            }
            ScanEvent::Probed { done, total, .. } => {
                let _ = tx.send(ScanMsg::Progress { done, total });
            }
            ScanEvent::Committed { .. } => {
                let _ = tx.send(ScanMsg::Stored);
            }
        },
    )?;
    if cancel.load(Ordering::SeqCst) {
        return Ok(project);
    }
    let _ = tx.send(ScanMsg::Phase("analysing"));
    analyze(
        &mut catalog,
        &root,
        &AnalyzeOptions::default(),
        cancel,
        &mut |e| match e {
            AnalyzeEvent::Started { total } => {
                let _ = tx.send(ScanMsg::Progress { done: 0, total });
            }
            AnalyzeEvent::Analysed { done, total, .. } => {
                let _ = tx.send(ScanMsg::Progress { done, total });
            }
            AnalyzeEvent::Committed { .. } => {}
        },
    )?;
    let config = derive::load_config(&project)?;
    derive::recompute(&mut catalog, &config)?;
    Ok(project)
}
