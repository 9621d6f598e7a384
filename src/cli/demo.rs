//! `framecull demo`: make the demo dataset (once), scan and analyse it, then open it in the
//! window (or print a summary without a display).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::Outcome;
use crate::demo;
use crate::scan::pipeline::{Dataset, IngestOptions, Progress, ensure_demo};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to put the demo dataset (default: the user's cache folder).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print the summary instead of opening the window (the default without a display).
    #[arg(long)]
    no_window: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let dir = args.dir.unwrap_or_else(demo::default_dir);
    ensure_demo(&dir, &mut |p| {
        if let Progress::Stage(stage) = p {
            eprintln!("{} in {} ...", stage.label(), dir.display());
        }
    })?;
    let mut dataset = Dataset::open(&dir, None)?;
    let summary = super::progress::ingest(
        &mut dataset,
        &IngestOptions::full(),
        &AtomicBool::new(false),
    )?;
    if let Some(scan) = &summary.scan {
        let c = scan.counts;
        eprintln!(
            "demo dataset: {} ({} probed, {} unchanged), {} with problems (broken on purpose)",
            crate::model::count(c.seen, "file"),
            c.probed,
            c.unchanged,
            scan.problem_files
        );
    }
    if let Some(derived) = &summary.derived {
        super::flags::report_derived(&dataset.catalog, derived)?;
    }
    let catalog = &dataset.catalog;
    let stats = super::stats::compute(&crate::catalog::items_frame(
        &catalog.items()?,
        &catalog.all_metrics()?,
    )?)?;
    super::write_stdout(&super::stats::render(&stats))?;
    eprintln!(
        "\nnext: framecull flags --project {0}   framecull list --project {0}",
        dataset.project.dir().display()
    );
    let display =
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    if cfg!(feature = "gui") && display && !args.no_window {
        super::open_window(Some(dataset.root.recorded()))?;
    }
    Ok(Outcome::Clean)
}
