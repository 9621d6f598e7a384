//! `triage`: a video's triage against its deep analysis, file by file, on generated long-GOP
//! clips (H.264 and HEVC at 720p and 1080p, two at 4K), beside `ffmpeg -skip_frame nokey -f
//! null` (every keyframe decoded) and `ffprobe -count_packets` (every packet read) on the
//! same files. Throughput in seconds of video per second of wall time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use framecull::model::AnalysisLevel;
use framecull::scan::deep::{ANALYSIS_VERSION, AnalyzeOptions, analyse_file};
use serde::Serialize;

use crate::util::{median, print, scanned};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where the generated clips are kept between runs.
    #[arg(long, default_value = "target/bench-triage")]
    dir: PathBuf,
    /// Length of each clip (the target figures are for 60 s).
    #[arg(long, default_value_t = 60)]
    seconds: u32,
    /// Runs of each measurement; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

/// The clips: name, encoder, size, and the lavfi source (noise makes decoding realistic).
const CLIPS: [(&str, &str, &str); 8] = [
    ("h264_720p", "libx264", "1280x720"),
    ("h264_720p_b", "libx264", "1280x720"),
    ("h264_1080p", "libx264", "1920x1080"),
    ("h264_1080p_b", "libx264", "1920x1080"),
    ("hevc_720p", "libx265", "1280x720"),
    ("hevc_1080p", "libx265", "1920x1080"),
    ("h264_2160p", "libx264", "3840x2160"),
    ("hevc_2160p", "libx265", "3840x2160"),
];

#[derive(Serialize)]
struct Clip {
    name: String,
    seconds: f64,
    size_bytes: u64,
    triage_secs: f64,
    deep_secs: f64,
    /// Deep seconds over triage seconds.
    speedup: f64,
    nokey_secs: f64,
    count_packets_secs: f64,
    /// What the triage found on this clean file (none expected).
    triage_flags: Vec<String>,
}

#[derive(Serialize)]
struct TriageBench {
    clips: Vec<Clip>,
    /// Seconds of video per second of wall time, over all clips and over the 4K ones.
    triage_throughput: f64,
    deep_throughput: f64,
    speedup: f64,
    speedup_4k: f64,
    nokey_throughput: f64,
    count_packets_throughput: f64,
}

impl TriageBench {
    fn text(&self) -> String {
        let mut s = String::from(
            "clip              video s  triage s  deep s  speedup  nokey s  count_packets s\n",
        );
        for c in &self.clips {
            s.push_str(&format!(
                "{:<16} {:>8.0} {:>9.3} {:>7.2} {:>7.1}x {:>8.2} {:>16.3}{}\n",
                c.name,
                c.seconds,
                c.triage_secs,
                c.deep_secs,
                c.speedup,
                c.nokey_secs,
                c.count_packets_secs,
                if c.triage_flags.is_empty() {
                    String::new()
                } else {
                    format!("  flags: {}", c.triage_flags.join(", "))
                }
            ));
        }
        s.push_str(&format!(
            "throughput (s of video per s): triage {:.0}, deep {:.1} -> {:.1}x (4K: {:.1}x); \
             ffmpeg -skip_frame nokey {:.0}; ffprobe -count_packets {:.0}",
            self.triage_throughput,
            self.deep_throughput,
            self.speedup,
            self.speedup_4k,
            self.nokey_throughput,
            self.count_packets_throughput
        ));
        s
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let dir = generate(&args.dir, args.seconds)?;
    let r = bench(&dir, args.repeat.max(1))?;
    print(&r, args.json, || r.text())
}

/// The clips in `dir/SECONDS s/`, made once: 2 s GOPs at 30 fps, no scene cut forcing a
/// keyframe.
fn generate(dir: &Path, seconds: u32) -> anyhow::Result<PathBuf> {
    let dir = dir.join(format!("{seconds}s"));
    std::fs::create_dir_all(&dir)?;
    for (i, (name, codec, size)) in CLIPS.iter().enumerate() {
        let path = dir.join(format!("{name}.mp4"));
        if path.exists() {
            continue;
        }
        eprintln!("generating {}", path.display());
        let source = format!(
            "testsrc2=size={size}:rate=30:duration={seconds},hue=h={}*t,noise=alls=12:allf=t",
            10 + 7 * i
        );
        let gop = ["-g", "60", "-keyint_min", "60"];
        let no_cuts: &[&str] = if *codec == "libx265" {
            &["-x265-params", "scenecut=0:log-level=error"]
        } else {
            &["-sc_threshold", "0"]
        };
        let tmp = dir.join(format!("{name}.tmp.mp4"));
        let status = Command::new("ffmpeg")
            .args([
                "-v", "error", "-y", "-nostdin", "-f", "lavfi", "-i", &source,
            ])
            .args(["-c:v", codec, "-preset", "ultrafast", "-pix_fmt", "yuv420p"])
            .args(gop)
            .args(no_cuts)
            .arg(&tmp)
            .status()
            .context("ffmpeg is needed to generate the clips")?;
        anyhow::ensure!(status.success(), "ffmpeg failed on {name}");
        std::fs::rename(&tmp, &path)?;
    }
    Ok(dir)
}

fn timed(mut f: impl FnMut() -> anyhow::Result<()>, repeat: usize) -> anyhow::Result<f64> {
    let mut times = Vec::new();
    for _ in 0..repeat {
        let started = Instant::now();
        f()?;
        times.push(started.elapsed().as_secs_f64());
    }
    Ok(median(times))
}

fn tool(program: &str, args: &[&str], file: &Path) -> anyhow::Result<()> {
    let status = Command::new(program)
        .args(["-v", "quiet"])
        .args(args)
        .arg(file)
        .args(if program == "ffmpeg" {
            &["-f", "null", "-"][..]
        } else {
            &[][..]
        })
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("{program} is needed for this comparison"))?;
    anyhow::ensure!(status.success(), "{program} failed on {}", file.display());
    Ok(())
}

/// Seconds for the peers on `file`, medians of `repeat` runs: `ffmpeg -skip_frame nokey`
/// (keyframes decoded) and `ffprobe -count_packets` (every packet read).
fn peers_secs(file: &Path, repeat: usize) -> anyhow::Result<(f64, f64)> {
    let nokey_secs = timed(
        || {
            tool(
                "ffmpeg",
                &["-nostdin", "-threads", "1", "-skip_frame", "nokey", "-i"],
                file,
            )
        },
        repeat,
    )?;
    let count_packets_secs = timed(
        || {
            tool(
                "ffprobe",
                &[
                    "-count_packets",
                    "-select_streams",
                    "v:0",
                    "-show_entries",
                    "stream=nb_read_packets",
                ],
                file,
            )
        },
        repeat,
    )?;
    Ok((nokey_secs, count_packets_secs))
}

fn bench(dir: &Path, repeat: usize) -> anyhow::Result<TriageBench> {
    let dir = dir.canonicalize()?;
    let project =
        std::env::temp_dir().join(format!("framecull-bench-triage-{}", std::process::id()));
    let (catalog, root) = scanned(&project, &dir)?;
    let items = catalog.items()?;
    let todo = catalog.analysis_todo(ANALYSIS_VERSION, AnalysisLevel::Deep)?;
    // One file at a time, in this process, one decoding thread each: the cost of one file.
    let options = |level| AnalyzeOptions {
        jobs: 1,
        file_budget: Duration::from_secs(3600),
        isolate: false,
        level,
        ..AnalyzeOptions::default()
    };
    let (triage, deep) = (options(AnalysisLevel::Triage), options(AnalysisLevel::Deep));
    let config = framecull::analysis::flags::Config::default();
    let mut clips = Vec::new();
    for t in &todo {
        let item = items
            .iter()
            .find(|i| i.id == t.id)
            .context("a scanned item")?;
        let seconds = item.info.duration_secs.unwrap_or(0.0);
        let file = dir.join(&t.path);
        let mut flags = Vec::new();
        let triage_secs = timed(
            || {
                let (m, _) = analyse_file(&root, t, &triage);
                flags = framecull::analysis::flags::item_flags(item, Some(&m), &config)
                    .into_iter()
                    .map(|f| f.code)
                    .collect();
                Ok(())
            },
            repeat,
        )?;
        let deep_secs = timed(
            || {
                analyse_file(&root, t, &deep);
                Ok(())
            },
            repeat.min(2),
        )?;
        let (nokey_secs, count_packets_secs) = peers_secs(&file, repeat)?;
        eprintln!(
            "{}: triage {triage_secs:.3} s, deep {deep_secs:.2} s",
            t.path
        );
        clips.push(Clip {
            name: t.path.trim_end_matches(".mp4").to_string(),
            seconds,
            size_bytes: t.size_bytes,
            triage_secs,
            deep_secs,
            speedup: deep_secs / triage_secs,
            nokey_secs,
            count_packets_secs,
            triage_flags: flags,
        });
    }
    let _ = std::fs::remove_dir_all(&project);
    let total = |f: &dyn Fn(&Clip) -> f64, only_4k: bool| -> f64 {
        clips
            .iter()
            .filter(|c| !only_4k || c.name.ends_with("2160p"))
            .map(f)
            .sum()
    };
    let video = total(&|c| c.seconds, false);
    Ok(TriageBench {
        triage_throughput: video / total(&|c| c.triage_secs, false),
        deep_throughput: video / total(&|c| c.deep_secs, false),
        speedup: total(&|c| c.deep_secs, false) / total(&|c| c.triage_secs, false),
        speedup_4k: total(&|c| c.deep_secs, true) / total(&|c| c.triage_secs, true),
        nokey_throughput: video / total(&|c| c.nokey_secs, false),
        count_packets_throughput: video / total(&|c| c.count_packets_secs, false),
        clips,
    })
}
