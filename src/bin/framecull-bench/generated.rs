//! A generated catalog of any size, written directly (no media files): every tenth item a
//! video, the rest images, in 1000 folders. The export, shard, label, window and merge
//! benchmarks share it.

use std::path::Path;

use framecull::catalog::{Catalog, ItemUpdate};

/// A catalog of `n` items (every tenth a video, the rest images), written directly.
pub fn catalog(project: &Path, n: usize) -> anyhow::Result<Catalog> {
    let mut catalog = Catalog::create_or_open(project, Path::new("/bench"))?;
    let scan_id = catalog.begin_scan(Path::new("/bench"))?;
    let batch: Vec<ItemUpdate> = (0..n).map(item).collect();
    for chunk in batch.chunks(10_000) {
        catalog.upsert_items(scan_id, framecull::scan::PROBE_VERSION, chunk)?;
    }
    Ok(catalog)
}

/// Item `i` of a generated dataset: every tenth a video, the rest images, in 1000 folders.
pub fn item(i: usize) -> ItemUpdate {
    use framecull::model::{MediaInfo, MediaKind, Probe, Ratio};
    let video = i.is_multiple_of(10);
    ItemUpdate {
        path: format!(
            "d{:03}/f{i:07}.{}",
            i % 1000,
            if video { "mp4" } else { "jpg" }
        ),
        size_bytes: 10_000 + (i as u64 * 104_729) % 5_000_000,
        mtime_ns: 1,
        fingerprint: Some(format!("{i:032x}")),
        probe: Probe::ok(
            if video {
                MediaKind::Video
            } else {
                MediaKind::Image
            },
            MediaInfo {
                codec: Some("h264".into()),
                width: Some([640, 1280, 1920, 3840][i % 4]),
                height: Some([360, 720, 1080, 2160][i % 4]),
                fps: video.then_some([24.0, 25.0, 30.0, 60.0][i / 7 % 4]),
                time_base: video.then_some(Ratio { num: 1, den: 15360 }),
                duration_secs: video.then_some(1.0 + (i * 7919 % 600) as f64 / 10.0),
                start_secs: video.then_some(0.0),
                frame_count: video.then_some(120),
                ..MediaInfo::default()
            },
        ),
    }
}
