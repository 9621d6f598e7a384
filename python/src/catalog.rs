//! Manifests and catalogs read for Python, as JSON text that the Python half turns into
//! Arrow tables with fixed schemas (`framecull/catalog.py`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use framecull_analysis::filter::Filter;
use framecull_catalog::listing::{Analysis, Row};
use framecull_catalog::{Catalog, ItemFields, Project, by_item};
use framecull_manifest as manifest;
use pyo3::prelude::*;
use serde::Serialize;

use crate::error;
use crate::loader::{manifest_error, version_path};

fn json<T: Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

fn jsonl<T: Serialize>(values: impl IntoIterator<Item = T>) -> PyResult<String> {
    let mut out = String::new();
    for v in values {
        out.push_str(&json(&v)?);
        out.push('\n');
    }
    Ok(out)
}

fn open(py: Python<'_>, project: &Path) -> PyResult<Catalog> {
    let found = Project::locate(project).ok_or_else(|| {
        error(
            py,
            "CatalogError",
            format!(
                "no framecull project at or above {} (scan it first: framecull scan DIR)",
                project.display()
            ),
            Some(project.display().to_string()),
        )
    })?;
    found.open().map_err(|e| {
        error(
            py,
            "CatalogError",
            e.to_string(),
            Some(found.dir().display().to_string()),
        )
    })
}

/// The project folder `path` is in or belongs to.
#[pyfunction]
pub fn catalog_locate(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    let catalog = open(py, &path)?;
    Ok(catalog.project_dir().display().to_string())
}

/// `framecull list --format jsonl` of the project, optionally filtered (`--where`), with the
/// files that are not media when `all` (`--all`, unfiltered only).
#[pyfunction]
#[pyo3(signature = (project, filter=None, all=false))]
pub fn catalog_items(
    py: Python<'_>,
    project: PathBuf,
    filter: Option<&str>,
    all: bool,
) -> PyResult<String> {
    let catalog = open(py, &project)?;
    let filter = filter
        .map(Filter::parse)
        .transpose()
        .map_err(|e| error(py, "ConfigError", e.to_string(), None))?;
    let catalog_error =
        |e: framecull_catalog::CatalogError| error(py, "CatalogError", e.to_string(), None);
    let (items, analysis) = catalog
        .items_and(ItemFields::All, Analysis::load)
        .map_err(catalog_error)?;
    let metrics = by_item(&items, &analysis.metrics);
    let chosen: Vec<usize> = match &filter {
        Some(f) => f.select_items(
            &items,
            &metrics,
            &analysis.flags,
            &analysis.reviews,
            &analysis.clip_labels,
        ),
        None => (0..items.len()).collect(),
    };
    let others = if all && filter.is_none() {
        catalog.other_files().map_err(catalog_error)?
    } else {
        Vec::new()
    };
    let media = chosen
        .into_iter()
        .map(|i| Row::from_item(&items[i], metrics[i], &analysis));
    jsonl(media.chain(others.iter().map(Row::other)))
}

#[derive(Serialize)]
struct ClipOut<'a> {
    path: &'a str,
    #[serde(flatten)]
    clip: &'a framecull_model::Clip,
}

/// Every clip marked in the project, with its file's path.
#[pyfunction]
pub fn catalog_clips(py: Python<'_>, project: PathBuf) -> PyResult<String> {
    let catalog = open(py, &project)?;
    let catalog_error =
        |e: framecull_catalog::CatalogError| error(py, "CatalogError", e.to_string(), None);
    let items = catalog.items().map_err(catalog_error)?;
    let clips = catalog.all_clips().map_err(catalog_error)?;
    let mut out = Vec::new();
    for item in &items {
        for clip in clips.get(&item.id).into_iter().flatten() {
            out.push(ClipOut {
                path: &item.path,
                clip,
            });
        }
    }
    jsonl(out)
}

#[derive(Serialize)]
struct ReviewOut<'a> {
    path: &'a str,
    #[serde(flatten)]
    review: &'a framecull_model::Review,
}

/// Every review decision, with its file's path.
#[pyfunction]
pub fn catalog_reviews(py: Python<'_>, project: PathBuf) -> PyResult<String> {
    let catalog = open(py, &project)?;
    let catalog_error =
        |e: framecull_catalog::CatalogError| error(py, "CatalogError", e.to_string(), None);
    let items = catalog.items().map_err(catalog_error)?;
    let reviews = catalog.all_reviews().map_err(catalog_error)?;
    jsonl(items.iter().filter_map(|item| {
        reviews.get(&item.id).map(|review| ReviewOut {
            path: &item.path,
            review,
        })
    }))
}

/// Every manifest of the project with its versions' metadata: `{name: [meta, ...]}`.
#[pyfunction]
pub fn catalog_manifests(py: Python<'_>, project: PathBuf) -> PyResult<String> {
    let catalog = open(py, &project)?;
    let dir = catalog.project_dir();
    let mut out = HashMap::new();
    for name in manifest::names(dir) {
        let versions = manifest::versions(dir, &name).map_err(|e| manifest_error(py, e))?;
        out.insert(name, versions);
    }
    json(&out)
}

/// A manifest version's metadata and rows: `(meta JSON, rows as JSON lines)`.
#[pyfunction]
#[pyo3(signature = (path, version=None))]
pub fn manifest_rows(
    py: Python<'_>,
    path: PathBuf,
    version: Option<u32>,
) -> PyResult<(String, String)> {
    let path = version_path(py, &path, version)?;
    let (meta, rows) = py
        .detach(|| manifest::open_path(&path))
        .map_err(|e| manifest_error(py, e))?;
    Ok((json(&meta)?, jsonl(&rows)?))
}

/// The versions of the project's manifest `name`, as JSON.
#[pyfunction]
pub fn manifest_versions(py: Python<'_>, project: PathBuf, name: &str) -> PyResult<String> {
    let catalog = open(py, &project)?;
    let versions =
        manifest::versions(catalog.project_dir(), name).map_err(|e| manifest_error(py, e))?;
    json(&versions)
}

/// What changed between versions `a` and `b` of the manifest `name` (`framecull diff --json`).
#[pyfunction]
pub fn manifest_diff(
    py: Python<'_>,
    project: PathBuf,
    name: &str,
    a: u32,
    b: u32,
) -> PyResult<String> {
    let catalog = open(py, &project)?;
    let dir = catalog.project_dir();
    let read = |v| manifest::read_version(dir, name, v).map_err(|e| manifest_error(py, e));
    let (rows_a, rows_b) = (read(a)?, read(b)?);
    json(&manifest::diff_report(&rows_a, &rows_b))
}
