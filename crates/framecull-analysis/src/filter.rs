//! The one filter of the window, `framecull list --where` and `framecull export --where`:
//! ranges on measures, a flag code, a decision and text in the path; a file must match every
//! part. It reads and writes a small text form, so what the window shows can be typed on the
//! command line (the window shows it), e.g.
//! `motion_mean>=2 and 1<=duration_secs<=30 and flag:frozen and decision:accepted and path:cam1`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use framecull_model::{
    AnalysisLevel, Decision, Flag, Item, ItemId, Measure, Measured, Metrics, Review,
};

/// Each measure as a column over a list of files (NaN where a file has none): ranges are
/// checked column by column, which keeps brushing fluid on large catalogs.
pub type MeasureColumns = HashMap<Measure, Vec<f64>>;

/// The measures of `items` as columns.
pub fn measure_columns(items: &[Item], metrics: &[Option<&Metrics>]) -> MeasureColumns {
    Measure::ALL
        .into_iter()
        .map(|m| {
            let values = items
                .iter()
                .zip(metrics)
                .map(|(i, metrics)| m.of(i, metrics.map(Measured::from)).unwrap_or(f64::NAN))
                .collect();
            (m, values)
        })
        .collect()
}

/// What a filter needs to know of file `row` beyond its measures.
pub trait Rows {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn path(&self, row: usize) -> &str;
    fn has_flag(&self, row: usize, code: &str) -> bool;
    fn decision(&self, row: usize) -> Decision;
    fn level(&self, row: usize) -> AnalysisLevel;
    /// Whether the file's label or one of its clips' labels is `label`; with `None`, whether
    /// it has any label at all.
    fn has_label(&self, row: usize, label: Option<&str>) -> bool;
}

/// Whether a file with `file_label` and clips labelled `clip_labels` has `label` (any label,
/// with `None`): [`Rows::has_label`] of every kind of rows.
pub fn labelled<'a>(
    file_label: Option<&str>,
    mut clip_labels: impl Iterator<Item = &'a str>,
    label: Option<&str>,
) -> bool {
    match label {
        Some(l) => file_label == Some(l) || clip_labels.any(|c| c == l),
        None => file_label.is_some() || clip_labels.next().is_some(),
    }
}

/// Files as the catalog holds them.
pub struct CatalogRows<'a> {
    pub items: &'a [Item],
    /// Each item's metrics, at its index.
    pub metrics: &'a [Option<&'a Metrics>],
    pub flags: &'a HashMap<ItemId, Vec<Flag>>,
    pub reviews: &'a HashMap<ItemId, Review>,
    /// The labels of each file's clips ([`framecull_model`]'s clip labels by item).
    pub clip_labels: &'a HashMap<ItemId, Vec<String>>,
}

impl Rows for CatalogRows<'_> {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn path(&self, row: usize) -> &str {
        &self.items[row].path
    }

    fn has_flag(&self, row: usize, code: &str) -> bool {
        self.flags
            .get(&self.items[row].id)
            .is_some_and(|fs| fs.iter().any(|f| f.code == code))
    }

    fn decision(&self, row: usize) -> Decision {
        self.reviews
            .get(&self.items[row].id)
            .map(|r| r.decision)
            .unwrap_or_default()
    }

    fn level(&self, row: usize) -> AnalysisLevel {
        self.metrics[row].map_or(AnalysisLevel::None, |m| m.level)
    }

    fn has_label(&self, row: usize, label: Option<&str>) -> bool {
        let id = self.items[row].id;
        labelled(
            self.reviews.get(&id).and_then(|r| r.label.as_deref()),
            self.clip_labels
                .get(&id)
                .into_iter()
                .flatten()
                .map(String::as_str),
            label,
        )
    }
}

/// A filter's label term: `label:NAME`, or `label:none` for files without any label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabelTerm {
    /// No label on the file nor on any of its clips.
    None,
    /// This label on the file or on one of its clips.
    Is(String),
}

/// Rows must match all parts; an empty filter keeps everything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Filter {
    /// Closed ranges `[lo, hi]`; a file without the measure is in no range.
    pub ranges: Vec<(Measure, f64, f64)>,
    pub flag: Option<String>,
    pub decision: Option<Decision>,
    /// How far the file is analysed.
    pub level: Option<AnalysisLevel>,
    pub label: Option<LabelTerm>,
    /// Case-insensitive text the path must contain.
    pub search: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FilterError {
    #[error(
        "{term:?}: not a filter term (measure comparisons like motion_mean>2 or 1<=fps<=30, flag:CODE, decision:accepted|rejected|unreviewed, level:none|triage|deep, label:NAME|none, path:TEXT)"
    )]
    Term { term: String },
    #[error("{name:?} is not a measure; measures: {known}")]
    Measure { name: String, known: String },
    #[error("{text:?} is not a number")]
    Number { text: String },
    #[error("{text:?} is not a decision (accepted, rejected or unreviewed)")]
    Decision { text: String },
    #[error("{text:?} is not an analysis level (none, triage or deep)")]
    Level { text: String },
    #[error(
        "{text:?} is not a flag this version of framecull sets (framecull flags lists a project's)"
    )]
    Flag { text: String },
    #[error(
        "{key}: given twice; a filter takes one {key}: term (a second one would replace the first)"
    )]
    Repeated { key: String },
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
            && self.flag.is_none()
            && self.decision.is_none()
            && self.level.is_none()
            && self.label.is_none()
            && self.search.is_empty()
    }

    /// Narrow the range on `measure` to `[lo, hi]` (intersecting one already there).
    pub fn restrict(&mut self, measure: Measure, lo: f64, hi: f64) {
        match self.ranges.iter_mut().find(|r| r.0 == measure) {
            Some(r) => {
                r.1 = r.1.max(lo);
                r.2 = r.2.min(hi);
            }
            None => self.ranges.push((measure, lo, hi)),
        }
    }

    /// Indices of the rows that match, ascending.
    pub fn select(&self, rows: &impl Rows, columns: &MeasureColumns) -> Vec<usize> {
        let mut keep = vec![true; rows.len()];
        for (measure, lo, hi) in &self.ranges {
            match columns.get(measure) {
                // NaN (no value) is in no range.
                Some(values) => {
                    for (k, v) in keep.iter_mut().zip(values) {
                        *k &= *v >= *lo && *v <= *hi;
                    }
                }
                None => keep.fill(false),
            }
        }
        let search = self.search.to_lowercase();
        keep.iter()
            .enumerate()
            .filter(|&(i, k)| {
                *k && self.flag.as_ref().is_none_or(|code| rows.has_flag(i, code))
                    && self.decision.is_none_or(|d| rows.decision(i) == d)
                    && self.level.is_none_or(|l| rows.level(i) == l)
                    && self.label.as_ref().is_none_or(|l| match l {
                        LabelTerm::None => !rows.has_label(i, None),
                        LabelTerm::Is(name) => rows.has_label(i, Some(name)),
                    })
                    && (search.is_empty() || rows.path(i).to_lowercase().contains(&search))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Indices of the catalog's `items` that match (each item's metrics at its index, as
    /// `framecull_catalog::by_item` pairs them; flags and reviews by item id).
    pub fn select_items(
        &self,
        items: &[Item],
        metrics: &[Option<&Metrics>],
        flags: &HashMap<ItemId, Vec<Flag>>,
        reviews: &HashMap<ItemId, Review>,
        clip_labels: &HashMap<ItemId, Vec<String>>,
    ) -> Vec<usize> {
        if self.is_empty() {
            return (0..items.len()).collect();
        }
        let rows = CatalogRows {
            items,
            metrics,
            flags,
            reviews,
            clip_labels,
        };
        self.select(&rows, &measure_columns(items, metrics))
    }

    /// Parse the text form: terms joined by `and`.
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let mut filter = Filter::default();
        let mut keys = Vec::new();
        for term in split_terms(text) {
            if let Some((key, _)) = term.split_once(':') {
                let key = key.trim();
                // The filter holds one term of each key (one flag, one label, one path text).
                if keys.contains(&key) {
                    return Err(FilterError::Repeated { key: key.into() });
                }
                keys.push(key);
            }
            filter.add_term(term)?;
        }
        Ok(filter)
    }

    fn add_term(&mut self, term: &str) -> Result<(), FilterError> {
        if let Some((key, value)) = term.split_once(':') {
            let value = value.trim();
            match key.trim() {
                "flag" if !value.is_empty() => {
                    if !framecull_model::is_flag_code(value) {
                        return Err(FilterError::Flag {
                            text: value.to_string(),
                        });
                    }
                    self.flag = Some(value.to_string());
                }
                "decision" => {
                    self.decision =
                        Some(Decision::parse(value).ok_or_else(|| FilterError::Decision {
                            text: value.to_string(),
                        })?)
                }
                "level" => {
                    self.level =
                        Some(
                            AnalysisLevel::parse(value).ok_or_else(|| FilterError::Level {
                                text: value.to_string(),
                            })?,
                        )
                }
                "label" if !value.is_empty() => {
                    let name = unquote(value);
                    self.label = Some(if value == "none" {
                        LabelTerm::None
                    } else {
                        LabelTerm::Is(name)
                    });
                }
                "path" => self.search = unquote(value),
                _ => {
                    return Err(FilterError::Term {
                        term: term.to_string(),
                    });
                }
            }
            return Ok(());
        }
        let (parts, ops) = split_comparison(term);
        let (measure, lo, hi) = match (parts.as_slice(), ops.as_slice()) {
            // measure OP number
            ([m, v], [op]) => {
                let (m, v) = (measure(m)?, number(v)?);
                let (lo, hi) = bounds(op, v);
                (m, lo, hi)
            }
            // number OP measure OP number (both `<` or `<=`)
            ([a, m, b], [op1, op2]) if op1.starts_with('<') && op2.starts_with('<') => {
                let (a, m, b) = (number(a)?, measure(m)?, number(b)?);
                let lo = if *op1 == "<" { a.next_up() } else { a };
                let hi = if *op2 == "<" { b.next_down() } else { b };
                (m, lo, hi)
            }
            _ => {
                return Err(FilterError::Term {
                    term: term.to_string(),
                });
            }
        };
        self.restrict(measure, lo, hi);
        Ok(())
    }

    /// The text form, which [`Filter::parse`] reads back to the same filter.
    pub fn to_text(&self) -> String {
        let mut terms: Vec<String> = self
            .ranges
            .iter()
            .map(|&(m, lo, hi)| {
                let (lo_strict, lo) = shortest(lo, f64::next_down);
                let (hi_strict, hi) = shortest(hi, f64::next_up);
                let lt = |strict| if strict { "<" } else { "<=" };
                let gt = |strict| if strict { ">" } else { ">=" };
                match (lo == f64::NEG_INFINITY, hi == f64::INFINITY) {
                    (true, true) => format!("{m}>=-inf"),
                    (true, false) => format!("{m}{}{hi:?}", lt(hi_strict)),
                    (false, true) => format!("{m}{}{lo:?}", gt(lo_strict)),
                    (false, false) if lo == hi => format!("{m}={lo:?}"),
                    (false, false) => {
                        format!("{lo:?}{}{m}{}{hi:?}", lt(lo_strict), lt(hi_strict))
                    }
                }
            })
            .collect();
        if let Some(code) = &self.flag {
            terms.push(format!("flag:{code}"));
        }
        if let Some(d) = self.decision {
            terms.push(format!("decision:{}", d.as_str()));
        }
        if let Some(l) = self.level {
            terms.push(format!("level:{}", l.as_str()));
        }
        match &self.label {
            Some(LabelTerm::None) => terms.push("label:none".into()),
            // A label named "none" is written quoted, which reads back as the name.
            Some(LabelTerm::Is(name)) if name == "none" => terms.push("label:\"none\"".into()),
            Some(LabelTerm::Is(name)) => terms.push(format!("label:{}", quote(name))),
            None => {}
        }
        if !self.search.is_empty() {
            terms.push(format!("path:{}", quote(&self.search)));
        }
        terms.join(" and ")
    }
}

/// A bound as people write it: `(true, w)` when `v` is the float next to a shorter number `w`
/// (`step` goes from `v` towards `w`), so `>2` reads back as `>2`, not `>=2.0000000000000004`.
fn shortest(v: f64, step: fn(f64) -> f64) -> (bool, f64) {
    let w = step(v);
    if v.is_finite() && format!("{w:?}").len() < format!("{v:?}").len() {
        (true, w)
    } else {
        (false, v)
    }
}

/// Terms joined by ` and ` (any case), `&&` or `,`; separators inside double quotes (a
/// quoted `path:"…"`) do not count.
fn split_terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let (mut start, mut i, mut quoted) = (0, 0, false);
    while i < bytes.len() {
        let rest = &bytes[i..];
        let sep = if quoted {
            0
        } else if rest.len() >= 5 && rest[..5].eq_ignore_ascii_case(b" and ") {
            5
        } else if rest.starts_with(b"&&") {
            2
        } else if rest[0] == b',' {
            1
        } else {
            0
        };
        match bytes[i] {
            b'\\' if quoted => i += 1,
            b'"' => quoted = !quoted,
            _ => {}
        }
        if sep > 0 {
            out.push(&text[start..i]);
            i += sep;
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(text.get(start..).unwrap_or_default());
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

/// `text`, or `"text"` with `\` and `"` escaped when it holds what would end a term or
/// be trimmed.
fn quote(text: &str) -> String {
    let plain = !text.contains(['"', '\\', ','])
        && !text.contains("&&")
        && !text.to_ascii_lowercase().contains(" and ")
        && text.trim() == text;
    if plain {
        return text.to_string();
    }
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The text of a term value, unquoted when it is quoted.
fn unquote(value: &str) -> String {
    match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => {
            let mut out = String::new();
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                out.push(if c == '\\' {
                    chars.next().unwrap_or(c)
                } else {
                    c
                });
            }
            out
        }
        None => value.to_string(),
    }
}

/// `a<=b<c` → (["a", "b", "c"], ["<=", "<"]).
fn split_comparison(term: &str) -> (Vec<&str>, Vec<&str>) {
    let mut parts = Vec::new();
    let mut ops = Vec::new();
    let mut start = 0;
    let mut i = 0;
    let b = term.as_bytes();
    while i < b.len() {
        let op = match (b[i], b.get(i + 1)) {
            (b'<' | b'>', Some(b'=')) => 2,
            (b'<' | b'>' | b'=', _) => 1,
            _ => 0,
        };
        if op > 0 && i > start {
            parts.push(term[start..i].trim());
            ops.push(&term[i..i + op]);
            i += op;
            start = i;
        } else {
            i += 1;
        }
    }
    parts.push(term[start..].trim());
    (parts, ops)
}

fn measure(name: &str) -> Result<Measure, FilterError> {
    Measure::parse(name).ok_or_else(|| FilterError::Measure {
        name: name.to_string(),
        known: Measure::ALL.map(Measure::name).join(", "),
    })
}

fn number(text: &str) -> Result<f64, FilterError> {
    text.parse::<f64>()
        .ok()
        .filter(|v| !v.is_nan())
        .ok_or_else(|| FilterError::Number {
            text: text.to_string(),
        })
}

/// The closed range of `measure OP v`.
fn bounds(op: &str, v: f64) -> (f64, f64) {
    match op {
        ">" => (v.next_up(), f64::INFINITY),
        ">=" => (v, f64::INFINITY),
        "<" => (f64::NEG_INFINITY, v.next_down()),
        "<=" => (f64::NEG_INFINITY, v),
        _ => (v, v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(Vec<(&'static str, &'static str, Decision)>);

    impl Rows for Fake {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn path(&self, row: usize) -> &str {
            self.0[row].0
        }
        fn has_flag(&self, row: usize, code: &str) -> bool {
            self.0[row].1 == code
        }
        fn decision(&self, row: usize) -> Decision {
            self.0[row].2
        }
        /// Files under `a/` are triaged, the others analysed deeply.
        fn level(&self, row: usize) -> AnalysisLevel {
            if self.0[row].0.starts_with("a/") {
                AnalysisLevel::Triage
            } else {
                AnalysisLevel::Deep
            }
        }
        /// Row 0 is labelled `dog` as a file, row 2 has clips labelled `cat` and `dog`.
        fn has_label(&self, row: usize, label: Option<&str>) -> bool {
            let (file, clips): (Option<&str>, &[&str]) = match row {
                0 => (Some("dog"), &[]),
                2 => (None, &["cat", "dog"]),
                _ => (None, &[]),
            };
            labelled(file, clips.iter().copied(), label)
        }
    }

    #[test]
    fn terms_parse_to_closed_ranges_and_round_trip_through_text() {
        let f = Filter::parse(
            "motion_mean>2 and 1<=duration_secs<30 AND flag:frozen && decision:accepted, path:Cam 1",
        )
        .unwrap();
        assert_eq!(f.ranges.len(), 2);
        assert_eq!(
            f.ranges[0],
            (Measure::MotionMean, 2f64.next_up(), f64::INFINITY)
        );
        assert_eq!(f.ranges[1], (Measure::DurationSecs, 1.0, 30f64.next_down()));
        assert_eq!(f.flag.as_deref(), Some("frozen"));
        assert_eq!(f.decision, Some(Decision::Accepted));
        assert_eq!(f.search, "Cam 1");
        assert_eq!(
            f.to_text(),
            "motion_mean>2.0 and 1.0<=duration_secs<30.0 and flag:frozen and decision:accepted and path:Cam 1"
        );
        assert_eq!(Filter::parse(&f.to_text()).unwrap(), f);
        // Two terms on one measure intersect; `=` is a point.
        let g = Filter::parse("fps>=24 and fps<=30 and width=640").unwrap();
        assert_eq!(
            g.ranges,
            vec![(Measure::Fps, 24.0, 30.0), (Measure::Width, 640.0, 640.0)]
        );
        assert_eq!(Filter::parse(&g.to_text()).unwrap(), g);
        assert!(Filter::parse("  ").unwrap().is_empty());
    }

    #[test]
    fn bad_terms_say_what_is_wrong() {
        let e = |t: &str| Filter::parse(t).unwrap_err().to_string();
        assert!(e("motion>2").contains("motion_mean"), "{}", e("motion>2"));
        assert!(e("fps>fast").contains("not a number"));
        assert!(e("decision:maybe").contains("accepted"));
        assert!(e("level:shallow").contains("none, triage or deep"));
        assert!(e("colour:red").contains("not a filter term"));
        assert!(e("fps").contains("not a filter term"));
        assert!(e("1<fps>3").contains("not a filter term"));
    }

    #[test]
    fn rows_must_match_every_part_and_missing_values_match_no_range() {
        let rows = Fake(vec![
            ("a/cam1.mp4", "frozen", Decision::Accepted),
            ("a/cam2.mp4", "frozen", Decision::Unreviewed),
            ("b/CAM1.jpg", "", Decision::Accepted),
            ("b/cam1-still.jpg", "frozen", Decision::Accepted),
        ]);
        let columns: MeasureColumns = [(Measure::MotionMean, vec![3.0, 5.0, 9.0, f64::NAN])].into();
        let f = Filter::parse("motion_mean>2 and decision:accepted").unwrap();
        assert_eq!(f.select(&rows, &columns), vec![0, 2]);
        let f = Filter::parse("flag:frozen and path:cam1").unwrap();
        assert_eq!(f.select(&rows, &columns), vec![0, 3]);
        let f = Filter::parse("path:cam1 and motion_mean<=100").unwrap();
        assert_eq!(f.select(&rows, &columns), vec![0, 2]);
        // A measure no file has: nothing matches.
        let f = Filter::parse("sharpness>0").unwrap();
        assert!(f.select(&rows, &columns).is_empty());
        assert_eq!(Filter::default().select(&rows, &columns), vec![0, 1, 2, 3]);
        let f = Filter::parse("level:triage").unwrap();
        assert_eq!(f.select(&rows, &columns), vec![0, 1]);
        let f = Filter::parse("level:deep and flag:frozen").unwrap();
        assert_eq!(f.select(&rows, &columns), vec![3]);
        assert_eq!(Filter::parse(&f.to_text()).unwrap(), f);
        assert!(
            Filter::parse("level:none")
                .unwrap()
                .select(&rows, &columns)
                .is_empty()
        );
    }

    #[test]
    fn label_terms_match_file_or_clip_labels_and_none_matches_the_unlabelled() {
        let rows = Fake(vec![
            ("a/dog.mp4", "", Decision::Accepted),
            ("a/plain.mp4", "", Decision::Accepted),
            ("b/both.mp4", "", Decision::Accepted),
            ("b/plain.jpg", "", Decision::Rejected),
        ]);
        let columns = MeasureColumns::new();
        let sel = |t: &str| Filter::parse(t).unwrap().select(&rows, &columns);
        assert_eq!(sel("label:dog"), vec![0, 2]);
        assert_eq!(sel("label:cat"), vec![2]);
        assert_eq!(sel("label:none"), vec![1, 3]);
        assert_eq!(sel("label:none and decision:rejected"), vec![3]);
        assert!(sel("label:bird").is_empty());
        for label in [
            LabelTerm::None,
            LabelTerm::Is("none".into()),
            LabelTerm::Is("playing guitar".into()),
            LabelTerm::Is("a and b, c".into()),
        ] {
            let f = Filter {
                label: Some(label),
                ..Filter::default()
            };
            assert_eq!(Filter::parse(&f.to_text()).unwrap(), f, "{}", f.to_text());
        }
    }

    #[test]
    fn path_text_with_separators_quotes_or_other_scripts_round_trips() {
        for search in [
            "rock and roll",
            "a,b && c",
            "say \"hi\"",
            "back\\slash",
            " padded ",
            "café/Ünïcode 東京",
        ] {
            let f = Filter {
                search: search.into(),
                flag: Some("frozen".into()),
                ..Filter::default()
            };
            let text = f.to_text();
            assert_eq!(Filter::parse(&text).unwrap(), f, "{text}");
        }
        // Non-ASCII text before a separator (byte offsets inside a character).
        let f = Filter::parse("path:é and flag:vfr").unwrap();
        assert_eq!((f.search.as_str(), f.flag.as_deref()), ("é", Some("vfr")));
        // A code no flag has, an outlier's on any measure.
        assert!(matches!(
            Filter::parse("flag:frozn"),
            Err(FilterError::Flag { .. })
        ));
        assert!(matches!(
            Filter::parse("flag:vfr and flag:frozen"),
            Err(FilterError::Repeated { .. })
        ));
        assert!(Filter::parse("flag:outlier_brightness").is_ok());
    }
}
