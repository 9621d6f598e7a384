//! Labels in and out: the Kinetics layout through a path template, class folders, CSV and
//! JSON lines with clip spans, tags, unmatched, ambiguous and contradicting rows, dry runs,
//! undo, the `label:` filter, `stats`, manifests, and the lossless round trip.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::process::Output;

use framecull::media::synth::{ImageKind, VideoSpec};

fn framecull(proj: &Path, args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--project", proj.to_str().unwrap()]);
    common::run(&all)
}

/// Run and require exit code `code`.
fn expect(proj: &Path, code: i32, args: &[&str]) -> Output {
    let out = framecull(proj, args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}{}",
        common::stdout(&out),
        common::stderr(&out)
    );
    out
}

fn scan(data: &Path, proj: &Path) {
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--project",
        proj.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
}

/// Each file's label (`null` as `-`) and its clips' labels, from `list --format jsonl`.
fn labels(proj: &Path) -> Vec<(String, String, Vec<String>)> {
    common::list_jsonl(proj)
        .into_iter()
        .map(|(path, row)| {
            let label = row["label"].as_str().unwrap_or("-").to_string();
            let clips = row["clip_labels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap().to_string())
                .collect();
            (path, label, clips)
        })
        .collect()
}

/// The import report (`--json`) of a finished import.
fn report(out: &Output) -> serde_json::Value {
    serde_json::from_str(&common::stdout(out)).unwrap()
}

fn short_video(dir: &Path, name: &str, frames: u32) {
    common::video(dir, name, &VideoSpec::new("libx264", 64, 48, 25, frames));
}

#[test]
fn kinetics_layout_through_a_path_template_labels_whole_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, proj) = (tmp.path().join("data"), tmp.path().join("proj"));
    // The layout the Kinetics downloaders write: a folder per class, files named by the
    // YouTube id and the span's seconds, zero-padded to six digits.
    for name in [
        "abseiling/0347ZoDXyP0_000014_000024.mp4",
        "abseiling/-x_Q1yaTo9c_000001_000011.mp4",
        "playing guitar/zzBuu1ma_8Y_000100_000110.mp4",
    ] {
        short_video(&data, name, 5);
    }
    scan(&data, &proj);
    let csv = tmp.path().join("train.csv");
    std::fs::write(
        &csv,
        "label,youtube_id,time_start,time_end,split,is_cc\n\
         abseiling,0347ZoDXyP0,14,24,train,0\n\
         abseiling,-x_Q1yaTo9c,1,11,train,0\n\
         \"playing guitar\",zzBuu1ma_8Y,100,110,train,0\n\
         \"playing guitar\",notDownloaded,5,15,train,0\n",
    )
    .unwrap();
    let template = "{label}/{youtube_id}_{time_start:06}_{time_end:06}.mp4";
    let args = [
        "labels",
        "import",
        csv.to_str().unwrap(),
        "--path-template",
        template,
        "--json",
    ];
    // A row that names no file is reported, and the import exits 1 (per-file problems).
    let out = expect(&proj, 1, &args);
    let r = report(&out);
    assert_eq!(
        (r["rows"].as_u64(), r["matched"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(r["files_labelled"], 3);
    let unmatched = r["unmatched"].as_array().unwrap();
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0]["line"], 5);
    assert_eq!(
        unmatched[0]["path"],
        "playing guitar/notDownloaded_000005_000015.mp4"
    );
    assert!(
        r["notes"].to_string().contains("split column"),
        "{}",
        r["notes"]
    );
    assert_eq!(
        labels(&proj),
        vec![
            (
                "abseiling/-x_Q1yaTo9c_000001_000011.mp4".into(),
                "abseiling".into(),
                vec![]
            ),
            (
                "abseiling/0347ZoDXyP0_000014_000024.mp4".into(),
                "abseiling".into(),
                vec![]
            ),
            (
                "playing guitar/zzBuu1ma_8Y_000100_000110.mp4".into(),
                "playing guitar".into(),
                vec![]
            ),
        ]
    );
    // The filter's label terms, and the counts of `stats`.
    let guitar = common::list_jsonl_where(&proj, Some("label:playing guitar"));
    assert_eq!(guitar.len(), 1);
    assert!(common::list_jsonl_where(&proj, Some("label:none")).is_empty());
    let stats: serde_json::Value =
        serde_json::from_str(&common::stdout(&expect(&proj, 0, &["stats", "--json"]))).unwrap();
    assert_eq!(
        stats["by_label"],
        serde_json::json!([
            {"label": "abseiling", "files": 2, "clips": 0},
            {"label": "playing guitar", "files": 1, "clips": 0},
        ])
    );
    // Imported again: every matched row is already so; nothing changes, no operation.
    let again = report(&expect(&proj, 1, &args));
    assert_eq!(again["unchanged"], 3);
    assert!(again["operation"].is_null());
    // A template that names a column the file lacks is an error before anything is read.
    let out = expect(
        &proj,
        2,
        &[
            "labels",
            "import",
            csv.to_str().unwrap(),
            "--path-template",
            "{label}/{video_id}.mp4",
        ],
    );
    assert!(
        common::stderr(&out).contains("no column \"video_id\""),
        "{}",
        common::stderr(&out)
    );
}

/// A row that cannot be applied is reported on its line, with why, and the rest is applied.
#[test]
fn rows_that_cannot_be_applied_say_why_on_their_line() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    common::image(&data, "a.png", ImageKind::Png, 32, 24, None);
    short_video(&data, "v.mp4", 30);
    let proj = tmp.path().join("proj");
    scan(&data, &proj);
    let csv = tmp.path().join("labels.csv");
    std::fs::write(
        &csv,
        "path,start,end,label\n\
         a.png,,,\n\
         a.png,f1,f5,x\n\
         v.mp4,f5,,x\n\
         v.mp4,f20,f10,x\n\
         v.mp4,f5,f10,kept\n",
    )
    .unwrap();
    let r = report(&expect(
        &proj,
        1,
        &["labels", "import", csv.to_str().unwrap(), "--json"],
    ));
    let why: Vec<(u64, String)> = r["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["line"].as_u64().unwrap(),
                p["why"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        why,
        [
            (2, "no label".to_string()),
            (3, "a start and an end need a video".into()),
            (
                4,
                "a start without an end, or an end without a start".into()
            ),
            (
                5,
                "the clip is empty: end f10 is not after start f20".into()
            ),
        ],
    );
    assert_eq!(r["clips_added"], 1);
}

#[test]
fn folders_clips_tags_problems_dry_run_undo_and_the_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, proj) = (tmp.path().join("data"), tmp.path().join("proj"));
    // Sizes of their own: copies would be duplicates, which an export leaves out.
    for (n, name) in [
        "cat/a.png",
        "cat/b.png",
        "dog/c.png",
        "dog/a.png",
        "loose.png",
    ]
    .into_iter()
    .enumerate()
    {
        let w = 32 + 8 * n as u32;
        common::image(&data, name, ImageKind::Png, w, w * 3 / 4, None);
    }
    short_video(&data, "walks/w.mp4", 50);
    scan(&data, &proj);

    // Class folders (ImageFolder, UCF-101): the first folder is the label.
    let out = expect(&proj, 0, &["labels", "import", "--from-folders", "--json"]);
    let r = report(&out);
    assert_eq!(r["files_labelled"], 5);
    assert!(
        r["notes"][0]
            .as_str()
            .unwrap()
            .contains("1 file in no folder")
    );
    let by_path: std::collections::BTreeMap<String, String> =
        labels(&proj).into_iter().map(|(p, l, _)| (p, l)).collect();
    assert_eq!(by_path["cat/a.png"], "cat");
    assert_eq!(by_path["dog/a.png"], "dog");
    assert_eq!(by_path["walks/w.mp4"], "walks");
    assert_eq!(by_path["loose.png"], "-");

    // A CSV of every form: a file by a unique name, a clip in frames and one in seconds, a
    // name two files end with, a path no file has, rows that disagree, a bad span.
    let csv = tmp.path().join("labels.csv");
    std::fs::write(
        &csv,
        "path,start,end,label\n\
         c.png,,,puppy\n\
         walks/w.mp4,f5,f20,sit\n\
         w.mp4,1.0,1.6,run\n\
         a.png,,,kitten\n\
         gone.png,,,ghost\n\
         cat/b.png,,,x\n\
         ./cat/b.png,,,y\n\
         walks/w.mp4,f30,f10,empty\n",
    )
    .unwrap();
    let before = common::stdout(&expect(&proj, 0, &["labels", "export"]));
    // A dry run reports and changes nothing.
    let dry = report(&expect(
        &proj,
        1,
        &[
            "labels",
            "import",
            csv.to_str().unwrap(),
            "--dry-run",
            "--json",
        ],
    ));
    assert_eq!(dry["clips_added"], 2);
    assert!(dry["operation"].is_null());
    assert_eq!(
        common::stdout(&expect(&proj, 0, &["labels", "export"])),
        before
    );
    let r = report(&expect(
        &proj,
        1,
        &["labels", "import", csv.to_str().unwrap(), "--json"],
    ));
    let lines = |key: &str| -> Vec<u64> {
        r[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["line"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(lines("unmatched"), vec![6]);
    assert_eq!(lines("ambiguous"), vec![5]);
    assert_eq!(lines("invalid"), vec![7, 8, 9]);
    assert!(
        r["ambiguous"][0]["why"]
            .as_str()
            .unwrap()
            .contains("cat/a.png")
    );
    assert_eq!(
        (
            r["files_labelled"].as_u64(),
            r["clips_added"].as_u64(),
            r["matched"].as_u64()
        ),
        (Some(1), Some(2), Some(3))
    );
    // The clips hold exactly the frames asked: f5..f20, and 1.0 s to 1.6 s at 25 fps.
    let clips: serde_json::Value = serde_json::from_str(&common::stdout(&expect(
        &proj,
        0,
        &["clips", "list", "--json"],
    )))
    .unwrap();
    let spans: Vec<(i64, i64, String)> = clips
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let c = &c["clip"];
            (
                c["start_frame"].as_i64().unwrap(),
                c["end_frame"].as_i64().unwrap(),
                c["label"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        spans,
        vec![(5, 20, "sit".to_string()), (25, 40, "run".to_string())]
    );
    assert_eq!(
        common::list_jsonl_where(&proj, Some("label:run"))
            .keys()
            .collect::<Vec<_>>(),
        vec!["walks/w.mp4"]
    );
    let stats: serde_json::Value =
        serde_json::from_str(&common::stdout(&expect(&proj, 0, &["stats", "--json"]))).unwrap();
    let walks = stats["by_label"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == "walks")
        .unwrap()
        .clone();
    // The video's clips have labels of their own: none is counted under its file's.
    assert_eq!(
        walks,
        serde_json::json!({"label": "walks", "files": 1, "clips": 0})
    );

    // A relabelled clip (its span given again, in frames) is changed, not added.
    let relabel = tmp.path().join("relabel.jsonl");
    std::fs::write(
        &relabel,
        "{\"path\": \"walks/w.mp4\", \"start_frame\": 25, \"end_frame\": 40, \"label\": \"jog\"}\n",
    )
    .unwrap();
    let r = report(&expect(
        &proj,
        0,
        &["labels", "import", relabel.to_str().unwrap(), "--json"],
    ));
    assert_eq!(
        (r["clips_labelled"].as_u64(), r["clips_added"].as_u64()),
        (Some(1), Some(0))
    );
    // Undo takes the relabelling back as one operation, then the whole CSV import.
    expect(&proj, 0, &["undo"]);
    assert!(!common::list_jsonl_where(&proj, Some("label:run")).is_empty());
    expect(&proj, 0, &["undo"]);
    assert_eq!(
        common::stdout(&expect(&proj, 0, &["labels", "export"])),
        before
    );
    expect(&proj, 0, &["redo"]);
    expect(&proj, 0, &["redo"]);

    // Several labels of one file: invalid as labels, tags with --as-tags.
    let multi = tmp.path().join("multi.jsonl");
    std::fs::write(
        &multi,
        "{\"path\": \"loose.png\", \"labels\": [\"indoor\", \"blurry\"]}\n",
    )
    .unwrap();
    let r = report(&expect(
        &proj,
        1,
        &["labels", "import", multi.to_str().unwrap(), "--json"],
    ));
    assert!(
        r["invalid"][0]["why"]
            .as_str()
            .unwrap()
            .contains("--as-tags")
    );
    expect(
        &proj,
        0,
        &["labels", "import", multi.to_str().unwrap(), "--as-tags"],
    );
    assert_eq!(
        common::list_jsonl(&proj)["loose.png"]["tags"],
        serde_json::json!(["indoor", "blurry"])
    );

    // The round trip: the export, imported into a fresh scan of the same files, gives the
    // same export; imported into its own catalog, it changes nothing.
    let exported = tmp.path().join("exported.csv");
    expect(
        &proj,
        0,
        &["labels", "export", "--output", exported.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&exported).unwrap();
    assert!(text.starts_with("path,start,end,label\n"), "{text}");
    assert!(text.contains("walks/w.mp4,f25,f40,jog\n"), "{text}");
    let same = report(&expect(
        &proj,
        0,
        &["labels", "import", exported.to_str().unwrap(), "--json"],
    ));
    assert!(same["operation"].is_null(), "{same}");
    let fresh = tmp.path().join("fresh");
    scan(&data, &fresh);
    expect(&fresh, 0, &["labels", "import", exported.to_str().unwrap()]);
    assert_eq!(
        common::stdout(&expect(&fresh, 0, &["labels", "export"])).trim_end(),
        text.trim_end()
    );

    // A manifest: a clip's own label, else its file's.
    expect(&proj, 0, &["export", "--name", "l", "--format", "jsonl"]);
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(proj.join("manifests/l/v0001.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let label_of = |path: &str| -> Vec<String> {
        let mut v: Vec<String> = rows
            .iter()
            .filter(|r| r["path"] == path)
            .map(|r| r["label"].as_str().unwrap_or("-").to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(label_of("walks/w.mp4"), vec!["jog", "sit"]);
    assert_eq!(label_of("dog/c.png"), vec!["puppy"]);
    assert_eq!(label_of("loose.png"), vec!["-"]);
}

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

/// Label files as spreadsheets and framecull write them: a byte-order mark, a manifest's
/// columns (seconds and frames: the frames win), names with a backslash or a leading space
/// (taken as written, and written back so); and a stratified export after a CSV-only
/// version (which it cannot read back: it splits afresh).
#[test]
fn byte_order_marks_manifest_columns_odd_names_and_csv_only_parents() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, proj) = (tmp.path().join("data"), tmp.path().join("proj"));
    short_video(&data, "v.mp4", 50);
    for (n, name) in ["a\\b.png", " lead.png", "a/b.png"].into_iter().enumerate() {
        let w = 32 + 8 * n as u32;
        common::image(&data, name, ImageKind::Png, w, w, None);
    }
    scan(&data, &proj);
    let csv = tmp.path().join("excel.csv");
    std::fs::write(
        &csv,
        "\u{feff}path,start_secs,end_secs,start_frame,end_frame,label\n\
         v.mp4,0.2,0.8,5,21,kick\n\
         a\\b.png,,,,,slash\n\
         \" lead.png\",,,,,space\n\
         a/b.png,,,,,real\n",
    )
    .unwrap();
    let r = report(&expect(
        &proj,
        0,
        &["labels", "import", csv.to_str().unwrap(), "--json"],
    ));
    assert_eq!(
        (r["matched"].as_u64(), r["clips_added"].as_u64()),
        (Some(4), Some(1))
    );
    let by_path: std::collections::BTreeMap<String, (String, Vec<String>)> = labels(&proj)
        .into_iter()
        .map(|(p, l, c)| (p, (l, c)))
        .collect();
    assert_eq!(by_path["a\\b.png"].0, "slash");
    assert_eq!(by_path[" lead.png"].0, "space");
    assert_eq!(by_path["a/b.png"].0, "real");
    assert_eq!(by_path["v.mp4"].1, vec!["kick".to_string()]);
    let clips = common::stdout(&expect(&proj, 0, &["clips", "list"]));
    assert!(clips.contains("frames 5..21"), "{clips}");
    // Written back and read into a fresh scan: the same labels, names as they are.
    let exported = tmp.path().join("labels.csv");
    expect(
        &proj,
        0,
        &["labels", "export", "--output", exported.to_str().unwrap()],
    );
    let fresh = tmp.path().join("fresh");
    scan(&data, &fresh);
    expect(&fresh, 0, &["labels", "import", exported.to_str().unwrap()]);
    assert_eq!(
        common::stdout(&expect(&fresh, 0, &["labels", "export"])).trim_end(),
        std::fs::read_to_string(&exported).unwrap().trim_end()
    );
    // Stratified, as CSV only, twice: the second cannot read the first back, and splits
    // afresh rather than failing.
    for _ in 0..2 {
        expect(
            &proj,
            0,
            &[
                "export",
                "--name",
                "c",
                "--format",
                "csv",
                "--split",
                "a=0.5,b=0.5",
                "--stratify",
                "label",
            ],
        );
    }
    assert!(proj.join("manifests/c/v0002.csv").exists());
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
