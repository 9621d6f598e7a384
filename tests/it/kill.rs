//! A scan killed with SIGKILL part-way loses nothing: the rerun completes the catalog with
//! every file exactly once.

#![allow(clippy::unwrap_used)]

use crate::common;

#[test]
fn sigkill_during_scan_then_rerun_holds_every_file_once() {
    const FILES: usize = 6000;
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    common::copies_of_one_image(data.path(), FILES);
    let db = proj.path().join("catalog.db");
    let after_kill = common::kill_after_first_batch(
        &[
            "scan",
            data.path().to_str().unwrap(),
            "--project",
            proj.path().to_str().unwrap(),
            "--jobs",
            "1",
        ],
        &db,
    );
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
