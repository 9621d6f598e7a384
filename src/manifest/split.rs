//! Splits that never leak and never drift: a clip's split is a pure function of its group
//! key and the seed, so clips of one source video or duplicate group always land together and
//! adding data never moves an existing clip.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Named shares, in the order given, e.g. `train=0.8,val=0.1,test=0.1`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SplitSpec {
    pub splits: Vec<(String, f64)>,
}

impl SplitSpec {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut splits = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, share) = part
                .split_once('=')
                .ok_or_else(|| format!("split {part:?} is not NAME=SHARE"))?;
            let share: f64 = share
                .trim()
                .parse()
                .map_err(|_| format!("split {part:?}: {share:?} is not a number"))?;
            if !(share.is_finite() && share >= 0.0) {
                return Err(format!("split {part:?}: the share must be 0 or more"));
            }
            let name = name.trim();
            if name.is_empty() || splits.iter().any(|(n, _): &(String, f64)| n == name) {
                return Err(format!(
                    "split names must be unique and not empty: {text:?}"
                ));
            }
            splits.push((name.to_string(), share));
        }
        let total: f64 = splits.iter().map(|s| s.1).sum();
        if splits.is_empty() || (total - 1.0).abs() > 1e-6 {
            return Err(format!(
                "split shares must add up to 1 (they add up to {total}): {text:?}"
            ));
        }
        Ok(SplitSpec { splits })
    }

    /// The split of a group: the group key hashed with the seed to a point in [0, 1).
    pub fn assign(&self, group_key: &str, seed: u64) -> &str {
        let u = (xxh3_64_with_seed(group_key.as_bytes(), seed) >> 11) as f64 / (1u64 << 53) as f64;
        let mut edge = 0.0;
        for (name, share) in &self.splits {
            edge += share;
            if u < edge {
                return name;
            }
        }
        self.splits.last().map_or("", |s| s.0.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let s = SplitSpec::parse("train=0.8,val=0.1,test=0.1").unwrap();
        assert_eq!(s.splits.len(), 3);
        assert!(SplitSpec::parse("train=0.8,val=0.1").is_err());
        assert!(SplitSpec::parse("train=0.5,train=0.5").is_err());
        assert!(SplitSpec::parse("train").is_err());
    }

    #[test]
    fn shares_hold_on_many_groups_and_assignment_is_stable() {
        let s = SplitSpec::parse("train=0.8,val=0.1,test=0.1").unwrap();
        let mut counts = std::collections::HashMap::new();
        for i in 0..10_000 {
            *counts.entry(s.assign(&format!("file:{i}"), 7)).or_insert(0) += 1;
        }
        assert!((counts["train"] as f64 / 10_000.0 - 0.8).abs() < 0.02);
        assert!((counts["val"] as f64 / 10_000.0 - 0.1).abs() < 0.02);
        assert_eq!(s.assign("file:42", 7), s.assign("file:42", 7));
    }
}
