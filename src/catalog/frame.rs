//! Polars views of the catalog, built column-wise; the CLI and GUI share them.

use polars::prelude::*;

use crate::model::Item;

/// One row per item with the columns analytics work on.
pub fn items_frame(items: &[Item]) -> PolarsResult<DataFrame> {
    let col_str = |name: &str, f: &dyn Fn(&Item) -> Option<&str>| {
        Column::new(name.into(), items.iter().map(f).collect::<Vec<_>>())
    };
    let col_f64 = |name: &str, f: &dyn Fn(&Item) -> Option<f64>| {
        Column::new(name.into(), items.iter().map(f).collect::<Vec<_>>())
    };
    let columns = vec![
        col_str("path", &|i| Some(i.path.as_str())),
        col_str("kind", &|i| Some(i.kind.as_str())),
        col_str("status", &|i| Some(i.status.as_str())),
        col_str("codec", &|i| i.info.codec.as_deref()),
        col_str("container", &|i| i.info.container.as_deref()),
        Column::new(
            "size_bytes".into(),
            items.iter().map(|i| i.size_bytes).collect::<Vec<u64>>(),
        ),
        col_f64("width", &|i| i.info.width.map(f64::from)),
        col_f64("height", &|i| i.info.height.map(f64::from)),
        col_f64("megapixels", &|i| {
            Some(f64::from(i.info.width?) * f64::from(i.info.height?) / 1e6)
        }),
        col_f64("fps", &|i| i.info.fps),
        col_f64("duration_secs", &|i| i.info.duration_secs),
    ];
    DataFrame::new(items.len(), columns)
}
