//! Manifest export end to end: round trip, versions and diff, splits, crash safety.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;

use framecull::analysis::flags::Config;
use framecull::catalog::{Catalog, ItemUpdate};
use framecull::manifest::{self, ExportOptions, Format, Include, SplitSpec};
use framecull::model::{Clip, Decision, DupInfo, Edit, MediaInfo, MediaKind, Probe, Ratio};

/// A catalog of `n` fake items (no files needed: export reads only the catalog). Every
/// tenth item is a video; the rest are images. Ids and fingerprints follow `start..start+n`.
/// A project of `n` generated items in a temporary folder, and its open catalog.
fn project_with_items(n: usize) -> (tempfile::TempDir, Catalog) {
    let proj = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::create_or_open(proj.path(), Path::new("/data")).unwrap();
    add_items(&mut catalog, 0, n);
    (proj, catalog)
}

fn add_items(catalog: &mut Catalog, start: usize, n: usize) {
    let scan = catalog.begin_scan(Path::new("/data")).unwrap();
    let batch: Vec<ItemUpdate> = (start..start + n)
        .map(|i| {
            let video = i % 10 == 0;
            let info = MediaInfo {
                container: Some(
                    if video {
                        "mov,mp4,m4a,3gp,3g2,mj2"
                    } else {
                        "jpeg"
                    }
                    .into(),
                ),
                codec: Some(if video { "h264" } else { "jpeg" }.into()),
                width: Some(640),
                height: Some(480),
                fps: video.then_some(25.0),
                time_base: video.then(|| Ratio::new(1, 12800).unwrap()),
                start_secs: video.then_some(0.0),
                duration_secs: video.then_some(4.0),
                frame_count: video.then_some(100),
                rotation_deg: video.then_some(0),
                ..MediaInfo::default()
            };
            ItemUpdate {
                path: format!(
                    "d{:03}/{}{i:06}.{}",
                    i % 97,
                    if video { "v" } else { "i" },
                    if video { "mp4" } else { "jpg" }
                ),
                size_bytes: 1000 + i as u64,
                mtime_ns: 1,
                fingerprint: Some(format!("{i:032x}")),
                probe: Probe::ok(
                    if video {
                        MediaKind::Video
                    } else {
                        MediaKind::Image
                    },
                    info,
                ),
            }
        })
        .collect();
    for chunk in batch.chunks(5000) {
        catalog.upsert_items(scan, 2, chunk).unwrap();
    }
}

fn options(name: &str) -> ExportOptions {
    ExportOptions {
        name: name.into(),
        formats: vec![Format::Parquet, Format::Jsonl, Format::Csv],
        split: Some(SplitSpec::parse("train=0.8,val=0.1,test=0.1").unwrap()),
        split_seed: 11,
        include: Include::Unreviewed,
        filter: None,
        shard_size: None,
    }
}

#[test]
fn round_trip_versions_and_exact_diff() {
    let (proj, mut catalog) = project_with_items(50);
    let items = catalog.items().unwrap();
    let video = items.iter().find(|i| i.kind == MediaKind::Video).unwrap();
    // Two clips on one video; tags and a label survive the trip.
    for (s, e) in [(0i64, 12800i64), (25600, 38400)] {
        catalog
            .apply(vec![Edit::AddClip {
                clip: Clip {
                    id: 0,
                    item_id: video.id,
                    start_pts: s,
                    end_pts: e,
                    time_base: Ratio::new(1, 12800).unwrap(),
                    start_secs: s as f64 / 12800.0,
                    end_secs: e as f64 / 12800.0,
                    start_frame: Some(s / 512),
                    end_frame: Some(e / 512),
                    label: Some("walking".into()),
                    origin: framecull::model::ClipOrigin::Manual,
                    decision: Decision::Unreviewed,
                },
            }])
            .unwrap();
    }
    catalog
        .set_tags(video.id, vec!["night".into(), "rain".into()])
        .unwrap();

    let v1 = manifest::export(&catalog, &options("train")).unwrap();
    assert_eq!((v1.version, v1.parent), (1, None));
    // 45 images + 4 full-length videos + 2 clips of the fifth.
    assert_eq!(v1.counts.rows, 51);
    let expected = manifest::select_rows(&catalog, &options("train"))
        .unwrap()
        .0;
    let parquet = manifest::read_version(proj.path(), "train", 1).unwrap();
    assert_eq!(parquet, expected, "every field survives Parquet");
    let clip_rows: Vec<_> = parquet.iter().filter(|r| r.path == video.path).collect();
    assert_eq!(clip_rows.len(), 2);
    assert_eq!(clip_rows[0].tags, vec!["night", "rain"]);
    assert_eq!(clip_rows[0].label.as_deref(), Some("walking"));
    assert_eq!(
        clip_rows[0].split, clip_rows[1].split,
        "clips of one video share a split"
    );
    let dir = manifest::manifest_dir(proj.path(), "train");
    let csv = std::fs::read_to_string(dir.join("v0001.csv")).unwrap();
    assert_eq!(csv.lines().count(), 52);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .starts_with("clip_id,path,file_fingerprint,")
    );

    // Unchanged: same rows hash; then reject one image: the diff says exactly that.
    let v2 = manifest::export(&catalog, &options("train")).unwrap();
    assert_eq!((v2.version, v2.parent), (2, Some(1)));
    assert_eq!(v2.rows_hash, v1.rows_hash);
    let image = items.iter().find(|i| i.kind == MediaKind::Image).unwrap();
    catalog
        .set_decisions(&[image.id], Decision::Rejected)
        .unwrap();
    let v3 = manifest::export(&catalog, &options("train")).unwrap();
    assert_eq!(v3.parent, Some(2));
    assert_ne!(v3.rows_hash, v2.rows_hash);
    let d = manifest::diff(
        &manifest::read_version(proj.path(), "train", 2).unwrap(),
        &manifest::read_version(proj.path(), "train", 3).unwrap(),
    );
    let removed_path = parquet
        .iter()
        .find(|r| r.clip_id == d.removed[0])
        .unwrap()
        .path
        .clone();
    assert_eq!(
        (
            d.added.len(),
            d.removed.len(),
            d.changed.len(),
            d.split_moves.len()
        ),
        (0, 1, 0, 0)
    );
    assert_eq!(removed_path, image.path);
    // The CLI shows the same.
    let out = common::run(&[
        "diff",
        "--project",
        proj.path().to_str().unwrap(),
        "train",
        "v2",
        "v3",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(j["removed"].as_array().unwrap().len(), 1);
    assert!(j["added"].as_array().unwrap().is_empty());
    // Each clip with its file and range, as the version that held it says.
    let removed = &j["removed"][0];
    let row = parquet.iter().find(|r| r.clip_id == d.removed[0]).unwrap();
    assert_eq!(removed["clip_id"], row.clip_id.as_str());
    assert_eq!(removed["path"], image.path.as_str());
    assert_eq!(removed["start_secs"].as_f64(), Some(row.start_secs));
    assert_eq!(removed["end_secs"].as_f64(), Some(row.end_secs));
    assert_eq!(removed["start_frame"].as_i64(), row.start_frame);
    assert_eq!(removed["end_frame"].as_i64(), row.end_frame);
}

#[test]
fn splits_never_leak_or_drift_and_keep_their_shares() {
    let (proj, mut catalog) = project_with_items(10_000);
    // Near-duplicate groups of three consecutive items.
    let items = catalog.items().unwrap();
    let mut dups = std::collections::HashMap::new();
    for chunk in items.chunks(3).take(300) {
        for it in chunk {
            dups.insert(
                it.id,
                DupInfo {
                    group: chunk[0].id,
                    exact: false,
                    like: chunk[0].id,
                    exact_group: None,
                },
            );
        }
    }
    catalog
        .replace_derived(&dups, &[], &Config::default())
        .unwrap();
    let opts = ExportOptions {
        formats: vec![Format::Parquet],
        ..options("big")
    };
    manifest::export(&catalog, &opts).unwrap();
    let v1 = manifest::read_version(proj.path(), "big", 1).unwrap();
    assert_eq!(v1.len(), 10_000);
    for (name, share) in [("train", 0.8), ("val", 0.1), ("test", 0.1)] {
        let n = v1
            .iter()
            .filter(|r| r.split.as_deref() == Some(name))
            .count();
        assert!((n as f64 / 10_000.0 - share).abs() <= 0.02, "{name}: {n}");
    }
    let mut by_group: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for r in &v1 {
        let s = r.split.as_deref().unwrap();
        assert_eq!(
            *by_group.entry(&r.group_key).or_insert(s),
            s,
            "group {} spans splits",
            r.group_key
        );
    }

    // 10% more data: no existing clip moves.
    add_items(&mut catalog, 10_000, 1_000);
    catalog
        .replace_derived(&dups, &[], &Config::default())
        .unwrap();
    manifest::export(&catalog, &opts).unwrap();
    let v2 = manifest::read_version(proj.path(), "big", 2).unwrap();
    assert_eq!(v2.len(), 11_000);
    let d = manifest::diff(&v1, &v2);
    assert_eq!(
        (d.added.len(), d.removed.len(), d.split_moves.len()),
        (1_000, 0, 0)
    );
}

/// `framecull export` of every format, running (stderr piped, stdout ignored).
fn start_export(project: &str, name: &str) -> std::process::Child {
    common::bin()
        .args(["export", "--project", project, "--name", name])
        .args(["--format", "parquet,jsonl,csv"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn no_temporary_files(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "{name} left behind");
    }
}

#[test]
fn a_killed_export_leaves_no_partial_version() {
    let (proj, catalog) = project_with_items(60_000);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let mut killed = 0;
    for delay_ms in [50u64, 150, 300, 600, 1000] {
        let mut child = start_export(project, "k");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
        // Whatever is visible is whole: every listed version reads back completely.
        for meta in manifest::versions(proj.path(), "k").unwrap() {
            let rows = manifest::read_version(proj.path(), "k", meta.version).unwrap();
            assert_eq!(rows.len() as u64, meta.counts.rows);
            assert_eq!(manifest::rows_hash(&rows), meta.rows_hash);
            let dir = manifest::manifest_dir(proj.path(), "k");
            for file in meta.files.values() {
                assert!(dir.join(file).is_file());
            }
        }
    }
    assert!(
        killed > 0,
        "every export finished before the kill; make the catalog larger"
    );
    let out = common::run(&["export", "--project", project, "--name", "k", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(meta["counts"]["rows"], 60_000);
    // No temporary or orphaned files remain next to the versions.
    no_temporary_files(&manifest::manifest_dir(proj.path(), "k"));
}

/// SIGTERM during an export (a pod evicted, a Slurm time limit) stops it cleanly: exit 3, no
/// version published, no temporary file left; the rerun writes the next version whole.
#[test]
fn sigterm_during_export_exits_3_and_publishes_nothing() {
    let (proj, catalog) = project_with_items(60_000);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let dir = manifest::manifest_dir(proj.path(), "t");
    let mut stopped = 0;
    let mut finished = 0;
    for delay_ms in [150u64, 250, 400, 600, 900, 1300] {
        let before = manifest::versions(proj.path(), "t").unwrap().len();
        let mut child = start_export(project, "t");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let sent = std::time::Instant::now();
        if child.try_wait().unwrap().is_none() {
            crate::kill::send("TERM", child.id());
        }
        let out = child.wait_with_output().unwrap();
        assert!(sent.elapsed() < std::time::Duration::from_secs(10));
        let after = manifest::versions(proj.path(), "t").unwrap().len();
        match out.status.code() {
            Some(3) => {
                stopped += 1;
                assert_eq!(after, before, "a stopped export published a version");
                assert!(
                    common::stderr(&out).contains("SIGTERM"),
                    "{}",
                    common::stderr(&out)
                );
            }
            Some(0) => {
                finished += 1;
                assert_eq!(after, before + 1);
            }
            other => panic!("export ended with {other:?}: {}", common::stderr(&out)),
        }
        no_temporary_files(&dir);
    }
    assert!(
        stopped > 0,
        "every export finished before SIGTERM ({finished}); make the catalog larger"
    );
    let out = common::run(&["export", "--project", project, "--name", "t", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(meta["counts"]["rows"], 60_000);
    assert_eq!(meta["version"], finished + 1);
}

/// A manifest records the settings its flags were derived with, not whatever
/// `framecull.toml` says at export time (an edit not yet applied with `flags --recompute`).
#[test]
fn a_version_records_the_settings_that_made_its_flags() {
    use framecull::scan::derive::recompute_for_project;
    let (proj, mut catalog) = project_with_items(20);
    let settings = proj.path().join("framecull.toml");
    std::fs::write(&settings, "[rules]\nmin_width = 4096\n").unwrap();
    let derived = recompute_for_project(&mut catalog).unwrap();
    assert!(derived.flags > 0, "every item is narrower than 4096 px");
    std::fs::write(&settings, "[rules]\nmin_width = 16\n").unwrap();
    let meta = manifest::export(&catalog, &options("settings")).unwrap();
    assert_eq!(meta.config.rules.min_width, Some(4096));
    // Once applied, the next version records the new settings.
    recompute_for_project(&mut catalog).unwrap();
    let meta = manifest::export(&catalog, &options("settings")).unwrap();
    assert_eq!(meta.config.rules.min_width, Some(16));
}

/// `--where`: only the files a filter matches go in, the rest are counted as left out, and the
/// version records the filter's text.
#[test]
fn an_export_with_a_filter_holds_only_the_files_it_matches() {
    use framecull::analysis::filter::Filter;
    let (proj, mut catalog) = project_with_items(200);
    let accepted = catalog
        .items()
        .unwrap()
        .iter()
        .filter(|i| i.path.starts_with("d00"))
        .map(|i| i.id)
        .collect::<Vec<_>>();
    catalog
        .set_decisions(&accepted, Decision::Accepted)
        .unwrap();
    let filter = Filter::parse("fps>=25 and decision:accepted").unwrap();
    let opts = ExportOptions {
        filter: Some(filter.clone()),
        ..options("filtered")
    };
    let meta = manifest::export(&catalog, &opts).unwrap();
    let rows = manifest::read_version(proj.path(), "filtered", 1).unwrap();
    let items = catalog.items().unwrap();
    let expected: Vec<&str> = items
        .iter()
        .filter(|i| i.path.starts_with("d00") && i.kind == MediaKind::Video)
        .map(|i| i.path.as_str())
        .collect();
    assert!(!expected.is_empty());
    let mut got: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    got.sort();
    assert_eq!(got, expected);
    assert!(rows.iter().all(|r| r.kind == MediaKind::Video));
    assert_eq!(
        meta.counts.excluded["not matching the filter"],
        (items.len() - expected.len()) as u64
    );
    assert_eq!(meta.filter.as_deref(), Some(filter.to_text().as_str()));
    assert_eq!(
        Filter::parse(meta.filter.as_deref().unwrap()).unwrap(),
        filter
    );
}

/// An export that runs into a file-size limit (RLIMIT_FSIZE, as a full disk would stop it)
/// fails with one error naming the file, exit 2, not a signal; earlier versions stay whole
/// and the catalog intact; the next export without the limit succeeds.
#[test]
fn an_export_over_the_file_size_limit_fails_cleanly_and_keeps_earlier_versions() {
    let (proj, catalog) = project_with_items(20_000);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let export = |limit: Option<u64>| {
        common::bin_with_file_size_limit(limit)
            .args(["export", "--project", project, "--name", "f"])
            .args(["--format", "parquet,jsonl"])
            .output()
            .expect("prlimit (util-linux)")
    };
    let out = export(None);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let dir = manifest::manifest_dir(proj.path(), "f");
    let jsonl = std::fs::read(dir.join("v0001.jsonl")).unwrap();
    let catalog_len = std::fs::metadata(proj.path().join("catalog.db"))
        .unwrap()
        .len();
    // Room for the catalog (and SQLite's side files), not for another JSON lines file.
    let limit = catalog_len.max(64 << 10) + 4096;
    assert!((jsonl.len() as u64) > limit, "make the catalog larger");

    let out = export(Some(limit));
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("v0002") && err.contains("File too large"),
        "{err}"
    );
    // Nothing of the failed version holds the space.
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.ends_with(".tmp") && !name.starts_with("v0002"),
            "{name}"
        );
    }
    let versions = manifest::versions(proj.path(), "f").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(std::fs::read(dir.join("v0001.jsonl")).unwrap(), jsonl);
    let rows = manifest::read_version(proj.path(), "f", 1).unwrap();
    assert_eq!(manifest::rows_hash(&rows), versions[0].rows_hash);
    let check: String = rusqlite::Connection::open(proj.path().join("catalog.db"))
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");

    let out = export(None);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_eq!(manifest::versions(proj.path(), "f").unwrap().len(), 2);
}

/// A version records a hash of each data file's bytes, and a damaged file is refused with an
/// error that names it before any decoder reads it: a flipped byte, and a file that once
/// made polars' Parquet decoder abort the process (found by fuzzing: an allocation sized by
/// a corrupt field; tests/data/damaged-manifest.parquet).
#[test]
fn a_damaged_manifest_file_is_refused_before_it_is_decoded() {
    let (proj, catalog) = project_with_items(50);
    drop(catalog);
    let project = proj.path().to_str().unwrap();
    let out = common::run(&[
        "export",
        "--project",
        project,
        "--name",
        "m",
        "--format",
        "parquet,jsonl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let dir = proj.path().join("manifests/m");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("v0001.json")).unwrap()).unwrap();
    assert_eq!(meta["file_hashes"].as_object().unwrap().len(), 2, "{meta}");
    let (_, rows) = manifest::open_path(&dir).unwrap();
    assert_eq!(rows.len(), 50);

    let parquet = dir.join("v0001.parquet");
    let good = std::fs::read(&parquet).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    let fuzzed = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/damaged-manifest.parquet"),
    )
    .unwrap();
    for damaged in [flipped, fuzzed[1..].to_vec()] {
        std::fs::write(&parquet, &damaged).unwrap();
        for opened in [
            manifest::open_path(&dir).map(|_| ()),
            manifest::open_path(&parquet).map(|_| ()),
            manifest::read_version(proj.path(), "m", 1).map(|_| ()),
        ] {
            let err = opened.unwrap_err().to_string();
            assert!(err.contains("v0001.parquet is damaged"), "{err}");
        }
        let config = framecull::loader::LoaderConfig::default();
        let err = framecull::loader::Loader::open(&dir, None, config)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is damaged"), "{err}");
    }
    // The JSON lines file of the same version is intact and still reads.
    let (_, rows) = manifest::open_path(&dir.join("v0001.jsonl")).unwrap();
    assert_eq!(rows.len(), 50);
}

/// `data` scanned deeply into the project `proj`.
fn scan_deep(data: &Path, proj: &Path) {
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--deep",
        "--project",
        proj.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
}

/// A folder with one generated H.264 video `name` (25 fps, GOPs of 25 frames, noise), scanned
/// deep into a project with the clips `clips` (frame ranges) added: (data, project).
fn video_with_clips(
    name: &str,
    width: u32,
    height: u32,
    frames: u32,
    clips: &[(usize, usize)],
) -> (tempfile::TempDir, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let mut spec = framecull::media::synth::VideoSpec::new("libx264", width, height, 25, frames);
    spec.gop = 25;
    spec.noise = 6;
    common::video(data.path(), name, &spec);
    let project = proj.path().to_str().unwrap();
    scan_deep(data.path(), proj.path());
    for (start, end) in clips {
        let (start, end) = (format!("f{start}"), format!("f{end}"));
        let out = common::run(&[
            "clips",
            "--project",
            project,
            "add",
            name,
            "--start",
            &start,
            "--end",
            &end,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }
    (data, proj)
}

/// Clip files (`export --materialize`, two at once) stopped by SIGTERM (exit 3) and by Ctrl-C
/// (SIGINT, exit 2) leave only whole clip files, and killed with SIGKILL leave at most a `.part`
/// file a thread; each rerun writes only the clips missing, and the last one leaves every
/// clip whole and no part file.
#[test]
fn stopped_or_killed_clip_files_resume_with_nothing_half_written() {
    const CLIPS: usize = 30;
    // Clips of 12 frames from mid-GOP: each one encoded (nothing to copy), so each takes a
    // while.
    let clips: Vec<(usize, usize)> = (0..CLIPS).map(|i| (3 + i * 13, 15 + i * 13)).collect();
    let (_data, proj) = video_with_clips("long.mp4", 320, 180, 400, &clips);
    let project = proj.path().to_str().unwrap();
    let dir = proj.path().join("clip-files");
    let clip_files = || -> (Vec<std::path::PathBuf>, usize) {
        let entries: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        let parts = entries
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".part"))
            .count();
        let whole = entries
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "mp4"))
            .collect();
        (whole, parts)
    };
    // Every clip file present holds its 12 frames.
    let all_whole = |files: &[std::path::PathBuf]| {
        for file in files {
            let frames = common::decoded_frames(file);
            assert_eq!(frames, 12, "{} is not whole", file.display());
        }
    };
    let materialize = || {
        let mut command = common::bin();
        command
            .args(["export", "--project", project, "--name", "cut"])
            .args(["--format", "jsonl", "--jobs", "2", "--materialize"])
            .arg(&dir);
        command
    };
    let mut interrupted = 0;
    for (run, signal) in ["TERM", "INT", "KILL"].into_iter().enumerate() {
        let mut child = materialize()
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for this run's first clip file, then signal.
        let before = clip_files().0.len();
        let started = std::time::Instant::now();
        while clip_files().0.len() <= before
            && child.try_wait().unwrap().is_none()
            && started.elapsed() < std::time::Duration::from_secs(120)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            crate::kill::send(signal, child.id());
        }
        let out = child.wait_with_output().unwrap();
        let (files, parts) = clip_files();
        all_whole(&files);
        match (signal, out.status.code()) {
            ("KILL", None) => {
                interrupted += 1;
                // One clip in flight on each of the two threads.
                assert!(parts <= 2, "{parts} part files after SIGKILL");
            }
            // Ctrl-C is the user's cancel (exit 2), SIGTERM a scheduler's (exit 3: retried), as
            // for every command (docs/CLI.md).
            ("INT", Some(2)) | ("TERM", Some(3)) => {
                interrupted += 1;
                assert_eq!(parts, 0, "a part file left by SIG{signal}");
                assert!(
                    common::stderr(&out).contains("clip files stopped"),
                    "{}",
                    common::stderr(&out)
                );
            }
            (_, Some(0)) => assert_eq!(files.len(), CLIPS),
            (_, code) => panic!("run {run} ended with {code:?}: {}", common::stderr(&out)),
        }
    }
    assert!(
        interrupted >= 2,
        "the runs finished before their signals; make the clips longer"
    );
    let out = materialize().arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let (files, parts) = clip_files();
    assert_eq!((files.len(), parts), (CLIPS, 0), "{report}");
    all_whole(&files);
    // The earlier runs' clips were kept, not written again.
    assert!(
        report["materialized"]["present"].as_u64().unwrap() >= 3,
        "{report}"
    );
}

/// WebDataset shards (`--format webdataset`) stopped by SIGTERM part way (exit 3, nothing
/// published, no part file) are kept: the rerun writes only the shards missing, and every
/// sample is then in one shard, once, its clip file's bytes and its metadata beside it.
#[test]
fn a_stopped_shard_write_resumes_with_every_sample_once() {
    const CLIPS: usize = 8;
    let clips: Vec<(usize, usize)> = (0..CLIPS).map(|i| (i * 10, i * 10 + 8)).collect();
    let (_data, proj) = video_with_clips("walk.mp4", 64, 48, 100, &clips);
    let project = proj.path().to_str().unwrap();
    let dir = proj.path().join("clip-files");
    // One sample a shard (a shard size of one byte), each made slow to write.
    let export = |slow: bool| {
        let mut command = common::bin();
        command
            .args(["export", "--project", project, "--name", "set", "--json"])
            .args([
                "--format",
                "jsonl,webdataset",
                "--shard-size",
                "1",
                "--materialize",
            ])
            .arg(&dir);
        if slow {
            command.env("FRAMECULL_FAULT_SLOW_SHARD_MS", "400");
        }
        command
    };
    let manifests = proj.path().join("manifests/set");
    let tmp = manifests.join(".v0001.webdataset.tmp");
    let tars = |folder: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".tar") || n.ends_with(".part"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let mut child = export(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while tars(&tmp).iter().filter(|n| n.ends_with(".tar")).count() < 2
        && child.try_wait().unwrap().is_none()
        && started.elapsed() < std::time::Duration::from_secs(120)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    crate::kill::send("TERM", child.id());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", common::stderr(&out));
    let finished = tars(&tmp);
    assert!(
        finished.len() >= 2 && finished.len() < CLIPS,
        "{finished:?}"
    );
    assert!(finished.iter().all(|n| n.ends_with(".tar")), "{finished:?}");
    assert!(!manifests.join("v0001.json").exists());
    let stamps: Vec<std::time::SystemTime> = finished
        .iter()
        .map(|n| std::fs::metadata(tmp.join(n)).unwrap().modified().unwrap())
        .collect();

    let out = export(false).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let shards = manifests.join(meta["files"]["webdataset.dir"].as_str().unwrap());
    let index: serde_json::Value = serde_json::from_slice(
        &std::fs::read(manifests.join(meta["files"]["webdataset"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    assert_eq!(index["kept"], finished.len(), "{index}");
    assert_eq!(index["written"], CLIPS - finished.len(), "{index}");
    assert!(!tmp.exists());
    // The finished shards were kept as they were.
    for (name, stamp) in finished.iter().zip(stamps) {
        let now = std::fs::metadata(shards.join(name))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(now, stamp, "{name} was written again");
    }
    // Every sample once (GNU tar reads the shards): a clip file and its metadata.
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(manifests.join("v0001.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut members: Vec<(String, String)> = Vec::new();
    for name in tars(&shards) {
        let listed = std::process::Command::new("tar")
            .arg("-tf")
            .arg(shards.join(&name))
            .output()
            .unwrap();
        assert!(listed.status.success(), "{name}");
        members.extend(
            common::stdout(&listed)
                .lines()
                .map(|m| (m.to_string(), name.clone())),
        );
    }
    members.sort();
    let mut expected: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            let id = r["clip_id"].as_str().unwrap();
            [format!("{id}.json"), format!("{id}.mp4")]
        })
        .collect();
    expected.sort();
    let names: Vec<&String> = members.iter().map(|(m, _)| m).collect();
    assert_eq!(names, expected.iter().collect::<Vec<_>>());
    // Each clip file's very bytes.
    for (member, shard) in members.iter().filter(|(m, _)| m.ends_with(".mp4")) {
        let extracted = std::process::Command::new("tar")
            .arg("-xOf")
            .arg(shards.join(shard))
            .arg(member)
            .output()
            .unwrap();
        assert!(
            extracted.stdout == std::fs::read(dir.join(member)).unwrap(),
            "{member}"
        );
    }
}

/// The shards' progress counts every sample and its bytes as they are written: all of them
/// by the end, no more.
#[test]
fn a_shard_write_counts_its_samples_and_bytes_as_it_goes() {
    use framecull::manifest::webdataset::ShardProgress;
    use std::sync::atomic::{AtomicBool, Ordering};
    let clips: Vec<(usize, usize)> = (0..4).map(|i| (i * 20, i * 20 + 10)).collect();
    let (_data, proj) = video_with_clips("walk.mp4", 64, 48, 100, &clips);
    let catalog = Catalog::open(proj.path()).unwrap();
    let root =
        framecull::storage::Root::of_recorded(&catalog.dataset_root().unwrap().unwrap()).unwrap();
    let dir = proj.path().join("clip-files");
    let export = |name: &str| {
        let stop = AtomicBool::new(false);
        let mut write = |rows: &mut [framecull::manifest::ManifestRow],
                         references: &[framecull::model::SeekReference]| {
            framecull::loader::materialize::materialize(
                &root,
                rows,
                references,
                &dir,
                1,
                &stop,
                &mut |_| {},
            )
            .map(|done| done.files)
        };
        let progress = ShardProgress::default();
        let options = ExportOptions {
            formats: vec![Format::Jsonl, Format::Webdataset],
            split: None,
            shard_size: Some(1),
            ..options(name)
        };
        let meta = manifest::export_watched(&catalog, &options, &stop, Some(&mut write), &progress)
            .unwrap();
        let index: serde_json::Value = serde_json::from_slice(
            &std::fs::read(
                manifest::manifest_dir(proj.path(), name).join(&meta.files["webdataset"]),
            )
            .unwrap(),
        )
        .unwrap();
        (progress, index)
    };
    let (progress, index) = export("set");
    let all = &index["splits"]["all"];
    let shards = all["shards"].as_array().unwrap().len() as u64;
    assert_eq!(shards, 4, "{index}");
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::SeqCst);
    assert_eq!(load(&progress.samples), 4);
    assert_eq!(load(&progress.samples_done), 4);
    // Every sample's members; the shards' end blocks are not samples'.
    assert_eq!(
        load(&progress.bytes),
        all["bytes"].as_u64().unwrap() - shards * 1024
    );
    assert_eq!(load(&progress.bytes_done), load(&progress.bytes));
}

/// The loader reads a version's WebDataset shards (`--shards`) as it reads its clip files:
/// without shuffling, the same batches frame for frame (checksum); each shard read once
/// from start to end; the clip files not needed (deleted here); a shard cut short costs its
/// own clips, with the reason; the spool folder left empty.
#[test]
fn the_loader_reads_a_split_from_its_shards_as_from_its_clip_files() {
    const CLIPS: usize = 6;
    let clips: Vec<(usize, usize)> = (0..CLIPS).map(|i| (i * 15, i * 15 + 12)).collect();
    let (_data, proj) = video_with_clips("walk.mp4", 64, 48, 100, &clips);
    let project = proj.path().to_str().unwrap();
    let dir = proj.path().join("clip-files");
    // One sample a shard.
    let out = common::bin()
        .args(["export", "--project", project, "--name", "set", "--json"])
        .args(["--format", "jsonl,webdataset", "--materialize"])
        .arg(&dir)
        .args(["--shard-size", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let manifests = proj.path().join("manifests/set");
    let index: serde_json::Value = serde_json::from_slice(
        &std::fs::read(manifests.join(meta["files"]["webdataset"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    let shards = manifests.join(meta["files"]["webdataset.dir"].as_str().unwrap());
    let listed = index["splits"]["all"]["shards"].as_array().unwrap().clone();
    assert_eq!(listed.len(), CLIPS, "{index}");
    let shard_bytes: u64 = listed.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
    let spool = tempfile::tempdir().unwrap();
    let load = |how: &[&str]| {
        let out = common::bin()
            .arg("load-bench")
            .arg(&manifests)
            .args(["--device", "cpu", "--workers", "2", "--batches", "0"])
            .args([
                "--clip-len",
                "4",
                "--size",
                "32x32",
                "--batch-size",
                "4",
                "--json",
            ])
            .args(how)
            .env("TMPDIR", spool.path())
            .output()
            .unwrap();
        let report: serde_json::Value =
            serde_json::from_str(&common::stdout(&out)).unwrap_or_default();
        (out.status.code(), report, common::stderr(&out))
    };
    let (code, files, err) = load(&["--clip-files", "--no-shuffle"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(files["clips"], CLIPS, "{files}");
    assert_eq!(files["shards_read"], 0, "{files}");
    // The clip files gone: the shards alone are read.
    std::fs::rename(&dir, proj.path().join("moved")).unwrap();
    let (code, from_shards, err) = load(&["--shards", "--no-shuffle"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(from_shards["checksum"], files["checksum"], "{from_shards}");
    assert_eq!(from_shards["frames"], files["frames"], "{from_shards}");
    assert_eq!(from_shards["shards_read"], CLIPS, "{from_shards}");
    assert_eq!(
        from_shards["shard_bytes_read"], shard_bytes,
        "{from_shards}"
    );
    // Shuffled: the shards in another order, the same windows.
    let (code, shuffled, err) = load(&["--shards"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(shuffled["windows"], files["windows"], "{shuffled}");
    assert_eq!(shuffled["frames"], files["frames"], "{shuffled}");
    assert_eq!(shuffled["shards_read"], CLIPS, "{shuffled}");
    // A shard cut short in its clip file: that clip is left out, with the reason.
    let second = shards.join(listed[1]["file"].as_str().unwrap());
    let bytes = std::fs::read(&second).unwrap();
    std::fs::write(&second, &bytes[..bytes.len() / 2]).unwrap();
    let (code, cut, err) = load(&["--shards", "--no-shuffle"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(cut["clips"], CLIPS - 1, "{cut}");
    assert_eq!(cut["skipped_clips"]["changed"], 1, "{cut}");
    assert!(
        cut["errors"][0]
            .as_str()
            .unwrap()
            .contains("bytes where the index says"),
        "{cut}"
    );
    // Its size again, but its clip's header damaged: found as the shard is read.
    let mut patched = bytes.clone();
    patched[0] ^= 0x20;
    std::fs::write(&second, &patched).unwrap();
    let (code, broken, err) = load(&["--shards", "--no-shuffle"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        broken["windows"],
        files["windows"].as_u64().unwrap() - 1,
        "{broken}"
    );
    assert_eq!(broken["skipped_windows"]["corrupt"], 1, "{broken}");
    assert!(
        broken["errors"][0].as_str().unwrap().contains("checksum"),
        "{broken}"
    );
    // Its header saying more bytes than the shard holds: the clip is cut short as it is
    // copied (the shard's size as the index says), found then, and nothing waits for it.
    let mut longer = bytes.clone();
    longer[124..136].copy_from_slice(format!("{:011o}\0", 1u64 << 30).as_bytes());
    longer[148..156].copy_from_slice(b"        ");
    let sum: u32 = longer[..512].iter().map(|&b| u32::from(b)).sum();
    longer[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    std::fs::write(&second, &longer).unwrap();
    let (code, cut_in, err) = load(&["--shards", "--no-shuffle"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        cut_in["windows"],
        files["windows"].as_u64().unwrap() - 1,
        "{cut_in}"
    );
    assert_eq!(cut_in["skipped_windows"]["corrupt"], 1, "{cut_in}");
    assert!(
        cut_in["errors"][0].as_str().unwrap().contains("cut short"),
        "{cut_in}"
    );
    // Another shard gone: its clip is a missing file, named by the shard.
    let third = shards.join(listed[2]["file"].as_str().unwrap());
    std::fs::remove_file(&third).unwrap();
    let (code, gone, err) = load(&["--shards", "--no-shuffle"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(gone["clips"], CLIPS - 1, "{gone}");
    assert_eq!(gone["skipped_clips"]["missing"], 1, "{gone}");
    let named = gone["errors"].as_array().unwrap().iter().any(|e| {
        e.as_str()
            .unwrap()
            .contains(listed[2]["file"].as_str().unwrap())
    });
    assert!(named, "{gone}");
    let leftovers: Vec<_> = std::fs::read_dir(spool.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Pictures whose EXIF orientation turns them, read from shards: turned as when read from
/// their clip files (the orientation found in the spooled copy), odd names included.
#[test]
fn shards_turn_pictures_as_their_exif_says() {
    use framecull::media::synth::ImageKind;
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    for (name, exif) in [
        ("turned é 6.jpg", Some(6)),
        ("upside 3.jpg", Some(3)),
        ("plain.jpg", None),
    ] {
        common::image(data.path(), name, ImageKind::Jpeg, 48, 24, exif);
    }
    let project = proj.path().to_str().unwrap();
    scan_deep(data.path(), proj.path());
    let out = common::bin()
        .args(["export", "--project", project, "--name", "pics", "--json"])
        .args([
            "--format",
            "jsonl,webdataset",
            "--shard-size",
            "1",
            "--materialize",
        ])
        .arg(proj.path().join("clip-files"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let load = |how: &str| {
        let out = common::bin()
            .arg("load-bench")
            .arg(proj.path().join("manifests/pics"))
            .args([
                "--device",
                "cpu",
                "--batches",
                "0",
                "--size",
                "32x16",
                "--crop",
                "full",
            ])
            .args(["--no-shuffle", "--json", how])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{how}: {}",
            common::stderr(&out)
        );
        serde_json::from_str::<serde_json::Value>(&common::stdout(&out)).unwrap()
    };
    let (files, shards) = (load("--clip-files"), load("--shards"));
    assert_eq!(files["clips"], 3, "{files}");
    assert_eq!(shards["shards_read"], 3, "{shards}");
    assert_eq!(shards["checksum"], files["checksum"], "{shards}");
}

/// The loader reads a materialized version's clip files (`clip_files`) as it reads their
/// sources: the same windows of the same clips, frame for frame (indices and times counted
/// from the clip's start), copied frames byte for byte and encoded ones close; a clip file
/// deleted is a missing file, counted and left out.
#[test]
fn the_loader_reads_a_versions_clip_files_as_their_sources() {
    use framecull::loader::preprocess::decode_elements;
    use framecull::loader::{
        Batching, Crop, DType, DeviceChoice, Layout, Loader, LoaderConfig, Mode, Sampling, Timing,
    };
    // Whole GOPs (copied), mid-GOP to mid-GOP over a GOP (smart cut), inside a GOP (encoded).
    let clips = [(25, 75), (10, 60), (80, 96)];
    let (_data, proj) = video_with_clips("cam.mp4", 192, 108, 150, &clips);
    let project = proj.path().to_str().unwrap();
    let dir = proj.path().join("clip-files");
    // A version with its clip files: the clip files written and present.
    let materialize = || {
        let out = common::run(&[
            "export",
            "--project",
            project,
            "--name",
            "cut",
            "--json",
            "--materialize",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
        let counts = |k: &str| report["materialized"][k].as_u64().unwrap();
        (counts("written"), counts("present"))
    };
    assert_eq!(materialize(), (3, 0));
    let manifest = proj.path().join("manifests/cut");
    let rows = manifest::open_path(&manifest).unwrap().1;
    assert_eq!(rows.len(), 3);
    let config = |clip_files| LoaderConfig {
        sampling: Sampling {
            clip_len: Some(8),
            timing: Timing::Stride(1),
            mode: Mode::All,
            ..Sampling::default()
        },
        batching: Batching {
            batch_size: 4,
            shuffle: false,
            ..Batching::default()
        },
        crop: Crop::Full,
        device: DeviceChoice::Cpu,
        workers: 1,
        clip_files,
        ..LoaderConfig::default()
    };
    // Each window's pixels by (clip, first frame from the clip's start), with its frames and
    // times from the clip's start.
    type Windows = std::collections::BTreeMap<(String, u64), (Vec<u64>, Vec<f64>, Vec<u8>)>;
    let windows = |clip_files: bool| -> (Windows, u64) {
        let mut config = config(clip_files);
        config.output.dtype = DType::U8;
        config.output.layout = Layout::Bthwc;
        config.output.width = 96;
        config.output.height = 54;
        let mut loader = Loader::open(&manifest, None, config).unwrap();
        let mut out = Windows::new();
        let frame = 96 * 54 * 3;
        for batch in loader.epoch(0).collect::<Vec<_>>() {
            let batch = batch.unwrap();
            let bytes: Vec<u8> = decode_elements(&loader.to_host(&batch).unwrap(), DType::U8)
                .into_iter()
                .map(|v| v as u8)
                .collect();
            let t = batch.shape[1];
            for (i, w) in batch.windows.iter().enumerate() {
                let row = &rows[w.row];
                let offset = if clip_files {
                    0
                } else {
                    row.start_frame.unwrap() as u64
                };
                let first = w.secs[0];
                let frames: Vec<u64> = w.frames.iter().map(|f| f - offset).collect();
                let secs: Vec<f64> = w.secs.iter().map(|s| s - first).collect();
                let pixels = bytes[i * t * frame..(i * t + w.frames.len()) * frame].to_vec();
                out.insert((w.clip_id.clone(), frames[0]), (frames, secs, pixels));
            }
        }
        let skipped = loader.stats().skipped_clips.values().sum::<u64>();
        (out, skipped)
    };
    let (sources, _) = windows(false);
    let (clips, skipped) = windows(true);
    assert_eq!(skipped, 0);
    assert_eq!(
        sources.keys().collect::<Vec<_>>(),
        clips.keys().collect::<Vec<_>>()
    );
    let mut identical = 0;
    for (key, (frames, secs, pixels)) in &sources {
        let (clip_frames, clip_secs, clip_pixels) = &clips[key];
        assert_eq!(frames, clip_frames, "{key:?}");
        for (a, b) in secs.iter().zip(clip_secs) {
            assert!((a - b).abs() < 1e-3, "{key:?}: {secs:?} {clip_secs:?}");
        }
        let mse = pixels
            .iter()
            .zip(clip_pixels)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
            .sum::<f64>()
            / pixels.len() as f64;
        let psnr = 10.0 * (255.0f64.powi(2) / mse.max(1e-12)).log10();
        assert!(psnr > 35.0, "{key:?}: {psnr:.1} dB");
        identical += usize::from(pixels == clip_pixels);
    }
    // The clip of whole GOPs was copied: its windows are the source's, byte for byte.
    let copied = rows.iter().find(|r| r.start_frame == Some(25)).unwrap();
    assert_eq!(copied.clip.copied_frames, Some(50), "{:?}", copied.clip);
    let whole = sources
        .keys()
        .filter(|(id, _)| *id == copied.clip_id)
        .count();
    assert!(
        identical >= whole,
        "{identical} identical windows, {whole} copied"
    );

    // A clip file deleted: its clip is a missing file, the others are read.
    std::fs::remove_file(dir.join(copied.clip.file.as_deref().unwrap())).unwrap();
    let (clips, skipped) = windows(true);
    assert_eq!(skipped, 1);
    assert!(clips.keys().all(|(id, _)| *id != copied.clip_id));
    // A version without clip files says so.
    let out = common::run(&["export", "--project", project, "--name", "plain"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let err = Loader::open(&proj.path().join("manifests/plain"), None, config(true))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("--materialize"), "{err}");

    // A ledger line a kill cut short: the next entry stands on a line of its own. The clip
    // deleted above is written again, then a run writes nothing.
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(".framecull-clips.jsonl"))
        .unwrap()
        .write_all(br#"{"clip_id":"cut sh"#)
        .unwrap();
    assert_eq!(materialize(), (1, 2));
    assert_eq!(materialize(), (0, 3));
}

/// Class folders and Hugging Face folders lay out clip files: without `--materialize` the
/// export is refused with that reason and writes no version; with it, each labelled clip is
/// a hard link to its clip file (the reading back is `python/tests/test_layouts.py`).
#[test]
fn class_and_hugging_face_folders_lay_out_the_clip_files() {
    let (_data, proj) = video_with_clips("v.mp4", 160, 96, 50, &[(2, 20), (25, 45)]);
    let project = proj.path().to_str().unwrap();
    let clips = proj.path().join("clip-files");
    // An export of `formats`, with `more` arguments.
    let export = |formats: &str, more: &[&str]| {
        let mut args = vec![
            "export",
            "--project",
            project,
            "--name",
            "x",
            "--format",
            formats,
        ];
        args.extend_from_slice(more);
        common::run(&args)
    };
    let materialize = ["--materialize", clips.to_str().unwrap()];
    for format in ["folders", "hf"] {
        let out = export(format, &[]);
        assert!(!out.status.success());
        let err = common::stderr(&out);
        assert!(
            err.starts_with("error:") && err.contains("add --materialize DIR"),
            "{err}"
        );
    }
    assert!(!proj.path().join("manifests/x/v0001.json").exists());
    let out = common::run(&["labels", "set", "walk", "v.mp4", "--project", project]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let out = export(
        "jsonl,folders,hf",
        &["--json", materialize[0], materialize[1]],
    );
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let meta: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let dir = proj.path().join("manifests/x");
    for format in ["folders", "hf"] {
        let index: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(meta["files"][format].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        assert_eq!(index["linked"], 2, "{format}: {index}");
        assert_eq!(
            index["dir"],
            meta["files"][format!("{format}.dir")],
            "{index}"
        );
    }
    let folders = dir.join("v0001.folders/all/walk");
    let mut names: Vec<String> = std::fs::read_dir(&folders)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut clip_names: Vec<String> = std::fs::read_dir(&clips)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mp4"))
        .collect();
    clip_names.sort();
    assert_eq!(names, clip_names);
    // No temporary folder is left beside the version.
    assert!(
        std::fs::read_dir(&dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
    // The formats' indexes beside a version (vNNNN.folders.json, vNNNN.dali.json) are not
    // versions: the next export reads the versions and follows them.
    for formats in ["jsonl,dali,folders,hf", "jsonl"] {
        let out = export(formats, &materialize);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }
    assert!(dir.join("v0003.json").exists());
    let listed = common::run(&["manifests", "--project", project]);
    assert_eq!(listed.status.code(), Some(0), "{}", common::stderr(&listed));
}
