//! Clip files (`--materialize`): resumed after a stop or a kill, read by the loader, laid out.

use crate::common;

use framecull::manifest;

use super::video_with_clips;

/// Clip files (`export --materialize`, two at once) stopped by SIGTERM (exit 3) and by Ctrl-C
/// (SIGINT, exit 2) leave only whole clip files, and killed with SIGKILL leave at most a `.part`
/// file a thread; each rerun writes only the clips missing, and the last one leaves every
/// clip whole and no part file.
#[test]
fn stopped_or_killed_clip_files_resume_with_nothing_half_written() {
    const CLIPS: usize = 30;
    // Clips of 12 frames from mid-GOP: each one encoded (nothing to copy), so each takes a
    // while.
    let clips: Vec<(usize, usize)> = (0..CLIPS).map(|i| (3 + i * 13, 15 + i * 13)).collect();
    let (_data, proj) = video_with_clips("long.mp4", 320, 180, 400, &clips);
    let project = proj.path().to_str().unwrap();
    let dir = proj.path().join("clip-files");
    let clip_files = || -> (Vec<std::path::PathBuf>, usize) {
        let entries: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        let parts = entries
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".part"))
            .count();
        let whole = entries
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "mp4"))
            .collect();
        (whole, parts)
    };
    // Every clip file present holds its 12 frames.
    let all_whole = |files: &[std::path::PathBuf]| {
        for file in files {
            let frames = common::decoded_frames(file);
            assert_eq!(frames, 12, "{} is not whole", file.display());
        }
    };
    let materialize = || {
        let mut command = common::bin();
        command
            .args(["export", "--project", project, "--name", "cut"])
            .args(["--format", "jsonl", "--jobs", "2", "--materialize"])
            .arg(&dir);
        command
    };
    let mut interrupted = 0;
    for (run, signal) in ["TERM", "INT", "KILL"].into_iter().enumerate() {
        let mut child = materialize()
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for this run's first clip file, then signal.
        let before = clip_files().0.len();
        let started = std::time::Instant::now();
        while clip_files().0.len() <= before
            && child.try_wait().unwrap().is_none()
            && started.elapsed() < std::time::Duration::from_secs(120)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            crate::kill::send(signal, child.id());
        }
        let out = child.wait_with_output().unwrap();
        let (files, parts) = clip_files();
        all_whole(&files);
        match (signal, out.status.code()) {
            ("KILL", None) => {
                interrupted += 1;
                // One clip in flight on each of the two threads.
                assert!(parts <= 2, "{parts} part files after SIGKILL");
            }
            // Ctrl-C is the user's cancel (exit 2), SIGTERM a scheduler's (exit 3: retried), as
            // for every command (docs/CLI.md).
            ("INT", Some(2)) | ("TERM", Some(3)) => {
                interrupted += 1;
                assert_eq!(parts, 0, "a part file left by SIG{signal}");
                assert!(
                    common::stderr(&out).contains("clip files stopped"),
                    "{}",
                    common::stderr(&out)
                );
            }
            (_, Some(0)) => assert_eq!(files.len(), CLIPS),
            (_, code) => panic!("run {run} ended with {code:?}: {}", common::stderr(&out)),
        }
    }
    assert!(
        interrupted >= 2,
        "the runs finished before their signals; make the clips longer"
    );
    let out = materialize().arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let (files, parts) = clip_files();
    assert_eq!((files.len(), parts), (CLIPS, 0), "{report}");
    all_whole(&files);
    // The earlier runs' clips were kept, not written again.
    assert!(
        report["materialized"]["present"].as_u64().unwrap() >= 3,
        "{report}"
    );
}

/// The loader reads a materialized version's clip files (`clip_files`) as it reads their
/// sources: the same windows of the same clips, frame for frame (indices and times counted
/// from the clip's start), copied frames byte for byte and encoded ones close; a clip file
/// deleted is a missing file, counted and left out.
#[test]
fn the_loader_reads_a_versions_clip_files_as_their_sources() {
    use framecull::loader::preprocess::decode_elements;
    use framecull::loader::{
        Batching, Crop, DType, DeviceChoice, Layout, Loader, LoaderConfig, Mode, Sampling, Timing,
    };
    // Whole GOPs (copied), mid-GOP to mid-GOP over a GOP (smart cut), inside a GOP (encoded).
    let clips = [(25, 75), (10, 60), (80, 96)];
    let (_data, proj) = video_with_clips("cam.mp4", 192, 108, 150, &clips);
    let project = proj.path().to_str().unwrap();
    let dir = proj.path().join("clip-files");
    // A version with its clip files: the clip files written and present.
    let materialize = || {
        let out = common::run(&[
            "export",
            "--project",
            project,
            "--name",
            "cut",
            "--json",
            "--materialize",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
        let counts = |k: &str| report["materialized"][k].as_u64().unwrap();
        (counts("written"), counts("present"))
    };
    assert_eq!(materialize(), (3, 0));
    let manifest = proj.path().join("manifests/cut");
    let rows = manifest::open_path(&manifest).unwrap().1;
    assert_eq!(rows.len(), 3);
    let config = |clip_files| LoaderConfig {
        sampling: Sampling {
            clip_len: Some(8),
            timing: Timing::Stride(1),
            mode: Mode::All,
            ..Sampling::default()
        },
        batching: Batching {
            batch_size: 4,
            shuffle: false,
            ..Batching::default()
        },
        crop: Crop::Full,
        device: DeviceChoice::Cpu,
        workers: 1,
        clip_files,
        ..LoaderConfig::default()
    };
    // Each window's pixels by (clip, first frame from the clip's start), with its frames and
    // times from the clip's start.
    type Windows = std::collections::BTreeMap<(String, u64), (Vec<u64>, Vec<f64>, Vec<u8>)>;
    let windows = |clip_files: bool| -> (Windows, u64) {
        let mut config = config(clip_files);
        config.output.dtype = DType::U8;
        config.output.layout = Layout::Bthwc;
        config.output.width = 96;
        config.output.height = 54;
        let mut loader = Loader::open(&manifest, None, config).unwrap();
        let mut out = Windows::new();
        let frame = 96 * 54 * 3;
        for batch in loader.epoch(0).collect::<Vec<_>>() {
            let batch = batch.unwrap();
            let bytes: Vec<u8> = decode_elements(&loader.to_host(&batch).unwrap(), DType::U8)
                .into_iter()
                .map(|v| v as u8)
                .collect();
            let t = batch.shape[1];
            for (i, w) in batch.windows.iter().enumerate() {
                let row = &rows[w.row];
                let offset = if clip_files {
                    0
                } else {
                    row.start_frame.unwrap() as u64
                };
                let first = w.secs[0];
                let frames: Vec<u64> = w.frames.iter().map(|f| f - offset).collect();
                let secs: Vec<f64> = w.secs.iter().map(|s| s - first).collect();
                let pixels = bytes[i * t * frame..(i * t + w.frames.len()) * frame].to_vec();
                out.insert((w.clip_id.clone(), frames[0]), (frames, secs, pixels));
            }
        }
        let skipped = loader.stats().skipped_clips.values().sum::<u64>();
        (out, skipped)
    };
    let (sources, _) = windows(false);
    let (clips, skipped) = windows(true);
    assert_eq!(skipped, 0);
    assert_eq!(
        sources.keys().collect::<Vec<_>>(),
        clips.keys().collect::<Vec<_>>()
    );
    let mut identical = 0;
    for (key, (frames, secs, pixels)) in &sources {
        let (clip_frames, clip_secs, clip_pixels) = &clips[key];
        assert_eq!(frames, clip_frames, "{key:?}");
        for (a, b) in secs.iter().zip(clip_secs) {
            assert!((a - b).abs() < 1e-3, "{key:?}: {secs:?} {clip_secs:?}");
        }
        let mse = pixels
            .iter()
            .zip(clip_pixels)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
            .sum::<f64>()
            / pixels.len() as f64;
        let psnr = 10.0 * (255.0f64.powi(2) / mse.max(1e-12)).log10();
        assert!(psnr > 35.0, "{key:?}: {psnr:.1} dB");
        identical += usize::from(pixels == clip_pixels);
    }
    // The clip of whole GOPs was copied: its windows are the source's, byte for byte.
    let copied = rows.iter().find(|r| r.start_frame == Some(25)).unwrap();
    assert_eq!(copied.clip.copied_frames, Some(50), "{:?}", copied.clip);
    let whole = sources
        .keys()
        .filter(|(id, _)| *id == copied.clip_id)
        .count();
    assert!(
        identical >= whole,
        "{identical} identical windows, {whole} copied"
    );

    // A clip file deleted: its clip is a missing file, the others are read.
    std::fs::remove_file(dir.join(copied.clip.file.as_deref().unwrap())).unwrap();
    let (clips, skipped) = windows(true);
    assert_eq!(skipped, 1);
    assert!(clips.keys().all(|(id, _)| *id != copied.clip_id));
    // A version without clip files says so.
    let out = common::run(&["export", "--project", project, "--name", "plain"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let err = Loader::open(&proj.path().join("manifests/plain"), None, config(true))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("--materialize"), "{err}");

    // A ledger line a kill cut short: the next entry stands on a line of its own. The clip
    // deleted above is written again, then a run writes nothing.
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(".framecull-clips.jsonl"))
        .unwrap()
        .write_all(br#"{"clip_id":"cut sh"#)
        .unwrap();
    assert_eq!(materialize(), (1, 2));
    assert_eq!(materialize(), (0, 3));
}

/// Class folders and Hugging Face folders lay out clip files: without `--materialize` the
/// export is refused with that reason and writes no version; with it, each labelled clip is
/// a hard link to its clip file (the reading back is `python/tests/test_layouts.py`).
#[test]
fn class_and_hugging_face_folders_lay_out_the_clip_files() {
    let (_data, proj) = video_with_clips("v.mp4", 160, 96, 50, &[(2, 20), (25, 45)]);
    let project = proj.path().to_str().unwrap();
    let clips = proj.path().join("clip-files");
    // An export of `formats`, with `more` arguments.
    let export = |formats: &str, more: &[&str]| {
        let mut args = vec![
            "export",
            "--project",
            project,
            "--name",
            "x",
            "--format",
            formats,
        ];
        args.extend_from_slice(more);
        common::run(&args)
    };
    let materialize = ["--materialize", clips.to_str().unwrap()];
    for format in ["folders", "hf"] {
        let out = export(format, &[]);
        assert!(!out.status.success());
        let err = common::stderr(&out);
        assert!(
            err.starts_with("error:") && err.contains("add --materialize DIR"),
            "{err}"
        );
    }
    assert!(!proj.path().join("manifests/x/v0001.json").exists());
    let out = common::run(&["labels", "set", "walk", "v.mp4", "--project", project]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let out = export(
        "jsonl,folders,hf",
        &["--json", materialize[0], materialize[1]],
    );
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let dir = proj.path().join("manifests/x");
    for format in ["folders", "hf"] {
        let index: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(meta["files"][format].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        assert_eq!(index["linked"], 2, "{format}: {index}");
        assert_eq!(
            index["dir"],
            meta["files"][format!("{format}.dir")],
            "{index}"
        );
    }
    let folders = dir.join("v0001.folders/all/walk");
    let mut names: Vec<String> = std::fs::read_dir(&folders)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut clip_names: Vec<String> = std::fs::read_dir(&clips)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mp4"))
        .collect();
    clip_names.sort();
    assert_eq!(names, clip_names);
    // No temporary folder is left beside the version.
    assert!(
        std::fs::read_dir(&dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
    // The formats' indexes beside a version (vNNNN.folders.json, vNNNN.dali.json) are not
    // versions: the next export reads the versions and follows them.
    for formats in ["jsonl,dali,folders,hf", "jsonl"] {
        let out = export(formats, &materialize);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }
    assert!(dir.join("v0003.json").exists());
    let listed = common::run(&["manifests", "--project", project]);
    assert_eq!(listed.status.code(), Some(0), "{}", common::stderr(&listed));
}
