//! Deep analysis runs FFmpeg in worker processes: a decoder that crashes, hangs or allocates
//! without end costs its file a row with the reason, and the run goes on. The faults are
//! injected by the `fault-injection` feature, on files named `framecull-fault-crash*`,
//! `-hang*` and `-alloc*`.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Instant;

use framecull::media::synth::{ImageKind, Pattern, VideoSpec};

fn clip(frames: u32) -> VideoSpec {
    let mut s = VideoSpec::new("libx264", 160, 96, 25, frames);
    s.pattern = Pattern::MovingBox { speed: 3 };
    s
}

/// What a row says about its own file (its duplicates depend on the other files).
fn measures(row: &serde_json::Value) -> serde_json::Value {
    let mut row = row.clone();
    let object = row.as_object_mut().unwrap();
    for key in ["id", "dup_group", "dup_exact_group"] {
        object.remove(key);
    }
    let flags = object["flags"].as_array().unwrap().clone();
    object["flags"] = flags
        .into_iter()
        .filter(|f| f["source"] != "duplicates")
        .collect();
    row
}

#[test]
fn a_crash_a_hang_and_a_runaway_allocation_each_cost_one_file_a_reason() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    // Pictures: their headers are read in this process, so the faults strike in the
    // analysis (the probes' faults are the next test's).
    common::image(d, "framecull-fault-crash.png", ImageKind::Png, 64, 48, None);
    common::image(d, "framecull-fault-hang.jpg", ImageKind::Jpeg, 64, 48, None);
    common::image(d, "framecull-fault-alloc.png", ImageKind::Png, 64, 48, None);
    common::video(d, "good.mp4", &clip(30));
    common::image(d, "good.jpg", ImageKind::Jpeg, 96, 64, None);
    let reference = tempfile::tempdir().unwrap();
    let faulted = tempfile::tempdir().unwrap();

    // The good files alone, for what they must look like.
    let alone = tempfile::tempdir().unwrap();
    for good in ["good.mp4", "good.jpg"] {
        std::fs::copy(d.join(good), alone.path().join(good)).unwrap();
    }
    let out = common::run(&[
        "scan",
        alone.path().to_str().unwrap(),
        "--deep",
        "--project",
        reference.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let expected = common::list_jsonl(reference.path());

    // The settings spell out the worker cap; a 1 GiB one refuses the runaway allocation
    // quickly.
    let text = std::fs::read_to_string(reference.path().join("framecull.toml")).unwrap();
    assert!(text.contains("max_memory_mib = 4096"), "{text}");
    std::fs::write(
        faulted.path().join("framecull.toml"),
        text.replace("max_memory_mib = 4096", "max_memory_mib = 1024"),
    )
    .unwrap();
    let project = faulted.path().to_str().unwrap();
    let out = common::run(&["scan", d.to_str().unwrap(), "--project", project]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let started = Instant::now();
    let out = common::run(&["analyze", "--project", project, "--file-timeout", "2"]);
    let elapsed = started.elapsed().as_secs_f64();
    let log = common::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{log}");
    // The hang is stopped at its budget (2 s) plus the grace (2 s), not at the default 300 s.
    assert!(elapsed < 60.0, "took {elapsed:.1} s\n{log}");

    let rows = common::list_jsonl(faulted.path());
    let reason = |path: &str| -> String {
        let flags = rows[path]["flags"].as_array().unwrap();
        let undecodable = flags
            .iter()
            .find(|f| f["code"] == "undecodable")
            .unwrap_or_else(|| panic!("{path}: no undecodable flag in {flags:?}"));
        undecodable["reason"].as_str().unwrap().to_string()
    };
    assert!(
        reason("framecull-fault-crash.png").contains("decoder crashed: signal 11 (SIGSEGV)"),
        "{}",
        reason("framecull-fault-crash.png")
    );
    assert!(
        reason("framecull-fault-hang.jpg").contains("timed out after 4 s"),
        "{}",
        reason("framecull-fault-hang.jpg")
    );
    assert!(
        reason("framecull-fault-alloc.png").contains("over the 1.0 GiB memory limit"),
        "{}",
        reason("framecull-fault-alloc.png")
    );
    for good in ["good.mp4", "good.jpg"] {
        assert_eq!(
            measures(&rows[good]),
            measures(&expected[good]),
            "{good} analysed beside the faults"
        );
    }

    // The reasons are recorded like any undecodable file's: a rerun keeps them.
    let out = common::run(&["analyze", "--project", project]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    assert_eq!(
        common::list_jsonl(faulted.path())["framecull-fault-crash.png"]["flags"],
        rows["framecull-fault-crash.png"]["flags"]
    );
}

/// Isolated and in-process analysis store the same results (`FRAMECULL_WORKER_EXE=` turns
/// the workers off).
#[test]
fn results_are_the_same_with_and_without_worker_processes() {
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let mut rows = Vec::new();
    for isolated in [true, false] {
        let project = tempfile::tempdir().unwrap();
        let mut command = common::bin();
        command
            .args(["scan", data.path().to_str().unwrap(), "--deep", "--project"])
            .arg(project.path())
            // Workers say at debug level that they serve (their stderr comes through).
            .env("FRAMECULL_LOG", "framecull=debug");
        if !isolated {
            command.env("FRAMECULL_WORKER_EXE", "");
        }
        let out = command.output().unwrap();
        let log = common::stderr(&out);
        assert!(out.status.code().unwrap() <= 1, "{log}");
        assert_eq!(log.contains("serving (protocol"), isolated, "{log}");
        let mut listed = common::list_jsonl(project.path());
        for row in listed.values_mut() {
            row.as_object_mut().unwrap().remove("id");
        }
        let catalog = framecull::catalog::Catalog::open(project.path()).unwrap();
        let mut tables: Vec<(String, Option<framecull::model::FrameTable>)> = catalog
            .items()
            .unwrap()
            .into_iter()
            .map(|i| (i.path, catalog.frame_table(i.id).unwrap()))
            .collect();
        tables.sort_by(|a, b| a.0.cmp(&b.0));
        rows.push((listed, tables));
    }
    assert_eq!(rows[0].0, rows[1].0);
    assert_eq!(rows[0].1, rows[1].1, "frame tables");
    assert!(
        rows[0]
            .1
            .iter()
            .any(|(_, t)| t.as_ref().is_some_and(|t| !t.frames.is_empty())),
        "frame tables stored"
    );
}

/// FFmpeg's probes run in workers too: a demuxer that crashes or hangs while a scan reads a
/// file's headers makes that file a row with status `error` and the reason; the scan goes on.
#[test]
fn a_probe_that_crashes_or_hangs_is_an_error_row_and_the_scan_goes_on() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    common::video(d, "framecull-fault-crash.mp4", &clip(10));
    common::video(d, "framecull-fault-hang.mkv", &clip(10));
    common::video(d, "good.mp4", &clip(10));
    common::image(d, "good.png", ImageKind::Png, 64, 48, None);
    let project = tempfile::tempdir().unwrap();
    let out = common::bin()
        .args([
            "scan",
            d.to_str().unwrap(),
            "--file-timeout",
            "2",
            "--project",
        ])
        .arg(project.path())
        .output()
        .unwrap();
    let log = common::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{log}");
    let rows = common::list_jsonl(project.path());
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows["framecull-fault-crash.mp4"]["status"], "error");
    assert_eq!(
        rows["framecull-fault-crash.mp4"]["error"],
        "decoder crashed: signal 11 (SIGSEGV)"
    );
    assert_eq!(rows["framecull-fault-hang.mkv"]["status"], "error");
    assert_eq!(
        rows["framecull-fault-hang.mkv"]["error"],
        "timed out after 4 s"
    );
    for good in ["good.mp4", "good.png"] {
        assert_eq!(rows[good]["status"], "ok", "{good}");
        assert!(rows[good]["width"].is_number(), "{good}");
    }
    assert_eq!(rows["good.mp4"]["frame_count"], 10);
}

/// Each window of `manifest` read one per batch, by clip path: its frames and output bytes;
/// and the load's error messages.
type Windows = std::collections::BTreeMap<String, (Vec<u64>, Vec<u8>)>;

fn windows_by_clip(
    manifest: &std::path::Path,
    config: framecull::loader::LoaderConfig,
) -> (Windows, Vec<String>) {
    use framecull::loader::Loader;
    // The manifest's paths, by row.
    let jsonl = std::fs::read_dir(manifest)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".jsonl"))
        .unwrap();
    let paths: Vec<String> = std::fs::read_to_string(jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["path"].to_string())
        .collect();
    let mut loader = Loader::open(manifest, None, config).unwrap();
    let batches: Vec<_> = loader.epoch(0).map(|b| b.unwrap()).collect();
    let mut windows = Windows::new();
    // A batch whose window failed is empty.
    for batch in batches.iter().filter(|b| !b.windows.is_empty()) {
        assert_eq!(batch.windows.len(), 1);
        let bytes = loader.to_host(batch).unwrap();
        windows.insert(
            paths[batch.windows[0].row].clone(),
            (batch.windows[0].frames.clone(), bytes),
        );
    }
    (windows, loader.stats().errors.clone())
}

/// The loader decodes in worker processes too: a decoder that crashes, hangs or allocates
/// without end while the loader reads a window costs that clip (skipped as corrupt, with the
/// reason), and every other window holds the frames and bytes an in-process load gives, on
/// the CPU path (preprocessed in the worker) and the GPU path's frames (preprocessed here).
#[test]
fn the_loader_skips_a_clip_whose_decoder_crashes_hangs_or_overallocates_and_reads_the_rest() {
    use framecull::loader::{Batching, DeviceChoice, LoaderConfig, Mode, Sampling, Timing};
    let data = tempfile::tempdir().unwrap();
    let d = data.path().join("data");
    let mut names = vec![];
    for (i, name) in [
        "good-a.mp4",
        "framecull-fault-crash.mp4",
        "good-b.mp4",
        "framecull-fault-hang.mp4",
        "framecull-fault-alloc.mp4",
    ]
    .into_iter()
    .enumerate()
    {
        let mut spec = clip(20 + 5 * i as u32);
        spec.pattern = Pattern::MovingBox {
            speed: 2 + i as u32,
        };
        common::video(&d, name, &spec);
        names.push(name);
    }
    // Scanned in this process (no workers, so no faults): the faults are the loader's.
    let project = data.path().join("project");
    let p = project.to_str().unwrap();
    let scanned = common::bin()
        .env("FRAMECULL_WORKER_EXE", "")
        .args(["scan", "--deep", d.to_str().unwrap(), "--project", p])
        .output()
        .unwrap();
    assert_eq!(
        scanned.status.code(),
        Some(0),
        "{}",
        common::stderr(&scanned)
    );
    let out = common::run(&[
        "export",
        "--name",
        "all",
        "--project",
        p,
        "--format",
        "jsonl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let manifest = project.join("manifests/all");

    let config = LoaderConfig {
        sampling: Sampling {
            clip_len: Some(8),
            max_frames: 8,
            timing: Timing::Stride(2),
            mode: Mode::Uniform,
            window_step: None,
        },
        batching: Batching {
            batch_size: 1,
            ..Batching::default()
        },
        device: DeviceChoice::Cpu,
        workers: 2,
        window_budget_secs: 2.0,
        worker_memory_mib: 1024,
        ..LoaderConfig::default()
    };
    let started = Instant::now();
    let (isolated, errors) = windows_by_clip(&manifest, config.clone());
    let elapsed = started.elapsed().as_secs_f64();
    // The hang is stopped at the window's budget (2 s) plus the grace (2 s).
    assert!(elapsed < 60.0, "took {elapsed:.1} s");
    let error = |name: &str| {
        errors
            .iter()
            .find(|e| e.contains(name))
            .unwrap_or_else(|| panic!("no error for {name} in {errors:?}"))
            .clone()
    };
    assert!(
        error("framecull-fault-crash").contains("decoder crashed: signal 11 (SIGSEGV)"),
        "{errors:?}"
    );
    assert!(
        error("framecull-fault-hang").contains("timed out after 4 s"),
        "{errors:?}"
    );
    assert!(
        error("framecull-fault-alloc").contains("over the 1.0 GiB memory limit"),
        "{errors:?}"
    );
    assert_eq!(errors.len(), 3, "{errors:?}");

    // In this process nothing is injected: the fault files read like the others, and the
    // good ones the same as in the workers.
    let in_process = LoaderConfig {
        isolate: false,
        ..config.clone()
    };
    let (expected, errors) = windows_by_clip(&manifest, in_process);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(expected.len(), names.len());
    let good: Vec<&String> = expected
        .keys()
        .filter(|id| !id.contains("framecull-fault"))
        .collect();
    assert_eq!(good.len(), 2, "{:?}", expected.keys());
    assert_eq!(
        isolated.keys().collect::<Vec<_>>(),
        good,
        "the good clips, and only they, were read in the workers"
    );
    for id in good {
        assert_eq!(isolated[id].0, expected[id].0, "{id}: frames");
        assert!(isolated[id].1 == expected[id].1, "{id}: bytes differ");
    }
}

/// The window's player and scrub strips read their pictures through a loader worker too: the
/// same pictures as decoded in this process, and a crash while opening a file is an error
/// with the reason, not the end of the window.
#[test]
fn the_players_pictures_come_from_a_worker_the_same_and_a_crash_is_an_error() {
    use framecull::loader::isolate::Pictures;
    use framecull::media::Source;
    let data = tempfile::tempdir().unwrap();
    let mut spec = clip(40);
    spec.rotation_deg = Some(90);
    let good = common::video(data.path(), "good.mp4", &spec);
    let crash = common::video(data.path(), "framecull-fault-crash.mp4", &clip(10));

    let mut worker = Pictures::open(&Source::File(good.clone()), 2).unwrap();
    assert!(worker.in_worker());
    let mut here = Pictures::open_here(&Source::File(good), 2).unwrap();
    assert!(!here.in_worker());
    assert_eq!(worker.timeline(), here.timeline());
    assert_eq!(worker.timeline().pts.len(), 40);
    // Forwards, backwards (a seek), rotated and fitted, as the player asks.
    for (index, turns, max) in [(0, 0, (960, 540)), (33, 1, (60, 60)), (7, 1, (960, 540))] {
        let (w, h, a) = worker.picture(index, turns, max, None).unwrap();
        let a = a.to_vec();
        let (w2, h2, b) = here.picture(index, turns, max, None).unwrap();
        assert_eq!((w, h), (w2, h2), "frame {index}");
        assert!(a == b, "frame {index}: the pictures differ");
        assert_eq!(a.len(), (w * h * 3) as usize);
    }
    assert!(worker.picture(40, 0, (960, 540), None).is_err());

    let err = Pictures::open(&Source::File(crash.clone()), 2)
        .err()
        .unwrap();
    assert!(
        err.contains("decoder crashed: signal 11 (SIGSEGV)"),
        "{err}"
    );
    // In this process nothing is injected: the file itself is fine.
    assert!(Pictures::open_here(&Source::File(crash), 2).is_ok());
}
