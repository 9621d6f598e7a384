//! `framecull export`: write a new manifest version.

use super::{Outcome, ProjectArg};
use crate::analysis::filter::Filter;
use crate::manifest::{self, ExportOptions, Format, Include, SplitSpec};
use crate::model::count;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    /// Manifest name (letters, digits, '-', '_', '.'); versions accumulate under it.
    #[arg(long)]
    name: String,
    /// Output formats (repeat or comma-separate); Parquet by default.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "parquet")]
    format: Vec<Format>,
    /// Split shares, e.g. `train=0.8,val=0.1,test=0.1`.
    #[arg(long)]
    split: Option<String>,
    /// Seed of the split assignment.
    #[arg(long, default_value_t = 0)]
    split_seed: u64,
    /// `unreviewed`: accepted files and unreviewed files without error or warning flags;
    /// `accepted`: accepted files only. Rejected files never go in.
    #[arg(long, value_enum, default_value = "unreviewed")]
    include: Include,
    /// Only files matching a filter, in the form the window shows under its filter chips
    /// (e.g. "motion_mean>2 and flag:frozen"; see `framecull list --where`).
    #[arg(long = "where", value_name = "FILTER")]
    filter: Option<String>,
    /// Count what would go in, per split, without writing.
    #[arg(long)]
    dry_run: bool,
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let catalog = args.project.open()?;
    let split = args.split.as_deref().map(SplitSpec::parse).transpose()?;
    let options = ExportOptions {
        name: args.name,
        formats: args.format,
        split,
        split_seed: args.split_seed,
        include: args.include,
        filter: args.filter.as_deref().map(Filter::parse).transpose()?,
    };
    if args.dry_run {
        let (_, counts) = manifest::select_rows(&catalog, &options)?;
        super::write_stdout(&serde_json::to_string_pretty(&counts)?)?;
        return Ok(Outcome::Clean);
    }
    let stop = super::stop::Stop::on_signals();
    let meta = match manifest::export_until(&catalog, &options, stop.flag()) {
        Err(manifest::ManifestError::Stopped) => {
            return Err(stop.error(
                "export stopped before the version was written; run the same command again",
                false,
            ));
        }
        other => other?,
    };
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&meta)?)?;
    } else {
        let dir = manifest::manifest_dir(catalog.project_dir(), &meta.name);
        eprintln!(
            "{} v{:04}: {} from {}{}; rows hash {}",
            meta.name,
            meta.version,
            count(meta.counts.rows as u64, "clip"),
            count(meta.counts.files as u64, "file"),
            if meta.counts.by_split.is_empty() {
                String::new()
            } else {
                format!(" ({:?})", meta.counts.by_split)
            },
            &meta.rows_hash[..12]
        );
        for file in meta.files.values() {
            super::write_stdout(&dir.join(file).display().to_string())?;
        }
    }
    Ok(Outcome::Clean)
}
