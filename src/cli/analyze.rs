//! `framecull analyze`: deep analysis (or `--triage`) of a scanned project (also `scan --deep`,
//! `scan --triage`).

use std::time::Duration;

use super::{Outcome, ProjectArg};
use crate::analysis::filter::Filter;
use crate::catalog::listing::Analysis;
use crate::catalog::{ItemFields, by_item};
use crate::model::{AnalysisLevel, count};
use crate::scan::deep::{AnalyzeOptions, AnalyzeSummary};
use crate::scan::pipeline::{Dataset, IngestOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    /// Decoder threads, one per core by default: files analysed at once, and a long video
    /// with the others done decodes on the threads they leave.
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Seconds one file may take before its analysis stops (what was decoded is kept).
    #[arg(long, default_value_t = 300.0, value_name = "SECS")]
    file_timeout: f64,
    /// Triage the videos (read their index and packets, decode a few GOPs) instead of
    /// decoding every frame; videos already analysed deeply stay so. Pictures get their full
    /// analysis.
    #[arg(long, conflicts_with = "deep")]
    triage: bool,
    /// Decode every frame (the default): also deepens videos that were triaged.
    #[arg(long)]
    deep: bool,
    /// Only the files matching a filter (as `list --where`), e.g. deepen what a triage
    /// doubts: `--where 'level:triage and flag:suspect'`.
    #[arg(long = "where", value_name = "FILTER")]
    filter: Option<String>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let mut dataset = Dataset::of_project(args.project.locate()?)?;
    let mut analyse = AnalyzeOptions::default();
    if let Some(j) = args.jobs {
        analyse.jobs = j.max(1);
    }
    analyse.file_budget = Duration::from_secs_f64(args.file_timeout.max(0.1));
    if args.triage {
        analyse.level = AnalysisLevel::Triage;
    }
    if let Some(text) = &args.filter {
        let filter = Filter::parse(text)?;
        let (items, analysis) = dataset.catalog.items_and(ItemFields::All, Analysis::load)?;
        let metrics = by_item(&items, &analysis.metrics);
        let chosen = filter.select_items(
            &items,
            &metrics,
            &analysis.flags,
            &analysis.reviews,
            &analysis.clip_labels,
        );
        analyse.only = Some(chosen.into_iter().map(|i| items[i].id).collect());
    }
    let options = IngestOptions {
        scan: None,
        analyse: Some(analyse),
    };
    let stop = super::stop::Stop::on_signals();
    let summary = super::progress::ingest(&mut dataset, &options, stop.flag())?;
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&summary.analysis)?)?;
    } else {
        report(summary.analysis.as_ref());
    }
    if summary.cancelled {
        return Err(stop.error(
            "analysis cancelled; run the same command again to resume",
            false,
        ));
    }
    match &summary.derived {
        Some(derived) => super::flags::report_derived(&dataset.catalog, derived),
        None => Ok(Outcome::Clean),
    }
}

/// One line on stderr: what the analysis did.
pub fn report(summary: Option<&AnalyzeSummary>) {
    if let Some(s) = summary {
        let left_out = if s.not_chosen > 0 {
            format!(", {} left out by the filter", s.not_chosen)
        } else {
            String::new()
        };
        let over = if s.over_limit > 0 {
            format!(
                ", {} over the picture size limits (not decoded; flag too_large)",
                s.over_limit
            )
        } else {
            String::new()
        };
        eprintln!(
            "{} analysed, {} up to date{left_out}{over}; {:.2} s",
            count(s.analysed, "file"),
            s.up_to_date,
            s.elapsed_secs
        );
    }
}
