//! What a loader is asked for: its settings, their defaults, and the checks they must pass.

use serde::{Deserialize, Serialize};

use crate::{
    Batching, CacheConfig, DType, Filter, Layout, LoaderError, OutputSpec, Sampling, Timing,
};

/// How each window is cropped before resizing. Drawn once per window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Crop {
    /// The whole frame, stretched to the output size.
    Full,
    /// The largest centred rectangle with the output's aspect ratio.
    Center,
    /// torchvision's RandomResizedCrop: an area share in `scale` and an aspect ratio in
    /// `ratio` (log-uniform), at a random position; centre crop after 10 misses.
    RandomResized { scale: [f32; 2], ratio: [f32; 2] },
    /// The largest centred rectangle with the output's aspect ratio inside the picture's
    /// content: a video's letterbox or pillarbox bars left out (the manifest's
    /// `content_crop`); as [`Crop::Center`] where it has none.
    Content,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceChoice {
    /// A hardware GPU when there is one, else the CPU path.
    Auto,
    /// Any wgpu adapter, software ones (lavapipe) included; an error when there is none.
    Gpu,
    Cpu,
}

/// What to do with a missing, changed or undecodable file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Leave it out and count it (a failed window leaves its batch one row shorter).
    Skip,
    /// Stop with an error.
    Fail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoaderConfig {
    pub sampling: Sampling,
    pub batching: Batching,
    pub output: OutputSpec,
    pub crop: Crop,
    /// Probability of a left-right flip per window.
    pub hflip: f32,
    pub seed: u64,
    /// Only rows of this split (all rows when `None`).
    pub split: Option<String>,
    /// Decode workers.
    pub workers: usize,
    /// Threads per decoder.
    pub decoder_threads: usize,
    /// Batches prepared ahead of the consumer (bounds memory).
    pub prefetch_batches: usize,
    pub device: DeviceChoice,
    pub on_error: OnError,
    /// Compare each file's content fingerprint with the manifest's before use.
    pub verify_fingerprints: bool,
    /// Give up on one window after this long.
    pub window_budget_secs: f64,
    /// Keep decoded, shrunk clips on disk for later epochs.
    pub cache: Option<CacheConfig>,
    /// Keep [`Stats::checksum`](crate::Stats::checksum) over every batch's bytes (about 3% of the CPU path's time on
    /// two cores: xxh3 over every output byte). `load-bench` turns it on.
    #[serde(default)]
    pub checksum: bool,
    /// Decode in worker processes (`framecull worker loader`, one per decode
    /// worker), so that a decoder that crashes, hangs or allocates without end costs its clip
    /// (skipped with the reason), not the training run. Off, or with no `framecull` binary to
    /// run (beside this program, or `FRAMECULL_WORKER_EXE`), FFmpeg runs in this process.
    #[serde(default = "yes")]
    pub isolate: bool,
    /// Address space of each worker process in MiB (0: no cap): a decode past it is that
    /// clip's error, `over the 4.0 GiB memory limit`.
    #[serde(default = "worker_memory_mib")]
    pub worker_memory_mib: u64,
    /// Read each row's clip file (a version exported with `--materialize`), not its source.
    #[serde(default)]
    pub clip_files: bool,
    /// Read the clip files from the version's WebDataset shards (`--format webdataset`), each
    /// shard once from start to end, in place of the files ([`shards`](crate::shards)).
    #[serde(default)]
    pub shards: bool,
}

fn yes() -> bool {
    true
}

/// As the scan's workers (`[limits] max_memory_mib`).
fn worker_memory_mib() -> u64 {
    4096
}

impl Default for LoaderConfig {
    fn default() -> Self {
        LoaderConfig {
            sampling: Sampling::default(),
            batching: Batching::default(),
            output: OutputSpec {
                width: 224,
                height: 224,
                layout: Layout::Bcthw,
                dtype: DType::F32,
                filter: Filter::Bilinear,
                mean: [0.485, 0.456, 0.406],
                std: [0.229, 0.224, 0.225],
            },
            crop: Crop::Center,
            hflip: 0.0,
            seed: 0,
            split: None,
            workers: std::thread::available_parallelism().map_or(2, usize::from),
            decoder_threads: 1,
            prefetch_batches: 4,
            device: DeviceChoice::Auto,
            on_error: OnError::Skip,
            verify_fingerprints: true,
            window_budget_secs: 60.0,
            cache: None,
            checksum: false,
            isolate: true,
            worker_memory_mib: worker_memory_mib(),
            clip_files: false,
            shards: false,
        }
    }
}

pub(crate) fn validate(config: &LoaderConfig) -> Result<(), LoaderError> {
    let bad = |m: &str| Err(LoaderError::Config(m.to_string()));
    let o = &config.output;
    if o.width == 0 || o.height == 0 || o.width > 8192 || o.height > 8192 {
        return bad("the output size must be 1..=8192 on each side");
    }
    if o.std.iter().any(|s| !s.is_finite() || *s <= 0.0) || o.mean.iter().any(|m| !m.is_finite()) {
        return bad("mean must be finite and std positive");
    }
    if config.batching.batch_size == 0 {
        return bad("the batch size must be at least 1");
    }
    if config.batching.rank >= config.batching.world_size.max(1) {
        return bad("rank must be below the world size");
    }
    match config.sampling.timing {
        Timing::Stride(0) => return bad("the stride must be at least 1"),
        Timing::Fps(f) if f.is_nan() || f <= 0.0 => {
            return bad("the sampling fps must be positive");
        }
        _ => {}
    }
    if config.sampling.clip_len == Some(0) || config.sampling.max_frames == 0 {
        return bad("windows need at least one frame");
    }
    if !(0.0..=1.0).contains(&config.hflip) {
        return bad("the flip probability must be in [0, 1]");
    }
    if let Crop::RandomResized { scale, ratio } = config.crop
        && !(scale[0] > 0.0
            && scale[0] <= scale[1]
            && scale[1] <= 1.0
            && ratio[0] > 0.0
            && ratio[0] <= ratio[1])
    {
        return bad(
            "random resized crop needs 0 < scale_min <= scale_max <= 1 and 0 < ratio_min <= ratio_max",
        );
    }
    Ok(())
}
