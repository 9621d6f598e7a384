//! `scan`: a first scan and an unchanged rescan of a generated tree of small images, with peak
//! memory. `probe`: the metadata scan of a corpus against a per-file `ffprobe` loop over the
//! same files, in the same run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use framecull::catalog::Catalog;
use framecull::media::synth::{self, ImageKind, Pattern};
use framecull::scan::{ScanOptions, ScanSummary, scan};
use serde::Serialize;

use crate::util::{median, peak_rss_mb, print, reset_peak_rss};

#[derive(clap::Args, Debug)]
pub struct ScanArgs {
    /// Number of images.
    #[arg(long, default_value_t = 100_000)]
    images: usize,
    /// Where to generate the tree (kept between runs; generated once).
    #[arg(long, default_value = "/tmp/framecull-bench-images")]
    dir: PathBuf,
    /// Probe threads (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// 64x48 pictures (about 1 KB) instead of 256-512 px ones (8-20 KB): a million files in
    /// 4 GB of disk instead of 14 GB, for rescans, where only the number of files counts.
    #[arg(long)]
    tiny: bool,
    /// Runs of each measurement; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    /// Corpus folder (e.g. ../shared/media).
    dir: PathBuf,
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

pub fn run_scan(args: ScanArgs) -> anyhow::Result<()> {
    let r = bench_scan(
        args.images,
        &args.dir,
        args.jobs,
        args.tiny,
        args.repeat.max(1),
    )?;
    print(&r, args.json, || {
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

pub fn run_probe(args: ProbeArgs) -> anyhow::Result<()> {
    let r = bench_probe(&args.dir, args.repeat.max(1))?;
    print(&r, args.json, || {
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

/// Generate `n` small JPEGs (a few distinct pictures, copied) in folders of 1,000.
fn generate_images(dir: &Path, n: usize, tiny: bool) -> anyhow::Result<()> {
    let marker = dir.join(format!(".complete-{n}{}", if tiny { "-tiny" } else { "" }));
    if marker.is_file() {
        return Ok(());
    }
    eprintln!("generating {n} images in {} ...", dir.display());
    let variants: Vec<Vec<u8>> = (0..16)
        .map(|i| {
            let (w, h) = if tiny {
                [(64, 48), (48, 64)][i % 2]
            } else {
                [(256, 256), (320, 240), (240, 320), (512, 384)][i % 4]
            };
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

/// Time one scan of `root` into `project` (created if needed).
pub fn scan_once(
    root: &Path,
    project: &Path,
    options: &ScanOptions,
) -> anyhow::Result<(f64, ScanSummary)> {
    let started = Instant::now();
    let mut catalog = Catalog::create_or_open(project, root)?;
    let summary = scan(
        &mut catalog,
        &framecull::storage::Root::Local(root.to_path_buf()),
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
    tiny: bool,
    repeat: usize,
) -> anyhow::Result<ScanBench> {
    generate_images(dir, n, tiny)?;
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
    let files: Vec<PathBuf> = framecull::scan::walk(&root, &[])
        .files
        .into_iter()
        .filter_map(|f| match f.source {
            framecull::media::Source::File(path) => Some(path),
            framecull::media::Source::Object(_) => None,
        })
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
