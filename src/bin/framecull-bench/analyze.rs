//! `analyze`: deep analysis of a folder of videos and one of images, against `ffmpeg -f null`
//! decoding, PySceneDetect's ContentDetector and cleanvision on the same files.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use framecull::catalog::Catalog;
use framecull::scan::{ScanOptions, scan_with};
use serde::Serialize;

use crate::util::{ffmpeg_null, median, print, run_python};

#[derive(clap::Args, Debug)]
pub struct Args {
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
    /// Where the long videos are made (once) for the long-file case: one 60 s 720p H.264
    /// video with 2 s GOPs deep, then two at once, against `ffmpeg -threads JOBS -f null`.
    #[arg(long, default_value = "target/bench-long")]
    long_dir: PathBuf,
    /// Decoder threads of every video (default: each file its share of the jobs' threads);
    /// 1 times the deep pass as it was before files shared them.
    #[arg(long)]
    file_threads: Option<usize>,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = framecull::scan::deep::AnalyzeOptions {
        file_threads: args.file_threads,
        ..framecull::scan::deep::AnalyzeOptions::default()
    };
    let repeat = args.repeat.max(1);
    let mut r = bench_analyze(&args.videos, &args.images, &args.python, &options, repeat)?;
    r.long = Some(bench_long(&args.long_dir, &options, repeat)?);
    print(&r, args.json, || r.text())
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
    /// Whether the timed runs used worker processes (a `framecull` binary beside this one).
    isolated: bool,
    /// The same runs with FFmpeg in this process, and the workers' cost over them.
    in_process_video_secs: f64,
    in_process_image_secs: f64,
    isolation_cost_videos: f64,
    isolation_cost_images: f64,
    long: Option<LongBench>,
}

/// The deep pass on long videos, where files in flight are fewer than cores.
#[derive(Serialize)]
struct LongBench {
    /// One long video: framecull's scan with the deep pass, and `ffmpeg -threads JOBS -f
    /// null` decoding it, and framecull's time over ffmpeg's.
    one_secs: f64,
    one_ffmpeg_secs: f64,
    one_ratio: f64,
    /// Two long videos.
    two_secs: f64,
    two_ffmpeg_secs: f64,
    two_ratio: f64,
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
             image analysis of {} images: {:.2} s; cleanvision: {} -> framecull {} faster\n\
             worker processes ({}): videos {:+.1}% over {:.2} s in process, images {:+.1}% over {:.2} s",
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
            if self.isolated {
                "on"
            } else {
                "none found: both in process"
            },
            self.isolation_cost_videos * 100.0,
            self.in_process_video_secs,
            self.isolation_cost_images * 100.0,
            self.in_process_image_secs,
        ) + &self.long.as_ref().map_or(String::new(), |l| {
            format!(
                "\nlong videos (60 s, 720p, H.264, 2 s GOPs), {} jobs: one deep {:.2} s, ffmpeg -threads {} \
                 -f null {:.2} s -> {:.2}x its time; two deep {:.2} s, ffmpeg {:.2} s -> {:.2}x",
                self.jobs,
                l.one_secs,
                self.jobs,
                l.one_ffmpeg_secs,
                l.one_ratio,
                l.two_secs,
                l.two_ffmpeg_secs,
                l.two_ratio
            )
        })
    }
}

/// The long-file case: one, then two, long videos in folders of their own under `dir`.
fn bench_long(
    dir: &Path,
    options: &framecull::scan::deep::AnalyzeOptions,
    repeat: usize,
) -> anyhow::Result<LongBench> {
    let videos = crate::util::long_videos(&dir.join("videos"), 2)?;
    let folder = |name: &str, files: &[PathBuf]| -> anyhow::Result<PathBuf> {
        let folder = dir.join(name);
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder)?;
        for f in files {
            let name = f.file_name().context("a video file")?;
            std::os::unix::fs::symlink(f.canonicalize()?, folder.join(name))?;
        }
        Ok(folder)
    };
    let (one, two) = (folder("one", &videos[..1])?, folder("two", &videos)?);
    let (mut ours1, mut ff1, mut ours2, mut ff2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeat {
        ours1.push(deep_once(&one, options)?.0);
        ff1.push(ffmpeg_null(&videos[..1], options.jobs)?);
        ours2.push(deep_once(&two, options)?.0);
        ff2.push(ffmpeg_null(&videos, options.jobs)?);
    }
    let (o1, f1, o2, f2) = (median(ours1), median(ff1), median(ours2), median(ff2));
    Ok(LongBench {
        one_secs: o1,
        one_ffmpeg_secs: f1,
        one_ratio: o1 / f1,
        two_secs: o2,
        two_ffmpeg_secs: f2,
        two_ratio: o2 / f2,
    })
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
    options: &framecull::scan::deep::AnalyzeOptions,
) -> anyhow::Result<(f64, u64, Vec<VideoCuts>)> {
    let project = std::env::temp_dir().join(format!("framecull-bench-deep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    let dir = dir.canonicalize()?;
    let started = Instant::now();
    let mut catalog = Catalog::create_or_open(&project, &dir)?;
    let root = framecull::storage::Root::Local(dir.clone());
    let scan_options = ScanOptions {
        jobs: options.jobs,
        ..ScanOptions::default()
    };
    let never = AtomicBool::new(false);
    // One pool of workers for the probes and the analysis, as `framecull scan --deep` has.
    let limits = framecull::analysis::flags::Config::default().limits;
    let workers =
        framecull::scan::worker::pool(limits.memory_bytes(), options.isolate, options.jobs);
    scan_with(
        &mut catalog,
        &root,
        &scan_options,
        Some(&workers),
        &never,
        &mut |_| {},
    )?;
    framecull::scan::deep::analyze_with(
        &mut catalog,
        &root,
        options,
        Some(&workers),
        &never,
        &mut |_| {},
    )?;
    let secs = started.elapsed().as_secs_f64();
    let metrics = catalog.all_metrics()?;
    let cuts = catalog.all_cuts()?;
    let mut frames = 0;
    let mut videos = Vec::new();
    for item in catalog.items()? {
        if item.kind != framecull::model::MediaKind::Video
            || item.status != framecull::model::ItemStatus::Ok
        {
            continue;
        }
        frames += metrics.get(&item.id).map_or(0, |m| m.decoded_frames);
        let start = item.info.start_secs.unwrap_or(0.0);
        videos.push(VideoCuts {
            path: framecull::model::local_path(&dir, &item.path),
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
    options: &framecull::scan::deep::AnalyzeOptions,
    repeat: usize,
) -> anyhow::Result<AnalyzeBench> {
    // The same analysis with FFmpeg in this process: what the worker processes cost.
    let in_process = framecull::scan::deep::AnalyzeOptions {
        isolate: false,
        ..options.clone()
    };
    let isolated = framecull::scan::worker::spec(None).is_some();
    let (mut ours, mut ffmpeg, mut psd) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours_in_process, mut images_in_process) = (Vec::new(), Vec::new());
    let mut frames = 0;
    let mut video_cuts = Vec::new();
    let mut agreement = None;
    for _ in 0..repeat {
        let (secs, f, cuts) = deep_once(videos, options)?;
        ours.push(secs);
        ours_in_process.push(deep_once(videos, &in_process)?.0);
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
        ours_img.push(deep_once(images, options)?.0);
        images_in_process.push(deep_once(images, &in_process)?.0);
        if let Some((s, _)) = run_python(python, CLEANVISION, &[images.to_path_buf()]) {
            cv.push(s);
        }
    }
    let image_count = framecull::scan::walk(&images.canonicalize()?, &[])
        .files
        .len();
    let (v, f) = (median(ours), median(ffmpeg));
    let p = (!psd.is_empty()).then(|| median(psd));
    let (i, c) = (median(ours_img), (!cv.is_empty()).then(|| median(cv)));
    let (vp, ip) = (median(ours_in_process), median(images_in_process));
    let cut_f1 = agreement.map(|(tp, fp, fn_)| {
        let (tp, fp, fn_) = (tp as f64, fp as f64, fn_ as f64);
        if tp == 0.0 {
            0.0
        } else {
            2.0 * tp / (2.0 * tp + fp + fn_)
        }
    });
    Ok(AnalyzeBench {
        isolated,
        in_process_video_secs: vp,
        in_process_image_secs: ip,
        isolation_cost_videos: v / vp - 1.0,
        isolation_cost_images: i / ip - 1.0,
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
        long: None,
    })
}
