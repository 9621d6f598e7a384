//! The measures of a file that the histograms, the table, the filters and the statistics
//! share: one name, label, unit and definition each.

use serde::{Deserialize, Serialize};

use super::{Item, Metrics};

/// A number known about a file (from its metadata or its deep analysis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    DurationSecs,
    Fps,
    /// Width over height as displayed (after rotation and EXIF orientation).
    Aspect,
    Width,
    Height,
    Megapixels,
    SizeBytes,
    MotionMean,
    Brightness,
    Sharpness,
}

impl Measure {
    pub const ALL: [Measure; 10] = [
        Measure::DurationSecs,
        Measure::Fps,
        Measure::Aspect,
        Measure::Width,
        Measure::Height,
        Measure::Megapixels,
        Measure::SizeBytes,
        Measure::MotionMean,
        Measure::Brightness,
        Measure::Sharpness,
    ];

    /// The column name in the items frame, `list` output and filter expressions.
    pub fn name(self) -> &'static str {
        match self {
            Measure::DurationSecs => "duration_secs",
            Measure::Fps => "fps",
            Measure::Aspect => "aspect",
            Measure::Width => "width",
            Measure::Height => "height",
            Measure::Megapixels => "megapixels",
            Measure::SizeBytes => "size_bytes",
            Measure::MotionMean => "motion_mean",
            Measure::Brightness => "brightness",
            Measure::Sharpness => "sharpness",
        }
    }

    pub fn parse(name: &str) -> Option<Measure> {
        Measure::ALL.into_iter().find(|m| m.name() == name)
    }

    /// What a person reads: a label with its unit.
    pub fn label(self) -> &'static str {
        match self {
            Measure::DurationSecs => "duration (s)",
            Measure::Fps => "frame rate",
            Measure::Aspect => "aspect ratio (display)",
            Measure::Width => "width (px)",
            Measure::Height => "height (px)",
            Measure::Megapixels => "megapixels",
            Measure::SizeBytes => "file size (bytes)",
            Measure::MotionMean => "motion",
            Measure::Brightness => "brightness",
            Measure::Sharpness => "sharpness",
        }
    }

    /// Whether its values span orders of magnitude (binned on a log scale).
    pub fn spans_decades(self) -> bool {
        matches!(
            self,
            Measure::DurationSecs
                | Measure::SizeBytes
                | Measure::MotionMean
                | Measure::Sharpness
                | Measure::Megapixels
        )
    }

    /// The value for `item`, with its deep-analysis `metrics` when it has them.
    pub fn of(self, item: &Item, metrics: Option<&Metrics>) -> Option<f64> {
        let info = &item.info;
        let size = || Some((f64::from(info.width?), f64::from(info.height?)));
        match self {
            Measure::DurationSecs => info.duration_secs,
            Measure::Fps => info.fps,
            Measure::Aspect => {
                let (w, h) = size()?;
                let turned = matches!(info.rotation_deg, Some(90 | 270))
                    || matches!(info.exif_orientation, Some(5..=8));
                let aspect = if turned { h / w } else { w / h };
                aspect.is_finite().then_some(aspect)
            }
            Measure::Width => size().map(|s| s.0),
            Measure::Height => size().map(|s| s.1),
            Measure::Megapixels => size().map(|(w, h)| w * h / 1e6),
            Measure::SizeBytes => Some(item.size_bytes as f64),
            Measure::MotionMean => metrics?.motion_mean,
            Measure::Brightness => metrics?.brightness,
            Measure::Sharpness => metrics?.sharpness,
        }
    }
}

impl std::fmt::Display for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
