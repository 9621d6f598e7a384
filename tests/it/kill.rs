//! A scan killed with SIGKILL part-way loses nothing: the rerun completes the catalog with
//! every file exactly once. A scan stopped with SIGTERM or SIGHUP (Slurm, Kubernetes, Ray)
//! stops cleanly, exits 3, and the rerun ends as an uninterrupted scan.

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

/// Sends `signal` (`TERM`, `HUP`...) to `pid` with kill(1).
pub fn send(signal: &str, pid: u32) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// SIGTERM in the middle of `scan --deep`, and SIGHUP in the middle of `analyze`: each stops
/// after the files in flight, ends its workers (none is left) and exits 3 (transient: retry) within 10 s,
/// and the reruns end with the same rows as a scan that was never interrupted.
#[test]
fn sigterm_or_sighup_mid_scan_exits_3_and_the_rerun_resumes() {
    use framecull::media::synth::VideoSpec;
    use std::time::{Duration, Instant};
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for i in 0..12 {
        common::video(
            data.path(),
            &format!("cam{i:02}.mp4"),
            &VideoSpec::new("libx264", 320, 240, 25, 100 + 10 * i),
        );
    }
    let (reference, stopped) = (work.path().join("reference"), work.path().join("stopped"));
    let scan = |project: &std::path::Path, deep: bool| {
        let mut c = common::bin();
        c.arg("scan").arg(data.path()).arg("--project").arg(project);
        c.args(["--jobs", "1"]);
        if deep {
            c.arg("--deep");
        }
        c
    };
    let out = scan(&reference, true).output().unwrap();
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));

    let analysed = |project: &std::path::Path| -> i64 {
        rusqlite::Connection::open_with_flags(
            project.join("catalog.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM metrics", [], |r| r.get(0)))
        .unwrap_or(0)
    };
    // Stops `cmd` with `signal` once a file is analysed; what it said on stderr.
    let stop = |cmd: &mut std::process::Command, signal: &str| -> String {
        let before = analysed(&stopped);
        let child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while analysed(&stopped) <= before && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let workers = children(child.id());
        assert!(!workers.is_empty(), "no worker process was analysing");
        let sent = Instant::now();
        send(signal, child.id());
        let out = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        // The workers end with their parent, not a moment later.
        let gone = Instant::now();
        while workers.iter().any(|pid| alive(*pid)) && gone.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left: Vec<u32> = workers.into_iter().filter(|pid| alive(*pid)).collect();
        assert!(
            left.is_empty(),
            "SIG{signal}: worker processes left: {left:?}"
        );
        let said = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "SIG{signal}: {said}");
        assert!(
            took < Duration::from_secs(10),
            "stopped {took:?} after SIG{signal}"
        );
        assert!(said.contains(&format!("SIG{signal}")), "{said}");
        said
    };
    // Each file waits 250 ms before its analysis while the stops are tested, so that both
    // land in the middle of the deep pass (which commits every 500 ms, when the test sends
    // its signal) with files left on a machine of any speed.
    let slow = (framecull::model::SLOW_ANALYSIS_ENV, "250");
    stop(scan(&stopped, true).env(slow.0, slow.1), "TERM");
    let after_term = analysed(&stopped);
    assert!(
        after_term < 12,
        "the scan finished before SIGTERM; make the videos longer"
    );
    let mut analyze = common::bin();
    analyze
        .arg("analyze")
        .arg("--project")
        .arg(&stopped)
        .args(["--jobs", "1"])
        .env(slow.0, slow.1);
    stop(&mut analyze, "HUP");
    let after_hup = analysed(&stopped);
    assert!(
        after_hup > after_term && after_hup < 12,
        "{after_term} then {after_hup}"
    );

    let out = scan(&stopped, true).output().unwrap();
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let said = common::stderr(&out);
    assert!(
        said.contains(&format!("{} up to date", after_hup)),
        "the rerun analyses only the rest: {said}"
    );
    let rows = |p: &std::path::Path| {
        let mut rows = common::list_jsonl(p);
        common::groups_by_first_path(&mut rows);
        rows
    };
    assert_eq!(rows(&reference), rows(&stopped));
}

/// The processes whose parent is `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid ...`: the fields after the last ')'.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// Whether process `pid` runs (a zombie, ended but not yet reaped, does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}
