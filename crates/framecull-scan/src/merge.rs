//! The merge use case (`framecull merge SHARD_DIR... --project OUT`): finished shard
//! projects checked against each other and against OUT, each copied in its own transaction
//! (skipped when OUT holds its current content already), then the data that needs the whole
//! dataset (duplicate groups, outlier statistics, flags) derived again over OUT by the same
//! code a single-machine scan uses.
//!
//! Idempotent and order-independent: a shard's rows get the same ids whatever the order, and
//! everything derived is recomputed from the merged rows. Resumable: a killed merge leaves
//! whole shards merged or not at all, and the rerun merges the rest and derives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use xxhash_rust::xxh3::Xxh3;

use super::derive::{DeriveError, DerivedSummary, recompute_for_project};
use super::shard::{MarkerError, ShardMarker, ShardSpec};
use framecull_catalog::{Catalog, CatalogError, Project, ShardSource};
use framecull_model::AnalysisLevel;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Marker(#[from] MarkerError),
    #[error(transparent)]
    Derive(#[from] DeriveError),
    #[error("nothing to merge: name one or more shard project folders")]
    NoShards,
    #[error(
        "{0} is not a finished shard: it has no shard.json (its `framecull scan --shard` has not \
         finished, or it is not a shard's project)"
    )]
    Unfinished(PathBuf),
    #[error("{dir} is not a consistent shard: {reason}")]
    BadShard { dir: PathBuf, reason: String },
    #[error("shards do not belong together: {0}")]
    Inconsistent(String),
    /// Given up on request (a signal) between two shards: the shards merged so far are
    /// recorded, and the rerun merges the rest.
    #[error(
        "merge stopped after {merged} of {total} shards; run the same command again to merge the rest"
    )]
    Stopped { merged: u64, total: u64 },
}

/// Progress of a merge.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeEvent {
    /// Shard `done` of `total` is merged (or was up to date).
    Shard {
        done: u64,
        total: u64,
        spec: ShardSpec,
        up_to_date: bool,
    },
    /// Deriving duplicate groups, statistics and flags over the merged catalog.
    Deriving,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MergeSummary {
    /// Shards named on this run.
    pub shards: u64,
    /// Of those, merged now (new or changed since their last merge).
    pub merged: u64,
    /// Of those, already merged with the same content.
    pub up_to_date: u64,
    /// Shards the merged project holds, and its items.
    pub shards_in_project: u64,
    pub items: u64,
    /// Files whose status is a problem (error or unsupported).
    pub problem_files: u64,
    /// `None` when nothing changed since the last derivation, or nothing was analysed.
    pub derived: Option<DerivedSummary>,
    pub elapsed_secs: f64,
}

/// Merging this many shards at once sets the secondary indexes aside until the last one.
const BULK_SHARDS: usize = 4;

/// A shard project, read and checked.
struct Shard {
    dir: PathBuf,
    marker: ShardMarker,
    stamp: String,
}

/// Read the shard at `dir`: its marker, and its catalog's agreement with the marker.
fn read_shard(dir: &Path) -> Result<Shard, MergeError> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let Some((marker, marker_bytes)) = ShardMarker::read_bytes(&dir)? else {
        return Err(MergeError::Unfinished(dir));
    };
    let bad = |reason: String| MergeError::BadShard {
        dir: dir.clone(),
        reason,
    };
    let catalog = Project::at(&dir).open()?;
    let recorded = catalog.shard()?;
    if recorded.as_deref() != Some(marker.spec().to_string().as_str()) {
        return Err(bad(format!(
            "shard.json says shard {} but the catalog holds {}",
            marker.spec(),
            recorded.map_or("no shard".into(), |s| format!("shard {s}"))
        )));
    }
    let root = catalog.dataset_root()?;
    if root.as_deref() != Some(marker.root.as_path()) {
        return Err(bad(format!(
            "shard.json names the dataset {} but the catalog {}",
            marker.root.display(),
            root.map_or("none".into(), |r| r.display().to_string())
        )));
    }
    let items = catalog.count_items()?;
    if items != marker.counts.items {
        return Err(bad(format!(
            "shard.json counts {} files but the catalog holds {items} (is it being scanned?)",
            marker.counts.items
        )));
    }
    let mut hasher = Xxh3::new();
    hasher.update(&marker_bytes);
    hasher.update(catalog.state_fingerprint()?.as_bytes());
    Ok(Shard {
        dir,
        marker,
        stamp: format!("{:032x}", hasher.digest128()),
    })
}

/// Refuse shards that do not belong to one partition of one dataset.
fn check_together(shards: &[Shard]) -> Result<(), MergeError> {
    let first = &shards[0].marker;
    let mut by_index: BTreeMap<u32, &Path> = BTreeMap::new();
    for s in shards {
        let m = &s.marker;
        if m.root != first.root {
            return Err(MergeError::Inconsistent(format!(
                "{} was scanned from {}, {} from {}",
                shards[0].dir.display(),
                first.root.display(),
                s.dir.display(),
                m.root.display()
            )));
        }
        if m.count != first.count || m.level() != first.level() {
            return Err(MergeError::Inconsistent(format!(
                "{} is shard {}{}, {} is shard {}{}: every shard must come from the same \
                 --shard count and analysis (--deep, --triage or neither)",
                shards[0].dir.display(),
                first.spec(),
                level_note(first.level()),
                s.dir.display(),
                m.spec(),
                level_note(m.level()),
            )));
        }
        if let Some(other) = by_index.insert(m.index, &s.dir)
            && other != s.dir
        {
            return Err(MergeError::Inconsistent(format!(
                "{} and {} are both shard {}",
                other.display(),
                s.dir.display(),
                m.spec()
            )));
        }
    }
    Ok(())
}

/// Refuse to merge into a project that is not a merge's, or holds shards these do not
/// belong with.
fn check_out(shards: &[Shard], out: &Catalog) -> Result<(), MergeError> {
    let first = &shards[0].marker;
    if out.shard()?.is_some() || out.count_unmerged_items()? > 0 {
        return Err(MergeError::Inconsistent(format!(
            "{} is a scanned project, not a merge's: merge into a new --project folder",
            out.project_dir().display()
        )));
    }
    if let Some(m) = out
        .merged_shards()?
        .into_iter()
        .find(|m| m.count != first.count || m.level != first.level())
    {
        return Err(MergeError::Inconsistent(format!(
            "{} holds shards of {}{} (shard {} from {}), these are of {}{}",
            out.project_dir().display(),
            m.count,
            level_note(m.level),
            m.index,
            m.source_dir.display(),
            first.count,
            level_note(first.level()),
        )));
    }
    Ok(())
}

/// " (deep)", " (triage)" or nothing: a shard's analysis in a message.
fn level_note(level: AnalysisLevel) -> String {
    match level {
        AnalysisLevel::None => String::new(),
        level => format!(" ({})", level.as_str()),
    }
}

/// Merge the finished shard projects in `shard_dirs` into `out` (created when new), then
/// derive duplicate groups, statistics and flags over everything `out` holds.
pub fn merge(
    out: &Project,
    shard_dirs: &[PathBuf],
    on_event: &mut dyn FnMut(MergeEvent),
) -> Result<(Catalog, MergeSummary), MergeError> {
    merge_until(out, shard_dirs, &AtomicBool::new(false), on_event)
}

/// [`merge`], given up with [`MergeError::Stopped`] between two shards once `stop` is set (a
/// signal). Each shard's copy is one transaction, so what is merged is whole; the secondary
/// indexes a bulk merge set aside are made again by the rerun, not now (on a large catalog
/// that takes longer than a scheduler's grace period).
pub fn merge_until(
    out: &Project,
    shard_dirs: &[PathBuf],
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(MergeEvent),
) -> Result<(Catalog, MergeSummary), MergeError> {
    let started = Instant::now();
    if shard_dirs.is_empty() {
        return Err(MergeError::NoShards);
    }
    let mut shards = shard_dirs
        .iter()
        .map(|d| read_shard(d))
        .collect::<Result<Vec<_>, _>>()?;
    shards.sort_by_key(|s| s.marker.index);
    shards.dedup_by(|a, b| a.dir == b.dir);
    check_together(&shards)?;
    let mut catalog = out.create_or_open(&shards[0].marker.root)?;
    check_out(&shards, &catalog)?;

    let merged_before: BTreeMap<u32, String> = catalog
        .merged_shards()?
        .into_iter()
        .map(|m| (m.index, m.stamp))
        .collect();
    let mut summary = MergeSummary {
        shards: shards.len() as u64,
        ..MergeSummary::default()
    };
    let total = shards.len() as u64;
    let to_merge = shards
        .iter()
        .filter(|s| merged_before.get(&s.marker.index) != Some(&s.stamp))
        .count();
    if to_merge >= BULK_SHARDS {
        catalog.begin_bulk_merges()?;
    }
    for (n, s) in shards.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            return Err(MergeError::Stopped {
                merged: n as u64,
                total,
            });
        }
        let up_to_date = merged_before.get(&s.marker.index) == Some(&s.stamp);
        if up_to_date {
            summary.up_to_date += 1;
        } else {
            catalog.merge_shard(&ShardSource {
                dir: &s.dir,
                index: s.marker.index,
                count: s.marker.count,
                level: s.marker.level(),
                stamp: &s.stamp,
                finished_at: s.marker.finished_at_unix as i64,
            })?;
            summary.merged += 1;
        }
        on_event(MergeEvent::Shard {
            done: n as u64 + 1,
            total,
            spec: s.marker.spec(),
            up_to_date,
        });
    }

    catalog.end_merges()?;
    // Derive again when the merged content differs from what was last derived.
    let held = catalog.merged_shards()?;
    let mut hasher = Xxh3::new();
    for m in &held {
        hasher.update(format!("{}/{} {}\n", m.index, m.count, m.stamp).as_bytes());
    }
    let state = format!("{:032x}", hasher.digest128());
    if catalog.merge_derived_stamp()?.as_deref() != Some(state.as_str()) {
        if catalog.has_metrics()? {
            on_event(MergeEvent::Deriving);
            summary.derived = Some(recompute_for_project(&mut catalog)?);
        }
        catalog.set_merge_derived_stamp(&state)?;
    }
    summary.shards_in_project = held.len() as u64;
    summary.items = catalog.count_items()?;
    summary.problem_files = catalog.count_problems()?;
    summary.elapsed_secs = started.elapsed().as_secs_f64();
    Ok((catalog, summary))
}
