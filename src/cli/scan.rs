//! `framecull scan DIR`

use std::path::PathBuf;
use std::time::Duration;

use super::{Outcome, ProjectArg};
use crate::catalog::Project;
use crate::model::{AnalysisLevel, count};
use crate::scan::deep::AnalyzeOptions;
use crate::scan::pipeline::{Dataset, IngestOptions, IngestSummary};
use crate::scan::shard::{MarkerCounts, ShardMarker, ShardSpec};
use crate::scan::{ScanOptions, ScanSummary};
use crate::storage::RequestCounts;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dataset folder to scan, or a URL (s3://BUCKET/PREFIX, gs://, az://CONTAINER/PREFIX, https://HOST/PATH on WebDAV; with --project).
    dir: PathBuf,
    #[command(flatten)]
    project: ProjectArg,
    /// Probe threads, and the deep pass's decoder threads (default: one per core).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Requests to the object store in flight at once when scanning a URL: objects probed
    /// at the same time, each mostly waiting on the network.
    #[arg(long, value_name = "N", default_value_t = crate::scan::REQUESTS_IN_FLIGHT)]
    requests: usize,
    /// Seconds FFmpeg may spend on one file before it is recorded as an error.
    #[arg(long, default_value_t = 20.0, value_name = "SECS")]
    file_timeout: f64,
    /// Also run deep analysis (decode every file: motion, cuts, integrity, quality,
    /// duplicates, flags), as `framecull analyze` does.
    #[arg(long)]
    deep: bool,
    /// Also triage every video (read its index and packets, decode a few GOPs: truncation,
    /// frame counts, timestamps, damaged packets, doubts to deepen), a fraction of the deep
    /// pass's cost; files already analysed deeply stay so. Pictures get their full analysis.
    #[arg(long, conflicts_with = "deep")]
    triage: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Scan one shard of the dataset, I of N (zero-based), into the --project folder: the
    /// files whose path hash falls in it. `framecull merge` joins the shards' projects.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, conflicts_with = "shards", allow_hyphen_values = true)]
    shard: Option<ShardSpec>,
    /// Scan one of N shards, the index taken from SLURM_ARRAY_TASK_ID (an array from 0) or
    /// JOB_COMPLETION_INDEX; N defaults to SLURM_ARRAY_TASK_COUNT.
    #[arg(long, value_name = "N", num_args = 0..=1)]
    shards: Option<Option<u32>>,
    /// Scan a shard again even though its shard.json says it is finished (to take in files
    /// that changed since).
    #[arg(long)]
    rescan: bool,
}

fn parse_shard(text: &str) -> anyhow::Result<ShardSpec> {
    Ok(ShardSpec::parse(text)?)
}

/// The shard `--shard` or `--shards` names, if any.
fn shard_of_args(args: &Args) -> anyhow::Result<Option<ShardSpec>> {
    let spec = match (args.shard, args.shards) {
        (Some(spec), _) => spec,
        (None, Some(count)) => ShardSpec::from_env(count, |name| std::env::var(name).ok())?,
        (None, None) if args.rescan => {
            anyhow::bail!("--rescan is for a shard (--shard I/N or --shards N)")
        }
        (None, None) => return Ok(None),
    };
    if args.project.project.is_none() {
        anyhow::bail!("a shard scan needs --project DIR: each shard writes its own project");
    }
    Ok(Some(spec))
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let shard = shard_of_args(&args)?;
    let level = match (args.deep, args.triage) {
        (true, _) => AnalysisLevel::Deep,
        (false, true) => AnalysisLevel::Triage,
        (false, false) => AnalysisLevel::None,
    };
    let mut dataset = Dataset::open(&args.dir, args.project.project.clone().map(Project::at))?;
    let project_dir = dataset.project.dir().to_path_buf();
    if let Some(spec) = shard {
        if !args.rescan
            && let Some(done) =
                ShardMarker::finished(&project_dir, &dataset.root.recorded(), spec, level)?
        {
            return already_done(&done, &project_dir, args.json);
        }
        ShardMarker::remove(&project_dir)?;
    }
    let mut scan = ScanOptions {
        shard,
        ..ScanOptions::default()
    };
    if let Some(jobs) = args.jobs {
        scan.jobs = jobs.max(1);
    }
    scan.file_budget = Duration::from_secs_f64(args.file_timeout.max(0.1));
    scan.requests_in_flight = args.requests.max(1);
    let options = IngestOptions {
        analyse: (level != AnalysisLevel::None).then(|| AnalyzeOptions {
            jobs: scan.jobs,
            level,
            ..AnalyzeOptions::default()
        }),
        scan: Some(scan),
    };
    let stop = super::stop::Stop::on_signals();
    let summary = super::progress::ingest(&mut dataset, &options, stop.flag())?;
    let requests = dataset.root.as_remote().map(|r| r.counts());
    report(
        &summary,
        dataset.project.dir(),
        requests.as_ref(),
        args.json,
    )?;
    if let (Some(remote), Some(counts), false) = (dataset.root.as_remote(), &requests, args.json) {
        eprintln!("{}: {}", remote.url(), requests_text(counts));
    }
    if summary.cancelled {
        let message = format!(
            "scan cancelled: {} recorded; run the same command again to resume",
            count(
                summary.scan.as_ref().map_or(0, |s| s.counts.probed) as u64,
                "file"
            )
        );
        // A scheduler retries an interrupted shard, which resumes it.
        return Err(stop.error(&message, shard.is_some()));
    }
    let flagged = match &summary.derived {
        Some(derived) => super::flags::report_derived(&dataset.catalog, derived)?,
        None => Outcome::Clean,
    };
    // Without --deep or --triage, flags only follow the files; their errors were counted when
    // found.
    let flagged = if summary.analysis.is_some() {
        flagged
    } else {
        Outcome::Clean
    };
    let problems = summary.problem_files() > 0 || flagged == Outcome::Problems;
    if let Some(spec) = shard {
        let counts = MarkerCounts {
            scan: summary.scan.as_ref().map(|s| s.counts).unwrap_or_default(),
            items: dataset.catalog.count_items()?,
            analysed: summary.analysis.as_ref().map_or(0, |a| a.analysed),
        };
        ShardMarker::finished_now(&dataset.root.recorded(), spec, level, counts, problems)
            .write(&project_dir)?;
        eprintln!(
            "shard {spec} finished: {}",
            ShardMarker::path(&project_dir).display()
        );
    }
    Ok(if problems {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

/// A shard rerun after it finished: nothing to do; the recorded outcome again.
fn already_done(
    done: &ShardMarker,
    project_dir: &std::path::Path,
    json: bool,
) -> anyhow::Result<Outcome> {
    if json {
        super::write_stdout(&serde_json::to_string_pretty(done)?)?;
    }
    eprintln!(
        "shard {} of {} already done at {} ({}, {}); nothing to do ({}; --rescan scans it again)",
        done.spec(),
        done.root.display(),
        done.finished_at,
        count(done.counts.items, "file"),
        done.outcome,
        ShardMarker::path(project_dir).display()
    );
    Ok(if done.had_problems() {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

/// "12 requests (1 list, 11 get), 2.4 MiB read"
fn requests_text(c: &RequestCounts) -> String {
    let kinds: Vec<String> = [
        ("list", c.list),
        ("get", c.get),
        ("head", c.head),
        ("other", c.other),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(kind, n)| format!("{n} {kind}"))
    .collect();
    format!(
        "{} requests ({}), {:.1} MiB read",
        c.total(),
        kinds.join(", "),
        c.bytes_read as f64 / (1024.0 * 1024.0)
    )
}

/// `scan --json`: the scan's summary, with the analysis and flag counts when they ran.
#[derive(serde::Serialize)]
struct JsonSummary<'a> {
    #[serde(flatten)]
    scan: &'a ScanSummary,
    /// Requests made to the object store (a URL root only).
    #[serde(skip_serializing_if = "Option::is_none")]
    requests: Option<&'a RequestCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    analysis: Option<&'a crate::scan::deep::AnalyzeSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    derived: Option<&'a crate::scan::derive::DerivedSummary>,
}

fn report(
    summary: &IngestSummary,
    project: &std::path::Path,
    requests: Option<&RequestCounts>,
    json: bool,
) -> anyhow::Result<()> {
    let Some(scan) = &summary.scan else {
        return Ok(());
    };
    if json {
        let out = serde_json::to_string_pretty(&JsonSummary {
            scan,
            requests,
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
        "{}: {} probed, {} unchanged, {} missing; {} with problems; {:.2} s  (catalog: {})",
        count(c.seen, "file"),
        c.probed,
        c.unchanged,
        c.missing,
        summary.problem_files,
        summary.elapsed_secs,
        project.display()
    );
    let not_media = c.other - summary.not_files;
    if not_media > 0 {
        let files = if not_media == 1 {
            "file is"
        } else {
            "files are"
        };
        eprintln!(
            "{not_media} other {files} not media (not scanned): framecull list --all --project {}",
            project.display()
        );
    }
    if summary.not_files > 0 {
        let entries = if summary.not_files == 1 {
            "entry is not a regular file"
        } else {
            "entries are not regular files"
        };
        eprintln!(
            "{} {entries} (broken links, FIFOs, devices; not opened): framecull list --all --project {}",
            summary.not_files,
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
