//! Shared types used by every layer.

mod measure;

use serde::{Deserialize, Serialize};

pub use measure::Measure;

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

/// An exact rational, as FFmpeg gives it (time bases, frame rates, aspect ratios).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio {
    pub num: i32,
    pub den: i32,
}

impl Ratio {
    pub fn new(num: i32, den: i32) -> Option<Self> {
        (num != 0 && den != 0).then_some(Ratio { num, den })
    }

    pub fn as_f64(self) -> f64 {
        f64::from(self.num) / f64::from(self.den)
    }

    /// `"num/den"`, the form stored in the catalog.
    pub fn to_text(self) -> String {
        format!("{}/{}", self.num, self.den)
    }

    pub fn parse(s: &str) -> Option<Self> {
        let (n, d) = s.split_once('/')?;
        Ratio::new(n.trim().parse().ok()?, d.trim().parse().ok()?)
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
}

/// What probing one file produced.
#[derive(Debug, Clone, PartialEq)]
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
    /// Content fingerprint (see `scan::fingerprint`), stable across renames.
    pub fingerprint: Option<String>,
    pub info: MediaInfo,
}

/// One decoded frame, scaled down to a small planar RGB copy; valid during a callback.
#[derive(Debug)]
pub struct FrameView<'a> {
    /// 0-based index in presentation (output) order.
    pub index: u64,
    /// Best-effort presentation timestamp in the stream's time base.
    pub pts: Option<i64>,
    /// `pts` in seconds.
    pub time_secs: Option<f64>,
    /// Size of the decoded frame before scaling.
    pub coded_width: u32,
    pub coded_height: u32,
    /// The decoder concealed errors in this frame.
    pub corrupt: bool,
    /// The decoder marked it a keyframe.
    pub key: bool,
    /// [`content_hash`](crate::media::frames::content_hash) of the decoded picture (before
    /// scaling).
    pub content_hash: u64,
    /// The R, G and B planes, `width * height` bytes each.
    pub planes: [&'a [u8]; 3],
    /// Full-range BT.601 luma of the same pixels (`width * height` bytes), when the decoder
    /// had it at hand; else derive it from `rgb`.
    pub luma: Option<&'a [u8]>,
    pub width: usize,
    pub height: usize,
}

impl FrameView<'_> {
    /// The picture as packed RGB24.
    pub fn rgb24(&self) -> Vec<u8> {
        let [r, g, b] = self.planes;
        let mut rgb = Vec::with_capacity(self.width * self.height * 3);
        for ((&r, &g), &b) in r.iter().zip(g).zip(b).take(self.width * self.height) {
            rgb.extend_from_slice(&[r, g, b]);
        }
        rgb
    }
}

/// A hard cut: the first frame of a new shot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cut {
    pub frame: u64,
    pub time_secs: f64,
}

/// What deep analysis measured about one file. Fields that do not apply to the file's kind
/// are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Frames decoded (videos) or 1 (images that decoded).
    pub decoded_frames: u64,
    /// Failed decoder calls plus frames decoded with concealed errors.
    pub decode_errors: u64,
    /// The first decode problem, in FFmpeg's words when it gave some.
    pub first_error: Option<String>,
    /// Error-level messages from the demuxer and decoder (damaged headers, side data or
    /// metadata) that did not damage a frame.
    pub decoder_messages: u64,
    pub first_message: Option<String>,
    /// Frames the container counts but marks as repeats (no data): declared minus decoded,
    /// when the decoded frames still span the declared duration.
    pub repeat_frames: u64,
    /// The file could not be decoded at all (cannot open, damaged beyond decoding).
    pub undecodable: Option<String>,
    /// A readable format this FFmpeg build has no decoder for (HEIF/AVIF on FFmpeg 5.1).
    pub no_decoder: Option<String>,
    /// The per-file time budget ran out; metrics cover what was decoded until then.
    pub timed_out: bool,
    // Motion (videos).
    pub motion_mean: Option<f64>,
    pub motion_p95: Option<f64>,
    pub static_share: Option<f64>,
    // Picture (images; videos: mean over sampled frames).
    pub brightness: Option<f64>,
    pub brightness_p5: Option<f64>,
    pub brightness_p95: Option<f64>,
    pub sharpness: Option<f64>,
    pub entropy: Option<f64>,
    pub colorfulness: Option<f64>,
    // Integrity (videos).
    pub black_share: Option<f64>,
    pub frozen_share: Option<f64>,
    /// Time from the first to the end of the last decoded frame.
    pub decoded_duration_secs: Option<f64>,
    pub pts_backwards: u64,
    pub pts_repeats: u64,
    /// Frame intervals vary beyond timestamp rounding.
    pub vfr: Option<bool>,
    /// Coefficient of variation of the frame intervals.
    pub interval_cv: Option<f64>,
    pub resolution_changes: u64,
    /// Decoded duration far below the declared one.
    pub truncated: bool,
    /// A structural problem of an image file (missing end marker, trailing chunk cut).
    pub structure_error: Option<String>,
    /// Perceptual hash of the (upright) picture; videos: of the first sampled frame.
    pub phash: Option<u64>,
    /// xxh3-128 of the whole file, for exact duplicates.
    pub content_hash: Option<String>,
}

/// Per-item series kept beside the metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Curves {
    /// Motion per 0.5 s bucket.
    pub motion: Vec<f32>,
    pub cuts: Vec<Cut>,
    /// Perceptual hashes of one frame per second (videos), for near-duplicate sequences.
    pub frame_hashes: Vec<u64>,
    /// Times (seconds from the first frame) of frames decoded with errors, at most
    /// [`Curves::MAX_ERRORS`]: the timeline's error markers.
    #[serde(default)]
    pub error_secs: Vec<f64>,
    /// Every frame of a video as the deep pass decoded it (stored apart from the curves:
    /// [`Catalog::frame_table`](crate::catalog::Catalog::frame_table)).
    #[serde(skip)]
    pub frames: FrameTable,
}

impl Curves {
    pub const MAX_ERRORS: usize = 1000;
}

/// A video's frames as one decode from the start shows them (the deep pass): the ground
/// truth the loader checks its seeks against. Frame `i` is the `i`-th frame decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameTable {
    pub frames: Vec<FrameRecord>,
}

/// One frame of a [`FrameTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRecord {
    /// Best-effort presentation timestamp in the stream's time base.
    pub pts: Option<i64>,
    /// The decoder marked it a keyframe and it decoded without errors: a point a seek can
    /// start from, if the frame decoded after the seek has this content.
    pub clean_key: bool,
    /// It decoded with errors.
    pub damaged: bool,
    /// [`content_hash`](crate::media::frames::content_hash) of the decoded picture.
    pub hash: u64,
}

/// Where a seek into a video may start and what the frame there must look like: the clean
/// keyframes of its [`FrameTable`], exported beside a manifest (`vNNNN.frames.jsonl`, one per
/// file) for the loader to check its seeks against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeekReference {
    pub path: String,
    pub file_fingerprint: String,
    /// Frames a decode from the start shows.
    pub frames: u64,
    /// `[index, content hash]` of each clean keyframe, ascending.
    pub keyframes: Vec<(u64, u64)>,
}

impl FrameTable {
    /// The clean keyframes, as a [`SeekReference`].
    pub fn seek_reference(&self, path: &str, file_fingerprint: &str) -> SeekReference {
        SeekReference {
            path: path.to_string(),
            file_fingerprint: file_fingerprint.to_string(),
            frames: self.frames.len() as u64,
            keyframes: self
                .frames
                .iter()
                .enumerate()
                .filter(|(_, f)| f.clean_key)
                .map(|(i, f)| (i as u64, f.hash))
                .collect(),
        }
    }

    /// Bytes per frame in [`to_bytes`](Self::to_bytes).
    const RECORD_BYTES: usize = 17;

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Compact little-endian records: pts (`i64::MIN` for none), hash, flags.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.frames.len() * Self::RECORD_BYTES);
        for f in &self.frames {
            out.extend_from_slice(&f.pts.unwrap_or(i64::MIN).to_le_bytes());
            out.extend_from_slice(&f.hash.to_le_bytes());
            out.push(u8::from(f.clean_key) | (u8::from(f.damaged) << 1));
        }
        out
    }

    /// The table of [`to_bytes`](Self::to_bytes); `None` for bytes of another length.
    pub fn from_bytes(bytes: &[u8]) -> Option<FrameTable> {
        if !bytes.len().is_multiple_of(Self::RECORD_BYTES) {
            return None;
        }
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            w
        };
        let frames = bytes
            .chunks_exact(Self::RECORD_BYTES)
            .map(|r| {
                let pts = i64::from_le_bytes(word(&r[0..8]));
                FrameRecord {
                    pts: (pts != i64::MIN).then_some(pts),
                    hash: u64::from_le_bytes(word(&r[8..16])),
                    clean_key: r[16] & 1 != 0,
                    damaged: r[16] & 2 != 0,
                }
            })
            .collect();
        Some(FrameTable { frames })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The file cannot be used as is.
    Error,
    /// The file is likely to hurt training.
    Warning,
    /// Worth knowing; usually harmless.
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "error" => Some(Severity::Error),
            "warning" => Some(Severity::Warning),
            "info" => Some(Severity::Info),
            _ => None,
        }
    }
}

/// Where a flag comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagSource {
    Probe,
    Decode,
    Rule,
    Statistics,
    Duplicates,
}

impl FlagSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FlagSource::Probe => "probe",
            FlagSource::Decode => "decode",
            FlagSource::Rule => "rule",
            FlagSource::Statistics => "statistics",
            FlagSource::Duplicates => "duplicates",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "probe" => Some(FlagSource::Probe),
            "decode" => Some(FlagSource::Decode),
            "rule" => Some(FlagSource::Rule),
            "statistics" => Some(FlagSource::Statistics),
            "duplicates" => Some(FlagSource::Duplicates),
            _ => None,
        }
    }
}

/// A derived, recomputable finding about an item, with a reason a person understands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    pub code: String,
    pub severity: Severity,
    pub reason: String,
    pub source: FlagSource,
}

/// Duplicate-group membership of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DupInfo {
    /// Smallest item id of the group (exact and near members).
    pub group: ItemId,
    /// `true`: byte-identical to another member.
    pub exact: bool,
    /// A member this item duplicates.
    pub like: ItemId,
    /// Smallest item id among the byte-identical members, when exact.
    pub exact_group: Option<ItemId>,
}

/// A reviewer's decision on a file or a clip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    #[default]
    Unreviewed,
    Accepted,
    Rejected,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Unreviewed => "unreviewed",
            Decision::Accepted => "accepted",
            Decision::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "unreviewed" => Some(Decision::Unreviewed),
            "accepted" => Some(Decision::Accepted),
            "rejected" => Some(Decision::Rejected),
            _ => None,
        }
    }
}

/// Review state of a file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Review {
    pub decision: Decision,
    pub tags: Vec<String>,
    pub note: Option<String>,
}

/// How a clip was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClipOrigin {
    /// Marked by a person.
    #[default]
    Manual,
    /// A shot between scene cuts.
    Cuts,
    /// Proposed from the motion curve.
    Auto,
}

impl ClipOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            ClipOrigin::Manual => "manual",
            ClipOrigin::Cuts => "cuts",
            ClipOrigin::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "manual" => Some(ClipOrigin::Manual),
            "cuts" => Some(ClipOrigin::Cuts),
            "auto" => Some(ClipOrigin::Auto),
            _ => None,
        }
    }
}

impl std::fmt::Display for ClipOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A part of a video chosen for training: `[start, end)` in stream timestamps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clip {
    pub id: i64,
    pub item_id: ItemId,
    pub start_pts: i64,
    pub end_pts: i64,
    pub time_base: Ratio,
    pub start_secs: f64,
    pub end_secs: f64,
    pub start_frame: Option<i64>,
    pub end_frame: Option<i64>,
    pub label: Option<String>,
    pub origin: ClipOrigin,
    pub decision: Decision,
}

/// A video's frame timestamps, for frame-exact boundaries: frame `i` is shown from `pts[i]`
/// until `pts[i + 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameTimeline {
    pub pts: Vec<i64>,
    pub time_base: Ratio,
}

impl FrameTimeline {
    pub fn secs(&self, pts: i64) -> f64 {
        pts as f64 * self.time_base.as_f64()
    }

    /// Timestamp where frame `i` starts; `i == len` is the end of the last frame.
    pub fn pts_at(&self, i: usize) -> i64 {
        match self.pts.get(i) {
            Some(p) => *p,
            None => {
                let n = self.pts.len();
                let last = self.pts[n - 1];
                let step = if n > 1 { last - self.pts[n - 2] } else { 1 };
                last + step.max(1)
            }
        }
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.pts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pts.is_empty()
    }

    /// The frame shown at `t` seconds (the last one starting at or before it; 0 before the
    /// first).
    pub fn frame_at_secs(&self, t: f64) -> usize {
        let eps = 1e-9;
        self.pts
            .partition_point(|&p| self.secs(p) <= t + eps)
            .saturating_sub(1)
    }

    /// The first frame starting at or after `t` seconds (`len` past the last): the exclusive
    /// end of a span that ends at `t`.
    pub fn end_frame_at_secs(&self, t: f64) -> usize {
        let eps = 1e-9;
        self.pts.partition_point(|&p| self.secs(p) < t - eps)
    }

    /// Frames `[start, end)` of the span from `a` to `b` seconds: from the frame shown at `a`
    /// to the first frame at or after `b`.
    pub fn frames_between_secs(&self, a: f64, b: f64) -> (usize, usize) {
        (self.frame_at_secs(a), self.end_frame_at_secs(b))
    }

    /// Frame index for `f120` or seconds. A start is the frame shown at that time; an end
    /// is the first frame at or after it (exclusive bound).
    pub fn index_at(&self, spec: &str, end: bool) -> Result<usize, String> {
        if let Some(f) = spec.strip_prefix('f') {
            let i: usize = f
                .trim_start_matches(':')
                .parse()
                .map_err(|_| format!("{spec:?} is not a frame like f120"))?;
            if i > self.pts.len() {
                return Err(format!(
                    "frame {i} is past the last frame ({})",
                    self.pts.len()
                ));
            }
            return Ok(i);
        }
        let t: f64 = spec
            .parse()
            .map_err(|_| format!("{spec:?} is neither seconds nor a frame like f120"))?;
        Ok(if end {
            self.end_frame_at_secs(t)
        } else {
            self.frame_at_secs(t)
        })
    }

    pub fn clip(
        &self,
        item: ItemId,
        s: usize,
        e: usize,
        label: Option<String>,
        origin: ClipOrigin,
    ) -> Clip {
        let (sp, ep) = (self.pts_at(s), self.pts_at(e));
        Clip {
            id: 0,
            item_id: item,
            start_pts: sp,
            end_pts: ep,
            time_base: self.time_base,
            start_secs: self.secs(sp),
            end_secs: self.secs(ep),
            start_frame: Some(s as i64),
            end_frame: Some(e as i64),
            label,
            origin,
            decision: Decision::Unreviewed,
        }
    }
}

/// One change a person makes, with what it replaced, so it can be undone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
pub enum Edit {
    Decision {
        item: ItemId,
        before: Decision,
        after: Decision,
    },
    Tags {
        item: ItemId,
        before: Vec<String>,
        after: Vec<String>,
    },
    Note {
        item: ItemId,
        before: Option<String>,
        after: Option<String>,
    },
    AddClip {
        clip: Clip,
    },
    RemoveClip {
        clip: Clip,
    },
}

impl Edit {
    /// The edit that undoes this one.
    pub fn inverse(&self) -> Edit {
        match self {
            Edit::Decision {
                item,
                before,
                after,
            } => Edit::Decision {
                item: *item,
                before: *after,
                after: *before,
            },
            Edit::Tags {
                item,
                before,
                after,
            } => Edit::Tags {
                item: *item,
                before: after.clone(),
                after: before.clone(),
            },
            Edit::Note {
                item,
                before,
                after,
            } => Edit::Note {
                item: *item,
                before: after.clone(),
                after: before.clone(),
            },
            Edit::AddClip { clip } => Edit::RemoveClip { clip: clip.clone() },
            Edit::RemoveClip { clip } => Edit::AddClip { clip: clip.clone() },
        }
    }
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

/// `1.5 MiB`: sizes for people.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
