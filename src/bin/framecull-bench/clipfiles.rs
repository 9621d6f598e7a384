//! `export --clip-files`: a manifest's clips written as files of their own (`framecull export
//! --materialize`, smart cut) against re-encoding each clip with `ffmpeg -ss S -to E -i SRC
//! -c:v libx264 -preset veryfast`, on generated 60 s 720p H.264 sources with 2 s GOPs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context;
use serde::Serialize;

#[derive(Serialize)]
pub struct ClipFilesBench {
    clips: usize,
    clip_secs: f64,
    /// Wall time of `framecull export --materialize` (every clip, one process).
    framecull_secs: f64,
    /// Wall time of one `ffmpeg` re-encode per clip, one after the other.
    ffmpeg_secs: f64,
    speedup: f64,
    frames_copied: u64,
    frames_reencoded: u64,
    /// Bytes of the clip files, of the source spans they hold (each source's bytes in
    /// proportion to the clip's share of its frames), and of ffmpeg's files.
    framecull_bytes: u64,
    source_span_bytes: u64,
    ffmpeg_bytes: u64,
}

impl ClipFilesBench {
    pub fn text(&self) -> String {
        format!(
            "{} clips of {:.0} s: framecull {:.1} s ({} frames copied, {} encoded), ffmpeg \
             re-encoding {:.1} s -> {:.1}x; bytes {:.1} MiB against {:.1} MiB of source spans \
             ({:+.0}%), ffmpeg's {:.1} MiB",
            self.clips,
            self.clip_secs,
            self.framecull_secs,
            self.frames_copied,
            self.frames_reencoded,
            self.ffmpeg_secs,
            self.speedup,
            mib(self.framecull_bytes),
            mib(self.source_span_bytes),
            100.0 * (self.framecull_bytes as f64 / self.source_span_bytes as f64 - 1.0),
            mib(self.ffmpeg_bytes)
        )
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

const SOURCES: usize = 2;
use crate::util::{LONG_FPS as FPS, LONG_SECONDS as SECONDS};

/// Run the `framecull` next to this benchmark with `args`; its stdout.
fn framecull(args: &[&str]) -> anyhow::Result<String> {
    let exe = std::env::current_exe()?.with_file_name("framecull");
    let out = Command::new(&exe)
        .args(args)
        .output()
        .with_context(|| format!("{} is needed (build it too)", exe.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "framecull {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn bench(dir: &Path, clips: usize, clip_secs: u32) -> anyhow::Result<ClipFilesBench> {
    let data = dir.join("sources");
    let files = crate::util::long_videos(&data, SOURCES)?;
    let work = std::env::temp_dir().join(format!("framecull-bench-clips-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let project = work.join("project");
    let project_arg = project.to_str().context("a UTF-8 temporary folder")?;
    framecull(&[
        "scan",
        data.to_str().unwrap_or_default(),
        "--deep",
        "--project",
        project_arg,
    ])?;
    let frames = (SECONDS * FPS) as usize;
    let length = (clip_secs * FPS) as usize;
    let spans = add_clips(project_arg, &files, clips, length)?;
    let out = work.join("clips");
    let started = Instant::now();
    let report = framecull(&[
        "export",
        "--project",
        project_arg,
        "--name",
        "bench",
        "--format",
        "jsonl",
        "--json",
        "--materialize",
        out.to_str().unwrap_or_default(),
    ])?;
    let framecull_secs = started.elapsed().as_secs_f64();
    let report: serde_json::Value = serde_json::from_str(&report)?;
    let materialized = &report["materialized"];
    anyhow::ensure!(
        materialized["written"].as_u64() == Some(clips as u64),
        "not every clip was written: {materialized}"
    );
    let peer = work.join("ffmpeg");
    let ffmpeg_secs = ffmpeg_clips(&peer, &spans, length)?;
    let bytes_in = |dir: &Path| -> u64 {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    let source_span_bytes = spans
        .iter()
        .map(|(file, _)| {
            let size = std::fs::metadata(file).map_or(0, |m| m.len());
            (size as f64 * length as f64 / frames as f64) as u64
        })
        .sum();
    let r = ClipFilesBench {
        clips,
        clip_secs: clip_secs as f64,
        framecull_secs,
        ffmpeg_secs,
        speedup: ffmpeg_secs / framecull_secs,
        frames_copied: materialized["copied_frames"].as_u64().unwrap_or(0),
        frames_reencoded: materialized["reencoded_frames"].as_u64().unwrap_or(0),
        framecull_bytes: bytes_in(&out),
        source_span_bytes,
        ffmpeg_bytes: bytes_in(&peer),
    };
    let _ = std::fs::remove_dir_all(&work);
    Ok(r)
}

/// `clips` clips of `length` frames added to the project over `files` in turn, then every
/// file accepted: each clip's source and first frame.
fn add_clips(
    project_arg: &str,
    files: &[PathBuf],
    clips: usize,
    length: usize,
) -> anyhow::Result<Vec<(PathBuf, usize)>> {
    // Clip i: a start spread over the source by a fixed stride (frames), `length` long.
    let frames = (SECONDS * FPS) as usize;
    let mut spans = Vec::new();
    for i in 0..clips {
        let file = &files[i % files.len()];
        let start = (i * 7919 + 13) % (frames - length);
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let (s, e) = (format!("f{start}"), format!("f{}", start + length));
        framecull(&[
            "clips",
            "--project",
            project_arg,
            "add",
            name,
            "--start",
            &s,
            "--end",
            &e,
        ])?;
        spans.push((file.clone(), start));
    }
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name()?.to_str().map(String::from))
        .collect();
    let mut accept = vec!["review", "accept"];
    accept.extend(names.iter().map(String::as_str));
    accept.extend(["--project", project_arg]);
    framecull(&accept)?;
    Ok(spans)
}

/// Seconds for ffmpeg to cut and encode each span (`-ss`, `-to`, libx264 `veryfast`) into
/// `peer`, one after the other.
fn ffmpeg_clips(peer: &Path, spans: &[(PathBuf, usize)], length: usize) -> anyhow::Result<f64> {
    std::fs::create_dir_all(peer)?;
    let started = Instant::now();
    for (i, (file, start)) in spans.iter().enumerate() {
        let (s, e) = (
            *start as f64 / FPS as f64,
            (start + length) as f64 / FPS as f64,
        );
        let status = Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-nostdin"])
            .args(["-ss", &format!("{s:.6}"), "-to", &format!("{e:.6}"), "-i"])
            .arg(file)
            .args(["-an", "-c:v", "libx264", "-preset", "veryfast"])
            .arg(peer.join(format!("{i}.mp4")))
            .status()?;
        anyhow::ensure!(status.success(), "ffmpeg failed on clip {i}");
    }
    Ok(started.elapsed().as_secs_f64())
}
