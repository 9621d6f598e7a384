//! Bad shard arguments and shards that do not belong together are fatal; a busy catalog is not.

use crate::common;

use framecull::media::synth::ImageKind;
use serde_json::Value;

use super::{run_ok, s};

#[test]
fn bad_shard_arguments_and_shards_that_do_not_belong_together_are_fatal() {
    let data = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = data.path().canonicalize().unwrap();
    for i in 0..6 {
        common::image(
            &root,
            &format!("i{i}.png"),
            ImageKind::Png,
            16 + i,
            16,
            None,
        );
    }
    common::image(other.path(), "x.png", ImageKind::Png, 16, 16, None);
    let p = work.path().join("p");
    let fatal = |args: &[&str], envs: &[(&str, &str)], says: &str| {
        let mut cmd = common::bin();
        for v in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_MIN",
            "SLURM_ARRAY_TASK_COUNT",
            "JOB_COMPLETION_INDEX",
        ] {
            cmd.env_remove(v);
        }
        let out = cmd.args(args).envs(envs.iter().copied()).output().unwrap();
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    let scan = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["scan".into(), s(&root).into(), "--project".into()];
        v.push(s(&p).into());
        v.extend(extra.iter().map(|e| e.to_string()));
        v
    };
    for bad in ["4/4", "x/4", "1/0", "-1/4", "1", "1/2/3"] {
        let args = scan(&["--shard", bad]);
        fatal(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &[],
            "invalid shard",
        );
    }
    let args = scan(&["--shards", "4"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fatal(&args, &[], "no shard index");
    fatal(&args, &[("JOB_COMPLETION_INDEX", "4")], "not below");
    fatal(
        &args,
        &[("SLURM_ARRAY_TASK_ID", "two")],
        "SLURM_ARRAY_TASK_ID",
    );
    let args = scan(&["--shards"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fatal(&args, &[("JOB_COMPLETION_INDEX", "1")], "no shard count");
    fatal(
        &["scan", s(&root), "--shard", "0/2"],
        &[],
        "needs --project",
    );
    fatal(
        &["scan", s(&root), "--rescan", "--project", s(&p)],
        &[],
        "--rescan is for a shard",
    );

    // The index from a Slurm array task (as it is: a task resubmitted alone keeps its
    // index) or a Kubernetes Job.
    let out = common::bin()
        .args(["scan", s(&root), "--shards", "--project", s(&p)])
        .envs([
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ])
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let marker: Value =
        serde_json::from_slice(&std::fs::read(p.join("shard.json")).unwrap()).unwrap();
    assert_eq!(
        (marker["index"].as_u64(), marker["count"].as_u64()),
        (Some(1), Some(2))
    );
    let k8s = work.path().join("k8s");
    let out = common::bin()
        .args(["scan", s(&root), "--shards", "2", "--project", s(&k8s)])
        .env("JOB_COMPLETION_INDEX", "0")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));

    // A shard's project holds that shard only.
    fatal(
        &["scan", s(&root), "--shard", "0/2", "--project", s(&p)],
        &[],
        "holds shard 1/2",
    );
    fatal(
        &["scan", s(&root), "--project", s(&p)],
        &[],
        "holds shard 1/2",
    );

    // Merge refuses what is not a finished shard, and shards that do not belong together.
    let plain = work.path().join("plain");
    run_ok(&["scan", s(&root), "--project", s(&plain)], &[0]);
    let out_dir = work.path().join("out");
    fatal(
        &["merge", s(&plain), "--project", s(&out_dir)],
        &[],
        "not a finished shard",
    );
    fatal(
        &[
            "merge",
            s(&work.path().join("nowhere")),
            "--project",
            s(&out_dir),
        ],
        &[],
        "not a finished shard",
    );
    let of_three = work.path().join("of3");
    run_ok(
        &[
            "scan",
            s(&root),
            "--shard",
            "0/3",
            "--project",
            s(&of_three),
        ],
        &[0],
    );
    fatal(
        &["merge", s(&p), s(&of_three), "--project", s(&out_dir)],
        &[],
        "same --shard count",
    );
    let elsewhere = work.path().join("elsewhere");
    run_ok(
        &[
            "scan",
            s(other.path()),
            "--shard",
            "0/2",
            "--project",
            s(&elsewhere),
        ],
        &[0],
    );
    fatal(
        &["merge", s(&p), s(&elsewhere), "--project", s(&out_dir)],
        &[],
        "was scanned from",
    );
    // OUT holds shards of 2: shards of 3 are refused there.
    run_ok(&["merge", s(&p), s(&k8s), "--project", s(&out_dir)], &[0]);
    fatal(
        &["merge", s(&of_three), "--project", s(&out_dir)],
        &[],
        "holds shards of 2",
    );
    fatal(
        &["merge", s(&p), "--project", s(&plain)],
        &[],
        "scanned project",
    );
    fatal(
        &["merge", s(&elsewhere), "--project", s(&out_dir)],
        &[],
        "belongs to dataset",
    );
}

/// A catalog another process holds locked: the scan gives up after the busy timeout with
/// status 3 (retry), not 2.
#[test]
fn a_busy_catalog_is_a_transient_error() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    common::image(data.path(), "a.png", ImageKind::Png, 16, 16, None);
    let p = work.path().join("p");
    run_ok(
        &["scan", s(data.path()), "--shard", "0/1", "--project", s(&p)],
        &[0],
    );
    let conn = rusqlite::Connection::open(p.join("catalog.db")).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let out = common::run(&[
        "scan",
        s(data.path()),
        "--shard",
        "0/1",
        "--rescan",
        "--project",
        s(&p),
    ]);
    conn.execute_batch("ROLLBACK").unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", common::stderr(&out));
}
