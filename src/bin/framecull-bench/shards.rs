//! `export --shards N`: WebDataset shards (`--format webdataset`) of N clip files against
//! GNU `tar` over the same files on the same disk, in the same run: the shard writer
//! (`framecull_manifest::webdataset`) on a version's rows whose clip files are N files of
//! `--shard-file-mib` MiB each, kept under `--dir` between runs.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use framecull::manifest::{ExportOptions, Format, Include, ManifestRow};
use serde::Serialize;

use crate::util::median;

#[derive(Serialize)]
pub struct ShardsBench {
    files: usize,
    bytes: u64,
    /// Seconds of each run: the shard writer (each shard synced before its rename) and
    /// `tar -cf` (its file left for the kernel to write) as each returns, then each followed
    /// by `sync` of its files.
    framecull_secs: Vec<f64>,
    tar_secs: Vec<f64>,
    framecull_sync_secs: Vec<f64>,
    tar_sync_secs: Vec<f64>,
    framecull_mib_s: f64,
    tar_mib_s: f64,
    framecull_sync_mib_s: f64,
    tar_sync_mib_s: f64,
    /// framecull's speed over tar's (medians): the target is at least 0.8.
    of_tar: f64,
    /// The same, each followed by `sync`.
    of_tar_sync: f64,
}

impl ShardsBench {
    pub fn text(&self) -> String {
        format!(
            "WebDataset shards of {} clip files ({:.0} MiB): framecull {:.0} MiB/s {:?}, tar \
             {:.0} MiB/s {:?} ({:.2}x of tar's speed); each then sync: framecull {:.0} MiB/s \
             {:?}, tar {:.0} MiB/s {:?} ({:.2}x)",
            self.files,
            self.bytes as f64 / (1 << 20) as f64,
            self.framecull_mib_s,
            self.framecull_secs,
            self.tar_mib_s,
            self.tar_secs,
            self.of_tar,
            self.framecull_sync_mib_s,
            self.framecull_sync_secs,
            self.tar_sync_mib_s,
            self.tar_sync_secs,
            self.of_tar_sync
        )
    }
}

pub fn bench(
    dir: &Path,
    files: usize,
    file_mib: usize,
    repeat: usize,
) -> anyhow::Result<ShardsBench> {
    let work = dir.join("shards");
    let project = work.join("project");
    let clips = work.join("clips");
    let size = file_mib << 20;
    let rows = clip_files(&project, &clips, files, size)?;
    let list = work.join("files.txt");
    let names: String = rows
        .iter()
        .filter_map(|r| r.clip.file.as_deref())
        .map(|n| format!("{n}\n"))
        .collect();
    std::fs::write(&list, names)?;
    let bytes = (rows.len() * size) as u64;
    // Every file read once, so that both start from the page cache (`tar -cf /dev/null`
    // would not do: GNU tar reads no data for an archive it sees is /dev/null).
    for row in &rows {
        let name = row.clip.file.as_deref().unwrap_or_default();
        std::io::copy(
            &mut std::fs::File::open(clips.join(name))?,
            &mut std::io::sink(),
        )?;
    }
    let out = work.join("out");
    let (mut ours, mut tars) = (Vec::new(), Vec::new());
    let (mut our_syncs, mut tar_syncs) = (Vec::new(), Vec::new());
    for _ in 0..repeat.max(1) {
        tars.push(time_tar(&out, &clips, &list, false)?);
        tar_syncs.push(time_tar(&out, &clips, &list, true)?);
        ours.push(time_shards(&out, &clips, &rows, false)?);
        our_syncs.push(time_shards(&out, &clips, &rows, true)?);
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&project);
    let mib_s = |secs: &[f64]| bytes as f64 / (1 << 20) as f64 / median(secs.to_vec());
    Ok(ShardsBench {
        files: rows.len(),
        bytes,
        framecull_mib_s: mib_s(&ours),
        tar_mib_s: mib_s(&tars),
        framecull_sync_mib_s: mib_s(&our_syncs),
        tar_sync_mib_s: mib_s(&tar_syncs),
        of_tar: median(tars.clone()) / median(ours.clone()),
        of_tar_sync: median(tar_syncs.clone()) / median(our_syncs.clone()),
        framecull_secs: ours,
        tar_secs: tars,
        framecull_sync_secs: our_syncs,
        tar_sync_secs: tar_syncs,
    })
}

/// A generated version of `files` rows in `project`, each given a clip file of its own in
/// `clips` of `size` bytes (made where missing, kept for the next run).
fn clip_files(
    project: &Path,
    clips: &Path,
    files: usize,
    size: usize,
) -> anyhow::Result<Vec<ManifestRow>> {
    let _ = std::fs::remove_dir_all(project);
    std::fs::create_dir_all(clips)?;
    let catalog = crate::generated::catalog(project, files)?;
    let options = ExportOptions {
        name: "shards".into(),
        formats: vec![Format::Jsonl],
        split: None,
        split_seed: 1,
        include: Include::Unreviewed,
        filter: None,
        shard_size: None,
    };
    framecull::manifest::export(&catalog, &options)?;
    let mut rows = framecull::manifest::read_version(project, "shards", 1)?;
    let mut block = vec![0u8; size];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for row in &mut rows {
        let name = format!("{}.mp4", row.clip_id);
        let path = clips.join(&name);
        if std::fs::metadata(&path).map(|m| m.len() as usize).ok() != Some(size) {
            // Bytes that do not compress (as video does not).
            for chunk in block.chunks_mut(8) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
            }
            std::fs::File::create(&path)?.write_all(&block)?;
        }
        row.clip.file = Some(name);
    }
    Ok(rows)
}

/// Seconds for `tar -cf` of the files `list` names in `clips` into `out`, with a `sync` of
/// its file when `sync`.
fn time_tar(out: &Path, clips: &Path, list: &Path, sync: bool) -> anyhow::Result<f64> {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
    let tar_file = out.join("all.tar");
    let started = Instant::now();
    let status = Command::new("tar")
        .arg("-cf")
        .arg(&tar_file)
        .arg("-C")
        .arg(clips)
        .arg("-T")
        .arg(list)
        .status()?;
    anyhow::ensure!(status.success(), "tar failed");
    if sync {
        anyhow::ensure!(Command::new("sync").arg(&tar_file).status()?.success());
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Seconds for the shard writer to pack `rows`' clip files into `out`, with a `sync` of its
/// shards when `sync`.
fn time_shards(out: &Path, clips: &Path, rows: &[ManifestRow], sync: bool) -> anyhow::Result<f64> {
    let _ = std::fs::remove_dir_all(out);
    let wds = out.join("wds");
    let started = Instant::now();
    let index = framecull::manifest::webdataset::write_webdataset(
        rows,
        clips,
        &wds,
        framecull::manifest::webdataset::DEFAULT_SHARD_BYTES,
        (&AtomicBool::new(false), &Default::default()),
    )?;
    if sync {
        let shards = index.splits.values().flat_map(|s| &s.shards);
        let files = shards.map(|s| wds.join(&s.file));
        anyhow::ensure!(Command::new("sync").args(files).status()?.success());
    }
    let secs = started.elapsed().as_secs_f64();
    let samples: u64 = index.splits.values().map(|s| s.samples).sum();
    anyhow::ensure!(samples as usize == rows.len(), "{samples} samples written");
    Ok(secs)
}
