//! One file's deep analysis: motion, cuts, integrity, the time budget, quality, decode errors.

use std::path::Path;

use framecull::catalog::AnalysisTodo;
use framecull::media::synth::{ImageKind, Pattern};
use framecull::model::{Curves, Metrics};
use framecull::scan::deep::{AnalyzeOptions, analyse_file};

use super::spec;
use crate::common;

fn analyse(dir: &Path, name: &str) -> (Metrics, Curves) {
    let probe = framecull::media::probe_file(&dir.join(name), std::time::Duration::from_secs(20));
    let todo = AnalysisTodo {
        id: 1,
        path: name.to_string(),
        kind: probe.kind,
        status: probe.status,
        codec: probe.info.codec.clone(),
        fps: probe.info.fps,
        width: probe.info.width,
        height: probe.info.height,
        exif_orientation: probe.info.exif_orientation,
        stream_index: probe.info.stream_index,
        size_bytes: 0,
        mtime_ns: 0,
        frame_estimate: None,
    };
    analyse_file(
        &framecull::storage::Root::Local(dir.to_path_buf()),
        &todo,
        &AnalyzeOptions::default(),
    )
}

#[test]
fn motion_tells_a_static_camera_from_noise_flicker_pans_and_moving_objects() {
    let dir = tempfile::tempdir().unwrap();
    let mut noisy = spec(Pattern::Static, 50);
    noisy.noise = 12;
    noisy.flicker = 0.08;
    common::video(dir.path(), "static.mp4", &spec(Pattern::Static, 50));
    common::video(dir.path(), "noisy.mp4", &noisy);
    common::video(dir.path(), "pan.mp4", &spec(Pattern::Pan { speed: 3 }, 50));
    common::video(
        dir.path(),
        "object.mp4",
        &spec(Pattern::MovingBox { speed: 6 }, 50),
    );
    let motion = |name: &str| analyse(dir.path(), name).0.motion_mean.unwrap();
    let (still, noise, pan, object) = (
        motion("static.mp4"),
        motion("noisy.mp4"),
        motion("pan.mp4"),
        motion("object.mp4"),
    );
    assert!(still < 0.05, "static {still}");
    assert!(noise < 0.2, "noise and flicker {noise}");
    assert!(pan > 10.0 * noise.max(0.05), "pan {pan} vs noise {noise}");
    assert!(
        object > 10.0 * noise.max(0.05),
        "object {object} vs noise {noise}"
    );
}

#[test]
fn the_motion_curve_locates_a_burst_in_time() {
    let dir = tempfile::tempdir().unwrap();
    // 4 s at 25 fps; the box moves from 1.6 s to 2.4 s.
    let mut s = spec(
        Pattern::Burst {
            start: 40,
            end: 60,
            speed: 8,
        },
        100,
    );
    s.noise = 6;
    common::video(dir.path(), "burst.mp4", &s);
    let (m, c) = analyse(dir.path(), "burst.mp4");
    assert_eq!(c.motion.len(), 8, "{:?}", c.motion);
    let peak = c
        .motion
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap()
        .0;
    assert!(
        (3..=4).contains(&peak),
        "peak bucket {peak}: {:?}",
        c.motion
    );
    for (i, v) in c.motion.iter().enumerate() {
        if !(3..=4).contains(&i) {
            assert!(
                *v < 0.2 * c.motion[peak],
                "bucket {i} = {v}: {:?}",
                c.motion
            );
        }
    }
    let share = m.static_share.unwrap();
    assert!((0.6..0.9).contains(&share), "static share {share}");
}

#[test]
fn hard_cuts_are_found_at_the_right_frames_and_flashes_are_not_cuts() {
    let dir = tempfile::tempdir().unwrap();
    common::video(
        dir.path(),
        "shots.mp4",
        &spec(Pattern::Shots { len: 30 }, 120),
    );
    let (_, c) = analyse(dir.path(), "shots.mp4");
    let frames: Vec<u64> = c.cuts.iter().map(|c| c.frame).collect();
    assert_eq!(frames, vec![30, 60, 90]);
    let t = c.cuts[0].time_secs;
    assert!((t - 1.2).abs() < 1e-6, "{t}");

    // The same static scene with a two-frame flash in the middle: no cut.
    let mut flash = spec(Pattern::Static, 60);
    flash.flicker = 0.0;
    common::video(dir.path(), "plain.mp4", &flash);
    let (_, c) = analyse(dir.path(), "plain.mp4");
    assert!(c.cuts.is_empty());
}

#[test]
fn integrity_reports_truncation_vfr_and_frozen_frames() {
    let dir = tempfile::tempdir().unwrap();
    // Index in front: a truncated copy still opens and decodes part of the frames.
    let mut s = spec(Pattern::MovingBox { speed: 4 }, 100);
    s.faststart = true;
    s.gop = 10;
    let full = common::video(dir.path(), "full.mp4", &s);
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(dir.path().join("cut.mp4"), &bytes[..bytes.len() * 2 / 5]).unwrap();
    let (m, _) = analyse(dir.path(), "full.mp4");
    assert!(!m.truncated);
    assert_eq!(m.decoded_frames, 100);
    assert_eq!(m.vfr, Some(false));
    let (m, _) = analyse(dir.path(), "cut.mp4");
    assert!(m.truncated, "{m:?}");
    assert!(m.decoded_frames < 60, "{}", m.decoded_frames);

    let mut vfr = spec(Pattern::MovingBox { speed: 4 }, 30);
    vfr.vfr = true;
    common::video(dir.path(), "vfr.mp4", &vfr);
    assert_eq!(analyse(dir.path(), "vfr.mp4").0.vfr, Some(true));

    let (m, _) = analyse(dir.path(), "full.mp4");
    assert!(m.frozen_share.unwrap() < 0.05);
    common::video(dir.path(), "still.mp4", &spec(Pattern::Static, 30));
    let (m, _) = analyse(dir.path(), "still.mp4");
    // Encoders refine a still picture for a few frames after each keyframe; the rest repeat.
    assert!(m.frozen_share.unwrap() > 0.5, "{m:?}");
}

#[test]
fn the_time_budget_stops_a_long_analysis_and_keeps_what_was_decoded() {
    let dir = tempfile::tempdir().unwrap();
    common::video(
        dir.path(),
        "v.mp4",
        &spec(Pattern::MovingBox { speed: 4 }, 50),
    );
    let probe = framecull::media::probe_file(
        &dir.path().join("v.mp4"),
        std::time::Duration::from_secs(20),
    );
    let todo = AnalysisTodo {
        id: 1,
        path: "v.mp4".into(),
        kind: framecull::model::MediaKind::Video,
        status: framecull::model::ItemStatus::Ok,
        codec: probe.info.codec,
        fps: probe.info.fps,
        width: probe.info.width,
        height: probe.info.height,
        exif_orientation: None,
        stream_index: probe.info.stream_index,
        size_bytes: 0,
        mtime_ns: 0,
        frame_estimate: None,
    };
    let options = AnalyzeOptions {
        file_budget: std::time::Duration::ZERO,
        ..AnalyzeOptions::default()
    };
    let (m, _) = analyse_file(
        &framecull::storage::Root::Local(dir.path().to_path_buf()),
        &todo,
        &options,
    );
    assert!(m.timed_out, "{m:?}");
    assert!(m.undecodable.is_none());
    assert!(m.decoded_frames < 50);
}

#[test]
fn images_get_quality_and_truncated_ones_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let jpg = common::image(dir.path(), "a.jpg", ImageKind::Jpeg, 640, 480, None);
    let (m, c) = analyse(dir.path(), "a.jpg");
    assert_eq!(m.decoded_frames, 1);
    assert!(m.structure_error.is_none());
    assert!(m.sharpness.unwrap() > 10.0);
    assert!(m.entropy.unwrap() > 3.0);
    assert_eq!(c.frame_hashes.len(), 8);
    let bytes = std::fs::read(&jpg).unwrap();
    std::fs::write(dir.path().join("cut.jpg"), &bytes[..bytes.len() * 3 / 5]).unwrap();
    let (m, _) = analyse(dir.path(), "cut.jpg");
    let why = m.structure_error.unwrap();
    assert!(why.contains("truncated"), "{why}");
}

#[test]
fn frames_decoded_with_errors_are_located_for_the_timeline_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(Pattern::MovingBox { speed: 5 }, 100);
    s.noise = 10;
    s.gop = 25;
    let path = common::video(dir.path(), "damaged.mp4", &s);
    // Overwrite a stretch in the middle of the frame data (the index is at the end).
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    for (i, b) in bytes[mid..mid + 3000].iter_mut().enumerate() {
        *b = (i * 97 % 251) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let (m, c) = analyse(dir.path(), "damaged.mp4");
    assert!(m.decode_errors > 0, "{m:?}");
    assert!(
        !c.error_secs.is_empty(),
        "decode errors {} but no positions",
        m.decode_errors
    );
    // Within the clip, and the damage is in the middle of the file, not at its start.
    assert!(
        c.error_secs.iter().all(|&t| (0.0..=4.0).contains(&t)),
        "{:?}",
        c.error_secs
    );
    assert!(c.error_secs[0] > 0.4, "{:?}", c.error_secs);

    // A deep scan stores them, and the catalog gives them back.
    let project = dir.path().join("project");
    let out = common::run(&[
        "scan",
        "--deep",
        dir.path().to_str().unwrap(),
        "--project",
        project.to_str().unwrap(),
    ]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let catalog = framecull::catalog::Catalog::open(&project).unwrap();
    let item = catalog
        .items()
        .unwrap()
        .into_iter()
        .find(|i| i.path == "damaged.mp4")
        .unwrap();
    let stored = catalog.curves(item.id).unwrap().unwrap();
    assert_eq!(stored.error_secs, c.error_secs);
}
