//! The measures of a file that the histograms, the table, the filters and the statistics
//! share: one name, label, unit and definition each.

use serde::{Deserialize, Serialize};

use super::{AnalysisLevel, Item, Metrics, human_bytes, human_duration, human_number};

/// What [`Measure`]s read of a file's deep analysis: three numbers, where [`Metrics`] holds
/// thirty (a million of those are ~450 MB, and the window's view needs only these).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measured {
    pub motion_mean: Option<f64>,
    pub brightness: Option<f64>,
    pub sharpness: Option<f64>,
    /// The analysis these come from.
    pub level: AnalysisLevel,
}

impl From<&Metrics> for Measured {
    fn from(m: &Metrics) -> Self {
        Measured {
            motion_mean: m.motion_mean,
            brightness: m.brightness,
            sharpness: m.sharpness,
            level: m.level,
        }
    }
}

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

    /// A measure of the decoded pictures, which a triage estimates from the frames it
    /// decodes (the deep pass measures it on every frame, or a frame a second).
    pub fn estimated_by_triage(self) -> bool {
        matches!(
            self,
            Measure::MotionMean | Measure::Brightness | Measure::Sharpness
        )
    }

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

    /// A short name for people, without the unit: `duration`, `frame rate`.
    pub fn title(self) -> &'static str {
        match self {
            Measure::DurationSecs => "duration",
            Measure::Fps => "frame rate",
            Measure::Aspect => "aspect ratio",
            Measure::Width => "width",
            Measure::Height => "height",
            Measure::Megapixels => "megapixels",
            Measure::SizeBytes => "file size",
            Measure::MotionMean => "motion",
            Measure::Brightness => "brightness",
            Measure::Sharpness => "sharpness",
        }
    }

    /// A value as people read it, with its unit: `01:05.250`, `29.97 fps`, `1920 px`,
    /// `497.9 KiB`, `2.07 MP`, `1.78`.
    pub fn format(self, v: f64) -> String {
        if !v.is_finite() {
            return "-".into();
        }
        match self {
            Measure::DurationSecs => human_duration(v),
            Measure::Fps => format!("{} fps", human_number(v, 3)),
            Measure::Width | Measure::Height => format!("{} px", human_number(v, 0)),
            Measure::Megapixels => format!("{} MP", human_number(v, 2)),
            Measure::SizeBytes => human_bytes(v.max(0.0).round() as u64),
            Measure::Aspect | Measure::MotionMean => human_number(v, 2),
            Measure::Brightness => human_number(v, 1),
            Measure::Sharpness => human_number(v, 0),
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

    /// The value for `item`, with what its deep analysis measured when it has been analysed.
    pub fn of(self, item: &Item, metrics: Option<Measured>) -> Option<f64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_values_read_with_their_units() {
        for m in Measure::ALL {
            assert_eq!(Measure::parse(m.name()), Some(m));
        }
        assert_eq!(Measure::DurationSecs.format(10.0), "00:10.000");
        assert_eq!(Measure::Fps.format(30000.0 / 1001.0), "29.97 fps");
        assert_eq!(Measure::SizeBytes.format(509_868.0), "497.9 KiB");
        assert_eq!(Measure::Width.format(1920.0), "1920 px");
        assert_eq!(Measure::Aspect.format(16.0 / 9.0), "1.78");
        assert_eq!(Measure::Brightness.format(f64::NAN), "-");
    }
}
