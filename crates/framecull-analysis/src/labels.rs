//! How many files and clips each label has: the label chart of the window and `stats`.

use std::collections::HashMap;

use serde::Serialize;

use framecull_model::Clip;

/// The files and clips of one label (`label: None`: those with no label).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelCount {
    pub label: Option<String>,
    /// Files labelled so themselves or with a clip so labelled (as the filter's `label:`
    /// term matches them); with no label: files with no label on them nor on their clips.
    pub files: u64,
    /// Clips with this label, their own or, when they have none, their file's.
    pub clips: u64,
}

/// The counts of each label over `files` (each file's label and its clips), by files
/// (then clips) descending and label; the unlabelled last.
pub fn label_counts<'a>(
    files: impl IntoIterator<Item = (Option<&'a str>, &'a [Clip])>,
) -> Vec<LabelCount> {
    let mut counts: HashMap<Option<&str>, (u64, u64)> = HashMap::new();
    let mut seen: Vec<&str> = Vec::new();
    for (file_label, clips) in files {
        seen.clear();
        seen.extend(file_label);
        for clip in clips {
            let label = clip.label.as_deref().or(file_label);
            counts.entry(label).or_default().1 += 1;
            if let Some(l) = clip.label.as_deref() {
                seen.push(l);
            }
        }
        seen.sort_unstable();
        seen.dedup();
        if seen.is_empty() {
            counts.entry(None).or_default().0 += 1;
        }
        for l in &seen {
            counts.entry(Some(l)).or_default().0 += 1;
        }
    }
    let mut out: Vec<LabelCount> = counts
        .into_iter()
        .map(|(label, (files, clips))| LabelCount {
            label: label.map(str::to_string),
            files,
            clips,
        })
        .collect();
    out.sort_by(|a, b| {
        (
            a.label.is_none(),
            std::cmp::Reverse((a.files, a.clips)),
            &a.label,
        )
            .cmp(&(
                b.label.is_none(),
                std::cmp::Reverse((b.files, b.clips)),
                &b.label,
            ))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use framecull_model::{ClipOrigin, Decision, Ratio};

    fn clip(label: Option<&str>) -> Clip {
        Clip {
            id: 0,
            item_id: 0,
            start_pts: 0,
            end_pts: 1,
            time_base: Ratio { num: 1, den: 25 },
            start_secs: 0.0,
            end_secs: 0.04,
            start_frame: Some(0),
            end_frame: Some(1),
            label: label.map(str::to_string),
            origin: ClipOrigin::Manual,
            decision: Decision::Unreviewed,
        }
    }

    #[test]
    fn files_count_once_per_label_and_clips_inherit_their_files_label() {
        let a = [clip(None), clip(Some("cat"))];
        let b = [clip(Some("cat")), clip(Some("cat"))];
        let files: Vec<(Option<&str>, &[Clip])> = vec![
            (Some("dog"), &a),
            (None, &b),
            (None, &[]),
            (Some("dog"), &[]),
            (None, &[]),
        ];
        let counts = label_counts(files);
        let got: Vec<(Option<&str>, u64, u64)> = counts
            .iter()
            .map(|c| (c.label.as_deref(), c.files, c.clips))
            .collect();
        assert_eq!(
            got,
            vec![(Some("cat"), 2, 3), (Some("dog"), 2, 1), (None, 2, 0)]
        );
    }
}
