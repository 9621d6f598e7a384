//! The level each row names, and a later triage that never makes a file shallower.

use std::collections::{BTreeMap, BTreeSet};

use framecull::media::synth::{ImageKind, VideoSpec};

use crate::common;

/// Every row names its level: videos `triage` after a triage, pictures `deep` (their triage
/// is their analysis), other files none; the deep pass deepens the triaged videos, and a
/// triage after it leaves them deep.
#[test]
fn each_row_names_its_level_and_a_triage_never_makes_a_file_shallower() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    common::video(&data, "a.mp4", &VideoSpec::new("libx264", 128, 72, 25, 50));
    common::video(
        &data,
        "b.webm",
        &VideoSpec::new("libvpx-vp9", 128, 72, 25, 30),
    );
    common::image(&data, "c.jpg", ImageKind::Jpeg, 64, 48, None);
    let project = tmp.path().join("project");
    let p = project.to_str().unwrap();
    let levels = || -> BTreeMap<String, String> {
        common::list_jsonl(&project)
            .into_iter()
            .map(|(path, row)| (path, row["analysis_level"].as_str().unwrap().to_string()))
            .collect()
    };
    let out = common::run(&["scan", data.to_str().unwrap(), "--project", p]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(levels().values().all(|l| l == "none"), "{:?}", levels());

    let out = common::run(&["analyze", "--triage", "--project", p]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let want = |v: &str| {
        BTreeMap::from([
            ("a.mp4".to_string(), v.to_string()),
            ("b.webm".to_string(), v.to_string()),
            ("c.jpg".to_string(), "deep".to_string()),
        ])
    };
    assert_eq!(levels(), want("triage"));
    let rows = common::list_jsonl(&project);
    assert_eq!(rows["a.mp4"]["decoded_frames"], serde_json::Value::Null);
    // The figures a triage estimates say so; a picture's (analysed deeply) do not.
    assert_eq!(
        rows["a.mp4"]["estimated"],
        serde_json::json!([
            "motion_mean",
            "motion_p95",
            "brightness",
            "sharpness",
            "phash"
        ])
    );
    assert_eq!(rows["c.jpg"]["estimated"], serde_json::json!([]));
    // The filter, the statistics and the manifest carry the level.
    let triaged = common::list_jsonl_where(&project, Some("level:triage"));
    assert_eq!(
        triaged.keys().collect::<Vec<_>>(),
        ["a.mp4", "b.webm"],
        "level:triage"
    );
    let out = common::run(&["stats", "--json", "--project", p]);
    let stats: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let by_level: BTreeMap<String, u64> = stats["by_analysis_level"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap().to_string(),
                g["files"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by_level,
        BTreeMap::from([("deep".to_string(), 1), ("triage".to_string(), 2)])
    );
    let out = common::run(&[
        "export",
        "--name",
        "t",
        "--format",
        "jsonl",
        "--include",
        "unreviewed",
        "--project",
        p,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let manifest = std::fs::read_to_string(project.join("manifests/t/v0001.jsonl")).unwrap();
    let levels_in_manifest: BTreeSet<(String, String)> = manifest
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let level = v["analysis_level"].as_str().unwrap().to_string();
            (v["path"].as_str().unwrap().to_string(), level)
        })
        .collect();
    assert_eq!(
        levels_in_manifest,
        BTreeSet::from([
            ("a.mp4".to_string(), "triage".to_string()),
            ("b.webm".to_string(), "triage".to_string()),
            ("c.jpg".to_string(), "deep".to_string()),
        ])
    );
    // Nothing decoded, nothing to split at: a triage is not the analysis the clips need.
    let out = common::run(&["clips", "split-at-cuts", "--project", p]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));

    let out = common::run(&["analyze", "--triage", "--project", p]);
    assert!(
        common::stderr(&out).contains("0 files analysed, 3 up to date"),
        "{}",
        common::stderr(&out)
    );
    let out = common::run(&["analyze", "--project", p]);
    assert!(
        common::stderr(&out).contains("2 files analysed, 1 up to date"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(levels(), want("deep"));
    let rows = common::list_jsonl(&project);
    assert_eq!(rows["a.mp4"]["decoded_frames"], 50);
    assert_eq!(rows["a.mp4"]["estimated"], serde_json::json!([]));
    let out = common::run(&["analyze", "--triage", "--project", p]);
    assert!(
        common::stderr(&out).contains("0 files analysed, 3 up to date"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(levels(), want("deep"));
}
