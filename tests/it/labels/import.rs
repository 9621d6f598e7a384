//! Label imports: path templates, class folders, clip spans, rows that fail, undo, round trips.

use std::path::Path;
use std::process::Output;

use framecull::media::synth::ImageKind;

use super::{expect, scan, short_video};
use crate::common;

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
