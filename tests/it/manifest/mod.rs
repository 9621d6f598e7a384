//! Manifest export end to end: round trip, versions and diff, splits, crash safety.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;

use framecull::catalog::{Catalog, ItemUpdate};
use framecull::manifest::{ExportOptions, Format, Include, SplitSpec};
use framecull::model::{MediaInfo, MediaKind, Probe, Ratio};

mod clip_files;
mod crash_safety;
mod versions;
mod webdataset;

/// A catalog of `n` fake items (no files needed: export reads only the catalog). Every
/// tenth item is a video; the rest are images. Ids and fingerprints follow `start..start+n`.
/// A project of `n` generated items in a temporary folder, and its open catalog.
fn project_with_items(n: usize) -> (tempfile::TempDir, Catalog) {
    let proj = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::create_or_open(proj.path(), Path::new("/data")).unwrap();
    add_items(&mut catalog, 0, n);
    (proj, catalog)
}

fn add_items(catalog: &mut Catalog, start: usize, n: usize) {
    let scan = catalog.begin_scan(Path::new("/data")).unwrap();
    let batch: Vec<ItemUpdate> = (start..start + n)
        .map(|i| {
            let video = i % 10 == 0;
            let info = MediaInfo {
                container: Some(
                    if video {
                        "mov,mp4,m4a,3gp,3g2,mj2"
                    } else {
                        "jpeg"
                    }
                    .into(),
                ),
                codec: Some(if video { "h264" } else { "jpeg" }.into()),
                width: Some(640),
                height: Some(480),
                fps: video.then_some(25.0),
                time_base: video.then(|| Ratio::new(1, 12800).unwrap()),
                start_secs: video.then_some(0.0),
                duration_secs: video.then_some(4.0),
                frame_count: video.then_some(100),
                rotation_deg: video.then_some(0),
                ..MediaInfo::default()
            };
            ItemUpdate {
                path: format!(
                    "d{:03}/{}{i:06}.{}",
                    i % 97,
                    if video { "v" } else { "i" },
                    if video { "mp4" } else { "jpg" }
                ),
                size_bytes: 1000 + i as u64,
                mtime_ns: 1,
                fingerprint: Some(format!("{i:032x}")),
                probe: Probe::ok(
                    if video {
                        MediaKind::Video
                    } else {
                        MediaKind::Image
                    },
                    info,
                ),
            }
        })
        .collect();
    for chunk in batch.chunks(5000) {
        catalog.upsert_items(scan, 2, chunk).unwrap();
    }
}

fn options(name: &str) -> ExportOptions {
    ExportOptions {
        name: name.into(),
        formats: vec![Format::Parquet, Format::Jsonl, Format::Csv],
        split: Some(SplitSpec::parse("train=0.8,val=0.1,test=0.1").unwrap()),
        split_seed: 11,
        include: Include::Unreviewed,
        filter: None,
        shard_size: None,
    }
}

/// `data` scanned deeply into the project `proj`.
fn scan_deep(data: &Path, proj: &Path) {
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--deep",
        "--project",
        proj.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
}

/// A folder with one generated H.264 video `name` (25 fps, GOPs of 25 frames, noise), scanned
/// deep into a project with the clips `clips` (frame ranges) added: (data, project).
fn video_with_clips(
    name: &str,
    width: u32,
    height: u32,
    frames: u32,
    clips: &[(usize, usize)],
) -> (tempfile::TempDir, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let mut spec = framecull::media::synth::VideoSpec::new("libx264", width, height, 25, frames);
    spec.gop = 25;
    spec.noise = 6;
    common::video(data.path(), name, &spec);
    let project = proj.path().to_str().unwrap();
    scan_deep(data.path(), proj.path());
    for (start, end) in clips {
        let (start, end) = (format!("f{start}"), format!("f{end}"));
        let out = common::run(&[
            "clips",
            "--project",
            project,
            "add",
            name,
            "--start",
            &start,
            "--end",
            &end,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }
    (data, proj)
}
