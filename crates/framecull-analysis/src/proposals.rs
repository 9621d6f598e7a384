//! Clip proposals, the one place the window and the command line get them from: shots
//! between scene cuts, and spans where something moves (with a lead-in before the onset,
//! within a minimum and maximum length), as frame ranges on a video's timeline.

use super::motion::BUCKET_SECS;
use framecull_model::FrameTimeline;

#[derive(Debug, Clone, PartialEq)]
pub struct ProposalOptions {
    /// Buckets at or above this motion count as moving.
    pub threshold: f32,
    /// Seconds kept before each motion onset (and after its end).
    pub lead_in_secs: f64,
    /// Proposals shorter than this are dropped.
    pub min_secs: f64,
    /// Longer proposals are cut into pieces of at most this length.
    pub max_secs: f64,
}

impl Default for ProposalOptions {
    fn default() -> Self {
        ProposalOptions {
            threshold: 0.5,
            lead_in_secs: 1.0,
            min_secs: 1.0,
            max_secs: 10.0,
        }
    }
}

/// `[start, end)` spans in seconds from the first frame, over a curve of [`BUCKET_SECS`]
/// buckets, clamped to `duration_secs`.
pub fn propose(curve: &[f32], duration_secs: f64, options: &ProposalOptions) -> Vec<(f64, f64)> {
    let mut spans: Vec<(f64, f64)> = Vec::new();
    let mut start = None;
    for (i, &v) in curve
        .iter()
        .chain(std::iter::once(&f32::NEG_INFINITY))
        .enumerate()
    {
        match (v >= options.threshold, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let a = (s as f64 * BUCKET_SECS - options.lead_in_secs).max(0.0);
                let b = (i as f64 * BUCKET_SECS + options.lead_in_secs).min(duration_secs);
                // Overlapping spans (after the lead-in) merge.
                match spans.last_mut() {
                    Some(last) if a <= last.1 => last.1 = b,
                    _ => spans.push((a, b)),
                }
                start = None;
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (a, b) in spans {
        let mut t = a;
        while b - t > options.max_secs {
            out.push((t, t + options.max_secs));
            t += options.max_secs;
        }
        if b - t >= options.min_secs {
            out.push((t, b));
        }
    }
    out
}

/// The shots of a video of `len` frames between the scene cuts starting at `cut_frames`:
/// `[start, end)` frame ranges that cover every frame once; none when no cut falls inside
/// the video (one shot: nothing to split).
pub fn shot_ranges(cut_frames: impl IntoIterator<Item = usize>, len: usize) -> Vec<(usize, usize)> {
    let mut bounds = vec![0];
    let mut cuts: Vec<usize> = cut_frames
        .into_iter()
        .filter(|&f| f > 0 && f < len)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    if cuts.is_empty() {
        return Vec::new();
    }
    bounds.extend(cuts);
    bounds.push(len);
    bounds
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|(a, b)| b > a)
        .collect()
}

/// [`propose`] on a video's timeline: spans in seconds from its first frame become frame
/// ranges (from the frame shown at the span's start to the first frame at or after its end);
/// empty ranges are dropped.
pub fn motion_ranges(
    timeline: &FrameTimeline,
    motion: &[f32],
    options: &ProposalOptions,
) -> Vec<(usize, usize)> {
    if timeline.is_empty() {
        return Vec::new();
    }
    let first = timeline.secs(timeline.pts_at(0));
    let duration = timeline.secs(timeline.pts_at(timeline.len())) - first;
    propose(motion, duration, options)
        .into_iter()
        .map(|(a, b)| timeline.frames_between_secs(first + a, first + b))
        .filter(|(s, e)| e > s)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use framecull_model::Ratio;

    #[test]
    fn shots_cover_every_frame_once_whatever_the_cuts() {
        assert!(shot_ranges([], 10).is_empty());
        assert!(
            shot_ranges([0, 10], 10).is_empty(),
            "no cut inside the video"
        );
        assert_eq!(shot_ranges([4, 7], 10), vec![(0, 4), (4, 7), (7, 10)]);
        // Cuts out of order, repeated, at the first frame or past the end.
        assert_eq!(
            shot_ranges([7, 0, 4, 4, 12, 10], 10),
            vec![(0, 4), (4, 7), (7, 10)]
        );
        assert!(shot_ranges([3], 0).is_empty());
    }

    #[test]
    fn motion_spans_map_to_the_frames_shown_then() {
        // 25 fps starting at 2.0 s (pts in 1/1000 s), 100 frames: 4 s.
        let timeline = FrameTimeline {
            pts: (0..100).map(|i| 2000 + i * 40).collect(),
            time_base: Ratio { num: 1, den: 1000 },
        };
        // Motion from 1.0 to 2.0 s into the video, lead-in 0.5 s: 0.5 .. 2.5 s, which is
        // frame 12 (shown at 0.5 s) up to the first frame at or after 2.5 s (63).
        let mut curve = vec![0.0; 8];
        curve[2] = 1.0;
        curve[3] = 1.0;
        let options = ProposalOptions {
            lead_in_secs: 0.5,
            ..ProposalOptions::default()
        };
        assert_eq!(motion_ranges(&timeline, &curve, &options), vec![(12, 63)]);
        // Variable frame rate: boundaries follow the timestamps, not a rate.
        let vfr = FrameTimeline {
            pts: vec![0, 100, 900, 1000, 2400, 2500, 3900],
            time_base: Ratio { num: 1, den: 1000 },
        };
        assert_eq!(motion_ranges(&vfr, &curve, &options), vec![(1, 5)]);
        assert!(
            motion_ranges(
                &FrameTimeline {
                    pts: vec![],
                    time_base: Ratio { num: 1, den: 1000 }
                },
                &curve,
                &options
            )
            .is_empty()
        );
    }

    #[test]
    fn onsets_get_a_lead_in_and_lengths_are_bounded() {
        // Still, then motion from 2.0 to 3.0 s, still, motion from 3.5 to 4.0 s.
        let curve = [0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0];
        let options = ProposalOptions {
            lead_in_secs: 0.5,
            ..ProposalOptions::default()
        };
        // The two bursts merge through their lead-ins: 1.5 .. 4.5 s.
        assert_eq!(propose(&curve, 6.0, &options), vec![(1.5, 4.5)]);
        let short = ProposalOptions {
            max_secs: 2.0,
            min_secs: 1.0,
            lead_in_secs: 0.5,
            ..ProposalOptions::default()
        };
        assert_eq!(propose(&curve, 6.0, &short), vec![(1.5, 3.5), (3.5, 4.5)]);
        let strict = ProposalOptions {
            min_secs: 1.5,
            ..short
        };
        assert_eq!(propose(&curve, 6.0, &strict), vec![(1.5, 3.5)]);
        assert!(propose(&[0.0; 8], 4.0, &options).is_empty());
    }
}
