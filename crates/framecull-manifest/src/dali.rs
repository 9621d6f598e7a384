//! DALI's video reader `file_list` (`export --format dali`): per split, one line per video
//! row, `PATH LABEL START END` in frames, and beside the lists a JSON file with the label of
//! each integer, the frame convention and the reader arguments that read it so.
//!
//! DALI's parser reads whitespace-separated fields with no quoting and no comments (a `#`
//! line would be read as a file), drops a line whose start equals its end, and wants integer
//! labels of 0 or more and paths as the process opens them. So the paths are absolute, rows
//! whose path holds whitespace are left out (counted), the convention goes in the JSON file,
//! not in the list, and labels are numbered in name order (the unlabelled last).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::ManifestRow;
use framecull_model::MediaKind;

/// What `vNNNN.dali.json` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DaliIndex {
    /// The list file of each split (`all` without splits).
    pub lists: BTreeMap<String, String>,
    /// Each integer label's name, at its index; `null`: rows without a label.
    pub labels: Vec<Option<String>>,
    pub frame_convention: &'static str,
    /// The arguments of each DALI reader that read the lists as written.
    pub reader_arguments: serde_json::Value,
    /// Rows left out, by reason, and how many.
    pub left_out: BTreeMap<String, u64>,
}

/// The lists of `rows` (videos of a local dataset at `root`): `(split, text)` each, and the
/// index, for version files named from `stem`.
pub fn lists(rows: &[ManifestRow], root: &Path, stem: &str) -> (Vec<(String, String)>, DaliIndex) {
    // The rows DALI can read: videos, at paths without whitespace, with no empty span.
    let mut left_out: BTreeMap<String, u64> = BTreeMap::new();
    let mut kept: Vec<(&ManifestRow, String, String)> = Vec::new();
    for r in rows {
        if r.kind != MediaKind::Video {
            *left_out
                .entry("pictures (DALI's video reader reads videos)".into())
                .or_default() += 1;
            continue;
        }
        let path = framecull_model::local_path(root, &r.path)
            .to_string_lossy()
            .into_owned();
        if path.contains(char::is_whitespace) {
            *left_out
                .entry("paths with whitespace (the list has no quoting)".into())
                .or_default() += 1;
            continue;
        }
        let span = match (r.start_frame, r.end_frame) {
            (Some(s), Some(e)) if e > s => format!(" {s} {e}"),
            // An empty span would be dropped by DALI: say so here instead.
            (Some(_), Some(_)) => {
                *left_out.entry("empty spans".into()).or_default() += 1;
                continue;
            }
            // A whole video without frame numbers: no span, DALI reads it all.
            _ => String::new(),
        };
        kept.push((r, path, span));
    }
    let mut names: Vec<Option<&str>> = kept.iter().map(|k| k.0.label.as_deref()).collect();
    // Named labels in order, then the unlabelled (None sorts first: moved last).
    names.sort_unstable_by(|a, b| (a.is_none(), a).cmp(&(b.is_none(), b)));
    names.dedup();
    let number = |l: Option<&str>| names.iter().position(|n| *n == l).unwrap_or(0);
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    for (r, path, span) in &kept {
        let split = r.split.clone().unwrap_or_else(|| "all".into());
        let text = texts.entry(split).or_default();
        text.push_str(&format!("{path} {}{span}\n", number(r.label.as_deref())));
    }
    let lists = texts
        .keys()
        .map(|split| (split.clone(), format!("{stem}.dali.{split}.txt")))
        .collect();
    let index = DaliIndex {
        lists,
        labels: names.into_iter().map(|n| n.map(str::to_string)).collect(),
        frame_convention: "frames are 0-based indices in presentation order (as a decoder gives them out); a line's span is \
             [START, END): START included, END excluded (END - START frames); a line without \
             a span is the whole video",
        reader_arguments: serde_json::json!({
            "fn.readers.video": {"file_list_frame_num": true},
            "fn.experimental.readers.video": {
                "file_list_format": "frames",
                "file_list_include_end": false,
                "file_list_rounding": "start_down_end_up"
            }
        }),
        left_out,
    };
    (texts.into_iter().collect(), index)
}
