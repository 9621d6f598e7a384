//! The measures of a file that the histograms, the table, the filters, the statistics and the
//! manifests share, defined once: name, title, unit, formatting, where the catalog and the
//! manifest keep it, and how its outliers are found. A new measure is its computation in
//! [`Measure::of`] plus one entry in [`Measure::spec`].

use serde::{Deserialize, Serialize};

use super::{AnalysisLevel, Item, MediaKind, Metrics, human_bytes, human_duration, human_number};

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

/// The enum of measures and [`Measure::ALL`], from one list.
macro_rules! measures {
    ($($measure:ident),* $(,)?) => {
        /// A number known about a file (from its metadata or its analysis). Serialises as its
        /// [`Measure::name`].
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum Measure {
            $($measure),*
        }

        impl Measure {
            /// Every measure, in the order the window offers them.
            pub const ALL: [Measure; [$(Measure::$measure),*].len()] = [$(Measure::$measure),*];
        }
    };
}

measures!(
    DurationSecs,
    Fps,
    Aspect,
    Width,
    Height,
    Megapixels,
    SizeBytes,
    MotionMean,
    Brightness,
    Sharpness,
    LogResolution,
    BitsPerPixel,
);

/// Where the catalog keeps a measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// In the `items` table (from the scan), in the column of its name.
    Items,
    /// In the `metrics` table (from an analysis), in the column of its name.
    Metrics,
    /// Computed from other columns when read.
    Derived,
}

/// How the statistics test a measure for outliers (`statistics.measures`), and the words of
/// the flag's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutlierTest {
    /// Tested on log10(1 + x) (a heavy-tailed measure), reported as x.
    pub log: bool,
    /// Only videos have it for this test (an animated picture's duration is not footage's).
    pub videos_only: bool,
    /// The measure in the reason: `duration (s)`.
    pub label: &'static str,
    /// What a low or a high value usually means: ` (static clip)`.
    pub low_hint: &'static str,
    pub high_hint: &'static str,
}

/// What a measure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasureSpec {
    /// The column name in the items frame, `list` output, filter expressions, settings and
    /// the catalog (where [`MeasureSpec::stored`] is not derived).
    pub name: &'static str,
    /// A short name for people, without the unit: `duration`, `frame rate`.
    pub title: &'static str,
    /// Its unit (`s`, `fps`, `px`), empty for a ratio or a score.
    pub unit: &'static str,
    pub stored: Stored,
    /// Its column in manifests, where a manifest row carries it.
    pub manifest: Option<&'static str>,
    /// Whether its values span orders of magnitude (binned on a log scale).
    pub spans_decades: bool,
    /// A measure of the decoded pictures, which a triage estimates from the frames it
    /// decodes (the deep pass measures it on every frame, or a frame a second).
    pub estimated_by_triage: bool,
    pub outliers: OutlierTest,
}

const fn outliers(
    log: bool,
    videos_only: bool,
    label: &'static str,
    low_hint: &'static str,
    high_hint: &'static str,
) -> OutlierTest {
    OutlierTest {
        log,
        videos_only,
        label,
        low_hint,
        high_hint,
    }
}

#[allow(clippy::too_many_arguments)]
const fn spec(
    name: &'static str,
    title: &'static str,
    unit: &'static str,
    stored: Stored,
    manifest: Option<&'static str>,
    spans_decades: bool,
    estimated_by_triage: bool,
    outliers: OutlierTest,
) -> MeasureSpec {
    MeasureSpec {
        name,
        title,
        unit,
        stored,
        manifest,
        spans_decades,
        estimated_by_triage,
        outliers,
    }
}

impl Measure {
    /// Everything about the measure but its value. The registry itself: one arm per measure
    /// with its name, title, unit, where it is stored and what reads it (manifest column,
    /// log scale, triage estimate, outlier test), each defined here once. Long because it
    /// is the table, not an algorithm.
    pub const fn spec(self) -> MeasureSpec {
        use Stored::{Derived, Items, Metrics};
        match self {
            Measure::DurationSecs => spec(
                "duration_secs",
                "duration",
                "s",
                Items,
                None,
                true,
                false,
                outliers(
                    true,
                    true,
                    "duration (s)",
                    " (unusually short)",
                    " (unusually long)",
                ),
            ),
            Measure::Fps => spec(
                "fps",
                "frame rate",
                "fps",
                Items,
                Some("fps"),
                false,
                false,
                outliers(
                    false,
                    true,
                    "frame rate",
                    " (unusually low frame rate)",
                    " (unusually high frame rate)",
                ),
            ),
            Measure::Aspect => spec(
                "aspect",
                "aspect ratio",
                "",
                Derived,
                None,
                false,
                false,
                outliers(
                    false,
                    false,
                    "aspect ratio",
                    " (unusually tall)",
                    " (unusually wide)",
                ),
            ),
            Measure::Width => spec(
                "width",
                "width",
                "px",
                Items,
                Some("width"),
                false,
                false,
                outliers(
                    false,
                    false,
                    "width (px)",
                    " (unusually narrow)",
                    " (unusually wide)",
                ),
            ),
            Measure::Height => spec(
                "height",
                "height",
                "px",
                Items,
                Some("height"),
                false,
                false,
                outliers(
                    false,
                    false,
                    "height (px)",
                    " (unusually short)",
                    " (unusually tall)",
                ),
            ),
            Measure::Megapixels => spec(
                "megapixels",
                "megapixels",
                "MP",
                Derived,
                None,
                true,
                false,
                outliers(
                    true,
                    false,
                    "megapixels",
                    " (unusually small)",
                    " (unusually large)",
                ),
            ),
            Measure::SizeBytes => spec(
                "size_bytes",
                "file size",
                "B",
                Items,
                Some("size_bytes"),
                true,
                false,
                outliers(
                    true,
                    false,
                    "file size (B)",
                    " (unusually small)",
                    " (unusually large)",
                ),
            ),
            Measure::MotionMean => spec(
                "motion_mean",
                "motion",
                "",
                Metrics,
                Some("motion"),
                true,
                true,
                outliers(
                    true,
                    false,
                    "motion",
                    " (static clip)",
                    " (very fast motion or shaky camera)",
                ),
            ),
            Measure::Brightness => spec(
                "brightness",
                "brightness",
                "",
                Metrics,
                Some("brightness"),
                false,
                true,
                outliers(
                    false,
                    false,
                    "brightness",
                    " (dark)",
                    " (bright or washed out)",
                ),
            ),
            Measure::Sharpness => spec(
                "sharpness",
                "sharpness",
                "",
                Metrics,
                Some("sharpness"),
                true,
                true,
                outliers(
                    true,
                    false,
                    "sharpness",
                    " (blurry)",
                    " (noisy or over-sharpened)",
                ),
            ),
            Measure::LogResolution => spec(
                "log_resolution",
                "resolution",
                "log2 px",
                Derived,
                None,
                false,
                false,
                outliers(
                    false,
                    false,
                    "resolution (log2 pixels)",
                    " (unusually small)",
                    " (unusually large)",
                ),
            ),
            Measure::BitsPerPixel => spec(
                "bits_per_pixel",
                "bits per pixel",
                "bit/px",
                Derived,
                None,
                true,
                false,
                outliers(
                    true,
                    true,
                    "bits per pixel",
                    " (heavily compressed)",
                    " (unusually high bit rate)",
                ),
            ),
        }
    }

    /// A measure of the decoded pictures, which a triage estimates from the frames it
    /// decodes (the deep pass measures it on every frame, or a frame a second).
    pub const fn estimated_by_triage(self) -> bool {
        self.spec().estimated_by_triage
    }

    /// The column name in the items frame, `list` output, filter expressions and settings.
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// Its column in manifests; panics (at compile time in a constant) for a measure that
    /// manifests do not carry.
    pub const fn manifest_column(self) -> &'static str {
        match self.spec().manifest {
            Some(column) => column,
            None => panic!("a measure that manifests do not carry"),
        }
    }

    pub fn parse(name: &str) -> Option<Measure> {
        Measure::ALL.into_iter().find(|m| m.name() == name)
    }

    /// A short name for people, without the unit: `duration`, `frame rate`.
    pub const fn title(self) -> &'static str {
        self.spec().title
    }

    /// A value as people read it, with its unit: `01:05.250`, `29.97 fps`, `1920 px`,
    /// `497.9 KiB`, `2.07 MP`, `1.78`.
    pub fn format(self, v: f64) -> String {
        if !v.is_finite() {
            return "-".into();
        }
        let unit = self.spec().unit;
        match self {
            Measure::DurationSecs => human_duration(v),
            Measure::SizeBytes => human_bytes(v.max(0.0).round() as u64),
            Measure::Fps | Measure::BitsPerPixel => format!("{} {unit}", human_number(v, 3)),
            Measure::Width | Measure::Height => format!("{} {unit}", human_number(v, 0)),
            Measure::Megapixels => format!("{} {unit}", human_number(v, 2)),
            Measure::LogResolution => format!("{} {unit}", human_number(v, 1)),
            Measure::Aspect | Measure::MotionMean => human_number(v, 2),
            Measure::Brightness => human_number(v, 1),
            Measure::Sharpness => human_number(v, 0),
        }
    }

    /// Whether its values span orders of magnitude (binned on a log scale).
    pub const fn spans_decades(self) -> bool {
        self.spec().spans_decades
    }

    /// The value for `item`, with what its analysis measured when it has been analysed.
    pub fn of(self, item: &Item, metrics: Option<Measured>) -> Option<f64> {
        let info = &item.info;
        let size = || Some((f64::from(info.width?), f64::from(info.height?)));
        let pixels = || size().map(|(w, h)| w * h).filter(|p| *p > 0.0);
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
            Measure::LogResolution => pixels().map(f64::log2),
            Measure::BitsPerPixel => {
                let per_sec = pixels()? * info.fps?;
                let rate = info.bit_rate? as f64;
                (item.kind == MediaKind::Video && per_sec > 0.0).then(|| rate / per_sec)
            }
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
    fn names_parse_back_serialise_as_themselves_and_values_read_with_their_units() {
        let mut names: Vec<&str> = Measure::ALL.iter().map(|m| m.name()).collect();
        for m in Measure::ALL {
            assert_eq!(Measure::parse(m.name()), Some(m));
            #[derive(Serialize, Deserialize)]
            struct Setting {
                m: Measure,
            }
            let text = toml::to_string(&Setting { m }).unwrap();
            assert_eq!(text.trim(), format!("m = \"{}\"", m.name()));
            assert_eq!(toml::from_str::<Setting>(&text).unwrap().m, m);
            assert!(!m.title().is_empty() && !m.spec().outliers.label.is_empty());
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Measure::ALL.len(), "two measures share a name");
        assert_eq!(Measure::DurationSecs.format(10.0), "00:10.000");
        assert_eq!(Measure::Fps.format(30000.0 / 1001.0), "29.97 fps");
        assert_eq!(Measure::SizeBytes.format(509_868.0), "497.9 KiB");
        assert_eq!(Measure::Width.format(1920.0), "1920 px");
        assert_eq!(Measure::Aspect.format(16.0 / 9.0), "1.78");
        assert_eq!(Measure::BitsPerPixel.format(0.0812), "0.081 bit/px");
        assert_eq!(Measure::Brightness.format(f64::NAN), "-");
        assert_eq!(Measure::MotionMean.manifest_column(), "motion");
    }
}
