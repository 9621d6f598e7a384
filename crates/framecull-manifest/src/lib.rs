//! Versioned manifests: the product's output. An export selects clips from the catalog
//! (decisions, clips, flags), assigns splits, and writes an immutable version:
//! `<project>/manifests/<NAME>/vNNNN.{parquet,jsonl,csv}` plus `vNNNN.json` (what shaped it).
//! The contract is docs/MANIFEST.md.

//!
//! - `select`: which rows a version holds ([`select_rows`]);
//! - `export`: writing a version ([`export`]);
//! - `versions`: reading versions back, opening a manifest by path, [`diff`];
//! - `io`: the Parquet, JSON-lines and CSV files; [`split`]: the seeded split assignment.

pub mod dali;
mod export;
pub mod frame_maps;
mod io;
pub mod layouts;
pub mod ledger;
mod select;
pub mod split;
mod versions;
pub mod webdataset;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use export::{ClipFileWriter, export, export_until, export_watched, export_with, rows_hash};
use framecull_analysis::filter::Filter;
use framecull_analysis::flags::Config;
use framecull_catalog::CatalogError;
use framecull_model::{Measure, MediaKind};
pub use io::{read_jsonl, read_parquet};
pub use select::select_rows;
pub use split::{SplitSpec, Stratify};
pub use versions::{
    ChangedClip, ClipRef, Diff, DiffReport, MovedClip, diff, diff_report, names, open_path,
    read_seek_references, read_version, versions,
};

/// Version of the row and metadata layout (docs/MANIFEST.md).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("cannot write or read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("manifest encoding failed: {0}")]
    Encode(String),
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    #[error("parquet: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[error("{0}")]
    Invalid(String),
    /// Given up on request (a signal) before the version was published: none was.
    #[error("export stopped before the version was written; nothing was published")]
    Stopped,
}

impl ManifestError {
    /// An I/O error at `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        ManifestError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One clip of a manifest. Field order is the column order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestRow {
    pub clip_id: String,
    pub path: String,
    pub file_fingerprint: String,
    pub size_bytes: i64,
    pub kind: MediaKind,
    pub start_secs: f64,
    pub end_secs: f64,
    pub start_frame: Option<i64>,
    pub end_frame: Option<i64>,
    pub start_pts: Option<i64>,
    pub end_pts: Option<i64>,
    pub time_base: Option<String>,
    pub fps: Option<f64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub rotation_deg: Option<i64>,
    /// The container's index of the video stream the clip is read from (videos).
    pub stream_index: Option<i64>,
    /// The YUV-to-RGB matrix its frames are converted with: `bt601`, `bt709` or `bt2020`
    /// (videos; the declared one, else `[video] color_matrix_guess`'s).
    pub color_matrix: Option<String>,
    /// How far the file was analysed when the version was exported: `none`, `triage` or
    /// `deep` (its measures and flags come from that level).
    pub analysis_level: Option<String>,
    pub label: Option<String>,
    pub tags: Vec<String>,
    pub split: Option<String>,
    pub group_key: String,
    pub motion: Option<f64>,
    pub brightness: Option<f64>,
    pub sharpness: Option<f64>,
    pub flags: Vec<String>,
    /// The clip's own file, in a version exported with `--materialize` (`clip_*` columns;
    /// left out of JSON lines, and of the rows hash, when empty).
    #[serde(flatten)]
    pub clip: ClipFileColumns,
    /// A video's torchcodec frame map beside the manifest (`vNNNN.frame-map.FINGERPRINT.json`),
    /// in a version exported with `--format frame-maps` (left out of JSON lines, and of the
    /// rows hash, when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_map: Option<String>,
    /// A video's picture without its letterbox or pillarbox bars, `w:h:x:y` of the coded
    /// picture (the catalog's `content_crop`; left out of JSON lines, and of the rows hash,
    /// when it has none). The loader's `crop = "content"` crops to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_crop: Option<String>,
}

/// The `clip_*` columns: a row's clip file in the version's clip folder
/// ([`VersionMeta::clip_files`]), or why it has none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClipFileColumns {
    /// Its name in the clip folder.
    #[serde(rename = "clip_file", default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(
        rename = "clip_bytes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub bytes: Option<i64>,
    /// xxh3-128 of its bytes.
    #[serde(rename = "clip_hash", default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Its content fingerprint (as `file_fingerprint`), which the loader checks.
    #[serde(
        rename = "clip_fingerprint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub fingerprint: Option<String>,
    /// Frames it holds, of them copied packet for packet, and encoded again.
    #[serde(
        rename = "clip_frames",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub frames: Option<i64>,
    #[serde(
        rename = "clip_copied_frames",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub copied_frames: Option<i64>,
    #[serde(
        rename = "clip_encoded_frames",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub encoded_frames: Option<i64>,
    /// Why every frame was encoded again, or why there is no clip file.
    #[serde(rename = "clip_note", default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ManifestRow {
    /// The row as its clip file holds it (a version exported with `--materialize`): the
    /// file's name, bytes and fingerprint, its frames from the first to the last, its time
    /// from zero; the rest as the source's. `None` when the row has no clip file.
    pub fn as_clip_file(&self) -> Option<ManifestRow> {
        let file = self.clip.file.clone()?;
        let frames = self.clip.frames?;
        Some(ManifestRow {
            path: file,
            file_fingerprint: self.clip.fingerprint.clone().unwrap_or_default(),
            size_bytes: self.clip.bytes.unwrap_or(0),
            start_secs: 0.0,
            end_secs: (self.end_secs - self.start_secs).max(0.0),
            start_frame: Some(0),
            end_frame: Some(frames),
            start_pts: None,
            end_pts: None,
            time_base: None,
            // A clip file holds one stream, its video.
            stream_index: None,
            ..self.clone()
        })
    }

    /// Where the clip lies in its file.
    pub fn bounds(&self) -> framecull_model::ClipBounds {
        framecull_model::ClipBounds {
            is_image: self.kind == MediaKind::Image,
            start_pts: self.start_pts,
            end_pts: self.end_pts,
            time_base: self
                .time_base
                .as_deref()
                .and_then(framecull_model::Ratio::parse),
            start_secs: self.start_secs,
            end_secs: self.end_secs,
            frames: match (self.start_frame, self.end_frame) {
                (Some(a), Some(b)) if a >= 0 && b > a => Some((a as usize, b as usize)),
                _ => None,
            },
        }
    }

    pub const COLUMNS: &'static [&'static str] = &[
        "clip_id",
        "path",
        "file_fingerprint",
        Measure::SizeBytes.manifest_column(),
        "kind",
        "start_secs",
        "end_secs",
        "start_frame",
        "end_frame",
        "start_pts",
        "end_pts",
        "time_base",
        Measure::Fps.manifest_column(),
        Measure::Width.manifest_column(),
        Measure::Height.manifest_column(),
        "rotation_deg",
        "stream_index",
        "color_matrix",
        "analysis_level",
        "label",
        "tags",
        "split",
        "group_key",
        Measure::MotionMean.manifest_column(),
        Measure::Brightness.manifest_column(),
        Measure::Sharpness.manifest_column(),
        "flags",
        "clip_file",
        "clip_bytes",
        "clip_hash",
        "clip_fingerprint",
        "clip_frames",
        "clip_copied_frames",
        "clip_encoded_frames",
        "clip_note",
        "frame_map",
        "content_crop",
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Parquet,
    Jsonl,
    Csv,
    /// DALI's video reader `file_list`, per split ([`dali`]).
    Dali,
    /// torchcodec's frame map of each video with a frame table ([`frame_maps`]).
    FrameMaps,
    /// Class folders of the clip files, `SPLIT/LABEL/KEY.EXT` ([`layouts`]).
    Folders,
    /// Hugging Face image and video folders of the clip files, with `metadata.jsonl`
    /// ([`layouts`]).
    Hf,
    /// WebDataset tar shards of the clip files, per split ([`webdataset`]).
    Webdataset,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Jsonl => "jsonl",
            Format::Csv => "csv",
            Format::Dali => "dali.json",
            Format::FrameMaps => "frame-maps.json",
            Format::Folders => "folders.json",
            Format::Hf => "hf.json",
            Format::Webdataset => "webdataset.json",
        }
    }
}

/// Which unreviewed files go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Include {
    /// Accepted files, and unreviewed files without error or warning flags.
    Unreviewed,
    /// Accepted files only.
    Accepted,
}

#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub name: String,
    pub formats: Vec<Format>,
    pub split: Option<SplitSpec>,
    pub split_seed: u64,
    pub include: Include,
    /// Only the files this filter matches (the window's filter, `--where`).
    pub filter: Option<Filter>,
    /// The size WebDataset shards are kept under ([`webdataset::DEFAULT_SHARD_BYTES`] when
    /// not given).
    pub shard_size: Option<u64>,
}

/// What shaped a version and what it holds: `vNNNN.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionMeta {
    pub schema_version: u32,
    pub name: String,
    pub version: u32,
    pub parent: Option<u32>,
    /// Unix seconds.
    pub created_at: i64,
    pub framecull_version: String,
    pub dataset_root: String,
    pub catalog_fingerprint: String,
    pub include: Include,
    /// The filter the files had to match, in its text form (`--where`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// The project config (rules and statistical cut-offs) the flags came from.
    pub config: Config,
    pub split: Option<SplitSpec>,
    pub split_seed: u64,
    pub counts: Counts,
    /// xxh3-128 of the rows as canonical JSON lines, ordered by clip id.
    pub rows_hash: String,
    /// Data files of this version, by format.
    pub files: BTreeMap<String, String>,
    /// xxh3-128 of each data file's bytes, by format: a damaged file is refused before its
    /// decoder sees it (versions written before this field have none, and are not checked).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub file_hashes: BTreeMap<String, String>,
    /// The seek references of its videos (`vNNNN.frames.jsonl`), when the catalog had frame
    /// tables from a deep pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_index: Option<String>,
    /// The clip files written with the version (`--materialize`): where, and how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_files: Option<ClipFiles>,
}

/// A version's clip files (`clip_files` of `vNNNN.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClipFiles {
    /// The folder that holds them (as `dataset_root` is written: a local folder's path).
    pub dir: String,
    /// Rows with a clip file, and their bytes; rows without one (each row's `clip_note` says
    /// why).
    pub files: u64,
    pub bytes: u64,
    pub missing: u64,
    /// Frames copied packet for packet, and encoded again, in all of them.
    pub copied_frames: u64,
    pub encoded_frames: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub rows: u64,
    pub files: u64,
    pub by_split: BTreeMap<String, u64>,
    pub by_kind: BTreeMap<String, u64>,
    /// Files left out, by reason.
    pub excluded: BTreeMap<String, u64>,
}

/// Folder of a manifest's versions.
pub fn manifest_dir(project: &Path, name: &str) -> PathBuf {
    project.join("manifests").join(name)
}
