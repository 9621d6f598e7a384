//! The data loader end to end: a real dataset scanned and exported by the CLI, read back
//! through FFmpeg into batches. Determinism across worker counts, the GPU path on a software
//! adapter against the CPU path, sharding, bucketing, timestamp sampling on a
//! variable-frame-rate counter video, and files that went missing, changed or broke.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};

use framecull::loader::plan::padding_share;
use framecull::loader::preprocess::decode_elements;
use framecull::loader::{
    Batching, Crop, DType, DeviceChoice, Filter, Layout, Loader, LoaderConfig, Mode, OnError,
    Sampling, SkipReason, Timing,
};
use framecull::media::synth::{ImageKind, Pattern, VideoSpec};

struct Dataset {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    manifest: PathBuf,
}

/// Videos of several lengths, a rotated one, a variable-frame-rate counter, an EXIF-rotated
/// picture; scanned (deep) and exported with the CLI.
fn dataset() -> Dataset {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("data");
    for (i, frames) in [12u32, 20, 33, 47, 60, 75].iter().enumerate() {
        let mut spec = VideoSpec::new("libx264", 160, 120, 25, *frames);
        spec.pattern = Pattern::MovingBox {
            speed: 2 + i as u32,
        };
        common::video(&root, &format!("clips/c{i}.mp4"), &spec);
    }
    let mut rotated = VideoSpec::new("libx264", 192, 108, 30, 30);
    rotated.rotation_deg = Some(90);
    common::video(&root, "clips/rotated.mp4", &rotated);
    common::video(&root, "clips/counter_vfr.mp4", &counter_spec());
    common::image(&root, "stills/exif6.jpg", ImageKind::Jpeg, 96, 64, Some(6));
    common::image(&root, "stills/plain.png", ImageKind::Png, 50, 70, None);
    let project = tmp.path().join("project");
    let p = project.to_str().unwrap();
    let out = common::run(&["scan", "--deep", root.to_str().unwrap(), "--project", p]);
    assert!(
        out.status.code().unwrap() <= 1,
        "scan: {}",
        common::stderr(&out)
    );
    // The counter pattern is two levels of grey (`low_information`, a warning, which keeps
    // an unreviewed file out of an export): accepted.
    let out = common::run(&["review", "accept", "clips/counter_vfr.mp4", "--project", p]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "review: {}",
        common::stderr(&out)
    );
    let out = common::run(&[
        "export",
        "--name",
        "train",
        "--project",
        p,
        "--format",
        "parquet,jsonl",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "export: {}",
        common::stderr(&out)
    );
    let manifest = project.join("manifests/train");
    Dataset {
        _tmp: tmp,
        root,
        manifest,
    }
}

fn counter_spec() -> VideoSpec {
    let mut spec = VideoSpec::new("libx264", 128, 64, 30, 90);
    spec.pattern = Pattern::Counter;
    spec.vfr = true;
    spec.gop = 10;
    spec
}

fn config() -> LoaderConfig {
    LoaderConfig {
        sampling: Sampling {
            clip_len: Some(6),
            timing: Timing::Stride(2),
            mode: Mode::Random,
            ..Sampling::default()
        },
        batching: Batching {
            batch_size: 3,
            ..Batching::default()
        },
        crop: Crop::RandomResized {
            scale: [0.3, 1.0],
            ratio: [0.75, 1.333],
        },
        hflip: 0.5,
        seed: 7,
        device: DeviceChoice::Cpu,
        workers: 1,
        ..LoaderConfig::default()
    }
    .with_output(40, 32)
}

trait WithOutput {
    fn with_output(self, w: u32, h: u32) -> Self;
}

impl WithOutput for LoaderConfig {
    fn with_output(mut self, w: u32, h: u32) -> Self {
        self.output.width = w;
        self.output.height = h;
        self
    }
}

/// Every batch of one epoch: (shape, lengths, bytes).
fn read_all(loader: &mut Loader, epoch: u64) -> Vec<([usize; 5], Vec<u32>, Vec<u8>)> {
    let batches: Vec<_> = loader.epoch(epoch).map(|b| b.unwrap()).collect();
    batches
        .iter()
        .map(|b| (b.shape, b.lengths.clone(), loader.to_host(b).unwrap()))
        .collect()
}

#[test]
fn batches_are_identical_with_one_or_four_workers_and_differ_per_epoch() {
    let d = dataset();
    let mut one = Loader::open(&d.manifest, None, config()).unwrap();
    assert_eq!(one.clip_count(), 10);
    let a = read_all(&mut one, 0);
    let mut four = Loader::open(
        &d.manifest,
        None,
        LoaderConfig {
            workers: 4,
            ..config()
        },
    )
    .unwrap();
    let b = read_all(&mut four, 0);
    assert_eq!(a.len(), 4, "10 windows in batches of 3");
    assert!(a == b, "1 and 4 workers gave different batches");
    let stats = four.stats();
    assert_eq!(stats.windows, 10);
    assert!(stats.skipped_windows.is_empty(), "{:?}", stats.errors);
    // The next epoch draws other windows and augmentations.
    let c = read_all(&mut four, 1);
    assert!(a != c);
    // Shapes and real lengths: 6 frames per window, the pictures 1.
    assert_eq!(a[0].0[1..], [6, 3, 32, 40]);
    let lengths: Vec<u32> = a.iter().flat_map(|x| x.1.clone()).collect();
    assert_eq!(
        lengths.iter().filter(|&&l| l == 1).count(),
        2,
        "{lengths:?}"
    );
}

#[test]
fn gpu_path_matches_cpu_path_on_a_software_adapter() {
    let d = dataset();
    let probe = Loader::open(
        &d.manifest,
        None,
        LoaderConfig {
            device: DeviceChoice::Gpu,
            ..config()
        },
    );
    let Ok(mut gpu) = probe else {
        if std::env::var_os("FRAMECULL_REQUIRE_GPU").is_some() {
            panic!("no wgpu adapter, and FRAMECULL_REQUIRE_GPU is set");
        }
        eprintln!("SKIPPED: no wgpu adapter (install mesa-vulkan-drivers for lavapipe)");
        return;
    };
    eprintln!("gpu: {}", gpu.device());
    for (dtype, layout, filter) in [
        (DType::F32, Layout::Bcthw, Filter::Bilinear),
        (DType::F16, Layout::Bthwc, Filter::Area),
        (DType::U8, Layout::Bcthw, Filter::Area),
    ] {
        let mut cfg = config();
        cfg.output.dtype = dtype;
        cfg.output.layout = layout;
        cfg.output.filter = filter;
        let mut cpu = Loader::open(&d.manifest, None, cfg.clone()).unwrap();
        gpu = Loader::open(
            &d.manifest,
            None,
            LoaderConfig {
                device: DeviceChoice::Gpu,
                ..cfg
            },
        )
        .unwrap();
        let (a, b) = (read_all(&mut cpu, 0), read_all(&mut gpu, 0));
        assert_eq!(a.len(), b.len());
        let tolerance = match dtype {
            DType::F32 => 1.0 / 255.0,
            DType::F16 => 1.0 / 255.0 + 0.004,
            DType::U8 => 1.0,
        };
        let mut worst = 0.0f32;
        for ((sa, la, ba), (sb, lb, bb)) in a.iter().zip(&b) {
            assert_eq!((sa, la), (sb, lb));
            let (va, vb) = (decode_elements(ba, dtype), decode_elements(bb, dtype));
            assert_eq!(va.len(), vb.len());
            for (x, y) in va.iter().zip(&vb) {
                worst = worst.max((x - y).abs());
            }
        }
        eprintln!("{dtype:?} {layout:?} {filter:?}: max |gpu - cpu| = {worst}");
        assert!(worst <= tolerance, "{dtype:?}: {worst} > {tolerance}");
    }
}

#[test]
fn shards_cover_every_window_once_and_bucketing_limits_padding() {
    let d = dataset();
    let mut seen = Vec::new();
    for rank in 0..3 {
        let mut cfg = config();
        cfg.batching.rank = rank;
        cfg.batching.world_size = 3;
        let loader = Loader::open(&d.manifest, None, cfg).unwrap();
        for batch in loader.plan(2) {
            seen.extend(batch.samples.iter().map(|s| s.clip));
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..10).collect::<Vec<u32>>());

    // Whole clips (variable length): bucketed batches carry less padding than plain ones.
    let mut cfg = config();
    cfg.sampling = Sampling {
        clip_len: None,
        max_frames: 80,
        timing: Timing::Stride(1),
        mode: Mode::Uniform,
        window_step: None,
    };
    cfg.batching.batch_size = 2;
    cfg.batching.bucket = false;
    let plain = padding_share(
        &Loader::open(&d.manifest, None, cfg.clone())
            .unwrap()
            .plan(0),
    );
    cfg.batching.bucket = true;
    let mut loader = Loader::open(&d.manifest, None, cfg).unwrap();
    let bucketed = padding_share(&loader.plan(0));
    eprintln!("padding share: plain {plain:.3}, bucketed {bucketed:.3}");
    assert!(bucketed < 0.25 && bucketed < plain, "{bucketed} vs {plain}");
    // And the batches really come out with those lengths.
    let batches = read_all(&mut loader, 0);
    for (shape, lengths, _) in &batches {
        assert_eq!(shape[1], *lengths.iter().max().unwrap() as usize);
    }
}

/// The counter video's frame index, read from the top half's 8 blocks (u8, HWC, RGB).
fn counter_value(pixels: &[f32], width: usize) -> u32 {
    (0..8).fold(0, |acc, k| {
        let x = k * width / 8 + width / 16;
        let y = 8;
        let red = pixels[(y * width + x) * 3];
        (acc << 1) | u32::from(red > 128.0)
    })
}

#[test]
fn fps_sampling_picks_frames_by_timestamp_on_a_variable_frame_rate_video() {
    let d = dataset();
    let path = d.root.join("clips/counter_vfr.mp4");
    let (pts, tb) =
        framecull::media::decode::frame_timestamps(&path.as_path().into(), Default::default())
            .unwrap();
    assert_eq!(pts.len(), 90);
    let mut cfg = config();
    cfg.split = None;
    cfg.sampling = Sampling {
        clip_len: Some(20),
        max_frames: 20,
        timing: Timing::Fps(12.0),
        mode: Mode::All,
        window_step: None,
    };
    cfg.crop = Crop::Full;
    cfg.hflip = 0.0;
    cfg.output.dtype = DType::U8;
    cfg.output.layout = Layout::Bthwc;
    cfg.output = framecull::loader::OutputSpec {
        width: 128,
        height: 64,
        ..cfg.output
    };
    cfg.batching = Batching {
        batch_size: 1,
        shuffle: false,
        ..Batching::default()
    };
    let mut loader = Loader::open(&d.manifest, None, cfg).unwrap();
    let (_, rows) = framecull::manifest::open_path(&d.manifest).unwrap();
    let counter_id = rows
        .iter()
        .find(|r| r.path.ends_with("counter_vfr.mp4"))
        .unwrap()
        .clip_id
        .clone();
    let mut checked = 0;
    let batches: Vec<_> = loader.epoch(0).map(|b| b.unwrap()).collect();
    for batch in &batches {
        if batch.clip_ids != [counter_id.clone()] {
            continue;
        }
        let bytes = loader.to_host(batch).unwrap();
        let values = decode_elements(&bytes, DType::U8);
        let frame_len = 64 * 128 * 3;
        let seen: Vec<u32> = (0..batch.lengths[0] as usize)
            .map(|t| counter_value(&values[t * frame_len..(t + 1) * frame_len], 128))
            .collect();
        // Expected: the frame on screen at 0, 1/12, 2/12, ... s from the first frame.
        let t0 = pts[0] as f64 * tb.as_f64();
        let window_start = checked as f64 * 20.0 / 12.0;
        let expected: Vec<u32> = (0..seen.len())
            .map(|k| {
                let t = t0 + window_start + k as f64 / 12.0;
                (pts.partition_point(|&p| p as f64 * tb.as_f64() <= t + 1e-9) - 1) as u32
            })
            .collect();
        assert_eq!(seen, expected, "window {checked}");
        checked += 1;
    }
    // 90 frames with every third doubled last 4 s: at 12 fps, 20-frame windows start at 0 and 1.67 s.
    assert!(checked >= 2, "only {checked} counter windows");
}

fn truncate_half(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
}

#[test]
fn missing_changed_and_broken_files_are_skipped_and_counted_or_fail_by_setting() {
    let d = dataset();
    std::fs::remove_file(d.root.join("clips/c0.mp4")).unwrap();
    truncate_half(&d.root.join("clips/c5.mp4"));
    let whole = Sampling {
        clip_len: Some(75),
        max_frames: 75,
        timing: Timing::Stride(1),
        mode: Mode::Uniform,
        window_step: None,
    };
    let mut cfg = LoaderConfig {
        sampling: whole,
        ..config()
    };
    let mut loader = Loader::open(&d.manifest, None, cfg.clone()).unwrap();
    let s = loader.stats();
    assert_eq!(s.skipped_clips.get(&SkipReason::Missing), Some(&1));
    assert_eq!(s.skipped_clips.get(&SkipReason::Changed), Some(&1));
    assert_eq!(loader.clip_count(), 8);
    let n = loader.epoch(0).inspect(|b| assert!(b.is_ok())).count();
    assert_eq!(n, 3);

    // Without the fingerprint check the truncated file is read, and its missing frames
    // fail its window only.
    cfg.verify_fingerprints = false;
    let mut loader = Loader::open(&d.manifest, None, cfg.clone()).unwrap();
    assert_eq!(loader.clip_count(), 9);
    let rows: usize = loader.epoch(0).map(|b| b.unwrap().lengths.len()).sum();
    let s = loader.stats();
    assert_eq!(
        s.skipped_windows.get(&SkipReason::Corrupt),
        Some(&1),
        "{:?}",
        s.errors
    );
    assert_eq!(rows, 8);
    assert!(
        s.errors.iter().any(|e| e.contains("c5.mp4")),
        "{:?}",
        s.errors
    );

    // Fail mode: a clear error naming the file, at open for a missing file...
    cfg.on_error = OnError::Fail;
    let err = Loader::open(&d.manifest, None, cfg.clone())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("c0.mp4"), "{err}");
    // ...and while reading for a broken one.
    common::video(
        &d.root,
        "clips/c0.mp4",
        &VideoSpec::new("libx264", 160, 120, 25, 12),
    );
    let mut loader = Loader::open(&d.manifest, None, cfg).unwrap();
    let errors: Vec<String> = loader
        .epoch(0)
        .filter_map(Result::err)
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("c5.mp4"), "{errors:?}");
}

#[test]
fn load_bench_reports_stages_and_a_checksum_that_repeats() {
    let d = dataset();
    let m = d.manifest.to_str().unwrap();
    let run = |workers: &str| {
        let out = common::run(&[
            "load-bench",
            m,
            "--device",
            "cpu",
            "--workers",
            workers,
            "--batches",
            "0",
            "--clip-len",
            "4",
            "--size",
            "32x32",
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
        v
    };
    let (a, b) = (run("1"), run("3"));
    assert_eq!(a["checksum"], b["checksum"]);
    assert_eq!(a["frames"], b["frames"]);
    for key in [
        "decode_secs",
        "preprocess_secs",
        "wait_secs",
        "frames_per_sec",
        "peak_rss_bytes",
    ] {
        assert!(a[key].as_f64().unwrap() > 0.0, "{key}: {a}");
    }
    assert!(a["device"].as_str().unwrap().starts_with("cpu"));
    // The windows were decoded in worker processes (the binary runs itself), one per decode
    // worker that got a window.
    assert_eq!(a["worker_processes"], 1, "{a}");
    assert!(
        (1..=3).contains(&b["worker_processes"].as_u64().unwrap()),
        "{b}"
    );
}

#[test]
fn the_frame_cache_serves_later_runs_without_decoding_and_the_same_bytes() {
    let d = dataset();
    let cache = framecull::loader::CacheConfig {
        dir: d.root.parent().unwrap().join("cache"),
        short_side: 48,
    };
    let cfg = LoaderConfig {
        cache: Some(cache),
        workers: 2,
        ..config()
    };
    let mut cold = Loader::open(&d.manifest, None, cfg.clone()).unwrap();
    let a = read_all(&mut cold, 0);
    assert_eq!(cold.stats().cache_fills, 10, "{:?}", cold.stats().errors);
    assert!(cold.stats().frames_decoded > 0);
    let mut warm = Loader::open(&d.manifest, None, cfg).unwrap();
    let b = read_all(&mut warm, 0);
    let s = warm.stats();
    assert_eq!((s.cache_hits, s.cache_fills, s.frames_decoded), (10, 0, 0));
    assert!(a == b, "a warm cache changed the batches");
    // Later epochs draw other windows from the same cached clips.
    let c = read_all(&mut warm, 1);
    assert!(c != a);
    assert_eq!(warm.stats().frames_decoded, 0);
}

/// A frame cache that cannot be written (a full disk; here a file-size limit, RLIMIT_FSIZE)
/// ends the run with one error that says so, exit 2, instead of skipping clip after clip;
/// no partial cache file stays, and a run without the limit fills the cache.
#[test]
fn a_frame_cache_that_cannot_be_written_stops_the_run_with_one_error() {
    let d = dataset();
    let cache = d.root.parent().unwrap().join("cache");
    let run = |limit: Option<u64>| {
        common::bin_with_file_size_limit(limit)
            .args([
                "load-bench",
                d.manifest.to_str().unwrap(),
                "--device",
                "cpu",
            ])
            .args(["--batches", "0", "--clip-len", "4", "--size", "32x32"])
            .arg("--cache")
            .arg(&cache)
            .output()
            .expect("prlimit (util-linux)")
    };
    let out = run(Some(4096));
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the frame cache cannot be written") && err.contains("File too large"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "partial cache files left: {left:?}");

    let out = run(None);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(std::fs::read_dir(&cache).unwrap().count() > 0);
}

/// `crop = "content"` crops inside a letterboxed video's content (no bar row reaches the
/// batch), where the centre crop keeps the bars; on a video without bars it is the centre
/// crop, byte for byte.
#[test]
fn the_content_crop_leaves_letterbox_bars_out_of_the_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("data");
    std::fs::create_dir_all(&root).unwrap();
    let footage = "testsrc2=size=640x360:rate=25,noise=alls=12:allf=t";
    for (name, graph) in [
        ("boxed.mp4", format!("{footage},pad=640:480:0:60:black")),
        ("plain.mp4", footage.to_string()),
    ] {
        let out = root.join(name);
        let out = out.to_str().unwrap();
        common::ffmpeg(&[
            "-f", "lavfi", "-i", &graph, "-t", "1", "-pix_fmt", "yuv420p", out,
        ]);
    }
    let project = tmp.path().join("project");
    let p = project.to_str().unwrap();
    let out = common::run(&["scan", "--deep", root.to_str().unwrap(), "--project", p]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    for name in ["boxed.mp4", "plain.mp4"] {
        let out = common::run(&["review", "accept", name, "--project", p]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }
    let out = common::run(&["export", "--name", "x", "--project", p, "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let manifest = project.join("manifests/x");
    let (_, rows) = framecull::manifest::open_path(&manifest).unwrap();
    let crop_of = |name: &str| {
        let row = rows.iter().find(|r| r.path == name).unwrap();
        (row.clip_id.clone(), row.content_crop.clone())
    };
    let (boxed, boxed_crop) = crop_of("boxed.mp4");
    let (plain, plain_crop) = crop_of("plain.mp4");
    assert!(
        boxed_crop.is_some_and(|c| c.ends_with(":0:64")),
        "content_crop"
    );
    assert_eq!(plain_crop, None);
    // Square frames of each clip, by clip id.
    let frames = |crop: Crop| {
        let mut cfg = LoaderConfig {
            sampling: Sampling {
                clip_len: Some(4),
                timing: Timing::Stride(5),
                mode: Mode::Uniform,
                ..Sampling::default()
            },
            batching: Batching {
                batch_size: 1,
                shuffle: false,
                ..Batching::default()
            },
            crop,
            split: None,
            device: DeviceChoice::Cpu,
            workers: 1,
            ..LoaderConfig::default()
        }
        .with_output(64, 64);
        cfg.output.dtype = DType::U8;
        cfg.output.layout = Layout::Bthwc;
        let mut loader = Loader::open(&manifest, None, cfg).unwrap();
        let batches: Vec<_> = loader.epoch(0).map(|b| b.unwrap()).collect();
        batches
            .iter()
            .map(|b| (b.clip_ids[0].clone(), loader.to_host(b).unwrap()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (center, content) = (frames(Crop::Center), frames(Crop::Content));
    // The mean of a frame's top and bottom output rows, each frame of a batch.
    let edge_rows = |bytes: &[u8]| -> Vec<f64> {
        let (row, frame) = (64 * 3, 64 * 64 * 3);
        bytes
            .chunks_exact(frame)
            .flat_map(|f| [&f[..row], &f[frame - row..]])
            .map(|r| r.iter().map(|&v| f64::from(v)).sum::<f64>() / r.len() as f64)
            .collect()
    };
    assert!(
        edge_rows(&center[&boxed]).iter().all(|&m| m < 20.0),
        "the centre crop keeps the bars"
    );
    let inside = edge_rows(&content[&boxed]);
    assert!(
        inside.iter().all(|&m| m > 40.0),
        "a bar row in the content crop: {inside:?}"
    );
    assert_eq!(content[&plain], center[&plain]);
}
