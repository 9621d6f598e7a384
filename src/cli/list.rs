//! `framecull list`: one line per catalogued file, as a table, JSON lines or CSV.

use std::io::{BufWriter, Write};

use serde::Serialize;

use std::collections::HashMap;

use super::{Outcome, ProjectArg};
use crate::analysis::filter::Filter;
use crate::catalog::Catalog;
pub use crate::model::human_bytes;
use crate::model::{Cut, DupInfo, Flag, Item, ItemId, ItemStatus, MediaKind, Metrics, Review};
use crate::model::{human_duration, human_number};

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Jsonl,
    Csv,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Only files with problems (status error or unsupported).
    #[arg(long)]
    problems: bool,
    /// Only this kind: image, video or other.
    #[arg(long)]
    kind: Option<String>,
    /// Only files matching a filter, in the form the window shows under its filter chips,
    /// e.g. "motion_mean>2 and 1<=duration_secs<=30 and flag:frozen and decision:accepted
    /// and path:cam1".
    #[arg(long = "where", value_name = "FILTER")]
    filter: Option<String>,
}

/// The documented fields of `list --format jsonl|csv` (docs/CLI.md), in order.
#[derive(Serialize)]
pub struct Row<'a> {
    pub path: &'a str,
    pub kind: &'static str,
    pub status: &'static str,
    pub error: Option<&'a str>,
    pub container: Option<&'a str>,
    pub codec: Option<&'a str>,
    pub profile: Option<&'a str>,
    pub pix_fmt: Option<&'a str>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub rotation_deg: Option<u32>,
    pub sample_aspect_ratio: Option<String>,
    pub fps: Option<f64>,
    pub fps_base: Option<f64>,
    pub time_base: Option<String>,
    pub duration_secs: Option<f64>,
    pub start_secs: Option<f64>,
    pub frame_count: Option<i64>,
    pub bit_rate: Option<i64>,
    pub size_bytes: u64,
    pub has_audio: Option<bool>,
    pub exif_orientation: Option<u16>,
    pub fingerprint: Option<&'a str>,
    pub motion_mean: Option<f64>,
    pub motion_p95: Option<f64>,
    pub cuts_secs: Vec<f64>,
    pub decode_errors: Option<u64>,
    pub decoded_frames: Option<u64>,
    pub brightness: Option<f64>,
    pub sharpness: Option<f64>,
    pub phash: Option<String>,
    pub dup_group: Option<ItemId>,
    pub dup_exact_group: Option<ItemId>,
    pub flags: Vec<FlagOut<'a>>,
    pub decision: &'static str,
    pub tags: Vec<&'a str>,
    pub note: Option<&'a str>,
}

#[derive(Serialize)]
pub struct FlagOut<'a> {
    pub code: &'a str,
    pub severity: &'static str,
    pub reason: &'a str,
    pub source: &'static str,
}

/// Analysis results joined to items for listing.
#[derive(Default)]
pub struct Analysis {
    pub metrics: HashMap<ItemId, Metrics>,
    pub cuts: HashMap<ItemId, Vec<Cut>>,
    pub dups: HashMap<ItemId, DupInfo>,
    pub flags: HashMap<ItemId, Vec<Flag>>,
    pub reviews: HashMap<ItemId, Review>,
}

impl Analysis {
    pub fn load(catalog: &Catalog) -> anyhow::Result<Self> {
        Ok(Analysis {
            metrics: catalog.all_metrics()?,
            cuts: catalog.all_cuts()?,
            dups: catalog.all_dups()?,
            flags: catalog.all_flags()?,
            reviews: catalog.all_reviews()?,
        })
    }
}

impl<'a> Row<'a> {
    pub fn from_item(item: &'a Item, a: &'a Analysis) -> Self {
        let i = &item.info;
        let m = a.metrics.get(&item.id);
        Row {
            path: &item.path,
            kind: item.kind.as_str(),
            status: item.status.as_str(),
            error: item.error.as_deref(),
            container: i.container.as_deref(),
            codec: i.codec.as_deref(),
            profile: i.profile.as_deref(),
            pix_fmt: i.pix_fmt.as_deref(),
            width: i.width,
            height: i.height,
            rotation_deg: i.rotation_deg,
            sample_aspect_ratio: i.sample_aspect_ratio.map(|r| r.to_text()),
            fps: i.fps,
            fps_base: i.fps_base,
            time_base: i.time_base.map(|r| r.to_text()),
            duration_secs: i.duration_secs,
            start_secs: i.start_secs,
            frame_count: i.frame_count,
            bit_rate: i.bit_rate,
            size_bytes: item.size_bytes,
            has_audio: i.has_audio,
            exif_orientation: i.exif_orientation,
            fingerprint: item.fingerprint.as_deref(),
            motion_mean: m.and_then(|m| m.motion_mean),
            motion_p95: m.and_then(|m| m.motion_p95),
            cuts_secs: a
                .cuts
                .get(&item.id)
                .map(|c| c.iter().map(|c| c.time_secs).collect())
                .unwrap_or_default(),
            decode_errors: m.map(|m| m.decode_errors),
            decoded_frames: m.map(|m| m.decoded_frames),
            brightness: m.and_then(|m| m.brightness),
            sharpness: m.and_then(|m| m.sharpness),
            phash: m.and_then(|m| m.phash).map(|h| format!("{h:016x}")),
            dup_group: a.dups.get(&item.id).map(|d| d.group),
            dup_exact_group: a.dups.get(&item.id).and_then(|d| d.exact_group),
            flags: a
                .flags
                .get(&item.id)
                .into_iter()
                .flatten()
                .map(|f| FlagOut {
                    code: &f.code,
                    severity: f.severity.as_str(),
                    reason: &f.reason,
                    source: f.source.as_str(),
                })
                .collect(),
            decision: a
                .reviews
                .get(&item.id)
                .map_or("unreviewed", |r| r.decision.as_str()),
            tags: a
                .reviews
                .get(&item.id)
                .map(|r| r.tags.iter().map(String::as_str).collect())
                .unwrap_or_default(),
            note: a.reviews.get(&item.id).and_then(|r| r.note.as_deref()),
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let catalog = args.project.open()?;
    let kind = match args.kind.as_deref() {
        Some(k) => Some(
            MediaKind::parse(k)
                .ok_or_else(|| anyhow::anyhow!("unknown kind {k:?}: use image, video or other"))?,
        ),
        None => None,
    };
    let filter = args.filter.as_deref().map(Filter::parse).transpose()?;
    let items: Vec<Item> = catalog
        .items()?
        .into_iter()
        .filter(|i| !args.problems || i.status.is_problem())
        .filter(|i| kind.is_none_or(|k| i.kind == k))
        .collect();
    let analysis = Analysis::load(&catalog)?;
    let items: Vec<Item> = match &filter {
        Some(f) => f
            .select_items(
                &items,
                &analysis.metrics,
                &analysis.flags,
                &analysis.reviews,
            )
            .into_iter()
            .map(|i| items[i].clone())
            .collect(),
        None => items,
    };
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    let written = match args.format {
        Format::Jsonl => write_jsonl(&mut out, &items, &analysis),
        Format::Csv => write_csv(&mut out, &items, &analysis),
        Format::Table => write_table(&mut out, &items, &analysis),
    };
    match written.and_then(|()| out.flush().map_err(anyhow::Error::from)) {
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) => {}
        other => other?,
    }
    Ok(Outcome::Clean)
}

fn write_jsonl(out: &mut impl Write, items: &[Item], a: &Analysis) -> anyhow::Result<()> {
    for item in items {
        serde_json::to_writer(&mut *out, &Row::from_item(item, a))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

fn write_csv(out: &mut impl Write, items: &[Item], a: &Analysis) -> anyhow::Result<()> {
    let mut header_written = false;
    for item in items {
        let value = serde_json::to_value(Row::from_item(item, a))?;
        let serde_json::Value::Object(map) = value else {
            continue;
        };
        if !header_written {
            let names: Vec<&str> = map.keys().map(String::as_str).collect();
            writeln!(out, "{}", names.join(","))?;
            header_written = true;
        }
        let cells: Vec<String> = map.values().map(csv_cell).collect();
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

fn csv_cell(v: &serde_json::Value) -> String {
    let text = match v {
        serde_json::Value::Null => return String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

fn write_table(out: &mut impl Write, items: &[Item], a: &Analysis) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:<6} {:<11} {:>11} {:<10} {:>8} {:>11} {:>10}  path",
        "kind", "status", "size", "codec", "fps", "duration", "resolution"
    )?;
    for item in items {
        let i = &item.info;
        let res = match (i.width, i.height) {
            (Some(w), Some(h)) => format!("{w}x{h}"),
            _ => "-".into(),
        };
        let fps = i.fps.map_or("-".into(), |f| human_number(f, 3));
        let dur = i.duration_secs.map_or("-".into(), human_duration);
        write!(
            out,
            "{:<6} {:<11} {:>11} {:<10} {:>8} {:>11} {:>10}  {}",
            item.kind.as_str(),
            item.status.as_str(),
            human_bytes(item.size_bytes),
            i.codec.as_deref().unwrap_or("-"),
            fps,
            dur,
            res,
            item.path
        )?;
        if let (true, Some(e)) = (item.status != ItemStatus::Ok, &item.error) {
            write!(out, "  ({e})")?;
        }
        let codes: Vec<&str> = a
            .flags
            .get(&item.id)
            .into_iter()
            .flatten()
            .map(|f| f.code.as_str())
            .collect();
        if !codes.is_empty() {
            write!(out, "  [{}]", codes.join(", "))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
