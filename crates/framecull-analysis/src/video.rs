//! One pass over a video's frames: motion, cuts, integrity, picture quality and frame
//! hashes, accumulated frame by frame.

use super::bars::Bars;
use super::cuts::{CutDetector, CutOptions};
use super::fields::Fields;
use super::image::{Gray, percentile, sum_abs_diff};
use super::motion::{MotionMeter, motion_gray};
use super::phash::phash;
use super::quality;
use framecull_model::{Curves, FrameView, Metrics, TimeOrder};

/// Seconds between frames sampled for quality and hashes.
pub const SAMPLE_EVERY_SECS: f64 = 1.0;
/// A frame whose mean luma is below this (0-255), with almost no brighter pixels, is black.
const BLACK_MEAN: f64 = 20.0;

/// A black frame (of the small grey copy motion reads): mean luma under [`BLACK_MEAN`] and
/// under 2% of its pixels brighter than 40.
pub fn is_black(small: &Gray) -> bool {
    let bright = small.data.iter().filter(|&&v| v > 40).count();
    small.mean() < BLACK_MEAN && (bright as f64) < 0.02 * small.data.len() as f64
}

/// Mean absolute difference (raw levels, analysis copy) under which two frames are the same
/// picture: a repeated (frozen) frame, not a still scene with sensor or coding noise.
pub const FROZEN_DIFF: f64 = 0.01;
/// Sampled frames whose luma standard deviation is below this carry no picture to hash
/// (black, flat or faded frames would match across unrelated videos).
pub const FLAT_STD: f64 = 5.0;
/// Frame-interval coefficient of variation above which a stream is variable-rate.
const VFR_CV: f64 = 0.1;

/// What a stream's frame times say of its length and rate: one rule for the deep pass (the
/// decoded frames) and the triage (the packets).
pub(crate) struct Timing {
    /// From the first frame to the end of the last.
    pub decoded_duration: Option<f64>,
    /// Coefficient of variation of the frame intervals.
    pub interval_cv: Option<f64>,
    /// Far shorter than the declared duration.
    pub truncated: bool,
    /// Frames the header counts without data (AVI "drop" frames): the frames there are still
    /// span the declared duration.
    pub repeat_frames: u64,
}

impl Timing {
    /// `span`: the first and last frame times; `intervals`: between successive frames.
    pub fn of(
        span: Option<(f64, f64)>,
        frames: u64,
        intervals: &[f64],
        fps_hint: f64,
        declared_duration_secs: Option<f64>,
        declared_frames: Option<i64>,
    ) -> Timing {
        let median_interval = percentile(intervals, 50.0).unwrap_or(1.0 / fps_hint);
        let decoded_duration = span
            .map(|(first, last)| last - first + median_interval)
            .filter(|_| frames > 0);
        let interval_cv = (intervals.len() >= 4).then(|| {
            let mean = intervals.iter().sum::<f64>() / intervals.len() as f64;
            let var =
                intervals.iter().map(|i| (i - mean).powi(2)).sum::<f64>() / intervals.len() as f64;
            if mean > 0.0 { var.sqrt() / mean } else { 0.0 }
        });
        let truncated = match (declared_duration_secs, decoded_duration) {
            (Some(declared), Some(decoded)) => {
                decoded < 0.8 * declared && declared - decoded >= 3.0 * median_interval
            }
            (Some(declared), None) => declared > 0.0,
            _ => false,
        };
        let repeat_frames = match (declared_frames, decoded_duration, declared_duration_secs) {
            (Some(declared), Some(decoded), Some(span))
                if declared as u64 > frames && decoded >= 0.95 * span =>
            {
                declared as u64 - frames
            }
            _ => 0,
        };
        Timing {
            decoded_duration,
            interval_cv,
            truncated,
            repeat_frames,
        }
    }

    /// Whether intervals that vary this much make a variable-rate stream.
    pub fn vfr(&self) -> Option<bool> {
        self.interval_cv.map(|cv| cv > VFR_CV)
    }
}

pub struct VideoAnalyzer {
    fps_hint: f64,
    motion: MotionMeter,
    cuts: CutDetector,
    frames: u64,
    first_time: Option<f64>,
    order: TimeOrder,
    intervals: Vec<f64>,
    size: Option<(u32, u32)>,
    resolution_changes: u64,
    black: u64,
    frozen: u64,
    previous_gray: Option<Gray>,
    spare_gray: Option<Gray>,
    next_sample: f64,
    samples: Vec<quality::Quality>,
    /// Letterbox and pillarbox bars of the sampled frames.
    bars: Bars,
    /// Interlacing, tested on a run of frames from each sampled frame.
    fields: Fields,
    frame_hashes: Vec<u64>,
    /// Times of frames decoded with errors, from the first frame.
    error_secs: Vec<f64>,
}

impl VideoAnalyzer {
    /// `fps_hint` gives times to frames without timestamps.
    pub fn new(fps_hint: Option<f64>, cuts: CutOptions) -> Self {
        VideoAnalyzer {
            fps_hint: fps_hint
                .filter(|f| f.is_finite() && *f > 0.0)
                .unwrap_or(25.0),
            motion: MotionMeter::default(),
            cuts: CutDetector::new(cuts),
            frames: 0,
            first_time: None,
            order: TimeOrder::default(),
            intervals: Vec::new(),
            size: None,
            resolution_changes: 0,
            black: 0,
            frozen: 0,
            previous_gray: None,
            spare_gray: None,
            next_sample: f64::NEG_INFINITY,
            samples: Vec::new(),
            bars: Bars::default(),
            fields: Fields::default(),
            frame_hashes: Vec::new(),
            error_secs: Vec::new(),
        }
    }

    pub fn push(&mut self, f: &FrameView) {
        let time = f
            .time_secs
            .unwrap_or_else(|| f.index as f64 / self.fps_hint);
        self.frames += 1;
        if let Some(step) = self.order.push(time) {
            self.intervals.push(step);
        }
        // Later measures run on a monotonic clock even when timestamps are not.
        let time = self.order.latest.unwrap_or(time);
        let first = *self.first_time.get_or_insert(time);
        if f.corrupt && self.error_secs.len() < Curves::MAX_ERRORS {
            self.error_secs.push(time - first);
        }

        let size = (f.coded_width, f.coded_height);
        match self.size {
            Some(s) if s != size => self.resolution_changes += 1,
            _ => {}
        }
        self.size = Some(size);

        // The previous frame's buffer takes this frame's luma.
        let mut gray = self.spare_gray.take().unwrap_or_default();
        match f.luma {
            Some(luma) => gray.set(luma, f.width, f.height),
            None => gray.set_from_planes(f.planes, f.width, f.height),
        }
        let small = motion_gray(&gray);
        self.motion.push(&small, time);
        if let Some(prev) = &self.previous_gray
            && prev.data.len() == gray.data.len()
        {
            let diff = sum_abs_diff(&prev.data, &gray.data);
            if (diff as f64) / (gray.data.len() as f64) < FROZEN_DIFF {
                self.frozen += 1;
            }
        }
        if is_black(&small) {
            self.black += 1;
        }
        self.cuts.push(f.index, time, f.planes);

        if time >= self.next_sample {
            self.next_sample = time + SAMPLE_EVERY_SECS;
            self.samples
                .push(quality::measure(f.planes, f.width, f.height));
            self.bars.push(f.planes, f.width, f.height);
            if gray.std_dev() >= FLAT_STD {
                self.frame_hashes.push(phash(&gray));
            }
            self.fields.start_run();
        }
        self.fields.push(f.coded_luma, f.declared_fields);
        self.spare_gray = self.previous_gray.replace(gray);
    }

    /// Metrics and curves of the frames seen. `declared_duration_secs` (from the container)
    /// is compared with the decoded span to detect truncation. Decoder-side fields
    /// (`decode_errors`, `first_error`...) are left for the caller.
    pub fn finish(
        self,
        declared_duration_secs: Option<f64>,
        declared_frames: Option<i64>,
    ) -> (Metrics, Curves) {
        let start = self.first_time.unwrap_or(0.0);
        let motion = self.motion.summary(start);
        let timing = Timing::of(
            self.first_time.zip(self.order.latest),
            self.frames,
            &self.intervals,
            self.fps_hint,
            declared_duration_secs,
            declared_frames,
        );
        let vfr = timing.vfr();
        let Timing {
            decoded_duration,
            interval_cv,
            truncated,
            repeat_frames,
        } = timing;
        let n = self.frames.max(1) as f64;
        let mean_of = |f: &dyn Fn(&quality::Quality) -> f64| {
            (!self.samples.is_empty())
                .then(|| self.samples.iter().map(f).sum::<f64>() / self.samples.len() as f64)
        };
        let has_frames = self.frames > 0;
        let mut metrics = Metrics {
            decoded_frames: self.frames,
            motion_mean: (self.frames > 1).then_some(motion.mean),
            motion_p95: (self.frames > 1).then_some(motion.p95),
            static_share: (self.frames > 1).then_some(motion.static_share),
            brightness: mean_of(&|q| q.brightness),
            brightness_p5: mean_of(&|q| q.brightness_p5),
            brightness_p95: mean_of(&|q| q.brightness_p95),
            sharpness: mean_of(&|q| q.sharpness),
            entropy: mean_of(&|q| q.entropy),
            colorfulness: mean_of(&|q| q.colorfulness),
            black_share: has_frames.then(|| self.black as f64 / n),
            frozen_share: (self.frames > 1).then(|| self.frozen as f64 / (n - 1.0)),
            decoded_duration_secs: decoded_duration,
            pts_backwards: self.order.backwards,
            pts_repeats: self.order.repeats,
            vfr,
            interval_cv,
            resolution_changes: self.resolution_changes,
            truncated,
            repeat_frames,
            phash: self.frame_hashes.first().copied(),
            content_crop: self
                .size
                .and_then(|(w, h)| self.bars.content(w, h))
                .filter(|_| self.resolution_changes == 0),
            ..Metrics::default()
        };
        self.fields.fill(&mut metrics);
        let curves = Curves {
            motion: motion.curve,
            cuts: self.cuts.finish(),
            frame_hashes: self.frame_hashes,
            error_secs: self.error_secs,
            ..Curves::default()
        };
        (metrics, curves)
    }
}
