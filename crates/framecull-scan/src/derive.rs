//! Derived data, recomputable at any time without rescanning: duplicate groups and flags,
//! from the catalog's items and metrics and the project's `framecull.toml`.

use std::collections::HashMap;

use polars::prelude::*;

use framecull_analysis::dups::{DupInput, DupRelation, group_duplicates};
use framecull_analysis::flags::{Config, Statistics, dup_flag, item_flags};
use framecull_analysis::outliers::outlier_flags;
use framecull_catalog::{Catalog, CatalogError, ConfigError, Project, by_item};
use framecull_model::{
    AnalysisLevel, DupInfo, Flag, Item, ItemId, ItemStatus, Measured, MediaKind, Metrics,
};

#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("statistics failed: {0}")]
    Polars(#[from] PolarsError),
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DerivedSummary {
    pub flags: usize,
    pub flagged_items: usize,
    pub dup_groups: usize,
}

/// What a derivation covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DeriveScope {
    /// Everything: per-file flags, duplicate groups and outlier statistics.
    #[default]
    Dataset,
    /// Per-file flags only: the catalog holds one shard of a dataset, whose duplicates and
    /// statistics `framecull merge` computes over all the shards.
    PerFile,
}

/// Recompute duplicate groups and every flag with the project's settings (written out with
/// their defaults when the project has none yet), and store them. A project holding one
/// shard of a dataset gets its per-file flags only ([`DeriveScope::PerFile`]).
pub fn recompute_for_project(catalog: &mut Catalog) -> Result<DerivedSummary, DeriveError> {
    let scope = if catalog.shard()?.is_some() {
        DeriveScope::PerFile
    } else {
        DeriveScope::Dataset
    };
    let project = Project::at(catalog.project_dir());
    if let Err(e) = project.write_default_config() {
        tracing::warn!(
            "cannot write the default {}: {e}",
            project.config_path().display()
        );
    }
    let config = project.config()?;
    recompute_in(catalog, &config, scope)
}

/// Recompute duplicate groups and every flag, and store them (replacing the old ones) with
/// the settings used.
pub fn recompute(catalog: &mut Catalog, config: &Config) -> Result<DerivedSummary, DeriveError> {
    recompute_in(catalog, config, DeriveScope::Dataset)
}

/// [`recompute`] over `scope`.
pub fn recompute_in(
    catalog: &mut Catalog,
    config: &Config,
    scope: DeriveScope,
) -> Result<DerivedSummary, DeriveError> {
    let whole = scope == DeriveScope::Dataset;
    let items: Vec<_> = catalog
        .items()?
        .into_iter()
        .filter(|i| i.status != ItemStatus::Missing)
        .collect();
    let metrics = catalog.metrics_by_id()?;
    // Each item with its metrics.
    let metrics_of = by_item(&items, &metrics);
    let items: Vec<(Item, Option<&Metrics>)> = items.into_iter().zip(metrics_of).collect();
    // Duplicates span the whole dataset: a shard's derive neither reads the frame hashes nor
    // groups them.
    let groups = if whole {
        let hashes = catalog.all_frame_hashes()?;
        group_duplicates(&dup_inputs(&items, &hashes))
    } else {
        HashMap::new()
    };
    let dups: HashMap<ItemId, DupInfo> = groups
        .into_iter()
        .map(|(id, m)| {
            (
                id,
                DupInfo {
                    group: m.group,
                    exact: m.relation == DupRelation::Exact,
                    like: m.like,
                    exact_group: m.exact_group,
                },
            )
        })
        .collect();

    let paths: HashMap<ItemId, &str> = items.iter().map(|(i, _)| (i.id, i.path.as_str())).collect();
    let mut flags: Vec<(ItemId, Flag)> = Vec::new();
    for (item, m) in &items {
        for f in item_flags(item, *m, config) {
            flags.push((item.id, f));
        }
        if let Some(d) = dups.get(&item.id) {
            let like = paths.get(&d.like).copied().unwrap_or("another file");
            flags.push((item.id, dup_flag(d, like, item.kind)));
        }
    }
    if whole {
        flags.extend(outlier_flags(
            &measures_frame(&items, &config.statistics)?,
            &config.statistics,
        )?);
    }

    let summary = DerivedSummary {
        flags: flags.len(),
        flagged_items: flags
            .iter()
            .map(|f| f.0)
            .collect::<std::collections::HashSet<_>>()
            .len(),
        dup_groups: dups
            .values()
            .map(|d| d.group)
            .collect::<std::collections::HashSet<_>>()
            .len(),
    };
    catalog.replace_derived(&dups, &flags, config)?;
    Ok(summary)
}

/// What duplicate grouping reads of each item with content: a picture's hashes of its flips
/// and rotations, a video's sampled frames' hashes (where they cover it), else its bytes'
/// hash.
fn dup_inputs<'a>(
    items: &'a [(Item, Option<&'a Metrics>)],
    hashes: &'a HashMap<ItemId, Vec<u64>>,
) -> Vec<DupInput<'a>> {
    // Files with no content are not duplicates of each other (nor of anything): each is its
    // own `unreadable` row.
    items
        .iter()
        .filter(|(item, _)| item.size_bytes > 0)
        .filter_map(|(item, m)| {
            let m = (*m)?;
            let content = m.content_hash.as_deref();
            let h = hashes.get(&item.id).map(Vec::as_slice).unwrap_or_default();
            match (item.kind, h.len()) {
                (MediaKind::Image, 8) => Some(DupInput::Picture {
                    id: item.id,
                    content_hash: content,
                    variants: h.try_into().ok()?,
                }),
                (MediaKind::Video, n) if n > 0 && hashes_cover(item, m, n) => {
                    Some(DupInput::Video {
                        id: item.id,
                        content_hash: content,
                        frame_hashes: h,
                    })
                }
                _ => content.map(|c| DupInput::Bytes {
                    id: item.id,
                    content_hash: c,
                }),
            }
        })
        .collect()
}

/// One row per usable item with the measures `statistics` tests, each a column named by
/// [`framecull_model::Measure::name`].
fn measures_frame(
    items: &[(Item, Option<&Metrics>)],
    statistics: &Statistics,
) -> PolarsResult<DataFrame> {
    let ok: Vec<(&Item, Option<Measured>)> = items
        .iter()
        .filter(|(i, _)| i.status == ItemStatus::Ok && i.kind != MediaKind::Other)
        .map(|(i, m)| (i, m.filter(|m| m.undecodable.is_none()).map(Measured::from)))
        .collect();
    let mut columns = vec![
        Column::new(
            "id".into(),
            ok.iter().map(|(i, _)| i.id).collect::<Vec<i64>>(),
        ),
        Column::new(
            "kind".into(),
            ok.iter().map(|(i, _)| i.kind.as_str()).collect::<Vec<_>>(),
        ),
    ];
    let mut measures = statistics.measures.clone();
    measures.sort();
    measures.dedup();
    columns.extend(measures.into_iter().map(|m| {
        let videos_only = m.spec().outliers.videos_only;
        let values: Vec<Option<f64>> = ok
            .iter()
            .map(|&(i, measured)| {
                (!videos_only || i.kind == MediaKind::Video)
                    .then(|| m.of(i, measured))
                    .flatten()
            })
            .collect();
        Column::new(m.name().into(), values)
    }));
    DataFrame::new(ok.len(), columns)
}

/// Whether a video's frame hashes are enough to match it as footage: the deep pass's (one a
/// second) always; a triage's (one a keyframe decoded, or one a second where it decoded
/// every frame) where there are three or more, or as many as the deep pass would have over
/// the footage the packets hold (a file cut short holds less than its header says): one or
/// two keyframes of a long video (a screen recording, a long-GOP encoder) would match it to
/// anything that shares a title card.
fn hashes_cover(item: &Item, m: &Metrics, n: usize) -> bool {
    let seconds = m.decoded_duration_secs.or(item.info.duration_secs);
    m.level != AnalysisLevel::Triage || n >= 3 || n as f64 >= seconds.unwrap_or(f64::INFINITY)
}
