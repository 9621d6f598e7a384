//! `framecull bench`: benchmarks that print comparable figures (run them on a release build).
//!
//! - `bench scan --images N`: generate a tree of N small images, then time a first scan and
//!   an unchanged rescan, with peak memory.
//! - `bench probe DIR`: the metadata scan of a corpus against a per-file `ffprobe` loop over
//!   the same files, in the same run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use serde::Serialize;

use super::Outcome;
use crate::catalog::Catalog;
use crate::media::synth::{self, ImageKind, Pattern};
use crate::scan::{ScanOptions, ScanSummary, scan};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(clap::Subcommand, Debug)]
enum Which {
    /// Scan and rescan a generated tree of small images.
    Scan {
        /// Number of images.
        #[arg(long, default_value_t = 100_000)]
        images: usize,
        /// Where to generate the tree (kept between runs; generated once).
        #[arg(long, default_value = "/tmp/framecull-bench-images")]
        dir: PathBuf,
        /// Probe threads (default: one per core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Runs of each measurement; the median is reported.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        #[arg(long)]
        json: bool,
    },
    /// Deep analysis of a folder of videos and one of images, against `ffmpeg -f null`
    /// decoding, PySceneDetect's ContentDetector and cleanvision on the same files.
    Analyze {
        /// Folder of videos (e.g. ../shared/media/video).
        #[arg(long)]
        videos: PathBuf,
        /// Folder of images (e.g. ../shared/media/image).
        #[arg(long)]
        images: PathBuf,
        /// Python with scenedetect and cleanvision installed (../shared/peers/setup.sh makes
        /// one at /tmp/peers-venv); peers are skipped when it is absent.
        #[arg(long, default_value = "/tmp/peers-venv/bin/python")]
        python: PathBuf,
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        #[arg(long)]
        json: bool,
    },
    /// Export a manifest of N clips from a generated catalog (no media files needed).
    Export {
        #[arg(long, default_value_t = 100_000)]
        clips: usize,
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        #[arg(long)]
        json: bool,
    },
    /// The data loader's CPU path on a manifest of generated 720p H.264 clips, against
    /// `ffmpeg -threads 2 -f null` and PyAV (frame threading) plus a numpy resize and
    /// normalisation over the same frames.
    Load {
        /// Where to generate the clips and their project (kept between runs).
        #[arg(long, default_value = "/tmp/framecull-bench-load")]
        dir: PathBuf,
        #[arg(long, default_value_t = 8)]
        clips: usize,
        /// Frames per clip (30 fps; a multiple of 16 so windows cover every frame).
        #[arg(long, default_value_t = 320)]
        frames: u32,
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
    },
    /// The player pipeline on a generated 1080p H.264 clip: decode (2 threads), convert to
    /// the display size, upload to a wgpu texture, frame after frame.
    /// The window on a generated catalog of N items: apply a brush filter (file size, about
    /// half the items) and lay out one frame (table, then gallery), with egui's layout and
    /// tessellation, no GPU.
    #[cfg(feature = "gui")]
    Gui {
        #[arg(long, default_value_t = 100_000)]
        items: usize,
        /// Frames measured per view.
        #[arg(long, default_value_t = 30)]
        frames: usize,
        #[arg(long)]
        json: bool,
    },
    #[cfg(feature = "gui")]
    Player {
        #[arg(long, default_value = "/tmp/framecull-bench-player")]
        dir: PathBuf,
        #[arg(long, default_value_t = 300)]
        frames: u32,
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        #[arg(long)]
        json: bool,
    },
    /// Metadata scan of a corpus against a per-file ffprobe loop over the same files.
    Probe {
        /// Corpus folder (e.g. ../shared/media).
        dir: PathBuf,
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct ScanBench {
    images: usize,
    jobs: usize,
    first_scan_secs: Vec<f64>,
    first_scan_median_secs: f64,
    files_per_sec: f64,
    rescan_secs: Vec<f64>,
    rescan_median_secs: f64,
    peak_rss_mb: Option<f64>,
}

#[derive(Serialize)]
struct ProbeBench {
    files: usize,
    framecull_secs: Vec<f64>,
    framecull_median_secs: f64,
    ffprobe_secs: Vec<f64>,
    ffprobe_median_secs: f64,
    speedup: f64,
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    if cfg!(debug_assertions) {
        eprintln!("note: this is a debug build; benchmark figures come from `cargo run --release`");
    }
    match args.which {
        Which::Scan {
            images,
            dir,
            jobs,
            repeat,
            json,
        } => {
            let r = bench_scan(images, &dir, jobs, repeat.max(1))?;
            print(&r, json, || {
                format!(
                    "scan of {} images, {} threads: first scan median {:.2} s ({:.0} files/s), \
                     unchanged rescan median {:.2} s, peak RSS {}\n  first: {:?}\n  rescan: {:?}",
                    r.images,
                    r.jobs,
                    r.first_scan_median_secs,
                    r.files_per_sec,
                    r.rescan_median_secs,
                    r.peak_rss_mb
                        .map_or("unknown".into(), |m| format!("{m:.0} MB")),
                    r.first_scan_secs,
                    r.rescan_secs
                )
            })
        }
        Which::Analyze {
            videos,
            images,
            python,
            repeat,
            json,
        } => {
            let r = bench_analyze(&videos, &images, &python, repeat.max(1))?;
            print(&r, json, || r.text())
        }
        Which::Export {
            clips,
            repeat,
            json,
        } => {
            let r = bench_export(clips, repeat.max(1))?;
            print(&r, json, || {
                format!(
                    "export of {} clips: Parquet median {:.2} s {:?}; Parquet + JSON lines + CSV median {:.2} s {:?}",
                    r.clips,
                    r.parquet_median_secs,
                    r.parquet_secs,
                    r.all_formats_median_secs,
                    r.all_formats_secs
                )
            })
        }
        Which::Load {
            dir,
            clips,
            frames,
            workers,
            uhd,
            python,
            repeat,
            json,
        } => {
            let source = if uhd {
                LoadSource::Uhd
            } else {
                LoadSource::Hd(clips)
            };
            let r = bench_load(&dir, source, frames, workers, &python, repeat.max(1))?;
            print(&r, json, || r.text())
        }
        #[cfg(feature = "gui")]
        Which::Gui {
            items,
            frames,
            json,
        } => {
            let r = bench_gui(items, frames.max(1))?;
            print(&r, json, || {
                format!(
                    "window on {} items (load {:.2} s off the UI thread): brush + one frame, \
                     table: median {:.2} ms, p95 {:.2} ms; gallery: median {:.2} ms, p95 {:.2} ms; \
                     {} .. {} files shown; peak RSS {}",
                    r.items,
                    r.load_secs,
                    r.table_median_ms,
                    r.table_p95_ms,
                    r.gallery_median_ms,
                    r.gallery_p95_ms,
                    r.shown_min,
                    r.shown_max,
                    r.peak_rss_mb
                        .map_or("unknown".into(), |m| format!("{m:.0} MB"))
                )
            })
        }
        #[cfg(feature = "gui")]
        Which::Player {
            dir,
            frames,
            repeat,
            json,
        } => {
            let r = bench_player(&dir, frames, repeat.max(1))?;
            print(&r, json, || {
                format!(
                    "player pipeline on {} frames of 1080p H.264 -> {}x{} RGBA, upload on {}: \
                     {:.1} frames/s median (runs {:?} s); per frame: decode {:.2} ms, convert \
                     {:.2} ms, upload {:.2} ms",
                    r.frames,
                    r.display.0,
                    r.display.1,
                    r.adapter,
                    r.frames_per_sec,
                    r.secs,
                    r.decode_ms,
                    r.convert_ms,
                    r.upload_ms
                )
            })
        }
        Which::Probe { dir, repeat, json } => {
            let r = bench_probe(&dir, repeat.max(1))?;
            print(&r, json, || {
                format!(
                    "metadata of {} files: framecull scan median {:.3} s, ffprobe loop median \
                     {:.3} s: {:.1}x faster\n  framecull: {:?}\n  ffprobe: {:?}",
                    r.files,
                    r.framecull_median_secs,
                    r.ffprobe_median_secs,
                    r.speedup,
                    r.framecull_secs,
                    r.ffprobe_secs
                )
            })
        }
    }?;
    Ok(Outcome::Clean)
}

fn print<T: Serialize>(r: &T, json: bool, text: impl FnOnce() -> String) -> anyhow::Result<()> {
    let out = if json {
        serde_json::to_string_pretty(r)?
    } else {
        text()
    };
    super::write_stdout(&out)?;
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Generate `n` small JPEGs (a few distinct pictures, copied) in folders of 1,000.
fn generate_images(dir: &Path, n: usize) -> anyhow::Result<()> {
    let marker = dir.join(format!(".complete-{n}"));
    if marker.is_file() {
        return Ok(());
    }
    eprintln!("generating {n} images in {} ...", dir.display());
    let variants: Vec<Vec<u8>> = (0..16)
        .map(|i| {
            let (w, h) = [(256, 256), (320, 240), (240, 320), (512, 384)][i % 4];
            synth::encode_image(
                ImageKind::Jpeg,
                w,
                h,
                Pattern::MovingBox { speed: 7 },
                i as u32,
            )
        })
        .collect::<Result<_, _>>()?;
    for i in 0..n {
        let sub = dir.join(format!("{:03}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&sub)?;
        }
        std::fs::write(
            sub.join(format!("img_{i:06}.jpg")),
            &variants[i % variants.len()],
        )?;
    }
    std::fs::write(&marker, b"")?;
    Ok(())
}

fn scan_once(
    root: &Path,
    project: &Path,
    options: &ScanOptions,
) -> anyhow::Result<(f64, ScanSummary)> {
    let started = Instant::now();
    let mut catalog = Catalog::create_or_open(project, root)?;
    let summary = scan(
        &mut catalog,
        root,
        options,
        &AtomicBool::new(false),
        &mut |_| {},
    )?;
    Ok((started.elapsed().as_secs_f64(), summary))
}

fn bench_scan(
    n: usize,
    dir: &Path,
    jobs: Option<usize>,
    repeat: usize,
) -> anyhow::Result<ScanBench> {
    generate_images(dir, n)?;
    let root = dir.canonicalize()?;
    let mut options = ScanOptions::default();
    if let Some(j) = jobs {
        options.jobs = j.max(1);
    }
    let project =
        std::env::temp_dir().join(format!("framecull-bench-project-{}", std::process::id()));
    reset_peak_rss();
    let mut first = Vec::new();
    let mut rescan = Vec::new();
    for _ in 0..repeat {
        let _ = std::fs::remove_dir_all(&project);
        let (secs, s) = scan_once(&root, &project, &options)?;
        anyhow::ensure!(
            s.counts.probed as usize == n,
            "expected {n} probed, got {:?}",
            s.counts
        );
        first.push(secs);
        let (secs, s) = scan_once(&root, &project, &options)?;
        anyhow::ensure!(
            s.counts.unchanged as usize == n,
            "rescan re-probed files: {:?}",
            s.counts
        );
        rescan.push(secs);
    }
    let _ = std::fs::remove_dir_all(&project);
    let first_median = median(first.clone());
    Ok(ScanBench {
        images: n,
        jobs: options.jobs,
        first_scan_median_secs: first_median,
        files_per_sec: n as f64 / first_median,
        first_scan_secs: first,
        rescan_median_secs: median(rescan.clone()),
        rescan_secs: rescan,
        peak_rss_mb: peak_rss_mb(),
    })
}

fn bench_probe(dir: &Path, repeat: usize) -> anyhow::Result<ProbeBench> {
    let root = dir
        .canonicalize()
        .with_context(|| format!("corpus folder {}", dir.display()))?;
    let project =
        std::env::temp_dir().join(format!("framecull-bench-probe-{}", std::process::id()));
    let options = ScanOptions::default();
    // The files a scan catalogues are the files ffprobe is timed on.
    let files: Vec<PathBuf> = crate::scan::walk(&root, &[])
        .files
        .into_iter()
        .map(|f| f.abs_path)
        .collect();
    Command::new("ffprobe")
        .arg("-version")
        .stdout(Stdio::null())
        .status()
        .context("ffprobe is needed for this comparison (apt-get install ffmpeg)")?;
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..repeat {
        let _ = std::fs::remove_dir_all(&project);
        let (secs, s) = scan_once(&root, &project, &options)?;
        anyhow::ensure!(
            s.counts.probed as usize == files.len(),
            "scan and walk disagree"
        );
        ours.push(secs);
        let started = Instant::now();
        for f in &files {
            // Same invocation as shared/peers/ffprobe_bench.sh.
            Command::new("ffprobe")
                .args([
                    "-v",
                    "error",
                    "-show_format",
                    "-show_streams",
                    "-of",
                    "json",
                ])
                .arg(f)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
        }
        theirs.push(started.elapsed().as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&project);
    let (m_ours, m_theirs) = (median(ours.clone()), median(theirs.clone()));
    Ok(ProbeBench {
        files: files.len(),
        framecull_secs: ours,
        framecull_median_secs: m_ours,
        ffprobe_secs: theirs,
        ffprobe_median_secs: m_theirs,
        speedup: m_theirs / m_ours,
    })
}

/// Reset the kernel's peak-RSS mark for this process (Linux), so the figure covers the scans.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_mb() -> Option<f64> {
    super::peak_rss_bytes().map(|b| b as f64 / (1024.0 * 1024.0))
}

#[derive(Serialize)]
struct AnalyzeBench {
    videos: usize,
    decoded_frames: u64,
    framecull_video_secs: f64,
    framecull_frames_per_sec: f64,
    ffmpeg_null_secs: f64,
    /// framecull frames/s as a share of `ffmpeg -i FILE -f null -` frames/s.
    share_of_ffmpeg: f64,
    pyscenedetect_secs: Option<f64>,
    speedup_vs_pyscenedetect: Option<f64>,
    /// Cuts matched, found only by framecull, found only by PySceneDetect.
    cut_agreement: Option<(usize, usize, usize)>,
    cut_f1: Option<f64>,
    images: usize,
    framecull_image_secs: f64,
    cleanvision_secs: Option<f64>,
    speedup_vs_cleanvision: Option<f64>,
    jobs: usize,
}

impl AnalyzeBench {
    fn text(&self) -> String {
        let opt = |v: Option<f64>, unit: &str| {
            v.map_or("not run".to_string(), |v| format!("{v:.2}{unit}"))
        };
        format!(
            "deep analysis of {} videos ({} frames), {} jobs: {:.2} s ({:.0} frames/s)\n  \
             ffmpeg -f null over the same files: {:.2} s -> framecull reaches {:.0}% of its throughput\n  \
             PySceneDetect ContentDetector (OpenCV): {} -> framecull {} faster\n  \
             cuts (matched, framecull only, PySceneDetect only): {:?}, F1 {}\n\
             image analysis of {} images: {:.2} s; cleanvision: {} -> framecull {} faster",
            self.videos,
            self.decoded_frames,
            self.jobs,
            self.framecull_video_secs,
            self.framecull_frames_per_sec,
            self.ffmpeg_null_secs,
            self.share_of_ffmpeg * 100.0,
            opt(self.pyscenedetect_secs, " s"),
            opt(self.speedup_vs_pyscenedetect, "x"),
            self.cut_agreement,
            opt(self.cut_f1, ""),
            self.images,
            self.framecull_image_secs,
            opt(self.cleanvision_secs, " s"),
            opt(self.speedup_vs_cleanvision, "x"),
        )
    }
}

/// Cuts of one analysed video, in seconds from its first frame.
struct VideoCuts {
    path: PathBuf,
    fps: f64,
    cuts_secs: Vec<f64>,
}

/// Time a scan plus deep analysis of `dir` into a fresh project. Returns the seconds, the
/// frames decoded from ok videos, and those videos' cuts.
fn deep_once(
    dir: &Path,
    options: &crate::scan::deep::AnalyzeOptions,
) -> anyhow::Result<(f64, u64, Vec<VideoCuts>)> {
    let project = std::env::temp_dir().join(format!("framecull-bench-deep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    let root = dir.canonicalize()?;
    let started = Instant::now();
    let mut catalog = Catalog::create_or_open(&project, &root)?;
    let scan_options = ScanOptions {
        jobs: options.jobs,
        ..ScanOptions::default()
    };
    let never = AtomicBool::new(false);
    scan(&mut catalog, &root, &scan_options, &never, &mut |_| {})?;
    crate::scan::deep::analyze(&mut catalog, &root, options, &never, &mut |_| {})?;
    let secs = started.elapsed().as_secs_f64();
    let metrics = catalog.all_metrics()?;
    let cuts = catalog.all_cuts()?;
    let mut frames = 0;
    let mut videos = Vec::new();
    for item in catalog.items()? {
        if item.kind != crate::model::MediaKind::Video
            || item.status != crate::model::ItemStatus::Ok
        {
            continue;
        }
        frames += metrics.get(&item.id).map_or(0, |m| m.decoded_frames);
        let start = item.info.start_secs.unwrap_or(0.0);
        videos.push(VideoCuts {
            path: root.join(&item.path),
            fps: item.info.fps.unwrap_or(25.0),
            cuts_secs: cuts
                .get(&item.id)
                .map(|c| c.iter().map(|c| c.time_secs - start).collect())
                .unwrap_or_default(),
        });
    }
    let _ = std::fs::remove_dir_all(&project);
    Ok((secs, frames, videos))
}

/// Prints a JSON map path -> cut times (s, from the first frame), then the seconds taken.
const PYSCENEDETECT: &str = r#"
import json, sys, time
from scenedetect import open_video, SceneManager, ContentDetector
t = time.perf_counter()
cuts = {}
for p in sys.argv[1:]:
    try:
        sm = SceneManager(); sm.add_detector(ContentDetector())
        sm.detect_scenes(open_video(p, backend="opencv"))
        cuts[p] = [c.get_seconds() for c in sm.get_cut_list()]
    except Exception as e:
        print("failed", p, e, file=sys.stderr)
elapsed = time.perf_counter() - t
print(json.dumps(cuts))
print(elapsed)
"#;

/// Prints the seconds cleanvision takes to find issues in a folder. cleanvision 0.3.7 aborts
/// on the first file Pillow cannot load, so those are left out first (not timed), as
/// ../shared/peers/cleanvision_run.py does.
const CLEANVISION: &str = r#"
import os, sys, tempfile, time
from PIL import Image
from cleanvision import Imagelab
src = os.path.abspath(sys.argv[1])
data = tempfile.mkdtemp(prefix="cv_")
for n in os.listdir(src):
    try:
        with Image.open(os.path.join(src, n)) as im:
            im.load()
        os.symlink(os.path.join(src, n), os.path.join(data, n))
    except Exception:
        pass
t = time.perf_counter()
lab = Imagelab(data_path=data); lab.find_issues()
print(time.perf_counter() - t)
"#;

/// Run a peer script. Its last stdout line is the seconds it took; the line before, if any,
/// its JSON result.
fn run_python(python: &Path, script: &str, args: &[PathBuf]) -> Option<(f64, Option<String>)> {
    if !python.exists() {
        eprintln!("note: {} not found: peer skipped", python.display());
        return None;
    }
    // A script file rather than `-c`: peers that start worker processes re-import it.
    let file = std::env::temp_dir().join(format!("framecull-peer-{}.py", std::process::id()));
    std::fs::write(&file, script).ok()?;
    let out = Command::new(python)
        .arg(&file)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines().rev();
    let secs = lines.next()?.trim().parse().ok()?;
    Some((secs, lines.next().map(str::to_string)))
}

/// Cut agreement with PySceneDetect: cuts match when their times from the first frame are
/// within 1.5 frame intervals (frame numbers differ on variable-rate files). Returns
/// (matched, framecull only, PySceneDetect only).
fn cut_agreement(ours: &[VideoCuts], theirs: &str) -> Option<(usize, usize, usize)> {
    let theirs: std::collections::HashMap<String, Vec<f64>> = serde_json::from_str(theirs).ok()?;
    let (mut matched, mut ours_only, mut theirs_only) = (0, 0, 0);
    for v in ours {
        let Some(t) = theirs.get(v.path.to_string_lossy().as_ref()) else {
            continue;
        };
        let tolerance = 1.5 / v.fps.max(1.0);
        let mut used = vec![false; v.cuts_secs.len()];
        for x in t {
            match (0..v.cuts_secs.len())
                .find(|&i| !used[i] && (v.cuts_secs[i] - x).abs() <= tolerance)
            {
                Some(i) => {
                    used[i] = true;
                    matched += 1;
                }
                None => theirs_only += 1,
            }
        }
        ours_only += used.iter().filter(|u| !**u).count();
    }
    Some((matched, ours_only, theirs_only))
}

fn bench_analyze(
    videos: &Path,
    images: &Path,
    python: &Path,
    repeat: usize,
) -> anyhow::Result<AnalyzeBench> {
    let options = crate::scan::deep::AnalyzeOptions::default();
    let (mut ours, mut ffmpeg, mut psd) = (Vec::new(), Vec::new(), Vec::new());
    let mut frames = 0;
    let mut video_cuts = Vec::new();
    let mut agreement = None;
    for _ in 0..repeat {
        let (secs, f, cuts) = deep_once(videos, &options)?;
        ours.push(secs);
        frames = f;
        video_cuts = cuts;
        let files: Vec<PathBuf> = video_cuts.iter().map(|v| v.path.clone()).collect();
        let started = Instant::now();
        for f in &files {
            Command::new("ffmpeg")
                .args(["-v", "quiet", "-nostdin", "-i"])
                .arg(f)
                .args(["-f", "null", "-"])
                .status()
                .context("ffmpeg is needed for this comparison")?;
        }
        ffmpeg.push(started.elapsed().as_secs_f64());
        if let Some((s, cuts)) = run_python(python, PYSCENEDETECT, &files) {
            psd.push(s);
            agreement = cuts.and_then(|c| cut_agreement(&video_cuts, &c));
        }
    }
    let (mut ours_img, mut cv) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        ours_img.push(deep_once(images, &options)?.0);
        if let Some((s, _)) = run_python(python, CLEANVISION, &[images.to_path_buf()]) {
            cv.push(s);
        }
    }
    let image_count = crate::scan::walk(&images.canonicalize()?, &[]).files.len();
    let (v, f) = (median(ours), median(ffmpeg));
    let p = (!psd.is_empty()).then(|| median(psd));
    let (i, c) = (median(ours_img), (!cv.is_empty()).then(|| median(cv)));
    let cut_f1 = agreement.map(|(tp, fp, fn_)| {
        let (tp, fp, fn_) = (tp as f64, fp as f64, fn_ as f64);
        if tp == 0.0 {
            0.0
        } else {
            2.0 * tp / (2.0 * tp + fp + fn_)
        }
    });
    Ok(AnalyzeBench {
        videos: video_cuts.len(),
        decoded_frames: frames,
        framecull_video_secs: v,
        framecull_frames_per_sec: frames as f64 / v,
        ffmpeg_null_secs: f,
        share_of_ffmpeg: f / v,
        pyscenedetect_secs: p,
        speedup_vs_pyscenedetect: p.map(|p| p / v),
        cut_agreement: agreement,
        cut_f1,
        images: image_count,
        framecull_image_secs: i,
        cleanvision_secs: c,
        speedup_vs_cleanvision: c.map(|c| c / i),
        jobs: options.jobs,
    })
}

#[derive(Serialize)]
struct ExportBench {
    clips: usize,
    parquet_secs: Vec<f64>,
    parquet_median_secs: f64,
    all_formats_secs: Vec<f64>,
    all_formats_median_secs: f64,
}

/// A catalog of `n` items (every tenth a 4 s video, the rest images), written directly.
fn generated_catalog(project: &Path, n: usize) -> anyhow::Result<Catalog> {
    use crate::model::{MediaInfo, MediaKind, Probe, Ratio};
    let mut catalog = Catalog::create_or_open(project, Path::new("/bench"))?;
    let scan_id = catalog.begin_scan(Path::new("/bench"))?;
    let batch: Vec<crate::catalog::ItemUpdate> = (0..n)
        .map(|i| {
            let video = i % 10 == 0;
            crate::catalog::ItemUpdate {
                path: format!(
                    "d{:03}/f{i:07}.{}",
                    i % 1000,
                    if video { "mp4" } else { "jpg" }
                ),
                size_bytes: 10_000 + (i as u64 * 104_729) % 5_000_000,
                mtime_ns: 1,
                fingerprint: Some(format!("{i:032x}")),
                probe: Probe::ok(
                    if video {
                        MediaKind::Video
                    } else {
                        MediaKind::Image
                    },
                    MediaInfo {
                        codec: Some("h264".into()),
                        width: Some([640, 1280, 1920, 3840][i % 4]),
                        height: Some([360, 720, 1080, 2160][i % 4]),
                        fps: video.then_some([24.0, 25.0, 30.0, 60.0][i / 7 % 4]),
                        time_base: video.then_some(Ratio { num: 1, den: 15360 }),
                        duration_secs: video.then_some(1.0 + (i * 7919 % 600) as f64 / 10.0),
                        start_secs: video.then_some(0.0),
                        frame_count: video.then_some(120),
                        ..MediaInfo::default()
                    },
                ),
            }
        })
        .collect();
    for chunk in batch.chunks(10_000) {
        catalog.upsert_items(scan_id, crate::scan::PROBE_VERSION, chunk)?;
    }
    Ok(catalog)
}

fn bench_export(n: usize, repeat: usize) -> anyhow::Result<ExportBench> {
    use crate::manifest::{ExportOptions, Format, Include, SplitSpec};
    let project =
        std::env::temp_dir().join(format!("framecull-bench-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    let catalog = generated_catalog(&project, n)?;
    let run = |formats: Vec<Format>, name: &str| -> anyhow::Result<f64> {
        let options = ExportOptions {
            name: name.into(),
            formats,
            split: Some(
                SplitSpec::parse("train=0.8,val=0.1,test=0.1").map_err(|e| anyhow::anyhow!(e))?,
            ),
            split_seed: 1,
            include: Include::Unreviewed,
        };
        let started = Instant::now();
        let meta = crate::manifest::export(&catalog, &options)?;
        anyhow::ensure!(
            meta.counts.rows as usize == n,
            "exported {} of {n}",
            meta.counts.rows
        );
        Ok(started.elapsed().as_secs_f64())
    };
    let mut parquet = Vec::new();
    let mut all = Vec::new();
    for _ in 0..repeat {
        parquet.push(run(vec![Format::Parquet], "bench")?);
        all.push(run(
            vec![Format::Parquet, Format::Jsonl, Format::Csv],
            "bench-all",
        )?);
    }
    let _ = std::fs::remove_dir_all(&project);
    Ok(ExportBench {
        clips: n,
        parquet_median_secs: median(parquet.clone()),
        parquet_secs: parquet,
        all_formats_median_secs: median(all.clone()),
        all_formats_secs: all,
    })
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
    stats: crate::loader::Stats,
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
enum LoadSource {
    /// This many 720p H.264 clips.
    Hd(usize),
    /// A 4K H.264 clip and a 4K 10-bit HEVC clip.
    Uhd,
}

/// Generate the benchmark's clips in `media` (kept between runs).
fn load_sources(media: &Path, source: LoadSource, frames: u32) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(media)?;
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
                if !path.is_file() {
                    h264(&path, 1280, 720, 2 + i as u32)?;
                }
                files.push(path);
            }
        }
        LoadSource::Uhd => {
            let path = media.join("uhd_h264.mp4");
            if !path.is_file() {
                h264(&path, 3840, 2160, 12)?;
            }
            files.push(path);
            let path = media.join("uhd_hevc10.mp4");
            if !path.is_file() {
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

fn bench_load(
    dir: &Path,
    source: LoadSource,
    frames: u32,
    workers: Option<usize>,
    python: &Path,
    repeat: usize,
) -> anyhow::Result<LoadBench> {
    use crate::loader::{Loader, LoaderConfig, Mode, Sampling, Timing};
    use crate::manifest::{ExportOptions, Format, Include};
    let sub = match source {
        LoadSource::Hd(_) => "hd",
        LoadSource::Uhd => "uhd",
    };
    let media = dir.join(sub).join("media");
    let project = dir.join(sub).join("project");
    let files = load_sources(&media, source, frames)?;
    let clips = files.len();
    let _ = std::fs::remove_dir_all(&project);
    scan_once(&media, &project, &ScanOptions::default())?;
    let catalog = Catalog::open(&project)?;
    let options = ExportOptions {
        name: "bench".into(),
        formats: vec![Format::Parquet],
        split: None,
        split_seed: 0,
        include: Include::Unreviewed,
    };
    let meta = crate::manifest::export(&catalog, &options)?;
    anyhow::ensure!(
        meta.counts.rows as usize == clips,
        "exported {} of {clips} clips",
        meta.counts.rows
    );
    let manifest = crate::manifest::manifest_dir(&project, "bench");
    // Every frame once: windows of 16 that tile each clip.
    let mut config = LoaderConfig {
        sampling: Sampling {
            clip_len: Some(16),
            max_frames: 16,
            timing: Timing::Stride(1),
            mode: Mode::All,
            window_step: None,
        },
        device: crate::loader::DeviceChoice::Cpu,
        batching: crate::loader::Batching {
            shuffle: false,
            ..crate::loader::Batching::default()
        },
        ..LoaderConfig::default()
    };
    if let Some(w) = workers {
        config.workers = w.max(1);
    }
    let workers = config.workers;
    let (mut ours, mut ffmpeg, mut pyav) = (Vec::new(), Vec::new(), Vec::new());
    let mut pyav_nearest = Vec::new();
    let mut delivered = 0;
    let mut stats = crate::loader::Stats::default();
    // ffmpeg decodes every frame of every clip.
    let ffmpeg_frames = u64::from(frames) * clips as u64;
    let mut pyav_frames = 0u64;
    for _ in 0..repeat {
        let mut loader = Loader::open(&manifest, None, config.clone())?;
        let started = Instant::now();
        let mut epoch = loader.epoch(0);
        while let Some(batch) = epoch.next() {
            epoch.recycle(batch?);
        }
        drop(epoch);
        ours.push(started.elapsed().as_secs_f64());
        stats = loader.stats().clone();
        delivered = stats.frames;
        let started = Instant::now();
        for f in &files {
            let status = Command::new("ffmpeg")
                .args(["-v", "quiet", "-nostdin", "-threads", "2", "-i"])
                .arg(f)
                .args(["-f", "null", "-"])
                .status()
                .context("ffmpeg is needed for this comparison")?;
            anyhow::ensure!(status.success(), "ffmpeg failed on {}", f.display());
        }
        ffmpeg.push(started.elapsed().as_secs_f64());
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
        let mut loader = Loader::open(&manifest, None, config)?;
        let mut epoch = loader.epoch(0);
        while let Some(batch) = epoch.next() {
            epoch.recycle(batch?);
        }
        drop(epoch);
        let s = loader.stats();
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

#[cfg(feature = "gui")]
#[derive(Serialize)]
struct PlayerBench {
    frames: u32,
    display: (usize, usize),
    adapter: String,
    secs: Vec<f64>,
    frames_per_sec: f64,
    decode_ms: f64,
    convert_ms: f64,
    upload_ms: f64,
}

/// Decode, convert and upload every frame in order, as the player does while playing.
#[cfg(feature = "gui")]
fn bench_player(dir: &Path, frames: u32, repeat: usize) -> anyhow::Result<PlayerBench> {
    use crate::gui::player::Converter;
    use crate::media::reader::{ReadTimes, VideoReader};
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("clip1080p-{frames}.mp4"));
    if !path.is_file() {
        let mut spec = synth::VideoSpec::new("libx264", 1920, 1080, 30, frames);
        spec.pattern = Pattern::MovingBox { speed: 6 };
        spec.noise = 6;
        spec.gop = 30;
        synth::write_video(&path, &spec)?;
    }
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .map_err(|e| anyhow::anyhow!("no wgpu adapter for the upload: {e}"))?;
    let info = adapter.get_info();
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))?;
    let mut secs = Vec::new();
    let (mut decode, mut convert, mut upload) = (0.0, 0.0, 0.0);
    let mut display = (0, 0);
    for _ in 0..repeat {
        let started = Instant::now();
        let mut reader = VideoReader::open(&path, 2)?;
        let count = reader.frames().len();
        let mut converter = Converter::default();
        let mut texture: Option<wgpu::Texture> = None;
        let (mut d, mut c, mut u) = (0.0, 0.0, 0.0);
        for p in 0..count {
            // One request per frame, as the player's thread receives them.
            let t = Instant::now();
            let mut picture = None;
            reader.read(&[p], None, &mut ReadTimes::default(), &mut |_, pic| {
                picture = Some(pic)
            })?;
            d += t.elapsed().as_secs_f64();
            let picture = picture.ok_or_else(|| anyhow::anyhow!("frame {p} not decoded"))?;
            let t = Instant::now();
            let image = converter.display(picture, 0);
            c += t.elapsed().as_secs_f64();
            let t = Instant::now();
            let [w, h] = image.size;
            display = (w, h);
            let size = wgpu::Extent3d {
                width: w as u32,
                height: h as u32,
                depth_or_array_layers: 1,
            };
            let tex = texture.get_or_insert_with(|| {
                device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("player"),
                    size,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: wgpu::TextureFormat::Rgba8UnormSrgb,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                    view_formats: &[],
                })
            });
            let bytes: &[u8] = bytemuck_pixels(&image.pixels);
            queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: tex,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                bytes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(4 * w as u32),
                    rows_per_image: None,
                },
                size,
            );
            queue.submit([]);
            device.poll(wgpu::PollType::wait_indefinitely())?;
            u += t.elapsed().as_secs_f64();
        }
        secs.push(started.elapsed().as_secs_f64());
        let n = count.max(1) as f64;
        (decode, convert, upload) = (1e3 * d / n, 1e3 * c / n, 1e3 * u / n);
    }
    let median_secs = median(secs.clone());
    Ok(PlayerBench {
        frames,
        display,
        adapter: format!("{} ({:?})", info.name, info.device_type),
        frames_per_sec: f64::from(frames) / median_secs,
        secs,
        decode_ms: decode,
        convert_ms: convert,
        upload_ms: upload,
    })
}

/// The bytes of egui's RGBA pixels, as the renderer uploads them.
#[cfg(feature = "gui")]
fn bytemuck_pixels(pixels: &[eframe::egui::Color32]) -> &[u8] {
    bytemuck::cast_slice(pixels)
}

#[cfg(feature = "gui")]
#[derive(Serialize)]
struct GuiBench {
    items: usize,
    load_secs: f64,
    table_ms: Vec<f64>,
    table_median_ms: f64,
    table_p95_ms: f64,
    gallery_ms: Vec<f64>,
    gallery_median_ms: f64,
    gallery_p95_ms: f64,
    shown_min: usize,
    shown_max: usize,
    peak_rss_mb: Option<f64>,
}

/// Brush, then one whole frame (layout and tessellation) at 1400x860, as the window does on
/// each drag step.
#[cfg(feature = "gui")]
fn bench_gui(items: usize, frames: usize) -> anyhow::Result<GuiBench> {
    use crate::gui::{App, Command, State};
    use eframe::egui;
    let project = std::env::temp_dir().join(format!("framecull-bench-gui-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    drop(generated_catalog(&project, items)?);
    let ctx = egui::Context::default();
    let input = || egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(1400.0, 860.0),
        )),
        ..Default::default()
    };
    let started = Instant::now();
    let mut app = App::with_state(&ctx, State::default(), Some(project.clone()));
    while !app.is_idle() {
        anyhow::ensure!(
            started.elapsed().as_secs() < 300,
            "the catalog did not load"
        );
        let _ = ctx.run_ui(input(), |ui| app.frame_ui(ui));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let load_secs = started.elapsed().as_secs_f64();
    let mut shown = Vec::new();
    let mut measure = |app: &mut App, gallery: bool| {
        app.apply(Command::ShowGallery(gallery));
        let _ = ctx.run_ui(input(), |ui| app.frame_ui(ui));
        let mut ms = Vec::with_capacity(frames);
        for k in 0..frames {
            // A drag step on the file size histogram (every item has a size): a new range,
            // about half the files, every frame.
            let lo = 10_000.0 + (k % 20) as f64 * 100_000.0;
            let t = Instant::now();
            app.apply(Command::Brush {
                column: "size_bytes".into(),
                lo,
                hi: lo + 2_500_000.0,
            });
            let out = ctx.run_ui(input(), |ui| app.frame_ui(ui));
            let _ = ctx.tessellate(out.shapes, out.pixels_per_point);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            shown.push(app.shown());
        }
        ms
    };
    let table = measure(&mut app, false);
    let gallery = measure(&mut app, true);
    let p95 = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 * 0.95).ceil() as usize).clamp(1, v.len()) - 1]
    };
    drop(app);
    let _ = std::fs::remove_dir_all(&project);
    Ok(GuiBench {
        items,
        load_secs,
        table_median_ms: median(table.clone()),
        table_p95_ms: p95(&table),
        table_ms: table,
        gallery_median_ms: median(gallery.clone()),
        gallery_p95_ms: p95(&gallery),
        gallery_ms: gallery,
        shown_min: shown.iter().copied().min().unwrap_or(0),
        shown_max: shown.iter().copied().max().unwrap_or(0),
        peak_rss_mb: peak_rss_mb(),
    })
}
