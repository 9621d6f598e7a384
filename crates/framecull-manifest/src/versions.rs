//! Reading what exports wrote: the versions of a manifest and their metadata, their rows and
//! seek references, a manifest opened by path, and the differences between two versions.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{ManifestError, ManifestRow, VersionMeta, io, manifest_dir};
use framecull_model::SeekReference;

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
        // `vNNNN.json` only: the formats' indexes beside it (`vNNNN.dali.json`,
        // `vNNNN.folders.json`, ...) are not versions.
        let is_version = file
            .strip_prefix('v')
            .and_then(|f| f.strip_suffix(".json"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if is_version {
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
            ManifestError::Invalid(format!(
                "manifest {name} has no version {version}; `framecull manifests` lists them"
            ))
        })?;
    let dir = manifest_dir(project, name);
    for format in ["parquet", "jsonl"] {
        if let Some(file) = meta.files.get(format) {
            return io::read_checked(&dir.join(file), format, meta.file_hashes.get(format));
        }
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
    let hash = |format: &str| meta.file_hashes.get(format);
    let rows = match asked {
        Some(format) => io::read_checked(path, format, hash(format))?,
        None => match (file("parquet"), file("jsonl")) {
            (Some(p), _) => io::read_checked(&p, "parquet", hash("parquet"))?,
            (None, Some(j)) => io::read_checked(&j, "jsonl", hash("jsonl"))?,
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

/// A clip as a diff names it: id, file and boundaries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClipRef {
    pub clip_id: String,
    pub path: String,
    pub start_secs: f64,
    pub end_secs: f64,
    pub start_frame: Option<i64>,
    pub end_frame: Option<i64>,
    pub split: Option<String>,
}

impl ClipRef {
    fn of(row: &ManifestRow) -> ClipRef {
        ClipRef {
            clip_id: row.clip_id.clone(),
            path: row.path.clone(),
            start_secs: row.start_secs,
            end_secs: row.end_secs,
            start_frame: row.start_frame,
            end_frame: row.end_frame,
            split: row.split.clone(),
        }
    }
}

/// A changed clip: as it is now, and the fields that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangedClip {
    #[serde(flatten)]
    pub clip: ClipRef,
    pub fields: Vec<String>,
}

/// A clip whose split moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MovedClip {
    #[serde(flatten)]
    pub clip: ClipRef,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// [`Diff`] with each clip's file and boundaries (`framecull diff --json`): added and moved
/// clips as in `b`, removed ones as in `a`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiffReport {
    pub added: Vec<ClipRef>,
    pub removed: Vec<ClipRef>,
    pub changed: Vec<ChangedClip>,
    pub split_moves: Vec<MovedClip>,
}

/// [`diff`] with each clip described from the version that holds it.
pub fn diff_report(a: &[ManifestRow], b: &[ManifestRow]) -> DiffReport {
    let d = diff(a, b);
    let find = |rows: &[ManifestRow], id: &str| -> ClipRef {
        rows.iter()
            .find(|r| r.clip_id == id)
            .map(ClipRef::of)
            .unwrap_or_else(|| ClipRef {
                clip_id: id.to_string(),
                path: String::new(),
                start_secs: 0.0,
                end_secs: 0.0,
                start_frame: None,
                end_frame: None,
                split: None,
            })
    };
    DiffReport {
        added: d.added.iter().map(|id| find(b, id)).collect(),
        removed: d.removed.iter().map(|id| find(a, id)).collect(),
        changed: d
            .changed
            .into_iter()
            .map(|(id, fields)| ChangedClip {
                clip: find(b, &id),
                fields,
            })
            .collect(),
        split_moves: d
            .split_moves
            .into_iter()
            .map(|(id, from, to)| MovedClip {
                clip: find(b, &id),
                from,
                to,
            })
            .collect(),
    }
}

/// What changed from version `a` to version `b`, by clip id.
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
                // What was chosen, not where its clip file went (`clip_file` and the rest).
                let clip_file = |c: &str| c.starts_with("clip_") && c != "clip_id";
                let fields: Vec<String> = ManifestRow::COLUMNS
                    .iter()
                    .filter(|c| **c != "split" && !clip_file(c) && ra[**c] != rb[**c])
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
