//! `merge`: generate N shard catalogs of a synthetic dataset (items, metrics, curves, frame
//! tables, per-file flags, written directly through the catalog API, as `scan --shard I/N
//! --deep` leaves them), then time `framecull merge` of all of them into one catalog and its
//! peak memory.

use std::path::{Path, PathBuf};
use std::time::Instant;

use framecull::catalog::{AnalysisResult, Catalog, Project};
use framecull::model::{Curves, Cut, FrameRecord, FrameTable, MediaKind, Metrics};
use framecull::scan::deep::ANALYSIS_VERSION;
use framecull::scan::merge::{MergeEvent, merge};
use framecull::scan::shard::{MarkerCounts, ShardMarker, ShardSpec, shard_of};
use serde::Serialize;

use crate::generated::item as generated_item;
use crate::util::{peak_rss_mb, print, reset_peak_rss};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Shard catalogs to generate and merge.
    #[arg(long, default_value_t = 100)]
    shards: u32,
    /// Items per shard (on average: the path hash decides).
    #[arg(long, default_value_t = 10_000)]
    items: usize,
    /// Items in a thousand that carry near-duplicate hashes (the dihedral hashes of a
    /// picture, one hash per second of a video); all carry a content hash and metrics.
    #[arg(long, default_value_t = 10)]
    hashed_per_mille: usize,
    /// Folder for the shards and the merged project (default: a temporary one, removed).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct MergeBench {
    shards: u32,
    items: u64,
    generate_secs: f64,
    /// Copying the shards' rows (with their checks and stamps).
    copy_secs: f64,
    /// Duplicate groups, statistics and flags over the merged catalog.
    derive_secs: f64,
    merge_secs: f64,
    /// The first shard's and the last shard's copy (the last goes into a full catalog).
    first_shard_secs: f64,
    last_shard_secs: f64,
    peak_rss_mb: Option<f64>,
    catalog_mb: f64,
    flags: usize,
    dup_groups: usize,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let keep = args.dir.is_some();
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("framecull-bench-merge-{}", std::process::id()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    let r = bench_merge(&args, &dir);
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let r = r?;
    print(&r, args.json, || {
        format!(
            "merge of {} shards, {} items: {:.1} s (copy {:.1} s: first shard {:.2} s, last {:.2} s; derive {:.1} s), peak RSS {:.0} MB, catalog {:.0} MB; {} flags, {} duplicate groups (generating the shards took {:.1} s)",
            r.shards,
            r.items,
            r.merge_secs,
            r.copy_secs,
            r.first_shard_secs,
            r.last_shard_secs,
            r.derive_secs,
            r.peak_rss_mb.unwrap_or(f64::NAN),
            r.catalog_mb,
            r.flags,
            r.dup_groups,
            r.generate_secs
        )
    })
}

fn bench_merge(args: &Args, dir: &Path) -> anyhow::Result<MergeBench> {
    let count = args.shards.max(1);
    let total = count as usize * args.items;
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); count as usize];
    for i in 0..total {
        members[shard_of(&generated_item(i).path, count) as usize].push(i);
    }
    let started = Instant::now();
    let mut dirs = Vec::new();
    for (index, items) in members.iter().enumerate() {
        let shard_dir = dir.join(format!("shard-{index:03}"));
        let spec = ShardSpec::new(index as u32, count)?;
        generate_shard(&shard_dir, spec, items, args.hashed_per_mille)?;
        dirs.push(shard_dir);
        if index % 10 == 9 {
            eprintln!("generated {} of {count} shards", index + 1);
        }
    }
    let generate_secs = started.elapsed().as_secs_f64();

    reset_peak_rss();
    let out = Project::at(dir.join("merged"));
    let started = Instant::now();
    let mut derive_started = None;
    let mut shard_secs = Vec::new();
    let mut last = Instant::now();
    let (catalog, summary) = merge(&out, &dirs, &mut |e| match e {
        MergeEvent::Deriving => derive_started = Some(Instant::now()),
        MergeEvent::Shard { .. } => {
            shard_secs.push(last.elapsed().as_secs_f64());
            last = Instant::now();
        }
    })?;
    let merge_secs = started.elapsed().as_secs_f64();
    let derive_secs = derive_started.map_or(0.0, |d| d.elapsed().as_secs_f64());
    anyhow::ensure!(
        summary.items as usize == total,
        "merged {} of {total} items",
        summary.items
    );
    let catalog_mb = std::fs::metadata(out.dir().join("catalog.db"))
        .map_or(0.0, |m| m.len() as f64 / (1024.0 * 1024.0));
    let derived = summary.derived.unwrap_or_default();
    drop(catalog);
    Ok(MergeBench {
        shards: count,
        items: summary.items,
        generate_secs,
        copy_secs: merge_secs - derive_secs,
        derive_secs,
        merge_secs,
        first_shard_secs: shard_secs.first().copied().unwrap_or_default(),
        last_shard_secs: shard_secs.last().copied().unwrap_or_default(),
        peak_rss_mb: peak_rss_mb(),
        catalog_mb,
        flags: derived.flags,
        dup_groups: derived.dup_groups,
    })
}

/// One shard's project as `scan --shard --deep` leaves it: items, analyses, per-file flags
/// and its `shard.json`.
fn generate_shard(
    dir: &Path,
    spec: ShardSpec,
    members: &[usize],
    hashed_per_mille: usize,
) -> anyhow::Result<()> {
    let root = Path::new("/bench");
    let mut catalog = Catalog::create_or_open(dir, root)?;
    catalog.set_shard(&spec.to_string())?;
    let scan_id = catalog.begin_scan(root)?;
    let updates: Vec<_> = members.iter().map(|&i| generated_item(i)).collect();
    catalog.upsert_items(scan_id, framecull::scan::PROBE_VERSION, &updates)?;
    let ids: std::collections::HashMap<String, i64> = catalog
        .items()?
        .into_iter()
        .map(|item| (item.path, item.id))
        .collect();
    let analyses: Vec<AnalysisResult> = members
        .iter()
        .zip(&updates)
        .map(|(&i, u)| {
            let (metrics, curves) = analysis_of(i, u.probe.kind, hashed_per_mille);
            AnalysisResult {
                id: ids[&u.path],
                size_bytes: u.size_bytes,
                mtime_ns: u.mtime_ns,
                stream_index: u.probe.info.stream_index,
                metrics,
                curves,
            }
        })
        .collect();
    catalog.store_analyses(ANALYSIS_VERSION, &analyses)?;
    let counts = framecull::catalog::ScanCounts {
        seen: members.len() as u64,
        probed: members.len() as u64,
        ..Default::default()
    };
    catalog.finish_scan(scan_id, false, counts)?;
    framecull::scan::derive::recompute_for_project(&mut catalog)?;
    let marker_counts = MarkerCounts {
        scan: counts,
        items: members.len() as u64,
        analysed: members.len() as u64,
    };
    ShardMarker::finished_now(
        root,
        spec,
        framecull::model::AnalysisLevel::Deep,
        marker_counts,
        false,
    )
    .write(dir)?;
    Ok(())
}

/// A plausible analysis of item `i`: picture measures, motion for videos, a decode error in
/// 1 of 200 files, a damaged structure in 1 of 500 pictures, byte-identical copies in 1 of
/// 500, near-duplicate hashes on `hashed_per_mille` in a thousand.
fn analysis_of(i: usize, kind: MediaKind, hashed_per_mille: usize) -> (Metrics, Curves) {
    let h = |salt: u64| xxhash_rust::xxh3::xxh3_64_with_seed(&i.to_le_bytes(), salt);
    let unit = |salt: u64| (h(salt) % 10_000) as f64 / 10_000.0;
    let video = kind == MediaKind::Video;
    // Every 500th item has the bytes of the one before.
    let content = if i % 500 == 1 { i - 1 } else { i };
    let mut m = Metrics {
        decoded_frames: if video { 120 } else { 1 },
        brightness: Some(40.0 + 160.0 * unit(1)),
        brightness_p5: Some(10.0 + 20.0 * unit(2)),
        brightness_p95: Some(200.0 + 50.0 * unit(3)),
        sharpness: Some(20.0 + 3000.0 * unit(4) * unit(5)),
        entropy: Some(4.0 + 3.5 * unit(6)),
        colorfulness: Some(60.0 * unit(7)),
        phash: Some(h(8)),
        content_hash: Some(format!("{content:032x}")),
        ..Metrics::default()
    };
    if i % 200 == 7 {
        m.decode_errors = 1 + (h(9) % 5);
        m.first_error = Some("error while decoding MB 12 7, bytestream -5".into());
    }
    if !video && i % 500 == 3 {
        m.structure_error =
            Some("JPEG is truncated: image data ends without an end-of-image marker".into());
    }
    let hashed = (h(10) % 1000) < hashed_per_mille as u64;
    let mut curves = Curves::default();
    if video {
        m.motion_mean = Some(8.0 * unit(11));
        m.motion_p95 = Some(m.motion_mean.unwrap_or(0.0) * 2.0);
        m.static_share = Some(unit(12) * 0.3);
        m.black_share = Some(0.0);
        m.frozen_share = Some(unit(13) * 0.1);
        m.decoded_duration_secs = Some(4.0);
        m.vfr = Some(false);
        curves.motion = (0..8).map(|k| (unit(20 + k) * 8.0) as f32).collect();
        curves.cuts = vec![Cut {
            frame: 60,
            time_secs: 2.0,
        }];
        curves.frames = FrameTable {
            frames: (0..120)
                .map(|k| FrameRecord {
                    pts: Some(k * 512),
                    clean_key: k % 12 == 0,
                    damaged: false,
                    hash: h(100 + k as u64),
                })
                .collect(),
        };
        if hashed {
            curves.frame_hashes = (0..4).map(|k| h(200 + k)).collect();
        }
    } else if hashed {
        curves.frame_hashes = (0..8).map(|k| h(300 + k)).collect();
    }
    (m, curves)
}
