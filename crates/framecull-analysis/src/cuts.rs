//! Hard-cut detection comparable to PySceneDetect's ContentDetector (HSV frame differences,
//! threshold 27, minimum scene length 15 frames, its "merge" flash filter), plus two guards
//! of our own:
//! - fast motion: a frame whose score is not clearly above its neighbours' is a continuation
//!   of motion, not a cut;
//! - flashes: when the picture a few frames later is close to the one before the jump, the
//!   jump was a flash (camera flash, lightning, a light switched on and off), not a cut.

use std::collections::VecDeque;

use super::image::Hsv;
use framecull_model::Cut;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CutOptions {
    pub threshold: f64,
    pub min_scene_len: u64,
    /// A cut's score must be at least this many times the mean of the two scores on either
    /// side (0 disables the guard).
    pub motion_ratio: f64,
    /// Frames after a jump that are compared with the frame before it (0 disables).
    pub flash_window: usize,
}

impl Default for CutOptions {
    fn default() -> Self {
        CutOptions {
            threshold: 27.0,
            min_scene_len: 15,
            motion_ratio: 1.5,
            flash_window: 4,
        }
    }
}

struct Pending {
    frame: u64,
    time_secs: f64,
    score: f64,
}

/// Streaming detector: push frames in order, then `finish`.
pub struct CutDetector {
    options: CutOptions,
    /// Frames whose decision waits for look-ahead (scores of later frames, flash check).
    window: VecDeque<Pending>,
    /// Scores of the last frames already decided (for the motion guard's left side).
    history: VecDeque<f64>,
    /// HSV of the latest frames, oldest first: the previous frame, and the frames around the
    /// one being decided for the flash check.
    recent: VecDeque<(u64, Hsv)>,
    filter: MergeFilter,
    cuts: Vec<Cut>,
}

impl CutDetector {
    pub fn new(options: CutOptions) -> Self {
        let filter = MergeFilter::new(options.min_scene_len);
        CutDetector {
            options,
            window: VecDeque::new(),
            history: VecDeque::new(),
            recent: VecDeque::new(),
            filter,
            cuts: Vec::new(),
        }
    }

    /// Add the next frame (R, G and B planes at analysis size).
    pub fn push(&mut self, frame: u64, time_secs: f64, rgb: [&[u8]; 3]) {
        // A full look-back window gives up its oldest frame, whose planes are reused.
        let mut hsv = if self.recent.len() >= self.look_back() {
            self.recent.pop_front().map(|(_, h)| h).unwrap_or_default()
        } else {
            Hsv::default()
        };
        hsv.set_from_planes(rgb);
        let score = match self.recent.back().map(|(_, h)| h) {
            Some(prev) if prev.v.len() == hsv.v.len() => hsv.content_distance(prev),
            Some(_) => self.options.threshold * 10.0, // the frame size changed
            None => 0.0,
        };
        self.window.push_back(Pending {
            frame,
            time_secs,
            score,
        });
        self.recent.push_back((frame, hsv));
        while self.window.len() > self.lookahead() {
            self.decide_front();
        }
    }

    /// Frames whose HSV is kept: the previous frame, and the frames around the one being
    /// decided for the flash check.
    fn look_back(&self) -> usize {
        2 * self.options.flash_window + 2
    }

    fn lookahead(&self) -> usize {
        self.options.flash_window.max(2)
    }

    fn decide_front(&mut self) {
        let Some(p) = self.window.pop_front() else {
            return;
        };
        let above = p.score >= self.options.threshold && !self.is_motion(&p) && !self.is_flash(&p);
        if let Some(frame) = self.filter.filter(p.frame, above) {
            let time_secs = if frame == p.frame {
                p.time_secs
            } else {
                self.filter.last_above_time
            };
            self.cuts.push(Cut { frame, time_secs });
        }
        if above {
            self.filter.last_above_time = p.time_secs;
        }
        self.history.push_back(p.score);
        while self.history.len() > 2 {
            self.history.pop_front();
        }
    }

    /// The motion guard: the jump is not clearly above the scores around it.
    fn is_motion(&self, p: &Pending) -> bool {
        if self.options.motion_ratio <= 0.0 {
            return false;
        }
        let neighbours: Vec<f64> = self
            .history
            .iter()
            .copied()
            .chain(self.window.iter().take(2).map(|q| q.score))
            .collect();
        if neighbours.is_empty() {
            return false;
        }
        let mean = neighbours.iter().sum::<f64>() / neighbours.len() as f64;
        p.score < self.options.motion_ratio * mean
    }

    /// The flash guard: shortly after the jump the picture is back to what it was before it
    /// (the start of a flash), or the jump returns to the picture of a few frames earlier
    /// (the end of one).
    fn is_flash(&self, p: &Pending) -> bool {
        let w = self.options.flash_window as u64;
        if w == 0 || p.frame == 0 {
            return false;
        }
        let hsv_of = |f: u64| self.recent.iter().find(|(i, _)| *i == f).map(|(_, h)| h);
        let close = |a: &Hsv, b: &Hsv| {
            a.v.len() == b.v.len() && a.content_distance(b) < self.options.threshold / 2.0
        };
        let (Some(before), Some(me)) = (hsv_of(p.frame - 1), hsv_of(p.frame)) else {
            return false;
        };
        let returns_after = (p.frame + 1..=p.frame + w)
            .filter_map(hsv_of)
            .any(|h| close(h, before));
        let returns_to_earlier = (p.frame.saturating_sub(1 + w)..p.frame.saturating_sub(1))
            .filter_map(hsv_of)
            .any(|h| close(h, me));
        returns_after || returns_to_earlier
    }

    /// Decide the remaining frames and return the cuts.
    pub fn finish(mut self) -> Vec<Cut> {
        while !self.window.is_empty() {
            self.decide_front();
        }
        self.cuts
    }
}

/// PySceneDetect's FlashFilter in MERGE mode: cuts closer than `length` frames are merged.
struct MergeFilter {
    length: u64,
    last_above: Option<u64>,
    last_above_time: f64,
    merge_enabled: bool,
    merge_triggered: bool,
    merge_start: u64,
}

impl MergeFilter {
    fn new(length: u64) -> Self {
        MergeFilter {
            length,
            last_above: None,
            last_above_time: 0.0,
            merge_enabled: false,
            merge_triggered: false,
            merge_start: 0,
        }
    }

    fn filter(&mut self, frame: u64, above: bool) -> Option<u64> {
        if self.length == 0 {
            return above.then_some(frame);
        }
        let last_above = *self.last_above.get_or_insert(frame);
        let min_length_met = frame - last_above >= self.length;
        if above {
            self.last_above = Some(frame);
        }
        if self.merge_triggered {
            let last = self.last_above.unwrap_or(frame);
            if min_length_met && !above && last - self.merge_start >= self.length {
                self.merge_triggered = false;
                return Some(last);
            }
            return None;
        }
        if !above {
            return None;
        }
        if min_length_met {
            self.merge_enabled = true;
            return Some(frame);
        }
        if self.merge_enabled {
            self.merge_triggered = true;
            self.merge_start = frame;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(rgb: [u8; 3]) -> [Vec<u8>; 3] {
        rgb.map(|c| vec![c; 16 * 9])
    }

    #[test]
    fn hard_cuts_are_found_and_flashes_are_not() {
        let mut d = CutDetector::new(CutOptions::default());
        let mut frame = 0;
        let mut push = |d: &mut CutDetector, rgb: [u8; 3], n: usize| {
            for _ in 0..n {
                let [r, g, b] = solid(rgb);
                d.push(frame, frame as f64 / 25.0, [&r, &g, &b]);
                frame += 1;
            }
        };
        push(&mut d, [200, 30, 30], 30);
        push(&mut d, [30, 30, 200], 30); // cut at 30
        push(&mut d, [255, 255, 255], 1); // a one-frame flash at 60
        push(&mut d, [30, 30, 200], 30);
        push(&mut d, [250, 250, 20], 20); // cut at 91
        let cuts: Vec<u64> = d.finish().iter().map(|c| c.frame).collect();
        assert_eq!(cuts, vec![30, 91]);
    }
}
