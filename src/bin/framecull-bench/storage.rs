//! `storage`: datasets in object storage, against an S3 server on 127.0.0.1 (moto's, started
//! here): (a) the requests and bytes a probe of each object costs, images and videos, against
//! their sizes; (b) `scan s3://...` against a loop that downloads each object to a temporary
//! file and probes that (the same worker count); (c) the loader reading generated 720p clips
//! from the bucket against the same manifest on the local files; (d) what a triage of MP4s in
//! the bucket fetches (the index and the packets it decodes) against their sizes: the 720p
//! clips, and a 720p video with sound of at least 50 MB, its index first and last.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Context;
use framecull::catalog::Catalog;
use framecull::loader::{Loader, LoaderConfig};
use framecull::media::source::Source;
use framecull::model::MediaKind;
use framecull::scan::ScanOptions;
use framecull::storage::{RequestCounts, Root};
use rayon::prelude::*;
use serde::Serialize;

use crate::load::{LoadSource, every_frame_once, load_sources, scan_and_export};
use crate::util::{median, print};

mod moto;
mod triage;
use moto::{Link, Moto, moto_binary};
use triage::{TriageCost, triage_costs};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The files probed and scanned (default: the corpus, ../shared/media).
    #[arg(long)]
    media: Option<PathBuf>,
    /// moto's S3 server (`pip install 'moto[server]'`; default: $FRAMECULL_MOTO_SERVER, else
    /// moto_server on PATH). Objects are uploaded with boto3 from the Python beside it.
    #[arg(long)]
    moto: Option<PathBuf>,
    /// Where the generated clips and the projects go (clips kept between runs).
    #[arg(long, default_value = "/tmp/framecull-bench-storage")]
    dir: PathBuf,
    /// Scan and probe workers (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Milliseconds each request to the server is held (a relay in front of it), as for a
    /// store that far away; 0: the server on this machine as it is.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Megabytes per second that answers may come back at, all connections together (the
    /// relay paces them), as over the machine's network link; 0: as fast as the server sends.
    /// With `--latency-ms`, a store that far away behind a link that fast, for both sides of
    /// the comparison.
    #[arg(long, default_value_t = 0)]
    mbps: u64,
    /// Requests in flight while scanning (objects probed at once; the download loop keeps
    /// `--jobs` threads).
    #[arg(long, default_value_t = framecull::scan::REQUESTS_IN_FLIGHT)]
    requests: usize,
    /// 720p H.264 clips the loader reads.
    #[arg(long, default_value_t = 4)]
    clips: usize,
    /// Frames per clip (30 fps, a multiple of 16).
    #[arg(long, default_value_t = 320)]
    frames: u32,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

/// Median, 95th percentile and largest of `values`.
#[derive(Serialize, Debug, Clone, Copy)]
struct Spread {
    median: f64,
    p95: f64,
    max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| {
            v.get(((v.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        Spread {
            median: median(v.clone()),
            p95: at(0.95),
            max: at(1.0),
        }
    }
}

/// What probing objects of one kind cost.
#[derive(Serialize, Debug)]
struct ProbeCost {
    kind: &'static str,
    files: usize,
    size_bytes: Spread,
    requests: Spread,
    bytes_read: Spread,
    /// Bytes read over the file's size, per file.
    share_read: Spread,
}

/// A scan of one prefix against a download-then-probe loop.
#[derive(Serialize, Debug)]
struct ScanVs {
    what: String,
    /// The scan's probe threads (requests in flight); the download loop has `jobs`.
    requests_in_flight: usize,
    files: usize,
    total_bytes: u64,
    scan_secs: Vec<f64>,
    scan_files_per_sec: f64,
    scan_requests: RequestCounts,
    /// Objects the loop downloaded: those whose extension is not a known non-media one.
    downloaded: usize,
    download_probe_secs: Vec<f64>,
    download_probe_files_per_sec: f64,
    speedup: f64,
}

#[derive(Serialize, Debug)]
struct LoadVs {
    clips: usize,
    frames: u64,
    clip_bytes: u64,
    workers: usize,
    local_secs: Vec<f64>,
    local_frames_per_sec: f64,
    bucket_secs: Vec<f64>,
    bucket_frames_per_sec: f64,
    share_of_local: f64,
    /// The two runs' batch checksums agree.
    same_batches: bool,
    /// Requests and bytes of one run from the bucket (opening each clip reads its packets
    /// once to index them, then windows read them again).
    bucket_requests: RequestCounts,
    /// Worker seconds (last run) reading packets (storage included) and decoding them.
    local_read_secs: f64,
    local_decode_secs: f64,
    bucket_read_secs: f64,
    bucket_decode_secs: f64,
}

#[derive(Serialize, Debug)]
struct StorageBench {
    server: String,
    /// What the server answers at most: ranged GETs of one byte per second, on `jobs` threads
    /// (each request the scan makes costs at least this).
    server_gets_per_sec: f64,
    cores: usize,
    jobs: usize,
    probe: Vec<ProbeCost>,
    scan: Vec<ScanVs>,
    load: LoadVs,
    triage: Vec<TriageCost>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let link = Link {
        delay: Duration::from_millis(args.latency_ms),
        bytes_per_sec: args.mbps * 1_000_000,
    };
    let moto = Moto::start(&moto_binary(args.moto.as_deref())?, link)?;
    let media = args
        .media
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/media"));
    anyhow::ensure!(
        media.is_dir(),
        "no media folder at {} (give one with --media)",
        media.display()
    );
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
        .max(1);
    let repeat = args.repeat.max(1);
    std::fs::create_dir_all(&args.dir)?;
    let clips_dir = args.dir.join("hd");
    let clips = load_sources(&clips_dir, LoadSource::Hd(args.clips), args.frames)?;
    moto.upload(&media, "bench", "corpus")?;
    moto.upload(&clips_dir, "bench", "hd")?;

    let corpus = moto.root("s3://bench/corpus")?;
    let server_gets_per_sec = small_gets_per_sec(&corpus, jobs)?;
    let probe = probe_costs(&corpus)?;
    let scan = vec![
        scan_vs(
            &moto,
            "s3://bench/corpus",
            "corpus",
            &args.dir,
            jobs,
            args.requests.max(1),
            repeat,
        )?,
        scan_vs(
            &moto,
            "s3://bench/hd",
            "720p H.264 clips",
            &args.dir,
            jobs,
            args.requests.max(1),
            repeat,
        )?,
    ];
    let load = load_vs(&moto, &clips_dir, &clips, &args.dir, repeat)?;
    let triage = triage_costs(&moto, &args.dir, jobs)?;
    let r = StorageBench {
        server: match (args.latency_ms, args.mbps) {
            (0, 0) => format!("moto_server on {}", moto.endpoint),
            (ms, 0) => format!(
                "moto_server on {} behind a relay holding each request {ms} ms",
                moto.direct
            ),
            (ms, mbps) => format!(
                "moto_server on {} behind a relay holding each request {ms} ms and passing \
                 answers at {mbps} MB/s, all connections together",
                moto.direct
            ),
        },
        server_gets_per_sec,
        cores: std::thread::available_parallelism().map_or(0, usize::from),
        jobs,
        probe,
        scan,
        load,
        triage,
    };
    print(&r, args.json, || r.text())
}

/// One-byte ranged GETs per second that the server answers, on `jobs` threads.
fn small_gets_per_sec(root: &Root, jobs: usize) -> anyhow::Result<f64> {
    let remote = root.as_remote().context("a bucket")?;
    let listed = remote.list()?;
    let first = listed
        .iter()
        .find(|l| l.size_bytes > 0)
        .context("no object to read")?;
    let n = 400;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    let started = Instant::now();
    pool.install(|| {
        (0..n)
            .into_par_iter()
            .try_for_each(|_| remote.get_range(&first.rel_path, 0..1).map(drop))
    })?;
    Ok(f64::from(n) / started.elapsed().as_secs_f64())
}

/// Probe every media object of `root` on its own (one at a time, so the store's counters
/// tell each probe's requests), by kind.
fn probe_costs(root: &Root) -> anyhow::Result<Vec<ProbeCost>> {
    let remote = root.as_remote().context("a bucket")?;
    let listed = remote.list()?;
    let mut by_kind: Vec<(MediaKind, u64, RequestCounts)> = Vec::new();
    for object in listed.iter().filter(|l| !is_non_media(&l.rel_path)) {
        let before = remote.counts();
        let source = Source::in_root(root, &object.rel_path, object.size_bytes);
        let probe = framecull::media::probe(&source.open(), Duration::from_secs(20));
        let after = remote.counts();
        if matches!(probe.kind, MediaKind::Image | MediaKind::Video) {
            let spent = RequestCounts {
                get: after.get - before.get,
                head: after.head - before.head,
                bytes_read: after.bytes_read - before.bytes_read,
                ..RequestCounts::default()
            };
            by_kind.push((probe.kind, object.size_bytes, spent));
        }
    }
    Ok([(MediaKind::Image, "images"), (MediaKind::Video, "videos")]
        .into_iter()
        .map(|(kind, name)| {
            let of: Vec<&(MediaKind, u64, RequestCounts)> =
                by_kind.iter().filter(|(k, _, _)| *k == kind).collect();
            let spread = |f: &dyn Fn(u64, &RequestCounts) -> f64| {
                Spread::of(of.iter().map(|(_, size, c)| f(*size, c)).collect())
            };
            ProbeCost {
                kind: name,
                files: of.len(),
                size_bytes: spread(&|size, _| size as f64),
                requests: spread(&|_, c| c.total() as f64),
                bytes_read: spread(&|_, c| c.bytes_read as f64),
                share_read: spread(&|size, c| c.bytes_read as f64 / size.max(1) as f64),
            }
        })
        .collect())
}

/// `scan URL` (no deep pass; `requests_in_flight` objects probed at once) into a new project,
/// against listing the objects and, on `jobs` threads, downloading each with one GET to a
/// temporary file and probing that.
fn scan_vs(
    moto: &Moto,
    url: &str,
    what: &str,
    dir: &Path,
    jobs: usize,
    requests_in_flight: usize,
    repeat: usize,
) -> anyhow::Result<ScanVs> {
    let options = ScanOptions {
        jobs,
        requests_in_flight,
        ..ScanOptions::default()
    };
    let project = dir.join("scan-project");
    let (mut scan_secs, mut download_secs) = (Vec::new(), Vec::new());
    let (mut files, mut total_bytes, mut requests) = (0, 0, RequestCounts::default());
    let mut downloaded = 0;
    let tmp = dir.join("downloads");
    for _ in 0..repeat {
        let root = moto.root(url)?;
        let _ = std::fs::remove_dir_all(&project);
        let started = Instant::now();
        let mut catalog = Catalog::create_or_open(&project, &root.recorded())?;
        let summary = framecull::scan::scan(
            &mut catalog,
            &root,
            &options,
            &AtomicBool::new(false),
            &mut |_| {},
        )?;
        scan_secs.push(started.elapsed().as_secs_f64());
        files = summary.counts.probed as usize;
        let remote = root.as_remote().context("a bucket")?;
        requests = remote.counts();

        // The same objects, downloaded whole and probed as local files.
        let root = moto.root(url)?;
        let remote = root.as_remote().context("a bucket")?;
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        let started = Instant::now();
        let listed = remote.list()?;
        let wanted: Vec<_> = listed
            .iter()
            .filter(|l| !is_non_media(&l.rel_path))
            .collect();
        total_bytes = wanted.iter().map(|l| l.size_bytes).sum();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
        let probed: anyhow::Result<Vec<()>> = pool.install(|| {
            wanted
                .par_iter()
                .enumerate()
                .map(|(i, l)| {
                    let bytes = if l.size_bytes == 0 {
                        Vec::new()
                    } else {
                        remote.get_range(&l.rel_path, 0..l.size_bytes)?
                    };
                    let name = Path::new(&l.rel_path)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let path = tmp.join(format!("{i}-{name}"));
                    std::fs::write(&path, bytes)?;
                    let _ = framecull::media::probe_file(&path, Duration::from_secs(20));
                    std::fs::remove_file(&path)?;
                    Ok(())
                })
                .collect()
        });
        probed?;
        download_secs.push(started.elapsed().as_secs_f64());
        downloaded = wanted.len();
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::fs::remove_dir_all(&project);
    let scan_fps = files as f64 / median(scan_secs.clone());
    let download_fps = downloaded as f64 / median(download_secs.clone());
    Ok(ScanVs {
        what: format!("{what} ({url})"),
        files,
        total_bytes,
        scan_secs,
        scan_files_per_sec: scan_fps,
        scan_requests: requests,
        downloaded,
        requests_in_flight: options.requests_in_flight,
        download_probe_secs: download_secs,
        download_probe_files_per_sec: download_fps,
        speedup: scan_fps / download_fps,
    })
}

/// The loader over a manifest of the clips, reading the local files and then the bucket's
/// copies (`s3://bench/hd`): every frame once, in windows of 16, as `load` does.
fn load_vs(
    moto: &Moto,
    clips_dir: &Path,
    clips: &[PathBuf],
    dir: &Path,
    repeat: usize,
) -> anyhow::Result<LoadVs> {
    let (_, manifest) = scan_and_export(clips_dir, &dir.join("load-project"))?;
    let (_, rows) = framecull::manifest::open_path(&manifest)?;
    let config = LoaderConfig {
        // The bucket's copies have other fingerprints (size and ETag).
        verify_fingerprints: false,
        checksum: true,
        ..every_frame_once()
    };
    let workers = config.workers;
    let local_root = Root::Local(clips_dir.canonicalize()?);
    let run = |root: &Root| -> anyhow::Result<(f64, framecull::loader::Stats)> {
        let started = Instant::now();
        let mut loader = Loader::from_rows(&rows, root, config.clone())?;
        let mut epoch = loader.epoch(0);
        while let Some(batch) = epoch.next() {
            epoch.recycle(batch?);
        }
        drop(epoch);
        let stats = loader.stats().clone();
        anyhow::ensure!(
            stats.skipped_clips.is_empty() && stats.skipped_windows.is_empty(),
            "clips or windows failed: {:?}",
            stats.errors
        );
        Ok((started.elapsed().as_secs_f64(), stats))
    };
    let (mut local_secs, mut bucket_secs) = (Vec::new(), Vec::new());
    let (mut local, mut bucket) = (None, None);
    let mut bucket_requests = RequestCounts::default();
    for _ in 0..repeat {
        let (secs, stats) = run(&local_root)?;
        local_secs.push(secs);
        local = Some(stats);
        let root = moto.root("s3://bench/hd")?;
        let (secs, stats) = run(&root)?;
        bucket_secs.push(secs);
        bucket = Some(stats);
        bucket_requests = root.as_remote().map(|r| r.counts()).unwrap_or_default();
    }
    let (local, bucket) = (local.unwrap_or_default(), bucket.unwrap_or_default());
    let frames = local.frames;
    let local_fps = frames as f64 / median(local_secs.clone());
    let bucket_fps = bucket.frames as f64 / median(bucket_secs.clone());
    Ok(LoadVs {
        clips: clips.len(),
        frames,
        clip_bytes: clips
            .iter()
            .filter_map(|c| std::fs::metadata(c).ok())
            .map(|m| m.len())
            .sum(),
        workers,
        local_secs,
        local_frames_per_sec: local_fps,
        bucket_secs,
        bucket_frames_per_sec: bucket_fps,
        share_of_local: bucket_fps / local_fps,
        same_batches: local.checksum == bucket.checksum && bucket.frames == frames,
        bucket_requests,
        local_read_secs: local.read_secs,
        local_decode_secs: local.decode_secs,
        bucket_read_secs: bucket.read_secs,
        bucket_decode_secs: bucket.decode_secs,
    })
}

/// Skipped by its name alone, by the scan and by a downloader.
fn is_non_media(rel_path: &str) -> bool {
    framecull::media::sniff::classify_extension(Path::new(rel_path))
        == framecull::media::sniff::ExtensionClass::NonMedia
}

fn mib(bytes: f64) -> String {
    if bytes >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
    } else {
        format!("{:.0} KiB", bytes / 1024.0)
    }
}

impl StorageBench {
    fn text(&self) -> String {
        let mut out = format!(
            "object storage against {} ({} cores, {} workers): the server answers {:.0} \
             one-byte GETs/s\n",
            self.server, self.cores, self.jobs, self.server_gets_per_sec
        );
        out.push_str("probe cost per object (median / p95 / max):\n");
        for p in &self.probe {
            out.push_str(&format!(
                "  {} ({}): size {} / {} / {}; requests {:.0} / {:.0} / {:.0}; read {} / {} / {} \
                 ({:.1}% / {:.1}% / {:.1}% of the file)\n",
                p.kind,
                p.files,
                mib(p.size_bytes.median),
                mib(p.size_bytes.p95),
                mib(p.size_bytes.max),
                p.requests.median,
                p.requests.p95,
                p.requests.max,
                mib(p.bytes_read.median),
                mib(p.bytes_read.p95),
                mib(p.bytes_read.max),
                100.0 * p.share_read.median,
                100.0 * p.share_read.p95,
                100.0 * p.share_read.max,
            ));
        }
        for s in &self.scan {
            out.push_str(&format!(
                "scan of {}: {} files, {}: {:.1} files/s ({} in flight; {} requests, {} read) \
                 against download-then-probe {:.1} files/s: {:.1}x\n",
                s.what,
                s.files,
                mib(s.total_bytes as f64),
                s.scan_files_per_sec,
                s.requests_in_flight,
                s.scan_requests.total(),
                mib(s.scan_requests.bytes_read as f64),
                s.download_probe_files_per_sec,
                s.speedup,
            ));
        }
        let l = &self.load;
        out.push_str(&format!(
            "loader, {} 720p clips ({}, {} frames, {} workers): local {:.0} frames/s, bucket \
             {:.0} frames/s ({:.0}% of local; {} requests, {} read); same batches: {}; worker \
             seconds reading / decoding: local {:.1} / {:.1}, bucket {:.1} / {:.1}",
            l.clips,
            mib(l.clip_bytes as f64),
            l.frames,
            l.workers,
            l.local_frames_per_sec,
            l.bucket_frames_per_sec,
            100.0 * l.share_of_local,
            l.bucket_requests.total(),
            mib(l.bucket_requests.bytes_read as f64),
            l.same_batches,
            l.local_read_secs,
            l.local_decode_secs,
            l.bucket_read_secs,
            l.bucket_decode_secs,
        ));
        out.push_str("\ntriage of MP4s in the bucket, per file:");
        for t in &self.triage {
            out.push_str(&format!(
                "\n  {} ({} files of {}): probe {:.0} requests, {}; triage {:.0} requests, {} \
                 ({:.1}% of the file; {:.1}% with the probe), {:.1} s",
                t.what,
                t.files,
                mib(t.size_bytes),
                t.probe_requests,
                mib(t.probe_bytes),
                t.triage_requests,
                mib(t.triage_bytes),
                100.0 * t.triage_share,
                100.0 * t.share_with_probe,
                t.triage_secs,
            ));
        }
        out
    }
}
