//! Scanning: every file found, and rescans that probe only what changed.

use crate::common;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use framecull::catalog::Project;
use framecull::media::synth::{ImageKind, VideoSpec};
use framecull::model::{Decision, ItemStatus, MediaKind};
use framecull::scan::pipeline::Dataset;
use framecull::scan::{ScanEvent, ScanOptions, ScanSummary, scan};

use super::{id_of, item_of};

/// Scan the dataset again; returns the summary and the paths probed, sorted.
fn rescan(dataset: &mut Dataset) -> (ScanSummary, Vec<String>) {
    let options = ScanOptions {
        jobs: 1,
        ..ScanOptions::default()
    };
    let mut probed = Vec::new();
    let summary = scan(
        &mut dataset.catalog,
        &dataset.root,
        &options,
        &AtomicBool::new(false),
        &mut |e| {
            if let ScanEvent::Probed { path, .. } = e {
                probed.push(path);
            }
        },
    )
    .unwrap();
    probed.sort();
    (summary, probed)
}

fn counts(s: &ScanSummary) -> [u64; 4] {
    [
        s.counts.seen,
        s.counts.probed,
        s.counts.unchanged,
        s.counts.missing,
    ]
}

#[test]
fn a_scan_finds_every_file_and_rescans_probe_only_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    common::image(&data, "a.png", ImageKind::Png, 32, 24, None);
    common::image(&data, "b.jpg", ImageKind::Jpeg, 32, 24, None);
    common::image(&data, "deep/er/c.png", ImageKind::Png, 32, 24, None);
    common::video(&data, "v.mp4", &VideoSpec::new("libx264", 64, 48, 25, 5));
    // Taken for its content: a PNG without an extension. Damaged: noise named .mp4.
    std::fs::copy(data.join("a.png"), data.join("deep/no_extension")).unwrap();
    std::fs::write(data.join("broken.mp4"), [0x5a; 4096]).unwrap();
    // Not taken: other files and hidden folders.
    std::fs::write(data.join("notes.txt"), b"not media").unwrap();
    common::image(&data, ".cache/x.png", ImageKind::Png, 16, 16, None);
    let all = [
        "a.png",
        "b.jpg",
        "broken.mp4",
        "deep/er/c.png",
        "deep/no_extension",
        "v.mp4",
    ];
    let mut dataset = Dataset::open(&data, Some(Project::at(tmp.path().join("project")))).unwrap();

    let (first, probed) = rescan(&mut dataset);
    assert_eq!(probed, all);
    assert_eq!(counts(&first), [6, 6, 0, 0]);
    assert_eq!((first.problem_files, first.counts.problems), (1, 1));
    assert!(!first.cancelled);
    let items = dataset.catalog.items().unwrap();
    let paths: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
    assert_eq!(paths, all);
    assert_eq!(
        item_of(&dataset.catalog, "broken.mp4").status,
        ItemStatus::Error
    );
    assert_eq!(
        item_of(&dataset.catalog, "deep/no_extension").kind,
        MediaKind::Image
    );
    assert_eq!(item_of(&dataset.catalog, "v.mp4").info.frame_count, Some(5));

    let (second, probed) = rescan(&mut dataset);
    assert!(probed.is_empty(), "{probed:?}");
    assert_eq!(counts(&second), [6, 0, 6, 0]);

    // New content of another size, and the same bytes with a new mtime.
    common::image(&data, "a.png", ImageKind::Png, 48, 40, None);
    std::fs::File::options()
        .write(true)
        .open(data.join("b.jpg"))
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    let (third, probed) = rescan(&mut dataset);
    assert_eq!(probed, ["a.png", "b.jpg"]);
    assert_eq!(counts(&third), [6, 2, 4, 0]);
    assert_eq!(item_of(&dataset.catalog, "a.png").info.width, Some(48));

    // A deleted file turns missing, once, and keeps its decision.
    let c = id_of(&dataset.catalog, "deep/er/c.png");
    dataset
        .catalog
        .set_decisions(&[c], Decision::Accepted)
        .unwrap();
    std::fs::remove_file(data.join("deep/er/c.png")).unwrap();
    let (fourth, probed) = rescan(&mut dataset);
    assert!(probed.is_empty(), "{probed:?}");
    assert_eq!(counts(&fourth), [5, 0, 5, 1]);
    let gone = item_of(&dataset.catalog, "deep/er/c.png");
    assert_eq!(gone.status, ItemStatus::Missing);
    assert_eq!(gone.error.as_deref(), Some("file no longer on disk"));
    assert_eq!(
        dataset.catalog.all_reviews().unwrap()[&c].decision,
        Decision::Accepted
    );
    let (fifth, _) = rescan(&mut dataset);
    assert_eq!(counts(&fifth), [5, 0, 5, 0]);
    assert_eq!(dataset.catalog.items().unwrap().len(), 6);
}
