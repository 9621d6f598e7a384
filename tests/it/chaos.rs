//! Chaos: a deep scan of the media corpus killed with SIGKILL at 20 random moments, then run
//! to the end, holds a sound catalog with every file once and the same results as a scan that
//! was never interrupted.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// `list --format jsonl` rows by path, duplicate groups named by their first path.
fn rows_by_path(project: &Path) -> BTreeMap<String, serde_json::Value> {
    let mut rows = common::list_jsonl(project);
    common::groups_by_first_path(&mut rows);
    rows
}

fn scan(root: &Path, project: &Path) -> std::process::Command {
    let mut c = common::bin();
    c.args(["scan", root.to_str().unwrap(), "--deep", "--jobs", "2"])
        .arg("--project")
        .arg(project)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    c
}

#[test]
fn a_deep_scan_killed_twenty_times_ends_as_an_uninterrupted_one() {
    let Some(media) = common::corpus_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (reference, chaos) = (dir.path().join("reference"), dir.path().join("chaos"));

    let started = Instant::now();
    let status = scan(&media, &reference).status().unwrap();
    let full = started.elapsed();
    assert!(status.code().unwrap() <= 1, "{status}");

    // Kill moments from a fixed seed: each run gets 1-7% of an uninterrupted run's time
    // before its SIGKILL, so the twenty land across the whole job (a killed run resumes
    // where the last one stopped).
    let mut seed: u64 = 0x5eed_cafe;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut killed_running = 0;
    for _ in 0..20 {
        let mut child = scan(&media, &chaos).spawn().unwrap();
        let kill_at = Instant::now() + full.mul_f64(0.01 + 0.06 * next());
        while Instant::now() < kill_at && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(10));
        }
        if child.try_wait().unwrap().is_none() {
            killed_running += 1;
        }
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
    }
    assert!(
        killed_running >= 15,
        "only {killed_running} of 20 kills hit a running scan"
    );
    let status = scan(&media, &chaos).status().unwrap();
    assert!(status.code().unwrap() <= 1, "{status}");

    let db = rusqlite::Connection::open(chaos.join("catalog.db")).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let (items, paths): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT path) FROM items",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(items, paths, "a file recorded twice");

    let (want, got) = (rows_by_path(&reference), rows_by_path(&chaos));
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>()
    );
    for (path, row) in &want {
        assert_eq!(row, &got[path], "{path}");
    }
}
