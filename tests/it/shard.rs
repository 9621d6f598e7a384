//! Sharded scans merged into one catalog give what one machine's scan gives: the same rows,
//! flags and duplicate groups, whatever the order shards are merged in, how often, after a
//! shard was killed or rescanned; a finished shard rerun does nothing; bad shard arguments
//! and shards that do not belong together are fatal (exit 2), a busy catalog is transient (3).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use framecull::media::synth::{self, ImageKind, Pattern, VideoSpec};
use framecull::scan::shard::shard_of;
use serde_json::Value;

const SHARDS: u32 = 4;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Run framecull; the output, after checking the exit status is one of `codes`.
fn run_ok(args: &[&str], codes: &[i32]) -> std::process::Output {
    let out = common::run(args);
    let code = out.status.code().unwrap_or(-1);
    assert!(
        codes.contains(&code),
        "framecull {args:?} exited {code}: {}",
        common::stderr(&out)
    );
    out
}

/// Scan `root` (whole, `--deep`) into `project`.
fn scan_single(root: &Path, project: &Path) {
    run_ok(
        &["scan", s(root), "--deep", "--project", s(project)],
        &[0, 1],
    );
}

/// Scan shard `index` of `SHARDS` (`--deep`) into `project`.
fn scan_shard(root: &Path, index: u32, project: &Path, extra: &[&str]) -> std::process::Output {
    let spec = format!("{index}/{SHARDS}");
    let mut args = vec![
        "scan",
        s(root),
        "--deep",
        "--shard",
        &spec,
        "--project",
        s(project),
    ];
    args.extend(extra);
    run_ok(&args, &[0, 1])
}

fn merge(shards: &[&PathBuf], out: &Path) -> std::process::Output {
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|p| s(p)));
    args.extend(["--project", s(out)]);
    run_ok(&args, &[0, 1])
}

/// What a project shows: `list --all --format jsonl` rows by path, `flags --json`, and the
/// duplicate groups as sets of paths.
#[derive(Debug, PartialEq)]
struct View {
    rows: BTreeMap<String, Value>,
    flags: Value,
    groups: Vec<Vec<String>>,
}

fn view(project: &Path) -> View {
    let out = run_ok(
        &[
            "list",
            "--all",
            "--project",
            s(project),
            "--format",
            "jsonl",
        ],
        &[0],
    );
    let rows: BTreeMap<String, Value> = common::stdout(&out)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["path"].as_str().unwrap().to_string(), v)
        })
        .collect();
    let flags = serde_json::from_str(&common::stdout(&run_ok(
        &["flags", "--json", "--project", s(project)],
        &[0],
    )))
    .unwrap();
    let mut by_group: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (path, row) in &rows {
        if let Some(g) = row["dup_group"].as_i64() {
            by_group.entry(g).or_default().push(path.clone());
        }
    }
    let mut groups: Vec<Vec<String>> = by_group.into_values().collect();
    groups.sort();
    View {
        rows,
        flags,
        groups,
    }
}

/// The view with duplicate group ids (item ids, which differ between catalogs) replaced by
/// the group's first path.
fn without_ids(mut v: View) -> View {
    common::groups_by_first_path(&mut v.rows);
    v
}

fn assert_same(merged: View, single: View) {
    let (merged, single) = (without_ids(merged), without_ids(single));
    assert_eq!(
        merged.rows.keys().collect::<Vec<_>>(),
        single.rows.keys().collect::<Vec<_>>()
    );
    for (path, row) in &single.rows {
        assert_eq!(&merged.rows[path], row, "row of {path}");
    }
    assert_eq!(merged.flags, single.flags);
    assert_eq!(merged.groups, single.groups);
}

/// A dataset with every kind of file, duplicates across folders (so across shards) and
/// enough pictures for the outlier statistics (20 per kind).
fn generated_dataset(root: &Path) {
    common::mixed_dataset(root);
    let h264 = root.join("clips/h264.mp4");
    std::fs::create_dir_all(root.join("copies")).unwrap();
    std::fs::copy(&h264, root.join("copies/h264 copy.mp4")).unwrap();
    std::fs::copy(root.join("images/a.png"), root.join("copies/a.png")).unwrap();
    // The same footage re-encoded: a near duplicate.
    common::video(
        root,
        "reencoded/h264.avi",
        &VideoSpec::new("mpeg4", 320, 240, 25, 25),
    );
    let patterns = [
        Pattern::Counter,
        Pattern::Shots { len: 1 },
        Pattern::Pan { speed: 5 },
        Pattern::MovingBox { speed: 7 },
    ];
    for i in 0..24u32 {
        let dir = root.join(format!("pics/{}", i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        let (w, h) = if i == 23 { (16, 12) } else { (96 + i * 4, 72) };
        let kind = if i % 2 == 0 {
            ImageKind::Jpeg
        } else {
            ImageKind::Png
        };
        let ext = if i % 2 == 0 { "jpg" } else { "png" };
        synth::write_image(
            &dir.join(format!("p{i:02}.{ext}")),
            kind,
            w,
            h,
            patterns[i as usize % 4],
            i * 11,
            None,
        )
        .unwrap();
    }
    std::fs::write(root.join("pics/labels.csv"), "path,label\n").unwrap();
}

fn shard_dirs(base: &Path) -> Vec<PathBuf> {
    (0..SHARDS)
        .map(|i| base.join(format!("shard{i}")))
        .collect()
}

#[test]
fn shards_merged_equal_a_single_scan_in_any_order_and_after_a_rescan() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = data.path().canonicalize().unwrap();
    generated_dataset(&root);
    let single = work.path().join("single");
    scan_single(&root, &single);

    let shards = shard_dirs(work.path());
    for (i, dir) in shards.iter().enumerate() {
        scan_shard(&root, i as u32, dir, &[]);
        let marker: Value =
            serde_json::from_slice(&std::fs::read(dir.join("shard.json")).unwrap()).unwrap();
        assert_eq!(marker["index"], i as u64);
        assert_eq!(marker["count"], SHARDS);
        assert_eq!(marker["deep"], true);
        assert_eq!(marker["root"], s(&root));
    }
    // Every file is in exactly one shard, media and other files alike.
    let per_shard: Vec<View> = shards.iter().map(|d| view(d)).collect();
    let mut all: Vec<&String> = per_shard.iter().flat_map(|v| v.rows.keys()).collect();
    all.sort();
    let single_view = view(&single);
    assert_eq!(all, single_view.rows.keys().collect::<Vec<_>>());
    assert!(per_shard.iter().all(|v| !v.rows.is_empty()));
    for v in &per_shard {
        assert!(v.rows.values().all(|r| r["status"] != "missing"));
    }

    // (a) merged = single scan.
    let merged = work.path().join("merged");
    let refs: Vec<&PathBuf> = shards.iter().collect();
    merge(&refs, &merged);
    let merged_view = view(&merged);
    assert!(!merged_view.groups.is_empty(), "the dataset has duplicates");
    assert!(
        merged_view.groups.iter().any(|g| {
            let shards: std::collections::HashSet<u32> =
                g.iter().map(|p| shard_of(p, SHARDS)).collect();
            shards.len() > 1
        }),
        "some duplicate group spans shards: {:?}",
        merged_view.groups
    );
    assert_same(view(&merged), view(&single));
    assert_eq!(indexes(&merged), indexes(&single));

    // (b) order independence, (c) a shard merged twice: equal, ids included.
    let reversed = work.path().join("reversed");
    let rev: Vec<&PathBuf> = shards.iter().rev().collect();
    merge(&rev, &reversed);
    assert_eq!(view(&reversed), merged_view);
    let one_by_one = work.path().join("one_by_one");
    for dir in [&shards[2], &shards[0], &shards[2], &shards[3], &shards[1]] {
        merge(&[dir], &one_by_one);
    }
    merge(&refs, &one_by_one);
    assert_eq!(view(&one_by_one), merged_view);
    let db = rusqlite::Connection::open(one_by_one.join("catalog.db")).unwrap();
    let (items, distinct): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT path) FROM items",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(items, distinct);
    let recorded: i64 = db
        .query_row("SELECT COUNT(*) FROM merged_shards", [], |r| r.get(0))
        .unwrap();
    assert_eq!(recorded, i64::from(SHARDS));

    // (e) a finished shard rerun does nothing, quickly, and leaves its marker as it was.
    let marker = shards[1].join("shard.json");
    let before = std::fs::read(&marker).unwrap();
    let started = Instant::now();
    let out = scan_shard(&root, 1, &shards[1], &[]);
    assert!(
        common::stderr(&out).contains("already done"),
        "{}",
        common::stderr(&out)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(std::fs::read(&marker).unwrap(), before);

    // (f) a file changed and one added: their shards rescanned and merged again replace
    // their rows.
    let changed = "pics/0/p05.png";
    std::thread::sleep(Duration::from_millis(20));
    synth::write_image(
        &root.join(changed),
        ImageKind::Png,
        200,
        150,
        Pattern::Static,
        0,
        None,
    )
    .unwrap();
    let added = "new/added.jpg";
    common::image(&root, added, ImageKind::Jpeg, 120, 90, None);
    let mut touched: Vec<u32> = vec![shard_of(changed, SHARDS), shard_of(added, SHARDS)];
    touched.dedup();
    for &i in &touched {
        scan_shard(&root, i, &shards[i as usize], &["--rescan"]);
    }
    scan_single(&root, &single);
    merge(&refs, &merged);
    let after = view(&merged);
    assert_eq!(after.rows.len(), merged_view.rows.len() + 1);
    assert_eq!(after.rows[changed]["width"], 200);
    assert!(after.rows.contains_key(added));
    assert_same(after, view(&single));
    // Merging in another order after the rescan still agrees.
    merge(&rev, &reversed);
    assert_eq!(view(&reversed), view(&merged));
}

#[test]
fn shards_of_the_media_corpus_merged_equal_a_single_scan() {
    let Some(media) = common::corpus_dir() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let root = media.canonicalize().unwrap();
    let single = work.path().join("single");
    scan_single(&root, &single);
    let shards = shard_dirs(work.path());
    for (i, dir) in shards.iter().enumerate() {
        scan_shard(&root, i as u32, dir, &[]);
    }
    let merged = work.path().join("merged");
    let refs: Vec<&PathBuf> = shards.iter().collect();
    merge(&refs, &merged);
    let single_view = view(&single);
    assert!(single_view.rows.len() > 150);
    assert!(!single_view.groups.is_empty());
    let mut merged_view = view(&merged);
    // The merge copies each shard's rows as they are (all but what it derives again).
    let per_file = |r: &Value| {
        let mut r = r.clone();
        for derived in ["flags", "dup_group", "dup_exact_group"] {
            r[derived] = Value::Null;
        }
        r
    };
    let shard_rows: BTreeMap<String, Value> = shards.iter().flat_map(|d| view(d).rows).collect();
    assert_eq!(shard_rows.len(), merged_view.rows.len());
    for (path, row) in &shard_rows {
        assert_eq!(per_file(&merged_view.rows[path]), per_file(row), "{path}");
    }
    let unrepeatable = unrepeatable_decodes(&merged_view, &single_view);
    let mut single_view = single_view;
    for path in &unrepeatable {
        eprintln!(
            "note: {path}: FFmpeg decodes it differently from run to run; compared without \
             its decode fields"
        );
        mask_decode_fields(&mut single_view, path);
        mask_decode_fields(&mut merged_view, path);
    }
    assert_same(merged_view, single_view);
}

/// Damaged files whose decode FFmpeg does not repeat from run to run (a demuxer reading
/// uninitialised memory in a broken header reports a different error each time): the paths
/// whose rows in `a` and `b` differ in the decode fields only, on a file whose probe or decode
/// failed. At most 2, else the difference is not that.
fn unrepeatable_decodes(a: &View, b: &View) -> Vec<String> {
    const DECODE_FIELDS: [&str; 3] = ["decode_errors", "decoded_frames", "flags"];
    let mut paths = Vec::new();
    for (path, row) in &a.rows {
        let Some(other) = b.rows.get(path) else {
            continue;
        };
        if row == other {
            continue;
        }
        let strip = |r: &Value| {
            let mut r = r.clone();
            for f in DECODE_FIELDS {
                r[f] = Value::Null;
            }
            r
        };
        let damaged = [row, other].iter().any(|r| {
            r["status"] == "error"
                || r["flags"].as_array().is_some_and(|fs| {
                    fs.iter()
                        .any(|f| f["severity"] == "error" && f["source"] == "decode")
                })
        });
        if strip(row) == strip(other) && damaged {
            paths.push(path.clone());
        }
    }
    assert!(paths.len() <= 2, "decodes differ on {paths:?}");
    paths
}

/// `v` without the decode fields of `path`, and without `path` in `flags --json`.
fn mask_decode_fields(v: &mut View, path: &str) {
    if let Some(row) = v.rows.get_mut(path) {
        for f in ["decode_errors", "decoded_frames", "flags"] {
            row[f] = Value::Null;
        }
    }
    for group in v.flags.as_array_mut().into_iter().flatten() {
        if let Some(items) = group["items"].as_array_mut() {
            items.retain(|i| i["path"] != path);
            group["count"] = Value::from(items.len());
        }
    }
    if let Some(groups) = v.flags.as_array_mut() {
        groups.retain(|g| g["count"] != 0);
    }
}

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

/// Every index of a project's catalog, with its definition.
fn indexes(project: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(project.join("catalog.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
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

/// `clips list --json` as (path, label, start_secs, end_secs), sorted.
fn clips(project: &Path) -> Vec<(String, String, f64, f64)> {
    let out = run_ok(&["clips", "list", "--json", "--project", s(project)], &[0]);
    let v: Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let mut clips: Vec<(String, String, f64, f64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["clip"]["label"].as_str().unwrap_or_default().to_string(),
                c["clip"]["start_secs"].as_f64().unwrap(),
                c["clip"]["end_secs"].as_f64().unwrap(),
            )
        })
        .collect();
    clips.sort_by(|a, b| a.partial_cmp(b).unwrap());
    clips
}

/// Review work done in a shard comes through the merge, and review work done in the merged
/// project survives merging a rescanned shard again.
#[test]
fn reviews_tags_notes_and_clips_come_through_the_merge_and_stay() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = data.path().canonicalize().unwrap();
    let videos = ["a/one.mp4", "b/two.mp4", "c/three.mp4", "d/four.mp4"];
    for v in videos {
        common::video(&root, v, &VideoSpec::new("libx264", 160, 120, 25, 25));
    }
    // A video of each shard.
    let of = |shard: u32| *videos.iter().find(|v| shard_of(v, 2) == shard).unwrap();
    let (v0, v1) = (of(0), of(1));
    let shards: Vec<PathBuf> = (0..2).map(|i| work.path().join(format!("s{i}"))).collect();
    for (i, dir) in shards.iter().enumerate() {
        let spec = format!("{i}/2");
        run_ok(
            &["scan", s(&root), "--shard", &spec, "--project", s(dir)],
            &[0],
        );
    }
    let s0 = s(&shards[0]);
    run_ok(&["review", "accept", v0, "--project", s0], &[0]);
    run_ok(&["tag", "add", "good", v0, "--project", s0], &[0]);
    run_ok(&["note", v0, "seen in shard 0", "--project", s0], &[0]);
    run_ok(
        &[
            "clips",
            "add",
            v0,
            "--start",
            "0.2",
            "--end",
            "0.6",
            "--label",
            "walk",
            "--project",
            s0,
        ],
        &[0],
    );
    let out = work.path().join("out");
    let refs: Vec<&PathBuf> = shards.iter().collect();
    merge(&refs, &out);
    let rows = view(&out).rows;
    assert_eq!(rows[v0]["decision"], "accepted");
    assert_eq!(rows[v0]["tags"], serde_json::json!(["good"]));
    assert_eq!(rows[v0]["note"], "seen in shard 0");
    assert_eq!(rows[v1]["decision"], "unreviewed");
    assert_eq!(clips(&out), clips(&shards[0]));

    // Work in the merged project.
    let o = s(&out);
    run_ok(&["review", "reject", v1, "--project", o], &[0]);
    run_ok(
        &[
            "clips",
            "add",
            v1,
            "--start",
            "0.0",
            "--end",
            "0.4",
            "--label",
            "mine",
            "--project",
            o,
        ],
        &[0],
    );
    // Both shards change: a file added to each and rescanned; shard 0's decision changes later.
    for i in 0..2u32 {
        let name = (0..)
            .map(|k| format!("new/added_{k}.mp4"))
            .find(|p| shard_of(p, 2) == i)
            .unwrap();
        common::video(&root, &name, &VideoSpec::new("mpeg4", 160, 120, 25, 10));
        let spec = format!("{i}/2");
        run_ok(
            &[
                "scan",
                s(&root),
                "--shard",
                &spec,
                "--rescan",
                "--project",
                s(&shards[i as usize]),
            ],
            &[0],
        );
    }
    std::thread::sleep(Duration::from_millis(1100));
    run_ok(&["review", "reject", v0, "--project", s0], &[0]);
    merge(&refs, &out);
    let rows = view(&out).rows;
    assert_eq!(rows.len(), videos.len() + 2);
    assert_eq!(
        rows[v0]["decision"], "rejected",
        "the shard's later decision"
    );
    assert_eq!(rows[v0]["tags"], serde_json::json!(["good"]));
    assert_eq!(rows[v1]["decision"], "rejected", "the merged project's own");
    let mut expected = clips(&shards[0]);
    expected.push((v1.to_string(), "mine".into(), 0.0, 0.4));
    expected.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(clips(&out), expected);
}

/// Triaged shards merge as deep ones do: the merge equals a triage of the whole dataset on
/// one machine, each marker records the triage, a finished triaged shard is not scanned
/// again by the same command but is by `--deep`, and triaged and deep shards do not merge
/// together.
#[test]
fn triaged_shards_merged_equal_a_single_triage_and_do_not_mix_with_deep_ones() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = data.path().canonicalize().unwrap();
    for i in 0..6u32 {
        let mut spec = VideoSpec::new("libx264", 96 + 16 * i, 64, 25, 40 + 5 * i);
        // The index in front, so that the copy cut in half below still opens.
        spec.faststart = true;
        common::video(&root, &format!("v/clip{i}.mp4"), &spec);
    }
    let whole = std::fs::read(root.join("v/clip5.mp4")).unwrap();
    std::fs::write(root.join("v/cut.mp4"), &whole[..whole.len() / 2]).unwrap();
    common::image(&root, "p/a.png", ImageKind::Png, 32, 24, None);
    let single = work.path().join("single");
    run_ok(
        &["scan", s(&root), "--triage", "--project", s(&single)],
        &[0, 1],
    );
    let shards: Vec<PathBuf> = (0..2).map(|i| work.path().join(format!("t{i}"))).collect();
    let triage_shard = |i: usize, extra: &[&str]| {
        let spec = format!("{i}/2");
        let mut args = vec!["scan", s(&root), "--shard", &spec, "--project"];
        args.push(s(&shards[i]));
        args.extend(extra);
        run_ok(&args, &[0, 1])
    };
    for (i, dir) in shards.iter().enumerate() {
        triage_shard(i, &["--triage"]);
        let marker: Value =
            serde_json::from_slice(&std::fs::read(dir.join("shard.json")).unwrap()).unwrap();
        assert_eq!(
            (&marker["triage"], &marker["deep"]),
            (&Value::Bool(true), &Value::Bool(false))
        );
    }
    let out = work.path().join("merged");
    merge(&shards.iter().collect::<Vec<_>>(), &out);
    let merged = view(&out);
    assert!(
        merged
            .rows
            .iter()
            .filter(|(p, _)| p.starts_with("v/"))
            .all(|(_, r)| r["analysis_level"] == "triage"),
        "{:?}",
        merged
            .rows
            .iter()
            .map(|(p, r)| (p, &r["analysis_level"]))
            .collect::<Vec<_>>()
    );
    assert!(common::flag_codes(&merged.rows["v/cut.mp4"]).contains(&"truncated".to_string()));
    assert_same(merged, view(&single));

    // Done at this level: nothing to do; at another: scanned again.
    let again = triage_shard(0, &["--triage"]);
    assert!(
        common::stderr(&again).contains("already done"),
        "{}",
        common::stderr(&again)
    );
    let deeper = triage_shard(0, &["--deep"]);
    assert!(
        !common::stderr(&deeper).contains("already done"),
        "{}",
        common::stderr(&deeper)
    );
    // Shard 0 is now deep, shard 1 a triage: they do not merge.
    let mut args = vec!["merge", s(&shards[0]), s(&shards[1]), "--project"];
    let mixed = work.path().join("mixed");
    args.push(s(&mixed));
    let out = common::run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("(deep)") && common::stderr(&out).contains("(triage)"),
        "{}",
        common::stderr(&out)
    );
}
