//! Files as the catalog knows them: ids, kinds, probe status and the metadata read from
//! headers, and the orientation that makes a picture upright.

use serde::{Deserialize, Serialize};

use super::Ratio;

/// Row id of an item in the catalog.
pub type ItemId = i64;

/// What a file is, decided from its content (extension only when there is no content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    Image,
    Video,
    Other,
}

impl MediaKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Video => "video",
            MediaKind::Other => "other",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "image" => Some(MediaKind::Image),
            "video" => Some(MediaKind::Video),
            "other" => Some(MediaKind::Other),
            _ => None,
        }
    }
}

/// Outcome of probing a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemStatus {
    /// Probed; metadata is trustworthy.
    Ok,
    /// The file is damaged or unreadable; `error` says why.
    Error,
    /// A readable file framecull cannot use (no video stream, unknown format).
    Unsupported,
    /// In the catalog but no longer on disk.
    Missing,
}

impl ItemStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemStatus::Ok => "ok",
            ItemStatus::Error => "error",
            ItemStatus::Unsupported => "unsupported",
            ItemStatus::Missing => "missing",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ok" => Some(ItemStatus::Ok),
            "error" => Some(ItemStatus::Error),
            "unsupported" => Some(ItemStatus::Unsupported),
            "missing" => Some(ItemStatus::Missing),
            _ => None,
        }
    }

    /// Whether this status counts as a per-file problem for exit codes.
    pub fn is_problem(self) -> bool {
        matches!(self, ItemStatus::Error | ItemStatus::Unsupported)
    }
}

/// Metadata read from a file's headers. Every field is optional: formats differ
/// in what they declare, and damaged files declare less.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MediaInfo {
    /// Container or image format, FFmpeg's name for videos (`mov,mp4,m4a,3gp,3g2,mj2`),
    /// the format for images (`jpeg`, `png`, ...).
    pub container: Option<String>,
    /// Codec name (FFmpeg's, e.g. `h264`); for images the image format.
    pub codec: Option<String>,
    pub profile: Option<String>,
    pub pix_fmt: Option<String>,
    /// Coded size, before rotation or EXIF orientation.
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Clockwise rotation to apply for display, in degrees: 0, 90, 180 or 270.
    pub rotation_deg: Option<u32>,
    pub sample_aspect_ratio: Option<Ratio>,
    /// Average frame rate (frames / duration), falling back to the base rate.
    pub fps: Option<f64>,
    /// The stream's base frame rate (FFmpeg's `r_frame_rate`).
    pub fps_base: Option<f64>,
    pub time_base: Option<Ratio>,
    pub start_secs: Option<f64>,
    /// Stream duration, else container duration.
    pub duration_secs: Option<f64>,
    /// Frame count declared by the header (videos) or the number of frames (images).
    pub frame_count: Option<i64>,
    pub bit_rate: Option<i64>,
    pub has_audio: Option<bool>,
    /// Raw EXIF orientation tag (1..=8; other values are reported as found).
    pub exif_orientation: Option<u16>,
    /// The index, among the file's streams, of the video stream read: the one FFmpeg picks
    /// (`av_find_best_stream`, as `ffmpeg`, torchcodec and decord do) unless `framecull.toml`
    /// says otherwise. The analysis, the player and the loader read that stream.
    pub stream_index: Option<u32>,
    /// The colour matrix the stream declares, by FFmpeg's name (`bt709`, `smpte170m`,
    /// `bt2020nc`, ...); `None` when it declares none.
    pub color_space: Option<String>,
}

/// What probing one file produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub kind: MediaKind,
    pub status: ItemStatus,
    /// Human-readable reason when `status` is not `Ok`.
    pub error: Option<String>,
    pub info: MediaInfo,
}

impl Probe {
    pub fn ok(kind: MediaKind, info: MediaInfo) -> Self {
        Probe {
            kind,
            status: ItemStatus::Ok,
            error: None,
            info,
        }
    }

    pub fn failed(kind: MediaKind, status: ItemStatus, reason: impl Into<String>) -> Self {
        Probe {
            kind,
            status,
            error: Some(reason.into()),
            info: MediaInfo::default(),
        }
    }
}

/// An entry under the dataset root that is not taken for media: a regular file that is not
/// media (a README, labels, a blob FFmpeg does not recognise), or an entry that is not a
/// regular file at all (a broken symbolic link, a FIFO, a device, a socket). Not probed (a
/// FIFO or a device is never opened), not analysed, but counted and listed so that no entry
/// is left out without a line that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherFile {
    /// Relative to the dataset root, `/`-separated.
    pub path: String,
    pub size_bytes: u64,
    pub status: OtherStatus,
    /// Why it is not taken for media.
    pub reason: String,
}

/// What an [`OtherFile`] is: its `status` in listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OtherStatus {
    /// A regular file whose name and content are not an image or video format.
    NotMedia,
    /// Not a regular file: a broken symbolic link, a FIFO, a device or a socket.
    NotAFile,
}

impl OtherStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OtherStatus::NotMedia => "not_media",
            OtherStatus::NotAFile => "not_a_file",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "not_media" => Some(OtherStatus::NotMedia),
            "not_a_file" => Some(OtherStatus::NotAFile),
            _ => None,
        }
    }
}

/// One catalogued file, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: ItemId,
    /// Relative to the dataset root, `/`-separated.
    pub path: String,
    pub kind: MediaKind,
    pub status: ItemStatus,
    pub error: Option<String>,
    pub size_bytes: u64,
    pub mtime_ns: i64,
    /// Content fingerprint (see `media::fingerprint`), stable across renames.
    pub fingerprint: Option<String>,
    pub info: MediaInfo,
}

/// What makes a picture with EXIF orientation `orientation` (1-8) upright: clockwise quarter
/// turns, then a left-right mirror. Videos' rotations map to 1, 6, 3 and 8.
pub fn orientation_turns(orientation: u16) -> (u8, bool) {
    match orientation {
        2 => (0, true),
        3 => (2, false),
        4 => (2, true),
        5 => (1, true),
        6 => (1, false),
        7 => (3, true),
        8 => (3, false),
        _ => (0, false),
    }
}
