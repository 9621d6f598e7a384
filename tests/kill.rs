//! A scan killed with SIGKILL part-way loses nothing: the rerun completes the catalog with
//! every file exactly once.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use framecull::media::synth::ImageKind;

fn count_items(db: &std::path::Path) -> i64 {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0))
        .unwrap_or(0)
}

#[test]
fn sigkill_during_scan_then_rerun_holds_every_file_once() {
    const FILES: usize = 6000;
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let seed = common::image(data.path(), "seed.jpg", ImageKind::Jpeg, 32, 24, Some(1));
    for i in 1..FILES {
        let dir = data.path().join(format!("d{:02}", i % 40));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&seed, dir.join(format!("img_{i:05}.jpg"))).unwrap();
    }
    let db = proj.path().join("catalog.db");
    let mut child = common::bin()
        .args([
            "scan",
            data.path().to_str().unwrap(),
            "--project",
            proj.path().to_str().unwrap(),
            "--jobs",
            "1",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut at_kill = 0;
    while start.elapsed() < Duration::from_secs(60) {
        at_kill = count_items(&db);
        if at_kill > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(at_kill > 0, "no batch was committed before the deadline");
    let after_kill = count_items(&db);
    assert!(
        (after_kill as usize) < FILES,
        "the scan finished before it could be killed ({after_kill} rows); make the tree larger"
    );

    let out = common::run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    // Files committed before the kill are not probed again.
    assert!(summary["counts"]["unchanged"].as_i64().unwrap() >= after_kill);

    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let (total, distinct, ok): (i64, i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT path), SUM(status = 'ok') FROM items",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (total, distinct, ok),
        (FILES as i64, FILES as i64, FILES as i64)
    );
}
