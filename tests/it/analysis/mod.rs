//! Deep analysis on synthetic media of known content: motion, cuts, integrity, quality,
//! duplicates and flags.

#![allow(clippy::unwrap_used)]

mod bars_and_fields;
mod measures;
mod scans;

use framecull::media::synth::{Pattern, VideoSpec};

fn spec(pattern: Pattern, frames: u32) -> VideoSpec {
    let mut s = VideoSpec::new("libx264", 320, 180, 25, frames);
    s.pattern = pattern;
    s
}
