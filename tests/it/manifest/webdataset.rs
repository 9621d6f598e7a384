//! WebDataset shards: resumed after SIGTERM, their progress counted, read by the loader.

use crate::common;

use std::path::Path;

use framecull::catalog::Catalog;
use framecull::manifest::{self, ExportOptions, Format};

use super::{options, scan_deep, video_with_clips};

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
            command.env(framecull::model::SLOW_SHARD_ENV, "400");
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
