//! Deep analysis runs FFmpeg in worker processes: a decoder that crashes, hangs or allocates
//! without end costs its file a row with the reason, and the run goes on. The faults are
//! injected where `FRAMECULL_FAULT_INJECTION=1` (`common::bin` sets it; in this process,
//! `inject_faults_in_workers`), on files named `framecull-fault-crash*`, `-hang*` and
//! `-alloc*`.

#![allow(clippy::unwrap_used)]

use crate::common;

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

/// Fault injection is a switch of every build, off unless set: without it, a file named as a
/// fault is an ordinary file, probed and analysed as any other.
#[test]
fn without_the_switch_a_file_named_as_a_fault_is_an_ordinary_file() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    common::image(d, "framecull-fault-crash.png", ImageKind::Png, 64, 48, None);
    common::video(d, "framecull-fault-hang.mp4", &clip(10));
    let project = tempfile::tempdir().unwrap();
    let out = common::bin()
        .env_remove(framecull::model::FAULTS_ENV)
        .args(["scan", d.to_str().unwrap(), "--deep", "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let rows = common::list_jsonl(project.path());
    assert_eq!(rows["framecull-fault-crash.png"]["status"], "ok");
    assert_eq!(rows["framecull-fault-crash.png"]["width"], 64);
    assert_eq!(rows["framecull-fault-hang.mp4"]["status"], "ok");
    assert_eq!(rows["framecull-fault-hang.mp4"]["frame_count"], 10);
    for row in rows.values() {
        let flags = row["flags"].as_array().unwrap();
        assert!(
            flags.iter().all(|f| f["code"] != "undecodable"),
            "{flags:?}"
        );
    }
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

/// `scan --deep` probes and analyses on the same worker processes: they start once (each
/// start loads FFmpeg's libraries, about 40 ms of CPU), not once for the probes and again for
/// the analysis. A crash costs at most one start more (the next file's, if its worker has
/// one): a file whose probe crashed is analysed too and crashes again (once more on one
/// decoder thread where it had two), and the worker started after the probe's (by a probing
/// thread, which ends with the scan) serves the analysis as well.
#[test]
fn a_deep_scan_starts_its_workers_once() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    for i in 0..4 {
        common::video(d, &format!("v{i}.mp4"), &clip(10));
    }
    common::image(d, "p.png", ImageKind::Png, 64, 48, None);
    let deep_scan = |status: i32, crashes: std::ops::RangeInclusive<usize>| {
        let project = tempfile::tempdir().unwrap();
        let out = common::bin()
            .args(["scan", d.to_str().unwrap(), "--deep", "--jobs", "2"])
            .args(["--log", "framecull_media=debug,framecull_scan=warn"])
            .arg("--project")
            .arg(project.path())
            .output()
            .unwrap();
        let log = common::stderr(&out);
        assert_eq!(out.status.code(), Some(status), "{log}");
        // The analysis on two decoder threads, if the file gets them, crashes once more
        // on one.
        let crashed = log.matches("decoder crashed").count();
        assert!(crashes.contains(&crashed), "{crashed} crashes:\n{log}");
        let started = log.matches("started a scan worker").count();
        assert!(
            (1..=2 + crashed).contains(&started),
            "{started} workers started, {crashed} crashes:\n{log}"
        );
        let rows = common::list_jsonl(project.path());
        for i in 0..4 {
            let row = &rows[format!("v{i}.mp4").as_str()];
            assert_eq!(row["decoded_frames"], 10, "{row}");
            // Byte-identical clips: duplicates, no decode failure.
            assert!(!row["flags"].to_string().contains("undecodable"), "{row}");
        }
        assert_eq!(rows["p.png"]["decoded_frames"], 1, "{rows:?}");
        rows
    };
    deep_scan(0, 0..=0);

    // With a file that crashes its worker, in the probe and again in the analysis: at most
    // one start more each time, every other file analysed.
    common::video(d, "framecull-fault-crash.mp4", &clip(10));
    let rows = deep_scan(1, 2..=3);
    assert_eq!(
        rows["framecull-fault-crash.mp4"]["error"],
        "decoder crashed: signal 11 (SIGSEGV)"
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

/// Windows of `frames` frames (every other one), one a batch, on the CPU path, two threads.
fn one_window_a_batch(frames: u32) -> framecull::loader::LoaderConfig {
    use framecull::loader::{Batching, DeviceChoice, LoaderConfig, Mode, Sampling, Timing};
    LoaderConfig {
        sampling: Sampling {
            clip_len: Some(frames),
            max_frames: frames,
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
        ..LoaderConfig::default()
    }
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
    windows_of(Loader::open(manifest, None, config).unwrap(), &paths)
}

/// Each window of `loader`'s first epoch, read one per batch, by its row's path in `paths`.
fn windows_of(mut loader: framecull::loader::Loader, paths: &[String]) -> (Windows, Vec<String>) {
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
    framecull::media::isolate::inject_faults_in_workers();
    use framecull::loader::LoaderConfig;
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
        window_budget_secs: 2.0,
        worker_memory_mib: 1024,
        ..one_window_a_batch(8)
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
    framecull::media::isolate::inject_faults_in_workers();
    use framecull::media::Source;
    use framecull::media::pictures::Pictures;
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
        .unwrap()
        .to_string();
    assert!(
        err.contains("decoder crashed: signal 11 (SIGSEGV)"),
        "{err}"
    );
    // In this process nothing is injected: the file itself is fine.
    assert!(Pictures::open_here(&Source::File(crash), 2).is_ok());
}

/// FFmpeg's work on objects in a bucket (moto's S3 server on 127.0.0.1) runs in worker
/// processes too: a decoder that crashes on an object costs its row (the scan) and its windows
/// (the loader) the reason, the requests the workers make are the scan's requests, a store
/// opened with settings of its own (the library's `Root`) is opened so in the workers, and the
/// good objects read (scan, loader, the player's pictures) as they do in this process.
#[test]
fn a_decoder_crash_on_an_object_in_a_bucket_costs_its_file_a_reason_too() {
    framecull::media::isolate::inject_faults_in_workers();
    use framecull::loader::{Loader, LoaderConfig};
    let Some(moto) = common::s3::moto_server() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    for (i, name) in [
        "good-a.mp4",
        "framecull-fault-crash.mp4",
        "good b, é #1.mp4",
    ]
    .into_iter()
    .enumerate()
    {
        let mut spec = clip(16 + 4 * i as u32);
        spec.pattern = Pattern::MovingBox {
            speed: 2 + i as u32,
        };
        common::video(data.path(), name, &spec);
    }
    let server = common::s3::Server::start(&moto, None);
    server.upload(data.path(), "faults", "set", false);
    let url = "s3://faults/set";
    let scan = |project: &std::path::Path, workers: bool| {
        let mut cmd = common::s3::framecull(&server, "test");
        if !workers {
            cmd.env("FRAMECULL_WORKER_EXE", "");
        }
        let out = cmd
            .args(["scan", url, "--deep", "--json", "--project"])
            .arg(project)
            .output()
            .unwrap();
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("scan --json: {e}: {}", common::stderr(&out)));
        (out.status.code(), summary["requests"].clone())
    };

    // In workers: the crash is its object's reason, and the workers' requests are counted.
    let isolated = tempfile::tempdir().unwrap();
    let (code, requests) = scan(isolated.path(), true);
    assert_eq!(code, Some(1), "{requests}");
    let rows = common::list_jsonl(isolated.path());
    assert_eq!(rows["framecull-fault-crash.mp4"]["status"], "error");
    assert_eq!(
        rows["framecull-fault-crash.mp4"]["error"],
        "decoder crashed: signal 11 (SIGSEGV)"
    );

    // In this process nothing is injected: every object reads, the good ones as in workers.
    let here = tempfile::tempdir().unwrap();
    let (code, here_requests) = scan(here.path(), false);
    assert_eq!(code, Some(0), "{here_requests}");
    // The same requests, counted in the workers, but the crashed object's analysis (which
    // would have read it whole once more).
    let crashed = std::fs::metadata(data.path().join("framecull-fault-crash.mp4"))
        .unwrap()
        .len();
    let count = |r: &serde_json::Value, kind: &str| r[kind].as_u64().unwrap();
    assert_eq!(count(&requests, "get") + 1, count(&here_requests, "get"));
    assert_eq!(
        count(&requests, "bytes_read") + crashed,
        count(&here_requests, "bytes_read"),
        "{requests} {here_requests}"
    );
    let here_rows = common::list_jsonl(here.path());
    for good in ["good-a.mp4", "good b, é #1.mp4"] {
        assert_eq!(rows[good]["status"], "ok", "{good}");
        assert_eq!(measures(&rows[good]), measures(&here_rows[good]), "{good}");
    }

    // The loader, from the bucket through a store opened with its own settings: the crash
    // costs that clip's windows, the others hold what an in-process load reads.
    let out = common::run(&[
        "export",
        "--name",
        "all",
        "--format",
        "jsonl",
        "--project",
        here.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let (_, manifest_rows) =
        framecull::manifest::open_path(&here.path().join("manifests/all")).unwrap();
    let paths: Vec<String> = manifest_rows.iter().map(|r| r.path.clone()).collect();
    let config = one_window_a_batch(4);
    let load = |config: LoaderConfig| {
        let loader = Loader::from_rows(&manifest_rows, &server.root(url), config).unwrap();
        windows_of(loader, &paths)
    };
    let (isolated, errors) = load(config.clone());
    assert!(
        errors.len() == 1 && errors[0].contains("decoder crashed: signal 11 (SIGSEGV)"),
        "{errors:?}"
    );
    assert!(
        errors[0].contains("framecull-fault-crash.mp4"),
        "{errors:?}"
    );
    let (expected, errors) = load(LoaderConfig {
        isolate: false,
        ..config
    });
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(expected.len(), 3);
    let good: Vec<&String> = expected.keys().filter(|p| p.starts_with("good")).collect();
    assert_eq!(isolated.keys().collect::<Vec<_>>(), good);
    for path in good {
        assert_eq!(isolated[path].0, expected[path].0, "{path}: frames");
        assert!(isolated[path].1 == expected[path].1, "{path}: bytes differ");
    }

    // The player's pictures of an object: from a worker, the same as decoded here.
    use framecull::media::Source;
    use framecull::media::pictures::Pictures;
    let root = server.root(url);
    let object = |name: &str| {
        let size = std::fs::metadata(data.path().join(name)).unwrap().len();
        Source::in_root(&root, name, size)
    };
    let mut worker = Pictures::open(&object("good b, é #1.mp4"), 2).unwrap();
    assert!(worker.in_worker());
    let mut here = Pictures::open_here(&object("good b, é #1.mp4"), 2).unwrap();
    assert_eq!(worker.timeline().pts, here.timeline().pts);
    for index in [0, 5, 23] {
        let (w, h, a) = worker.picture(index, 1, (320, 320), None).unwrap();
        let a = a.to_vec();
        let (w2, h2, b) = here.picture(index, 1, (320, 320), None).unwrap();
        assert_eq!((w, h), (w2, h2));
        assert!(a == b, "picture {index} differs");
    }
    let err = Pictures::open(&object("framecull-fault-crash.mp4"), 2)
        .err()
        .expect("a crash on open is an error")
        .to_string();
    assert!(err.contains("decoder crashed"), "{err}");
}

/// A worker of another build (FRAMECULL_WORKER_EXE naming a stale binary) is refused with
/// what it is and what this build is, and the work runs in this process, with the same rows
/// as through this build's workers; an unknown service is an error.
#[test]
fn a_stale_worker_is_refused_by_name_and_the_work_runs_here() {
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let stale = tempfile::tempdir().unwrap();
    let exe = stale.path().join("framecull");
    std::fs::write(
        &exe,
        "#!/bin/sh\necho '{\"service\":\"scan\",\"protocol\":5,\"version\":\"0.0.1 (0123456789ab)\"}'\ncat > /dev/null\n",
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut rows = Vec::new();
    for worker in [Some(exe.as_path()), None] {
        let project = tempfile::tempdir().unwrap();
        let mut command = common::bin();
        command
            .args(["scan", data.path().to_str().unwrap(), "--deep", "--project"])
            .arg(project.path());
        if let Some(worker) = worker {
            command.env("FRAMECULL_WORKER_EXE", worker);
        }
        let out = command.output().unwrap();
        let log = common::stderr(&out);
        assert!(out.status.code().unwrap() <= 1, "{log}");
        let refused = format!(
            "{} is not this build's worker: it is framecull 0.0.1 (0123456789ab), scan worker \
             protocol 5, this build framecull {}",
            exe.display(),
            framecull::model::VERSION
        );
        assert_eq!(log.contains(&refused), worker.is_some(), "{log}");
        assert_eq!(
            log.contains("FFmpeg runs in this process"),
            worker.is_some(),
            "{log}"
        );
        let mut listed = common::list_jsonl(project.path());
        for row in listed.values_mut() {
            row.as_object_mut().unwrap().remove("id");
        }
        rows.push(listed);
    }
    assert_eq!(rows[0], rows[1]);
    assert!(rows[0].values().any(|r| r["motion_mean"].is_number()));

    let out = common::run(&["worker", "nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains(
            "error: no worker service \"nosuch\" (this build runs pictures, scan, loader)"
        ),
        "{}",
        common::stderr(&out)
    );
}
