//! `export`: export a manifest of N clips from a generated catalog (no media files needed),
//! as Parquet alone and as Parquet, JSON lines and CSV together; with `--clip-files`, write a
//! manifest's clips as files of their own against re-encoding them with `ffmpeg`
//! ([`crate::clipfiles`]).

use std::time::Instant;

use serde::Serialize;

use crate::util::{median, print};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, default_value_t = 100_000)]
    clips: usize,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
    /// Write this many clips as files of their own (`export --materialize`) from generated
    /// 60 s 720p H.264 sources, against re-encoding each with `ffmpeg`, instead.
    #[arg(long)]
    clip_files: Option<usize>,
    /// Length of each clip of `--clip-files`, in seconds.
    #[arg(long, default_value_t = 5)]
    clip_secs: u32,
    /// Write WebDataset shards of this many clip files (made once, `--shard-file-mib` MiB
    /// each) against `tar` over the same files, instead.
    #[arg(long)]
    shards: Option<usize>,
    #[arg(long, default_value_t = 2)]
    shard_file_mib: usize,
    /// Where the sources of `--clip-files` and the files of `--shards` are kept between runs.
    #[arg(long, default_value = "target/bench-export")]
    dir: std::path::PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(files) = args.shards {
        let r = crate::shards::bench(
            &args.dir,
            files.max(1),
            args.shard_file_mib.max(1),
            args.repeat,
        )?;
        return print(&r, args.json, || r.text());
    }
    if let Some(clips) = args.clip_files {
        let r = crate::clipfiles::bench(&args.dir, clips.max(1), args.clip_secs.clamp(1, 50))?;
        return print(&r, args.json, || r.text());
    }
    let r = bench_export(args.clips, args.repeat.max(1))?;
    print(&r, args.json, || {
        format!(
            "export of {} clips: Parquet median {:.2} s {:?}; Parquet + JSON lines + CSV median {:.2} s {:?}",
            r.clips,
            r.parquet_median_secs,
            r.parquet_secs,
            r.all_formats_median_secs,
            r.all_formats_secs
        )
    })
}

#[derive(Serialize)]
struct ExportBench {
    clips: usize,
    parquet_secs: Vec<f64>,
    parquet_median_secs: f64,
    all_formats_secs: Vec<f64>,
    all_formats_median_secs: f64,
}

fn bench_export(n: usize, repeat: usize) -> anyhow::Result<ExportBench> {
    use framecull::manifest::{ExportOptions, Format, Include, SplitSpec};
    let project =
        std::env::temp_dir().join(format!("framecull-bench-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    let catalog = crate::generated::catalog(&project, n)?;
    let run = |formats: Vec<Format>, name: &str| -> anyhow::Result<f64> {
        let options = ExportOptions {
            name: name.into(),
            formats,
            split: Some(SplitSpec::parse("train=0.8,val=0.1,test=0.1")?),
            split_seed: 1,
            include: Include::Unreviewed,
            filter: None,
            shard_size: None,
        };
        let started = Instant::now();
        let meta = framecull::manifest::export(&catalog, &options)?;
        anyhow::ensure!(
            meta.counts.rows as usize == n,
            "exported {} of {n}",
            meta.counts.rows
        );
        Ok(started.elapsed().as_secs_f64())
    };
    let mut parquet = Vec::new();
    let mut all = Vec::new();
    for _ in 0..repeat {
        parquet.push(run(vec![Format::Parquet], "bench")?);
        all.push(run(
            vec![Format::Parquet, Format::Jsonl, Format::Csv],
            "bench-all",
        )?);
    }
    let _ = std::fs::remove_dir_all(&project);
    Ok(ExportBench {
        clips: n,
        parquet_median_secs: median(parquet.clone()),
        parquet_secs: parquet,
        all_formats_median_secs: median(all.clone()),
        all_formats_secs: all,
    })
}
