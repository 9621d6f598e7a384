//! Decisions, tags, notes and clips made in a shard or in the merged project survive merges.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use framecull::media::synth::VideoSpec;
use framecull::scan::shard::shard_of;
use serde_json::Value;

use super::{merge, run_ok, s, view};

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
