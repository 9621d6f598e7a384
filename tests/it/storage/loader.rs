//! A bucket's manifest loads like its local copy, without a deleted object or a stopped store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use super::{export_with, hard_to_seek, load_bench_with, report_of, scan};
use crate::common;
use crate::common::s3::{Server, framecull, moto_server};

/// Clips in several containers (the hard-to-seek ones included), a rotated clip, and pictures
/// (one EXIF-rotated).
fn loader_dataset(dir: &Path) {
    use framecull::media::synth::{ImageKind, Pattern, VideoSpec};
    for (i, (name, codec, frames)) in [
        ("clips/a.mp4", "libx264", 40),
        ("clips/b.webm", "libvpx-vp9", 20),
        ("clips/c.avi", "mpeg4", 30),
    ]
    .into_iter()
    .enumerate()
    {
        let mut spec = VideoSpec::new(codec, 160, 120, 25, frames);
        spec.pattern = Pattern::MovingBox {
            speed: 2 + i as u32,
        };
        common::video(dir, name, &spec);
    }
    let mut rotated = VideoSpec::new("libx264", 192, 108, 30, 30);
    rotated.rotation_deg = Some(90);
    common::video(dir, "clips/rotated.mp4", &rotated);
    hard_to_seek(dir);
    common::image(dir, "stills/exif6.jpg", ImageKind::Jpeg, 96, 64, Some(6));
    common::image(dir, "stills/plain.png", ImageKind::Png, 50, 70, None);
}

fn export(server: &Server, project: &Path) -> PathBuf {
    export_with(framecull(server, "test"), project)
}

/// `load-bench --json` of a manifest (its own root unless `root` is given).
fn load_bench(server: &Server, manifest: &Path, root: Option<&str>) -> Output {
    load_bench_with(framecull(server, "test"), manifest, root)
}

fn load_report(server: &Server, manifest: &Path, root: Option<&str>) -> Value {
    load_report_exiting(server, manifest, root, 0)
}

/// As [`load_report`], for a run that ends with exit status `code` (1: clips were skipped).
fn load_report_exiting(server: &Server, manifest: &Path, root: Option<&str>, code: i32) -> Value {
    report_of(&load_bench(server, manifest, root), code)
}

/// A manifest's rows by path, without the columns that follow from the fingerprint.
fn manifest_rows(manifest: &Path) -> BTreeMap<String, Value> {
    let (_, rows) = framecull::manifest::open_path(manifest).unwrap();
    rows.into_iter()
        .map(|r| {
            let mut v = serde_json::to_value(&r).unwrap();
            let o = v.as_object_mut().unwrap();
            for column in ["clip_id", "file_fingerprint", "group_key"] {
                o.remove(column);
            }
            (format!("{} {}", r.path, r.start_secs), v)
        })
        .collect()
}

#[test]
fn a_manifest_of_a_bucket_loads_with_the_batches_of_the_local_folder() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    loader_dataset(data.path());
    let mut server = Server::start(&moto, None);
    // Versioning on: a HEAD answers a version id that no listing gives, and the loader's check
    // of an object must still match the scan's fingerprint.
    server.upload_with(data.path(), "train", "set", &["--versioned"]);
    let local_dir = data.path().to_str().unwrap();

    let remote_project = tempfile::tempdir().unwrap();
    let out = scan(
        &server,
        "s3://train/set",
        remote_project.path(),
        &["--deep"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let local_project = tempfile::tempdir().unwrap();
    let out = common::run(&[
        "scan",
        local_dir,
        "--deep",
        "--project",
        local_project.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let remote_manifest = export(&server, remote_project.path());
    let local_manifest = export(&server, local_project.path());

    // The manifest records the root URL and paths relative to it; no credential.
    let (meta, rows) = framecull::manifest::open_path(&remote_manifest).unwrap();
    assert_eq!(meta.dataset_root, "s3://train/set");
    assert!(rows.iter().any(|r| r.path == "hard/one_keyframe.ts"));
    for entry in std::fs::read_dir(&remote_manifest).unwrap() {
        let text =
            String::from_utf8_lossy(&std::fs::read(entry.unwrap().path()).unwrap()).into_owned();
        assert!(!text.contains("test-secret"));
    }
    assert_eq!(
        manifest_rows(&remote_manifest),
        manifest_rows(&local_manifest)
    );
    let frame_tables = std::fs::read_dir(&remote_manifest)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with(".frames.jsonl")
        })
        .count();
    assert_eq!(
        frame_tables, 1,
        "the deep pass's seek references are exported"
    );

    // The bucket's manifest read from the bucket gives the batches it gives from a local copy,
    // and the local manifest's batches are the same read from the bucket.
    let from_bucket = load_report(&server, &remote_manifest, None);
    let from_folder = load_report(&server, &remote_manifest, Some(local_dir));
    assert_eq!(from_bucket["checksum"], from_folder["checksum"]);
    assert_eq!(from_bucket["clips"], rows.len());
    assert!(from_bucket["frames"].as_u64().unwrap() > 0);
    for report in [&from_bucket, &from_folder] {
        assert_eq!(report["skipped_clips"], serde_json::json!({}), "{report}");
        assert_eq!(report["skipped_windows"], serde_json::json!({}), "{report}");
    }
    let local = load_report(&server, &local_manifest, None);
    let local_from_bucket = load_report(&server, &local_manifest, Some("s3://train/set"));
    assert_eq!(local["checksum"], local_from_bucket["checksum"]);
    assert_eq!(local["frames"], from_bucket["frames"]);

    // An object deleted since the export: its clips are skipped as missing, the rest load.
    server.delete("train", "set/clips/b.webm");
    let report = load_report_exiting(&server, &remote_manifest, None, 1);
    assert_eq!(report["skipped_clips"]["missing"], 1, "{report}");
    assert_eq!(report["clips"], rows.len() - 1);
    assert!(report["frames"].as_u64().unwrap() > 0);
    assert!(
        report["errors"].to_string().contains("clips/b.webm"),
        "{report}"
    );

    // A store that stops answering during a run: the epoch ends with the store's error
    // (skipping would skip every clip), whatever `on_error` says, and no panic.
    let config = framecull::loader::LoaderConfig {
        device: framecull::loader::DeviceChoice::Cpu,
        workers: 1,
        ..framecull::loader::LoaderConfig::default()
    };
    let mut loader =
        framecull::loader::Loader::from_rows(&rows, &server.root("s3://train/set"), config)
            .unwrap();
    server.stop();
    let first = loader.epoch(0).next().unwrap();
    match first {
        Err(framecull::loader::LoaderError::Storage(e)) => {
            assert!(e.is_transient(), "{e}");
            assert!(e.to_string().contains("s3://train/set/"), "{e}");
        }
        other => panic!(
            "expected the store's error, got {:?}",
            other.map(|b| b.shape)
        ),
    }

    // A store that does not answer when a run starts: one clear error, exit 3 (retry later).
    let out = load_bench(&server, &remote_manifest, None);
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("cannot reach the object store for s3://train/set"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
