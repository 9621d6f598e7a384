//! Motion magnitude from consecutive frames.
//!
//! Method (see docs/ANALYSIS.md): each frame is reduced to a 64-pixel-wide grey copy by area
//! averaging (which averages sensor noise away), standardised to zero mean and a fixed
//! contrast (which removes global flicker and exposure changes, affine in luma), and compared
//! with the previous frame. Per pixel, differences at or below a noise floor count as zero
//! (sensor noise and codec artefacts of flicker stay below it; moving edges and textures far
//! exceed it); the mean over all pixels is the frame's motion. The value is rescaled to a 1/30 s interval so clips at different frame rates
//! compare.
//!
//! Unit: mean absolute change of standardised luma (scaled to a standard deviation of 50
//! levels), per 1/30 s.
//! A static camera scores < 0.2; walking people in a street scene score about 1-5; a fast pan
//! over texture scores 10 or more.

use super::image::{Gray, percentile};

/// Width of the grey copy motion is measured on.
pub const MOTION_WIDTH: usize = 64;
/// Each frame's luma is rescaled to this standard deviation before comparing.
pub const NORMALISED_STD: f64 = 50.0;
/// Frames flatter than this are not stretched further (a flat frame has no contrast to keep).
const MIN_STD: f64 = 8.0;
/// Per-pixel differences at or below this (in standardised levels) are noise.
pub const NOISE_FLOOR: f64 = 8.0;
/// Frames below this motion count as static.
pub const STATIC_BELOW: f64 = 0.25;
/// Width of one curve bucket in seconds.
pub const BUCKET_SECS: f64 = 0.5;

#[derive(Debug, Default)]
pub struct MotionMeter {
    previous: Option<(Vec<f64>, f64)>,
    /// (time in seconds, motion) per frame after the first.
    samples: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct MotionSummary {
    pub mean: f64,
    pub p95: f64,
    /// Share of the time (of frames) below [`STATIC_BELOW`].
    pub static_share: f64,
    /// Mean motion per [`BUCKET_SECS`] bucket, from the first frame's time.
    pub curve: Vec<f32>,
}

/// Grey copy for motion: area-averaged to [`MOTION_WIDTH`] wide, keeping the aspect ratio.
pub fn motion_gray(gray: &Gray) -> Gray {
    let w = MOTION_WIDTH.min(gray.width).max(1);
    let h = ((gray.height as f64 * w as f64 / gray.width.max(1) as f64).round() as usize).max(1);
    gray.resize_area(w, h)
}

impl MotionMeter {
    /// Add a frame (its motion grey copy) shown at `time_secs`; returns its motion value.
    pub fn push(&mut self, small: &Gray, time_secs: f64) -> Option<f64> {
        // Standardise: flicker and exposure changes are (close to) affine in luma.
        let mean = small.mean();
        let scale = NORMALISED_STD / small.std_dev().max(MIN_STD);
        let normalised: Vec<f64> = small
            .data
            .iter()
            .map(|&v| (f64::from(v) - mean) * scale)
            .collect();
        let value = match &self.previous {
            Some((prev, prev_time)) if prev.len() == normalised.len() => {
                let diff: f64 = prev
                    .iter()
                    .zip(&normalised)
                    .map(|(a, b)| {
                        let d = (a - b).abs();
                        if d > NOISE_FLOOR { d } else { 0.0 }
                    })
                    .sum::<f64>()
                    / normalised.len() as f64;
                let dt = (time_secs - prev_time).clamp(1.0 / 240.0, 1.0);
                let v = diff * (1.0 / 30.0) / dt;
                self.samples.push((time_secs, v));
                Some(v)
            }
            _ => None,
        };
        self.previous = Some((normalised, time_secs));
        value
    }

    pub fn summary(&self, start_secs: f64) -> MotionSummary {
        if self.samples.is_empty() {
            return MotionSummary::default();
        }
        let values: Vec<f64> = self.samples.iter().map(|s| s.1).collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let still = values.iter().filter(|&&v| v < STATIC_BELOW).count();
        let last = self.samples.iter().map(|s| s.0).fold(start_secs, f64::max);
        let buckets = (((last - start_secs) / BUCKET_SECS).floor() as usize + 1).min(1 << 20);
        let mut sums = vec![(0.0f64, 0u32); buckets];
        for &(t, v) in &self.samples {
            let b = (((t - start_secs) / BUCKET_SECS).floor().max(0.0) as usize).min(buckets - 1);
            sums[b].0 += v;
            sums[b].1 += 1;
        }
        // Empty buckets (gaps in variable-rate video) take the previous bucket's value.
        let mut curve = Vec::with_capacity(buckets);
        let mut last_value = 0.0f32;
        for (sum, n) in sums {
            if n > 0 {
                last_value = (sum / f64::from(n)) as f32;
            }
            curve.push(last_value);
        }
        MotionSummary {
            mean,
            p95: percentile(&values, 95.0).unwrap_or(0.0),
            static_share: still as f64 / values.len() as f64,
            curve,
        }
    }
}
