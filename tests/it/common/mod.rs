//! Shared helpers for integration tests: synthetic fixtures and running the CLI.
#![allow(dead_code, clippy::unwrap_used)]

pub mod azurite;
pub mod s3;
pub mod webdav;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use framecull::media::synth::{self, ImageKind, Pattern, VideoSpec};

/// The framecull command, its fault injection on (files named `framecull-fault-*` make its
/// workers crash, hang or over-allocate; no other file is touched).
pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_framecull"));
    cmd.env_remove("FRAMECULL_LOG")
        .env(framecull::model::FAULTS_ENV, "1");
    cmd
}

/// The framecull command, under a file-size limit (RLIMIT_FSIZE, through util-linux's
/// `prlimit`: writes past it fail as on a full disk) when one is given.
pub fn bin_with_file_size_limit(limit: Option<u64>) -> Command {
    match limit {
        Some(bytes) => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--fsize={bytes}"))
                .arg(env!("CARGO_BIN_EXE_framecull"))
                .env_remove("FRAMECULL_LOG")
                .env(framecull::model::FAULTS_ENV, "1");
            c
        }
        None => bin(),
    }
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run framecull")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Rows in the catalog's items table, read-only (0 while it cannot be read: a scan being
/// killed mid-way is still creating it).
pub fn count_items(db: &Path) -> i64 {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0))
        .unwrap_or(0)
}

/// `files` copies of one small JPEG (`seed.jpg` and `dNN/img_NNNNN.jpg` in 40 folders): a
/// tree a scan takes a while over.
pub fn copies_of_one_image(root: &Path, files: usize) {
    let seed = image(root, "seed.jpg", ImageKind::Jpeg, 32, 24, Some(1));
    for i in 1..files {
        let dir = root.join(format!("d{:02}", i % 40));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&seed, dir.join(format!("img_{i:05}.jpg"))).unwrap();
    }
}

/// Run framecull with `args`, SIGKILL it as soon as the catalog at `db` holds a row (or
/// after 60 s), and return the rows it holds then.
pub fn kill_after_first_batch(args: &[&str], db: &Path) -> i64 {
    let mut child = bin()
        .args(args)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) && count_items(db) == 0 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let rows = count_items(db);
    assert!(rows > 0, "no batch was committed before the deadline");
    rows
}

/// `list --format jsonl` parsed, keyed by path.
pub fn list_jsonl(project: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    list_jsonl_where(project, None)
}

/// `list --format jsonl [--where FILTER]` parsed, keyed by path.
/// The flag codes of a `list --format jsonl` row, in its order.
pub fn flag_codes(row: &serde_json::Value) -> Vec<String> {
    row["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

pub fn list_jsonl_where(
    project: &Path,
    filter: Option<&str>,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut args = vec![
        "list",
        "--project",
        project.to_str().unwrap(),
        "--format",
        "jsonl",
    ];
    args.extend(filter.map(|f| ["--where", f]).into_iter().flatten());
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "list failed: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["path"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

pub fn video(dir: &Path, name: &str, spec: &VideoSpec) -> PathBuf {
    let path = dir.join(name);
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    synth::write_video(&path, spec).unwrap_or_else(|e| panic!("writing {name}: {e}"));
    path
}

pub fn image(
    dir: &Path,
    name: &str,
    kind: ImageKind,
    w: u32,
    h: u32,
    exif: Option<u16>,
) -> PathBuf {
    let path = dir.join(name);
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    synth::write_image(&path, kind, w, h, Pattern::MovingBox { speed: 3 }, 1, exif).unwrap();
    path
}

/// A small mixed dataset: videos of several codecs and containers, images, broken files.
/// Returns the number of files written.
pub fn mixed_dataset(dir: &Path) -> usize {
    video(
        dir,
        "clips/h264.mp4",
        &VideoSpec::new("libx264", 320, 240, 25, 25),
    );
    video(
        dir,
        "clips/vp9.webm",
        &VideoSpec::new("libvpx-vp9", 160, 120, 30, 15),
    );
    video(
        dir,
        "clips/mpeg4.avi",
        &VideoSpec::new("mpeg4", 176, 144, 15, 15),
    );
    let mut rotated = VideoSpec::new("libx264", 320, 180, 30, 10);
    rotated.rotation_deg = Some(90);
    video(dir, "clips/rotated.mp4", &rotated);
    image(dir, "images/a.png", ImageKind::Png, 64, 48, None);
    image(dir, "images/b.jpg", ImageKind::Jpeg, 80, 60, Some(6));
    std::fs::write(dir.join("images/empty.jpg"), b"").unwrap();
    std::fs::write(dir.join("clips/garbage.mp4"), b"definitely not a video").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not media, never catalogued").unwrap();
    8
}

/// What the deep pass stores of one file: its metrics, flags and frame table.
pub type DeepRow = (
    framecull::model::Metrics,
    Vec<framecull::model::Flag>,
    Option<framecull::model::FrameTable>,
);

/// Each file of `dir` by path, as a scan with the deep pass (two jobs) stores it when every
/// video decodes on `threads` decoder threads.
pub fn deep_rows(dir: &Path, threads: usize) -> std::collections::BTreeMap<String, DeepRow> {
    use framecull::catalog::Project;
    use framecull::scan::ScanOptions;
    use framecull::scan::deep::AnalyzeOptions;
    use framecull::scan::pipeline::{Dataset, IngestOptions};
    let proj = tempfile::tempdir().unwrap();
    let mut dataset = Dataset::open(dir, Some(Project::at(proj.path()))).unwrap();
    let options = IngestOptions {
        scan: Some(ScanOptions::default()),
        analyse: Some(AnalyzeOptions {
            jobs: 2,
            file_threads: Some(threads),
            ..AnalyzeOptions::default()
        }),
    };
    let never = std::sync::atomic::AtomicBool::new(false);
    dataset.ingest(&options, &never, &mut |_| {}).unwrap();
    let catalog = &dataset.catalog;
    let metrics = catalog.all_metrics().unwrap();
    let mut flags = catalog.all_flags().unwrap();
    catalog
        .items()
        .unwrap()
        .into_iter()
        .map(|item| {
            let row = (
                metrics.get(&item.id).cloned().unwrap_or_default(),
                flags.remove(&item.id).unwrap_or_default(),
                catalog.frame_table(item.id).unwrap(),
            );
            (item.path, row)
        })
        .collect()
}

pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("FRAMECULL_MEDIA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/media"));
    if dir.join("ground_truth.jsonl").is_file() {
        Some(dir)
    } else if std::env::var_os("FRAMECULL_REQUIRE_MEDIA").is_some() {
        panic!(
            "media corpus not found at {} and FRAMECULL_REQUIRE_MEDIA is set",
            dir.display()
        );
    } else {
        eprintln!(
            "SKIPPED: media corpus not found at {} (set FRAMECULL_MEDIA to run this test)",
            dir.display()
        );
        None
    }
}

/// The corpus deep-scanned once for every test of this process that only reads the result
/// (`scan MEDIA --project P --deep`, under the tests' scratch folder of `target/`): the media
/// folder and the project. Tests must not change the project.
pub fn corpus_deep_project() -> Option<(PathBuf, PathBuf)> {
    static PROJECT: std::sync::OnceLock<Option<(PathBuf, PathBuf)>> = std::sync::OnceLock::new();
    PROJECT
        .get_or_init(|| {
            let media = corpus_dir()?;
            // One per test process (two runs on one target folder do not share it); those of
            // processes that have ended are removed.
            let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
            for entry in std::fs::read_dir(scratch).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("corpus-deep-")
                    && !Path::new("/proc").join(pid).exists()
                {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
            let project = scratch.join(format!("corpus-deep-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&project);
            let out = run(&[
                "scan",
                media.to_str().unwrap(),
                "--project",
                project.to_str().unwrap(),
                "--deep",
            ]);
            // The corpus has broken files: finished with per-file problems.
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            Some((media, project))
        })
        .clone()
}

/// Duplicate group ids in `list` rows (item ids, which depend on the order files were
/// recorded in and differ between catalogs) replaced by the group's first path.
pub fn groups_by_first_path(rows: &mut std::collections::BTreeMap<String, serde_json::Value>) {
    let mut first: std::collections::BTreeMap<(&str, i64), String> = Default::default();
    for (path, row) in rows.iter() {
        for key in ["dup_group", "dup_exact_group"] {
            if let Some(g) = row[key].as_i64() {
                first.entry((key, g)).or_insert_with(|| path.clone());
            }
        }
    }
    for row in rows.values_mut() {
        for key in ["dup_group", "dup_exact_group"] {
            if let Some(g) = row[key].as_i64() {
                row[key] = serde_json::Value::String(first[&(key, g)].clone());
            }
        }
    }
}

/// The frames ffprobe decodes from the first video stream of `path`.
pub fn decoded_frames(path: &Path) -> u64 {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args(["-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .expect("ffprobe (packaging/deps.sh installs it)");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// Run the ffmpeg command line (quiet, overwriting); fails the test when it fails.
pub fn ffmpeg(args: &[&str]) {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .output()
        .expect("the ffmpeg command line (packaging/deps.sh installs it)");
    assert!(
        out.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Scan (`--deep` when asked), accept the one file `name` (its test pattern may be flagged)
/// and export it as manifest `x` (JSON lines): its rows.
pub fn scan_and_export(
    data: &Path,
    project: &Path,
    name: &str,
    deep: bool,
) -> Vec<serde_json::Value> {
    let p = project.to_str().unwrap();
    let mut args = vec!["scan", data.to_str().unwrap(), "--project", p];
    if deep {
        args.push("--deep");
    }
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "scan: {}", stderr(&out));
    let out = run(&["review", "accept", "--project", p, name]);
    assert_eq!(out.status.code(), Some(0), "accept: {}", stderr(&out));
    let out = run(&["export", "--name", "x", "--project", p, "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "export: {}", stderr(&out));
    let version = std::fs::read_dir(project.join("manifests/x"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.ends_with(".jsonl") && !name.contains(".frames.")
        })
        .max()
        .unwrap();
    std::fs::read_to_string(version)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
