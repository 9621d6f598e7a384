//! Merged shards equal one machine's scan: in any order, twice, after a rescan, triaged.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use framecull::media::synth::{self, ImageKind, Pattern, VideoSpec};
use framecull::scan::shard::shard_of;
use serde_json::Value;

use super::{View, assert_same, indexes, merge, run_ok, s, view};

const SHARDS: u32 = 4;

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
