//! `framecull merge SHARD_DIR... --project OUT`

use std::path::PathBuf;

use super::Outcome;
use crate::catalog::Project;
use crate::model::count;
use crate::scan::merge::{MergeError, MergeEvent, MergeSummary, merge_until};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Project folders of finished shards (`framecull scan --shard I/N --project DIR`).
    #[arg(required = true, value_name = "SHARD_DIR")]
    shards: Vec<PathBuf>,
    /// The merged project (created when new; merging into it again updates it).
    #[arg(long, value_name = "DIR")]
    project: PathBuf,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let project = Project::at(&args.project);
    let stop = super::stop::Stop::on_signals();
    let merged = merge_until(
        &project,
        &args.shards,
        stop.flag(),
        &mut |event| match event {
            MergeEvent::Shard {
                done,
                total,
                spec,
                up_to_date,
            } => eprintln!(
                "[{done}/{total}] shard {spec} {}",
                if up_to_date { "up to date" } else { "merged" }
            ),
            MergeEvent::Deriving => eprintln!("deriving duplicate groups, statistics and flags"),
        },
    );
    let (catalog, summary) = match merged {
        Err(e @ MergeError::Stopped { .. }) => return Err(stop.error(&e.to_string(), true)),
        other => other?,
    };
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&summary)?)?;
    } else {
        report(&summary, &args.project);
    }
    let flagged = match &summary.derived {
        Some(derived) => super::flags::report_derived(&catalog, derived)?,
        None => super::flags::error_flag_outcome(&catalog)?,
    };
    Ok(
        if summary.problem_files > 0 || flagged == Outcome::Problems {
            Outcome::Problems
        } else {
            Outcome::Clean
        },
    )
}

fn report(s: &MergeSummary, project: &std::path::Path) {
    eprintln!(
        "{}: {} merged, {} up to date; the project holds {}, {} ({} with problems); {:.2} s  (catalog: {})",
        count(s.shards, "shard"),
        s.merged,
        s.up_to_date,
        count(s.shards_in_project, "shard"),
        count(s.items, "file"),
        s.problem_files,
        s.elapsed_secs,
        project.display()
    );
}
