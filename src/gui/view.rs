//! What the window shows, loaded from the catalog off the UI thread, and the filters on it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use std::collections::HashMap;

use super::review_state::{ReviewState, RowLabels};
use crate::analysis::dups::{BestBy, DEFAULT_BEST_ORDER};
pub use crate::analysis::filter::{Filter, MeasureColumns};
use crate::analysis::filter::{Rows, labelled};
use crate::analysis::flags::Config;
use crate::analysis::histogram::{HISTOGRAMS, Histogram, histogram_of};
use crate::analysis::rules::{self, Setting};
use crate::catalog::{Catalog, ItemFields, Project, by_item, sort_by_path};
use crate::media::Source;
use crate::model::{
    AnalysisLevel, Decision, Flag, Item, ItemId, ItemStatus, Measure, Measured, MediaKind, Severity,
};
use crate::scan::curate::{DupGroup, dup_groups};
use crate::storage::Root;

mod sort;
pub use sort::{SortKey, sort_rows};

/// One file as the table and filters need it.
#[derive(Debug, Clone)]
pub struct ViewRow {
    pub id: crate::model::ItemId,
    pub path: String,
    /// Thumbnail cache key: the content fingerprint (falls back to the path).
    pub key: String,
    pub size_bytes: u64,
    /// EXIF-style orientation (1-8) that makes the picture upright: from EXIF for images,
    /// from the rotation metadata for videos.
    pub orientation: u16,
    /// The video stream the scan chose (the player reads the same one).
    pub stream_index: Option<u32>,
    pub kind: MediaKind,
    pub status: ItemStatus,
    pub error: Option<String>,
    pub codec: String,
    /// Bits per second, as the container or stream declares it.
    pub bit_rate: Option<i64>,
    /// How far the file is analysed.
    pub level: AnalysisLevel,
    pub measures: RowMeasures,
    /// (code, severity, reason)
    pub flags: Vec<(String, Severity, String)>,
}

impl View {
    /// A row's file (or object) to read.
    pub fn source(&self, row: &ViewRow) -> Source {
        Source::in_root(&self.root, &row.path, row.size_bytes)
    }
}

/// A file's measures, one slot per [`Measure`] (NaN where it has none): a map per row cost a
/// few allocations each, a second of the load at a million files.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowMeasures([f64; Measure::ALL.len()]);

impl Default for RowMeasures {
    fn default() -> Self {
        RowMeasures([f64::NAN; Measure::ALL.len()])
    }
}

impl RowMeasures {
    pub fn get(&self, m: &Measure) -> Option<&f64> {
        Some(&self.0[*m as usize]).filter(|v| !v.is_nan())
    }

    /// The measures the file has, in [`Measure::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (&Measure, &f64)> {
        Measure::ALL
            .iter()
            .zip(&self.0)
            .filter(|(_, v)| !v.is_nan())
    }
}

impl<'a> IntoIterator for &'a RowMeasures {
    type Item = (&'a Measure, &'a f64);
    type IntoIter = Box<dyn Iterator<Item = (&'a Measure, &'a f64)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl FromIterator<(Measure, f64)> for RowMeasures {
    fn from_iter<I: IntoIterator<Item = (Measure, f64)>>(iter: I) -> Self {
        let mut out = RowMeasures::default();
        for (m, v) in iter {
            out.0[m as usize] = v;
        }
        out
    }
}

impl ViewRow {
    pub fn worst(&self) -> Option<Severity> {
        self.flags.iter().map(|f| f.1).min()
    }

    /// `1920x1080` (coded, before rotation), or empty when unknown: made when shown, not for
    /// every file as the view loads.
    pub fn resolution(&self) -> String {
        match (
            self.measures.get(&Measure::Width),
            self.measures.get(&Measure::Height),
        ) {
            (Some(w), Some(h)) => format!("{w}x{h}"),
            _ => String::new(),
        }
    }
}

/// A loaded project.
#[derive(Debug, Clone)]
pub struct View {
    pub project: PathBuf,
    /// The dataset's folder or object-storage prefix, as the catalog records it.
    pub root: Root,
    pub rows: Vec<ViewRow>,
    pub histograms: Vec<Histogram>,
    /// Each row's worst flag (the scatter colours dots by it).
    pub worst: Vec<Option<Severity>>,
    /// Each row's bin in each of `histograms` ([`NO_BIN`]: none).
    pub row_bins: Vec<Vec<u8>>,
    /// Histograms of the other measures that flag thresholds are compared with.
    pub rule_histograms: Vec<Histogram>,
    /// Files whose figure of a measure a triage estimated (`Measure::estimated_by_triage`),
    /// by measure (none: not there).
    pub triage_estimates: HashMap<Measure, usize>,
    /// (code, worst severity, files)
    pub flag_counts: Vec<(String, Severity, usize)>,
    pub total_bytes: u64,
    pub total_video_secs: f64,
    /// Files with an error or warning flag.
    pub flagged: usize,
    /// Decisions and clips, as committed.
    pub review: ReviewState,
    /// Each row's labels and the label chart's counts, as `review` has them.
    pub labels: RowLabels,
    /// Each measure as a column over `rows` (NaN where a file has none): filters and
    /// histogram subsets run over these, not row by row.
    pub columns: MeasureColumns,
    /// Duplicate groups with the member to keep, and the order that chose it.
    pub dup_groups: Vec<DupGroup>,
    pub best_order: Vec<BestBy>,
    /// Row of each item id.
    pub row_of: HashMap<ItemId, usize>,
    /// Each row's item id, in row order (shared with the edit writer, which makes the rows'
    /// labels off the UI thread).
    pub row_ids: std::sync::Arc<Vec<ItemId>>,
    /// The project's settings (`framecull.toml`) as loaded, and why they could not be read
    /// (then `config` holds the defaults).
    pub config: Config,
    pub config_error: Option<String>,
}

/// Files that a flag's thresholds catch: how many, and how many in each bin of the
/// histogram of each measure they are compared with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Caught {
    pub files: usize,
    pub bins: BTreeMap<Measure, Vec<u64>>,
}

/// The view's files as the filter sees them.
pub struct ViewRows<'a> {
    pub rows: &'a [ViewRow],
    /// Decisions as they now stand.
    pub review: &'a ReviewState,
    pub labels: &'a RowLabels,
}

impl Rows for ViewRows<'_> {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn path(&self, row: usize) -> &str {
        &self.rows[row].path
    }

    fn has_flag(&self, row: usize, code: &str) -> bool {
        self.rows[row].flags.iter().any(|f| f.0 == code)
    }

    fn decision(&self, row: usize) -> Decision {
        self.review.decision_of(self.rows[row].id)
    }

    fn level(&self, row: usize) -> AnalysisLevel {
        self.rows[row].level
    }

    fn has_label(&self, row: usize, label: Option<&str>) -> bool {
        labelled(None, self.labels.of(row), label)
    }
}

impl View {
    /// The histogram of `measure`: a plotted one, or one the flag panel shows.
    pub fn histogram_of(&self, measure: Measure) -> Option<&Histogram> {
        self.histograms
            .iter()
            .chain(&self.rule_histograms)
            .find(|h| h.measure == measure)
    }

    /// The files flag `code` would catch with `config`, judged by its thresholds that are
    /// compared with a measure of the window; `None` when it has none (its preview needs
    /// the recompute).
    pub fn caught(&self, code: &str, config: &Config) -> Option<Caught> {
        let settings = rules::settings_of(code);
        if !settings.iter().any(|s| s.measure.is_some()) {
            return None;
        }
        let tests: Vec<(&Setting, f64, &[f64])> = settings
            .into_iter()
            .filter_map(|s| {
                let column = self.columns.get(&s.measure?)?;
                Some((s, s.value(config)?, column.as_slice()))
            })
            .collect();
        let mut caught = Caught::default();
        let histogram = |m: Measure| self.histogram_of(m);
        for (s, _, _) in &tests {
            if let Some(h) = s.measure.and_then(histogram) {
                caught.bins.insert(h.measure, vec![0; h.counts.len()]);
            }
        }
        for (row, r) in self.rows.iter().enumerate() {
            let hit = tests
                .iter()
                .any(|(s, t, column)| s.catches(*t, r.kind, column[row]));
            if !hit {
                continue;
            }
            caught.files += 1;
            for (m, bins) in &mut caught.bins {
                let bin = histogram(*m).and_then(|h| h.bin_of(self.columns[m][row]));
                if let Some(b) = bin {
                    bins[b] += 1;
                }
            }
        }
        Some(caught)
    }

    /// Indices of the rows `filter` keeps, ascending.
    pub fn select(&self, filter: &Filter) -> Vec<usize> {
        let rows = ViewRows {
            rows: &self.rows,
            review: &self.review,
            labels: &self.labels,
        };
        filter.select(&rows, &self.columns)
    }
}

/// The measures of `rows` as columns (only those some row has), one measure per thread.
pub fn columns_of(rows: &[ViewRow]) -> MeasureColumns {
    Measure::ALL
        .par_iter()
        .filter_map(|&m| {
            let column: Vec<f64> = rows.iter().map(|r| r.measures.0[m as usize]).collect();
            column.iter().any(|v| !v.is_nan()).then_some((m, column))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}

pub fn load(project: &Path) -> anyhow::Result<View> {
    let started = Instant::now();
    let catalog = Catalog::open(project)?;
    let root = Root::of_recorded(&catalog.dataset_root()?.unwrap_or_default())?;
    let (parts, (measured, flags, dups, review)) =
        catalog.items_in_parts_and(ItemFields::Brief, |c| {
            Ok((
                c.measured_by_id()?,
                c.all_flags()?,
                c.all_dups()?,
                super::review_state::review_state(c)?,
            ))
        })?;
    let read = started.elapsed();
    let (config, config_error) = project_config(project);
    let best_order = if config_error.is_some() {
        DEFAULT_BEST_ORDER.to_vec()
    } else {
        config.duplicates.keep_best_by.clone()
    };
    let items = || parts.iter().flatten();
    let dup_groups = dup_groups(items(), &dups, &best_order);
    let total_bytes = items().map(|i| i.size_bytes).sum();
    // Folded from +0.0: a float `sum` of nothing is -0.0 ("-0.0 min" for a folder of images).
    let total_video_secs = items()
        .filter(|i| i.kind == MediaKind::Video)
        .filter_map(|i| i.info.duration_secs)
        .fold(0.0, |a, b| a + b);
    let rows = rows_of(parts, &measured, &flags);
    let flag_counts = flag_counts_of(&rows);
    let worst: Vec<Option<Severity>> = rows.iter().map(ViewRow::worst).collect();
    let flagged = worst
        .iter()
        .filter(|w| w.is_some_and(|s| s <= Severity::Warning))
        .count();
    let columns = columns_of(&rows);
    let made_rows = started.elapsed();
    let histograms = histograms_of(&columns, &HISTOGRAMS);
    let rule_histograms = histograms_of(&columns, &compared_measures());
    let row_bins = row_bins_of(&histograms, &columns);
    let row_of = rows.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let triage_estimates = triage_estimates_of(&rows);
    tracing::debug!(
        "view of {} loaded in {:.2} s: read {:.2} s, rows and columns {:.2} s",
        crate::model::count(rows.len() as u64, "file"),
        started.elapsed().as_secs_f64(),
        read.as_secs_f64(),
        (made_rows - read).as_secs_f64()
    );
    let row_ids = std::sync::Arc::new(rows.iter().map(|r| r.id).collect::<Vec<_>>());
    let labels = RowLabels::new(&row_ids, &review);
    let view = View {
        row_ids,
        labels,
        triage_estimates,
        worst,
        row_bins,
        rule_histograms,
        config,
        config_error,
        dup_groups,
        best_order,
        row_of,
        columns,
        review,
        flagged,
        project: project.to_path_buf(),
        root,
        total_bytes,
        total_video_secs,
        rows,
        histograms,
        flag_counts,
    };
    // Freeing a million metrics takes a few tenths of a second: not here.
    // (Should no thread start, the closure and what it holds are freed here.)
    let _ = std::thread::Builder::new()
        .name("framecull-free".into())
        .spawn(move || drop((measured, flags, dups)));
    Ok(view)
}

/// The project's settings, and why they could not be read (then the defaults).
fn project_config(project: &Path) -> (Config, Option<String>) {
    // A broken framecull.toml does not keep the project from opening: the defaults apply
    // and the flag panel says why.
    match Project::at(project).config() {
        Ok(c) => (c, None),
        Err(e) => (Config::default(), Some(e.to_string())),
    }
}

/// The view's rows of the items read in `parts`, with their measures and flags, in path
/// order.
fn rows_of(
    parts: Vec<Vec<Item>>,
    measured: &[(ItemId, Measured)],
    flags: &HashMap<ItemId, Vec<Flag>>,
) -> Vec<ViewRow> {
    // The rows take the items' strings (a million paths not copied), in table order (item
    // ids ascending, as the analysis is read: no random reads to pair them), then are put in
    // path order: rows are a third of the size of items to move.
    let mut rows: Vec<ViewRow> = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for part in parts {
        let measured = by_item(&part, measured);
        rows.par_extend(part.into_par_iter().zip(measured).map(|(item, m)| {
            let flags = flags.get(&item.id);
            view_row(item, m, flags)
        }));
    }
    sort_by_path(&mut rows, |r| &r.path);
    rows
}

/// Each flag's code, worst severity and files, the most severe first, then the most
/// frequent.
fn flag_counts_of(rows: &[ViewRow]) -> Vec<(String, Severity, usize)> {
    let mut counts: BTreeMap<&str, (Severity, usize)> = BTreeMap::new();
    for (code, sev, _) in rows.iter().flat_map(|r| &r.flags) {
        let e = counts.entry(code).or_insert((*sev, 0));
        e.0 = e.0.min(*sev);
        e.1 += 1;
    }
    let mut flag_counts: Vec<(String, Severity, usize)> = counts
        .into_iter()
        .map(|(c, (s, n))| (c.to_string(), s, n))
        .collect();
    flag_counts.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)));
    flag_counts
}

/// The histograms of `measures` over `columns`, one measure per thread, leaving out those
/// without bins.
fn histograms_of(columns: &MeasureColumns, measures: &[Measure]) -> Vec<Histogram> {
    measures
        .par_iter()
        .map(|&m| match columns.get(&m) {
            Some(values) => histogram_of(m, values, 24),
            None => histogram_of(m, &[], 24),
        })
        .filter(|h| !h.counts.is_empty())
        .collect()
}

/// The measures flag thresholds compare that the panel does not plot, sorted.
fn compared_measures() -> Vec<Measure> {
    // The measures flag thresholds compare that the panel does not plot (width, height,
    // megapixels): the flag panel shows them.
    let mut compared: Vec<Measure> = rules::SETTINGS
        .iter()
        .filter_map(|s| s.measure)
        .filter(|m| !HISTOGRAMS.contains(m))
        .collect();
    compared.sort();
    compared.dedup();
    compared
}

/// Each row's bin in each of `histograms` (empty for a measure without a column).
fn row_bins_of(histograms: &[Histogram], columns: &MeasureColumns) -> Vec<Vec<u8>> {
    histograms
        .par_iter()
        .map(|h: &Histogram| {
            columns
                .get(&h.measure)
                .map_or_else(Vec::new, |values| bins_of(h, values))
        })
        .collect()
}

/// How many rows a triage estimated each measure of, for the measures a triage estimates
/// (none: not there).
fn triage_estimates_of(rows: &[ViewRow]) -> HashMap<Measure, usize> {
    let triaged = |m: Measure| {
        rows.iter()
            .filter(|r| r.level == AnalysisLevel::Triage && r.measures.get(&m).is_some())
            .count()
    };
    Measure::ALL
        .into_iter()
        .filter(|m| m.estimated_by_triage())
        .map(|m| (m, triaged(m)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// What the window keeps of one file (its strings taken, not copied).
fn view_row(item: Item, measured: Option<&Measured>, flags: Option<&Vec<Flag>>) -> ViewRow {
    let measures = Measure::ALL
        .into_iter()
        .filter_map(|k| Some((k, k.of(&item, measured.copied())?)))
        .collect();
    let i = item.info;
    let key = match item.fingerprint {
        Some(f) => f,
        None => format!("{:016x}", xxhash_rust::xxh3::xxh3_64(item.path.as_bytes())),
    };
    ViewRow {
        id: item.id,
        path: item.path,
        key,
        size_bytes: item.size_bytes,
        orientation: match (i.rotation_deg, i.exif_orientation) {
            (Some(90), _) => 6,
            (Some(180), _) => 3,
            (Some(270), _) => 8,
            (_, Some(o @ 1..=8)) => o,
            _ => 1,
        },
        stream_index: i.stream_index,
        kind: item.kind,
        status: item.status,
        error: item.error,
        codec: i.codec.unwrap_or_default(),
        bit_rate: i.bit_rate,
        level: measured.map_or(AnalysisLevel::None, |m| m.level),
        measures,
        flags: flags
            .into_iter()
            .flatten()
            .map(|f| (f.code.clone(), f.severity, f.reason.clone()))
            .collect(),
    }
}

/// A row's bin in [`View::row_bins`] when it has none (no value, or beyond the range).
pub const NO_BIN: u8 = u8::MAX;

/// Each value's bin in `h` ([`NO_BIN`] for none), computed once when the view loads: a filter
/// change then counts its rows into the bins by lookup, not by binning every value again.
pub fn bins_of(h: &Histogram, values: &[f64]) -> Vec<u8> {
    values
        .iter()
        .map(|&v| match h.bin_of(v) {
            Some(b) if b < usize::from(NO_BIN) => b as u8,
            _ => NO_BIN,
        })
        .collect()
}

/// Counts of the rows at `indices` in `bins` of a histogram of `n` bins.
pub fn binned(bins: &[u8], n: usize, indices: &[usize]) -> Vec<u64> {
    let mut counts = vec![0u64; n];
    for &i in indices {
        if let Some(c) = bins.get(i).and_then(|&b| counts.get_mut(usize::from(b))) {
            *c += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, duration: f64, flag: Option<&str>) -> ViewRow {
        ViewRow {
            id: 0,
            path: path.into(),
            key: path.into(),
            size_bytes: 0,
            orientation: 1,
            stream_index: None,
            kind: MediaKind::Video,
            status: ItemStatus::Ok,
            error: None,
            codec: "h264".into(),
            bit_rate: None,
            level: AnalysisLevel::Deep,
            measures: [(Measure::DurationSecs, duration)].into_iter().collect(),
            flags: flag
                .map(|f| vec![(f.to_string(), Severity::Warning, "why".to_string())])
                .unwrap_or_default(),
        }
    }

    #[test]
    fn brushed_ranges_flags_and_search_combine() {
        let mut rows = [
            row("a/x.mp4", 1.0, None),
            row("a/y.mp4", 5.0, Some("frozen")),
            row("b/z.mp4", 9.0, Some("frozen")),
        ];
        for (i, r) in rows.iter_mut().enumerate() {
            r.id = i as i64;
        }
        let columns = columns_of(&rows);
        let review = ReviewState {
            decisions: HashMap::from([(2, Decision::Accepted)]),
            ..ReviewState::default()
        };
        let ids: Vec<ItemId> = rows.iter().map(|r| r.id).collect();
        let labels = RowLabels::new(&ids, &review);
        let rows_of = ViewRows {
            rows: &rows,
            review: &review,
            labels: &labels,
        };
        let mut f = Filter::default();
        assert_eq!(f.select(&rows_of, &columns), vec![0, 1, 2]);
        f.ranges.push((Measure::DurationSecs, 4.0, 10.0));
        assert_eq!(f.select(&rows_of, &columns), vec![1, 2]);
        f.decision = Some(Decision::Accepted);
        assert_eq!(f.select(&rows_of, &columns), vec![2]);
        f.decision = None;
        f.flag = Some("frozen".into());
        f.search = "A/".into();
        let hits: Vec<_> = f
            .select(&rows_of, &columns)
            .into_iter()
            .map(|i| rows[i].path.as_str())
            .collect();
        assert_eq!(hits, vec!["a/y.mp4"]);
    }

    #[test]
    fn row_measures_keep_each_measure_in_its_slot() {
        for (i, m) in Measure::ALL.into_iter().enumerate() {
            assert_eq!(m as usize, i, "{m:?}");
        }
        let r: RowMeasures = [(Measure::Sharpness, 2.0), (Measure::Fps, 25.0)]
            .into_iter()
            .collect();
        assert_eq!(r.get(&Measure::Fps), Some(&25.0));
        assert_eq!(r.get(&Measure::Width), None);
        let all: Vec<_> = r.iter().map(|(m, v)| (*m, *v)).collect();
        assert_eq!(all, vec![(Measure::Fps, 25.0), (Measure::Sharpness, 2.0)]);
    }

    #[test]
    fn subsets_are_binned_like_the_whole() {
        let h = Histogram {
            measure: Measure::DurationSecs,
            label: "duration".into(),
            edges: vec![0.0, 5.0, 10.0],
            counts: vec![1, 2],
            missing: 0,
            underflow: 0,
            overflow: 0,
            log: false,
        };
        let rows = [
            row("a", 1.0, None),
            row("b", 6.0, None),
            row("c", 10.0, None),
            row("d", 90_000.0, None),
        ];
        let columns = columns_of(&rows);
        let values = &columns[&Measure::DurationSecs];
        let bins = bins_of(&h, values);
        assert_eq!(bins[3], NO_BIN);
        assert_eq!(binned(&bins, 2, &[0, 1, 2, 3]), vec![1, 2]);
        assert_eq!(binned(&bins, 2, &[0]), vec![1, 0]);
    }
}
