//! `framecull demo`: make the demo dataset (once), scan and analyse it, then open it in the
//! window (or print a summary without a display).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::Outcome;
use crate::catalog::{Catalog, PROJECT_DIR_NAME};
use crate::demo;
use crate::scan::ScanOptions;

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
    if !demo::is_complete(&dir) {
        eprintln!("generating the demo dataset in {} ...", dir.display());
        std::fs::create_dir_all(&dir)?;
        let n = demo::generate(&dir)?;
        eprintln!("{n} files written");
    }
    let root = dir.canonicalize()?;
    let project = root.join(PROJECT_DIR_NAME);
    let mut catalog = Catalog::create_or_open(&project, &root)?;
    let summary = super::scan::run_with_progress(
        &mut catalog,
        &root,
        &ScanOptions::default(),
        &AtomicBool::new(false),
    )?;
    let c = summary.counts;
    eprintln!(
        "demo dataset: {} files ({} probed, {} unchanged), {} with problems (broken on purpose)",
        c.seen, c.probed, c.unchanged, summary.problem_files
    );
    let options = crate::scan::deep::AnalyzeOptions::default();
    super::analyze::run_with_progress(&mut catalog, &root, &options, &AtomicBool::new(false))?;
    super::flags::recompute_and_report(&mut catalog)?;
    let items = catalog.items()?;
    let stats = super::stats::compute(&crate::catalog::items_frame(
        &items,
        &catalog.all_metrics()?,
    )?)?;
    super::write_stdout(&super::stats::render(&stats))?;
    eprintln!(
        "\nnext: framecull flags --project {0}   framecull list --project {0}",
        project.display()
    );
    let display =
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    if cfg!(feature = "gui") && display && !args.no_window {
        super::open_window(Some(root))?;
    }
    Ok(Outcome::Clean)
}
