//! `framecull analyze`: deep analysis of a scanned project (also `scan --deep`).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Outcome, ProjectArg};
use crate::catalog::Catalog;
use crate::scan::deep::{AnalyzeEvent, AnalyzeOptions, AnalyzeSummary, analyze};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    /// Files analysed at once (default: one per core).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Seconds one file may take before its analysis stops (what was decoded is kept).
    #[arg(long, default_value_t = 300.0, value_name = "SECS")]
    file_timeout: f64,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    let root = catalog
        .dataset_root()?
        .ok_or_else(|| anyhow::anyhow!("the project records no dataset folder; scan it first"))?;
    let mut options = AnalyzeOptions::default();
    if let Some(j) = args.jobs {
        options.jobs = j.max(1);
    }
    options.file_budget = Duration::from_secs_f64(args.file_timeout.max(0.1));
    let cancel = super::cancel_on_ctrl_c();
    let summary = run_with_progress(&mut catalog, &root, &options, &cancel)?;
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&summary)?)?;
    } else {
        eprintln!(
            "{} files analysed, {} up to date; {:.2} s",
            summary.analysed, summary.up_to_date, summary.elapsed_secs
        );
    }
    if summary.cancelled {
        anyhow::bail!("analysis cancelled; run the same command again to resume");
    }
    super::flags::recompute_and_report(&mut catalog)
}

/// Run the analysis with a progress bar on stderr, then recompute derived data.
pub fn run_with_progress(
    catalog: &mut Catalog,
    root: &Path,
    options: &AnalyzeOptions,
    cancel: &AtomicBool,
) -> anyhow::Result<AnalyzeSummary> {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} analysing [{bar:30}] {pos}/{len} files  {per_sec}  ETA {eta}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    let summary = analyze(catalog, root, options, cancel, &mut |e| match e {
        AnalyzeEvent::Started { total } => bar.set_length(total),
        AnalyzeEvent::Analysed { done, path, .. } => {
            bar.set_position(done);
            bar.set_message(path);
        }
        AnalyzeEvent::Committed { .. } => {}
    });
    bar.finish_and_clear();
    Ok(summary?)
}
