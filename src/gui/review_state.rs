//! The review as the window holds it (decisions, tags, notes, labels, clips: what differs
//! from each file's defaults), read from the catalog after each edit, and each row's labels
//! made from it. Below both the edit writer (which reports it) and the view (which shows it).

use std::collections::HashMap;

use crate::analysis::labels::{LabelCount, label_counts};
use crate::catalog::Catalog;
use crate::model::{Clip, Decision, ItemId};

/// The review state after an operation.
#[derive(Debug, Clone, Default)]
pub struct ReviewState {
    /// Files accepted or rejected (unreviewed ones are not in it).
    pub decisions: HashMap<ItemId, Decision>,
    /// How many files `decisions` accepts and rejects (the side panel shows them each frame).
    pub accepted: usize,
    pub rejected: usize,
    pub tags: HashMap<ItemId, Vec<String>>,
    pub notes: HashMap<ItemId, String>,
    /// File labels.
    pub labels: HashMap<ItemId, String>,
    pub clips: HashMap<ItemId, Vec<Clip>>,
}

impl ReviewState {
    /// File `id`'s decision (unreviewed where none was made).
    pub fn decision_of(&self, id: ItemId) -> Decision {
        self.decisions.get(&id).copied().unwrap_or_default()
    }
}

pub fn review_state(catalog: &Catalog) -> Result<ReviewState, crate::catalog::CatalogError> {
    let reviews = catalog.all_reviews()?;
    // Only what differs from a file's defaults: labelled files have review rows too, and a
    // map of a million unreviewed decisions costs every frame that counts them.
    let decisions: HashMap<ItemId, Decision> = reviews
        .iter()
        .filter(|(_, r)| r.decision != Decision::Unreviewed)
        .map(|(id, r)| (*id, r.decision))
        .collect();
    let count = |d: Decision| decisions.values().filter(|v| **v == d).count();
    Ok(ReviewState {
        accepted: count(Decision::Accepted),
        rejected: count(Decision::Rejected),
        tags: reviews
            .iter()
            .filter(|(_, r)| !r.tags.is_empty())
            .map(|(id, r)| (*id, r.tags.clone()))
            .collect(),
        notes: reviews
            .iter()
            .filter_map(|(id, r)| r.note.clone().map(|n| (*id, n)))
            .collect(),
        labels: reviews
            .iter()
            .filter_map(|(id, r)| r.label.clone().map(|l| (*id, l)))
            .collect(),
        decisions,
        clips: catalog.all_clips()?,
    })
}

/// Each row's labels (its own and its clips', distinct) as indices into `names`, laid out
/// flat (a list per row cost an allocation each at a million files), and what the label
/// chart counts. Made again when the review changes.
#[derive(Debug, Clone, Default)]
pub struct RowLabels {
    /// Every label in use, sorted.
    pub names: Vec<String>,
    /// Row `r`'s labels are `ids[start[r]..start[r + 1]]`.
    start: Vec<u32>,
    ids: Vec<u32>,
    /// Files and clips per label (the unlabelled last), over every row.
    pub counts: Vec<LabelCount>,
}

impl RowLabels {
    /// The labels of the rows whose item ids are `rows`, in order.
    pub fn new(rows: &[ItemId], review: &ReviewState) -> Self {
        let no_clips: &[crate::model::Clip] = &[];
        let clips_of = |id: &ItemId| review.clips.get(id).map_or(no_clips, Vec::as_slice);
        // Distinct first: a million labelled files have a few hundred labels.
        let distinct: std::collections::HashSet<&str> = review
            .labels
            .values()
            .map(String::as_str)
            .chain(
                review
                    .clips
                    .values()
                    .flatten()
                    .filter_map(|c| c.label.as_deref()),
            )
            .collect();
        let mut names: Vec<String> = distinct.into_iter().map(str::to_string).collect();
        names.sort_unstable();
        let index: HashMap<&str, u32> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32))
            .collect();
        let mut start = Vec::with_capacity(rows.len() + 1);
        let mut ids = Vec::new();
        start.push(0);
        for id in rows {
            let first = ids.len();
            let own = review.labels.get(id).map(String::as_str);
            let clip_labels = clips_of(id).iter().filter_map(|c| c.label.as_deref());
            for l in own.into_iter().chain(clip_labels) {
                if let Some(&i) = index.get(l)
                    && !ids[first..].contains(&i)
                {
                    ids.push(i);
                }
            }
            start.push(ids.len() as u32);
        }
        let counts = label_counts(
            rows.iter()
                .map(|id| (review.labels.get(id).map(String::as_str), clips_of(id))),
        );
        RowLabels {
            names,
            start,
            ids,
            counts,
        }
    }

    /// The labels of row `row`.
    pub fn of(&self, row: usize) -> impl Iterator<Item = &str> {
        let (a, b) = match (self.start.get(row), self.start.get(row + 1)) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        self.ids[a..b]
            .iter()
            .map(|&i| self.names[i as usize].as_str())
    }

    /// Of the rows `shown`, how many carry each label of `names`, and how many none.
    pub fn shown(&self, shown: &[usize]) -> (Vec<u64>, u64) {
        let mut per = vec![0u64; self.names.len()];
        let mut none = 0;
        for &row in shown {
            let (Some(&a), Some(&b)) = (self.start.get(row), self.start.get(row + 1)) else {
                continue;
            };
            if a == b {
                none += 1;
            }
            for &i in &self.ids[a as usize..b as usize] {
                per[i as usize] += 1;
            }
        }
        (per, none)
    }
}
