//! The project's settings (`framecull.toml`): limits, rules, the quality thresholds, duplicates
//! and which measures the outlier statistics read.

use serde::{Deserialize, Serialize};

use framecull_model::{Measure, MediaKind, ReadAs};

/// The project's `framecull.toml`. Every field has a default; absent limits are not checked.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub rules: Rules,
    pub quality: QualityRules,
    pub statistics: Statistics,
    pub duplicates: Duplicates,
    pub limits: Limits,
    /// How videos are read: which stream, and the matrix of one that declares none.
    pub video: ReadAs,
}

/// The largest pictures framecull decodes. Larger ones are not decoded (by deep analysis) and
/// get the `too_large` flag with both sizes, so that a decompression bomb (a small file that
/// declares a huge picture) cannot exhaust memory. Headers are still read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Pixels of one image (256 Mpx by default: 16384 x 16384, about 768 MiB as RGB).
    pub max_image_pixels: u64,
    /// Pixels of one video frame (128 Mpx by default: 16K x 8K).
    pub max_frame_pixels: u64,
    /// Address space of one analysis worker process, in MiB (4096 by default; 0: no limit).
    /// A decode that needs more ends that file with `over the ... memory limit`.
    pub max_memory_mib: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_image_pixels: 1 << 28,
            max_frame_pixels: 1 << 27,
            max_memory_mib: 4096,
        }
    }
}

impl Limits {
    /// The worker's address-space cap in bytes, if any.
    pub fn memory_bytes(&self) -> Option<u64> {
        (self.max_memory_mib > 0).then(|| self.max_memory_mib.saturating_mul(1 << 20))
    }

    /// Why a picture of this kind and size is over the limit, if it is.
    pub fn over(&self, kind: MediaKind, width: u32, height: u32) -> Option<String> {
        let (limit, key, what) = match kind {
            MediaKind::Video => (self.max_frame_pixels, "max_frame_pixels", "per video frame"),
            _ => (self.max_image_pixels, "max_image_pixels", "per image"),
        };
        let pixels = u64::from(width) * u64::from(height);
        let mpx = |p: u64| p as f64 / 1e6;
        (pixels > limit).then(|| {
            format!(
                "{width}x{height} ({:.1} Mpx) is over the limit of {:.1} Mpx {what} \
                 (limits.{key} in framecull.toml); not decoded",
                mpx(pixels),
                mpx(limit)
            )
        })
    }
}

/// What to do with duplicate groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Duplicates {
    /// "Keep the best, reject the rest" keeps the largest member by these, in order:
    /// resolution, bit_rate, size, duration.
    pub keep_best_by: Vec<crate::dups::BestBy>,
}

impl Default for Duplicates {
    fn default() -> Self {
        Duplicates {
            keep_best_by: crate::dups::DEFAULT_BEST_ORDER.to_vec(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rules {
    /// Smallest width and height (pixels, before rotation).
    pub min_width: Option<u32>,
    pub min_height: Option<u32>,
    pub max_width: Option<u32>,
    pub max_height: Option<u32>,
    /// Display aspect ratio (width / height after rotation) bounds.
    pub min_aspect: Option<f64>,
    pub max_aspect: Option<f64>,
    /// Video duration bounds, seconds.
    pub min_duration_secs: Option<f64>,
    pub max_duration_secs: Option<f64>,
    /// Video frame-rate bounds.
    pub min_fps: Option<f64>,
    pub max_fps: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QualityRules {
    /// Mean brightness (0-255) below which a picture is dark.
    pub dark_below: f64,
    /// Mean brightness above which a picture is overexposed.
    pub bright_above: f64,
    /// Luma entropy (bits) below which an image carries little information.
    pub low_entropy_below: f64,
    /// Share of black frames from which a video is flagged.
    pub black_share_above: f64,
    /// Share of frozen (repeated) frames from which a video is flagged.
    pub frozen_share_above: f64,
    /// Decode errors, as a share of decoded frames, from which the flag is an error.
    pub decode_error_share: f64,
}

impl Default for QualityRules {
    fn default() -> Self {
        QualityRules {
            dark_below: 25.0,
            bright_above: 235.0,
            low_entropy_below: 2.0,
            black_share_above: 0.5,
            frozen_share_above: 0.5,
            decode_error_share: 0.01,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Statistics {
    /// Robust z-score (in MADs, scaled to a standard deviation) beyond which a value is an
    /// outlier.
    pub max_mads: f64,
    /// Fewest items of a kind with a value before statistics are computed for it.
    pub min_items: usize,
    /// Measures to test, by name (any [`Measure`]).
    pub measures: Vec<Measure>,
}

impl Default for Statistics {
    fn default() -> Self {
        Statistics {
            max_mads: 4.0,
            min_items: 20,
            measures: vec![
                Measure::LogResolution,
                Measure::DurationSecs,
                Measure::Fps,
                Measure::BitsPerPixel,
                Measure::MotionMean,
                Measure::Brightness,
                Measure::Sharpness,
            ],
        }
    }
}
