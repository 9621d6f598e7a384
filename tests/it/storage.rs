//! Datasets in object storage, against a real S3-compatible server on 127.0.0.1 (moto's
//! standalone server, started per test): a scan of `s3://bucket/prefix` gives the rows a local
//! scan of the same files gives (so do its shards, merged), an unchanged rescan only lists, a wrong key is one clear
//! error (exit 2), and a server that stops mid-scan ends it with exit 3 and a rerun finishes.
//! The loader reads a bucket's manifest with the batches of the local copy, frames of objects
//! are the local files' frames, a deleted object is skipped as missing, and a store that does
//! not answer ends a load with exit 3.
//!
//! The server is `$FRAMECULL_MOTO_SERVER`, else `moto_server` on PATH (`pip install
//! 'moto[server]'`); objects are uploaded with boto3 from the same Python. Without it the tests
//! skip, unless FRAMECULL_REQUIRE_S3 is set (CI), where they fail.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::s3::{Server, framecull, moto_server};
use serde_json::Value;

fn scan(server: &Server, url: &str, project: &Path, extra: &[&str]) -> Output {
    framecull(server, "test")
        .args(["scan", url, "--project", project.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

/// `list` rows without the columns that differ by nature between a folder and a bucket (the
/// fingerprint: file bytes vs size and ETag), with duplicate groups named by their first path.
fn comparable_rows(project: &Path) -> BTreeMap<String, Value> {
    let mut rows = common::list_jsonl(project);
    common::groups_by_first_path(&mut rows);
    for row in rows.values_mut() {
        if let Some(row) = row.as_object_mut() {
            row.remove("fingerprint");
        }
    }
    rows
}

fn local_deep_rows(dir: &Path) -> BTreeMap<String, Value> {
    local_rows(dir, "--deep", &[0, 1])
}

/// The comparable rows of a local scan of `dir` at `level` (`--deep`, `--triage`), after
/// checking it exits with one of `codes`.
fn local_rows(dir: &Path, level: &str, codes: &[i32]) -> BTreeMap<String, Value> {
    let project = tempfile::tempdir().unwrap();
    let out = common::run(&[
        "scan",
        dir.to_str().unwrap(),
        level,
        "--project",
        project.path().to_str().unwrap(),
    ]);
    let code = out.status.code().unwrap_or(-1);
    assert!(codes.contains(&code), "{code}: {}", common::stderr(&out));
    comparable_rows(project.path())
}

/// Rows that differ, as `path: column local -> remote` lines.
fn differences(local: &BTreeMap<String, Value>, remote: &BTreeMap<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, row) in local {
        let Some(other) = remote.get(path) else {
            out.push(format!("{path}: not in the remote scan"));
            continue;
        };
        for (column, value) in row.as_object().unwrap() {
            if other.get(column) != Some(value) {
                out.push(format!(
                    "{path}: {column} {value} -> {}",
                    other.get(column).unwrap_or(&Value::Null)
                ));
            }
        }
    }
    out.extend(
        remote
            .keys()
            .filter(|p| !local.contains_key(*p))
            .map(|p| format!("{p}: only in the remote scan")),
    );
    out
}

/// `rows` with the FFmpeg message that details a decode error left out of flag reasons: in a
/// bucket, the packets of an MP4 are read by its index, their bytes fetched only where they
/// are decoded, so FFmpeg's parser, which on a local file logs the first fault it meets in a
/// damaged packet, has no bytes to parse (the counts and codes stay, and are compared).
fn without_error_details(mut rows: BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    for row in rows.values_mut() {
        let Some(flags) = row["flags"].as_array_mut() else {
            continue;
        };
        for flag in flags {
            if let Some(reason) = flag["reason"].as_str()
                && let Some(at) = reason.find("; first: ")
            {
                flag["reason"] = Value::String(reason[..at].to_string());
            }
        }
    }
    rows
}

/// A triage of an MP4 in a bucket fetches its index and the packets it decodes, not the
/// file: at most 30% of the bytes of a 720p video with sound (its index first or last), with
/// the rows a triage of the local folder gives.
#[test]
fn a_triage_of_an_mp4_in_a_bucket_fetches_its_index_and_the_packets_it_decodes() {
    let Some(moto) = moto_server() else { return };
    let server = Server::start(&moto, None);
    for (name, index_first) in [("index_first", true), ("index_last", false)] {
        let data = tempfile::tempdir().unwrap();
        let path = data.path().join("720p.mp4");
        let mut args = vec![
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1280x720:rate=25:duration=16",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=16",
            "-vf",
            "noise=alls=5:allf=t",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-g",
            "50",
            "-c:a",
            "aac",
        ];
        if index_first {
            args.extend(["-movflags", "+faststart"]);
        }
        args.push(path.to_str().unwrap());
        common::ffmpeg(&args);
        let size = std::fs::metadata(&path).unwrap().len();
        server.upload(data.path(), "datasets", name, false);
        let project = tempfile::tempdir().unwrap();
        let url = format!("s3://datasets/{name}");
        let out = scan(&server, &url, project.path(), &["--triage", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let requests = requests_of(&out);
        let read = requests["bytes_read"].as_u64().unwrap();
        eprintln!(
            "{name}: {read} of {size} bytes ({:.1}%) in {} requests",
            100.0 * read as f64 / size as f64,
            requests["get"]
        );
        assert!(read * 10 <= size * 3, "{name}: {read} of {size} bytes read");
        let remote = comparable_rows(project.path());
        let local = local_rows(data.path(), "--triage", &[0]);
        assert_eq!(differences(&local, &remote), Vec::<String>::new());
        assert_eq!(remote["720p.mp4"]["analysis_level"], "triage");
        assert!(remote["720p.mp4"]["motion_mean"].as_f64().unwrap() > 0.0);
    }
}

/// An unchanged rescan (exit 1: the dataset has broken files): listing requests only.
fn assert_only_listed(out: &Output) {
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(out));
    let requests = requests_of(out);
    assert!(requests["list"].as_u64().unwrap() >= 1, "{requests}");
    for kind in ["get", "head", "other", "bytes_read"] {
        assert_eq!(
            requests[kind], 0,
            "an unchanged rescan made {kind}: {requests}"
        );
    }
}

fn requests_of(out: &Output) -> Value {
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("scan --json: {e}: {}", common::stderr(out)));
    summary["requests"].clone()
}

#[test]
fn generated_media_in_a_bucket_scan_like_the_local_folder_and_rescans_only_list() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "mixed", false);

    let project = tempfile::tempdir().unwrap();
    let out = scan(&server, "s3://datasets/mixed", project.path(), &["--deep"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let stderr = common::stderr(&out);
    assert!(
        stderr.contains("s3://datasets/mixed: ") && stderr.contains("MiB read"),
        "{stderr}"
    );
    assert!(!stderr.contains("test-secret"), "{stderr}");
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(data.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
    // Paths are keys relative to the root; the root URL is what the project records.
    assert!(remote.contains_key("clips/h264.mp4"));
    let catalog = std::fs::read(project.path().join("catalog.db")).unwrap();
    let text = String::from_utf8_lossy(&catalog);
    assert!(text.contains("s3://datasets/mixed"));
    assert!(!text.contains("test-secret"));

    let out = scan(&server, "s3://datasets/mixed", project.path(), &["--json"]);
    assert_only_listed(&out);

    // The same URL in two shards (as a cluster's tasks scan it), merged: the same rows.
    let work = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| work.path().join(format!("shard-{i}")))
        .collect();
    for (i, shard) in shards.iter().enumerate() {
        let out = scan(
            &server,
            "s3://datasets/mixed",
            shard,
            &["--deep", "--shard", &format!("{i}/2")],
        );
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            common::stderr(&out)
        );
    }
    let merged = work.path().join("merged");
    let out = common::bin()
        .arg("merge")
        .args(&shards)
        .arg("--project")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        common::stderr(&out)
    );
    let sharded = comparable_rows(&merged);
    assert!(comparable_rows(&shards[0]).len() < sharded.len());
    assert_eq!(differences(&remote, &sharded), Vec::<String>::new());
}

/// A triage of a bucket gives the rows a triage of the local folder gives, damaged videos
/// (an MP4 cut short, bits flipped in a keyframe) flagged alike.
#[test]
fn a_triage_of_a_bucket_gives_the_rows_of_the_local_folder() {
    use framecull::media::synth::damage::{self, Damage};
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let mut spec = framecull::media::synth::VideoSpec::new("libx264", 320, 180, 25, 250);
    spec.faststart = true;
    spec.noise = 8;
    spec.gop = 50;
    let base = common::video(data.path(), "damaged/base.mp4", &spec);
    let gops = damage::gops(&base).unwrap().len();
    let keys = data.path().join("damaged/keyframe_flips.mp4");
    damage::write_damaged(&base, &keys, Damage::KeyFlips, &damage::pick(gops, 1, 1)).unwrap();
    let cut = data.path().join("damaged/cut.mp4");
    damage::write_damaged(&base, &cut, Damage::Truncated, &[gops / 2]).unwrap();
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "mixed", false);

    let project = tempfile::tempdir().unwrap();
    let out = scan(
        &server,
        "s3://datasets/mixed",
        project.path(),
        &["--triage"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let remote = without_error_details(comparable_rows(project.path()));
    let local = without_error_details(local_rows(data.path(), "--triage", &[1]));
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
    assert_eq!(remote["damaged/base.mp4"]["analysis_level"], "triage");
    let codes = |path: &str| common::flag_codes(&remote[path]);
    assert!(
        codes("damaged/keyframe_flips.mp4").contains(&"decode_errors".to_string()),
        "{:?}",
        codes("damaged/keyframe_flips.mp4")
    );
    assert!(codes("damaged/cut.mp4").contains(&"truncated".to_string()));
    assert!(!codes("damaged/base.mp4").contains(&"decode_errors".to_string()));
}

#[test]
fn corpus_in_a_bucket_deep_scans_like_the_local_folder() {
    let Some(media) = common::corpus_dir() else {
        return;
    };
    let Some(moto) = moto_server() else { return };
    // FFmpeg picks its demuxer by the file name for a path (`image2` for .jpg) and by content
    // for a stream: this damaged JPEG reads as a picture only through the stream (and then
    // moves the image statistics). The corpus without it, as links, is scanned both ways.
    let known = Path::new("broken/fate_embedded_small.jpg");
    let linked = tempfile::tempdir().unwrap();
    for entry in walkdir::WalkDir::new(&media).min_depth(1) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(&media).unwrap();
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(linked.path().join(rel)).unwrap();
        } else if rel != known {
            std::os::unix::fs::symlink(entry.path(), linked.path().join(rel)).unwrap();
        }
    }
    let server = Server::start(&moto, None);
    server.upload(linked.path(), "corpus", "media", false);
    let project = tempfile::tempdir().unwrap();
    let out = scan(
        &server,
        "s3://corpus/media",
        project.path(),
        &["--deep", "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    eprintln!("deep scan of the corpus: {}", requests_of(&out));
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(linked.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());

    let out = scan(&server, "s3://corpus/media", project.path(), &["--json"]);
    let requests = requests_of(&out);
    assert_eq!(requests["get"], 0, "{requests}");
    assert_eq!(requests["head"], 0, "{requests}");
}

/// A folder with one small picture, `a.png`.
fn one_picture() -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    let png = framecull::media::synth::ImageKind::Png;
    common::image(data.path(), "a.png", png, 32, 24, None);
    data
}

#[test]
fn a_wrong_key_is_one_clear_error() {
    let Some(moto) = moto_server() else { return };
    let data = one_picture();
    let server = Server::start(&moto, None);
    server.upload(data.path(), "locked", "images", true);
    let project = tempfile::tempdir().unwrap();
    let out = framecull(&server, "AKIAWRONGKEY")
        .args(["scan", "s3://locked/images", "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_refused(
        &out,
        "s3://locked/images",
        "AWS_ACCESS_KEY_ID",
        "test-secret",
    );
}

/// Settings kept where `aws configure` writes them (a profile's key, region and endpoint in
/// `~/.aws`) reach the server as the variables do: a profile scans the server its endpoint
/// names, a profile's wrong key is refused by a server that checks keys, and a profile that
/// does not exist is one clear error.
#[test]
fn a_profile_in_the_aws_config_files_is_read_like_the_variables() {
    let Some(moto) = moto_server() else { return };
    let data = one_picture();
    // One server open to any key, one that checks keys (moto knows none of these).
    let open = Server::start(&moto, None);
    open.upload(data.path(), "locked", "images", false);
    let checking = Server::start(&moto, None);
    checking.upload(data.path(), "locked", "images", true);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        "[train]\naws_access_key_id = test\naws_secret_access_key = test-secret\n\n\
         [wrong]\naws_access_key_id = AKIAWRONGKEY\naws_secret_access_key = profile-secret\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join(".aws/config"),
        format!(
            "[profile train]\nregion = us-east-1\nendpoint_url = {}\n\n\
             [profile wrong]\nregion = us-east-1\nendpoint_url = {}\n",
            open.endpoint(),
            checking.endpoint()
        ),
    )
    .unwrap();
    let scan = |profile: &str| {
        let project = tempfile::tempdir().unwrap();
        let mut cmd = common::bin();
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("AWS_") {
                cmd.env_remove(name);
            }
        }
        let out = cmd
            .env("HOME", home.path())
            .env("AWS_PROFILE", profile)
            .args(["scan", "s3://locked/images", "--project"])
            .arg(project.path())
            .output()
            .unwrap();
        (out, project)
    };
    let (out, project) = scan("train");
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(common::list_jsonl(project.path()).contains_key("a.png"));
    let (out, _) = scan("wrong");
    assert_refused(
        &out,
        "s3://locked/images",
        "AWS_ACCESS_KEY_ID",
        "profile-secret",
    );
    let (out, _) = scan("nope");
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("AWS_PROFILE=nope: no such profile in "),
        "{stderr}"
    );
}

/// A refused scan of `url`: exit 2 and one line that names the URL and the setting to check
/// (`hint`), without the `secret`.
fn assert_refused(out: &Output, url: &str, hint: &str, secret: &str) {
    let stderr = common::stderr(out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with(&format!("error: access to {url} was refused: ")),
        "{stderr}"
    );
    assert!(lines[0].contains(hint), "{stderr}");
    assert!(!stderr.contains(secret), "{stderr}");
}

#[test]
fn a_url_without_a_project_is_refused() {
    let out = common::run(&["scan", "s3://bucket/prefix"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        common::stderr(&out).trim(),
        "error: s3://bucket/prefix is not a folder: a dataset URL needs --project DIR, the \
         local folder its catalog is kept in"
    );
    let out = common::run(&["scan", "ftp://host/prefix", "--project", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("ftp:// is not supported (s3://, gs://, az:// and https://"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn a_server_stopped_mid_scan_exits_3_and_a_rerun_finishes() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    for i in 0..6 {
        common::video(
            data.path(),
            &format!("more/v{i}.mp4"),
            &framecull::media::synth::VideoSpec::new("libx264", 320, 240, 25, 50),
        );
    }
    let mut server = Server::start(&moto, None);
    server.upload(data.path(), "flaky", "set", false);
    let project = tempfile::tempdir().unwrap();
    let db = project.path().join("catalog.db");
    let child = framecull(&server, "test")
        .args([
            "scan",
            "s3://flaky/set",
            "--deep",
            "--jobs",
            "1",
            "--project",
        ])
        .arg(project.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop the server once the scan has stored something.
    let deadline = Instant::now() + Duration::from_secs(60);
    while common::count_items(&db) == 0 {
        assert!(Instant::now() < deadline, "the scan stored nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
    let out = child.wait_with_output().unwrap();
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("cannot reach the object store for s3://flaky/set"),
        "{stderr}"
    );

    // The same objects again (moto keeps nothing): the rerun finishes the scan.
    let server = Server::start(&moto, Some(server.port));
    server.upload(data.path(), "flaky", "set", false);
    let out = scan(&server, "s3://flaky/set", project.path(), &["--deep"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(data.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
}

/// Files made to break seeking: an open-GOP Matroska with B-frames and an MPEG-TS with one
/// keyframe and a start offset (as in tests/it/exactness.rs).
fn hard_to_seek(dir: &Path) -> Vec<&'static str> {
    std::fs::create_dir_all(dir.join("hard")).unwrap();
    let cases: [(&str, &[&str]); 2] = [
        (
            "hard/open_gop.mkv",
            &[
                "-c:v",
                "libx264",
                "-pix_fmt",
                "yuv420p",
                "-x264-params",
                "open-gop=1:keyint=24:min-keyint=24:scenecut=0:bframes=3",
            ],
        ),
        (
            "hard/one_keyframe.ts",
            &[
                "-c:v",
                "libx264",
                "-g",
                "1000",
                "-bf",
                "2",
                "-output_ts_offset",
                "10",
            ],
        ),
    ];
    for (name, args) in cases {
        let path = dir.join(name);
        let mut all = vec![
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=160x96:rate=25",
            "-frames:v",
            "90",
        ];
        all.extend_from_slice(args);
        all.push(path.to_str().unwrap());
        common::ffmpeg(&all);
    }
    cases.iter().map(|(name, _)| *name).collect()
}

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

/// `export --name train` of `project` with `cmd` (framecull with some store's settings).
fn export_with(mut cmd: std::process::Command, project: &Path) -> PathBuf {
    let out = cmd
        .args([
            "export",
            "--name",
            "train",
            "--format",
            "jsonl",
            "--project",
        ])
        .arg(project)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "export: {}",
        common::stderr(&out)
    );
    project.join("manifests/train")
}

/// `load-bench --json` of a manifest (its own root unless `root` is given).
fn load_bench(server: &Server, manifest: &Path, root: Option<&str>) -> Output {
    load_bench_with(framecull(server, "test"), manifest, root)
}

/// As [`load_bench`], with `cmd` (framecull with some store's settings).
fn load_bench_with(mut cmd: std::process::Command, manifest: &Path, root: Option<&str>) -> Output {
    cmd.arg("load-bench")
        .arg(manifest)
        .args(["--device", "cpu", "--workers", "2", "--batches", "0"])
        .args([
            "--clip-len",
            "4",
            "--stride",
            "3",
            "--size",
            "32x32",
            "--json",
        ]);
    if let Some(root) = root {
        // Another copy of the files: their fingerprints are not the manifest's.
        cmd.args(["--root", root, "--no-verify"]);
    }
    cmd.output().unwrap()
}

fn load_report(server: &Server, manifest: &Path, root: Option<&str>) -> Value {
    load_report_exiting(server, manifest, root, 0)
}

/// As [`load_report`], for a run that ends with exit status `code` (1: clips were skipped).
fn load_report_exiting(server: &Server, manifest: &Path, root: Option<&str>, code: i32) -> Value {
    report_of(&load_bench(server, manifest, root), code)
}

/// A `load-bench --json` report, the run having ended with exit status `code`.
fn report_of(out: &Output, code: i32) -> Value {
    assert_eq!(
        out.status.code(),
        Some(code),
        "load-bench: {}{}",
        common::stderr(out),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
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

#[test]
fn frames_read_from_an_object_are_the_local_files_frames() {
    use framecull::media::reader::{ReadTimes, VideoReader};
    use framecull::media::source::Source;
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let names = hard_to_seek(data.path());
    let server = Server::start(&moto, None);
    server.upload(data.path(), "exact", "v", false);
    let root = server.root("s3://exact/v");
    let mut rng = framecull::loader::plan::Rng::new(&[11]);
    for name in names {
        let path = data.path().join(name);
        let mut local = VideoReader::open(&path, 1).unwrap();
        let n = local.frames().len();
        let mut sequential = vec![None; n];
        local
            .read(
                &(0..n).collect::<Vec<_>>(),
                None,
                &mut ReadTimes::default(),
                &mut |i, p| sequential[i] = Some(p),
            )
            .unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let object = Source::in_root(&root, name, size);
        let mut remote = VideoReader::open_source(&object, 1).unwrap();
        assert_eq!(remote.frame_pts(), local.frame_pts(), "{name}");
        // Sampled windows, in a random order: each a seek (or a decode on) in the object.
        for _ in 0..12 {
            let start = rng.below(n as u64) as usize;
            let wanted: Vec<usize> = (start..n).step_by(3).take(4).collect();
            let mut got = Vec::new();
            remote
                .read(&wanted, None, &mut ReadTimes::default(), &mut |i, p| {
                    got.push((i, p))
                })
                .unwrap_or_else(|e| panic!("{name}: frames {wanted:?}: {e}"));
            assert_eq!(got.len(), wanted.len(), "{name}");
            for (i, picture) in got {
                let want = sequential[wanted[i]].as_ref().unwrap();
                assert!(
                    picture == *want,
                    "{name}: frame {} read from the object is not the local file's",
                    wanted[i]
                );
            }
        }
    }
}

/// The window's pictures of objects (thumbnails and the player's frames, decoded in a
/// `framecull worker pictures` process and handed over in shared memory) are those of the
/// local files: an open-GOP MKV, an MPEG-TS with one keyframe and an offset, and an AVI
/// (MPEG-4 Part 2, no per-frame timestamps) under a name with a space, an accent and a hash.
#[test]
fn the_windows_pictures_of_objects_are_the_local_files_pictures() {
    use framecull::media::pictures::{FirstPictures, Pictures};
    use framecull::media::source::Source;
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let mut names = hard_to_seek(data.path());
    let odd = "hard/odd name \u{e9} #1.avi";
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=176x144:rate=25",
        "-frames:v",
        "50",
        "-c:v",
        "mpeg4",
        "-g",
        "12",
        data.path().join(odd).to_str().unwrap(),
    ]);
    names.push(odd);
    let server = Server::start(&moto, None);
    server.upload(data.path(), "pictures", "w", false);
    let root = server.root("s3://pictures/w");
    let mut first = FirstPictures::new();
    for name in names {
        let path = data.path().join(name);
        let size = std::fs::metadata(&path).unwrap().len();
        let object = Source::in_root(&root, name, size);
        let local = Source::File(path.clone());
        // Thumbnails: the first picture, fitted in 160 px.
        let budget = Duration::from_secs(20);
        let thumb = first.first(&object.open(), 160, budget).unwrap();
        let here =
            framecull::media::decode::first_picture(&local.open(), 160, Instant::now() + budget)
                .unwrap();
        assert!(
            thumb == here,
            "{name}: the object's thumbnail is not the file's"
        );
        // The player: frames across the video, upright and turned, from a worker.
        let mut remote = Pictures::open(&object, 1).unwrap();
        assert!(remote.in_worker(), "{name}");
        let mut mine = Pictures::open_here(&local, 1).unwrap();
        assert_eq!(remote.timeline().pts, mine.timeline().pts, "{name}");
        let n = mine.timeline().pts.len();
        assert!(n >= 50, "{name}: {n} frames");
        for (index, turns) in [(0, 0), (n / 2, 1), (n - 1, 0), (7, 2), (n / 3, 3)] {
            let (w, h, rgb) = remote.picture(index, turns, (320, 240), None).unwrap();
            let (w, h, rgb) = (w, h, rgb.to_vec());
            let want = mine.picture(index, turns, (320, 240), None).unwrap();
            assert!(
                (w, h) == (want.0, want.1) && rgb == want.2,
                "{name}: frame {index} turned {turns} differs"
            );
        }
    }
}

/// A copy of `data` at `url`, read with the settings of `framecull()`: a deep scan gives the
/// local folder's rows and records the URL (and never `secret`), an unchanged rescan only
/// lists, and its manifest read from the store gives the batches of the same manifest read
/// from the local folder. The project and the manifest.
fn assert_like_the_local_folder(
    framecull: &dyn Fn() -> std::process::Command,
    url: &str,
    data: &Path,
    secret: &str,
) -> (tempfile::TempDir, PathBuf) {
    let project = tempfile::tempdir().unwrap();
    let scan = |extra: &[&str]| {
        framecull()
            .args(["scan", url, "--project"])
            .arg(project.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let out = scan(&["--deep"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains(&format!("{url}: ")),
        "{}",
        common::stderr(&out)
    );
    let remote = comparable_rows(project.path());
    assert!(remote.contains_key("clips/h264.mp4"));
    assert_eq!(
        differences(&local_deep_rows(data), &remote),
        Vec::<String>::new()
    );
    let catalog = std::fs::read(project.path().join("catalog.db")).unwrap();
    let text = String::from_utf8_lossy(&catalog);
    assert!(text.contains(url));
    assert!(!text.contains(secret));

    let out = scan(&["--json"]);
    assert_only_listed(&out);

    let manifest = export_with(framecull(), project.path());
    let (meta, rows) = framecull::manifest::open_path(&manifest).unwrap();
    assert_eq!(meta.dataset_root, url);
    assert!(!rows.is_empty());
    let from_store = report_of(&load_bench_with(framecull(), &manifest, None), 0);
    let from_folder = report_of(
        &load_bench_with(framecull(), &manifest, Some(data.to_str().unwrap())),
        0,
    );
    assert!(from_store["frames"].as_u64().unwrap() > 0);
    assert_eq!(from_store["checksum"], from_folder["checksum"]);
    assert_eq!(from_store["frames"], from_folder["frames"]);
    (project, manifest)
}

/// The same dataset in an Azure container (Azurite, Microsoft's emulator) behaves as the local
/// folder (above), and a wrong key is one clear error (exit 2).
#[test]
fn a_dataset_in_an_azure_container_scans_and_loads_like_the_local_folder() {
    use common::azurite::{Azurite, KEY, azurite};
    let Some(binary) = azurite() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let azure = Azurite::start(&binary);
    azure.upload(data.path(), "datasets", "mixed");
    assert_like_the_local_folder(
        &|| azure.framecull(KEY),
        "az://datasets/mixed",
        data.path(),
        KEY,
    );

    let other = tempfile::tempdir().unwrap();
    let wrong = KEY.replace('E', "F");
    let out = azure
        .framecull(&wrong)
        .args(["scan", "az://datasets/mixed", "--project"])
        .arg(other.path())
        .output()
        .unwrap();
    assert_refused(
        &out,
        "az://datasets/mixed",
        "AZURE_STORAGE_ACCOUNT_KEY",
        &wrong,
    );
}

/// The same dataset in a Google Cloud Storage bucket (`gs://`, through GCS's XML API, which
/// moto answers) behaves as the local folder; the manifest also loads over plain HTTP from the
/// objects' URLs (`--root http://...`), as a training machine with only a web address would.
#[test]
fn a_dataset_in_a_gcs_bucket_scans_and_loads_like_the_local_folder() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let server = Server::start(&moto, None);
    server.upload_public(data.path(), "datasets", "mixed");
    let settings = tempfile::tempdir().unwrap();
    let gcs = || common::s3::framecull_gcs(&server, settings.path());
    let (_project, manifest) =
        assert_like_the_local_folder(&gcs, "gs://datasets/mixed", data.path(), "private_key");

    let over_http = format!("{}/datasets/mixed", server.endpoint());
    let from_http = report_of(&load_bench_with(gcs(), &manifest, Some(&over_http)), 0);
    let from_folder = report_of(
        &load_bench_with(gcs(), &manifest, Some(data.path().to_str().unwrap())),
        0,
    );
    assert_eq!(from_http["checksum"], from_folder["checksum"]);
    assert_eq!(from_http["frames"], from_folder["frames"]);
}

/// A folder served by a web server with WebDAV (`http://host/path`, listed with PROPFIND)
/// behaves as the local folder; a path the server does not have lists nothing, which the scan
/// says.
#[test]
fn a_folder_on_a_webdav_server_scans_and_loads_like_the_local_folder() {
    use common::webdav::{WebDav, wsgidav};
    let Some(binary) = wsgidav() else { return };
    let served = tempfile::tempdir().unwrap();
    let data = served.path().join("mixed");
    std::fs::create_dir(&data).unwrap();
    common::mixed_dataset(&data);
    let server = WebDav::start(&binary, served.path());
    let url = server.url("mixed");
    assert_like_the_local_folder(&common::bin, &url, &data, "secret");

    let project = tempfile::tempdir().unwrap();
    let missing = server.url("nothing/here");
    let out = common::bin()
        .args(["scan", &missing, "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let stderr = common::stderr(&out);
    assert!(
        stderr.contains(&format!("no objects under {missing}: check the")),
        "{stderr}"
    );
}

/// A decoder's reads (`CachedObject::streaming`) have the next windows requested while the
/// bytes before them are read, and fetch each byte once; a probe's reads (`CachedObject::new`) fetch
/// only what is read. Both read the object's bytes.
#[test]
fn a_streaming_read_requests_the_next_range_ahead_and_reads_each_byte_once() {
    use framecull::storage::{BLOCK_BYTES, CachedObject, Object};
    use std::io::Read;
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    // 5 MiB that do not repeat: a misplaced range would not compare equal.
    let bytes: Vec<u8> = (0u32..5 * 1024 * 1024 / 4)
        .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
        .collect();
    std::fs::write(data.path().join("big.bin"), &bytes).unwrap();
    let server = Server::start(&moto, None);
    server.upload(data.path(), "ahead", "set", false);

    for streaming in [false, true] {
        let root = server.root("s3://ahead/set");
        let remote = root.as_remote().unwrap().clone();
        let object = Object {
            remote: remote.clone(),
            rel_path: "big.bin".into(),
            size_bytes: bytes.len() as u64,
        };
        let cached = if streaming {
            CachedObject::streaming(object)
        } else {
            CachedObject::new(object)
        };
        let mut reader = cached.reader();
        // One block, then two: the second read is sequential.
        let mut head = vec![0u8; 3 * BLOCK_BYTES as usize];
        reader.read_exact(&mut head).unwrap();
        assert_eq!(head, bytes[..head.len()]);
        let deadline = Instant::now() + Duration::from_secs(10);
        // A streaming read has the next two windows on their way.
        let expected_gets = if streaming { 4 } else { 2 };
        while remote.counts().get < expected_gets && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Give a wrong extra request the time to show.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            remote.counts().get,
            expected_gets,
            "streaming {streaming}: {:?}",
            remote.counts()
        );
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        head.extend(rest);
        assert!(head == bytes, "streaming {streaming}: other bytes");
        assert_eq!(
            remote.counts().bytes_read,
            bytes.len() as u64,
            "streaming {streaming}: {:?}",
            remote.counts()
        );
    }
}

/// A transport stream's probe reads its head and its end, not seconds of packets: it analyses
/// a quarter second of them, and again with FFmpeg's defaults where a stream is then left
/// without its frame size (a recording cut in the middle of a GOP). The object's probe is the
/// local file's.
#[test]
fn probing_a_transport_stream_reads_a_small_part_of_it() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let whole = data.path().join("whole.ts");
    // 8 s of noisy 640x360 H.264 at 20 Mbit/s with AAC: about 21 MB, a keyframe every 3 s.
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=640x360:rate=30,noise=alls=30:allf=t",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000",
        "-t",
        "8",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-b:v",
        "20M",
        "-maxrate",
        "20M",
        "-bufsize",
        "10M",
        "-g",
        "90",
        "-c:a",
        "aac",
        "-f",
        "mpegts",
        whole.to_str().unwrap(),
    ]);
    // The same from a packet boundary 5/8 in (5 s): its first keyframe, and the first frame
    // size, are a second in, past the probe's short analysis and within FFmpeg's defaults.
    let bytes = std::fs::read(&whole).unwrap();
    let from = bytes.len() * 5 / 8 / 188 * 188;
    std::fs::write(data.path().join("cut.ts"), &bytes[from..]).unwrap();

    let server = Server::start(&moto, None);
    server.upload(data.path(), "streams", "ts", false);
    let root = server.root("s3://streams/ts");
    let remote = root.as_remote().unwrap();
    let budget = Duration::from_secs(30);
    let mut read_share = Vec::new();
    for name in ["whole.ts", "cut.ts"] {
        let size = std::fs::metadata(data.path().join(name)).unwrap().len();
        let local = framecull::media::probe_file(&data.path().join(name), budget);
        assert_eq!(
            local.status,
            framecull::model::ItemStatus::Ok,
            "{name}: {local:?}"
        );
        let info = &local.info;
        assert_eq!(
            (info.width, info.height, info.pix_fmt.as_deref(), info.fps),
            (Some(640), Some(360), Some("yuv420p"), Some(30.0)),
            "{name}: {info:?}"
        );
        assert_eq!(info.has_audio, Some(true), "{name}");

        let before = remote.counts();
        let source = framecull::media::source::Source::in_root(&root, name, size);
        let probed = framecull::media::probe(&source.open(), budget);
        let read = remote.counts().bytes_read - before.bytes_read;
        assert_eq!(probed, local, "{name}");
        read_share.push((name, read as f64 / size as f64));
    }
    // The whole file: its first block, a window or two, the end for the duration, 10 % (with
    // FFmpeg's defaults 20 %). The cut one is analysed twice (its video has no frame size in
    // the first quarter second), about half of it (53 % with the defaults alone).
    assert!(read_share[0].1 < 0.15, "{read_share:?}");
    assert!(read_share[1].1 < 0.6, "{read_share:?}");
}

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

/// Clip files of a bucket's video (an odd name: a space and an accent) are written from
/// ranged reads of the object: each holds its clip's frames, as many as from the local file.
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

/// Interlaced and letterboxed videos read from a bucket, one of them an MPEG-2 elementary
/// stream (no container, no timestamps) under a name with a space: the deep pass finds the
/// same field order, content crop and flags as in a folder.
#[test]
fn interlacing_and_bars_are_found_in_a_bucket_as_in_a_folder() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    let pal = "testsrc2=size=720x576:rate=50,tinterlace=mode=interleave_top,setfield=tff";
    let mpeg2 = [
        "-c:v",
        "mpeg2video",
        "-flags",
        "+ildct+ilme",
        "-top",
        "1",
        "-b:v",
        "8M",
    ];
    for (name, graph, format) in [
        ("interlaced.mpg", pal, "mpeg"),
        ("interlaced es.m2v", pal, "mpeg2video"),
        (
            "letterbox.mpg",
            "testsrc2=size=640x360:rate=25,pad=640:480:0:60:black",
            "mpeg",
        ),
    ] {
        let out = data.path().join(name);
        let mut args = vec!["-f", "lavfi", "-i", graph, "-t", "2"];
        args.extend(mpeg2);
        args.extend(["-pix_fmt", "yuv420p", "-f", format, out.to_str().unwrap()]);
        common::ffmpeg(&args);
    }
    let server = Server::start(&moto, None);
    server.upload(data.path(), "datasets", "fields", false);
    let project = tempfile::tempdir().unwrap();
    let out = scan(&server, "s3://datasets/fields", project.path(), &["--deep"]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(data.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
    for name in ["interlaced.mpg", "interlaced es.m2v"] {
        assert_eq!(remote[name]["field_order"], "tff", "{name}");
        assert!(common::flag_codes(&remote[name]).contains(&"interlaced".into()));
    }
    assert_eq!(remote["letterbox.mpg"]["field_order"], "progressive");
    assert!(common::flag_codes(&remote["letterbox.mpg"]).contains(&"letterbox".into()));
    assert!(!remote["letterbox.mpg"]["content_crop"].is_null());
}
