//! `framecull load-bench MANIFEST`: run the data loader for a fixed number of batches and
//! report where the time goes (storage, decode, preprocessing, GPU), frames/s, peak memory,
//! and a checksum of the batch contents so two runs can be compared.

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

use super::Outcome;
use crate::loader::{
    self, Batching, Crop, DType, DeviceChoice, Filter, Layout, Loader, LoaderConfig, Mode, OnError,
    Sampling, Timing,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A manifest version (`vNNNN.json`, `.parquet` or `.jsonl`) or a manifest folder (latest).
    manifest: PathBuf,
    /// Dataset root, a folder or a URL (s3://, gs://, az://, https://) (default: the manifest's).
    #[arg(long, value_name = "DIR|URL")]
    root: Option<PathBuf>,
    /// Read each row's clip file (a version exported with `--materialize DIR`), not its
    /// source; `--root` then names the clip folder (default: the one the version records).
    #[arg(long)]
    clip_files: bool,
    /// Read the clip files from the version's WebDataset shards (`export --format webdataset`),
    /// each shard once from start to end; `--root` then names the shard folder or bucket
    /// prefix (default: the one beside the manifest).
    #[arg(long)]
    shards: bool,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value_t = 0)]
    epoch: u64,
    /// Batches to read (0: the whole epoch).
    #[arg(long, default_value_t = 20)]
    batches: usize,
    /// Decode workers (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    #[arg(long, default_value_t = 1)]
    decoder_threads: usize,
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
    #[arg(long, default_value_t = 8)]
    batch_size: usize,
    /// Frames per window (0: whole clips up to --max-frames, variable length).
    #[arg(long, default_value_t = 16)]
    clip_len: u32,
    #[arg(long, default_value_t = 64)]
    max_frames: u32,
    /// Take every n-th frame.
    #[arg(long, default_value_t = 1, conflicts_with = "fps")]
    stride: u32,
    /// Take frames at this rate, by timestamp (instead of --stride).
    #[arg(long)]
    fps: Option<f64>,
    #[arg(long, value_enum, default_value_t = ModeArg::Uniform)]
    mode: ModeArg,
    /// Output size, WIDTHxHEIGHT.
    #[arg(long, default_value = "224x224")]
    size: String,
    #[arg(long, value_enum, default_value_t = LayoutArg::Bcthw)]
    layout: LayoutArg,
    #[arg(long, value_enum, default_value_t = DTypeArg::F32)]
    dtype: DTypeArg,
    #[arg(long, value_enum, default_value_t = FilterArg::Bilinear)]
    filter: FilterArg,
    #[arg(long, value_enum, default_value_t = CropArg::Center)]
    crop: CropArg,
    /// Probability of a left-right flip per window.
    #[arg(long, default_value_t = 0.0)]
    hflip: f32,
    /// Keep plan order (no per-epoch shuffle).
    #[arg(long)]
    no_shuffle: bool,
    #[arg(long, default_value_t = 0)]
    rank: usize,
    #[arg(long, default_value_t = 1)]
    world_size: usize,
    /// Only rows of this split.
    #[arg(long)]
    split: Option<String>,
    #[arg(long, value_enum, default_value_t = OnErrorArg::Skip)]
    on_error: OnErrorArg,
    /// Skip the fingerprint check of each file.
    #[arg(long)]
    no_verify: bool,
    /// Batches prepared ahead of the consumer.
    #[arg(long, default_value_t = 4)]
    prefetch: usize,
    /// Keep decoded clips, shrunk, in this folder for later runs and epochs.
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// Short side of cached frames.
    #[arg(long, default_value_t = 256)]
    cache_short_side: u32,
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum DeviceArg {
    Auto,
    Gpu,
    Cpu,
}
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum ModeArg {
    Uniform,
    Random,
    All,
}
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum LayoutArg {
    Bcthw,
    Bthwc,
}
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum DTypeArg {
    F32,
    F16,
    U8,
}
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum FilterArg {
    Bilinear,
    Area,
}
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum CropArg {
    Full,
    Center,
    Random,
    /// Centre crop inside each video's content (its letterbox or pillarbox bars left out).
    Content,
}
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum OnErrorArg {
    Skip,
    Fail,
}

fn config(args: &Args) -> anyhow::Result<LoaderConfig> {
    let (w, h) = args
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        .context("--size takes WIDTHxHEIGHT, e.g. 224x224")?;
    let mut config = LoaderConfig {
        sampling: Sampling {
            clip_len: (args.clip_len > 0).then_some(args.clip_len),
            max_frames: args.max_frames,
            timing: args.fps.map_or(Timing::Stride(args.stride), Timing::Fps),
            mode: match args.mode {
                ModeArg::Uniform => Mode::Uniform,
                ModeArg::Random => Mode::Random,
                ModeArg::All => Mode::All,
            },
            window_step: None,
        },
        batching: Batching {
            batch_size: args.batch_size,
            shuffle: !args.no_shuffle,
            rank: args.rank,
            world_size: args.world_size,
            ..Batching::default()
        },
        clip_files: args.clip_files,
        shards: args.shards,
        ..LoaderConfig::default()
    };
    config.output.width = w;
    config.output.height = h;
    config.output.layout = match args.layout {
        LayoutArg::Bcthw => Layout::Bcthw,
        LayoutArg::Bthwc => Layout::Bthwc,
    };
    config.output.dtype = match args.dtype {
        DTypeArg::F32 => DType::F32,
        DTypeArg::F16 => DType::F16,
        DTypeArg::U8 => DType::U8,
    };
    config.output.filter = match args.filter {
        FilterArg::Bilinear => Filter::Bilinear,
        FilterArg::Area => Filter::Area,
    };
    config.crop = match args.crop {
        CropArg::Full => Crop::Full,
        CropArg::Center => Crop::Center,
        CropArg::Content => Crop::Content,
        CropArg::Random => Crop::RandomResized {
            scale: [0.08, 1.0],
            ratio: [0.75, 4.0 / 3.0],
        },
    };
    config.hflip = args.hflip;
    config.seed = args.seed;
    config.split.clone_from(&args.split);
    if let Some(n) = args.workers {
        config.workers = n.max(1);
    }
    config.decoder_threads = args.decoder_threads.max(1);
    config.prefetch_batches = args.prefetch.max(1);
    config.device = match args.device {
        DeviceArg::Auto => DeviceChoice::Auto,
        DeviceArg::Gpu => DeviceChoice::Gpu,
        DeviceArg::Cpu => DeviceChoice::Cpu,
    };
    config.on_error = match args.on_error {
        OnErrorArg::Skip => OnError::Skip,
        OnErrorArg::Fail => OnError::Fail,
    };
    config.verify_fingerprints = !args.no_verify;
    config.checksum = true;
    config.cache = args.cache.as_ref().map(|dir| loader::CacheConfig {
        dir: dir.clone(),
        short_side: args.cache_short_side.max(1),
    });
    Ok(config)
}

#[derive(Serialize)]
struct Report<'a> {
    manifest: String,
    clips: usize,
    batches_planned: usize,
    shape: Option<[usize; 5]>,
    dtype: DType,
    layout: Layout,
    frames_per_sec: f64,
    windows_per_sec: f64,
    peak_rss_bytes: Option<u64>,
    checksum: String,
    #[serde(flatten)]
    stats: &'a loader::Stats,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let config = config(&args)?;
    let mut loader = Loader::open(&args.manifest, args.root.as_deref(), config)
        .with_context(|| format!("cannot open the manifest {}", args.manifest.display()))?;
    let mut shape = None;
    let planned = loader.plan(args.epoch).len();
    let wanted = if args.batches == 0 {
        planned
    } else {
        args.batches.min(planned)
    };
    // Consume each batch as a training loop would: bring it to host memory (a read-back for
    // GPU batches, timed on its own) and hash it, then let it go.
    let stop = super::stop::Stop::on_signals();
    let mut epoch = loader.epoch(args.epoch);
    for done in 0..wanted {
        if stop.requested() {
            // Dropping the epoch ends its decode threads and worker processes.
            drop(epoch);
            return Err(stop.error(
                &format!("load-bench stopped after {done} of {wanted} batches"),
                false,
            ));
        }
        let Some(batch) = epoch.next() else { break };
        let batch = batch?;
        shape.get_or_insert(batch.shape);
        if let loader::BatchData::Gpu(_) = &batch.data {
            epoch.to_host(&batch)?;
        }
        epoch.recycle(batch);
    }
    drop(epoch);
    let stats = loader.stats();
    let report = Report {
        manifest: args.manifest.display().to_string(),
        clips: loader.clip_count(),
        batches_planned: planned,
        shape,
        dtype: loader.config().output.dtype,
        layout: loader.config().output.layout,
        frames_per_sec: stats.frames_per_sec(),
        windows_per_sec: if stats.wall_secs > 0.0 {
            stats.windows as f64 / stats.wall_secs
        } else {
            0.0
        },
        peak_rss_bytes: super::peak_rss_bytes(),
        checksum: stats.checksum.clone(),
        stats,
    };
    if args.json {
        super::write_stdout(&serde_json::to_string_pretty(&report)?)?;
    } else {
        super::write_stdout(&text(&report))?;
    }
    let skipped =
        stats.skipped_clips.values().sum::<u64>() + stats.skipped_windows.values().sum::<u64>();
    Ok(if skipped > 0 {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

fn text(r: &Report) -> String {
    let s = r.stats;
    let mut t = String::new();
    let mb = |b: u64| b as f64 / 1e6;
    let decoded_in = match s.worker_processes {
        0 => "decoded in this process".to_string(),
        1 => "decoded in 1 worker process".to_string(),
        n => format!("decoded in {n} worker processes"),
    };
    t.push_str(&format!("device      {}, {decoded_in}\n", s.device));
    let clips = crate::model::count(r.clips as u64, "clip");
    t.push_str(&format!("manifest    {} ({clips})\n", r.manifest));
    t.push_str(&format!(
        "batches     {} of {} planned, shape {:?} {:?} {:?}\n",
        s.batches,
        r.batches_planned,
        r.shape.unwrap_or_default(),
        r.dtype,
        r.layout
    ));
    t.push_str(&format!(
        "frames      {} delivered ({} padding slots), {} decoded, {} seeks; cache: {} windows read, {} clips written\n",
        s.frames, s.padding_frames, s.frames_decoded, s.seeks, s.cache_hits, s.cache_fills
    ));
    t.push_str(&format!(
        "throughput  {:.1} frames/s, {:.1} windows/s, wall {:.3} s\n",
        r.frames_per_sec, r.windows_per_sec, s.wall_secs
    ));
    t.push_str(&format!(
        "stages      read {:.3} s, decode {:.3} s, convert {:.3} s, preprocess {:.3} s (worker time); upload {:.3} s, compute {:.3} s, read-back {:.3} s\n",
        s.read_secs, s.decode_secs, s.convert_secs, s.preprocess_secs, s.upload_secs, s.compute_secs, s.readback_secs
    ));
    t.push_str(&format!(
        "waited      {:.3} s (consumer waiting for batches)\n",
        s.wait_secs
    ));
    if s.shards_read > 0 {
        t.push_str(&format!(
            "shards      {} read, {:.1} MB\n",
            s.shards_read,
            mb(s.shard_bytes_read)
        ));
    }
    if let Some(peak) = r.peak_rss_bytes {
        t.push_str(&format!("memory      peak RSS {:.0} MB\n", mb(peak)));
    }
    if !s.skipped_clips.is_empty() || !s.skipped_windows.is_empty() {
        t.push_str(&format!(
            "skipped     clips {:?}, windows {:?}\n",
            s.skipped_clips, s.skipped_windows
        ));
        for e in &s.errors {
            t.push_str(&format!("  {e}\n"));
        }
    }
    t.push_str(&format!("checksum    {}\n", r.checksum));
    t
}
