//! Shards and merges killed or interrupted part-way: their reruns resume and finish them.

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{assert_same, indexes, merge, run_ok, s, view};

/// (d) A shard killed part-way has no marker, is refused by merge, and its rerun resumes;
/// the merge then equals a single scan.
#[test]
fn a_killed_shard_resumes_and_the_merge_is_still_whole() {
    const FILES: usize = 4000;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = data.path().canonicalize().unwrap();
    common::copies_of_one_image(&root, FILES);
    let shards: Vec<PathBuf> = (0..2).map(|i| work.path().join(format!("s{i}"))).collect();
    let at_kill = common::kill_after_first_batch(
        &[
            "scan",
            s(&root),
            "--shard",
            "1/2",
            "--project",
            s(&shards[1]),
            "--jobs",
            "1",
        ],
        &shards[1].join("catalog.db"),
    );
    assert!(
        (at_kill as usize) < FILES / 2 - 200,
        "the shard finished before it could be killed ({at_kill} rows)"
    );
    assert!(!shards[1].join("shard.json").exists());
    let out = common::run(&[
        "merge",
        s(&shards[1]),
        "--project",
        s(&work.path().join("refused")),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("not a finished shard"));

    for (i, dir) in shards.iter().enumerate() {
        let spec = format!("{i}/2");
        run_ok(
            &["scan", s(&root), "--shard", &spec, "--project", s(dir)],
            &[0],
        );
    }
    let single = work.path().join("single");
    run_ok(&["scan", s(&root), "--project", s(&single)], &[0]);
    let merged = work.path().join("merged");
    merge(&shards.iter().collect::<Vec<_>>(), &merged);
    let merged_view = view(&merged);
    assert_eq!(merged_view.rows.len(), FILES);
    assert_same(merged_view, view(&single));
}

/// A merge killed part-way leaves whole shards merged; its rerun merges the rest and derives,
/// and the result equals an uninterrupted merge.
#[test]
fn a_killed_merge_rerun_finishes() {
    const FILES: usize = 3000;
    const COUNT: u32 = 16;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = data.path().canonicalize().unwrap();
    common::copies_of_one_image(&root, FILES);
    let shards: Vec<PathBuf> = (0..COUNT)
        .map(|i| work.path().join(format!("s{i:02}")))
        .collect();
    for (i, dir) in shards.iter().enumerate() {
        let spec = format!("{i}/{COUNT}");
        run_ok(
            &["scan", s(&root), "--shard", &spec, "--project", s(dir)],
            &[0],
        );
    }
    let whole = work.path().join("whole");
    let refs: Vec<&PathBuf> = shards.iter().collect();
    merge(&refs, &whole);

    let killed = work.path().join("killed");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|p| s(p)));
    args.extend(["--project", s(&killed)]);
    let at_kill = common::kill_after_first_batch(&args, &killed.join("catalog.db"));
    if at_kill as usize >= FILES {
        eprintln!("note: the merge finished before it could be killed");
    }
    merge(&refs, &killed);
    assert_eq!(view(&killed), view(&whole));
    // Indexes set aside for the bulk merge are back, as the migrations made them.
    assert_eq!(indexes(&killed), indexes(&whole));
    assert!(
        indexes(&killed)
            .iter()
            .any(|(name, _)| name == "items_fingerprint")
    );
}

/// A shard interrupted with Ctrl-C (SIGINT) stops after the files in flight and exits 3, so a
/// scheduler retries it; it writes no marker, and the retry resumes and finishes it.
#[test]
fn an_interrupted_shard_exits_3_and_its_retry_finishes() {
    const FILES: usize = 3000;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    common::copies_of_one_image(data.path(), FILES);
    let p = work.path().join("p");
    let args = [
        "scan",
        s(data.path()),
        "--shard",
        "0/1",
        "--project",
        s(&p),
        "--jobs",
        "1",
    ];
    let mut child = common::bin()
        .args(args)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let db = p.join("catalog.db");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) && common::count_items(&db) == 0 {
        std::thread::sleep(Duration::from_millis(2));
    }
    let signal = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(signal.success());
    let status = child.wait().unwrap();
    let stored = common::count_items(&db) as usize;
    if stored < FILES {
        assert_eq!(status.code(), Some(3));
        assert!(!p.join("shard.json").exists());
    } else {
        eprintln!("note: the shard finished before it could be interrupted");
    }
    run_ok(&args, &[0]);
    assert!(p.join("shard.json").exists());
    assert_eq!(common::count_items(&db) as usize, FILES);
}
