//! What the window shows, loaded from the catalog off the UI thread, and the filters on it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::collections::HashMap;

use crate::analysis::dups::{BestBy, DEFAULT_BEST_ORDER};
use crate::analysis::filter::Rows;
pub use crate::analysis::filter::{Filter, MeasureColumns};
use crate::analysis::flags::Config;
use crate::analysis::histogram::{HISTOGRAMS, Histogram, histogram};
use crate::analysis::rules::{self, Setting};
use crate::catalog::{Catalog, Project, items_frame};
use crate::media::Source;
use crate::model::{Decision, ItemId, ItemStatus, Measure, MediaKind, Severity};
use crate::scan::curate::{DupGroup, dup_groups};
use crate::storage::Root;

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
    pub kind: MediaKind,
    pub status: ItemStatus,
    pub error: Option<String>,
    pub codec: String,
    pub resolution: String,
    /// Bits per second, as the container or stream declares it.
    pub bit_rate: Option<i64>,
    pub measures: BTreeMap<Measure, f64>,
    /// (code, severity, reason)
    pub flags: Vec<(String, Severity, String)>,
}

impl View {
    /// A row's file (or object) to read.
    pub fn source(&self, row: &ViewRow) -> Source {
        Source::in_root(&self.root, &row.path, row.size_bytes)
    }
}

impl ViewRow {
    pub fn worst(&self) -> Option<Severity> {
        self.flags.iter().map(|f| f.1).min()
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
    /// (code, worst severity, files)
    pub flag_counts: Vec<(String, Severity, usize)>,
    pub total_bytes: u64,
    pub total_video_secs: f64,
    /// Files with an error or warning flag.
    pub flagged: usize,
    /// Decisions and clips, as committed.
    pub review: super::edits::ReviewState,
    /// Each measure as a column over `rows` (NaN where a file has none): filters and
    /// histogram subsets run over these, not row by row.
    pub columns: MeasureColumns,
    /// Duplicate groups with the member to keep, and the order that chose it.
    pub dup_groups: Vec<DupGroup>,
    pub best_order: Vec<BestBy>,
    /// Row of each item id.
    pub row_of: HashMap<ItemId, usize>,
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
    pub decisions: &'a HashMap<ItemId, Decision>,
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
        self.decisions
            .get(&self.rows[row].id)
            .copied()
            .unwrap_or_default()
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
            decisions: &self.review.decisions,
        };
        filter.select(&rows, &self.columns)
    }
}

/// The measures of `rows` as columns.
pub fn columns_of(rows: &[ViewRow]) -> MeasureColumns {
    let mut columns = MeasureColumns::new();
    for (i, row) in rows.iter().enumerate() {
        for (&k, &v) in &row.measures {
            columns
                .entry(k)
                .or_insert_with(|| vec![f64::NAN; rows.len()])[i] = v;
        }
    }
    columns
}

pub fn load(project: &Path) -> anyhow::Result<View> {
    let catalog = Catalog::open(project)?;
    let root = Root::of_recorded(&catalog.dataset_root()?.unwrap_or_default())?;
    let items = catalog.items()?;
    let metrics = catalog.all_metrics()?;
    let flags = catalog.all_flags()?;
    let df = items_frame(&items, &metrics)?;
    let histograms_of =
        |measures: &mut dyn Iterator<Item = Measure>| -> anyhow::Result<Vec<Histogram>> {
            let mut out = Vec::new();
            for m in measures {
                let h = histogram(&df, m, 24)?;
                if !h.counts.is_empty() {
                    out.push(h);
                }
            }
            Ok(out)
        };
    let histograms = histograms_of(&mut HISTOGRAMS.into_iter())?;
    // The measures flag thresholds compare that the panel does not plot (width, height,
    // megapixels): the flag panel shows them.
    let mut compared: Vec<Measure> = rules::SETTINGS
        .iter()
        .filter_map(|s| s.measure)
        .filter(|m| !HISTOGRAMS.contains(m))
        .collect();
    compared.sort();
    compared.dedup();
    let rule_histograms = histograms_of(&mut compared.into_iter())?;
    let mut counts: BTreeMap<String, (Severity, usize)> = BTreeMap::new();
    let mut rows = Vec::with_capacity(items.len());
    for item in &items {
        let m = metrics.get(&item.id);
        let i = &item.info;
        let measures: BTreeMap<Measure, f64> = Measure::ALL
            .into_iter()
            .filter_map(|k| Some((k, k.of(item, m)?)))
            .collect();
        let item_flags: Vec<(String, Severity, String)> = flags
            .get(&item.id)
            .into_iter()
            .flatten()
            .map(|f| (f.code.clone(), f.severity, f.reason.clone()))
            .collect();
        for (code, sev, _) in &item_flags {
            let e = counts.entry(code.clone()).or_insert((*sev, 0));
            e.0 = e.0.min(*sev);
            e.1 += 1;
        }
        rows.push(ViewRow {
            id: item.id,
            path: item.path.clone(),
            key: item.fingerprint.clone().unwrap_or_else(|| {
                format!("{:016x}", xxhash_rust::xxh3::xxh3_64(item.path.as_bytes()))
            }),
            size_bytes: item.size_bytes,
            orientation: match (i.rotation_deg, i.exif_orientation) {
                (Some(90), _) => 6,
                (Some(180), _) => 3,
                (Some(270), _) => 8,
                (_, Some(o @ 1..=8)) => o,
                _ => 1,
            },
            kind: item.kind,
            status: item.status,
            error: item.error.clone(),
            codec: i.codec.clone().unwrap_or_default(),
            resolution: match (i.width, i.height) {
                (Some(w), Some(h)) => format!("{w}x{h}"),
                _ => String::new(),
            },
            bit_rate: i.bit_rate,
            measures,
            flags: item_flags,
        });
    }
    let mut flag_counts: Vec<(String, Severity, usize)> =
        counts.into_iter().map(|(c, (s, n))| (c, s, n)).collect();
    flag_counts.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)));
    let flagged = rows
        .iter()
        .filter(|r| r.worst().is_some_and(|s| s <= Severity::Warning))
        .count();
    let review = super::edits::review_state(&catalog)?;
    let columns = columns_of(&rows);
    let row_bins = histograms
        .iter()
        .map(|h: &Histogram| {
            columns
                .get(&h.measure)
                .map_or_else(Vec::new, |values| bins_of(h, values))
        })
        .collect();
    // A broken framecull.toml does not keep the project from opening: the defaults apply
    // and the flag panel says why.
    let (config, config_error) = match Project::at(project).config() {
        Ok(c) => (c, None),
        Err(e) => (Config::default(), Some(e.to_string())),
    };
    let best_order = if config_error.is_some() {
        DEFAULT_BEST_ORDER.to_vec()
    } else {
        config.duplicates.keep_best_by.clone()
    };
    let dup_groups = dup_groups(&items, &catalog.all_dups()?, &best_order);
    let row_of = rows.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    Ok(View {
        worst: rows.iter().map(ViewRow::worst).collect(),
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
        total_bytes: items.iter().map(|i| i.size_bytes).sum(),
        total_video_secs: items
            .iter()
            .filter_map(|i| {
                i.info
                    .duration_secs
                    .filter(|_| i.kind == crate::model::MediaKind::Video)
            })
            .sum(),
        rows,
        histograms,
        flag_counts,
    })
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

/// What the table can be sorted by: a measure or a text column. Saved by name (a measure's
/// name, or `path`, `kind`, `status`, `codec`, `resolution`, `review`, `flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SortKey {
    Path,
    Kind,
    Status,
    Codec,
    Resolution,
    Review,
    Flags,
    Measure(Measure),
}

impl SortKey {
    const TEXT: [(SortKey, &'static str); 7] = [
        (SortKey::Path, "path"),
        (SortKey::Kind, "kind"),
        (SortKey::Status, "status"),
        (SortKey::Codec, "codec"),
        (SortKey::Resolution, "resolution"),
        (SortKey::Review, "review"),
        (SortKey::Flags, "flags"),
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Measure(m) => m.name(),
            key => SortKey::TEXT
                .iter()
                .find(|(k, _)| *k == key)
                .map_or("path", |(_, n)| n),
        }
    }
}

impl TryFrom<String> for SortKey {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        SortKey::TEXT
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(k, _)| *k)
            .or_else(|| Measure::parse(&name).map(SortKey::Measure))
            .ok_or_else(|| format!("{name:?} is not a table column"))
    }
}

impl From<SortKey> for String {
    fn from(key: SortKey) -> String {
        key.name().to_string()
    }
}

/// Order `rows` (indices into the view) by a table column; files without a value last.
pub fn sort_rows(view: &View, rows: &mut [usize], key: SortKey, ascending: bool) {
    let flip = |o: std::cmp::Ordering| if ascending { o } else { o.reverse() };
    if let SortKey::Measure(m) = key {
        let Some(values) = view.columns.get(&m) else {
            return;
        };
        rows.sort_by(|&a, &b| match (values[a].is_nan(), values[b].is_nan()) {
            (false, false) => flip(values[a].total_cmp(&values[b])),
            (x, y) => x.cmp(&y),
        });
        return;
    }
    let text = |i: usize| -> String {
        let r = &view.rows[i];
        match key {
            SortKey::Kind => r.kind.as_str().to_string(),
            SortKey::Status => r.status.as_str().to_string(),
            SortKey::Codec => r.codec.clone(),
            SortKey::Resolution => r.resolution.clone(),
            SortKey::Review => view
                .review
                .decisions
                .get(&r.id)
                .copied()
                .unwrap_or_default()
                .as_str()
                .to_string(),
            SortKey::Flags => format!("{:04}", r.flags.len()),
            SortKey::Path | SortKey::Measure(_) => r.path.clone(),
        }
    };
    rows.sort_by_cached_key(|&i| text(i));
    if !ascending {
        rows.reverse();
    }
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
            kind: MediaKind::Video,
            status: ItemStatus::Ok,
            error: None,
            codec: "h264".into(),
            resolution: "640x360".into(),
            bit_rate: None,
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
        let decisions = HashMap::from([(2, Decision::Accepted)]);
        let rows_of = ViewRows {
            rows: &rows,
            decisions: &decisions,
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

    #[test]
    fn sort_keys_are_saved_by_column_name() {
        for key in [
            SortKey::Path,
            SortKey::Review,
            SortKey::Measure(Measure::Fps),
        ] {
            let text = serde_json::to_string(&key).unwrap();
            assert_eq!(serde_json::from_str::<SortKey>(&text).unwrap(), key);
        }
        // A state saved when the sort was a plain column name still loads.
        let saved: (SortKey, bool) = serde_json::from_str(r#"["duration_secs", true]"#).unwrap();
        assert_eq!(saved, (SortKey::Measure(Measure::DurationSecs), true));
        assert!(serde_json::from_str::<SortKey>(r#""colour""#).is_err());
    }
}
