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

mod access;
mod clips;
mod loader;
mod reads;
mod scanning;
mod stores;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common;
use crate::common::s3::{Server, framecull};

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

/// Files made to break seeking: an open-GOP Matroska with B-frames and an MPEG-TS with one
/// keyframe and a start offset (as in tests/it/exactness/).
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
