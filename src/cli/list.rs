//! `framecull list`: one line per catalogued file, as a table, JSON lines or CSV.

use std::io::{BufWriter, Write};

use rayon::prelude::*;

use super::{Outcome, ProjectArg};
use crate::analysis::filter::Filter;
use crate::catalog::listing::{Analysis, Row};
use crate::catalog::{ItemFields, by_item};
pub use crate::model::human_bytes;
use crate::model::{Item, ItemStatus, Measure, MediaKind, Metrics, OtherFile};
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
    /// Also the entries that are not media (kind other, status not_media or, for broken
    /// links, FIFOs and devices, not_a_file, with the reason), which the scan counts but does
    /// not probe.
    #[arg(long)]
    all: bool,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let catalog = args.project.open()?;
    catalog.map_for_reading()?;
    let kind = match args.kind.as_deref() {
        Some(k) => Some(
            MediaKind::parse(k)
                .ok_or_else(|| anyhow::anyhow!("unknown kind {k:?}: use image, video or other"))?,
        ),
        None => None,
    };
    let filter = args.filter.as_deref().map(Filter::parse).transpose()?;
    let (items, analysis) = catalog.items_and(ItemFields::All, Analysis::load)?;
    let metrics = by_item(&items, &analysis.metrics);
    let matched = match &filter {
        Some(f) => {
            let mut matched = vec![false; items.len()];
            for i in f.select_items(
                &items,
                &metrics,
                &analysis.flags,
                &analysis.reviews,
                &analysis.clip_labels,
            ) {
                matched[i] = true;
            }
            matched
        }
        None => vec![true; items.len()],
    };
    let chosen: Vec<(&Item, Option<&Metrics>)> = items
        .iter()
        .zip(&metrics)
        .zip(matched)
        .filter(|((i, _), matched)| {
            *matched
                && (!args.problems || i.status.is_problem())
                && kind.is_none_or(|k| i.kind == k)
        })
        .map(|((i, m), _)| (i, *m))
        .collect();
    // Files that are not media have no measures, flags or problems to match.
    let others = if args.all
        && !args.problems
        && filter.is_none()
        && kind.is_none_or(|k| k == MediaKind::Other)
    {
        catalog.other_files()?
    } else {
        Vec::new()
    };
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    let written = match args.format {
        Format::Jsonl => write_rows(&mut out, &chosen, &others, &analysis, jsonl_line),
        Format::Csv => {
            if !chosen.is_empty() || !others.is_empty() {
                writeln!(out, "{}", csv_header()?)?;
            }
            write_rows(&mut out, &chosen, &others, &analysis, csv_line)
        }
        Format::Table => write_table(&mut out, &chosen, &others, &analysis),
    };
    match written.and_then(|()| out.flush().map_err(anyhow::Error::from)) {
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) => {}
        other => other?,
    }
    // A million items and their analysis: the process ends now, and freeing them one by one
    // would take a tenth of the command's time.
    drop((chosen, metrics));
    std::mem::forget((items, analysis));
    Ok(Outcome::Clean)
}

/// Rows made and formatted this many at a time, on every core, then written in order.
const ROWS_PER_BATCH: usize = 1 << 16;

/// The rows of `--format jsonl|csv`: media files (with their metrics), then the others,
/// each formatted by `line`.
fn write_rows(
    out: &mut impl Write,
    items: &[(&Item, Option<&Metrics>)],
    others: &[OtherFile],
    a: &Analysis,
    line: fn(&Row, &mut Vec<u8>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for batch in items.chunks(ROWS_PER_BATCH) {
        let parts: Vec<Vec<u8>> = batch
            .par_chunks(ROWS_PER_BATCH / 16)
            .map(|part| {
                let mut buf = Vec::with_capacity(part.len() * 512);
                for (item, metrics) in part {
                    line(&Row::from_item(item, *metrics, a), &mut buf)?;
                }
                Ok(buf)
            })
            .collect::<anyhow::Result<_>>()?;
        for part in parts {
            out.write_all(&part)?;
        }
    }
    let mut buf = Vec::new();
    for file in others {
        line(&Row::other(file), &mut buf)?;
    }
    out.write_all(&buf)?;
    Ok(())
}

fn jsonl_line(row: &Row, out: &mut Vec<u8>) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, row)?;
    out.push(b'\n');
    Ok(())
}

/// The field names, in the documented order.
fn csv_header() -> anyhow::Result<String> {
    let serde_json::Value::Object(map) = serde_json::to_value(Row::default())? else {
        anyhow::bail!("a row is not a JSON object");
    };
    Ok(map.keys().map(String::as_str).collect::<Vec<_>>().join(","))
}

fn csv_line(row: &Row, out: &mut Vec<u8>) -> anyhow::Result<()> {
    let serde_json::Value::Object(map) = serde_json::to_value(row)? else {
        anyhow::bail!("a row is not a JSON object");
    };
    let cells: Vec<String> = map.values().map(csv_cell).collect();
    writeln!(out, "{}", cells.join(","))?;
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

fn write_table(
    out: &mut impl Write,
    items: &[(&Item, Option<&Metrics>)],
    others: &[OtherFile],
    a: &Analysis,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:<6} {:<11} {:>11} {:<10} {:>8} {:>11} {:>10}  path",
        "kind",
        "status",
        "size",
        "codec",
        Measure::Fps.name(),
        "duration",
        "resolution"
    )?;
    for (item, _) in items {
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
    for f in others {
        writeln!(
            out,
            "{:<6} {:<11} {:>11} {:<10} {:>8} {:>11} {:>10}  {}  ({})",
            "other",
            f.status.as_str(),
            human_bytes(f.size_bytes),
            "-",
            "-",
            "-",
            "-",
            f.path,
            f.reason
        )?;
    }
    Ok(())
}
