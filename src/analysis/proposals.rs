//! Clip proposals from a motion curve: where something moves, with a lead-in before the
//! onset, within a minimum and maximum length.

use super::motion::BUCKET_SECS;

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

#[cfg(test)]
mod tests {
    use super::*;

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
