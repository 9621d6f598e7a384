//! Exact ratios (time bases, frame rates, aspect ratios) and quantities written for people.

use serde::{Deserialize, Serialize};

/// An exact rational, as FFmpeg gives it (time bases, frame rates, aspect ratios).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio {
    pub num: i32,
    pub den: i32,
}

impl Ratio {
    pub fn new(num: i32, den: i32) -> Option<Self> {
        (num != 0 && den != 0).then_some(Ratio { num, den })
    }

    pub fn as_f64(self) -> f64 {
        f64::from(self.num) / f64::from(self.den)
    }

    /// `"num/den"`, the form stored in the catalog.
    pub fn to_text(self) -> String {
        format!("{}/{}", self.num, self.den)
    }

    pub fn parse(s: &str) -> Option<Self> {
        let (n, d) = s.split_once('/')?;
        Ratio::new(n.trim().parse().ok()?, d.trim().parse().ok()?)
    }
}

/// `1.5 MiB`: sizes for people.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
