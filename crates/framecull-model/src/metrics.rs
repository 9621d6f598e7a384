//! What analysis finds about a file: metrics, per-item curves, flags and duplicate groups.

use serde::{Deserialize, Serialize};

use super::{FrameTable, ItemId};

/// A hard cut: the first frame of a new shot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cut {
    pub frame: u64,
    pub time_secs: f64,
}

/// How far a file has been analysed. A file is never made shallower: a triage leaves a deep
/// analysis in place.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum AnalysisLevel {
    /// Not analysed: what the probe read of the headers only.
    None,
    /// The container's index and every packet read, and the GOPs where damage shows or hides
    /// decoded (videos): the integrity checks that need no more. A picture's triage is its deep analysis.
    Triage,
    /// Every frame decoded and measured. The level of a [`Metrics`] unless it says otherwise.
    #[default]
    Deep,
}

impl AnalysisLevel {
    pub const ALL: [AnalysisLevel; 3] = [
        AnalysisLevel::None,
        AnalysisLevel::Triage,
        AnalysisLevel::Deep,
    ];

    /// Its name in the catalog, listings, manifests and filters: `none`, `triage`, `deep`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnalysisLevel::None => "none",
            AnalysisLevel::Triage => "triage",
            AnalysisLevel::Deep => "deep",
        }
    }

    pub fn parse(name: &str) -> Option<AnalysisLevel> {
        AnalysisLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

/// What analysis measured about one file: every frame decoded (deep), or, for a video's
/// triage, its packets read. Fields that do not apply to the file's kind, or that the level
/// does not measure, are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// How these were measured.
    #[serde(default)]
    pub level: AnalysisLevel,
    /// Frames decoded (videos) or 1 (images that decoded); at the triage level, the video
    /// stream's packets read (one per frame in the containers that carry frames).
    pub decoded_frames: u64,
    /// Failed decoder calls plus frames decoded with concealed errors; at the triage level,
    /// packets the demuxer marks corrupt, plus one when reading stopped on an error.
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
    /// Frames the container counts that its edit list discards: those before the first shown
    /// frame of a file cut without re-encoding, decoded for the frames after them and shown
    /// never. Not repeats, not missing.
    #[serde(default)]
    pub discarded_frames: u64,
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
    /// Time from the first to the end of the last decoded frame (triage: of the packets).
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
    /// What a triage saw that may be damage, without proof (a run of zero bytes in a packet
    /// whose GOP was not decoded or decoded clean, a jump in the timestamps): the deep pass
    /// decides.
    #[serde(default)]
    pub suspect: Option<String>,
    /// A structural problem of an image file (missing end marker, trailing chunk cut).
    pub structure_error: Option<String>,
    /// Perceptual hash of the (upright) picture; videos: of the first sampled frame.
    pub phash: Option<u64>,
    /// xxh3-128 of the whole file, for exact duplicates.
    pub content_hash: Option<String>,
    /// A video's picture without its letterbox or pillarbox bars, when it has bars
    /// (`analysis::bars`).
    #[serde(default)]
    pub content_crop: Option<Crop>,
    /// How a video's two fields sit in time, measured from the combing of frames tested in
    /// runs of consecutive frames (`analysis::fields`): top or bottom field first where the
    /// picture is interlaced, progressive where frames in motion show no combing; none where
    /// no frame told (still or untested).
    #[serde(default)]
    pub field_order: Option<FieldOrder>,
    /// The field order the tested frames declare (the decoder's interlaced and
    /// top-field-first flags), by majority.
    #[serde(default)]
    pub declared_field_order: Option<FieldOrder>,
    /// Frames tested for interlacing, and what each showed as FFmpeg's `idet` tells a frame
    /// alone: combed top field first, bottom field first, progressive (the rest undetermined).
    #[serde(default)]
    pub fields_tested: u64,
    #[serde(default)]
    pub tff_frames: u64,
    #[serde(default)]
    pub bff_frames: u64,
    #[serde(default)]
    pub progressive_frames: u64,
    /// Tested frames one of whose fields changed over 3 times less than the other since the
    /// previous frame (a field repeated, as telecine repeats them).
    #[serde(default)]
    pub repeated_fields: u64,
}

/// How the two fields of a frame sit in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldOrder {
    /// Both fields from one instant.
    Progressive,
    /// Interlaced, the top field (even lines) first.
    Tff,
    /// Interlaced, the bottom field (odd lines) first.
    Bff,
}

impl FieldOrder {
    pub const ALL: [FieldOrder; 3] = [FieldOrder::Progressive, FieldOrder::Tff, FieldOrder::Bff];

    /// Its name in the catalog and listings: `progressive`, `tff`, `bff` (FFmpeg's words).
    pub fn as_str(self) -> &'static str {
        match self {
            FieldOrder::Progressive => "progressive",
            FieldOrder::Tff => "tff",
            FieldOrder::Bff => "bff",
        }
    }

    pub fn parse(name: &str) -> Option<FieldOrder> {
        FieldOrder::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// In words: `top field first`, `bottom field first`, `progressive`.
    pub fn words(self) -> &'static str {
        match self {
            FieldOrder::Progressive => "progressive",
            FieldOrder::Tff => "top field first",
            FieldOrder::Bff => "bottom field first",
        }
    }

    pub fn interlaced(self) -> bool {
        self != FieldOrder::Progressive
    }
}

/// A rectangle of a video's coded picture (before rotation), in pixels: the picture's content
/// without its letterbox or pillarbox bars. Written as FFmpeg's `crop` filter takes it,
/// `width:height:x:y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Crop {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

impl Crop {
    /// `width:height:x:y`.
    pub fn parse(text: &str) -> Option<Crop> {
        let mut parts = text.split(':').map(|p| p.trim().parse::<u32>().ok());
        let (width, height, x, y) = (
            parts.next()??,
            parts.next()??,
            parts.next()??,
            parts.next()??,
        );
        (parts.next().is_none() && width > 0 && height > 0).then_some(Crop {
            x,
            y,
            width,
            height,
        })
    }
}

impl std::fmt::Display for Crop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}:{}", self.width, self.height, self.x, self.y)
    }
}

impl Serialize for Crop {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Crop {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Crop, D::Error> {
        let text = String::deserialize(d)?;
        Crop::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a crop (w:h:x:y): {text}")))
    }
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
    /// `framecull_catalog::Catalog::frame_table`).
    #[serde(skip)]
    pub frames: FrameTable,
}

impl Curves {
    pub const MAX_ERRORS: usize = 1000;
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
    /// A video's packets, read without decoding ([`AnalysisLevel::Triage`]).
    Triage,
    Rule,
    Statistics,
    Duplicates,
}

impl FlagSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FlagSource::Probe => "probe",
            FlagSource::Decode => "decode",
            FlagSource::Triage => "triage",
            FlagSource::Rule => "rule",
            FlagSource::Statistics => "statistics",
            FlagSource::Duplicates => "duplicates",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "probe" => Some(FlagSource::Probe),
            "decode" => Some(FlagSource::Decode),
            "triage" => Some(FlagSource::Triage),
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
