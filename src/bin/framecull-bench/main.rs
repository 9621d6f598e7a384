//! `framecull-bench`: benchmarks of framecull that print comparable figures (run them on a
//! release build: `cargo run --release --bin framecull-bench -- SUBCOMMAND`). What each
//! measures and the figures: docs/PERFORMANCE.md.
//!
//! Exit status: 0 done, 2 usage or fatal error.

mod analyze;
mod clipfiles;
mod content;
mod export;
mod generated;
#[cfg(feature = "gui")]
mod gui;
mod labels;
mod load;
mod merge;
#[cfg(feature = "gui")]
mod player;
mod recall;
mod scan;
mod shards;
mod storage;
mod triage;
mod util;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "framecull-bench",
    version,
    about = "Benchmarks of framecull that print comparable figures (release build)"
)]
struct Cli {
    /// Log filter for stderr (e.g. `info`, `framecull=debug`); also FRAMECULL_LOG.
    #[arg(long, global = true)]
    log: Option<String>,
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// Scan and rescan a generated tree of small images.
    Scan(scan::ScanArgs),
    /// Deep analysis of a folder of videos and one of images, against `ffmpeg -f null`
    /// decoding, PySceneDetect's ContentDetector and cleanvision on the same files.
    Analyze(analyze::Args),
    /// Export a manifest of N clips from a generated catalog (no media files needed); with
    /// `--clip-files N`, write N clips as files of their own against `ffmpeg` re-encoding; with
    /// `--shards N`, WebDataset shards of N clip files against `tar`.
    Export(export::Args),
    /// Import N label rows (CSV, by path and by file stem) into a generated catalog of N
    /// items, and export them back.
    Labels(labels::Args),
    /// The data loader's CPU path on a manifest of generated 720p H.264 clips, against
    /// `ffmpeg -threads 2 -f null` and PyAV (frame threading) plus a numpy resize and
    /// normalisation over the same frames.
    Load(load::Args),
    /// The window on a generated catalog of N items: apply a brush filter (file size, about
    /// half the items) and lay out one frame (table, then gallery), with egui's layout and
    /// tessellation, no GPU.
    #[cfg(feature = "gui")]
    Gui(gui::Args),
    /// The player pipeline on a generated 1080p H.264 clip: decode (2 threads), convert to
    /// the display size, upload to a wgpu texture, frame after frame.
    #[cfg(feature = "gui")]
    Player(player::Args),
    /// Merge N generated shard catalogs (`scan --shard I/N --deep` as it leaves them) into
    /// one: wall time (copy and derive) and peak memory.
    Merge(merge::Args),
    /// Metadata scan of a corpus against a per-file ffprobe loop over the same files.
    Probe(scan::ProbeArgs),
    /// Object storage against a local moto server: requests and bytes per probed object,
    /// `scan s3://` against download-then-probe, the loader from a bucket against local files.
    Storage(storage::Args),
    /// A video's triage against its deep analysis, file by file, on generated long-GOP clips
    /// (H.264 and HEVC, 720p to 4K), beside `ffmpeg -skip_frame nokey` and `ffprobe
    /// -count_packets` on the same files.
    Triage(triage::Args),
    /// How many of the files the deep pass calls broken the triage finds, per damage class
    /// and density (generated damage) and on the media corpus, and its false alarms.
    TriageRecall(recall::Args),
    /// How the triage's content flags (black, dark, frozen...) and motion agree with the deep
    /// pass's, on generated clips of each content class and on the media corpus.
    TriageContent(content::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    framecull::output::init_logging(cli.log.as_deref());
    if cfg!(debug_assertions) {
        eprintln!(
            "note: this is a debug build; benchmark figures come from `cargo run --release --bin framecull-bench`"
        );
    }
    let result = match cli.which {
        Which::Scan(args) => scan::run_scan(args),
        Which::Analyze(args) => analyze::run(args),
        Which::Export(args) => export::run(args),
        Which::Labels(args) => labels::run(args),
        Which::Load(args) => load::run(args),
        Which::Merge(args) => merge::run(args),
        #[cfg(feature = "gui")]
        Which::Gui(args) => gui::run(args),
        #[cfg(feature = "gui")]
        Which::Player(args) => player::run(args),
        Which::Probe(args) => scan::run_probe(args),
        Which::Storage(args) => storage::run(args),
        Which::Triage(args) => triage::run(args),
        Which::TriageRecall(args) => recall::run(args),
        Which::TriageContent(args) => content::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
