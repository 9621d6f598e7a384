//! `load`: the data loader's CPU path on a manifest of generated clips (720p H.264, or 4K
//! H.264 and 10-bit HEVC with `--uhd`), against `ffmpeg -threads 2 -f null` and PyAV (frame
//! threading) plus a numpy resize and normalisation over the same frames.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context;
use framecull::catalog::Catalog;
use framecull::media::synth::{self, Pattern};
use framecull::scan::ScanOptions;
use serde::Serialize;

use crate::scan::scan_once;
use crate::util::{ffmpeg_null, median, peak_rss_mb, print, run_python};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to generate the clips and their project (kept between runs).
    #[arg(long, default_value = "/tmp/framecull-bench-load")]
    dir: PathBuf,
    #[arg(long, default_value_t = 8)]
    clips: usize,
    /// Frames per clip (30 fps; a multiple of 16 so windows cover every frame; default 320,
    /// 96 with `--uhd`). Kept clips with another count are generated again.
    #[arg(long)]
    frames: Option<u32>,
    /// Loader workers (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// 4K sources instead: one 3840x2160 H.264 clip and one 10-bit HEVC clip (`--clips`
    /// is then 2).
    #[arg(long)]
    uhd: bool,
    /// Python with PyAV and numpy (the peers venv); skipped when absent.
    #[arg(long, default_value = "/tmp/peers-venv/bin/python")]
    python: PathBuf,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let source = if args.uhd {
        LoadSource::Uhd
    } else {
        LoadSource::Hd(args.clips)
    };
    let r = bench_load(
        &args.dir,
        source,
        args.frames.unwrap_or(if args.uhd { 96 } else { 320 }),
        args.workers,
        &args.python,
        args.repeat.max(1),
    )?;
    print(&r, args.json, || r.text())
}

#[derive(Serialize)]
struct LoadBench {
    source: String,
    clips: usize,
    frames: u64,
    workers: usize,
    device: String,
    framecull_secs: Vec<f64>,
    framecull_frames_per_sec: f64,
    ffmpeg_secs: Vec<f64>,
    ffmpeg_frames_per_sec: f64,
    /// PyAV with a numpy bilinear resize (the same sampling as framecull's).
    pyav_secs: Vec<f64>,
    pyav_frames_per_sec: Option<f64>,
    /// PyAV with a numpy nearest-neighbour resize (cheaper, coarser).
    pyav_nearest_secs: Vec<f64>,
    pyav_nearest_frames_per_sec: Option<f64>,
    share_of_ffmpeg: f64,
    speedup_vs_pyav: Option<f64>,
    /// Shuffled windows: frames/s and frames decoded (GOP overhead of random access).
    shuffled_frames_per_sec: f64,
    shuffled_frames_decoded: u64,
    peak_rss_mb: Option<f64>,
    stats: framecull::loader::Stats,
}

impl LoadBench {
    fn text(&self) -> String {
        let s = &self.stats;
        format!(
            "loader on {} clips of {} ({} frames), {} -> 8 x 16 x 3 x 224 x 224 f32:\n  \
             framecull {:.0} frames/s (median {:?} s; windows in order, {} frames decoded)\n  \
             shuffled windows: {:.0} frames/s ({} frames decoded: a seek and a GOP per window)\n  ffmpeg -threads 2 -f null {:.0} frames/s \
             (median {:?} s): framecull delivers {:.0}% of it\n  PyAV (frame threading) + numpy \
             bilinear resize/normalise: {}\n  PyAV + numpy nearest resize/normalise: {}\n  stages (worker seconds, last run): read {:.2}, decode {:.2}, \
             convert {:.2}, preprocess {:.2}; consumer waited {:.2} s; peak RSS {}",
            self.clips,
            self.source,
            self.frames,
            self.device,
            self.framecull_frames_per_sec,
            self.framecull_secs,
            self.stats.frames_decoded,
            self.shuffled_frames_per_sec,
            self.shuffled_frames_decoded,
            self.ffmpeg_frames_per_sec,
            self.ffmpeg_secs,
            100.0 * self.share_of_ffmpeg,
            match (self.pyav_frames_per_sec, self.speedup_vs_pyav) {
                (Some(f), Some(x)) => format!("{f:.0} frames/s: framecull is {x:.2}x faster"),
                _ => "skipped".into(),
            },
            self.pyav_nearest_frames_per_sec
                .map_or("skipped".into(), |f| format!(
                    "{f:.0} frames/s: framecull is {:.2}x faster",
                    self.framecull_frames_per_sec / f
                )),
            s.read_secs,
            s.decode_secs,
            s.convert_secs,
            s.preprocess_secs,
            s.wait_secs,
            self.peak_rss_mb
                .map_or("unknown".into(), |m| format!("{m:.0} MB")),
        )
    }
}

/// PyAV with frame threading, RGB frames as numpy arrays, a centre crop and a resize to
/// 224 x 224 in numpy (first argument: `nearest`, by indexing, or `bilinear`, the same
/// sampling as framecull's), then float normalisation: the usual hand-written loader.
const PYAV_LOADER: &str = r#"
import sys, time
import av, numpy as np
mode, paths = sys.argv[1], sys.argv[2:]
mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
std = np.array([0.229, 0.224, 0.225], dtype=np.float32)
def taps(n_in, n_out, start):
    c = np.clip(start + (np.arange(n_out) + 0.5) * n_in / n_out - 0.5, start, start + n_in - 1)
    i0 = np.floor(c).astype(np.int64)
    return i0, np.minimum(i0 + 1, start + n_in - 1), (c - i0).astype(np.float32)
t = time.perf_counter()
frames = 0
for path in paths:
    with av.open(path) as c:
        s = c.streams.video[0]
        s.thread_type = "AUTO"
        plan = None
        for f in c.decode(s):
            a = f.to_ndarray(format="rgb24")
            if plan is None:
                h, w, _ = a.shape
                side = min(h, w)
                y0, x0 = (h - side) // 2, (w - side) // 2
                plan = (taps(side, 224, y0), taps(side, 224, x0))
            (ya, yb, wy), (xa, xb, wx) = plan
            if mode == "nearest":
                small = a[ya][:, xa].astype(np.float32)
            else:
                ra, rb = a[ya], a[yb]
                top = ra[:, xa].astype(np.float32)
                top += (ra[:, xb] - top) * wx[None, :, None]
                bot = rb[:, xa].astype(np.float32)
                bot += (rb[:, xb] - bot) * wx[None, :, None]
                small = top + (bot - top) * wy[:, None, None]
            out = ((small / 255.0 - mean) / std).transpose(2, 0, 1)
            frames += 1
print(frames)
print(time.perf_counter() - t)
"#;

/// What the load benchmark reads.
#[derive(Debug, Clone, Copy)]
pub enum LoadSource {
    /// This many 720p H.264 clips.
    Hd(usize),
    /// A 4K H.264 clip and a 4K 10-bit HEVC clip.
    Uhd,
}

/// Frames in a video file (its packets counted, no decoding).
fn frame_count(path: &Path) -> Option<usize> {
    framecull::media::reader::VideoReader::open(path, 1)
        .ok()
        .map(|r| r.frames().len())
}

/// Generate the benchmark's clips in `media` (kept between runs while they hold `frames`).
pub fn load_sources(media: &Path, source: LoadSource, frames: u32) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(media)?;
    let missing = |path: &Path| frame_count(path) != Some(frames as usize);
    let h264 = |path: &Path, w: u32, h: u32, speed: u32| -> anyhow::Result<()> {
        let mut spec = synth::VideoSpec::new("libx264", w, h, 30, frames);
        spec.pattern = Pattern::MovingBox { speed };
        spec.noise = 6;
        spec.gop = 30;
        Ok(synth::write_video(path, &spec)?)
    };
    let mut files = Vec::new();
    match source {
        LoadSource::Hd(clips) => {
            for i in 0..clips {
                let path = media.join(format!("clip{i:03}.mp4"));
                if missing(&path) {
                    h264(&path, 1280, 720, 2 + i as u32)?;
                }
                files.push(path);
            }
        }
        LoadSource::Uhd => {
            let path = media.join("uhd_h264.mp4");
            if missing(&path) {
                h264(&path, 3840, 2160, 12)?;
            }
            files.push(path);
            let path = media.join("uhd_hevc10.mp4");
            if missing(&path) {
                let status = Command::new("ffmpeg")
                    .args(["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i"])
                    .arg("testsrc2=size=3840x2160:rate=30")
                    .args(["-frames:v", &frames.to_string(), "-c:v", "libx265"])
                    .args(["-pix_fmt", "yuv420p10le", "-preset", "ultrafast"])
                    .args([
                        "-x265-params",
                        "keyint=30:log-level=error",
                        "-tag:v",
                        "hvc1",
                    ])
                    .arg(&path)
                    .status()
                    .context("ffmpeg (with libx265) is needed to generate the 10-bit clip")?;
                anyhow::ensure!(
                    status.success(),
                    "ffmpeg could not write {}",
                    path.display()
                );
            }
            files.push(path);
        }
    }
    Ok(files)
}

/// Scan `media` into a new `project` and export every clip as the manifest `bench` (Parquet):
/// its metadata and folder.
pub fn scan_and_export(
    media: &Path,
    project: &Path,
) -> anyhow::Result<(framecull::manifest::VersionMeta, PathBuf)> {
    use framecull::manifest::{ExportOptions, Format, Include};
    let _ = std::fs::remove_dir_all(project);
    scan_once(media, project, &ScanOptions::default())?;
    let catalog = Catalog::open(project)?;
    let options = ExportOptions {
        name: "bench".into(),
        formats: vec![Format::Parquet],
        split: None,
        split_seed: 0,
        include: Include::Unreviewed,
        filter: None,
        shard_size: None,
    };
    let meta = framecull::manifest::export(&catalog, &options)?;
    Ok((meta, framecull::manifest::manifest_dir(project, "bench")))
}

/// Every frame once, on the CPU: windows of 16 that tile each clip, in order.
pub fn every_frame_once() -> framecull::loader::LoaderConfig {
    use framecull::loader::{LoaderConfig, Mode, Sampling, Timing};
    LoaderConfig {
        sampling: Sampling {
            clip_len: Some(16),
            max_frames: 16,
            timing: Timing::Stride(1),
            mode: Mode::All,
            window_step: None,
        },
        device: framecull::loader::DeviceChoice::Cpu,
        batching: framecull::loader::Batching {
            shuffle: false,
            ..framecull::loader::Batching::default()
        },
        ..LoaderConfig::default()
    }
}

/// One epoch of the manifest at `manifest` read with `config`, every batch taken: its
/// seconds and the loader's stats.
fn read_epoch(
    manifest: &Path,
    config: framecull::loader::LoaderConfig,
) -> anyhow::Result<(f64, framecull::loader::Stats)> {
    let mut loader = framecull::loader::Loader::open(manifest, None, config)?;
    let started = Instant::now();
    let mut epoch = loader.epoch(0);
    while let Some(batch) = epoch.next() {
        epoch.recycle(batch?);
    }
    drop(epoch);
    Ok((started.elapsed().as_secs_f64(), loader.stats().clone()))
}

fn bench_load(
    dir: &Path,
    source: LoadSource,
    frames: u32,
    workers: Option<usize>,
    python: &Path,
    repeat: usize,
) -> anyhow::Result<LoadBench> {
    let sub = match source {
        LoadSource::Hd(_) => "hd",
        LoadSource::Uhd => "uhd",
    };
    let media = dir.join(sub).join("media");
    let project = dir.join(sub).join("project");
    let files = load_sources(&media, source, frames)?;
    let clips = files.len();
    let (meta, manifest) = scan_and_export(&media, &project)?;
    anyhow::ensure!(
        meta.counts.rows as usize == clips,
        "exported {} of {clips} clips",
        meta.counts.rows
    );
    let mut config = every_frame_once();
    if let Some(w) = workers {
        config.workers = w.max(1);
    }
    let workers = config.workers;
    let (mut ours, mut ffmpeg, mut pyav) = (Vec::new(), Vec::new(), Vec::new());
    let mut pyav_nearest = Vec::new();
    let mut delivered = 0;
    let mut stats = framecull::loader::Stats::default();
    // ffmpeg decodes every frame of every clip.
    let ffmpeg_frames: u64 = files
        .iter()
        .map(|f| frame_count(f).unwrap_or(0) as u64)
        .sum();
    let mut pyav_frames = 0u64;
    for _ in 0..repeat {
        let (secs, epoch_stats) = read_epoch(&manifest, config.clone())?;
        ours.push(secs);
        stats = epoch_stats;
        delivered = stats.frames;
        ffmpeg.push(ffmpeg_null(&files, 2)?);
        for (mode, times) in [("bilinear", &mut pyav), ("nearest", &mut pyav_nearest)] {
            let args: Vec<PathBuf> = std::iter::once(PathBuf::from(mode))
                .chain(files.iter().cloned())
                .collect();
            if let Some((s, count)) = run_python(python, PYAV_LOADER, &args) {
                times.push(s);
                pyav_frames = count.and_then(|c| c.trim().parse().ok()).unwrap_or(0);
            }
        }
    }
    anyhow::ensure!(
        stats.skipped_windows.is_empty(),
        "windows failed: {:?}",
        stats.errors
    );
    // The same windows in shuffled order: each window then starts with a seek and decodes
    // from the keyframe before it.
    let shuffled = {
        let mut config = config.clone();
        config.batching.shuffle = true;
        let (_, s) = read_epoch(&manifest, config)?;
        (s.frames as f64 / s.wall_secs, s.frames_decoded)
    };
    let (o, f) = (median(ours.clone()), median(ffmpeg.clone()));
    let ours_fps = delivered as f64 / o;
    let ffmpeg_fps = ffmpeg_frames as f64 / f;
    let pyav_fps =
        (!pyav.is_empty() && pyav_frames > 0).then(|| pyav_frames as f64 / median(pyav.clone()));
    let pyav_nearest_fps = (!pyav_nearest.is_empty() && pyav_frames > 0)
        .then(|| pyav_frames as f64 / median(pyav_nearest.clone()));
    Ok(LoadBench {
        source: match source {
            LoadSource::Hd(_) => "720p H.264".into(),
            LoadSource::Uhd => "2160p (H.264 8-bit, HEVC 10-bit)".into(),
        },
        clips,
        frames: delivered,
        workers,
        device: stats.device.clone(),
        framecull_secs: ours,
        framecull_frames_per_sec: ours_fps,
        ffmpeg_secs: ffmpeg,
        ffmpeg_frames_per_sec: ffmpeg_fps,
        pyav_secs: pyav,
        pyav_frames_per_sec: pyav_fps,
        pyav_nearest_secs: pyav_nearest,
        pyav_nearest_frames_per_sec: pyav_nearest_fps,
        share_of_ffmpeg: ours_fps / ffmpeg_fps,
        speedup_vs_pyav: pyav_fps.map(|p| ours_fps / p),
        shuffled_frames_per_sec: shuffled.0,
        shuffled_frames_decoded: shuffled.1,
        peak_rss_mb: peak_rss_mb(),
        stats,
    })
}
