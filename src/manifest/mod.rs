//! Versioned manifests: the product's output. An export selects clips from the catalog
//! (decisions, clips, flags), assigns splits, and writes an immutable version:
//! `<project>/manifests/<NAME>/vNNNN.{parquet,jsonl,csv}` plus `vNNNN.json` (what shaped it).
//! The contract is docs/MANIFEST.md.

mod io;
pub mod split;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::analysis::flags::Config;
use crate::catalog::{Catalog, CatalogError};
use crate::model::{Decision, ItemStatus, MediaKind, SeekReference, Severity};
pub use split::SplitSpec;

/// Version of the row and metadata layout (docs/MANIFEST.md).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("cannot write or read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("manifest encoding failed: {0}")]
    Encode(String),
    #[error("parquet: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    #[error("{0}")]
    Invalid(String),
}

impl ManifestError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        ManifestError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One clip of a manifest. Field order is the column order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestRow {
    pub clip_id: String,
    pub path: String,
    pub file_fingerprint: String,
    pub size_bytes: i64,
    pub kind: String,
    pub start_secs: f64,
    pub end_secs: f64,
    pub start_frame: Option<i64>,
    pub end_frame: Option<i64>,
    pub start_pts: Option<i64>,
    pub end_pts: Option<i64>,
    pub time_base: Option<String>,
    pub fps: Option<f64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub rotation_deg: Option<i64>,
    pub label: Option<String>,
    pub tags: Vec<String>,
    pub split: Option<String>,
    pub group_key: String,
    pub motion: Option<f64>,
    pub brightness: Option<f64>,
    pub sharpness: Option<f64>,
    pub flags: Vec<String>,
}

impl ManifestRow {
    pub const COLUMNS: &'static [&'static str] = &[
        "clip_id",
        "path",
        "file_fingerprint",
        "size_bytes",
        "kind",
        "start_secs",
        "end_secs",
        "start_frame",
        "end_frame",
        "start_pts",
        "end_pts",
        "time_base",
        "fps",
        "width",
        "height",
        "rotation_deg",
        "label",
        "tags",
        "split",
        "group_key",
        "motion",
        "brightness",
        "sharpness",
        "flags",
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Parquet,
    Jsonl,
    Csv,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Jsonl => "jsonl",
            Format::Csv => "csv",
        }
    }
}

/// Which unreviewed files go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Include {
    /// Accepted files, and unreviewed files without error or warning flags.
    Unreviewed,
    /// Accepted files only.
    Accepted,
}

#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub name: String,
    pub formats: Vec<Format>,
    pub split: Option<SplitSpec>,
    pub split_seed: u64,
    pub include: Include,
}

/// What shaped a version and what it holds: `vNNNN.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionMeta {
    pub schema_version: u32,
    pub name: String,
    pub version: u32,
    pub parent: Option<u32>,
    /// Unix seconds.
    pub created_at: i64,
    pub framecull_version: String,
    pub dataset_root: String,
    pub catalog_fingerprint: String,
    pub include: Include,
    /// The project config (rules and statistical cut-offs) the flags came from.
    pub config: Config,
    pub split: Option<SplitSpec>,
    pub split_seed: u64,
    pub counts: Counts,
    /// xxh3-128 of the rows as canonical JSON lines, ordered by clip id.
    pub rows_hash: String,
    /// Data files of this version, by format.
    pub files: BTreeMap<String, String>,
    /// The seek references of its videos (`vNNNN.frames.jsonl`), when the catalog had frame
    /// tables from a deep pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_index: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub rows: u64,
    pub files: u64,
    pub by_split: BTreeMap<String, u64>,
    pub by_kind: BTreeMap<String, u64>,
    /// Files left out, by reason.
    pub excluded: BTreeMap<String, u64>,
}

/// Folder of a manifest's versions.
pub fn manifest_dir(project: &Path, name: &str) -> PathBuf {
    project.join("manifests").join(name)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
}

/// Build the rows an export would write (sorted by clip id) and the counts.
pub fn select_rows(
    catalog: &Catalog,
    options: &ExportOptions,
) -> Result<(Vec<ManifestRow>, Counts), ManifestError> {
    let items = catalog.items()?;
    let metrics = catalog.all_metrics()?;
    let flags = catalog.all_flags()?;
    let dups = catalog.all_dups()?;
    let reviews = catalog.all_reviews()?;
    let clips = catalog.all_clips()?;
    let fingerprints: HashMap<i64, &str> = items
        .iter()
        .map(|i| (i.id, i.fingerprint.as_deref().unwrap_or("")))
        .collect();
    let mut counts = Counts::default();
    let mut rows = Vec::new();
    let mut excluded = |why: &str| *counts.excluded.entry(why.to_string()).or_default() += 1;
    for item in &items {
        if item.kind == MediaKind::Other {
            continue;
        }
        if item.status != ItemStatus::Ok {
            excluded(&format!("status {}", item.status.as_str()));
            continue;
        }
        let review = reviews.get(&item.id).cloned().unwrap_or_default();
        let item_flags = flags.get(&item.id).map(Vec::as_slice).unwrap_or_default();
        match (review.decision, options.include) {
            (Decision::Rejected, _) => {
                excluded("rejected");
                continue;
            }
            (Decision::Unreviewed, Include::Accepted) => {
                excluded("unreviewed");
                continue;
            }
            (Decision::Unreviewed, Include::Unreviewed)
                if item_flags.iter().any(|f| f.severity <= Severity::Warning) =>
            {
                excluded("unreviewed and flagged");
                continue;
            }
            _ => {}
        }
        let fingerprint = item.fingerprint.clone().unwrap_or_default();
        let group_key = match dups.get(&item.id) {
            Some(d) => format!(
                "dup:{}",
                fingerprints.get(&d.group).copied().unwrap_or_default()
            ),
            None => format!("file:{fingerprint}"),
        };
        let m = metrics.get(&item.id);
        let info = &item.info;
        let base = ManifestRow {
            clip_id: String::new(),
            path: item.path.clone(),
            file_fingerprint: fingerprint.clone(),
            size_bytes: item.size_bytes as i64,
            kind: item.kind.as_str().to_string(),
            start_secs: 0.0,
            end_secs: 0.0,
            start_frame: None,
            end_frame: None,
            start_pts: None,
            end_pts: None,
            time_base: info.time_base.map(|t| t.to_text()),
            fps: info.fps,
            width: info.width.map(i64::from),
            height: info.height.map(i64::from),
            rotation_deg: info
                .rotation_deg
                .map(i64::from)
                .filter(|_| item.kind == MediaKind::Video),
            label: None,
            tags: review.tags.clone(),
            split: None,
            group_key,
            motion: m.and_then(|m| m.motion_mean),
            brightness: m.and_then(|m| m.brightness),
            sharpness: m.and_then(|m| m.sharpness),
            flags: {
                let mut codes: Vec<String> = item_flags.iter().map(|f| f.code.clone()).collect();
                codes.sort();
                codes.dedup();
                codes
            },
        };
        let mut item_rows = Vec::new();
        if item.kind == MediaKind::Image {
            item_rows.push(ManifestRow {
                clip_id: clip_id(&fingerprint, "image"),
                start_frame: Some(0),
                end_frame: Some(1),
                ..base
            });
        } else {
            let item_clips: Vec<_> = clips
                .get(&item.id)
                .map(|c| {
                    c.iter()
                        .filter(|c| c.decision != Decision::Rejected)
                        .filter(|c| {
                            options.include == Include::Unreviewed
                                || c.decision == Decision::Accepted
                                || review.decision == Decision::Accepted
                        })
                        .collect()
                })
                .unwrap_or_default();
            if item_clips.is_empty() {
                // The whole video is one clip.
                let start = info.start_secs.unwrap_or(0.0);
                let duration = m
                    .and_then(|m| m.decoded_duration_secs)
                    .or(info.duration_secs)
                    .unwrap_or(0.0);
                let frames = m
                    .map(|m| m.decoded_frames as i64)
                    .filter(|f| *f > 0)
                    .or(info.frame_count)
                    .or_else(|| info.fps.map(|f| (f * duration).round() as i64));
                let (start_pts, end_pts) = match info.time_base {
                    Some(tb) => {
                        let per_sec = f64::from(tb.den) / f64::from(tb.num);
                        let s = (start * per_sec).round() as i64;
                        (Some(s), Some(s + (duration * per_sec).round() as i64))
                    }
                    None => (None, None),
                };
                let range = format!("{}-{}", start_pts.unwrap_or(0), end_pts.unwrap_or(0));
                item_rows.push(ManifestRow {
                    clip_id: clip_id(&fingerprint, &range),
                    start_secs: start,
                    end_secs: start + duration,
                    start_frame: Some(0),
                    end_frame: frames,
                    start_pts,
                    end_pts,
                    ..base
                });
            } else {
                for c in item_clips {
                    let range = format!("{}-{}@{}", c.start_pts, c.end_pts, c.time_base.to_text());
                    item_rows.push(ManifestRow {
                        clip_id: clip_id(&fingerprint, &range),
                        start_secs: c.start_secs,
                        end_secs: c.end_secs,
                        start_frame: c.start_frame,
                        end_frame: c.end_frame,
                        start_pts: Some(c.start_pts),
                        end_pts: Some(c.end_pts),
                        time_base: Some(c.time_base.to_text()),
                        label: c.label.clone(),
                        ..base.clone()
                    });
                }
            }
        }
        counts.files += 1;
        rows.extend(item_rows);
    }
    if let Some(spec) = &options.split {
        for r in &mut rows {
            r.split = Some(spec.assign(&r.group_key, options.split_seed).to_string());
        }
    }
    rows.sort_by(|a, b| a.clip_id.cmp(&b.clip_id));
    rows.dedup_by(|a, b| a.clip_id == b.clip_id);
    counts.rows = rows.len() as u64;
    for r in &rows {
        *counts.by_kind.entry(r.kind.clone()).or_default() += 1;
        if let Some(s) = &r.split {
            *counts.by_split.entry(s.clone()).or_default() += 1;
        }
    }
    Ok((rows, counts))
}

/// Stable clip identity: the file's content fingerprint and the clip's boundaries.
fn clip_id(fingerprint: &str, range: &str) -> String {
    format!(
        "{:016x}",
        xxh3_64(format!("{fingerprint}|{range}").as_bytes())
    )
}

/// xxh3-128 over the rows as canonical JSON lines (rows sorted by clip id).
pub fn rows_hash(rows: &[ManifestRow]) -> String {
    let mut h = Xxh3::new();
    for r in rows {
        if let Ok(line) = serde_json::to_vec(r) {
            h.update(&line);
            h.update(b"\n");
        }
    }
    format!("{:032x}", h.digest128())
}

/// Versions of a manifest with their metadata, oldest first. A version exists once its
/// `vNNNN.json` does (it is written last).
pub fn versions(project: &Path, name: &str) -> Result<Vec<VersionMeta>, ManifestError> {
    let dir = manifest_dir(project, name);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        if file.starts_with('v') && file.ends_with(".json") {
            let path = e.path();
            let text = std::fs::read_to_string(&path).map_err(|e| ManifestError::io(&path, e))?;
            let meta: VersionMeta = serde_json::from_str(&text)
                .map_err(|e| ManifestError::Invalid(format!("{}: {e}", path.display())))?;
            out.push(meta);
        }
    }
    out.sort_by_key(|m| m.version);
    Ok(out)
}

/// Names of every manifest of the project.
pub fn names(project: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(project.join("manifests"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Export a new version. Files go to temporary names, are synced, then renamed; the
/// metadata file is renamed last, so a crash leaves a whole version or none.
pub fn export(catalog: &Catalog, options: &ExportOptions) -> Result<VersionMeta, ManifestError> {
    if !valid_name(&options.name) {
        return Err(ManifestError::Invalid(format!(
            "manifest name {:?}: use letters, digits, '-', '_' and '.'",
            options.name
        )));
    }
    if options.formats.is_empty() {
        return Err(ManifestError::Invalid("no output format".into()));
    }
    let project = catalog.project_dir().to_path_buf();
    let dir = manifest_dir(&project, &options.name);
    std::fs::create_dir_all(&dir).map_err(|e| ManifestError::io(&dir, e))?;
    clean_leftovers(&dir);
    let existing = versions(&project, &options.name)?;
    let parent = existing.last().map(|m| m.version);
    let version = parent.map_or(1, |p| p + 1);
    let catalog_fingerprint = catalog.state_fingerprint()?;
    // The settings that produced the stored flags (defaults, and no flags, before the first
    // derivation), not whatever framecull.toml says now.
    let config = catalog.flags_config()?.unwrap_or_default();
    let (rows, counts) = select_rows(catalog, options)?;
    let stem = format!("v{version:04}");
    let mut files = BTreeMap::new();
    let mut staged = Vec::new();
    for format in &options.formats {
        let file = format!("{stem}.{}", format.extension());
        let path = dir.join(&file);
        if path.exists() {
            return Err(ManifestError::Invalid(format!(
                "{} already exists",
                path.display()
            )));
        }
        let tmp = io::write_temp(&path, |out| match format {
            Format::Parquet => io::write_parquet(out, &rows),
            Format::Jsonl => io::write_jsonl(out, &rows),
            Format::Csv => io::write_csv(out, &rows),
        })?;
        staged.push((tmp, path));
        files.insert(format.extension().to_string(), file);
    }
    let references = seek_references(catalog, &rows)?;
    let frame_index = if references.is_empty() {
        None
    } else {
        let file = format!("{stem}.frames.jsonl");
        let path = dir.join(&file);
        let tmp = io::write_temp(&path, |out| {
            for r in &references {
                serde_json::to_writer(&mut *out, r)
                    .map_err(|e| ManifestError::Encode(e.to_string()))?;
                out.write_all(b"\n")
                    .map_err(|e| ManifestError::io(&path, e))?;
            }
            Ok(())
        })?;
        staged.push((tmp, path));
        Some(file)
    };
    let meta = VersionMeta {
        schema_version: SCHEMA_VERSION,
        name: options.name.clone(),
        version,
        parent,
        created_at: crate::catalog::unix_now(),
        framecull_version: env!("CARGO_PKG_VERSION").to_string(),
        dataset_root: catalog
            .dataset_root()?
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        catalog_fingerprint,
        include: options.include,
        config,
        split: options.split.clone(),
        split_seed: options.split_seed,
        counts,
        rows_hash: rows_hash(&rows),
        files,
        frame_index,
    };
    let meta_path = dir.join(format!("{stem}.json"));
    let meta_tmp = io::write_temp(&meta_path, |out| {
        serde_json::to_writer_pretty(&mut *out, &meta)
            .map_err(|e| ManifestError::Encode(e.to_string()))
    })?;
    for (tmp, path) in &staged {
        io::publish(tmp, path)?;
    }
    io::publish(&meta_tmp, &meta_path)?;
    catalog.record_manifest(
        &meta.name,
        meta.version,
        meta.parent,
        meta.counts.rows,
        &meta.rows_hash,
        &meta.catalog_fingerprint,
    )?;
    Ok(meta)
}

/// The seek references of the videos in `rows` that have a frame table, one per file.
fn seek_references(
    catalog: &Catalog,
    rows: &[ManifestRow],
) -> Result<Vec<SeekReference>, ManifestError> {
    let ids: HashMap<String, i64> = catalog
        .items()?
        .into_iter()
        .filter(|i| i.kind == MediaKind::Video)
        .map(|i| (i.path, i.id))
        .collect();
    let mut done = std::collections::HashSet::new();
    let mut out = Vec::new();
    for row in rows {
        let Some(&id) = ids.get(&row.path) else {
            continue;
        };
        if !done.insert(id) {
            continue;
        }
        if let Some(table) = catalog.frame_table(id)? {
            out.push(table.seek_reference(&row.path, &row.file_fingerprint));
        }
    }
    Ok(out)
}

/// The seek references exported with the version at `path` (as [`open_path`] takes it),
/// by file fingerprint; empty when the version has none.
pub fn read_seek_references(
    path: &Path,
    meta: &VersionMeta,
) -> Result<HashMap<String, SeekReference>, ManifestError> {
    let Some(file) = &meta.frame_index else {
        return Ok(HashMap::new());
    };
    let dir = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(Path::new("."))
    };
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| ManifestError::io(&path, e))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let r: SeekReference = serde_json::from_str(l)
                .map_err(|e| ManifestError::Invalid(format!("{}: {e}", path.display())))?;
            Ok((r.file_fingerprint.clone(), r))
        })
        .collect()
}

/// Remove what an interrupted export left: temporary files, and data files of a version
/// whose metadata was never published.
fn clean_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for name in &names {
        let stem = name.split('.').next().unwrap_or_default();
        let orphan = name.starts_with('v')
            && !name.ends_with(".json")
            && !names.contains(&format!("{stem}.json"));
        if (name.starts_with('.') && name.ends_with(".tmp")) || orphan {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
}

/// Rows of a version, from its Parquet file, else its JSON lines.
pub fn read_version(
    project: &Path,
    name: &str,
    version: u32,
) -> Result<Vec<ManifestRow>, ManifestError> {
    let meta = versions(project, name)?
        .into_iter()
        .find(|m| m.version == version)
        .ok_or_else(|| {
            ManifestError::Invalid(format!("manifest {name} has no version {version}"))
        })?;
    let dir = manifest_dir(project, name);
    if let Some(file) = meta.files.get("parquet") {
        return io::read_parquet(&dir.join(file));
    }
    if let Some(file) = meta.files.get("jsonl") {
        return io::read_jsonl(&dir.join(file));
    }
    Err(ManifestError::Invalid(format!(
        "version {version} of {name} has only CSV; diff and reading need Parquet or JSON lines"
    )))
}

/// Open a manifest by path: a version's metadata (`vNNNN.json`), one of its data files
/// (`vNNNN.parquet`, `vNNNN.jsonl`), or a manifest folder (its latest version). Returns the
/// metadata and the rows.
pub fn open_path(path: &Path) -> Result<(VersionMeta, Vec<ManifestRow>), ManifestError> {
    let meta_path = if path.is_dir() {
        let mut latest: Option<(u32, PathBuf)> = None;
        let entries = std::fs::read_dir(path).map_err(|e| ManifestError::io(path, e))?;
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let number = file
                .strip_prefix('v')
                .and_then(|f| f.strip_suffix(".json"))
                .and_then(|n| n.parse::<u32>().ok());
            if let Some(n) = number
                && latest.as_ref().is_none_or(|(v, _)| n > *v)
            {
                latest = Some((n, e.path()));
            }
        }
        latest.map(|(_, p)| p).ok_or_else(|| {
            ManifestError::Invalid(format!("no manifest version in {}", path.display()))
        })?
    } else {
        path.with_extension("json")
    };
    let text = std::fs::read_to_string(&meta_path).map_err(|e| ManifestError::io(&meta_path, e))?;
    let meta: VersionMeta = serde_json::from_str(&text)
        .map_err(|e| ManifestError::Invalid(format!("{}: {e}", meta_path.display())))?;
    let dir = meta_path.parent().unwrap_or(Path::new("."));
    let asked = path
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| *e == "parquet" || *e == "jsonl");
    let file = |format: &str| meta.files.get(format).map(|f| dir.join(f));
    let rows = match asked {
        Some("parquet") => io::read_parquet(path)?,
        Some(_) => io::read_jsonl(path)?,
        None => match (file("parquet"), file("jsonl")) {
            (Some(p), _) => io::read_parquet(&p)?,
            (None, Some(j)) => io::read_jsonl(&j)?,
            (None, None) => {
                return Err(ManifestError::Invalid(format!(
                    "{}: only CSV was written; the loader reads Parquet or JSON lines",
                    meta_path.display()
                )));
            }
        },
    };
    Ok((meta, rows))
}

/// Differences between two versions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Diff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Same clip id, other fields changed (not counting the split): (clip id, fields).
    pub changed: Vec<(String, Vec<String>)>,
    /// (clip id, from split, to split).
    pub split_moves: Vec<(String, Option<String>, Option<String>)>,
}

pub fn diff(a: &[ManifestRow], b: &[ManifestRow]) -> Diff {
    let index = |rows: &[ManifestRow]| -> BTreeMap<String, serde_json::Value> {
        rows.iter()
            .map(|r| {
                (
                    r.clip_id.clone(),
                    serde_json::to_value(r).unwrap_or_default(),
                )
            })
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut d = Diff::default();
    for (id, rb) in &ib {
        match ia.get(id) {
            None => d.added.push(id.clone()),
            Some(ra) => {
                let fields: Vec<String> = ManifestRow::COLUMNS
                    .iter()
                    .filter(|c| **c != "split" && ra[**c] != rb[**c])
                    .map(|c| c.to_string())
                    .collect();
                if !fields.is_empty() {
                    d.changed.push((id.clone(), fields));
                }
                if ra["split"] != rb["split"] {
                    let s = |v: &serde_json::Value| v.as_str().map(str::to_string);
                    d.split_moves
                        .push((id.clone(), s(&ra["split"]), s(&rb["split"])));
                }
            }
        }
    }
    d.removed = ia
        .keys()
        .filter(|id| !ib.contains_key(*id))
        .cloned()
        .collect();
    d
}
