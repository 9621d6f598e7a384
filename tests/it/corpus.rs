//! Validation against the real-world corpus in `../shared/media` and its ffprobe / Pillow
//! ground truth. Skips, with a message, when the corpus is absent.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;

use serde_json::Value;

fn scan_corpus() -> Option<(std::path::PathBuf, tempfile::TempDir, std::process::Output)> {
    let media = common::corpus_dir()?;
    let proj = tempfile::tempdir().unwrap();
    let out = common::run(&[
        "scan",
        media.to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
    ]);
    Some((media, proj, out))
}

/// False for NaN (a missing value).
fn within(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

fn ground_truth(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Pixels of the first picture `ffmpeg` decodes from `path` when told no stream.
fn ffmpeg_picture_pixels(path: &std::path::Path) -> u64 {
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        .output()
        .unwrap();
    out.stdout.len() as u64
}

#[test]
fn corpus_metadata_matches_ground_truth() {
    let Some((media, proj, out)) = scan_corpus() else {
        return;
    };
    // The corpus has broken files: finished with per-file problems.
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let rows: BTreeMap<String, Value> = common::list_jsonl(proj.path());
    let mut failures = Vec::new();

    for g in ground_truth(&media.join("ground_truth.jsonl")) {
        let file = g["file"].as_str().unwrap();
        let Some(o) = rows.get(file) else {
            failures.push(format!("{file}: not catalogued"));
            continue;
        };
        if g["has_video"] != true {
            if o["status"] != "unsupported" || o["kind"] != "other" {
                failures.push(format!(
                    "{file}: no video stream but {} {}",
                    o["kind"], o["status"]
                ));
            }
            continue;
        }
        let mut bad = |what: &str, ours: &Value, theirs: &Value| {
            failures.push(format!("{file}: {what} {ours} != {theirs}"));
        };
        if o["status"] != "ok" {
            bad("status", &o["status"], &Value::from("ok"));
            continue;
        }
        // The ground truth describes the first video stream; the catalog the one FFmpeg
        // picks (`tc_nasa_13013.mp4`: 480x270 stream 3, not 320x180 stream 0), which is the
        // one `ffmpeg` decodes without `-map`.
        if g["n_video_streams"].as_u64() > Some(1) {
            let picked = ffmpeg_picture_pixels(&media.join(file));
            let ours = o["width"].as_u64().unwrap_or(0) * o["height"].as_u64().unwrap_or(0);
            if ours != picked || o["stream_index"] == g["stream_index"] {
                bad("stream (pixels)", &o["stream_index"], &Value::from(picked));
            }
            continue;
        }
        for key in ["codec", "width", "height"] {
            if o[key] != g[key] {
                bad(key, &o[key], &g[key]);
            }
        }
        // ffprobe reports the counter-clockwise angle of the display matrix.
        let rotation = g["rotation"]
            .as_f64()
            .map_or(0, |r| (-r).round() as i64)
            .rem_euclid(360);
        if o["rotation_deg"].as_i64() != Some(rotation) {
            bad("rotation", &o["rotation_deg"], &Value::from(rotation));
        }
        let fps_truth = g["avg_fps"].as_f64().or(g["r_fps"].as_f64()).unwrap();
        let fps = o["fps"].as_f64().unwrap_or(f64::NAN);
        if !within(fps / fps_truth, 1.0, 0.001) {
            bad("fps", &o["fps"], &Value::from(fps_truth));
        }
        if let Some(r) = g["r_fps"].as_f64() {
            let base = o["fps_base"].as_f64().unwrap_or(f64::NAN);
            if !within(base / r, 1.0, 0.001) {
                bad("fps_base", &o["fps_base"], &g["r_fps"]);
            }
        }
        match g["duration"].as_f64() {
            None => {
                if !o["duration_secs"].is_null() {
                    bad("duration", &o["duration_secs"], &g["duration"]);
                }
            }
            Some(d) => {
                let tolerance = (1.0 / fps_truth).max(0.005 * d);
                let ours = o["duration_secs"].as_f64().unwrap_or(f64::NAN);
                if !within(ours, d, tolerance) {
                    bad("duration", &o["duration_secs"], &g["duration"]);
                }
            }
        }
    }

    for g in ground_truth(&media.join("image_ground_truth.jsonl")) {
        let file = g["file"].as_str().unwrap();
        let Some(o) = rows.get(file) else {
            failures.push(format!("{file}: not catalogued"));
            continue;
        };
        if g["pil_load"] != "ok" {
            // Pillow cannot read it; we need a status and, when not ok, a reason.
            if o["status"] != "ok" && o["error"].is_null() {
                failures.push(format!("{file}: {} without a reason", o["status"]));
            }
            continue;
        }
        if o["kind"] != "image" || o["status"] != "ok" {
            failures.push(format!(
                "{file}: {} {} ({})",
                o["kind"], o["status"], o["error"]
            ));
            continue;
        }
        for (ours, theirs) in [
            ("width", "width"),
            ("height", "height"),
            ("exif_orientation", "exif_orientation"),
            ("frame_count", "n_frames"),
        ] {
            if o[ours] != g[theirs] {
                failures.push(format!("{file}: {ours} {} != {}", o[ours], g[theirs]));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_broken_file_is_a_row_with_a_status_and_reason() {
    let Some((media, proj, out)) = scan_corpus() else {
        return;
    };
    assert_eq!(out.status.code(), Some(1));
    let rows = common::list_jsonl(proj.path());
    let broken: Vec<_> = std::fs::read_dir(media.join("broken"))
        .unwrap()
        .map(|e| format!("broken/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    assert!(broken.len() >= 40);
    for file in &broken {
        let row = rows
            .get(file)
            .unwrap_or_else(|| panic!("{file} is not catalogued"));
        let status = row["status"].as_str().unwrap();
        assert!(
            ["ok", "error", "unsupported"].contains(&status),
            "{file}: {status}"
        );
        if status != "ok" {
            let reason = row["error"]
                .as_str()
                .unwrap_or_else(|| panic!("{file}: no reason"));
            assert!(
                reason.len() > 8,
                "{file}: reason {reason:?} is not a sentence"
            );
        }
    }
    // The ones that cannot be read at all say so.
    for file in [
        "broken/derived_zero_length.mp4",
        "broken/derived_zero_length.jpg",
    ] {
        assert_eq!(rows[file]["status"], "error", "{file}");
    }
    assert_eq!(rows["broken/derived_png_named_as.mp4"]["kind"], "image");
}

/// The corpus deep-scanned once (shared with the other tests that read it), as `list` rows.
fn deep_rows() -> Option<(std::path::PathBuf, BTreeMap<String, Value>)> {
    static ROWS: std::sync::OnceLock<Option<(std::path::PathBuf, BTreeMap<String, Value>)>> =
        std::sync::OnceLock::new();
    ROWS.get_or_init(|| {
        let (media, project) = common::corpus_deep_project()?;
        Some((media, common::list_jsonl(&project)))
    })
    .clone()
}

fn integrity_codes(row: &Value) -> Vec<String> {
    row["flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["source"] == "probe" || f["source"] == "decode")
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn cuts_match_pyscenedetect_goldens() {
    let Some((media, rows)) = deep_rows() else {
        return;
    };
    for (video, golden) in [
        (
            "video/psd_testvideo.mp4",
            "scenecuts/testvideo.mp4.ContentDetector.default.json",
        ),
        (
            "video/psd_counter.mp4",
            "scenecuts/counter.mp4.ContentDetector.default.json",
        ),
    ] {
        let golden: Value =
            serde_json::from_str(&std::fs::read_to_string(media.join(golden)).unwrap()).unwrap();
        let want: Vec<i64> = golden["cuts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_i64().unwrap())
            .collect();
        let fps = rows[video]["fps"].as_f64().unwrap();
        let start = rows[video]["start_secs"].as_f64().unwrap_or(0.0);
        let got: Vec<i64> = rows[video]["cuts_secs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| ((t.as_f64().unwrap() - start) * fps).round() as i64)
            .collect();
        assert_eq!(got.len(), want.len(), "{video}: {got:?} vs golden {want:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1, "{video}: {got:?} vs golden {want:?}");
        }
    }
}

#[test]
fn every_damaged_file_gets_an_integrity_flag() {
    let Some((media, rows)) = deep_rows() else {
        return;
    };
    let mut missed = Vec::new();
    for g in ground_truth(&media.join("broken_ground_truth.jsonl")) {
        let file = g["file"].as_str().unwrap();
        let ffmpeg_errors = g["ffmpeg_error_lines"].as_u64().unwrap_or(0) > 0
            || g["ffmpeg_decode_rc"].as_i64().unwrap_or(0) != 0;
        // Images Pillow cannot load (truncated or undecodable) must be flagged too.
        let pillow_fails = g["pil_load"]
            .as_str()
            .is_some_and(|s| s.starts_with("error"));
        if (ffmpeg_errors || pillow_fails) && integrity_codes(&rows[file]).is_empty() {
            missed.push(file.to_string());
        }
    }
    assert!(missed.is_empty(), "no integrity flag on: {missed:?}");
    // Truncated images are named as such.
    let cut = integrity_codes(&rows["broken/derived_nikon-e950_cut60.jpg"]);
    assert!(cut.contains(&"image_truncated".to_string()), "{cut:?}");
}

/// duplicates.tsv groups whose files are not the same picture: checked by eye, the two
/// decord rotation-test clips show different shots (arrow keys; trackpad), so no
/// content-based detector should group them. `zero-length` (two empty files) is not a group
/// either: files with no content are each `unreadable`, not duplicates of one another.
const NOT_DUPLICATES: &[&str] = &["rotation", "zero-length"];

#[test]
fn known_duplicate_groups_are_found_and_exact_groups_hold_identical_bytes() {
    let Some((media, rows)) = deep_rows() else {
        return;
    };
    let tsv = std::fs::read_to_string(media.join("duplicates.tsv")).unwrap();
    let mut missed = Vec::new();
    for line in tsv.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if NOT_DUPLICATES.contains(&cols[0]) {
            continue;
        }
        let groups: std::collections::HashSet<String> = cols[2]
            .split_whitespace()
            .map(|f| rows[f]["dup_group"].to_string())
            .collect();
        if groups.len() != 1 || groups.contains("null") {
            missed.push(format!("{}: {groups:?}", cols[0]));
        }
    }
    assert!(missed.is_empty(), "groups not found: {missed:?}");
    for empty in [
        "broken/derived_zero_length.jpg",
        "broken/derived_zero_length.mp4",
    ] {
        assert!(
            rows[empty]["dup_group"].is_null(),
            "{empty}: {}",
            rows[empty]
        );
    }

    let mut exact: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (path, row) in &rows {
        if !row["dup_exact_group"].is_null() {
            exact
                .entry(row["dup_exact_group"].to_string())
                .or_default()
                .push(path);
        }
    }
    // As many exact groups as the ground truth has byte-identical ones (relation
    // "byte-identical ..."): none in ../shared/media, whose only pair of equal bytes is the
    // two empty files, which are no group.
    let byte_identical = tsv
        .lines()
        .skip(1)
        .filter(|l| {
            l.split('\t')
                .nth(1)
                .is_some_and(|r| r.starts_with("byte-identical"))
        })
        .count();
    assert_eq!(exact.len(), byte_identical, "{exact:?}");
    for members in exact.values() {
        let first = std::fs::read(media.join(members[0])).unwrap();
        for m in &members[1..] {
            assert_eq!(std::fs::read(media.join(m)).unwrap(), first, "{members:?}");
        }
    }
}

/// Every file of the corpus gives the same row (metrics, flags, frame table) when its video
/// decodes on two threads as on one: codecs whose frame threads behave otherwise, damaged
/// and broken files included.
#[test]
fn the_corpus_gives_the_same_rows_on_one_and_two_decoder_threads() {
    let Some(media) = common::corpus_dir() else {
        return;
    };
    // Its videos and broken files (pictures decode on one thread either way).
    let data = tempfile::tempdir().unwrap();
    for folder in ["video", "broken"] {
        std::os::unix::fs::symlink(media.join(folder), data.path().join(folder)).unwrap();
    }
    let one = common::deep_rows(data.path(), 1);
    let two = common::deep_rows(data.path(), 2);
    assert!(one.len() > 80, "{} files", one.len());
    let differ: Vec<&String> = one
        .iter()
        .filter(|(path, row)| two.get(*path) != Some(row))
        .map(|(path, _)| path)
        .collect();
    assert!(differ.is_empty(), "rows that differ: {differ:?}");
}

/// Checked by eye: the Sintel trailer is letterboxed (60 black rows above and below its
/// 854x480 picture), the Chaplin clip pillarboxed (black columns either side of a 4:3 film in
/// 640x360) and the RealVideo clip too (about 18 black columns either side); no other file
/// of the corpus has bars, including pictures of a small
/// subject on a flat background (`fate_h264_spherical.mp4`, `tc_h265_video.mp4`).
#[test]
fn bars_are_found_on_the_corpus_files_that_have_them_and_on_no_other() {
    let Some((_, rows)) = deep_rows() else {
        return;
    };
    let mut found: Vec<(String, String, Vec<String>)> = rows
        .iter()
        .filter(|(_, r)| !r["content_crop"].is_null())
        .map(|(path, r)| {
            let codes = common::flag_codes(r)
                .into_iter()
                .filter(|c| c.ends_with("box"))
                .collect();
            (
                path.clone(),
                r["content_crop"].as_str().unwrap().to_string(),
                codes,
            )
        })
        .collect();
    found.sort();
    let expected = [
        (
            "broken/fate_rv20_G2_with_SVT.rm",
            "282:240:20:0",
            "pillarbox",
        ),
        (
            "video/fate_sintel-signbias.ivf",
            "854:360:0:60",
            "letterbox",
        ),
        ("video/mpy_chaplin.mp4", "490:360:74:0", "pillarbox"),
    ]
    .map(|(p, c, f)| (p.to_string(), c.to_string(), vec![f.to_string()]));
    assert_eq!(found, expected);
    let flagged = rows
        .values()
        .filter(|r| common::flag_codes(r).iter().any(|c| c.ends_with("box")))
        .count();
    assert_eq!(flagged, 3);
}

/// Checked by eye and against FFmpeg's `idet` (139 of its 163 frames top field first alone,
/// every one with its history): the concert clip `fate_attachment631-small.mp4` (720x480,
/// frames not marked interlaced) combs on every moving edge; it is the corpus's one
/// interlaced video. Most others show progressive motion; still or very short ones tell
/// nothing.
#[test]
fn the_corpus_interlaced_video_is_flagged_top_field_first_and_no_other() {
    let Some((_, rows)) = deep_rows() else {
        return;
    };
    let flagged: Vec<(&str, &serde_json::Value)> = rows
        .iter()
        .filter(|(_, r)| common::flag_codes(r).contains(&"interlaced".into()))
        .map(|(p, r)| (p.as_str(), &r["field_order"]))
        .collect();
    assert_eq!(
        flagged,
        [(
            "broken/fate_attachment631-small.mp4",
            &serde_json::json!("tff")
        )]
    );
    let progressive = rows
        .values()
        .filter(|r| r["field_order"] == "progressive")
        .count();
    assert!(progressive >= 30, "{progressive} progressive videos");
}
