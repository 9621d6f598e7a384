//! `framecull scan DIR`

use std::path::PathBuf;
use std::time::Duration;

use super::{Outcome, ProjectArg};
use crate::catalog::Project;
use crate::scan::deep::AnalyzeOptions;
use crate::scan::pipeline::{Dataset, IngestOptions, IngestSummary};
use crate::scan::{ScanOptions, ScanSummary};

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
    let mut dataset = Dataset::open(&args.dir, args.project.project.clone().map(Project::at))?;
    let mut scan = ScanOptions::default();
    if let Some(jobs) = args.jobs {
        scan.jobs = jobs.max(1);
    }
    scan.file_budget = Duration::from_secs_f64(args.file_timeout.max(0.1));
    let options = IngestOptions {
        analyse: args.deep.then(|| AnalyzeOptions {
            jobs: scan.jobs,
            ..AnalyzeOptions::default()
        }),
        scan: Some(scan),
    };
    let cancel = super::cancel_on_ctrl_c();
    let summary = super::progress::ingest(&mut dataset, &options, &cancel)?;
    report(&summary, dataset.project.dir(), args.json)?;
    if summary.cancelled {
        anyhow::bail!(
            "scan cancelled: {} files recorded; run the same command again to resume",
            summary.scan.as_ref().map_or(0, |s| s.counts.probed)
        );
    }
    let flagged = match &summary.derived {
        Some(derived) => super::flags::report_derived(&dataset.catalog, derived)?,
        None => Outcome::Clean,
    };
    // Without --deep, flags only follow the files; their errors were counted when found.
    let flagged = if summary.analysis.is_some() {
        flagged
    } else {
        Outcome::Clean
    };
    Ok(
        if summary.problem_files() > 0 || flagged == Outcome::Problems {
            Outcome::Problems
        } else {
            Outcome::Clean
        },
    )
}

/// `scan --json`: the scan's summary, with the analysis and flag counts when they ran.
#[derive(serde::Serialize)]
struct JsonSummary<'a> {
    #[serde(flatten)]
    scan: &'a ScanSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    analysis: Option<&'a crate::scan::deep::AnalyzeSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    derived: Option<&'a crate::scan::derive::DerivedSummary>,
}

fn report(summary: &IngestSummary, project: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let Some(scan) = &summary.scan else {
        return Ok(());
    };
    if json {
        let out = serde_json::to_string_pretty(&JsonSummary {
            scan,
            analysis: summary.analysis.as_ref(),
            derived: summary.derived.as_ref(),
        })?;
        super::write_stdout(&out)?;
        return Ok(());
    }
    let analysis = summary.analysis.as_ref();
    let summary = scan;
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
    if c.other > 0 {
        let files = if c.other == 1 { "file is" } else { "files are" };
        eprintln!(
            "{} other {files} not media (not scanned): framecull list --all --project {}",
            c.other,
            project.display()
        );
    }
    if summary.problem_files > 0 {
        eprintln!(
            "see them with: framecull list --project {} --problems",
            project.display()
        );
    }
    super::analyze::report(analysis);
    Ok(())
}
