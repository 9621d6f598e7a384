//! Labels in and out. [`import`] reads a label file (CSV or JSON lines of `path[, start,
//! end], label`, a Kinetics-style CSV through a path template) or the dataset's class
//! folders, matches each row to a file of the catalog (and, with a start and an end, to a
//! clip of it), and applies what matched as one journaled operation, which one `undo`
//! takes back. Rows that match no file, or more than one, or that contradict each other are
//! reported and never applied. [`export`] writes the catalog's labels back in the CSV form
//! [`import`] reads, so a round trip changes nothing.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use framecull_catalog::{Catalog, CatalogError};
use framecull_media::Source;
use framecull_media::decode::{DecodeError, frame_timestamps};
use framecull_model::{
    Clip, ClipOrigin, Edit, FrameTimeline, Item, ItemId, MediaKind, StreamChoice,
};
use framecull_storage::Root;

mod read;
pub use read::{folder_rows, read_rows};

/// Where the labels come from.
#[derive(Debug, Clone, Copy)]
pub enum LabelSource<'a> {
    /// A CSV file, or JSON lines (`.jsonl`, `.ndjson`, or text starting with `{`).
    File(&'a Path),
    /// Each file's first folder under the dataset root is its class (ImageFolder, UCF-101).
    Folders,
}

#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Makes each row's path from its columns, e.g. the Kinetics layout's
    /// `{label}/{youtube_id}_{time_start:06}_{time_end:06}.mp4` (`{name:0N}` pads with zeros
    /// to N characters). The rows are then labels of whole files.
    pub path_template: Option<String>,
    /// The labels become tags of the files (a cell may hold several, split at `;`).
    pub as_tags: bool,
    /// Report what would change; change nothing.
    pub dry_run: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LabelError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}, line {line}: {why}")]
    Format {
        path: String,
        line: u64,
        why: String,
    },
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("writing the labels: {0}")]
    Write(String),
}

/// One row of a label file: the file it names, an optional clip span (seconds on the
/// stream's clock or frames written `f120`, as `clips add` takes them) and its labels.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelRow {
    /// Line in the label file (1-based; 0 for rows made from folders).
    pub line: u64,
    pub path: String,
    pub start: Option<String>,
    pub end: Option<String>,
    pub labels: Vec<String>,
}

/// A row that was not applied, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowProblem {
    pub line: u64,
    pub path: String,
    pub why: String,
}

/// What an import found and did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// Rows read (for `--from-folders`, files in a folder).
    pub rows: u64,
    /// Rows matched to one file (and clip) and consistent with the other rows.
    pub matched: u64,
    /// Rows that name no file of the catalog.
    pub unmatched: Vec<RowProblem>,
    /// Rows that name several files (a name or a stem that more than one path ends with).
    pub ambiguous: Vec<RowProblem>,
    /// Rows that cannot be applied: a bad span, several labels without `--as-tags`, a
    /// label that another row contradicts.
    pub invalid: Vec<RowProblem>,
    /// Changes: files given a label, clips given one, clips added, files given tags.
    pub files_labelled: u64,
    pub clips_labelled: u64,
    pub clips_added: u64,
    pub files_tagged: u64,
    /// Matched rows that change nothing (the label is already there).
    pub unchanged: u64,
    /// Notes on columns or files left aside (a split column, files in no folder).
    pub notes: Vec<String>,
    /// The journal's operation (none for a dry run or when nothing changes).
    pub operation: Option<i64>,
    pub dry_run: bool,
}

impl ImportReport {
    /// Whether some rows were not applied.
    pub fn has_problems(&self) -> bool {
        !(self.unmatched.is_empty() && self.ambiguous.is_empty() && self.invalid.is_empty())
    }
}

/// The catalog's files by the ways a label file may name them: the relative path, and the
/// shorter paths, names and stems (without the extension) each path ends with.
struct PathIndex<'a> {
    exact: HashMap<&'a str, usize>,
    ends: HashMap<&'a str, Vec<usize>>,
}

impl<'a> PathIndex<'a> {
    fn new(items: &'a [Item]) -> Self {
        let mut exact = HashMap::with_capacity(items.len());
        let mut ends: HashMap<&str, Vec<usize>> = HashMap::with_capacity(items.len() * 2);
        for (i, item) in items.iter().enumerate() {
            let p = item.path.as_str();
            exact.insert(p, i);
            let mut add = |key: &'a str| {
                let v = ends.entry(key).or_default();
                if v.last() != Some(&i) {
                    v.push(i);
                }
            };
            let starts = std::iter::once(0).chain(p.match_indices('/').map(|(k, _)| k + 1));
            for s in starts {
                let end = &p[s..];
                if s > 0 {
                    add(end);
                }
                let name_at = end.rfind('/').map_or(0, |k| k + 1);
                if let Some(dot) = end[name_at..].rfind('.').filter(|&d| d > 0) {
                    add(&end[..name_at + dot]);
                }
            }
        }
        PathIndex { exact, ends }
    }

    /// The files `path` names: one, several (ambiguous) or none.
    fn find(&self, path: &str) -> Vec<usize> {
        if let Some(&i) = self.exact.get(path) {
            return vec![i];
        }
        self.ends.get(path).cloned().unwrap_or_default()
    }
}

/// A row's path as the catalog writes paths: `/`-separated, relative to the dataset root
/// (an absolute path inside a local root loses the root).
fn normalise(path: &str, root: Option<&str>) -> String {
    let mut p = path.trim().replace('\\', "/");
    if let Some(root) = root {
        let root = root.trim_end_matches('/');
        if let Some(rest) = p.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
            p = rest.to_string();
        }
    }
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    p
}

/// What one file or clip is asked to become, and the rows that ask.
enum Target {
    FileLabel(usize),
    Tags(usize),
    Clip(usize, usize, usize),
}

/// Import labels: match `rows` to the catalog's files and clips and apply them as one
/// operation (none with `dry_run`). `timeline` reads a video's frame timeline (for rows
/// with a start and an end), once per video.
pub fn import(
    catalog: &mut Catalog,
    source: LabelSource,
    options: &ImportOptions,
    timeline: &mut dyn FnMut(&Item) -> Result<FrameTimeline, TimelineError>,
) -> Result<ImportReport, LabelError> {
    let items = catalog.items()?;
    let mut report = ImportReport {
        dry_run: options.dry_run,
        ..ImportReport::default()
    };
    let rows = match source {
        LabelSource::File(path) => {
            let (rows, notes) = read_rows(path, options)?;
            report.notes.extend(notes);
            rows
        }
        LabelSource::Folders => {
            let (rows, at_root) = folder_rows(&items);
            if at_root > 0 {
                report.notes.push(format!(
                    "{} in no folder, left as they are",
                    framecull_model::count(at_root, "file")
                ));
            }
            rows
        }
    };
    report.rows = rows.len() as u64;
    let root = catalog
        .dataset_root()?
        .map(|r| r.to_string_lossy().into_owned());
    let index = PathIndex::new(&items);
    let mut timelines: HashMap<ItemId, Result<FrameTimeline, TimelineError>> = HashMap::new();
    // Each target's wish: the labels asked and the rows asking (in file order).
    let mut wishes: Vec<(Target, Vec<String>, Vec<&LabelRow>)> = Vec::new();
    let mut wish_of: HashMap<(u8, usize, usize, usize), usize> = HashMap::new();
    for row in &rows {
        let problem = |why: String| RowProblem {
            line: row.line,
            path: row.path.clone(),
            why,
        };
        // The path as written first (any name a file system allows), then tidied.
        let mut found = index.find(&row.path);
        if found.is_empty() {
            found = index.find(&normalise(&row.path, root.as_deref()));
        }
        let item = match found.as_slice() {
            [] => {
                report
                    .unmatched
                    .push(problem("no file of the catalog has this path".into()));
                continue;
            }
            [one] => *one,
            several => {
                let names: Vec<&str> = several
                    .iter()
                    .take(3)
                    .map(|&i| items[i].path.as_str())
                    .collect();
                let more = if several.len() > 3 { ", …" } else { "" };
                report.ambiguous.push(problem(format!(
                    "{} files end with it: {}{more}",
                    several.len(),
                    names.join(", ")
                )));
                continue;
            }
        };
        if row.labels.is_empty() {
            report.invalid.push(problem("no label".into()));
            continue;
        }
        if row.labels.len() > 1 && !options.as_tags {
            report.invalid.push(problem(format!(
                "{} labels: a file or clip has one (--as-tags makes them tags)",
                row.labels.len()
            )));
            continue;
        }
        let key = match (&row.start, &row.end) {
            (None, None) if options.as_tags => (1, item, 0, 0),
            (None, None) => (0, item, 0, 0),
            (Some(start), Some(end)) => {
                if options.as_tags {
                    report
                        .invalid
                        .push(problem("a clip has no tags: give a file's tags".into()));
                    continue;
                }
                if items[item].kind != MediaKind::Video {
                    report
                        .invalid
                        .push(problem("a start and an end need a video".into()));
                    continue;
                }
                let tl = timelines
                    .entry(items[item].id)
                    .or_insert_with(|| timeline(&items[item]));
                let span = tl.as_ref().map_err(|e| e.to_string()).and_then(|tl| {
                    let s = tl.index_at(start, false).map_err(|e| e.to_string())?;
                    let e = tl.index_at(end, true).map_err(|e| e.to_string())?;
                    if e > s {
                        Ok((s, e))
                    } else {
                        Err(format!(
                            "the clip is empty: end {end} is not after start {start}"
                        ))
                    }
                });
                match span {
                    Ok((s, e)) => (2, item, s, e),
                    Err(why) => {
                        report.invalid.push(problem(why));
                        continue;
                    }
                }
            }
            _ => {
                report.invalid.push(problem(
                    "a start without an end, or an end without a start".into(),
                ));
                continue;
            }
        };
        let k = *wish_of.entry(key).or_insert_with(|| {
            let target = match key.0 {
                0 => Target::FileLabel(item),
                1 => Target::Tags(item),
                _ => Target::Clip(item, key.2, key.3),
            };
            wishes.push((target, Vec::new(), Vec::new()));
            wishes.len() - 1
        });
        let (_, labels, asking) = &mut wishes[k];
        for l in &row.labels {
            if !labels.contains(l) {
                labels.push(l.clone());
            }
        }
        asking.push(row);
    }

    let reviews = catalog.all_reviews()?;
    let clips = catalog.all_clips()?;
    let mut edits = Vec::new();
    for (target, labels, asking) in wishes {
        if !matches!(target, Target::Tags(_)) && labels.len() > 1 {
            let said: Vec<String> = asking
                .iter()
                .map(|r| format!("line {}: {}", r.line, r.labels.join(";")))
                .collect();
            for r in &asking {
                report.invalid.push(RowProblem {
                    line: r.line,
                    path: r.path.clone(),
                    why: format!("rows disagree on the label ({})", said.join(", ")),
                });
            }
            continue;
        }
        report.matched += asking.len() as u64;
        let changed = match target {
            Target::FileLabel(i) => {
                let id = items[i].id;
                let before = reviews.get(&id).and_then(|r| r.label.clone());
                let after = labels.into_iter().next();
                (before != after).then(|| {
                    report.files_labelled += 1;
                    Edit::Label {
                        item: id,
                        before,
                        after,
                    }
                })
            }
            Target::Tags(i) => {
                let id = items[i].id;
                let before = reviews.get(&id).map(|r| r.tags.clone()).unwrap_or_default();
                let mut after = before.clone();
                after.extend(labels.into_iter().filter(|l| !before.contains(l)));
                (after != before).then(|| {
                    report.files_tagged += 1;
                    Edit::Tags {
                        item: id,
                        before,
                        after,
                    }
                })
            }
            Target::Clip(i, s, e) => {
                let id = items[i].id;
                let label = labels.into_iter().next();
                let Some(Ok(tl)) = timelines.get(&id) else {
                    continue;
                };
                let new = tl.clip(id, s, e, label.clone(), ClipOrigin::Manual);
                let existing = clips
                    .get(&id)
                    .and_then(|cs| cs.iter().find(|c| same_span(c, &new)));
                match existing {
                    Some(c) if c.label == label => None,
                    Some(c) => {
                        report.clips_labelled += 1;
                        Some(Edit::ClipLabel {
                            clip: c.id,
                            before: c.label.clone(),
                            after: label,
                        })
                    }
                    None => {
                        report.clips_added += 1;
                        Some(Edit::AddClip { clip: new })
                    }
                }
            }
        };
        match changed {
            Some(edit) => edits.push(edit),
            None => report.unchanged += asking.len() as u64,
        }
    }
    report.invalid.sort_by_key(|p| p.line);
    if !edits.is_empty() && !options.dry_run {
        report.operation = Some(catalog.apply(edits)?);
    }
    Ok(report)
}

/// Why a video's frame timeline cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error("{}: {source}", .location.display())]
    Unreadable {
        location: std::path::PathBuf,
        source: DecodeError,
    },
    #[error("{}: no frames", .location.display())]
    NoFrames { location: std::path::PathBuf },
    #[error("the project records no dataset folder")]
    NoRoot,
}

/// A video's frame timeline, read from its packets (a file's or an object's): where the
/// spans of `clips add` and of label rows are counted.
pub fn frame_timeline(root: &Root, item: &Item) -> Result<FrameTimeline, TimelineError> {
    let source = Source::in_root(root, &item.path, item.size_bytes);
    let location = source.location();
    let (pts, time_base) =
        match frame_timestamps(&source, StreamChoice::recorded(item.info.stream_index)) {
            Ok(read) => read,
            Err(source) => return Err(TimelineError::Unreadable { location, source }),
        };
    if pts.is_empty() {
        return Err(TimelineError::NoFrames { location });
    }
    Ok(FrameTimeline { pts, time_base })
}

/// Whether two clips of a file cover the same frames.
fn same_span(a: &Clip, b: &Clip) -> bool {
    a.start_pts == b.start_pts && a.end_pts == b.end_pts && a.time_base == b.time_base
}

/// Write the catalog's labels as CSV (`path,start,end,label`): a row per labelled file
/// (no span) and per labelled clip (its frames, `f120`), by path. Returns the rows written.
pub fn export(catalog: &Catalog, out: &mut dyn Write) -> Result<u64, LabelError> {
    let items = catalog.items()?;
    let reviews = catalog.all_reviews()?;
    let clips = catalog.all_clips()?;
    let mut order: Vec<&Item> = items.iter().collect();
    order.sort_by(|a, b| a.path.cmp(&b.path));
    let mut w = csv::Writer::from_writer(out);
    let err = |e: csv::Error| LabelError::Write(e.to_string());
    w.write_record(["path", "start", "end", "label"])
        .map_err(err)?;
    let mut n = 0;
    for item in order {
        if let Some(label) = reviews.get(&item.id).and_then(|r| r.label.as_deref()) {
            w.write_record([item.path.as_str(), "", "", label])
                .map_err(err)?;
            n += 1;
        }
        for c in clips.get(&item.id).into_iter().flatten() {
            let Some(label) = &c.label else {
                continue;
            };
            // Frames, exact; a clip stored without them, its seconds in full.
            let (start, end) = match (c.start_frame, c.end_frame) {
                (Some(s), Some(e)) => (format!("f{s}"), format!("f{e}")),
                _ => (format!("{:?}", c.start_secs), format!("{:?}", c.end_secs)),
            };
            w.write_record([&item.path, &start, &end, label])
                .map_err(err)?;
            n += 1;
        }
    }
    w.flush().map_err(|e| LabelError::Write(e.to_string()))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: i64, path: &str) -> Item {
        Item {
            id,
            path: path.into(),
            kind: MediaKind::Video,
            status: framecull_model::ItemStatus::Ok,
            error: None,
            size_bytes: 0,
            mtime_ns: 0,
            fingerprint: None,
            info: Default::default(),
        }
    }

    #[test]
    fn paths_match_exactly_or_by_a_unique_ending_name_or_stem() {
        let items = [
            item(1, "a/cam1/clip.mp4"),
            item(2, "b/cam1/clip.mp4"),
            item(3, "b/other.mp4"),
            item(4, "x.y/noext"),
        ];
        let index = PathIndex::new(&items);
        assert_eq!(index.find("a/cam1/clip.mp4"), vec![0]);
        assert_eq!(index.find("other.mp4"), vec![2]);
        assert_eq!(index.find("other"), vec![2]);
        assert_eq!(index.find("b/other"), vec![2]);
        assert_eq!(index.find("clip.mp4"), vec![0, 1]);
        assert_eq!(index.find("cam1/clip"), vec![0, 1]);
        assert_eq!(index.find("noext"), vec![3]);
        // A dot in a folder's name is not an extension.
        assert!(index.find("x").is_empty());
        assert!(index.find("b/cam1").is_empty());
        assert_eq!(normalise("./a\\b.mp4", None), "a/b.mp4");
        assert_eq!(normalise("/data/set/a.mp4", Some("/data/set/")), "a.mp4");
    }
}
