//! `framecull export`: write a new manifest version.

use super::{Outcome, ProjectArg};
use crate::analysis::filter::Filter;
use crate::manifest::{self, ExportOptions, Format, Include, SplitSpec, Stratify};
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
    /// Give each label its share of every split (within one file of it), keeping the
    /// previous version's splits wherever the shares allow (needs --split).
    #[arg(long, value_enum, requires = "split")]
    stratify: Option<Stratify>,
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
    /// Also write each clip of the version as a file of its own in DIR (a folder, or a bucket
    /// prefix: s3://bucket/prefix and the other dataset URLs): a video clip as an MP4
    /// holding exactly its frames, a picture as a copy, named by clip id. Clip files present
    /// from an earlier run are kept, so a rerun writes only new clips.
    #[arg(long, value_name = "DIR")]
    materialize: Option<std::path::PathBuf>,
    /// The size WebDataset shards are kept under (`--format webdataset`): bytes, or with a
    /// unit (`500MB`, `1GiB`, `64k`); 1 GiB by default.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    shard_size: Option<u64>,
    /// Clip files written at once, one per core by default.
    #[arg(long, short, requires = "materialize")]
    jobs: Option<usize>,
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let catalog = args.project.open()?;
    let split = args
        .split
        .as_deref()
        .map(SplitSpec::parse)
        .transpose()?
        .map(|s| s.stratified(args.stratify));
    let options = ExportOptions {
        name: args.name,
        formats: args.format,
        split,
        split_seed: args.split_seed,
        include: args.include,
        filter: args.filter.as_deref().map(Filter::parse).transpose()?,
        shard_size: args.shard_size,
    };
    check_materialize(args.materialize.as_deref(), args.dry_run, &options.formats)?;
    if args.dry_run {
        let (_, counts) = manifest::select_rows(&catalog, &options)?;
        super::write_stdout(&serde_json::to_string_pretty(&counts)?)?;
        return Ok(Outcome::Clean);
    }
    let stop = super::stop::Stop::on_signals();
    // The clip files, when asked for, are written once the rows are chosen and before the
    // version is: the version records each one.
    let mut materialized = None;
    let writing_clips = std::cell::Cell::new(false);
    let shards = manifest::webdataset::ShardProgress::default();
    let root = match &args.materialize {
        Some(_) => Some(crate::storage::Root::of_recorded(
            &catalog.dataset_root()?.unwrap_or_default(),
        )?),
        None => None,
    };
    let finished = std::sync::atomic::AtomicBool::new(false);
    let exported = std::thread::scope(|scope| {
        if options.formats.contains(&manifest::Format::Webdataset) {
            scope.spawn(|| shard_bar(&shards, &finished));
        }
        let exported = match (&args.materialize, &root) {
            (Some(dir), Some(root)) => {
                let jobs = args.jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
                });
                let mut write =
                    |rows: &mut [manifest::ManifestRow],
                     references: &[crate::model::SeekReference]| {
                        writing_clips.set(true);
                        let done = materialize(root, rows, references, dir, jobs, &stop)?;
                        writing_clips.set(false);
                        let files = done.files.clone();
                        materialized = Some(done);
                        Ok(files)
                    };
                manifest::export_watched(&catalog, &options, stop.flag(), Some(&mut write), &shards)
            }
            _ => manifest::export_watched(&catalog, &options, stop.flag(), None, &shards),
        };
        finished.store(true, std::sync::atomic::Ordering::SeqCst);
        exported
    });
    let meta = exported_or_stopped(
        exported,
        writing_clips.get(),
        args.materialize.as_deref(),
        &stop,
    )?;
    report(
        catalog.project_dir(),
        &meta,
        materialized.as_ref(),
        args.json,
    )?;
    if materialized.is_some_and(|m| !m.failed.is_empty()) {
        return Ok(Outcome::Problems);
    }
    Ok(Outcome::Clean)
}

/// Refuse clip files in a bucket for the formats that read them from a local folder, and
/// `--dry-run` with `--materialize`.
fn check_materialize(
    materialize: Option<&std::path::Path>,
    dry_run: bool,
    formats: &[Format],
) -> anyhow::Result<()> {
    if materialize.is_some_and(crate::storage::Root::is_url)
        && formats.iter().any(|f| {
            matches!(
                f,
                manifest::Format::Folders | manifest::Format::Hf | manifest::Format::Webdataset
            )
        })
    {
        anyhow::bail!(
            "--format folders, hf and webdataset use clip files in a local folder: give \
             --materialize a folder, not a bucket"
        );
    }
    if dry_run && materialize.is_some() {
        anyhow::bail!("--dry-run writes nothing: leave out --materialize, or --dry-run");
    }
    Ok(())
}

/// The version exported, or, when `stop` stopped the export, the error that says what is
/// kept (the clip files in `materialize` when it stopped `writing_clips`) and to run again.
fn exported_or_stopped(
    exported: Result<manifest::VersionMeta, manifest::ManifestError>,
    writing_clips: bool,
    materialize: Option<&std::path::Path>,
    stop: &super::stop::Stop,
) -> anyhow::Result<manifest::VersionMeta> {
    match exported {
        Err(manifest::ManifestError::Stopped) if writing_clips => {
            let dir = materialize.unwrap_or(std::path::Path::new("."));
            Err(stop.error(
                &format!(
                    "clip files stopped before the version was written; the clips written \
                     are kept: run the same command again to write the rest into {} and the \
                     version",
                    dir.display()
                ),
                false,
            ))
        }
        Err(manifest::ManifestError::Stopped) => Err(stop.error(
            "export stopped before the version was written; run the same command again",
            false,
        )),
        other => Ok(other?),
    }
}

/// Say what the version `meta` of the project in `project_dir` holds: with `json`, its
/// metadata (and the clip files `materialized`) on stdout; else a summary on stderr and its
/// files' paths on stdout.
fn report(
    project_dir: &std::path::Path,
    meta: &manifest::VersionMeta,
    materialized: Option<&crate::loader::materialize::Materialized>,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        let mut out = serde_json::to_value(meta)?;
        if let Some(m) = materialized {
            out["materialized"] = serde_json::to_value(m)?;
        }
        super::write_stdout(&serde_json::to_string_pretty(&out)?)?;
    } else {
        let dir = manifest::manifest_dir(project_dir, &meta.name);
        eprintln!(
            "{} v{:04}: {} from {}{}; rows hash {}",
            meta.name,
            meta.version,
            count(meta.counts.rows, "clip"),
            count(meta.counts.files, "file"),
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
    Ok(())
}

/// The WebDataset shards' progress on stderr (bytes and samples done of all, rate, time
/// left), from when their writing starts until `finished` is set.
fn shard_bar(
    progress: &manifest::webdataset::ShardProgress,
    finished: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering;
    let bar = super::progress::bar(
        "{spinner} shards [{bar:30}] {bytes}/{total_bytes}  {binary_bytes_per_sec}  ETA {eta}  {msg}",
    );
    while !finished.load(Ordering::SeqCst) {
        let total = progress.bytes.load(Ordering::Relaxed);
        if total > 0 {
            bar.set_length(total);
            bar.set_position(progress.bytes_done.load(Ordering::Relaxed));
            bar.set_message(format!(
                "{}/{} samples",
                progress.samples_done.load(Ordering::Relaxed),
                progress.samples.load(Ordering::Relaxed)
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    bar.finish_and_clear();
}

/// Write the clip files of `rows` (read from `root`) into `dir`, with a progress bar on
/// stderr, and fill their `clip_*` columns.
fn materialize(
    root: &crate::storage::Root,
    rows: &mut [manifest::ManifestRow],
    references: &[crate::model::SeekReference],
    dir: &std::path::Path,
    jobs: usize,
    stop: &super::stop::Stop,
) -> Result<crate::loader::materialize::Materialized, manifest::ManifestError> {
    let bar = super::progress::bar(
        "{spinner} clip files [{bar:30}] {pos}/{len} clips  {per_sec}  ETA {eta}  {msg}",
    );
    bar.set_length(rows.len() as u64);
    let result = crate::loader::materialize::materialize(
        root,
        rows,
        references,
        dir,
        jobs,
        stop.flag(),
        &mut |p| {
            bar.set_position(p.done);
            bar.set_message(format!(
                "{:.1} MiB written",
                p.bytes as f64 / (1 << 20) as f64
            ));
        },
    );
    bar.finish_and_clear();
    let done = result?;
    eprintln!(
        "clip files in {}: {} written ({:.1} MiB, {} frames encoded, {} copied), {} present, {} \
         failed; {:.1} s",
        dir.display(),
        done.written,
        done.bytes as f64 / (1 << 20) as f64,
        done.reencoded_frames,
        done.copied_frames,
        done.present,
        done.failed.len(),
        done.secs
    );
    for failure in &done.failed {
        eprintln!("error: {failure}");
    }
    Ok(done)
}

/// A size in bytes: a number, with a unit where given (`k`, `M`, `G`, `T` and their `B`
/// forms are powers of 1000; `KiB`, `MiB`, `GiB`, `TiB` powers of 1024).
fn parse_size(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| anyhow::anyhow!("{text:?} is not a size (e.g. 500MB, 1GiB)"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => {
            anyhow::bail!("unknown unit {other:?} (k, M, G, T, KiB, MiB, GiB, TiB)");
        }
    };
    let bytes = number * scale;
    if bytes < 1.0 || !bytes.is_finite() {
        anyhow::bail!("{text:?}: a size of at least one byte");
    }
    Ok(bytes as u64)
}
