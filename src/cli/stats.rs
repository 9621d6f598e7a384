//! `framecull stats`: counts and sizes by kind, status, analysis level, codec and container;
//! distribution summaries of resolution, fps and duration. Computed with polars on the catalog
//! view.

use polars::prelude::*;
use serde::Serialize;

use super::list::human_bytes;
use super::{Outcome, ProjectArg};
use crate::analysis::histogram::{
    HISTOGRAMS, Histogram, ResolutionGrid, histogram, resolution_grid,
};
use crate::analysis::labels::{LabelCount, label_counts};
use crate::catalog::items_frame;
use crate::model::{Measure, OtherStatus, count, noun_for};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize, Debug)]
pub struct Group {
    pub key: Option<String>,
    pub files: u64,
    pub size_bytes: u64,
}

#[derive(Serialize, Debug, Default)]
pub struct Summary {
    pub n: u64,
    pub min: Option<f64>,
    pub p5: Option<f64>,
    pub median: Option<f64>,
    pub p95: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
}

#[derive(Serialize, Debug)]
pub struct Stats {
    pub files: u64,
    pub size_bytes: u64,
    /// Regular files under the root that are not media (not probed; `list --all`).
    pub other_files: u64,
    pub other_size_bytes: u64,
    /// Entries under the root that are not regular files: broken symbolic links, FIFOs,
    /// devices, sockets (never opened; `list --all`).
    pub not_files: u64,
    pub by_kind: Vec<Group>,
    pub by_status: Vec<Group>,
    /// By analysis level: `none`, `triage`, `deep`.
    pub by_analysis_level: Vec<Group>,
    pub by_codec: Vec<Group>,
    pub by_container: Vec<Group>,
    /// Over files with status ok: key is the measure (width, height, megapixels, fps,
    /// duration_secs); fps and duration over videos only.
    pub distributions: Vec<(String, Summary)>,
    /// Histograms of the measures (deep-analysis ones once `analyze` has run).
    pub histograms: Vec<Histogram>,
    pub resolution: ResolutionGrid,
    /// Files and clips by label (the unlabelled last, `label` null).
    pub by_label: Vec<LabelCount>,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let catalog = args.project.open()?;
    let items = catalog.items()?;
    let mut stats = compute(&items_frame(&items, &catalog.all_metrics()?)?)?;
    let (reviews, clips) = (catalog.all_reviews()?, catalog.all_clips()?);
    stats.by_label = label_counts(items.iter().map(|i| {
        (
            reviews.get(&i.id).and_then(|r| r.label.as_deref()),
            clips.get(&i.id).map_or(&[][..], Vec::as_slice),
        )
    }));
    let (not_files, others): (Vec<_>, Vec<_>) = catalog
        .other_files()?
        .into_iter()
        .partition(|f| f.status == OtherStatus::NotAFile);
    stats.other_files = others.len() as u64;
    stats.other_size_bytes = others.iter().map(|f| f.size_bytes).sum();
    stats.not_files = not_files.len() as u64;
    let text = if args.json {
        serde_json::to_string_pretty(&stats)?
    } else {
        render(&stats)
    };
    super::write_stdout(&text)?;
    Ok(Outcome::Clean)
}

pub fn compute(df: &DataFrame) -> PolarsResult<Stats> {
    let size_bytes = Measure::SizeBytes.name();
    let size = df.column(size_bytes)?.u64()?.sum().unwrap_or(0);
    let ok = col("status").eq(lit("ok"));
    let video_ok = ok.clone().and(col("kind").eq(lit("video")));
    let mut distributions = Vec::new();
    for (measure, filter) in [
        (Measure::Width, ok.clone()),
        (Measure::Height, ok.clone()),
        (Measure::Megapixels, ok.clone()),
        (Measure::Fps, video_ok.clone()),
        (Measure::DurationSecs, video_ok.clone()),
    ] {
        let name = measure.name();
        distributions.push((name.to_string(), summarise(df, name, filter)?));
    }
    let histograms = HISTOGRAMS
        .iter()
        .map(|&m| histogram(df, m, 12))
        .collect::<PolarsResult<Vec<_>>>()?
        .into_iter()
        .filter(|h| !h.counts.is_empty())
        .collect();
    Ok(Stats {
        histograms,
        resolution: resolution_grid(df)?,
        files: df.height() as u64,
        size_bytes: size,
        other_files: 0,
        other_size_bytes: 0,
        not_files: 0,
        by_kind: groups(df, "kind")?,
        by_status: groups(df, "status")?,
        by_analysis_level: groups(df, "analysis_level")?,
        by_codec: groups(df, "codec")?,
        by_container: groups(df, "container")?,
        by_label: Vec::new(),
        distributions,
    })
}

fn groups(df: &DataFrame, key: &str) -> PolarsResult<Vec<Group>> {
    let out = df
        .clone()
        .lazy()
        .group_by([col(key)])
        .agg([
            len().cast(DataType::UInt64).alias("files"),
            col(Measure::SizeBytes.name())
                .sum()
                .alias(Measure::SizeBytes.name()),
        ])
        .sort_by_exprs(
            [col("files"), col(key)],
            SortMultipleOptions::default().with_order_descending_multi([true, false]),
        )
        .collect()?;
    let keys = out.column(key)?.str()?;
    let files = out.column("files")?.u64()?;
    let sizes = out.column(Measure::SizeBytes.name())?.u64()?;
    Ok((0..out.height())
        .map(|i| Group {
            key: keys.get(i).map(str::to_string),
            files: files.get(i).unwrap_or(0),
            size_bytes: sizes.get(i).unwrap_or(0),
        })
        .collect())
}

fn summarise(df: &DataFrame, measure: &str, filter: Expr) -> PolarsResult<Summary> {
    let c = || col(measure);
    let q = |p: f64, name: &str| c().quantile(lit(p), QuantileMethod::Linear).alias(name);
    let out = df
        .clone()
        .lazy()
        .filter(filter.and(c().is_not_null()))
        .select([
            c().count().cast(DataType::Float64).alias("n"),
            c().min().alias("min"),
            q(0.05, "p5"),
            q(0.5, "median"),
            q(0.95, "p95"),
            c().max().alias("max"),
            c().mean().alias("mean"),
        ])
        .collect()?;
    let get = |name: &str| -> PolarsResult<Option<f64>> {
        Ok(out.column(name)?.cast(&DataType::Float64)?.f64()?.get(0))
    };
    Ok(Summary {
        n: get("n")?.unwrap_or(0.0) as u64,
        min: get("min")?,
        p5: get("p5")?,
        median: get("median")?,
        p95: get("p95")?,
        max: get("max")?,
        mean: get("mean")?,
    })
}

pub fn render(stats: &Stats) -> String {
    let mut s = String::new();
    totals_text(&mut s, stats);
    groups_text(&mut s, stats);
    distributions_text(&mut s, &stats.distributions);
    histograms_text(&mut s, &stats.histograms);
    resolution_text(&mut s, &stats.resolution);
    s
}

/// The report's first lines: the files and their size, then the other files and entries
/// under the root that are not media.
fn totals_text(s: &mut String, stats: &Stats) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "{}, {}",
        count(stats.files, "file"),
        human_bytes(stats.size_bytes)
    );
    if stats.other_files > 0 {
        let files = if stats.other_files == 1 {
            "file that is"
        } else {
            "files that are"
        };
        let _ = writeln!(
            s,
            "and {} other {files} not media, {} (framecull list --all)",
            stats.other_files,
            human_bytes(stats.other_size_bytes)
        );
    }
    if stats.not_files > 0 {
        let entries = if stats.not_files == 1 {
            "entry that is not a regular file"
        } else {
            "entries that are not regular files"
        };
        let _ = writeln!(
            s,
            "and {} {entries}: broken links, FIFOs, devices (framecull list --all)",
            stats.not_files
        );
    }
}

/// The files and their size by kind, status, analysis level, codec and container, and the
/// files and clips by label.
fn groups_text(s: &mut String, stats: &Stats) {
    use std::fmt::Write;
    for (title, groups) in [
        ("kind", &stats.by_kind),
        ("status", &stats.by_status),
        ("analysis level", &stats.by_analysis_level),
        ("codec", &stats.by_codec),
        ("container", &stats.by_container),
    ] {
        let _ = writeln!(s, "\nby {title}:");
        for g in groups.iter() {
            let _ = writeln!(
                s,
                "  {:<28} {:>8} {:<5} {:>12}",
                g.key.as_deref().unwrap_or("-"),
                g.files,
                noun_for(g.files, "file"),
                human_bytes(g.size_bytes)
            );
        }
    }
    // Labelled catalogs only: a list of one line, "- N files", says nothing.
    if stats.by_label.iter().any(|l| l.label.is_some()) {
        let _ = writeln!(s, "\nby label:");
        for l in &stats.by_label {
            let _ = writeln!(
                s,
                "  {:<28} {:>8} {:<5} {:>8} {}",
                l.label.as_deref().unwrap_or("(none)"),
                l.files,
                noun_for(l.files, "file"),
                l.clips,
                noun_for(l.clips, "clip")
            );
        }
    }
}

/// A table of the measures' distribution summaries, a line per measure.
fn distributions_text(s: &mut String, distributions: &[(String, Summary)]) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "\n{:<14} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "measure (ok)", "n", "min", "p5", "median", "p95", "max", "mean"
    );
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    for (name, d) in distributions {
        let _ = writeln!(
            s,
            "{:<14} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            name,
            d.n,
            f(d.min),
            f(d.p5),
            f(d.median),
            f(d.p95),
            f(d.max),
            f(d.mean)
        );
    }
}

/// Each histogram as a bar per bin, with the values below and above its bins.
fn histograms_text(s: &mut String, histograms: &[Histogram]) {
    use std::fmt::Write;
    for h in histograms {
        let _ = writeln!(s, "\n{} ({} without a value):", h.label, h.missing);
        if let (true, Some(lo)) = (h.underflow > 0, h.edges.first()) {
            let _ = writeln!(s, "  {} below {}", h.underflow, h.measure.format(*lo));
        }
        if let (true, Some(hi)) = (h.overflow > 0, h.edges.last()) {
            let _ = writeln!(s, "  {} above {}", h.overflow, h.measure.format(*hi));
        }
        let peak = h.counts.iter().copied().max().unwrap_or(1).max(1);
        for (i, c) in h.counts.iter().enumerate() {
            let bar = "#".repeat(((*c as f64 / peak as f64) * 40.0).ceil() as usize);
            let _ = writeln!(
                s,
                "  {:>11} - {:<11} {:>7}  {bar}",
                h.measure.format(h.edges[i]),
                h.measure.format(h.edges[i + 1]),
                c
            );
        }
    }
}

/// The files by height and width as a grid, when there are any.
fn resolution_text(s: &mut String, g: &ResolutionGrid) {
    use std::fmt::Write;
    if !g.counts.is_empty() {
        let _ = writeln!(
            s,
            "\nresolution (rows: height, columns: width, powers of two):"
        );
        let _ = write!(s, "{:>8}", "");
        for w in &g.width_edges[..g.width_edges.len() - 1] {
            let _ = write!(s, "{:>7}", short(*w));
        }
        let _ = writeln!(s);
        for (row, h) in g.counts.iter().zip(&g.height_edges) {
            let _ = write!(s, "{:>8}", short(*h));
            for c in row {
                let _ = write!(s, "{:>7}", if *c == 0 { ".".into() } else { c.to_string() });
            }
            let _ = writeln!(s);
        }
    }
}

fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}
