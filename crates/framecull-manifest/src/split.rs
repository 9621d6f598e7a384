//! Splits that never leak and never drift: a clip's split is a pure function of its group
//! key and the seed, so clips of one source video or duplicate group always land together and
//! adding data never moves an existing clip.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Why a split specification does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SplitError {
    /// A part without `=`.
    #[error("split {part:?} is not NAME=SHARE")]
    NotNameShare { part: String },
    #[error("split {part:?}: {share:?} is not a number")]
    NotANumber { part: String, share: String },
    /// A negative, infinite or NaN share.
    #[error("split {part:?}: the share must be 0 or more")]
    BadShare { part: String },
    /// An empty or repeated name.
    #[error("split names must be unique and not empty: {text:?}")]
    BadName { text: String },
    /// No split at all, or shares that do not add up to 1.
    #[error("split shares must add up to 1 (they add up to {total}): {text:?}")]
    Total { total: f64, text: String },
}

/// Named shares, in the order given, e.g. `train=0.8,val=0.1,test=0.1`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SplitSpec {
    pub splits: Vec<(String, f64)>,
}

impl SplitSpec {
    /// Parse `NAME=SHARE,...`: unique names, shares of 0 or more that add up to 1.
    pub fn parse(text: &str) -> Result<Self, SplitError> {
        let mut splits = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, share) = part
                .split_once('=')
                .ok_or_else(|| SplitError::NotNameShare {
                    part: part.to_string(),
                })?;
            let share: f64 = share.trim().parse().map_err(|_| SplitError::NotANumber {
                part: part.to_string(),
                share: share.to_string(),
            })?;
            if !(share.is_finite() && share >= 0.0) {
                return Err(SplitError::BadShare {
                    part: part.to_string(),
                });
            }
            let name = name.trim();
            if name.is_empty() || splits.iter().any(|(n, _): &(String, f64)| n == name) {
                return Err(SplitError::BadName {
                    text: text.to_string(),
                });
            }
            splits.push((name.to_string(), share));
        }
        // Summed from +0.0: an empty f64 sum is -0.0, which would print as "-0".
        let total: f64 = splits.iter().fold(0.0, |a, s| a + s.1);
        if splits.is_empty() || (total - 1.0).abs() > 1e-6 {
            return Err(SplitError::Total {
                total,
                text: text.to_string(),
            });
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
