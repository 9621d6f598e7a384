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
    Clip, ClipOrigin, Edit, FrameTimeline, Item, ItemId, MediaKind, Review, StreamChoice,
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

/// A target as a key: its kind (0 a file's label, 1 a file's tags, 2 a clip), the file, and a
/// clip's first and end frames (0 for a file).
type TargetKey = (u8, usize, usize, usize);

/// A target's wish: the labels asked and the rows asking (in file order).
type Wish<'r> = (Target, Vec<String>, Vec<&'r LabelRow>);

/// A video's frame timeline, or why it cannot be read, by video.
type Timelines = HashMap<ItemId, Result<FrameTimeline, TimelineError>>;

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
    let rows = source_rows(source, options, &items, &mut report.notes)?;
    report.rows = rows.len() as u64;
    let root = catalog
        .dataset_root()?
        .map(|r| r.to_string_lossy().into_owned());
    let index = PathIndex::new(&items);
    let mut timelines: Timelines = HashMap::new();
    // Each target's wish: the labels asked and the rows asking (in file order).
    let mut wishes: Vec<Wish<'_>> = Vec::new();
    let mut wish_of: HashMap<TargetKey, usize> = HashMap::new();
    for row in &rows {
        let Some(item) = row_file(row, &items, &index, root.as_deref(), &mut report) else {
            continue;
        };
        let asked = row_target(
            row,
            item,
            &items,
            options.as_tags,
            &mut timelines,
            timeline,
            &mut report,
        );
        if let Some(key) = asked {
            add_wish(&mut wishes, &mut wish_of, key, row);
        }
    }

    let reviews = catalog.all_reviews()?;
    let clips = catalog.all_clips()?;
    let edits = wish_edits(wishes, &items, &reviews, &clips, &timelines, &mut report);
    report.invalid.sort_by_key(|p| p.line);
    if !edits.is_empty() && !options.dry_run {
        report.operation = Some(catalog.apply(edits)?);
    }
    Ok(report)
}

/// The rows of the label file, or those the class folders make; notes on what is left aside
/// go to `notes`.
fn source_rows(
    source: LabelSource,
    options: &ImportOptions,
    items: &[Item],
    notes: &mut Vec<String>,
) -> Result<Vec<LabelRow>, LabelError> {
    let rows = match source {
        LabelSource::File(path) => {
            let (rows, read_notes) = read_rows(path, options)?;
            notes.extend(read_notes);
            rows
        }
        LabelSource::Folders => {
            let (rows, at_root) = folder_rows(items);
            if at_root > 0 {
                notes.push(format!(
                    "{} in no folder, left as they are",
                    framecull_model::count(at_root, "file")
                ));
            }
            rows
        }
    };
    Ok(rows)
}

/// A row that was not applied, with why.
fn problem(row: &LabelRow, why: String) -> RowProblem {
    RowProblem {
        line: row.line,
        path: row.path.clone(),
        why,
    }
}

/// The one file of the catalog that a row names (an index into `items`); a row that names
/// none or several is reported as unmatched or ambiguous.
fn row_file(
    row: &LabelRow,
    items: &[Item],
    index: &PathIndex<'_>,
    root: Option<&str>,
    report: &mut ImportReport,
) -> Option<usize> {
    // The path as written first (any name a file system allows), then tidied.
    let mut found = index.find(&row.path);
    if found.is_empty() {
        found = index.find(&normalise(&row.path, root));
    }
    match found.as_slice() {
        [] => {
            report
                .unmatched
                .push(problem(row, "no file of the catalog has this path".into()));
            None
        }
        [one] => Some(*one),
        several => {
            let names: Vec<&str> = several
                .iter()
                .take(3)
                .map(|&i| items[i].path.as_str())
                .collect();
            let more = if several.len() > 3 { ", …" } else { "" };
            report.ambiguous.push(problem(
                row,
                format!(
                    "{} files end with it: {}{more}",
                    several.len(),
                    names.join(", ")
                ),
            ));
            None
        }
    }
}

/// The target a row of file `item` asks for; `None` when the row cannot be applied, with why
/// in `report`. A row with a start and an end reads its video's timeline into `timelines`
/// (once per video).
fn row_target(
    row: &LabelRow,
    item: usize,
    items: &[Item],
    as_tags: bool,
    timelines: &mut Timelines,
    timeline: &mut dyn FnMut(&Item) -> Result<FrameTimeline, TimelineError>,
    report: &mut ImportReport,
) -> Option<TargetKey> {
    let why = match (&row.start, &row.end) {
        _ if row.labels.is_empty() => "no label".to_string(),
        _ if row.labels.len() > 1 && !as_tags => format!(
            "{} labels: a file or clip has one (--as-tags makes them tags)",
            row.labels.len()
        ),
        (None, None) => return Some((u8::from(as_tags), item, 0, 0)),
        (Some(_), Some(_)) if as_tags => "a clip has no tags: give a file's tags".to_string(),
        (Some(_), Some(_)) if items[item].kind != MediaKind::Video => {
            "a start and an end need a video".to_string()
        }
        (Some(start), Some(end)) => {
            let tl = timelines
                .entry(items[item].id)
                .or_insert_with(|| timeline(&items[item]));
            match tl
                .as_ref()
                .map(|tl| (tl.index_at(start, false), tl.index_at(end, true)))
            {
                Ok((Ok(s), Ok(e))) if e > s => return Some((2, item, s, e)),
                Ok((Ok(_), Ok(_))) => {
                    format!("the clip is empty: end {end} is not after start {start}")
                }
                Ok((Err(e), _) | (_, Err(e))) => e.to_string(),
                Err(e) => e.to_string(),
            }
        }
        _ => "a start without an end, or an end without a start".to_string(),
    };
    report.invalid.push(problem(row, why));
    None
}

/// Add a row's labels to the wish for `key`, starting a wish for a target not asked before.
fn add_wish<'r>(
    wishes: &mut Vec<Wish<'r>>,
    wish_of: &mut HashMap<TargetKey, usize>,
    key: TargetKey,
    row: &'r LabelRow,
) {
    let k = *wish_of.entry(key).or_insert_with(|| {
        let target = match key.0 {
            0 => Target::FileLabel(key.1),
            1 => Target::Tags(key.1),
            _ => Target::Clip(key.1, key.2, key.3),
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

/// The edits that grant the wishes, counted in `report`; wishes whose rows disagree on the
/// label are reported instead.
fn wish_edits(
    wishes: Vec<Wish<'_>>,
    items: &[Item],
    reviews: &HashMap<ItemId, Review>,
    clips: &HashMap<ItemId, Vec<Clip>>,
    timelines: &Timelines,
    report: &mut ImportReport,
) -> Vec<Edit> {
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
            Target::FileLabel(i) => label_edit(items[i].id, labels, reviews, report),
            Target::Tags(i) => tags_edit(items[i].id, labels, reviews, report),
            Target::Clip(i, s, e) => {
                let id = items[i].id;
                let Some(Ok(tl)) = timelines.get(&id) else {
                    continue;
                };
                clip_edit(tl, id, (s, e), labels, clips, report)
            }
        };
        match changed {
            Some(edit) => edits.push(edit),
            None => report.unchanged += asking.len() as u64,
        }
    }
    edits
}

/// The edit that gives file `id` its label; none when it has that label already.
fn label_edit(
    id: ItemId,
    labels: Vec<String>,
    reviews: &HashMap<ItemId, Review>,
    report: &mut ImportReport,
) -> Option<Edit> {
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

/// The edit that adds `labels` to file `id`'s tags; none when it has them all already.
fn tags_edit(
    id: ItemId,
    labels: Vec<String>,
    reviews: &HashMap<ItemId, Review>,
    report: &mut ImportReport,
) -> Option<Edit> {
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

/// The edit that labels the clip of file `id` over frames `span` (the start and the end),
/// adding the clip where the file has none over them; none when it has the label already.
fn clip_edit(
    tl: &FrameTimeline,
    id: ItemId,
    span: (usize, usize),
    labels: Vec<String>,
    clips: &HashMap<ItemId, Vec<Clip>>,
    report: &mut ImportReport,
) -> Option<Edit> {
    let (s, e) = span;
    let label = labels.into_iter().next();
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
