//! Validation against the real-world corpus in `../shared/media` and its ffprobe / Pillow
//! ground truth. Skips, with a message, when the corpus is absent.

#![allow(clippy::unwrap_used)]

mod common;

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
