//! The documented fields of one catalogued file (`framecull list --format jsonl|csv`,
//! docs/CLI.md; the Python package's `Catalog.items()`): the item, its analysis, flags and
//! review, joined.

use std::collections::HashMap;

use serde::Serialize;

use super::{Catalog, Result};
use framecull_model::{
    AnalysisLevel, Cut, DupInfo, Flag, Item, ItemId, Measure, Metrics, OtherFile, Review,
};

/// The documented fields of `list --format jsonl|csv` (docs/CLI.md), in order.
#[derive(Serialize, Default)]
pub struct Row<'a> {
    pub path: &'a str,
    pub kind: &'static str,
    pub status: &'static str,
    pub error: Option<&'a str>,
    pub container: Option<&'a str>,
    pub codec: Option<&'a str>,
    pub profile: Option<&'a str>,
    pub pix_fmt: Option<&'a str>,
    pub stream_index: Option<u32>,
    pub color_space: Option<&'a str>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub rotation_deg: Option<u32>,
    pub sample_aspect_ratio: Option<String>,
    pub fps: Option<f64>,
    pub fps_base: Option<f64>,
    pub time_base: Option<String>,
    pub duration_secs: Option<f64>,
    pub start_secs: Option<f64>,
    pub frame_count: Option<i64>,
    pub bit_rate: Option<i64>,
    pub size_bytes: u64,
    pub has_audio: Option<bool>,
    pub exif_orientation: Option<u16>,
    pub fingerprint: Option<&'a str>,
    pub motion_mean: Option<f64>,
    pub motion_p95: Option<f64>,
    pub cuts_secs: Vec<f64>,
    pub decode_errors: Option<u64>,
    pub decoded_frames: Option<u64>,
    /// `none`, `triage` or `deep` (files that are not media: none given).
    pub analysis_level: Option<&'static str>,
    /// The fields of this row a triage estimated from the frames it decoded (empty at the
    /// other levels): [`TRIAGE_ESTIMATES`] that the row has.
    pub estimated: Vec<&'static str>,
    pub brightness: Option<f64>,
    pub sharpness: Option<f64>,
    pub phash: Option<String>,
    /// A video's picture without its letterbox or pillarbox bars, `w:h:x:y` (FFmpeg's
    /// `crop`); null where it has none.
    pub content_crop: Option<String>,
    /// A video's field order as its frames show it: `tff` or `bff` (interlaced),
    /// `progressive`; null where no frame told, or not analysed deeply.
    pub field_order: Option<&'static str>,
    pub dup_group: Option<ItemId>,
    pub dup_exact_group: Option<ItemId>,
    pub flags: Vec<FlagOut<'a>>,
    pub decision: &'static str,
    pub tags: Vec<&'a str>,
    pub note: Option<&'a str>,
    /// The file's label.
    pub label: Option<&'a str>,
    /// The distinct labels of the file's clips, sorted.
    pub clip_labels: Vec<&'a str>,
}

/// The fields of a `list` row that a triage estimates (docs/ANALYSIS.md): the picture and
/// motion measures of the frames it decodes, the perceptual hash of its first keyframe, and
/// the bars of its keyframes.
pub const TRIAGE_ESTIMATES: [&str; 6] = [
    Measure::MotionMean.name(),
    "motion_p95",
    Measure::Brightness.name(),
    Measure::Sharpness.name(),
    "phash",
    "content_crop",
];

/// Those of [`TRIAGE_ESTIMATES`] a triage's metrics `m` hold.
fn triage_estimates(m: &Metrics) -> Vec<&'static str> {
    let has = [
        m.motion_mean.is_some(),
        m.motion_p95.is_some(),
        m.brightness.is_some(),
        m.sharpness.is_some(),
        m.phash.is_some(),
        m.content_crop.is_some(),
    ];
    TRIAGE_ESTIMATES
        .into_iter()
        .zip(has)
        .filter_map(|(name, has)| has.then_some(name))
        .collect()
}

#[derive(Serialize)]
pub struct FlagOut<'a> {
    pub code: &'a str,
    pub severity: &'static str,
    pub reason: &'a str,
    pub source: &'static str,
}

/// Analysis results joined to items for listing.
#[derive(Default)]
pub struct Analysis {
    /// By ascending item id ([`Catalog::metrics_by_id`]; [`by_item`](super::by_item) pairs them with the
    /// items): a hash map of a million metrics took 40 % of a listing's time to build.
    pub metrics: Vec<(ItemId, Metrics)>,
    pub cuts: HashMap<ItemId, Vec<Cut>>,
    pub dups: HashMap<ItemId, DupInfo>,
    pub flags: HashMap<ItemId, Vec<Flag>>,
    pub reviews: HashMap<ItemId, Review>,
    /// The labels of each file's clips ([`Catalog::clip_labels`]).
    pub clip_labels: HashMap<ItemId, Vec<String>>,
}

impl Analysis {
    pub fn load(catalog: &Catalog) -> Result<Self> {
        Ok(Analysis {
            metrics: catalog.metrics_by_id()?,
            cuts: catalog.all_cuts()?,
            dups: catalog.all_dups()?,
            flags: catalog.all_flags()?,
            reviews: catalog.all_reviews()?,
            clip_labels: catalog.clip_labels()?,
        })
    }
}

impl<'a> Row<'a> {
    /// An entry that is not media: kind `other`, status `not_media` (a regular file) or
    /// `not_a_file` (a broken link, a FIFO, a device), the reason as its error.
    pub fn other(file: &'a OtherFile) -> Self {
        Row {
            path: &file.path,
            kind: "other",
            status: file.status.as_str(),
            error: Some(&file.reason),
            size_bytes: file.size_bytes,
            decision: "unreviewed",
            ..Row::default()
        }
    }

    /// The row of `item`, with its metrics `m` (from [`Analysis::metrics`]).
    pub fn from_item(item: &'a Item, m: Option<&'a Metrics>, a: &'a Analysis) -> Self {
        let i = &item.info;
        let dup = a.dups.get(&item.id);
        let review = a.reviews.get(&item.id);
        let deep = m.filter(|m| m.level == AnalysisLevel::Deep);
        Row {
            path: &item.path,
            kind: item.kind.as_str(),
            status: item.status.as_str(),
            error: item.error.as_deref(),
            container: i.container.as_deref(),
            codec: i.codec.as_deref(),
            profile: i.profile.as_deref(),
            pix_fmt: i.pix_fmt.as_deref(),
            stream_index: i.stream_index,
            color_space: i.color_space.as_deref(),
            width: i.width,
            height: i.height,
            rotation_deg: i.rotation_deg,
            sample_aspect_ratio: i.sample_aspect_ratio.map(|r| r.to_text()),
            fps: i.fps,
            fps_base: i.fps_base,
            time_base: i.time_base.map(|r| r.to_text()),
            duration_secs: i.duration_secs,
            start_secs: i.start_secs,
            frame_count: i.frame_count,
            bit_rate: i.bit_rate,
            size_bytes: item.size_bytes,
            has_audio: i.has_audio,
            exif_orientation: i.exif_orientation,
            fingerprint: item.fingerprint.as_deref(),
            motion_mean: m.and_then(|m| m.motion_mean),
            motion_p95: m.and_then(|m| m.motion_p95),
            cuts_secs: a
                .cuts
                .get(&item.id)
                .map(|c| c.iter().map(|c| c.time_secs).collect())
                .unwrap_or_default(),
            // A triage decodes a few GOPs only: its counts are in its flags' reasons.
            decode_errors: deep.map(|m| m.decode_errors),
            decoded_frames: deep.map(|m| m.decoded_frames),
            analysis_level: Some(m.map_or(AnalysisLevel::None, |m| m.level).as_str()),
            estimated: m
                .filter(|m| m.level == AnalysisLevel::Triage)
                .map(triage_estimates)
                .unwrap_or_default(),
            brightness: m.and_then(|m| m.brightness),
            sharpness: m.and_then(|m| m.sharpness),
            phash: m.and_then(|m| m.phash).map(|h| format!("{h:016x}")),
            content_crop: m.and_then(|m| m.content_crop).map(|c| c.to_string()),
            field_order: m.and_then(|m| m.field_order).map(|o| o.as_str()),
            dup_group: dup.map(|d| d.group),
            dup_exact_group: dup.and_then(|d| d.exact_group),
            flags: a
                .flags
                .get(&item.id)
                .into_iter()
                .flatten()
                .map(|f| FlagOut {
                    code: &f.code,
                    severity: f.severity.as_str(),
                    reason: &f.reason,
                    source: f.source.as_str(),
                })
                .collect(),
            decision: review.map_or("unreviewed", |r| r.decision.as_str()),
            tags: review
                .map(|r| r.tags.iter().map(String::as_str).collect())
                .unwrap_or_default(),
            note: review.and_then(|r| r.note.as_deref()),
            label: review.and_then(|r| r.label.as_deref()),
            clip_labels: a
                .clip_labels
                .get(&item.id)
                .map(|l| l.iter().map(String::as_str).collect())
                .unwrap_or_default(),
        }
    }
}
