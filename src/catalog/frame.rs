//! Polars views of the catalog, built column-wise; the CLI and GUI share them.

use std::collections::HashMap;

use polars::prelude::*;

use crate::model::{Item, ItemId, Metrics};

/// One row per item with the columns analytics work on: metadata, and the deep-analysis
/// metrics where `metrics` has them.
pub fn items_frame(items: &[Item], metrics: &HashMap<ItemId, Metrics>) -> PolarsResult<DataFrame> {
    let metric = |i: &Item, f: fn(&Metrics) -> Option<f64>| metrics.get(&i.id).and_then(f);
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
        col_f64("aspect", &|i| {
            let (w, h) = (f64::from(i.info.width?), f64::from(i.info.height?));
            let turned = matches!(i.info.rotation_deg, Some(90 | 270))
                || matches!(i.info.exif_orientation, Some(5..=8));
            Some(if turned { h / w } else { w / h })
        }),
        col_f64("motion_mean", &|i| metric(i, |m| m.motion_mean)),
        col_f64("brightness", &|i| metric(i, |m| m.brightness)),
        col_f64("sharpness", &|i| metric(i, |m| m.sharpness)),
    ];
    DataFrame::new(items.len(), columns)
}
