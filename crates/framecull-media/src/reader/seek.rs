//! Where a request starts and which decoded frames it takes: the plan of attempts (go on,
//! seek to ever earlier seek points, decode from the start) and the checks that hold every
//! frame handed out to what a decode from the start shows. No FFmpeg here: the reader feeds
//! these decisions what it decoded.

use std::collections::{BTreeSet, HashMap};

use crate::frames::{FrameIndex, Identity};

/// Continue decoding instead of seeking when the next wanted frame is at most this many
/// frames after the last one put out, and no more than [`SEEK_COST_FRAMES`] further than
/// from the keyframe a seek would land on.
const SEQUENTIAL_FRAMES: usize = 48;

/// What a seek costs beyond the frames it decodes (flush, demuxer seek), in frames.
const SEEK_COST_FRAMES: usize = 4;

/// Seek points tried, each earlier than the last, before decoding from the start.
const SEEK_ATTEMPTS: usize = 3;

/// Where one attempt at a request starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// Go on from the decoder's position.
    Continue,
    /// Seek to this seek point (an index into `frames.seek_points`).
    Seek(usize),
    /// Open the file again and decode from its first frame.
    Beginning,
}

/// Where to start reading frames from `first`: going on when the decoder is shortly before
/// it (and a seek would not decode fewer frames), else the latest usable seek points at or
/// before it (with a reference, only those it knows as clean keyframes), last the start of
/// the file.
pub(super) fn start_plan(
    frames: &FrameIndex,
    position: Option<usize>,
    refused: &BTreeSet<usize>,
    reference: Option<&HashMap<usize, u64>>,
    first: usize,
) -> Vec<Start> {
    let seeks: Vec<usize> = match frames.identity {
        Identity::Pts => {
            let usable = frames.seek_points.partition_point(|s| s.frame <= first);
            (0..usable)
                .rev()
                .filter(|i| {
                    let frame = frames.seek_points[*i].frame;
                    !refused.contains(i)
                        && frame > 0
                        && reference.is_none_or(|r| r.contains_key(&frame))
                })
                .take(SEEK_ATTEMPTS)
                .collect()
        }
        Identity::Ordinal => Vec::new(),
    };
    let mut plan = Vec::with_capacity(SEEK_ATTEMPTS + 2);
    if let Some(p) = position
        && p < first
    {
        // Frames a seek decodes before `first`: from its keyframe, else from the start.
        let seek_lead = seeks
            .first()
            .map_or(first, |&i| first - frames.seek_points[i].frame);
        let gap = first - p - 1;
        if frames.identity == Identity::Ordinal
            || (gap <= SEQUENTIAL_FRAMES && gap <= seek_lead + SEEK_COST_FRAMES)
        {
            plan.push(Start::Continue);
        }
    }
    plan.extend(seeks.into_iter().map(Start::Seek));
    plan.push(Start::Beginning);
    plan
}

/// An attempt's state: whether the frames reached can be trusted yet, and whether it
/// decodes from the start of the file (the reference every frame is held to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Attempt {
    pub(super) trusted: bool,
    pub(super) from_start: bool,
}

/// A decoded frame as the checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    /// Its display index; `None` when it cannot be recognised (no or an unknown timestamp,
    /// or a count lost by a seek).
    pub(super) index: Option<usize>,
    /// The decoder marks it a keyframe.
    pub(super) key: bool,
    /// The decoder flags it corrupt or reports errors in it.
    pub(super) damaged: bool,
}

/// What to do with one decoded frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    /// Not wanted, or not trustworthy yet: decode on.
    Skip,
    /// A checked frame at this index.
    Take(usize),
    /// Start again earlier.
    Doubt,
    /// A wanted frame never came out of a decode from the start.
    Missing,
    /// A wanted frame decodes with errors from the start.
    Corrupt(usize),
}

impl Attempt {
    /// Judge the next decoded frame, `position` being the last frame taken and `want` the
    /// next wanted index.
    pub(super) fn judge(&mut self, seen: Seen, position: Option<usize>, want: usize) -> Check {
        let Some(index) = seen.index else {
            return if self.trusted && !self.from_start {
                Check::Doubt
            } else {
                Check::Skip
            };
        };
        if !self.trusted {
            // After a seek, frames count from a clean keyframe at or before the window.
            if index > want {
                return Check::Doubt;
            }
            if !seen.key || seen.damaged {
                return Check::Skip;
            }
            self.trusted = true;
        }
        if position.is_some_and(|p| index <= p) {
            // Frames going back or repeating: the decoder is not where it seems.
            return if self.from_start {
                Check::Skip
            } else {
                Check::Doubt
            };
        }
        if index > want {
            return if self.from_start {
                Check::Missing
            } else {
                Check::Doubt
            };
        }
        if seen.damaged {
            if !self.from_start {
                return Check::Doubt;
            }
            if index == want {
                return Check::Corrupt(index);
            }
        }
        Check::Take(index)
    }
}
