//! What a triage of MP4s in a bucket fetches: the index and the packets it decodes, against
//! the files' sizes (720p clips, and a 50 MB video with its index first and last).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use framecull::catalog::Catalog;
use framecull::scan::ScanOptions;
use serde::Serialize;

use super::Moto;

/// What a scan and a triage of the MP4s under one prefix fetched, per file.
#[derive(Serialize, Debug)]
pub(super) struct TriageCost {
    pub(super) what: String,
    pub(super) files: usize,
    /// Bytes per file.
    pub(super) size_bytes: f64,
    /// Requests and bytes per file: the scan's probe, then the triage.
    pub(super) probe_requests: f64,
    pub(super) probe_bytes: f64,
    pub(super) triage_requests: f64,
    pub(super) triage_bytes: f64,
    /// What the triage fetched over the files' size, and with the probe.
    pub(super) triage_share: f64,
    pub(super) share_with_probe: f64,
    pub(super) triage_secs: f64,
}

/// The 720p video with sound of at least 50 MB that a triage of a bucket is measured on
/// (generated once, kept), its index last as FFmpeg writes it, and a copy with its index
/// first.
fn big_720p(dir: &Path) -> anyhow::Result<[PathBuf; 2]> {
    let last = dir.join("triage-last/720p_sound_60s.mp4");
    let first = dir.join("triage-first/720p_sound_60s.mp4");
    let ffmpeg = |args: &[&str]| -> anyhow::Result<()> {
        let out = Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-y"])
            .args(args)
            .output()
            .context("the ffmpeg command line")?;
        anyhow::ensure!(
            out.status.success(),
            "ffmpeg: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    if !last.exists() {
        std::fs::create_dir_all(last.parent().context("a folder")?)?;
        let part = last.with_extension("part.mp4");
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1280x720:rate=30:duration=60",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=60",
            "-vf",
            "noise=alls=7:allf=t",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-b:v",
            "7M",
            "-maxrate",
            "7M",
            "-bufsize",
            "14M",
            "-g",
            "60",
            "-c:a",
            "aac",
            part.to_str().context("a UTF-8 path")?,
        ])?;
        std::fs::rename(&part, &last)?;
    }
    if !first.exists() {
        std::fs::create_dir_all(first.parent().context("a folder")?)?;
        let part = first.with_extension("part.mp4");
        ffmpeg(&[
            "-i",
            last.to_str().context("a UTF-8 path")?,
            "-c",
            "copy",
            "-movflags",
            "+faststart",
            part.to_str().context("a UTF-8 path")?,
        ])?;
        std::fs::rename(&part, &first)?;
    }
    Ok([first, last])
}

/// For each prefix of MP4s (the 720p clips, the 50 MB video with its index first and last):
/// a scan, then a triage (in this process), and what each fetched per file.
pub(super) fn triage_costs(
    moto: &Moto,
    dir: &Path,
    jobs: usize,
) -> anyhow::Result<Vec<TriageCost>> {
    let [first, last] = big_720p(dir)?;
    for (path, prefix) in [(&first, "triage-first"), (&last, "triage-last")] {
        moto.upload(path.parent().context("a folder")?, "bench", prefix)?;
    }
    let prefixes = [
        ("720p H.264 clips", "s3://bench/hd"),
        (
            "720p H.264 with sound, index first",
            "s3://bench/triage-first",
        ),
        (
            "720p H.264 with sound, index last",
            "s3://bench/triage-last",
        ),
    ];
    let project = dir.join("triage-project");
    let mut out = Vec::new();
    for (what, url) in prefixes {
        let root = moto.root(url)?;
        let remote = root.as_remote().context("a bucket")?;
        let _ = std::fs::remove_dir_all(&project);
        let mut catalog = Catalog::create_or_open(&project, &root.recorded())?;
        let options = ScanOptions {
            jobs,
            ..ScanOptions::default()
        };
        let summary = framecull::scan::scan(
            &mut catalog,
            &root,
            &options,
            &AtomicBool::new(false),
            &mut |_| {},
        )?;
        let files = summary.counts.probed as usize;
        let size: u64 = remote.list()?.iter().map(|l| l.size_bytes).sum();
        let probed = remote.counts();
        let started = Instant::now();
        framecull::scan::deep::analyze(
            &mut catalog,
            &root,
            &framecull::scan::deep::AnalyzeOptions {
                jobs,
                isolate: false,
                level: framecull::model::AnalysisLevel::Triage,
                ..Default::default()
            },
            &AtomicBool::new(false),
            &mut |_| {},
        )?;
        let triage_secs = started.elapsed().as_secs_f64();
        let triaged = remote.counts().since(&probed);
        // The list requests of the size count above are not the triage's.
        let n = files.max(1) as f64;
        out.push(TriageCost {
            what: format!("{what} ({url})"),
            files,
            size_bytes: size as f64 / n,
            probe_requests: probed.total() as f64 / n,
            probe_bytes: probed.bytes_read as f64 / n,
            triage_requests: (triaged.get + triaged.head) as f64 / n,
            triage_bytes: triaged.bytes_read as f64 / n,
            triage_share: triaged.bytes_read as f64 / size.max(1) as f64,
            share_with_probe: (probed.bytes_read + triaged.bytes_read) as f64 / size.max(1) as f64,
            triage_secs,
        });
    }
    let _ = std::fs::remove_dir_all(&project);
    Ok(out)
}
