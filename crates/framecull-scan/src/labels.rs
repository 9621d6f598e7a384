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

/// The column names a label file's header may use (lower case).
const PATH_COLUMNS: [&str; 6] = ["path", "file", "filename", "file_name", "video", "image"];
const START_COLUMNS: [&str; 3] = ["start", "start_secs", "start_frame"];
const END_COLUMNS: [&str; 3] = ["end", "end_secs", "end_frame"];
const LABEL_COLUMNS: [&str; 4] = ["label", "labels", "class", "category"];

/// Read the rows of a label file, with notes on what it holds that is not imported.
pub fn read_rows(
    path: &Path,
    options: &ImportOptions,
) -> Result<(Vec<LabelRow>, Vec<String>), LabelError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| LabelError::Read {
        path: shown.clone(),
        source,
    })?;
    // Spreadsheets write a byte-order mark first; bytes that are not UTF-8 become U+FFFD in
    // their row (which then names no file and is reported), not an error for the file.
    let text = String::from_utf8_lossy(&bytes);
    let bytes = text.strip_prefix('\u{feff}').unwrap_or(&text).as_bytes();
    let template = options
        .path_template
        .as_deref()
        .map(Template::parse)
        .transpose()?;
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let json = matches!(ext.as_deref(), Some("jsonl" | "ndjson" | "json"))
        || bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let mut notes = Vec::new();
    let rows = if json {
        jsonl_rows(
            bytes,
            &shown,
            template.as_ref(),
            options.as_tags,
            &mut notes,
        )?
    } else {
        csv_rows(
            bytes,
            &shown,
            template.as_ref(),
            options.as_tags,
            &mut notes,
        )?
    };
    Ok((rows, notes))
}

/// The note on a label file's split column: splits are made at export.
const SPLIT_NOTE: &str = "the split column is not imported: an export assigns splits \
     (--split, --stratify label)";

/// The labels of a cell: the whole text, or with `multi` its `;`-separated parts.
fn labels_of(cell: &str, multi: bool) -> Vec<String> {
    let mut out: Vec<String> = if multi {
        cell.split(';')
            .filter_map(framecull_model::label_of)
            .collect()
    } else {
        framecull_model::label_of(cell).into_iter().collect()
    };
    out.dedup();
    out
}

fn csv_rows(
    bytes: &[u8],
    file: &str,
    template: Option<&Template>,
    multi: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<LabelRow>, LabelError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::Headers)
        .from_reader(bytes);
    let bad = |line: u64, why: String| LabelError::Format {
        path: file.to_string(),
        line,
        why,
    };
    let mut records = reader.records();
    let Some(first) = records.next() else {
        return Ok(Vec::new());
    };
    let first = first.map_err(|e| bad(1, e.to_string()))?;
    let first_line = first.position().map_or(1, |p| p.line());
    let lower: Vec<String> = first.iter().map(|c| c.to_ascii_lowercase()).collect();
    let find = |names: &[&str]| lower.iter().position(|c| names.contains(&c.as_str()));
    let header =
        find(&LABEL_COLUMNS).is_some() && (find(&PATH_COLUMNS).is_some() || template.is_some());
    if header && find(&["split"]).is_some() {
        notes.push(SPLIT_NOTE.into());
    }
    let columns = if header {
        Columns {
            path: find(&PATH_COLUMNS),
            // Frames when the file has them (a manifest has both): exact, not rounded.
            start: find(&["start_frame"]).or_else(|| find(&START_COLUMNS)),
            end: find(&["end_frame"]).or_else(|| find(&END_COLUMNS)),
            frames: [
                find(&["start_frame"]).is_some(),
                find(&["end_frame"]).is_some(),
            ],
            label: find(&LABEL_COLUMNS).unwrap_or_default(),
            names: lower.clone(),
        }
    } else {
        if template.is_some() {
            return Err(bad(
                1,
                "a path template names columns: the file needs a header row (e.g. \
                 label,youtube_id,time_start,time_end)"
                    .into(),
            ));
        }
        match first.len() {
            2 => Columns::positional(None),
            4 => Columns::positional(Some((1, 2))),
            n => {
                return Err(bad(
                    1,
                    format!(
                        "{n} columns and no header: a label file without a header has \
                         path,label or path,start,end,label"
                    ),
                ));
            }
        }
    };
    if let Some(t) = template {
        t.check(&columns.names)?;
    } else if columns.path.is_none() {
        return Err(bad(
            1,
            format!(
                "no path column ({}) and no --path-template",
                PATH_COLUMNS.join(", ")
            ),
        ));
    }
    let mut rows = Vec::new();
    let mut convert = |record: &csv::StringRecord, line: u64| -> Result<(), LabelError> {
        if record.iter().all(str::is_empty) {
            return Ok(());
        }
        // Cells trimmed, but a path as written: a file's name may start or end with spaces.
        let cell = |i: Option<usize>| {
            i.and_then(|i| record.get(i))
                .map(str::trim)
                .filter(|c| !c.is_empty())
        };
        let path = match template {
            Some(t) => t.render(|name| {
                let i = columns.names.iter().position(|n| n == name);
                cell(i).unwrap_or_default().to_string()
            }),
            None => columns
                .path
                .and_then(|i| record.get(i))
                .unwrap_or_default()
                .to_string(),
        };
        let frames = |i: Option<usize>, is_frames: bool| {
            cell(i).map(|c| {
                if is_frames && !c.starts_with('f') {
                    format!("f{c}")
                } else {
                    c.to_string()
                }
            })
        };
        rows.push(LabelRow {
            line,
            path,
            start: frames(columns.start, columns.frames[0]),
            end: frames(columns.end, columns.frames[1]),
            labels: labels_of(record.get(columns.label).unwrap_or_default(), multi),
        });
        Ok(())
    };
    if !header {
        convert(&first, first_line)?;
    }
    for record in records {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            bad(line, e.to_string())
        })?;
        let line = record.position().map_or(0, |p| p.line());
        convert(&record, line)?;
    }
    Ok(rows)
}

/// Where a CSV's fields are.
struct Columns {
    path: Option<usize>,
    start: Option<usize>,
    end: Option<usize>,
    /// The start and end columns are `start_frame` and `end_frame` (numbers are frames).
    frames: [bool; 2],
    label: usize,
    /// The header's names, lower case (empty without a header).
    names: Vec<String>,
}

impl Columns {
    fn positional(span: Option<(usize, usize)>) -> Self {
        Columns {
            path: Some(0),
            start: span.map(|s| s.0),
            end: span.map(|s| s.1),
            frames: [false, false],
            label: if span.is_some() { 3 } else { 1 },
            names: Vec::new(),
        }
    }
}

fn jsonl_rows(
    bytes: &[u8],
    file: &str,
    template: Option<&Template>,
    multi: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<LabelRow>, LabelError> {
    use serde_json::Value;
    let text = String::from_utf8_lossy(bytes);
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n as u64 + 1;
        let bad = |why: String| LabelError::Format {
            path: file.to_string(),
            line: line_no,
            why,
        };
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        let Value::Object(obj) = value else {
            return Err(bad("not a JSON object".into()));
        };
        if obj.contains_key("split") && notes.is_empty() {
            notes.push(SPLIT_NOTE.into());
        }
        let text_of = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let field = |names: &[&str]| {
            obj.iter()
                .find(|(k, _)| names.contains(&k.to_ascii_lowercase().as_str()))
                .map(|(_, v)| v)
        };
        let path = match template {
            Some(t) => {
                let names: Vec<String> = obj.keys().map(|k| k.to_ascii_lowercase()).collect();
                t.check(&names)?;
                t.render(|name| field(&[name]).map(text_of).unwrap_or_default())
            }
            None => field(&PATH_COLUMNS).map(text_of).ok_or_else(|| {
                bad(format!(
                    "no path ({}) and no --path-template",
                    PATH_COLUMNS.join(", ")
                ))
            })?,
        };
        let labels = match field(&LABEL_COLUMNS) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| framecull_model::label_of(&text_of(v)))
                .collect(),
            Some(v) => labels_of(&text_of(v), multi),
            None => Vec::new(),
        };
        // Frames when the row has them (a manifest row has both): exact, not rounded.
        let span = |frames: &str, names: &[&str]| {
            let given = |names: &[&str]| field(names).filter(|v| !v.is_null());
            match given(&[frames]) {
                Some(v) => {
                    let t = text_of(v);
                    Some(if t.starts_with('f') {
                        t
                    } else {
                        format!("f{t}")
                    })
                }
                None => given(names).map(text_of),
            }
        };
        rows.push(LabelRow {
            line: line_no,
            path,
            start: span("start_frame", &START_COLUMNS),
            end: span("end_frame", &END_COLUMNS),
            labels,
        });
    }
    Ok(rows)
}

/// A path template: text with `{column}` and `{column:0N}` fields.
#[derive(Debug)]
struct Template {
    parts: Vec<Part>,
    text: String,
}

#[derive(Debug)]
enum Part {
    Text(String),
    Field { name: String, width: usize },
}

impl Template {
    fn parse(text: &str) -> Result<Self, LabelError> {
        let bad = |why: &str| LabelError::Usage(format!("path template {text:?}: {why}"));
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| bad("a '{' without its '}'"))?
                + open;
            let field = &rest[open + 1..close];
            let (name, spec) = field.split_once(':').unwrap_or((field, ""));
            let width = match spec {
                "" => 0,
                s if s.starts_with('0') => s[1..]
                    .parse()
                    .map_err(|_| bad("write a width as {name:0N}, e.g. {time_start:06}"))?,
                _ => return Err(bad("write a width as {name:0N}, e.g. {time_start:06}")),
            };
            let name = name.trim().to_ascii_lowercase();
            if name.is_empty() {
                return Err(bad("an empty field {}"));
            }
            parts.push(Part::Field { name, width });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        if !parts.iter().any(|p| matches!(p, Part::Field { .. })) {
            return Err(bad("no field: name columns as {column}"));
        }
        Ok(Template {
            parts,
            text: text.to_string(),
        })
    }

    /// Every field names one of `columns`.
    fn check(&self, columns: &[String]) -> Result<(), LabelError> {
        for part in &self.parts {
            if let Part::Field { name, .. } = part
                && !columns.contains(name)
            {
                return Err(LabelError::Usage(format!(
                    "path template {:?}: no column {name:?} (columns: {})",
                    self.text,
                    columns.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn render(&self, value: impl Fn(&str) -> String) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Field { name, width } => {
                    let v = value(name);
                    for _ in v.chars().count()..*width {
                        out.push('0');
                    }
                    out.push_str(&v);
                }
            }
        }
        out
    }
}

/// The rows `--from-folders` makes: each file's first folder is its label. Files in no
/// folder are counted in the second value.
pub fn folder_rows(items: &[Item]) -> (Vec<LabelRow>, u64) {
    let mut at_root = 0;
    let rows = items
        .iter()
        .filter_map(|item| match item.path.split_once('/') {
            Some((folder, _)) => Some(LabelRow {
                line: 0,
                path: item.path.clone(),
                start: None,
                end: None,
                labels: framecull_model::label_of(folder).into_iter().collect(),
            }),
            None => {
                at_root += 1;
                None
            }
        })
        .collect();
    (rows, at_root)
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

    #[test]
    fn templates_pad_and_name_their_columns() {
        let t = Template::parse("{label}/{youtube_id}_{time_start:06}_{time_end:06}.mp4").unwrap();
        let path = t.render(|n| match n {
            "label" => "abseiling".into(),
            "youtube_id" => "0347ZoDXyP0".into(),
            "time_start" => "14".into(),
            _ => "24".into(),
        });
        assert_eq!(path, "abseiling/0347ZoDXyP0_000014_000024.mp4");
        assert!(Template::parse("{label").is_err());
        assert!(Template::parse("{t:6}").is_err());
        assert!(Template::parse("plain.mp4").is_err());
        let e = t.check(&["label".into(), "youtube_id".into()]).unwrap_err();
        assert!(e.to_string().contains("time_start"), "{e}");
    }
}
