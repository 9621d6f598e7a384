//! Labels in manifests: stratified splits and DALI file lists.

use std::path::Path;

use framecull::media::synth::ImageKind;

use super::{expect, scan, short_video};
use crate::common;

/// The rows of version `v` of manifest `name`: (path, label, split).
fn manifest_rows(proj: &Path, name: &str, v: u32) -> Vec<(String, String, String)> {
    std::fs::read_to_string(proj.join(format!("manifests/{name}/v{v:04}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let text = |k: &str| r[k].as_str().unwrap_or("-").to_string();
            (text("path"), text("label"), text("split"))
        })
        .collect()
}

#[test]
fn stratified_splits_give_a_rare_class_its_share_never_leak_and_stay_put() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, proj) = (tmp.path().join("data"), tmp.path().join("proj"));
    // 50 common pictures, 10 rare ones (sizes of their own: no two are copies), and a video
    // whose two clips carry other labels.
    let picture = |class: &str, i: u32| {
        let w = 16 + 2 * i;
        common::image(
            &data,
            &format!("{class}/{i:03}.png"),
            ImageKind::Png,
            w,
            w,
            None,
        );
    };
    (0..50).for_each(|i| picture("common", i));
    (50..60).for_each(|i| picture("rare", i));
    short_video(&data, "mixed/v.mp4", 50);
    scan(&data, &proj);
    expect(&proj, 0, &["labels", "import", "--from-folders"]);
    let csv = tmp.path().join("clips.csv");
    std::fs::write(
        &csv,
        "mixed/v.mp4,f0,f25,rare\nmixed/v.mp4,f25,f50,common\n",
    )
    .unwrap();
    expect(&proj, 0, &["labels", "import", csv.to_str().unwrap()]);
    let export = |extra: &[&str]| {
        let mut args = vec![
            "export",
            "--name",
            "s",
            "--format",
            "jsonl",
            "--split",
            "train=0.8,val=0.1,test=0.1",
            "--stratify",
            "label",
        ];
        args.extend(extra);
        expect(&proj, 0, &args);
    };
    export(&[]);
    let count = |rows: &[(String, String, String)], label: &str, split: &str| {
        rows.iter()
            .filter(|(p, l, s)| l == label && s == split && !p.starts_with("mixed/"))
            .count()
    };
    let v1 = manifest_rows(&proj, "s", 1);
    // Each label's share of every split, to the file: the rare class is in all three.
    assert_eq!(
        ["train", "val", "test"].map(|s| count(&v1, "rare", s)),
        [8, 1, 1],
        "{v1:?}"
    );
    assert_eq!(
        ["train", "val", "test"].map(|s| count(&v1, "common", s)),
        [40, 5, 5]
    );
    // The two clips of one video are in one split, whatever their labels.
    let video: Vec<&String> = v1
        .iter()
        .filter(|(p, ..)| p == "mixed/v.mp4")
        .map(|(.., s)| s)
        .collect();
    assert_eq!(video.len(), 2);
    assert_eq!(video[0], video[1]);
    // Without stratification a seeded hash decides: the rare class need not get its share.
    // With it, 10 more rare pictures: every earlier file keeps its split, and the rare class
    // its share of 20.
    (60..70).for_each(|i| picture("rare", i));
    scan(&data, &proj);
    expect(&proj, 0, &["labels", "import", "--from-folders"]);
    export(&[]);
    let v2 = manifest_rows(&proj, "s", 2);
    for row in &v1 {
        let now = v2.iter().find(|r| r.0 == row.0 && r.1 == row.1).unwrap();
        assert_eq!(now.2, row.2, "{} moved", row.0);
    }
    assert_eq!(
        ["train", "val", "test"].map(|s| count(&v2, "rare", s)),
        [16, 2, 2]
    );
    // A label changed between versions is a changed field in `diff`.
    expect(&proj, 0, &["labels", "set", "common", "rare/060.png"]);
    export(&[]);
    let diff: serde_json::Value = serde_json::from_str(&common::stdout(&expect(
        &proj,
        0,
        &["diff", "s", "2", "3", "--json"],
    )))
    .unwrap();
    let changed = diff["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{diff}");
    assert!(changed[0]["fields"].to_string().contains("label"), "{diff}");
}

/// A DALI list line as the test reads it: path, label, span in frames.
type ListLine = (String, Option<String>, Option<(i64, i64)>);

/// `export --format dali`: DALI's `file_list` per split read by a parser as strict as DALI's
/// (whitespace-separated `PATH LABEL [START END]`, integer labels of 0 or more, no comments),
/// every line checked against the manifest, what DALI cannot read left out and counted.
#[test]
fn dali_file_lists_hold_every_video_row_in_frames_with_numbered_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, proj) = (tmp.path().join("data"), tmp.path().join("proj"));
    short_video(&data, "clips/v.mp4", 50);
    short_video(&data, "clips/w x.mp4", 25);
    // Another length: copies would be duplicates, which an export leaves out.
    short_video(&data, "clips/z.mp4", 30);
    common::image(&data, "p.png", ImageKind::Png, 32, 24, None);
    scan(&data, &proj);
    let csv = tmp.path().join("l.csv");
    std::fs::write(
        &csv,
        "clips/v.mp4,f5,f20,run\nclips/v.mp4,f20,f45,jump\nclips/w x.mp4,,,walk\n",
    )
    .unwrap();
    expect(&proj, 0, &["labels", "import", csv.to_str().unwrap()]);
    expect(
        &proj,
        0,
        &["export", "--name", "d", "--format", "jsonl,dali"],
    );
    let dir = proj.join("manifests/d");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("v0001.dali.json")).unwrap())
            .unwrap();
    let labels: Vec<Option<String>> = serde_json::from_value(index["labels"].clone()).unwrap();
    assert_eq!(labels, [Some("jump".into()), Some("run".into()), None]);
    assert_eq!(index["lists"]["all"], "v0001.dali.all.txt");
    let left_out: u64 = index["left_out"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        left_out, 2,
        "the picture and the path with a space: {index}"
    );
    let text = std::fs::read_to_string(dir.join("v0001.dali.all.txt")).unwrap();
    let mut lines = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert!(matches!(fields.len(), 2 | 4), "{line}");
        let path = Path::new(fields[0]);
        assert!(path.is_absolute() && path.is_file(), "{line}");
        let label: usize = fields[1].parse().unwrap();
        let span = (fields.len() == 4).then(|| {
            let (s, e): (i64, i64) = (fields[2].parse().unwrap(), fields[3].parse().unwrap());
            assert!(s < e, "{line}");
            (s, e)
        });
        let rel = path.strip_prefix(data.canonicalize().unwrap()).unwrap();
        lines.push((
            rel.to_str().unwrap().to_string(),
            labels[label].clone(),
            span,
        ));
    }
    lines.sort();
    // Every video row of the manifest whose path DALI can read, and nothing else.
    let mut rows: Vec<ListLine> = std::fs::read_to_string(dir.join("v0001.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["kind"] == "video" && !r["path"].as_str().unwrap().contains(' '))
        .map(|r| {
            let frames = r["start_frame"].as_i64().zip(r["end_frame"].as_i64());
            (
                r["path"].as_str().unwrap().to_string(),
                r["label"].as_str().map(str::to_string),
                frames,
            )
        })
        .collect();
    rows.sort();
    assert_eq!(lines, rows);
    assert!(lines.contains(&("clips/v.mp4".into(), Some("run".into()), Some((5, 20)))));
}
