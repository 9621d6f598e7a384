//! The library through its public API, a module per layer: the catalog (migrations,
//! projects, the journal), scanning, manifests, flag rules and the shared model types.
//! Catalogs are filled with hand-made items; only the scan tests write (tiny) media files.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use framecull::catalog::{Catalog, ItemUpdate};
use framecull::model::{
    Clip, ClipOrigin, FrameTimeline, Item, ItemId, MediaInfo, MediaKind, Probe, Ratio, Review,
};

mod catalog;
mod flags;
mod manifest;
mod model;
mod scan;

/// A probed file as a scan would store it; the fingerprint follows the path.
fn fake(path: &str, kind: MediaKind) -> ItemUpdate {
    let video = kind == MediaKind::Video;
    ItemUpdate {
        path: path.to_string(),
        size_bytes: 1000 + path.len() as u64,
        mtime_ns: 1,
        fingerprint: Some(format!(
            "{:032x}",
            xxhash_rust::xxh3::xxh3_128(path.as_bytes())
        )),
        probe: Probe::ok(
            kind,
            MediaInfo {
                codec: Some(if video { "h264" } else { "png" }.into()),
                width: Some(640),
                height: Some(360),
                fps: video.then_some(25.0),
                time_base: video.then(|| Ratio::new(1, 12800).unwrap()),
                start_secs: video.then_some(0.0),
                duration_secs: video.then_some(4.0),
                frame_count: video.then_some(100),
                ..MediaInfo::default()
            },
        ),
    }
}

/// A catalog of the dataset `/data` in `project`, holding `items`.
fn catalog_with(project: &Path, items: Vec<ItemUpdate>) -> Catalog {
    let mut catalog = Catalog::create_or_open(project, Path::new("/data")).unwrap();
    let scan = catalog.begin_scan(Path::new("/data")).unwrap();
    catalog
        .upsert_items(scan, framecull::scan::PROBE_VERSION, &items)
        .unwrap();
    catalog
}

fn item_of(catalog: &Catalog, path: &str) -> Item {
    let items = catalog.items().unwrap();
    items.into_iter().find(|i| i.path == path).unwrap()
}

fn id_of(catalog: &Catalog, path: &str) -> ItemId {
    item_of(catalog, path).id
}

/// A clip of `item` over frames `[start, end)` of a 25 fps video (time base 1/12800).
fn clip(item: ItemId, start: usize, end: usize) -> Clip {
    let timeline = FrameTimeline {
        pts: (0..100).map(|i| i * 512).collect(),
        time_base: Ratio::new(1, 12800).unwrap(),
    };
    timeline.clip(item, start, end, None, ClipOrigin::Manual)
}

/// The review state as the front ends see it: every item's review (the default when it has
/// none) and every clip.
type ReviewState = (BTreeMap<ItemId, Review>, BTreeMap<ItemId, Vec<Clip>>);

fn review_state(catalog: &Catalog) -> ReviewState {
    let reviews = catalog.all_reviews().unwrap();
    let by_item = catalog
        .items()
        .unwrap()
        .iter()
        .map(|i| (i.id, reviews.get(&i.id).cloned().unwrap_or_default()))
        .collect();
    (by_item, catalog.all_clips().unwrap().into_iter().collect())
}
