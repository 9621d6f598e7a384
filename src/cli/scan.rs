//! `framecull scan DIR`

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Outcome, ProjectArg};
use crate::catalog::{Catalog, PROJECT_DIR_NAME};
use crate::scan::{ScanEvent, ScanOptions, ScanSummary, scan};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dataset folder to scan.
    dir: PathBuf,
    #[command(flatten)]
    project: ProjectArg,
    /// Probe threads (default: one per core).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Seconds FFmpeg may spend on one file before it is recorded as an error.
    #[arg(long, default_value_t = 20.0, value_name = "SECS")]
    file_timeout: f64,
    /// Also run deep analysis (decode every file: motion, cuts, integrity, quality,
    /// duplicates, flags), as `framecull analyze` does.
    #[arg(long)]
    deep: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let root = args
        .dir
        .canonicalize()
        .with_context(|| format!("cannot open dataset folder {}", args.dir.display()))?;
    let project_dir = args
        .project
        .project
        .clone()
        .unwrap_or_else(|| root.join(PROJECT_DIR_NAME));
    let mut catalog = Catalog::create_or_open(&project_dir, &root)?;
    let mut options = ScanOptions::default();
    if let Some(jobs) = args.jobs {
        options.jobs = jobs.max(1);
    }
    options.file_budget = Duration::from_secs_f64(args.file_timeout.max(0.1));

    let cancel = super::cancel_on_ctrl_c();

    let summary = run_with_progress(&mut catalog, &root, &options, &cancel)?;
    report(&summary, &project_dir, args.json)?;
    if summary.cancelled {
        anyhow::bail!(
            "scan cancelled: {} files recorded; run the same command again to resume",
            summary.counts.probed
        );
    }
    let scanned = if summary.problem_files > 0 {
        Outcome::Problems
    } else {
        Outcome::Clean
    };
    if !args.deep {
        // Keep flags in step with the files (missing ones lose theirs, changed ones are
        // judged on their new metadata) when the project has been analysed before.
        if catalog.has_metrics()? {
            super::flags::recompute_and_report(&mut catalog)?;
        }
        return Ok(scanned);
    }
    let deep = crate::scan::deep::AnalyzeOptions {
        jobs: options.jobs,
        ..Default::default()
    };
    let analysed = super::analyze::run_with_progress(&mut catalog, &root, &deep, &cancel)?;
    if analysed.cancelled {
        anyhow::bail!("analysis cancelled; run `framecull analyze` to resume");
    }
    let flagged = super::flags::recompute_and_report(&mut catalog)?;
    Ok(
        if scanned == Outcome::Problems || flagged == Outcome::Problems {
            Outcome::Problems
        } else {
            Outcome::Clean
        },
    )
}

/// Run a scan with a progress bar (rate and ETA) on stderr.
pub fn run_with_progress(
    catalog: &mut Catalog,
    root: &std::path::Path,
    options: &ScanOptions,
    cancel: &AtomicBool,
) -> anyhow::Result<ScanSummary> {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {pos}/{len} files  {per_sec}  ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message("walking");
    bar.enable_steady_tick(Duration::from_millis(120));
    let summary = scan(catalog, root, options, cancel, &mut |event| match event {
        ScanEvent::Walked {
            files, to_probe, ..
        } => {
            bar.set_length(to_probe);
            bar.set_message(format!("probing ({files} found)"));
        }
        ScanEvent::Probed { done, .. } => bar.set_position(done),
        ScanEvent::Committed { .. } => {}
    });
    bar.finish_and_clear();
    Ok(summary?)
}

fn report(summary: &ScanSummary, project: &std::path::Path, json: bool) -> anyhow::Result<()> {
    if json {
        let out = serde_json::to_string_pretty(summary)?;
        super::write_stdout(&out)?;
        return Ok(());
    }
    for w in &summary.warnings {
        eprintln!("warning: {w}");
    }
    let c = summary.counts;
    eprintln!(
        "{} files: {} probed, {} unchanged, {} missing; {} with problems; {:.2} s  (catalog: {})",
        c.seen,
        c.probed,
        c.unchanged,
        c.missing,
        summary.problem_files,
        summary.elapsed_secs,
        project.display()
    );
    if summary.problem_files > 0 {
        eprintln!(
            "see them with: framecull list --project {} --problems",
            project.display()
        );
    }
    Ok(())
}
