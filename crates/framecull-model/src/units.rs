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

/// `1 file`, `2 files`, `0 files`: a count and its noun, singular for one. Nouns ending in
/// `s`, `x`, `ch` or `sh` take `es`, a consonant and `y` become `ies` (`1 batch`, `2 batches`;
/// `1 entry`, `3 entries`).
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {}", noun_for(n, noun))
}

/// The noun alone, as [`count`] writes it for `n` (for counts aligned in a column).
pub fn noun_for(n: u64, noun: &str) -> String {
    if n == 1 {
        return noun.to_string();
    }
    let consonant_y = noun
        .strip_suffix('y')
        .filter(|stem| stem.chars().last().is_some_and(|c| !"aeiou".contains(c)));
    if let Some(stem) = consonant_y {
        format!("{stem}ies")
    } else if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        format!("{noun}es")
    } else {
        format!("{noun}s")
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

/// `01:05.250` (minutes, seconds, milliseconds), `1:02:05.250` from an hour: durations for
/// people.
pub fn human_duration(secs: f64) -> String {
    if !secs.is_finite() {
        return format!("{secs}");
    }
    let sign = if secs < 0.0 { "-" } else { "" };
    let ms = (secs.abs() * 1000.0).round() as u64;
    let (h, m, s, f) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    if h > 0 {
        format!("{sign}{h}:{m:02}:{s:02}.{f:03}")
    } else {
        format!("{sign}{m:02}:{s:02}.{f:03}")
    }
}

/// A number with at most `decimals` decimals and no trailing zeros: `29.97`, `25`, `0.5`.
pub fn human_number(v: f64, decimals: usize) -> String {
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// `2.5 Mb/s`, `640 kb/s`: bit rates for people (decimal units, as encoders state them).
pub fn human_bit_rate(bits_per_sec: i64) -> String {
    let v = bits_per_sec as f64;
    if v >= 1e6 {
        format!("{} Mb/s", human_number(v / 1e6, 1))
    } else if v >= 1e3 {
        format!("{} kb/s", human_number(v / 1e3, 0))
    } else {
        format!("{bits_per_sec} b/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(1, "file"), "1 file");
        assert_eq!(count(0, "file"), "0 files");
        assert_eq!(count(2, "file"), "2 files");
        assert_eq!(count(1, "batch"), "1 batch");
        assert_eq!(count(3, "batch"), "3 batches");
        assert_eq!(count(2, "entry"), "2 entries");
        assert_eq!(count(2, "day"), "2 days");
        assert_eq!(noun_for(1, "group"), "group");
    }

    #[test]
    fn sizes_durations_and_numbers_read_as_people_write_them() {
        assert_eq!(human_bytes(509_868), "497.9 KiB");
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_duration(10.0), "00:10.000");
        assert_eq!(human_duration(65.25), "01:05.250");
        assert_eq!(human_duration(3725.5), "1:02:05.500");
        assert_eq!(human_duration(0.0334), "00:00.033");
        assert_eq!(human_number(30000.0 / 1001.0, 3), "29.97");
        assert_eq!(human_number(24000.0 / 1001.0, 3), "23.976");
        assert_eq!(human_number(25.0, 3), "25");
        assert_eq!(human_number(-0.0001, 2), "0");
        assert_eq!(human_number(1.0 / 3.0, 2), "0.33");
    }

    #[test]
    fn bit_rates_read_in_decimal_units() {
        assert_eq!(human_bit_rate(2_500_000), "2.5 Mb/s");
        assert_eq!(human_bit_rate(640_400), "640 kb/s");
        assert_eq!(human_bit_rate(900), "900 b/s");
    }
}
