//! Splits that never leak and never drift: a clip's split is a pure function of its group
//! key and the seed, so clips of one source video or duplicate group always land together and
//! adding data never moves an existing clip. Stratified splits ([`Stratify`]) give each
//! label its share in every split, to the group, and keep the previous version's
//! assignment wherever the shares allow.

use std::collections::{BTreeMap, HashMap};

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

/// What a stratified split balances within each of its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Stratify {
    /// Each label (and the unlabelled) gets its share in every split.
    Label,
}

/// Named shares, in the order given, e.g. `train=0.8,val=0.1,test=0.1`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SplitSpec {
    pub splits: Vec<(String, f64)>,
    /// Shares held within each label rather than over the whole set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stratify: Option<Stratify>,
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
        Ok(SplitSpec {
            splits,
            stratify: None,
        })
    }

    /// This spec, stratified by `by`.
    pub fn stratified(self, by: Option<Stratify>) -> Self {
        SplitSpec {
            stratify: by,
            ..self
        }
    }

    /// The split of a group: the group key hashed with the seed to a point in [0, 1).
    pub fn assign(&self, group_key: &str, seed: u64) -> &str {
        let u = unit(group_key, seed);
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

/// A group key hashed with the seed to a point in [0, 1).
fn unit(group_key: &str, seed: u64) -> f64 {
    (xxh3_64_with_seed(group_key.as_bytes(), seed) >> 11) as f64 / (1u64 << 53) as f64
}

impl SplitSpec {
    /// How many of `n` groups each split takes: the shares' floors, and the groups left over
    /// to the largest remainders (the earlier split on a tie). Each is within one group of
    /// its share.
    pub fn quotas(&self, n: usize) -> Vec<usize> {
        let exact: Vec<f64> = self.splits.iter().map(|(_, s)| s * n as f64).collect();
        let mut quotas: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
        let mut order: Vec<usize> = (0..exact.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
            rb.total_cmp(&ra).then(a.cmp(&b))
        });
        let given: usize = quotas.iter().sum();
        for &k in order.iter().cycle().take(n.saturating_sub(given)) {
            quotas[k] += 1;
        }
        quotas
    }

    /// The splits of `groups` (each a group key and its stratum: its label), stratified:
    /// within each stratum the splits take [`SplitSpec::quotas`] of its groups. A group keeps
    /// its split in `previous` (the parent version's, by group key) while that split is
    /// under its quota (the groups nearest the start of the hash order first); the others
    /// go, in hash order, to the split furthest below its quota. Returns a split per group,
    /// in the order given.
    pub fn assign_stratified(
        &self,
        groups: &[(&str, Option<&str>)],
        seed: u64,
        previous: &HashMap<String, String>,
    ) -> Vec<&str> {
        let mut strata: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
        for (i, (_, label)) in groups.iter().enumerate() {
            strata.entry(*label).or_default().push(i);
        }
        let units: Vec<f64> = groups.iter().map(|(key, _)| unit(key, seed)).collect();
        let by_unit = |a: &usize, b: &usize| {
            units[*a]
                .total_cmp(&units[*b])
                .then_with(|| groups[*a].0.cmp(groups[*b].0))
        };
        let mut out = vec![""; groups.len()];
        for members in strata.values() {
            let quotas = self.quotas(members.len());
            let mut counts = vec![0usize; quotas.len()];
            let (mut kept, mut open): (Vec<(usize, usize)>, Vec<usize>) = (Vec::new(), Vec::new());
            for &i in members {
                let was = previous
                    .get(groups[i].0)
                    .and_then(|p| self.splits.iter().position(|(name, _)| name == p));
                match was {
                    Some(k) => kept.push((i, k)),
                    None => open.push(i),
                }
            }
            kept.sort_by(|a, b| by_unit(&a.0, &b.0));
            for (i, k) in kept {
                if counts[k] < quotas[k] {
                    counts[k] += 1;
                    out[i] = &self.splits[k].0;
                } else {
                    open.push(i);
                }
            }
            open.sort_by(by_unit);
            for i in open {
                let k = (0..quotas.len())
                    .max_by(|&a, &b| {
                        let (da, db) = (
                            quotas[a] as i64 - counts[a] as i64,
                            quotas[b] as i64 - counts[b] as i64,
                        );
                        da.cmp(&db).then(b.cmp(&a))
                    })
                    .unwrap_or(0);
                counts[k] += 1;
                out[i] = &self.splits[k].0;
            }
        }
        out
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

    #[test]
    fn quotas_are_within_one_group_of_each_share() {
        let s = SplitSpec::parse("train=0.8,val=0.1,test=0.1").unwrap();
        for n in 0..200 {
            let q = s.quotas(n);
            assert_eq!(q.iter().sum::<usize>(), n);
            for (k, (_, share)) in s.splits.iter().enumerate() {
                assert!((q[k] as f64 - share * n as f64).abs() < 1.0, "{n}: {q:?}");
            }
        }
        assert_eq!(s.quotas(3), vec![3, 0, 0]);
        assert_eq!(s.quotas(5), vec![4, 1, 0]);
    }

    #[test]
    fn stratified_splits_give_each_label_its_share_and_keep_earlier_assignments() {
        let s = SplitSpec::parse("train=0.8,val=0.1,test=0.1")
            .unwrap()
            .stratified(Some(Stratify::Label));
        let keys: Vec<String> = (0..230).map(|i| format!("file:{i}")).collect();
        // 200 common, 20 rare, 10 unlabelled.
        let label = |i: usize| match i {
            0..200 => Some("common"),
            200..220 => Some("rare"),
            _ => None,
        };
        let groups: Vec<(&str, Option<&str>)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_str(), label(i)))
            .collect();
        let first = s.assign_stratified(&groups, 3, &HashMap::new());
        let count = |out: &[&str], l: Option<&str>, split: &str| {
            groups
                .iter()
                .zip(out)
                .filter(|((_, g), o)| *g == l && **o == split)
                .count()
        };
        for (label, train, val, test) in [
            (Some("common"), 160, 20, 20),
            (Some("rare"), 16, 2, 2),
            (None, 8, 1, 1),
        ] {
            assert_eq!(
                (
                    count(&first, label, "train"),
                    count(&first, label, "val"),
                    count(&first, label, "test")
                ),
                (train, val, test),
                "{label:?}"
            );
        }
        // The next version: 10 more rare groups; every earlier group keeps its split.
        let previous: HashMap<String, String> = keys
            .iter()
            .zip(&first)
            .map(|(k, s)| (k.clone(), s.to_string()))
            .collect();
        let more: Vec<String> = (230..240).map(|i| format!("file:{i}")).collect();
        let mut grown = groups.clone();
        grown.extend(more.iter().map(|k| (k.as_str(), Some("rare"))));
        let second = s.assign_stratified(&grown, 3, &previous);
        assert_eq!(&second[..230], &first[..]);
        let rare = |split: &str| {
            grown
                .iter()
                .zip(&second)
                .filter(|((_, l), o)| *l == Some("rare") && **o == split)
                .count()
        };
        assert_eq!((rare("train"), rare("val"), rare("test")), (24, 3, 3));
    }
}
