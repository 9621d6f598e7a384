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
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
