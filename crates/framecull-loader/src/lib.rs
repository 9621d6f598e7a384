//! The bundled data loader: from a manifest to preprocessed, batched clips, deterministic and
//! fast. No GUI dependency.
//!
//! - [`plan`]: windows within each clip's boundaries, shuffled per epoch, sharded, bucketed;
//! - `source`: decode workers that own their decoders and seek to each window;
//! - [`preprocess`]: YUV -> RGB, resize, crop, flip, normalise, layout (the CPU reference,
//!   defined in [`framecull_media::convert`]);
//! - [`gpu`]: the same preprocessing in wgpu compute shaders; batches stay on the GPU.
//!
//! The same manifest, seed and settings give bit-identical batches whatever the number of
//! workers: every window is read and preprocessed on its own, and batches are assembled in
//! plan order.

mod cache;
mod config;
mod epoch;
pub mod gpu;
pub mod isolate;
pub mod materialize;
mod pipeline;
pub mod plan;
pub mod preprocess;
mod shards;
mod source;
mod stream;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use cache::CacheConfig;
use config::validate;
pub use config::{Crop, DeviceChoice, LoaderConfig, OnError};
pub use pipeline::Epoch;
pub use plan::{Batching, Mode, Sampling, Timing};
pub use preprocess::{DType, Filter, Layout, OutputSpec};
pub use stream::{Delivered, EpochStream, Next, Share};

use framecull_manifest::{self as manifest, ManifestRow, VersionMeta};
use framecull_media::source::Source;
use framecull_model::{Matrix, MediaKind, Ratio, SeekReference, StreamChoice};
use framecull_storage::{Root, StorageError};

#[derive(Debug, thiserror::Error)]
pub enum LoaderError {
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    #[error("GPU: {0}")]
    Gpu(#[from] gpu::GpuError),
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("invalid setting: {0}")]
    Config(String),
    /// The object store cannot be reached or refuses the key (not one object's fault).
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// The frame cache cannot be written (a full disk, a file-size limit).
    #[error("the frame cache cannot be written: {0}; free space, or run without the cache")]
    Cache(String),
}

/// Why a clip or window was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    Missing,
    Changed,
    Corrupt,
}

/// One clip as the workers read it.
#[derive(Debug, Clone)]
pub(crate) struct ClipSource {
    pub clip_id: String,
    /// Index of the clip's row in the manifest.
    pub row: usize,
    /// The file's path or the object's URL: what messages name, and the key of its decoder.
    pub path: PathBuf,
    pub source: Source,
    pub is_image: bool,
    pub quarter_turns: u8,
    /// Mirror left-right after rotating (EXIF orientations 2, 4, 5, 7).
    pub mirror: bool,
    pub start_pts: Option<i64>,
    pub end_pts: Option<i64>,
    pub start_secs: f64,
    pub end_secs: f64,
    /// `[start_frame, end_frame)`: frame indices of the file, when the manifest has them.
    pub frames: Option<(usize, usize)>,
    pub time_base: Option<Ratio>,
    /// What a decode from the start showed, to check seeks against.
    pub reference: Option<Arc<SeekReference>>,
    /// The video stream to read: the one the manifest row names, else FFmpeg's best.
    pub stream: StreamChoice,
    /// The matrix the manifest row says its frames are converted with.
    pub matrix: Option<Matrix>,
    /// A video's picture without its bars (the manifest's `content_crop`), as fractions of
    /// the coded picture: x, y, width, height.
    pub content: Option<[f64; 4]>,
}

/// Stage timings and counts, summed over workers (seconds of work, not wall time, except
/// `wall_secs` and `wait_secs`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub device: String,
    pub batches: u64,
    pub windows: u64,
    /// Real frames delivered (padding excluded).
    pub frames: u64,
    pub padding_frames: u64,
    pub frames_decoded: u64,
    pub seeks: u64,
    /// Windows read from the frame cache, and clips decoded into it.
    pub cache_hits: u64,
    pub cache_fills: u64,
    /// Worker processes started to decode in (`LoaderConfig::isolate`; 0: decoded in this
    /// process), restarts after a crash included.
    pub worker_processes: u64,
    /// Read from shards ([`LoaderConfig::shards`]): shards opened, and their bytes read (each
    /// shard of an epoch once, from its start).
    pub shards_read: u64,
    pub shard_bytes_read: u64,
    pub read_secs: f64,
    pub decode_secs: f64,
    pub convert_secs: f64,
    /// CPU path: resize, convert, normalise.
    pub preprocess_secs: f64,
    pub upload_secs: f64,
    pub compute_secs: f64,
    pub readback_secs: f64,
    /// Time the consumer waited for a batch.
    pub wait_secs: f64,
    pub wall_secs: f64,
    pub skipped_clips: BTreeMap<SkipReason, u64>,
    pub skipped_windows: BTreeMap<SkipReason, u64>,
    /// First few reasons, for the report.
    pub errors: Vec<String>,
    /// With [`LoaderConfig::checksum`]: xxh3-64 over every batch handed out, in order (hex):
    /// shapes, lengths, the frames of every window and the bytes (a GPU batch's bytes once
    /// read back with `to_host`).
    pub checksum: String,
}

impl Stats {
    pub fn frames_per_sec(&self) -> f64 {
        if self.wall_secs > 0.0 {
            self.frames as f64 / self.wall_secs
        } else {
            0.0
        }
    }
}

/// A batch: `shape` in the layout's order, bytes of `dtype`, little-endian. Window `i` holds
/// `lengths[i]` real frames in its first slots, described by `windows[i]`; the rest of its
/// `T` slots are padding (zeros).
pub struct Batch {
    /// The batch's position in its epoch's plan.
    pub index: usize,
    pub shape: [usize; 5],
    pub layout: Layout,
    pub dtype: DType,
    pub lengths: Vec<u32>,
    pub clip_ids: Vec<String>,
    pub windows: Vec<WindowInfo>,
    pub data: BatchData,
}

/// What one window of a batch holds: which clip, and exactly which frames.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowInfo {
    pub clip_id: String,
    /// Index of the clip's row in the manifest.
    pub row: usize,
    /// For each real frame, in slot order: its index in the file, counted in display order
    /// from the first frame (the frame a decode from the start shows at that position).
    pub frames: Vec<u64>,
    /// Each frame's presentation timestamp, in `time_base` units (best effort where the
    /// file's packets carry none; see docs/LOADER.md).
    pub pts: Vec<i64>,
    /// Each frame's timestamp in seconds.
    pub secs: Vec<f64>,
    pub time_base: Ratio,
}

impl Batch {
    /// Whether slot `slot` of window `window` is padding rather than a frame.
    pub fn is_padding(&self, window: usize, slot: usize) -> bool {
        self.lengths.get(window).is_none_or(|&l| slot >= l as usize)
    }

    /// Feed the batch's shape, frames and host bytes to `hasher`.
    pub(crate) fn hash_into(&self, hasher: &mut xxhash_rust::xxh3::Xxh3) {
        for d in self.shape {
            hasher.update(&(d as u64).to_le_bytes());
        }
        for (length, window) in self.lengths.iter().zip(&self.windows) {
            hasher.update(&length.to_le_bytes());
            for f in &window.frames {
                hasher.update(&f.to_le_bytes());
            }
        }
        if let BatchData::Host(bytes) = &self.data {
            hasher.update(bytes);
        }
    }
}

pub enum BatchData {
    Host(Vec<u8>),
    /// On the GPU, as a wgpu storage buffer.
    Gpu(gpu::GpuBatch),
}

/// Reads a manifest into batches.
pub struct Loader {
    config: LoaderConfig,
    clips: Arc<Vec<ClipSource>>,
    /// Each clip's file fingerprint, from the manifest.
    fingerprints: Vec<String>,
    extents: Vec<plan::ClipExtent>,
    gpu: Option<gpu::Gpu>,
    /// How the decode workers' processes start (`None`: they decode in this one).
    isolation: Option<framecull_media::isolate::Spec>,
    stats: Stats,
    /// Host batch buffers given back with [`Loader::recycle`] or a [`Recycler`].
    spare_batches: Recycler,
    /// The version's shards, when its clip files are read from them.
    shards: Option<Arc<shards::ShardSet>>,
}

/// Takes host batch buffers back for later batches (no fresh pages per batch), from any
/// thread: a front end that hands a batch's bytes to other code gives them back when that
/// code lets go of them.
#[derive(Debug, Clone, Default)]
pub struct Recycler(Arc<Mutex<Vec<Vec<u8>>>>);

impl Recycler {
    /// Buffers kept; more are freed.
    const KEEP: usize = 2;

    pub fn give(&self, bytes: Vec<u8>) {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if spare.len() < Self::KEEP {
            spare.push(bytes);
        }
    }

    pub(crate) fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default()
    }
}

/// The rows a loader reads of version `meta` (its `rows`) and the root their paths are in:
/// the sources under `root`, else the version's dataset root; with `clip_files`, each row's
/// clip file (rows without one are missing files) under `root`, else the version's clip folder.
pub fn rows_to_read(
    meta: &VersionMeta,
    rows: Vec<ManifestRow>,
    root: Option<&Path>,
    clip_files: bool,
) -> Result<(Vec<ManifestRow>, PathBuf), LoaderError> {
    if !clip_files {
        let root = root.map_or_else(
            || framecull_model::path_of_text(&meta.dataset_root),
            Path::to_path_buf,
        );
        return Ok((rows, root));
    }
    let Some(files) = &meta.clip_files else {
        return Err(LoaderError::Config(format!(
            "version {} of manifest {} has no clip files: export it with --materialize DIR",
            meta.version, meta.name
        )));
    };
    let root = root.map_or_else(
        || framecull_model::path_of_text(&files.dir),
        Path::to_path_buf,
    );
    let rows = rows
        .iter()
        .map(|row| {
            row.as_clip_file().unwrap_or_else(|| ManifestRow {
                // A name no clip file has (the materializer writes none with a space): a
                // missing file, with the reason in its name.
                path: format!(
                    "{} (no clip file: {})",
                    row.clip_id,
                    row.clip.note.as_deref().unwrap_or("none was written")
                ),
                ..row.clone()
            })
        })
        .collect();
    Ok((rows, root))
}

impl Loader {
    /// Open a manifest (a version's `.json`, `.parquet` or `.jsonl`, or a manifest folder for
    /// its latest version). Files are found under `root`, else the manifest's dataset root.
    pub fn open(
        manifest_path: &Path,
        root: Option<&Path>,
        config: LoaderConfig,
    ) -> Result<Loader, LoaderError> {
        let (meta, rows) = manifest::open_path(manifest_path)?;
        let references = manifest::read_seek_references(manifest_path, &meta)?;
        if config.shards {
            validate(&config)?;
            let (entries, mut set) = shards::open(manifest_path, &meta, &rows, root, &config)?;
            let located = |row: &ManifestRow| PathBuf::from(&row.path);
            let checked = entries
                .iter()
                .map(|e| (e.row, &e.clip_row, e.check.clone(), e.member.clone()));
            let mut loader = Loader::of_checked(checked, &located, config, Some(&mut set))?;
            loader.shards = Some(Arc::new(set));
            loader.set_seek_references(references);
            return Ok(loader);
        }
        let (rows, root) = rows_to_read(&meta, rows, root, config.clip_files)?;
        let mut loader = Loader::from_rows(&rows, &Root::of_recorded(&root)?, config)?;
        loader.set_seek_references(references);
        Ok(loader)
    }

    /// Check seeks into each file against a decode from the start (the deep pass's frame
    /// tables, exported beside the manifest), by file fingerprint. [`Loader::open`] reads
    /// them when the manifest has them.
    pub fn set_seek_references(&mut self, references: HashMap<String, SeekReference>) {
        let references: HashMap<String, Arc<SeekReference>> = references
            .into_iter()
            .map(|(k, v)| (k, Arc::new(v)))
            .collect();
        let mut clips = (*self.clips).clone();
        for (clip, fingerprint) in clips.iter_mut().zip(&self.fingerprints) {
            clip.reference = references.get(fingerprint).cloned();
        }
        self.clips = Arc::new(clips);
    }

    /// A loader over manifest rows whose paths are relative to `root` (a folder, or an
    /// object-storage prefix: see [`Root::of_recorded`]).
    pub fn from_rows(
        rows: &[ManifestRow],
        root: &Root,
        config: LoaderConfig,
    ) -> Result<Loader, LoaderError> {
        validate(&config)?;
        let (row_index, rows): (Vec<usize>, Vec<&ManifestRow>) = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                config
                    .split
                    .as_ref()
                    .is_none_or(|s| r.split.as_deref() == Some(s))
            })
            .filter(|(_, r)| matches!(r.kind, MediaKind::Video | MediaKind::Image))
            .unzip();
        let checked = source::check_files(&rows, root, config.verify_fingerprints)?;
        let located = |row: &ManifestRow| Source::in_root(root, &row.path, 0).location();
        let checked = row_index
            .into_iter()
            .zip(rows)
            .zip(checked)
            .map(|((index, row), check)| (index, row, check, None));
        Loader::of_checked(checked, &located, config, None)
    }

    /// A loader over rows whose files are checked (`(row index, row, check, shard member)`);
    /// `located` names a row's file in an error. With `shards`, each clip's shard is recorded
    /// in it.
    fn of_checked<'a>(
        checked: impl Iterator<Item = (usize, &'a ManifestRow, source::Check, Option<(u32, String)>)>,
        located: &dyn Fn(&ManifestRow) -> PathBuf,
        config: LoaderConfig,
        mut shards: Option<&mut shards::ShardSet>,
    ) -> Result<Loader, LoaderError> {
        let gpu = match config.device {
            DeviceChoice::Cpu => None,
            DeviceChoice::Gpu => Some(gpu::Gpu::new()?),
            DeviceChoice::Auto if gpu::Gpu::device_present() => {
                gpu::Gpu::new().ok().filter(|g| !g.is_software())
            }
            DeviceChoice::Auto => None,
        };
        let mut stats = Stats {
            device: gpu.as_ref().map_or_else(
                || format!("cpu ({} workers)", config.workers),
                |g| format!("gpu: {}", g.adapter_description()),
            ),
            ..Stats::default()
        };
        let mut clips = Vec::new();
        let mut extents = Vec::new();
        let mut fingerprints = Vec::new();
        for (index, row, check, member) in checked {
            let check = match check {
                Ok(check) => check,
                Err((reason, message)) => {
                    if config.on_error == OnError::Fail {
                        return Err(LoaderError::File {
                            path: located(row),
                            reason: message,
                        });
                    }
                    *stats.skipped_clips.entry(reason).or_default() += 1;
                    if stats.errors.len() < 20 {
                        stats.errors.push(format!("{}: {message}", row.path));
                    }
                    continue;
                }
            };
            if let (Some(set), Some((shard, member))) = (shards.as_deref_mut(), member) {
                set.shards[shard as usize]
                    .clips
                    .push((member, clips.len() as u32));
                set.shard_of.push(shard);
            }
            let (clip, extent) = source::clip_source(row, index, check);
            clips.push(clip);
            fingerprints.push(row.file_fingerprint.clone());
            extents.push(extent);
        }
        Ok(Loader {
            isolation: isolate::spec(&config),
            config,
            clips: Arc::new(clips),
            fingerprints,
            extents,
            gpu,
            stats,
            spare_batches: Recycler::default(),
            shards: None,
        })
    }

    pub fn config(&self) -> &LoaderConfig {
        &self.config
    }

    /// Clips that will be read (after the split filter and file checks).
    pub fn clip_count(&self) -> usize {
        self.clips.len()
    }

    /// Which device preprocesses: the GPU adapter, or the CPU path.
    pub fn device(&self) -> &str {
        &self.stats.device
    }

    pub fn gpu(&self) -> Option<&gpu::Gpu> {
        self.gpu.as_ref()
    }

    /// This rank's batches of `epoch`, without reading anything.
    pub fn plan(&self, epoch: u64) -> Vec<plan::PlannedBatch> {
        let windows = plan::windows(
            &self.extents,
            &self.config.sampling,
            self.config.seed,
            epoch,
        );
        let (windows, batching) = match &self.shards {
            None => (windows, self.config.batching),
            // In the shards' order, this rank's shards only.
            Some(set) => (
                set.order(windows, &self.config.batching, self.config.seed, epoch),
                plan::Batching {
                    shuffle: false,
                    rank: 0,
                    world_size: 1,
                    ..self.config.batching
                },
            ),
        };
        plan::batches(
            windows,
            &batching,
            self.config.sampling.clip_len,
            self.config.seed,
            epoch,
        )
    }

    /// Start reading `epoch`: an iterator of batches, prepared by background workers.
    pub fn epoch(&mut self, epoch: u64) -> Epoch<'_> {
        self.epoch_share(epoch, Share::ALL)
    }

    /// Start reading `share` of `epoch`'s batches (for several consumers of one rank's
    /// batches, e.g. PyTorch's `DataLoader` workers); each batch keeps its index in the plan.
    pub fn epoch_share(&mut self, epoch: u64, share: Share) -> Epoch<'_> {
        let planned = self.plan_share(epoch, share);
        Epoch::start(self, planned)
    }

    /// `share` of `epoch`'s batches, each with its index in the whole plan.
    pub fn plan_share(&self, epoch: u64, share: Share) -> Vec<(usize, plan::PlannedBatch)> {
        self.plan(epoch)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| share.takes(*i))
            .collect()
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Give a used batch back: its memory holds a later batch (no fresh pages per batch).
    pub fn recycle(&mut self, batch: Batch) {
        if let BatchData::Host(bytes) = batch.data {
            self.spare_batches.give(bytes);
        }
    }

    /// A handle that takes batch buffers back from any thread (see [`Loader::recycle`]).
    pub fn recycler(&self) -> Recycler {
        self.spare_batches.clone()
    }

    /// The batch's bytes in host memory (read back from the GPU when it lives there).
    pub fn to_host(&mut self, batch: &Batch) -> Result<Vec<u8>, LoaderError> {
        match &batch.data {
            BatchData::Host(bytes) => Ok(bytes.clone()),
            BatchData::Gpu(buffer) => {
                let gpu = self
                    .gpu
                    .as_ref()
                    .ok_or_else(|| LoaderError::Config("a GPU batch without a GPU".into()))?;
                let mut times = gpu::GpuTimes::default();
                let bytes = buffer.read_back(gpu, &mut times)?;
                self.stats.readback_secs += times.readback_secs;
                Ok(bytes)
            }
        }
    }
}
