//! Polars views of the catalog, built column-wise; the CLI and GUI share them.

use std::collections::HashMap;

use polars::prelude::*;

use framecull_model::{AnalysisLevel, Item, ItemId, Measure, Measured, Metrics};

/// One row per item with the columns analytics work on: metadata, and the deep-analysis
/// metrics where `metrics` has them.
pub fn items_frame(items: &[Item], metrics: &HashMap<ItemId, Metrics>) -> PolarsResult<DataFrame> {
    let col_str = |name: &str, f: &dyn Fn(&Item) -> Option<&str>| {
        Column::new(name.into(), items.iter().map(f).collect::<Vec<_>>())
    };
    let col_f64 = |name: &str, f: &dyn Fn(&Item) -> Option<f64>| {
        Column::new(name.into(), items.iter().map(f).collect::<Vec<_>>())
    };
    let mut columns = vec![
        col_str("path", &|i| Some(i.path.as_str())),
        col_str("kind", &|i| Some(i.kind.as_str())),
        col_str("status", &|i| Some(i.status.as_str())),
        col_str("analysis_level", &|i| {
            Some(
                metrics
                    .get(&i.id)
                    .map_or(AnalysisLevel::None, |m| m.level)
                    .as_str(),
            )
        }),
        col_str("codec", &|i| i.info.codec.as_deref()),
        col_str("container", &|i| i.info.container.as_deref()),
        Column::new(
            Measure::SizeBytes.name().into(),
            items.iter().map(|i| i.size_bytes).collect::<Vec<u64>>(),
        ),
    ];
    columns.extend(
        Measure::ALL
            .into_iter()
            .filter(|m| *m != Measure::SizeBytes)
            .map(|m| {
                col_f64(m.name(), &|i| {
                    m.of(i, metrics.get(&i.id).map(Measured::from))
                })
            }),
    );
    DataFrame::new(items.len(), columns)
}
