//! Label files read into rows: CSV (a header naming the columns, or Kinetics-style through a
//! path template), JSON lines, and the dataset's class folders.

use std::path::Path;

use framecull_model::Item;

use super::{ImportOptions, LabelError, LabelRow};

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
    let (columns, header) = csv_columns(&first, file, template, notes)?;
    let mut rows = Vec::new();
    if !header {
        rows.extend(csv_row(&first, first_line, &columns, template, multi));
    }
    for record in records {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            bad(line, e.to_string())
        })?;
        let line = record.position().map_or(0, |p| p.line());
        rows.extend(csv_row(&record, line, &columns, template, multi));
    }
    Ok(rows)
}

/// Where a CSV's fields are, from its first record, and whether that record is a header (the
/// first row of labels when not).
fn csv_columns(
    first: &csv::StringRecord,
    file: &str,
    template: Option<&Template>,
    notes: &mut Vec<String>,
) -> Result<(Columns, bool), LabelError> {
    let bad = |line: u64, why: String| LabelError::Format {
        path: file.to_string(),
        line,
        why,
    };
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
    Ok((columns, header))
}

/// The label row of a CSV record at `line`; none for a record whose cells are all empty.
fn csv_row(
    record: &csv::StringRecord,
    line: u64,
    columns: &Columns,
    template: Option<&Template>,
    multi: bool,
) -> Option<LabelRow> {
    if record.iter().all(str::is_empty) {
        return None;
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
    Some(LabelRow {
        line,
        path,
        start: frames(columns.start, columns.frames[0]),
        end: frames(columns.end, columns.frames[1]),
        labels: labels_of(record.get(columns.label).unwrap_or_default(), multi),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

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
