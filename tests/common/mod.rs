//! Shared helpers for integration tests: synthetic fixtures and running the CLI.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use framecull::media::synth::{self, ImageKind, Pattern, VideoSpec};

pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_framecull"));
    cmd.env_remove("FRAMECULL_LOG");
    cmd
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run framecull")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `list --format jsonl` parsed, keyed by path.
pub fn list_jsonl(project: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    list_jsonl_where(project, None)
}

/// `list --format jsonl [--where FILTER]` parsed, keyed by path.
pub fn list_jsonl_where(
    project: &Path,
    filter: Option<&str>,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut args = vec![
        "list",
        "--project",
        project.to_str().unwrap(),
        "--format",
        "jsonl",
    ];
    args.extend(filter.map(|f| ["--where", f]).into_iter().flatten());
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "list failed: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["path"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

pub fn video(dir: &Path, name: &str, spec: &VideoSpec) -> PathBuf {
    let path = dir.join(name);
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    synth::write_video(&path, spec).unwrap_or_else(|e| panic!("writing {name}: {e}"));
    path
}

pub fn image(
    dir: &Path,
    name: &str,
    kind: ImageKind,
    w: u32,
    h: u32,
    exif: Option<u16>,
) -> PathBuf {
    let path = dir.join(name);
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    synth::write_image(&path, kind, w, h, Pattern::MovingBox { speed: 3 }, 1, exif).unwrap();
    path
}

/// A small mixed dataset: videos of several codecs and containers, images, broken files.
/// Returns the number of files written.
pub fn mixed_dataset(dir: &Path) -> usize {
    video(
        dir,
        "clips/h264.mp4",
        &VideoSpec::new("libx264", 320, 240, 25, 25),
    );
    video(
        dir,
        "clips/vp9.webm",
        &VideoSpec::new("libvpx-vp9", 160, 120, 30, 15),
    );
    video(
        dir,
        "clips/mpeg4.avi",
        &VideoSpec::new("mpeg4", 176, 144, 15, 15),
    );
    let mut rotated = VideoSpec::new("libx264", 320, 180, 30, 10);
    rotated.rotation_deg = Some(90);
    video(dir, "clips/rotated.mp4", &rotated);
    image(dir, "images/a.png", ImageKind::Png, 64, 48, None);
    image(dir, "images/b.jpg", ImageKind::Jpeg, 80, 60, Some(6));
    std::fs::write(dir.join("images/empty.jpg"), b"").unwrap();
    std::fs::write(dir.join("clips/garbage.mp4"), b"definitely not a video").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not media, never catalogued").unwrap();
    8
}

pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("FRAMECULL_MEDIA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/media"));
    if dir.join("ground_truth.jsonl").is_file() {
        Some(dir)
    } else if std::env::var_os("FRAMECULL_REQUIRE_MEDIA").is_some() {
        panic!(
            "media corpus not found at {} and FRAMECULL_REQUIRE_MEDIA is set",
            dir.display()
        );
    } else {
        eprintln!(
            "SKIPPED: media corpus not found at {} (set FRAMECULL_MEDIA to run this test)",
            dir.display()
        );
        None
    }
}
