//! Helpers shared by the benchmarks: printing a result, medians, peak memory, peer scripts.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

/// The length and rate of [`long_videos`].
pub const LONG_SECONDS: u32 = 60;
pub const LONG_FPS: u32 = 30;

/// `count` long videos in `dir`, made once, as users bring them (a drive, a camera's hour):
/// 60 s of 720p H.264 at x264's default quality (CRF 23, veryfast), 2 s GOPs (an IDR every
/// 60 frames, no scene-cut keyframes), a moving pattern with grain, each its own hue.
pub fn long_videos(dir: &Path, count: usize) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context;
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for i in 0..count {
        let path = dir.join(format!("h264_720p_{i}.mp4"));
        if !path.exists() {
            eprintln!("generating {}", path.display());
            let source = format!(
                "testsrc2=size=1280x720:rate={LONG_FPS}:duration={LONG_SECONDS},hue=h={}*t,\
                 noise=alls=6:allf=t",
                10 + 17 * i
            );
            let tmp = dir.join(format!("h264_720p_{i}.tmp.mp4"));
            let status = Command::new("ffmpeg")
                .args([
                    "-v", "error", "-y", "-nostdin", "-f", "lavfi", "-i", &source,
                ])
                .args([
                    "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                ])
                .args(["-g", "60", "-keyint_min", "60", "-sc_threshold", "0"])
                .arg(&tmp)
                .status()
                .context("ffmpeg is needed to generate the long videos")?;
            anyhow::ensure!(status.success(), "ffmpeg failed on long video {i}");
            std::fs::rename(&tmp, &path)?;
        }
        out.push(path);
    }
    Ok(out)
}

/// Seconds for `ffmpeg -threads THREADS -f null` to decode each of `files` in turn.
pub fn ffmpeg_null(files: &[PathBuf], threads: usize) -> anyhow::Result<f64> {
    use anyhow::Context;
    let started = std::time::Instant::now();
    for f in files {
        let status = Command::new("ffmpeg")
            .args(["-v", "quiet", "-nostdin", "-threads"])
            .arg(threads.to_string())
            .arg("-i")
            .arg(f)
            .args(["-f", "null", "-"])
            .status()
            .context("ffmpeg is needed for this comparison")?;
        anyhow::ensure!(status.success(), "ffmpeg failed on {}", f.display());
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Print a result: pretty JSON with `--json`, else the benchmark's text.
pub fn print<T: Serialize>(r: &T, json: bool, text: impl FnOnce() -> String) -> anyhow::Result<()> {
    let out = if json {
        serde_json::to_string_pretty(r)?
    } else {
        text()
    };
    framecull::output::write_stdout(&out)?;
    Ok(())
}

/// The median; NaN for no values.
pub fn median(mut v: Vec<f64>) -> f64 {
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

/// Reset the kernel's peak-RSS mark for this process (Linux), so the figure covers the scans.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident memory of this process in MB, where known.
pub fn peak_rss_mb() -> Option<f64> {
    peak_rss_bytes().map(|b| b as f64 / (1024.0 * 1024.0))
}

/// Run a peer script. Its last stdout line is the seconds it took; the line before, if any,
/// its JSON result.
pub fn run_python(python: &Path, script: &str, args: &[PathBuf]) -> Option<(f64, Option<String>)> {
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

/// Peak resident memory of this process (bytes), from /proc where available.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A fresh project at `project` (any earlier one removed) with the files of `dir` scanned
/// into it, and the dataset's root.
pub fn scanned(
    project: &Path,
    dir: &Path,
) -> anyhow::Result<(framecull::catalog::Catalog, framecull::storage::Root)> {
    let _ = std::fs::remove_dir_all(project);
    let mut catalog = framecull::catalog::Catalog::create_or_open(project, dir)?;
    let root = framecull::storage::Root::Local(dir.to_path_buf());
    framecull::scan::scan(
        &mut catalog,
        &root,
        &framecull::scan::ScanOptions::default(),
        &std::sync::atomic::AtomicBool::new(false),
        &mut |_| {},
    )?;
    Ok((catalog, root))
}

/// The videos of a folder after an analysis at one level, as `analyze` runs it (worker
/// processes).
pub struct Analysed {
    /// Flag codes by path.
    pub flags: std::collections::BTreeMap<String, Vec<String>>,
    pub metrics: std::collections::BTreeMap<String, framecull::model::Metrics>,
    /// Near-duplicate groups of videos (two or more members), as sets of paths.
    pub groups: std::collections::BTreeSet<std::collections::BTreeSet<String>>,
    /// Wall time of the analysis.
    pub secs: f64,
}

/// Scan `dir` into a temporary project and analyse it at `level`.
pub fn analysed(dir: &Path, level: framecull::model::AnalysisLevel) -> anyhow::Result<Analysed> {
    use framecull::model::MediaKind;
    use std::collections::{BTreeMap, BTreeSet};
    let project =
        std::env::temp_dir().join(format!("framecull-bench-{}-{level:?}", std::process::id()));
    let (mut catalog, root) = scanned(&project, dir)?;
    let options = framecull::scan::deep::AnalyzeOptions {
        level,
        ..framecull::scan::deep::AnalyzeOptions::default()
    };
    let started = std::time::Instant::now();
    framecull::scan::deep::analyze(
        &mut catalog,
        &root,
        &options,
        &std::sync::atomic::AtomicBool::new(false),
        &mut |_| {},
    )?;
    let secs = started.elapsed().as_secs_f64();
    // Duplicate groups, as an ingest derives them after an analysis.
    framecull::scan::derive::recompute_for_project(&mut catalog)?;
    let mut metrics = catalog.all_metrics()?;
    let dups = catalog.all_dups()?;
    let config = framecull::analysis::flags::Config::default();
    let videos: Vec<_> = catalog
        .items()?
        .into_iter()
        .filter(|i| i.kind == MediaKind::Video)
        .collect();
    let mut flags = BTreeMap::new();
    let mut by_path = BTreeMap::new();
    let mut members: BTreeMap<_, BTreeSet<String>> = BTreeMap::new();
    for i in &videos {
        let m = metrics.remove(&i.id);
        let codes = framecull::analysis::flags::item_flags(i, m.as_ref(), &config)
            .into_iter()
            .map(|f| f.code)
            .collect();
        flags.insert(i.path.clone(), codes);
        if let Some(m) = m {
            by_path.insert(i.path.clone(), m);
        }
        if let Some(d) = dups.get(&i.id).filter(|d| !d.exact) {
            members.entry(d.group).or_default().insert(i.path.clone());
        }
    }
    drop(catalog);
    let _ = std::fs::remove_dir_all(&project);
    Ok(Analysed {
        flags,
        metrics: by_path,
        groups: members.into_values().filter(|g| g.len() > 1).collect(),
        secs,
    })
}

/// Where a triage benchmark keeps its generated clips, and the media corpus it reads beside
/// them.
#[derive(clap::Args, Debug)]
pub struct TriageSets {
    /// Where the generated clips are kept between runs.
    #[arg(long, default_value = "target/bench-triage")]
    pub dir: PathBuf,
    /// The media corpus; left out where absent.
    #[arg(long, default_value = "../shared/media")]
    pub media: PathBuf,
    /// Length of each generated clip in seconds.
    #[arg(long, default_value_t = 30)]
    pub seconds: u32,
}

/// A share as a whole percentage, `-` where there is none.
pub fn pct(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{:.0}%", r * 100.0))
}
