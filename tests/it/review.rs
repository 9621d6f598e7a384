//! Review operations: journaled decisions, tags and clips, undo and redo, frame-exact clip
//! boundaries, and durability under SIGKILL.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;

use framecull::analysis::image::Gray;
use framecull::catalog::Catalog;
use framecull::media::decode::{DecodeOptions, decode_frames};
use framecull::media::synth::{ImageKind, Pattern, VideoSpec};

fn project(data: &Path, proj: &Path) {
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--project",
        proj.to_str().unwrap(),
        "--deep",
    ]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
}

fn cli(proj: &Path, args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--project", proj.to_str().unwrap()]);
    let out = common::run(&all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        common::stderr(&out)
    );
    out
}

/// `clips list --json`: `[{path, clip}]`.
fn list_clips(proj: &Path) -> Vec<serde_json::Value> {
    let out = cli(proj, &["clips", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    v.as_array().unwrap().clone()
}

#[test]
fn decisions_tags_undo_redo_and_bulk_by_flag() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    common::image(data.path(), "a.jpg", ImageKind::Jpeg, 64, 48, None);
    common::image(data.path(), "b.png", ImageKind::Png, 64, 48, None);
    let bytes = std::fs::read(data.path().join("a.jpg")).unwrap();
    std::fs::write(data.path().join("cut.jpg"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(data.path().join("cut2.jpg"), &bytes[..bytes.len() / 3]).unwrap();
    project(data.path(), proj.path());
    let decision = |p: &str| {
        common::list_jsonl(proj.path())[p]["decision"]
            .as_str()
            .unwrap()
            .to_string()
    };

    cli(proj.path(), &["review", "accept", "a.jpg"]);
    assert_eq!(decision("a.jpg"), "accepted");
    cli(proj.path(), &["tag", "add", "night", "a.jpg", "b.png"]);
    assert_eq!(
        common::list_jsonl(proj.path())["b.png"]["tags"],
        serde_json::json!(["night"])
    );
    cli(proj.path(), &["undo"]);
    assert!(
        common::list_jsonl(proj.path())["b.png"]["tags"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    cli(proj.path(), &["undo"]);
    assert_eq!(decision("a.jpg"), "unreviewed");
    cli(proj.path(), &["redo"]);
    assert_eq!(decision("a.jpg"), "accepted");
    // A new operation clears what could be redone.
    cli(proj.path(), &["review", "reject", "b.png"]);
    cli(proj.path(), &["redo"]);
    assert!(
        common::list_jsonl(proj.path())["b.png"]["tags"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Bulk: reject everything flagged as a truncated image, as one undoable operation.
    cli(
        proj.path(),
        &["review", "reject", "--flag", "image_truncated"],
    );
    assert_eq!(
        (decision("cut.jpg").as_str(), decision("cut2.jpg").as_str()),
        ("rejected", "rejected")
    );
    assert_eq!(decision("a.jpg"), "accepted");
    cli(proj.path(), &["undo"]);
    assert_eq!(
        (decision("cut.jpg").as_str(), decision("cut2.jpg").as_str()),
        ("unreviewed", "unreviewed")
    );
}

/// The frame index the counter pattern's top half encodes (8 blocks, one bit each).
fn counter_index(gray: &Gray) -> u64 {
    let y = gray.height / 4;
    (0..8).fold(0, |acc, b| {
        let x = (2 * b + 1) * gray.width / 16;
        (acc << 1) | u64::from(gray.data[y * gray.width + x] > 128)
    })
}

#[test]
fn clip_boundaries_are_frame_exact_on_variable_frame_rate_video() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let mut spec = VideoSpec::new("libx264", 160, 96, 25, 60);
    spec.pattern = Pattern::Counter;
    spec.vfr = true;
    spec.gop = 7;
    let path = common::video(data.path(), "counter.mp4", &spec);
    project(data.path(), proj.path());

    // Decode every frame: its timestamp and the frame index its pixels encode.
    let mut frames: Vec<(i64, u64)> = Vec::new();
    decode_frames(
        &framecull::media::Source::from(path.as_path()).open(),
        &DecodeOptions::default(),
        0,
        &mut |f| {
            let gray = Gray::from_planes(f.planes, f.width, f.height);
            frames.push((f.pts.unwrap(), counter_index(&gray)));
            true
        },
    )
    .unwrap();
    assert_eq!(frames.len(), 60);
    assert!(
        frames.iter().enumerate().all(|(i, f)| f.1 == i as u64),
        "the counter reads back"
    );

    cli(
        proj.path(),
        &[
            "clips",
            "add",
            "counter.mp4",
            "--start",
            "f10",
            "--end",
            "f20",
            "--label",
            "ten",
        ],
    );
    // 1.0 s on this clock: frames last 1 or 2 ticks of 1/25 s; the frame shown then.
    cli(
        proj.path(),
        &[
            "clips",
            "add",
            "counter.mp4",
            "--start",
            "1.0",
            "--end",
            "1.5",
        ],
    );
    let clips = list_clips(proj.path());
    assert_eq!(clips.len(), 2);
    let shown_at = |pts: i64| frames.iter().find(|f| f.0 == pts).map(|f| f.1);
    let first = &clips[0]["clip"];
    assert_eq!(first["start_frame"], 10);
    assert_eq!(first["end_frame"], 20);
    assert_eq!(
        shown_at(first["start_pts"].as_i64().unwrap()),
        Some(10),
        "the stored start shows frame 10"
    );
    assert_eq!(shown_at(first["end_pts"].as_i64().unwrap()), Some(20));
    let second = &clips[1]["clip"];
    let tb: framecull::model::Ratio = serde_json::from_value(second["time_base"].clone()).unwrap();
    let start_pts = second["start_pts"].as_i64().unwrap();
    // The start is the frame on screen at 1.0 s: it starts at or before 1.0 s, the next after.
    let k = frames.iter().position(|f| f.0 == start_pts).unwrap();
    assert!(start_pts as f64 * tb.as_f64() <= 1.0 + 1e-9);
    assert!(frames[k + 1].0 as f64 * tb.as_f64() > 1.0);
    assert_eq!(second["start_frame"].as_u64().unwrap(), frames[k].1);

    // Undo removes the clip, redo restores it with the same id.
    let id = second["id"].as_i64().unwrap();
    cli(proj.path(), &["undo"]);
    assert_eq!(list_clips(proj.path()).len(), 1);
    cli(proj.path(), &["redo"]);
    assert_eq!(list_clips(proj.path())[1]["clip"]["id"].as_i64(), Some(id));
}

#[test]
fn acknowledged_edits_survive_sigkill() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    for i in 0..5 {
        common::image(
            data.path(),
            &format!("i{i}.png"),
            ImageKind::Png,
            16,
            16,
            None,
        );
    }
    let out = common::run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let mut child = common::bin()
        .args([
            "edit-burst",
            "--count",
            "1000000",
            "--project",
            proj.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut acks = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while acks.len() < 300 {
        let line = lines.next().unwrap().unwrap();
        let parts: Vec<&str> = line.split(' ').collect();
        acks.push((parts[1].parse::<i64>().unwrap(), parts[2].to_string()));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let catalog = Catalog::open(proj.path()).unwrap();
    drop(catalog);
    let conn = rusqlite::Connection::open(proj.path().join("catalog.db")).unwrap();
    let mut stmt = conn.prepare("SELECT edits FROM ops ORDER BY id").unwrap();
    let ops: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        ops.len() >= acks.len(),
        "{} ops for {} acknowledged edits",
        ops.len(),
        acks.len()
    );
    for (i, (item, decision)) in acks.iter().enumerate() {
        let edits: serde_json::Value = serde_json::from_str(&ops[i]).unwrap();
        assert_eq!(edits[0]["item"].as_i64(), Some(*item), "op {i}");
        assert_eq!(
            edits[0]["after"].as_str(),
            Some(decision.as_str()),
            "op {i}"
        );
    }
}

#[test]
fn clips_are_proposed_where_something_moves() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    // 6 s at 25 fps; a box moves from 2.0 s to 3.0 s.
    let mut spec = VideoSpec::new("libx264", 320, 180, 25, 150);
    spec.pattern = Pattern::Burst {
        start: 50,
        end: 75,
        speed: 8,
    };
    common::video(data.path(), "burst.mp4", &spec);
    project(data.path(), proj.path());
    cli(proj.path(), &["clips", "propose", "--lead-in", "0.5"]);
    let clips = list_clips(proj.path());
    assert_eq!(clips.len(), 1, "{clips:?}");
    let (s, e) = (
        clips[0]["clip"]["start_secs"].as_f64().unwrap(),
        clips[0]["clip"]["end_secs"].as_f64().unwrap(),
    );
    // The burst with half a second either side, to the bucket (0.5 s).
    assert!((1.0..=1.6).contains(&s), "start {s}");
    assert!((3.4..=4.0).contains(&e), "end {e}");
    assert_eq!(clips[0]["clip"]["origin"], "auto");
}

/// `dups --keep-best` keeps one member of each duplicate group (the best by resolution, bit
/// rate, size; the smallest id among equals) and rejects exactly the others, as one operation
/// that one undo restores.
#[test]
fn keep_best_rejects_exactly_the_other_duplicates_and_undo_restores_them() {
    use framecull::model::{Decision, Review};
    use std::collections::HashMap;
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let a = common::image(data.path(), "a.png", ImageKind::Png, 64, 48, None);
    std::fs::copy(&a, data.path().join("copy.png")).unwrap();
    std::fs::create_dir_all(data.path().join("b")).unwrap();
    std::fs::copy(&a, data.path().join("b/copy2.png")).unwrap();
    common::image(data.path(), "other.jpg", ImageKind::Jpeg, 80, 60, None);
    project(data.path(), proj.path());
    cli(
        proj.path(),
        &["review", "accept", "copy.png", "b/copy2.png"],
    );

    let out = cli(proj.path(), &["dups", "--json"]);
    let groups: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let catalog = Catalog::open(proj.path()).unwrap();
    let items = catalog.items().unwrap();
    let id = |p: &str| items.iter().find(|i| i.path == p).unwrap().id;
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let members: Vec<i64> = groups[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_i64().unwrap())
        .collect();
    // Members in path order (stable across scans); ids follow the recording order.
    let expected = vec![id("a.png"), id("b/copy2.png"), id("copy.png")];
    assert_eq!(members, expected);
    let best = groups[0]["best"].as_i64().unwrap();
    assert_eq!(
        best,
        *expected.iter().min().unwrap(),
        "equal members: the smallest id"
    );

    let decision = |reviews: &HashMap<i64, Review>, id: i64| {
        reviews.get(&id).map(|r| r.decision).unwrap_or_default()
    };
    let before = catalog.all_reviews().unwrap();
    cli(proj.path(), &["dups", "--keep-best"]);
    let after = catalog.all_reviews().unwrap();
    for item in &items {
        let expected = if members.contains(&item.id) && item.id != best {
            Decision::Rejected
        } else {
            decision(&before, item.id)
        };
        assert_eq!(decision(&after, item.id), expected, "{}", item.path);
    }
    cli(proj.path(), &["undo"]);
    let undone = catalog.all_reviews().unwrap();
    for item in &items {
        assert_eq!(
            decision(&undone, item.id),
            decision(&before, item.id),
            "{}",
            item.path
        );
    }
    assert_eq!(decision(&undone, id("copy.png")), Decision::Accepted);
}
