//! What each epoch reads: windows within each clip's boundaries, shuffled per epoch from a
//! seed, sharded by rank, bucketed by length and cut into batches. Pure and deterministic:
//! the plan depends on the manifest, the seed and the settings, never on timing or workers.

use serde::{Deserialize, Serialize};

/// Where a window's frames are taken.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Every `n`-th decoded frame.
    Stride(u32),
    /// Frames shown at `1/fps` intervals, by timestamp (variable frame rate safe).
    Fps(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One window per clip, centred.
    Uniform,
    /// One window per clip per epoch at a seeded random position.
    Random,
    /// Every window of the clip, one after the other (`window_step` apart).
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// Frames per window. `None`: the whole clip, at most `max_frames` (variable length).
    pub clip_len: Option<u32>,
    pub max_frames: u32,
    pub timing: Timing,
    pub mode: Mode,
    /// For `Mode::All`: sampled frames between window starts (default: `clip_len`, windows
    /// that touch but do not overlap).
    pub window_step: Option<u32>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            clip_len: Some(16),
            max_frames: 64,
            timing: Timing::Stride(1),
            mode: Mode::Uniform,
            window_step: None,
        }
    }
}

/// What the plan needs to know about a clip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClipExtent {
    /// Decoded frames in the clip (an estimate before analysis).
    pub frames: u32,
    pub duration_secs: f64,
    pub is_image: bool,
    /// Stable identity (from the manifest's clip id): seeds per-clip draws.
    pub key: u64,
}

/// One window to read: frames of clip `clip` from `start` (frames for `Timing::Stride`,
/// seconds for `Timing::Fps`, relative to the clip's first frame), `len` of them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub clip: u32,
    pub start: f64,
    pub len: u32,
    /// Seeds this window's augmentations (the same for all its frames).
    pub aug_seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batching {
    pub batch_size: usize,
    pub shuffle: bool,
    pub rank: usize,
    pub world_size: usize,
    /// Group windows of similar length into batches (variable-length sampling).
    pub bucket: bool,
    pub drop_last: bool,
}

impl Default for Batching {
    fn default() -> Self {
        Batching {
            batch_size: 8,
            shuffle: true,
            rank: 0,
            world_size: 1,
            bucket: true,
            drop_last: false,
        }
    }
}

/// A planned batch: its windows and its time length `t` (the longest window, or `clip_len`).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedBatch {
    pub samples: Vec<Sample>,
    pub t: u32,
}

impl PlannedBatch {
    /// Frame slots that carry padding, not frames.
    pub fn padding_frames(&self) -> u64 {
        self.samples
            .iter()
            .map(|s| u64::from(self.t.saturating_sub(s.len)))
            .sum()
    }
}

/// SplitMix64: small, fast and good enough for shuffles and augmentation draws.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(parts: &[u64]) -> Rng {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for &p in parts {
            state = mix(state ^ p);
        }
        Rng(state)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Frames a window can take from a clip, and the span (in the timing's unit) `n` of them
/// cover.
fn available(clip: &ClipExtent, timing: Timing) -> (u32, f64) {
    match timing {
        Timing::Stride(stride) => (
            clip.frames.div_ceil(stride.max(1)).max(1),
            f64::from(clip.frames),
        ),
        Timing::Fps(fps) => (
            ((clip.duration_secs * fps).ceil() as u32).max(1),
            clip.duration_secs,
        ),
    }
}

/// The span covered by `n` sampled frames (from the first to the last, inclusive of one unit).
fn span(n: u32, timing: Timing) -> f64 {
    match timing {
        Timing::Stride(stride) => f64::from((n.max(1) - 1) * stride.max(1) + 1),
        Timing::Fps(fps) => f64::from(n.max(1) - 1) / fps,
    }
}

/// Every window of one epoch, in manifest order.
pub fn windows(clips: &[ClipExtent], sampling: &Sampling, seed: u64, epoch: u64) -> Vec<Sample> {
    let mut out = Vec::new();
    for (index, clip) in clips.iter().enumerate() {
        let clip_index = index as u32;
        let aug = |start: f64| Rng::new(&[seed, epoch, clip.key, start.to_bits(), 1]).next_u64();
        if clip.is_image {
            out.push(Sample {
                clip: clip_index,
                start: 0.0,
                len: 1,
                aug_seed: aug(0.0),
            });
            continue;
        }
        let (avail, extent) = available(clip, sampling.timing);
        let want = sampling.clip_len.unwrap_or(sampling.max_frames).max(1);
        let len = want.min(avail);
        let window = span(want, sampling.timing);
        let room = (extent - window).max(0.0);
        let integral = matches!(sampling.timing, Timing::Stride(_));
        let snap = |v: f64| if integral { v.floor() } else { v };
        match sampling.mode {
            Mode::Uniform => {
                let start = snap(room / 2.0);
                out.push(Sample {
                    clip: clip_index,
                    start,
                    len,
                    aug_seed: aug(start),
                });
            }
            Mode::Random => {
                let mut rng = Rng::new(&[seed, epoch, clip.key, 2]);
                let start = if integral {
                    rng.below(room as u64 + 1) as f64
                } else {
                    rng.next_f64() * room
                };
                out.push(Sample {
                    clip: clip_index,
                    start,
                    len,
                    aug_seed: aug(start),
                });
            }
            Mode::All => {
                let step = span(
                    sampling.window_step.unwrap_or(want).max(1) + 1,
                    sampling.timing,
                ) - span(1, sampling.timing);
                let mut start = 0.0;
                loop {
                    out.push(Sample {
                        clip: clip_index,
                        start,
                        len,
                        aug_seed: aug(start),
                    });
                    start += step;
                    if start > room + 1e-9 {
                        break;
                    }
                }
            }
        }
    }
    out
}

/// Cut one epoch's windows into this rank's batches: shuffle (seeded by `seed` and `epoch`,
/// the same on every rank), keep every `world_size`-th window from `rank`, bucket by length,
/// batch.
pub fn batches(
    mut samples: Vec<Sample>,
    batching: &Batching,
    clip_len: Option<u32>,
    seed: u64,
    epoch: u64,
) -> Vec<PlannedBatch> {
    if batching.shuffle {
        Rng::new(&[seed, epoch, 3]).shuffle(&mut samples);
    }
    let world = batching.world_size.max(1);
    let mine: Vec<Sample> = samples
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % world == batching.rank)
        .map(|(_, s)| s)
        .collect();
    let size = batching.batch_size.max(1);
    let mut groups: Vec<Vec<Sample>> = Vec::new();
    if batching.bucket && clip_len.is_none() {
        // Sort within pools of many batches, so similar lengths share a batch but the
        // order stays shuffled at the scale of the epoch.
        for pool in mine.chunks(size * 16) {
            let mut pool = pool.to_vec();
            pool.sort_by_key(|s| s.len);
            groups.extend(pool.chunks(size).map(<[Sample]>::to_vec));
        }
        if batching.shuffle {
            Rng::new(&[seed, epoch, 4]).shuffle(&mut groups);
        }
    } else {
        groups.extend(mine.chunks(size).map(<[Sample]>::to_vec));
    }
    if batching.drop_last {
        groups.retain(|g| g.len() == size);
    }
    groups
        .into_iter()
        .map(|samples| {
            let longest = samples.iter().map(|s| s.len).max().unwrap_or(1);
            PlannedBatch {
                t: clip_len.unwrap_or(longest),
                samples,
            }
        })
        .collect()
}

/// Share of frame slots that are padding.
pub fn padding_share(batches: &[PlannedBatch]) -> f64 {
    let slots: u64 = batches
        .iter()
        .map(|b| b.samples.len() as u64 * u64::from(b.t))
        .sum();
    let padding: u64 = batches.iter().map(PlannedBatch::padding_frames).sum();
    if slots == 0 {
        0.0
    } else {
        padding as f64 / slots as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clips(lengths: &[u32]) -> Vec<ClipExtent> {
        lengths
            .iter()
            .enumerate()
            .map(|(i, &frames)| ClipExtent {
                frames,
                duration_secs: f64::from(frames) / 30.0,
                is_image: false,
                key: i as u64 * 7919,
            })
            .collect()
    }

    #[test]
    fn all_windows_tile_the_clip() {
        let sampling = Sampling {
            clip_len: Some(8),
            timing: Timing::Stride(2),
            mode: Mode::All,
            ..Sampling::default()
        };
        // 60 frames, windows of 8 frames at stride 2 span 15 frames, start every 16.
        let w = windows(&clips(&[60]), &sampling, 1, 0);
        let starts: Vec<f64> = w.iter().map(|s| s.start).collect();
        assert_eq!(starts, vec![0.0, 16.0, 32.0]);
        assert!(w.iter().all(|s| s.len == 8));
    }

    #[test]
    fn short_clips_give_short_windows() {
        let sampling = Sampling {
            clip_len: Some(16),
            ..Sampling::default()
        };
        let w = windows(&clips(&[5]), &sampling, 1, 0);
        assert_eq!(w[0].len, 5);
        assert_eq!(w[0].start, 0.0);
    }

    #[test]
    fn random_windows_stay_inside_and_change_per_epoch() {
        let sampling = Sampling {
            clip_len: Some(4),
            mode: Mode::Random,
            ..Sampling::default()
        };
        let c = clips(&[100; 20]);
        let e0 = windows(&c, &sampling, 9, 0);
        let e1 = windows(&c, &sampling, 9, 1);
        assert!(
            e0.iter()
                .chain(&e1)
                .all(|s| s.start >= 0.0 && s.start + 4.0 <= 100.0)
        );
        assert_ne!(e0, e1);
        assert_eq!(e0, windows(&c, &sampling, 9, 0));
    }

    #[test]
    fn shards_are_disjoint_and_complete() {
        let sampling = Sampling::default();
        let c = clips(&[40; 103]);
        let all = windows(&c, &sampling, 5, 3);
        let mut seen = Vec::new();
        for rank in 0..4 {
            let b = Batching {
                rank,
                world_size: 4,
                ..Batching::default()
            };
            for batch in batches(all.clone(), &b, Some(16), 5, 3) {
                seen.extend(batch.samples.iter().map(|s| s.clip));
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..103).collect::<Vec<u32>>());
    }

    #[test]
    fn bucketing_cuts_padding() {
        let sampling = Sampling {
            clip_len: None,
            max_frames: 64,
            ..Sampling::default()
        };
        let lengths: Vec<u32> = (0..400).map(|i| 4 + (i * 37 % 61)).collect();
        let c = clips(&lengths);
        let all = windows(&c, &sampling, 1, 0);
        let plain = Batching {
            bucket: false,
            ..Batching::default()
        };
        let bucketed = Batching::default();
        let p0 = padding_share(&batches(all.clone(), &plain, None, 1, 0));
        let p1 = padding_share(&batches(all, &bucketed, None, 1, 0));
        assert!(p0 > 0.3, "{p0}");
        assert!(p1 < 0.08, "{p1}");
    }
}
