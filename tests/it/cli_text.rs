//! Snapshots of the command line's text for people: what `list`, `stats`, `flags`, `clips`,
//! `export`, `manifests` and `diff` print on a small generated dataset. Each snapshot holds
//! the exit code, stdout and stderr, with the temporary folders and timings redacted
//! (`[DATA]`, `[PROJECT]`, `[SECS]`).
//!
//! Sizes, fingerprints and measures come from this FFmpeg build's encoders: another FFmpeg
//! version can write other bytes. Review such a change with `cargo insta review` (or run
//! with `INSTA_UPDATE=always` and read the diff) before committing the new snapshots.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};

use framecull::media::synth::{ImageKind, Pattern, VideoSpec};

/// A scanned (`--deep`) project of a small dataset, in one temporary folder.
struct Fixture {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    project: PathBuf,
}

fn spec(codec: &str, frames: u32, pattern: Pattern) -> VideoSpec {
    let mut s = VideoSpec::new(codec, 128, 72, 25, frames);
    s.pattern = pattern;
    s
}

/// Bytes that are no media format, the same on every run (xorshift).
fn noise(n: usize) -> Vec<u8> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Three videos (one with two hard cuts, one moving, one frozen), three pictures (one a
/// byte-identical copy, one with an EXIF orientation), an MP4 cut short, noise named `.mp4`
/// and a text file that is not catalogued.
fn write_dataset(data: &Path) {
    common::video(
        data,
        "clips/shots.mp4",
        &spec("libx264", 48, Pattern::Shots { len: 16 }),
    );
    common::video(
        data,
        "clips/box.avi",
        &spec("mpeg4", 20, Pattern::MovingBox { speed: 4 }),
    );
    let mut still = spec("libx264", 30, Pattern::Static);
    still.gop = 30;
    common::video(data, "clips/still.mp4", &still);
    // The index in front: the first 60% still probe, and decode short of the duration.
    let mut whole = spec("libx264", 40, Pattern::MovingBox { speed: 3 });
    whole.faststart = true;
    let whole = common::video(data, "broken/whole.mp4", &whole);
    let bytes = std::fs::read(&whole).unwrap();
    std::fs::write(
        data.join("broken/truncated.mp4"),
        &bytes[..bytes.len() * 3 / 5],
    )
    .unwrap();
    std::fs::remove_file(whole).unwrap();
    common::image(data, "images/a.png", ImageKind::Png, 64, 48, None);
    common::image(data, "images/b.jpg", ImageKind::Jpeg, 80, 60, Some(6));
    std::fs::copy(data.join("images/a.png"), data.join("images/copy.png")).unwrap();
    std::fs::write(data.join("broken/noise.mp4"), noise(2048)).unwrap();
    std::fs::write(data.join("notes.txt"), b"not media").unwrap();
}

impl Fixture {
    /// Write the dataset and scan it (`--deep`); returns the scan's own output too.
    fn scanned() -> (Fixture, String) {
        Fixture::scanned_with("--deep")
    }

    /// Write the dataset and triage it (`scan --triage`); returns the scan's own output too.
    fn triaged() -> (Fixture, String) {
        Fixture::scanned_with("--triage")
    }

    fn scanned_with(level: &str) -> (Fixture, String) {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let project = tmp.path().join("project");
        write_dataset(&data);
        let fixture = Fixture {
            _tmp: tmp,
            data,
            project,
        };
        // One job: items are stored, and get their ids, in path order.
        let scan = fixture.run(&["scan", fixture.data.to_str().unwrap(), level, "-j", "1"]);
        (fixture, scan)
    }

    /// Run `framecull ARGS --project PROJECT`: exit code, stdout and stderr, redacted.
    fn run(&self, args: &[&str]) -> String {
        let out = common::bin()
            .args(args)
            .arg("--project")
            .arg(&self.project)
            .output()
            .unwrap();
        let text = format!(
            "exit code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
            out.status
                .code()
                .map_or("killed".to_string(), |c| c.to_string()),
            common::stdout(&out).trim_end(),
            common::stderr(&out).trim_end(),
        );
        self.redact(&text)
    }

    /// The temporary folders by name (also as the canonical paths the catalog records).
    fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (dir, name) in [(&self.data, "[DATA]"), (&self.project, "[PROJECT]")] {
            if let Ok(canonical) = dir.canonicalize() {
                text = text.replace(canonical.to_str().unwrap(), name);
            }
            text = text.replace(dir.to_str().unwrap(), name);
        }
        text
    }
}

/// `text` with the numbers of its JSON lines rounded to 4 decimals (the last bits of a
/// float are the platform's), keys in their order.
fn rounded_json(text: &str) -> String {
    fn round(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let x = n.as_f64().unwrap_or_default();
                *v = serde_json::json!((x * 1e4).round() / 1e4);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(round),
            serde_json::Value::Object(o) => o.values_mut().for_each(round),
            _ => {}
        }
    }
    text.lines()
        .map(
            |line| match serde_json::from_str::<serde_json::Value>(line) {
                Ok(mut v) => {
                    round(&mut v);
                    v.to_string()
                }
                Err(_) => line.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

/// Wall-clock times in the scan and analysis summaries; durations in reasons stay.
fn timing_filters() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"with problems; \d+\.\d+ s", "with problems; [SECS] s");
    settings.add_filter(r"up to date; \d+\.\d+ s", "up to date; [SECS] s");
    settings
}

/// A triage of the same dataset: what it flags from the packets, and the levels it leaves.
#[test]
fn triage_flags_and_levels() {
    timing_filters().bind(|| {
        let (f, scan) = Fixture::triaged();
        insta::assert_snapshot!("triage_scan", scan);
        insta::assert_snapshot!("triage_flags", f.run(&["flags"]));
        insta::assert_snapshot!(
            "triage_list_triaged",
            f.run(&["list", "--where", "level:triage"])
        );
    });
}

#[test]
fn listings_stats_and_flags() {
    timing_filters().bind(|| {
        let (f, scan) = Fixture::scanned();
        insta::assert_snapshot!("scan", scan);
        insta::assert_snapshot!("list", f.run(&["list"]));
        insta::assert_snapshot!("list_problems", f.run(&["list", "--problems"]));
        insta::assert_snapshot!("list_videos", f.run(&["list", "--kind", "video"]));
        // The jsonl contract, every field of every row: a change shows here, and only a new
        // field is a change that keeps older readers working.
        insta::assert_snapshot!(
            "list_jsonl",
            rounded_json(&f.run(&["list", "--format", "jsonl"]))
        );
        insta::assert_snapshot!("stats", f.run(&["stats"]));
        insta::assert_snapshot!("flags", f.run(&["flags"]));
        insta::assert_snapshot!("flags_one_code", f.run(&["flags", "--code", "unreadable"]));
        insta::assert_snapshot!("flags_rule", f.run(&["flags", "--code", "dark"]));
    });
}

#[test]
fn clips_exports_and_diffs() {
    timing_filters().bind(|| {
        let (f, scan) = Fixture::scanned();
        assert!(scan.starts_with("exit code: 1\n"), "{scan}");
        insta::assert_snapshot!("clips_list_none", f.run(&["clips", "list"]));
        // Analysed videos without a cut: nothing to split is a note, not an error.
        insta::assert_snapshot!(
            "clips_split_at_cuts_none",
            f.run(&["clips", "split-at-cuts", "clips/box.avi", "clips/still.mp4"])
        );
        insta::assert_snapshot!("clips_split_at_cuts", f.run(&["clips", "split-at-cuts"]));
        // Nothing flagged is nothing to do; a flag code that does not exist is an error.
        insta::assert_snapshot!(
            "review_flag_none",
            f.run(&[
                "review",
                "reject",
                "--flag",
                "no_decoder",
                "--flag",
                "metadata_errors"
            ])
        );
        insta::assert_snapshot!(
            "review_flag_unknown",
            f.run(&["review", "reject", "--flag", "decode_error"])
        );
        insta::assert_snapshot!(
            "clips_add",
            f.run(&[
                "clips",
                "add",
                "clips/box.avi",
                "--start",
                "f4",
                "--end",
                "0.6",
                "--label",
                "box",
            ])
        );
        insta::assert_snapshot!("clips_list", f.run(&["clips", "list"]));
        insta::assert_snapshot!("manifests_none", f.run(&["manifests"]));
        // Flagged `frozen`, so only an accepted video's clips go in.
        insta::assert_snapshot!(
            "review_accept",
            f.run(&["review", "accept", "clips/shots.mp4"])
        );
        let export = |seed: &str| {
            f.run(&[
                "export",
                "--name",
                "x",
                "--split",
                "train=0.5,val=0.5",
                "--split-seed",
                seed,
                "--format",
                "parquet,jsonl",
            ])
        };
        insta::assert_snapshot!(
            "export_dry_run",
            f.run(&["export", "--name", "x", "--dry-run"])
        );
        insta::assert_snapshot!("export_v1", export("2"));

        // One file rejected, one tagged, one clip removed: the second version differs by
        // exactly these three rows.
        insta::assert_snapshot!(
            "review_reject",
            f.run(&["review", "reject", "images/b.jpg"])
        );
        insta::assert_snapshot!("tag_add", f.run(&["tag", "add", "night", "clips/box.avi"]));
        insta::assert_snapshot!("clips_rm", f.run(&["clips", "rm", "2"]));
        insta::assert_snapshot!("export_v2", export("2"));
        insta::assert_snapshot!("diff_v1_v2", f.run(&["diff", "x", "v1", "v2"]));

        // The removed clip comes back, and another seed moves every file to the other split.
        insta::assert_snapshot!("undo", f.run(&["undo"]));
        insta::assert_snapshot!("export_v3", export("4"));
        insta::assert_snapshot!("diff_v2_v3", f.run(&["diff", "x", "v0002", "3"]));
        insta::assert_snapshot!("manifests", f.run(&["manifests"]));
        insta::assert_snapshot!("diff_same", f.run(&["diff", "x", "1", "1"]));
        insta::assert_snapshot!("diff_bad_version", f.run(&["diff", "x", "v1", "v9"]));
    });
}

/// The report of a label import: counts, then each kind of row not applied; and the labels
/// written back.
#[test]
fn labels_import_report() {
    timing_filters().bind(|| {
        let (f, _) = Fixture::triaged();
        let csv = f.project.with_file_name("labels.csv");
        std::fs::write(
            &csv,
            "path,start,end,label\n\
             shots,,,street\n\
             clips/shots.mp4,f0,f16,intro\n\
             images/a.png,,,cat\n\
             missing.mp4,,,ghost\n\
             images/b.jpg,,,x\n\
             images/b.jpg,,,y\n",
        )
        .unwrap();
        let csv = csv.to_str().unwrap();
        insta::assert_snapshot!(
            "labels_import_dry_run",
            f.run(&["labels", "import", csv, "--dry-run"])
        );
        insta::assert_snapshot!("labels_import", f.run(&["labels", "import", csv]));
        insta::assert_snapshot!("labels_export", f.run(&["labels", "export"]));
    });
}
