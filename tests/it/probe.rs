//! Probing synthetic files of known properties through the library.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use framecull::media::{
    probe_file,
    synth::{ImageKind, VideoSpec},
};
use framecull::model::{ItemStatus, MediaKind, Probe};

fn probe(path: &std::path::Path) -> Probe {
    probe_file(path, Duration::from_secs(20))
}

#[test]
fn videos_of_several_codecs_and_containers() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "a.mp4",
            "libx264",
            "h264",
            "mov,mp4,m4a,3gp,3g2,mj2",
            320,
            240,
            25,
            50,
        ),
        ("b.mkv", "libx264", "h264", "matroska,webm", 160, 90, 30, 30),
        (
            "c.webm",
            "libvpx-vp9",
            "vp9",
            "matroska,webm",
            128,
            96,
            24,
            24,
        ),
        ("d.avi", "mpeg4", "mpeg4", "avi", 176, 144, 15, 30),
        (
            "e.mov",
            "mjpeg",
            "mjpeg",
            "mov,mp4,m4a,3gp,3g2,mj2",
            64,
            48,
            10,
            10,
        ),
        (
            "f.mp4",
            "libx265",
            "hevc",
            "mov,mp4,m4a,3gp,3g2,mj2",
            128,
            72,
            30,
            15,
        ),
    ];
    for (name, enc, codec, container, w, h, fps, frames) in cases {
        let path = common::video(dir.path(), name, &VideoSpec::new(enc, w, h, fps, frames));
        let p = probe(&path);
        assert_eq!(p.status, ItemStatus::Ok, "{name}: {:?}", p.error);
        assert_eq!(p.kind, MediaKind::Video, "{name}");
        assert_eq!(p.info.codec.as_deref(), Some(codec), "{name}");
        assert_eq!(p.info.container.as_deref(), Some(container), "{name}");
        assert_eq!((p.info.width, p.info.height), (Some(w), Some(h)), "{name}");
        assert_eq!(p.info.fps_base, Some(f64::from(fps)), "{name}");
        // The average rate comes from timestamps; Matroska's are rounded to milliseconds.
        let got_fps = p.info.fps.unwrap();
        let tolerance = if container == "matroska,webm" {
            0.015
        } else {
            1e-6
        };
        assert!(
            (got_fps / f64::from(fps) - 1.0).abs() <= tolerance,
            "{name}: fps {got_fps}"
        );
        let want = f64::from(frames) / f64::from(fps);
        let got = p.info.duration_secs.unwrap();
        assert!(
            (got - want).abs() <= 1.0 / f64::from(fps) + 1e-6,
            "{name}: duration {got} vs {want}"
        );
        assert_eq!(p.info.rotation_deg, Some(0), "{name}");
        assert_eq!(p.info.has_audio, Some(false), "{name}");
    }
}

#[test]
fn rotation_metadata_is_read_clockwise() {
    let dir = tempfile::tempdir().unwrap();
    for deg in [90, 180, 270] {
        let mut spec = VideoSpec::new("libx264", 64, 48, 25, 5);
        spec.rotation_deg = Some(deg);
        let path = common::video(dir.path(), &format!("r{deg}.mp4"), &spec);
        let p = probe(&path);
        assert_eq!(p.info.rotation_deg, Some(deg as u32), "rotation {deg}");
        // Coded size is reported before rotation.
        assert_eq!((p.info.width, p.info.height), (Some(64), Some(48)));
    }
}

#[test]
fn variable_frame_rate_average_differs_from_base_rate() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = VideoSpec::new("libx264", 64, 48, 30, 30);
    spec.vfr = true;
    let path = common::video(dir.path(), "vfr.mp4", &spec);
    let p = probe(&path);
    assert_eq!(p.status, ItemStatus::Ok);
    // Every third frame lasts two ticks: 30 frames span 40 ticks of 1/30 s.
    let dur = p.info.duration_secs.unwrap();
    assert!((dur - 40.0 / 30.0).abs() < 0.04, "duration {dur}");
    let avg = p.info.fps.unwrap();
    assert!((avg - 22.5).abs() < 0.2, "average fps {avg}");
    assert_eq!(p.info.frame_count, Some(30));
}

#[test]
fn images_by_content_with_exif() {
    let dir = tempfile::tempdir().unwrap();
    let png = common::image(dir.path(), "x.png", ImageKind::Png, 33, 17, None);
    let p = probe(&png);
    assert_eq!((p.kind, p.status), (MediaKind::Image, ItemStatus::Ok));
    assert_eq!(p.info.codec.as_deref(), Some("png"));
    assert_eq!((p.info.width, p.info.height), (Some(33), Some(17)));
    assert_eq!(p.info.exif_orientation, None);
    assert_eq!(p.info.frame_count, Some(1));

    let jpg = common::image(dir.path(), "y.jpg", ImageKind::Jpeg, 40, 30, Some(6));
    let p = probe(&jpg);
    assert_eq!(p.info.codec.as_deref(), Some("jpeg"));
    assert_eq!((p.info.width, p.info.height), (Some(40), Some(30)));
    assert_eq!(p.info.exif_orientation, Some(6));

    // A PNG named .mp4 is an image.
    let disguised = dir.path().join("really_png.mp4");
    std::fs::copy(&png, &disguised).unwrap();
    let p = probe(&disguised);
    assert_eq!((p.kind, p.status), (MediaKind::Image, ItemStatus::Ok));
    assert_eq!(p.info.width, Some(33));
}

#[test]
fn broken_files_become_errors_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let good = common::video(
        dir.path(),
        "good.mp4",
        &VideoSpec::new("libx264", 160, 120, 25, 50),
    );
    let bytes = std::fs::read(&good).unwrap();
    // The index (moov) is at the end: a truncated copy cannot be opened.
    let truncated = dir.path().join("truncated.mp4");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let zero = dir.path().join("zero.mp4");
    std::fs::write(&zero, b"").unwrap();
    let garbage = dir.path().join("garbage.mkv");
    std::fs::write(&garbage, vec![0x5Au8; 4096]).unwrap();
    let jpg = common::image(dir.path(), "t.jpg", ImageKind::Jpeg, 64, 64, None);
    let head = std::fs::read(&jpg).unwrap()[..40].to_vec();
    let cut_jpg = dir.path().join("cut.jpg");
    std::fs::write(&cut_jpg, head).unwrap();

    let p = probe(&truncated);
    assert_eq!((p.kind, p.status), (MediaKind::Video, ItemStatus::Error));
    assert!(
        p.error.as_deref().unwrap().contains("moov atom not found"),
        "{:?}",
        p.error
    );

    let p = probe(&zero);
    assert_eq!((p.kind, p.status), (MediaKind::Video, ItemStatus::Error));
    assert_eq!(p.error.as_deref(), Some("empty file (0 bytes)"));

    let p = probe(&garbage);
    assert_eq!(p.status, ItemStatus::Error, "{p:?}");
    assert!(
        p.error.as_deref().unwrap().starts_with("cannot open"),
        "{:?}",
        p.error
    );

    let p = probe(&cut_jpg);
    assert_eq!((p.kind, p.status), (MediaKind::Image, ItemStatus::Error));
    assert!(
        p.error.as_deref().unwrap().contains("JPEG"),
        "{:?}",
        p.error
    );
}

#[test]
fn the_time_budget_stops_a_slow_probe() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::video(
        dir.path(),
        "v.mp4",
        &VideoSpec::new("libx264", 64, 48, 25, 5),
    );
    let p = probe_file(&path, Duration::ZERO);
    assert_eq!(p.status, ItemStatus::Error);
    assert!(
        p.error.as_deref().unwrap().contains("time budget"),
        "{:?}",
        p.error
    );
}
