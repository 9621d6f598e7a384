//! Clips and clip files of a bucket's videos, clip files in a bucket, shards read from one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{report_of, scan};
use crate::common;
use crate::common::s3::{Server, framecull, moto_server};

/// `clips add`, `clips split-at-cuts` and `clips propose` on a project of a bucket read each
/// video's frame timeline from its object, and make the clips they make on a local scan of the
/// same files (they used to open the object's key as a local path: "cannot open").
#[test]
fn clips_of_a_bucket_project_are_the_clips_of_the_local_folder() {
    use framecull::media::synth::Pattern;
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let mut shots = framecull::media::synth::VideoSpec::new("libx264", 128, 72, 25, 48);
    shots.pattern = Pattern::Shots { len: 16 };
    common::video(data.path(), "clips/shots.mp4", &shots);
    let mut moving = framecull::media::synth::VideoSpec::new("libx264", 128, 72, 25, 40);
    moving.pattern = Pattern::MovingBox { speed: 4 };
    common::video(data.path(), "clips/box.mp4", &moving);
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "clips", false);

    let remote = tempfile::tempdir().unwrap();
    let out = scan(&server, "s3://datasets/clips", remote.path(), &["--deep"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let local = tempfile::tempdir().unwrap();
    let out = common::run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        local.path().to_str().unwrap(),
        "--deep",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));

    let clips_of = |project: &Path| {
        let commands: [&[&str]; 4] = [
            &[
                "clips",
                "add",
                "clips/box.mp4",
                "--start",
                "f2",
                "--end",
                "f8",
            ],
            &[
                "clips",
                "add",
                "clips/shots.mp4",
                "--start",
                "0.5",
                "--end",
                "1.5",
            ],
            &["clips", "split-at-cuts"],
            &["clips", "propose", "clips/box.mp4"],
        ];
        for args in commands {
            let out = framecull(&server, "test")
                .args(args)
                .args(["--project", project.to_str().unwrap()])
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{args:?}: {}",
                common::stderr(&out)
            );
        }
        let out = common::run(&["clips", "list", "--project", project.to_str().unwrap()]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        common::stdout(&out)
    };
    let (remote_clips, local_clips) = (clips_of(remote.path()), clips_of(local.path()));
    assert_eq!(remote_clips, local_clips);
    // The manual clip is frames 2..8 of box.mp4; split-at-cuts made the three shots.
    assert!(remote_clips.contains("clips/box.mp4"), "{remote_clips}");
    assert!(remote_clips.lines().count() >= 6, "{remote_clips}");
}

/// A 60-frame H.264 video with a keyframe every 12 frames at `name` in `dir`.
fn gops_of_12(dir: &Path, name: &str) {
    let mut spec = framecull::media::synth::VideoSpec::new("libx264", 128, 72, 25, 60);
    spec.gop = 12;
    spec.noise = 6;
    common::video(dir, name, &spec);
}

/// A project of the folder `data` scanned deeply, with [`add_two_clips`] of `name`.
fn project_with_two_clips(server: &Server, data: &Path, name: &str) -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    let project_arg = project.path().to_str().unwrap();
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--deep",
        "--project",
        project_arg,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    add_two_clips(server, project_arg, name);
    project
}

/// Clips of frames 5 to 31 and 12 to 24 of `name` (frames 12 to 24 a closed GOP in both).
fn add_two_clips(server: &Server, project: &str, name: &str) {
    for (start, end) in [("f5", "f31"), ("f12", "f24")] {
        let out = framecull(server, "test")
            .args(["clips", "--project", project, "add", name])
            .args(["--start", start, "--end", end])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }
}

/// Clip files of a bucket's video (an odd name: a space and an accent) are written from
/// ranged reads of the object: each holds its clip's frames, as many as from the local file.
#[test]
fn clip_files_of_a_bucket_hold_their_frames() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let name = "clips/odd name é.mp4";
    gops_of_12(data.path(), name);
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "odd", false);
    let mut counts = Vec::new();
    for remote in [true, false] {
        let project = tempfile::tempdir().unwrap();
        let out = if remote {
            scan(&server, "s3://datasets/odd", project.path(), &["--deep"])
        } else {
            common::run(&[
                "scan",
                data.path().to_str().unwrap(),
                "--deep",
                "--project",
                project.path().to_str().unwrap(),
            ])
        };
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let project_arg = project.path().to_str().unwrap();
        add_two_clips(&server, project_arg, name);
        let dir = project.path().join("clip-files");
        let out = framecull(&server, "test")
            .args([
                "export",
                "--name",
                "cut",
                "--format",
                "jsonl",
                "--json",
                "--materialize",
            ])
            .arg(&dir)
            .args(["--project", project_arg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // Frames 12 to 24 are a closed GOP inside both clips: copied, not encoded.
        let copied = report["materialized"]["copied_frames"].as_u64().unwrap();
        assert!(copied >= 24, "{report}");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "mp4"))
            .collect();
        files.sort();
        let mut got: Vec<u64> = files.iter().map(|f| common::decoded_frames(f)).collect();
        got.sort();
        assert_eq!(got, vec![12, 26], "{files:?}");
        counts.push((got, copied));
    }
    assert_eq!(counts[0], counts[1]);
}

/// Clip files written to a bucket prefix: each an object holding exactly its clip's frames,
/// the version recording the prefix and the ledger copied beside them; a rerun from another
/// machine (another staging folder) writes nothing, and the loader reads the clip files from
/// the bucket.
#[test]
fn clip_files_go_to_a_bucket_prefix_and_a_rerun_elsewhere_writes_nothing() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let name = "clips/a.mp4";
    gops_of_12(data.path(), name);
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "src", false);
    let project = tempfile::tempdir().unwrap();
    let project_arg = project.path().to_str().unwrap();
    let out = scan(&server, "s3://datasets/src", project.path(), &["--deep"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    add_two_clips(&server, project_arg, name);
    let prefix = "s3://datasets/out/cut";
    let export = |staging: &Path| {
        let out = framecull(&server, "test")
            .env("TMPDIR", staging)
            .args(["export", "--name", "cut", "--format", "jsonl", "--json"])
            .args(["--materialize", prefix, "--project", project_arg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report
    };
    let first_machine = tempfile::tempdir().unwrap();
    let report = export(first_machine.path());
    let done = &report["materialized"];
    assert_eq!(done["written"], 2, "{report}");
    assert_eq!(report["clip_files"]["dir"], prefix, "{report}");
    // Nothing stays in the staging folder but the ledger.
    let left: Vec<_> = walkdir::WalkDir::new(first_machine.path())
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.file_name() != ".framecull-clips.jsonl")
        .map(|e| e.path().to_path_buf())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The objects: each clip's frames, its bytes as the row records them.
    let root = server.root(prefix);
    let remote = root.as_remote().unwrap();
    let rows: Vec<Value> =
        std::fs::read_to_string(project.path().join("manifests/cut/v0001.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let listed = remote.list().unwrap();
    assert_eq!(listed.len(), rows.len(), "{listed:?}");
    let local = tempfile::tempdir().unwrap();
    let mut frames = Vec::new();
    for row in &rows {
        let file = row["clip_file"].as_str().unwrap();
        let bytes = remote.get_all(file).unwrap().expect("the clip's object");
        assert_eq!(
            bytes.len() as u64,
            row["clip_bytes"].as_u64().unwrap(),
            "{row}"
        );
        let path = local.path().join(file);
        std::fs::write(&path, &bytes).unwrap();
        let got = common::decoded_frames(&path);
        assert_eq!(got, row["clip_frames"].as_u64().unwrap(), "{row}");
        assert_eq!(
            got,
            (row["end_frame"].as_i64().unwrap() - row["start_frame"].as_i64().unwrap()) as u64
        );
        frames.push(got);
    }
    frames.sort();
    assert_eq!(frames, vec![12, 26]);
    let ledger = remote.get_all(".framecull-clips.jsonl").unwrap().unwrap();
    assert_eq!(String::from_utf8_lossy(&ledger).lines().count(), 2);
    // A file over one part's size goes up in parts, and comes back whole.
    let big: Vec<u8> = (0..framecull::storage::PART_BYTES + (1 << 20) + 7)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let big_file = local.path().join("big.bin");
    std::fs::write(&big_file, &big).unwrap();
    let sent = remote.put_file("big/big.bin", &big_file).unwrap();
    assert_eq!(sent.size_bytes, big.len() as u64);
    assert!(remote.get_all("big/big.bin").unwrap() == Some(big));

    // Another machine: no staging folder, the bucket's ledger says what is there.
    let second_machine = tempfile::tempdir().unwrap();
    let again = export(second_machine.path());
    assert_eq!(again["materialized"]["written"], 0, "{again}");
    assert_eq!(again["materialized"]["present"], 2, "{again}");
    assert_eq!(again["rows_hash"], report["rows_hash"], "{again}");

    // The loader reads the version's clip files from the bucket.
    let mut cmd = framecull(&server, "test");
    cmd.arg("load-bench")
        .arg(project.path().join("manifests/cut"))
        .args(["--device", "cpu", "--workers", "1", "--batches", "0"])
        .args([
            "--clip-len",
            "4",
            "--size",
            "32x32",
            "--clip-files",
            "--json",
        ]);
    let loaded = report_of(&cmd.output().unwrap(), 0);
    assert_eq!(loaded["clips"], 2, "{loaded}");
    assert_eq!(loaded["skipped_clips"], serde_json::json!({}), "{loaded}");
}

/// A local folder's clips written to a bucket prefix (the store's settings from the
/// environment, the dataset having none): every clip an object holding its frames.
#[test]
fn clip_files_of_a_local_folder_go_to_a_bucket_prefix() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let name = "odd name é.mp4";
    gops_of_12(data.path(), name);
    let server = Server::start(&moto, None);
    // The bucket made by an upload of something else.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("readme.txt"), b"x").unwrap();
    server.upload(other.path(), "out", "keep", false);
    let project = project_with_two_clips(&server, data.path(), name);
    let project_arg = project.path().to_str().unwrap();
    let out = framecull(&server, "test")
        .args(["export", "--name", "cut", "--format", "jsonl", "--json"])
        .args(["--materialize", "s3://out/clips/", "--project", project_arg])
        .env("TMPDIR", project.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["materialized"]["written"], 2, "{report}");
    // The URL as the version records it, without the trailing slash.
    assert_eq!(report["clip_files"]["dir"], "s3://out/clips", "{report}");
    let root = server.root("s3://out/clips");
    let remote = root.as_remote().unwrap();
    let local = tempfile::tempdir().unwrap();
    let mut frames: Vec<u64> = remote
        .list()
        .unwrap()
        .iter()
        .map(|object| {
            let path = local.path().join(&object.rel_path);
            std::fs::write(&path, remote.get_all(&object.rel_path).unwrap().unwrap()).unwrap();
            common::decoded_frames(&path)
        })
        .collect();
    frames.sort();
    assert_eq!(frames, vec![12, 26]);
}

/// A version's WebDataset shards copied to a bucket: the loader reads each shard once, from
/// its first byte to its last, and delivers what it delivers from the shards on disk.
#[test]
fn the_loader_reads_a_versions_shards_from_a_bucket() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    gops_of_12(data.path(), "walk.mp4");
    let server = Server::start(&moto, None);
    let project = project_with_two_clips(&server, data.path(), "walk.mp4");
    let project_arg = project.path().to_str().unwrap();
    let out = common::bin()
        .args(["export", "--name", "cut", "--format", "jsonl,webdataset"])
        .args([
            "--shard-size",
            "1",
            "--project",
            project_arg,
            "--materialize",
        ])
        .arg(project.path().join("clip-files"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let manifests = project.path().join("manifests/cut");
    server.upload(
        &manifests.join("v0001.webdataset"),
        "shards",
        "cut/v1",
        false,
    );
    let load = |root: Option<&str>| {
        let mut cmd = framecull(&server, "test");
        cmd.arg("load-bench")
            .arg(&manifests)
            .args(["--device", "cpu", "--workers", "2", "--batches", "0"])
            .args(["--clip-len", "4", "--size", "32x32", "--shards"])
            .args(["--no-shuffle", "--json"]);
        if let Some(root) = root {
            cmd.args(["--root", root]);
        }
        report_of(&cmd.output().unwrap(), 0)
    };
    let local = load(None);
    let remote = load(Some("s3://shards/cut/v1"));
    assert_eq!(local["clips"], 2, "{local}");
    assert_eq!(remote["clips"], 2, "{remote}");
    assert_eq!(remote["shards_read"], 2, "{remote}");
    assert_eq!(
        remote["shard_bytes_read"], local["shard_bytes_read"],
        "{remote}"
    );
    assert_eq!(remote["checksum"], local["checksum"], "{remote}");
    assert_eq!(remote["frames"], local["frames"], "{remote}");
}
