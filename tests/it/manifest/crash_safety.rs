//! Crash safety: an export killed, stopped or out of space publishes nothing; damage is refused.

use crate::common;

use std::path::Path;

use framecull::manifest;

use super::project_with_items;

/// `framecull export` of every format, running (stderr piped, stdout ignored).
fn start_export(project: &str, name: &str) -> std::process::Child {
    common::bin()
        .args(["export", "--project", project, "--name", name])
        .args(["--format", "parquet,jsonl,csv"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn no_temporary_files(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "{name} left behind");
    }
}

#[test]
fn a_killed_export_leaves_no_partial_version() {
    let (proj, catalog) = project_with_items(60_000);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let mut killed = 0;
    for delay_ms in [50u64, 150, 300, 600, 1000] {
        let mut child = start_export(project, "k");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
        // Whatever is visible is whole: every listed version reads back completely.
        for meta in manifest::versions(proj.path(), "k").unwrap() {
            let rows = manifest::read_version(proj.path(), "k", meta.version).unwrap();
            assert_eq!(rows.len() as u64, meta.counts.rows);
            assert_eq!(manifest::rows_hash(&rows), meta.rows_hash);
            let dir = manifest::manifest_dir(proj.path(), "k");
            for file in meta.files.values() {
                assert!(dir.join(file).is_file());
            }
        }
    }
    assert!(
        killed > 0,
        "every export finished before the kill; make the catalog larger"
    );
    let out = common::run(&["export", "--project", project, "--name", "k", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(meta["counts"]["rows"], 60_000);
    // No temporary or orphaned files remain next to the versions.
    no_temporary_files(&manifest::manifest_dir(proj.path(), "k"));
}

/// SIGTERM during an export (a pod evicted, a Slurm time limit) stops it cleanly: exit 3, no
/// version published, no temporary file left; the rerun writes the next version whole.
#[test]
fn sigterm_during_export_exits_3_and_publishes_nothing() {
    let (proj, catalog) = project_with_items(60_000);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let dir = manifest::manifest_dir(proj.path(), "t");
    let mut stopped = 0;
    let mut finished = 0;
    for delay_ms in [150u64, 250, 400, 600, 900, 1300] {
        let before = manifest::versions(proj.path(), "t").unwrap().len();
        let mut child = start_export(project, "t");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let sent = std::time::Instant::now();
        if child.try_wait().unwrap().is_none() {
            crate::kill::send("TERM", child.id());
        }
        let out = child.wait_with_output().unwrap();
        assert!(sent.elapsed() < std::time::Duration::from_secs(10));
        let after = manifest::versions(proj.path(), "t").unwrap().len();
        match out.status.code() {
            Some(3) => {
                stopped += 1;
                assert_eq!(after, before, "a stopped export published a version");
                assert!(
                    common::stderr(&out).contains("SIGTERM"),
                    "{}",
                    common::stderr(&out)
                );
            }
            Some(0) => {
                finished += 1;
                assert_eq!(after, before + 1);
            }
            // Sent before the process set its handler (a loaded machine starting it slowly):
            // it ended as SIGTERM ends a process, before it could write anything.
            None if std::os::unix::process::ExitStatusExt::signal(&out.status) == Some(15) => {
                assert_eq!(
                    after, before,
                    "a process killed at its start published a version"
                );
            }
            other => panic!("export ended with {other:?}: {}", common::stderr(&out)),
        }
        no_temporary_files(&dir);
    }
    assert!(
        stopped > 0,
        "every export finished before SIGTERM ({finished}); make the catalog larger"
    );
    let out = common::run(&["export", "--project", project, "--name", "t", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(meta["counts"]["rows"], 60_000);
    assert_eq!(meta["version"], finished + 1);
}

/// An export that runs into a file-size limit (RLIMIT_FSIZE, as a full disk would stop it)
/// fails with one error naming the file, exit 2, not a signal; earlier versions stay whole
/// and the catalog intact; the next export without the limit succeeds.
#[test]
fn an_export_over_the_file_size_limit_fails_cleanly_and_keeps_earlier_versions() {
    let (proj, catalog) = project_with_items(20_000);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let export = |limit: Option<u64>| {
        common::bin_with_file_size_limit(limit)
            .args(["export", "--project", project, "--name", "f"])
            .args(["--format", "parquet,jsonl"])
            .output()
            .expect("prlimit (util-linux)")
    };
    let out = export(None);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let dir = manifest::manifest_dir(proj.path(), "f");
    let jsonl = std::fs::read(dir.join("v0001.jsonl")).unwrap();
    let catalog_len = std::fs::metadata(proj.path().join("catalog.db"))
        .unwrap()
        .len();
    // Room for the catalog (and SQLite's side files), not for another JSON lines file.
    let limit = catalog_len.max(64 << 10) + 4096;
    assert!((jsonl.len() as u64) > limit, "make the catalog larger");

    let out = export(Some(limit));
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("v0002") && err.contains("File too large"),
        "{err}"
    );
    // Nothing of the failed version holds the space.
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.ends_with(".tmp") && !name.starts_with("v0002"),
            "{name}"
        );
    }
    let versions = manifest::versions(proj.path(), "f").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(std::fs::read(dir.join("v0001.jsonl")).unwrap(), jsonl);
    let rows = manifest::read_version(proj.path(), "f", 1).unwrap();
    assert_eq!(manifest::rows_hash(&rows), versions[0].rows_hash);
    let check: String = rusqlite::Connection::open(proj.path().join("catalog.db"))
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");

    let out = export(None);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_eq!(manifest::versions(proj.path(), "f").unwrap().len(), 2);
}

/// A version records a hash of each data file's bytes, and a damaged file is refused with an
/// error that names it before any decoder reads it: a flipped byte, and a file that once
/// made polars' Parquet decoder abort the process (found by fuzzing: an allocation sized by
/// a corrupt field; tests/data/damaged-manifest.parquet).
#[test]
fn a_damaged_manifest_file_is_refused_before_it_is_decoded() {
    let (proj, catalog) = project_with_items(50);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let out = common::run(&[
        "export",
        "--project",
        project,
        "--name",
        "m",
        "--format",
        "parquet,jsonl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let dir = proj.path().join("manifests/m");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("v0001.json")).unwrap()).unwrap();
    assert_eq!(meta["file_hashes"].as_object().unwrap().len(), 2, "{meta}");
    let (_, rows) = manifest::open_path(&dir).unwrap();
    assert_eq!(rows.len(), 50);

    let parquet = dir.join("v0001.parquet");
    let good = std::fs::read(&parquet).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    let fuzzed = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/damaged-manifest.parquet"),
    )
    .unwrap();
    for damaged in [flipped, fuzzed[1..].to_vec()] {
        std::fs::write(&parquet, &damaged).unwrap();
        for opened in [
            manifest::open_path(&dir).map(|_| ()),
            manifest::open_path(&parquet).map(|_| ()),
            manifest::read_version(proj.path(), "m", 1).map(|_| ()),
        ] {
            let err = opened.unwrap_err().to_string();
            assert!(err.contains("v0001.parquet is damaged"), "{err}");
        }
        let config = framecull::loader::LoaderConfig::default();
        let err = framecull::loader::Loader::open(&dir, None, config)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is damaged"), "{err}");
    }
    // The JSON lines file of the same version is intact and still reads.
    let (_, rows) = manifest::open_path(&dir.join("v0001.jsonl")).unwrap();
    assert_eq!(rows.len(), 50);
}
