//! The scan pipeline through the library: events, cancellation and resumption.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};

use framecull::catalog::Catalog;
use framecull::media::synth::ImageKind;
use framecull::scan::{ScanEvent, ScanOptions, scan};
use framecull::storage::Root;

#[test]
fn cancelling_leaves_a_consistent_catalog_and_the_next_scan_resumes() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let seed = common::image(data.path(), "seed.png", ImageKind::Png, 16, 16, None);
    for i in 0..1500 {
        std::fs::copy(&seed, data.path().join(format!("f{i:04}.png"))).unwrap();
    }
    let total = 1501;
    let root = data.path().canonicalize().unwrap();
    let options = ScanOptions {
        jobs: 1,
        batch_size: 64,
        ..ScanOptions::default()
    };

    let mut catalog = Catalog::create_or_open(proj.path(), &root).unwrap();
    let cancel = AtomicBool::new(false);
    let mut walked = None;
    let mut committed = 0;
    let summary = scan(
        &mut catalog,
        &Root::from(root.clone()),
        &options,
        &cancel,
        &mut |e| match e {
            ScanEvent::Walked {
                files, to_probe, ..
            } => walked = Some((files, to_probe)),
            ScanEvent::Probed { done: 100, .. } => cancel.store(true, Ordering::SeqCst),
            ScanEvent::Committed { stored } => committed = stored,
            _ => {}
        },
    )
    .unwrap();
    assert_eq!(walked, Some((total, total)));
    assert!(summary.cancelled);
    // Everything probed before the cancel is stored; nothing after it was started.
    let stored = catalog.items().unwrap().len() as u64;
    assert_eq!(stored, committed);
    assert!((100..total).contains(&stored), "stored {stored}");
    // A cancelled scan marks nothing missing.
    assert_eq!(summary.counts.missing, 0);

    let summary = scan(
        &mut catalog,
        &Root::from(root.clone()),
        &options,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    assert!(!summary.cancelled);
    assert_eq!(summary.counts.unchanged, stored);
    assert_eq!(summary.counts.probed, total - stored);
    assert_eq!(catalog.items().unwrap().len() as u64, total);
}

#[test]
fn a_project_refuses_another_dataset() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    Catalog::create_or_open(proj.path(), a.path()).unwrap();
    // Reopening runs no migration twice and keeps the dataset root.
    let again = Catalog::create_or_open(proj.path(), a.path()).unwrap();
    assert_eq!(again.dataset_root().unwrap().as_deref(), Some(a.path()));
    let err = Catalog::create_or_open(proj.path(), b.path())
        .err()
        .unwrap();
    assert!(err.to_string().contains("belongs to dataset"), "{err}");
}

/// Files whose extension and signature framecull's own tables do not know are asked of
/// FFmpeg's format probe: a Windows TV recording and a JPEG 2000 codestream are scanned (not
/// silently left out), while data files with unknown extensions are not taken for media.
#[test]
fn formats_only_ffmpeg_knows_are_found_by_their_content() {
    use framecull::media::synth::{self, VideoSpec};
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let mut wtv = VideoSpec::new("mpeg2video", 64, 48, 25, 10);
    wtv.gop = 5;
    synth::write_video(&data.path().join("rec.wtv"), &wtv).unwrap();
    // MPEG-TS under an extension nobody registered, and Matroska with no extension at all.
    let ts = VideoSpec::new("mpeg2video", 64, 48, 25, 10);
    synth::write_video(&data.path().join("capture.ts"), &ts).unwrap();
    std::fs::rename(
        data.path().join("capture.ts"),
        data.path().join("capture.rec"),
    )
    .unwrap();
    synth::write_video(
        &data.path().join("clip.mkv"),
        &VideoSpec::new("libx264", 64, 48, 25, 10),
    )
    .unwrap();
    std::fs::rename(data.path().join("clip.mkv"), data.path().join("clip")).unwrap();
    let mut j2k = VideoSpec::new("jpeg2000", 64, 48, 25, 1);
    j2k.gop = 1;
    synth::write_video(&data.path().join("still.j2k"), &j2k).unwrap();
    // Look-alikes that are not media: random bytes, text, and an empty file.
    let noise: Vec<u8> = (0..9000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(data.path().join("weights.bin"), noise).unwrap();
    std::fs::write(
        data.path().join("README"),
        "a dataset of things\n".repeat(50),
    )
    .unwrap();
    std::fs::write(data.path().join("empty.dat"), b"").unwrap();
    std::fs::write(data.path().join("labels.json"), b"{}").unwrap();

    let root = data.path().canonicalize().unwrap();
    let mut catalog = Catalog::create_or_open(proj.path(), &root).unwrap();
    let rescan = |catalog: &mut Catalog| {
        scan(
            catalog,
            &Root::from(root.clone()),
            &ScanOptions::default(),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap()
    };
    let summary = rescan(&mut catalog);
    let items = catalog.items().unwrap();
    let found: Vec<(&str, &str, &str)> = items
        .iter()
        .map(|i| (i.path.as_str(), i.kind.as_str(), i.status.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("capture.rec", "video", "ok"),
            ("clip", "video", "ok"),
            ("rec.wtv", "video", "ok"),
            ("still.j2k", "image", "ok")
        ],
        "{summary:?}"
    );
    let wtv = items.iter().find(|i| i.path == "rec.wtv").unwrap();
    assert_eq!(wtv.info.width, Some(64));

    // Every other regular file is accounted for, with the reason it was not taken.
    assert_eq!(summary.counts.other, 4);
    let others = catalog.other_files().unwrap();
    let reasons: Vec<(&str, u64, &str)> = others
        .iter()
        .map(|f| (f.path.as_str(), f.size_bytes, f.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            (
                "README",
                1000,
                "not media: neither its name nor its first bytes are an image or video format FFmpeg knows"
            ),
            ("empty.dat", 0, "not media: an empty file"),
            (
                "labels.json",
                2,
                "not media: .json files are not images or videos"
            ),
            (
                "weights.bin",
                9000,
                "not media: neither its name nor its first bytes are an image or video format FFmpeg knows"
            ),
        ]
    );
    // A rescan replaces the list: a removed file leaves it.
    std::fs::remove_file(data.path().join("README")).unwrap();
    let summary = rescan(&mut catalog);
    assert_eq!(summary.counts.other, 3);
    assert_eq!(catalog.other_files().unwrap().len(), 3);
}

/// A stream this FFmpeg cannot decode is `unsupported` with a reason at scan time, and the
/// scan says so once, grouped, instead of a decode error per file at analysis time.
#[test]
fn a_stream_without_a_decoder_is_reported_once_at_scan_time() {
    let data = tempfile::tempdir().unwrap();
    // A64 multicolour: FFmpeg encodes it, has no decoder for it, and NUT stores no codec id
    // for it, so the file opens but its video stream cannot be decoded.
    for name in ["a.nut", "b.nut"] {
        let out = std::process::Command::new("ffmpeg")
            .args([
                "-loglevel",
                "error",
                "-f",
                "lavfi",
                "-i",
                "testsrc=s=320x200:d=1",
            ])
            .args(["-frames:v", "2", "-c:v", "a64multi"])
            .arg(data.path().join(name))
            .output()
            .expect("the ffmpeg command (packaging/deps.sh installs it)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    common::image(data.path(), "ok.png", ImageKind::Png, 32, 24, None);
    let out = common::run(&["scan", data.path().to_str().unwrap(), "--deep"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let err = common::stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains(" lacks")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].starts_with("warning: 2 files need "), "{err}");
    assert!(warnings[0].contains("a.nut, b.nut"), "{err}");
    let rows = common::list_jsonl(&data.path().join(".framecull"));
    for name in ["a.nut", "b.nut"] {
        let row = &rows[name];
        assert_eq!(row["status"], "unsupported", "{row}");
        assert!(row["error"].as_str().unwrap().contains("lacks"), "{row}");
        let codes: Vec<&str> = row["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["code"].as_str().unwrap())
            .collect();
        assert!(!codes.contains(&"undecodable"), "{codes:?}");
    }
    assert_eq!(rows["ok.png"]["status"], "ok");
}

/// A dataset the user cannot write to scans and analyses with the project elsewhere; a
/// project folder that cannot be made is one clear error (exit 2) that says what to do.
/// Run as an unprivileged user (`setpriv` to nobody when the tests run as root, whom
/// permissions do not stop).
#[test]
fn a_read_only_dataset_works_and_an_unwritable_project_is_one_clear_error() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let base = tempfile::tempdir().unwrap();
    let data = base.path().join("data");
    common::image(&data, "a.png", ImageKind::Png, 64, 48, None);
    common::video(
        &data,
        "b.mp4",
        &framecull::media::synth::VideoSpec::new("mpeg4", 96, 64, 25, 10),
    );
    let writable = base.path().join("writable");
    std::fs::create_dir_all(&writable).unwrap();
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    mode(base.path(), 0o755);
    mode(&data, 0o555);
    mode(&writable, 0o777);
    let as_root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let run = |args: &[&str]| {
        let exe = env!("CARGO_BIN_EXE_framecull");
        let mut command = if as_root {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", exe]);
            c
        } else {
            std::process::Command::new(exe)
        };
        command.args(args).output().unwrap()
    };
    let data_arg = data.to_str().unwrap();

    let out = run(&["scan", data_arg]);
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot create project folder")
            && err.contains("keep the project elsewhere with --project DIR"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let blocked = data.join("sub");
    let out = run(&["scan", data_arg, "--project", blocked.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("choose a writable folder for --project"));

    let project = writable.join("p");
    let out = run(&[
        "scan",
        data_arg,
        "--deep",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let rows = common::list_jsonl(&project);
    assert_eq!(rows.len(), 2);
    assert!(
        rows["b.mp4"]["motion_mean"].is_number(),
        "{:?}",
        rows["b.mp4"]
    );
    assert!(rows["a.png"]["sharpness"].is_number());
    assert!(!data.join(".framecull").exists());

    // The project on read-only storage (its folder unwritable): what reads it works, without
    // the write-ahead log SQLite would make beside it; a change is one clear error.
    let names = || {
        let mut names: Vec<_> = std::fs::read_dir(&project)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = names();
    mode(&project, 0o555);
    let out = run(&[
        "list",
        "--format",
        "jsonl",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let listed: std::collections::BTreeMap<String, serde_json::Value> =
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|row| (row["path"].as_str().unwrap().to_string(), row))
            .collect();
    assert_eq!(listed, rows);
    for command in [&["stats"][..], &["flags"]] {
        let out = run(&[command, &["--project", project.to_str().unwrap()]].concat());
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{command:?}: {}",
            common::stderr(&out)
        );
    }
    let out = run(&[
        "review",
        "reject",
        "a.png",
        "--project",
        project.to_str().unwrap(),
    ]);
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the project's folder is read-only"), "{err}");
    assert_eq!(names(), before, "nothing written beside the catalog");
    mode(&project, 0o755);
    mode(&data, 0o755);
}

/// Runs `cmd` to its end, or kills it after `secs` and fails: a scan that opened a FIFO no
/// one writes to would block there for ever.
fn output_within(cmd: &mut std::process::Command, secs: u64) -> std::process::Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{cmd:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Every entry the walk meets is accounted for: broken symbolic links, a FIFO and links to
/// devices are listed with their reason and counted, never opened; a file replaced by a
/// link that leads nowhere (a dataset that moved) is missing, and the link is listed.
#[test]
fn broken_links_fifos_and_devices_are_listed_with_their_reason_and_never_opened() {
    use std::os::unix::fs::symlink;
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    common::image(d, "keep.jpg", ImageKind::Jpeg, 32, 24, None);
    common::image(d, "moved.jpg", ImageKind::Jpeg, 40, 24, None);
    std::fs::create_dir(d.join("sub")).unwrap();
    symlink("/nonexistent/clip.mp4", d.join("dangling.mp4")).unwrap();
    symlink("../nowhere", d.join("sub/gone")).unwrap();
    // Its target appears later, under a hidden name the walk itself skips.
    symlink(".later.jpg", d.join("soon.jpg")).unwrap();
    symlink("/dev/zero", d.join("zero.mp4")).unwrap();
    symlink("/dev/urandom", d.join("noise.jpg")).unwrap();
    let fifo = d.join("pipe.mp4");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let project = d.join(".framecull");
    let project_arg = project.to_str().unwrap();

    let scan = |deep: bool| {
        let mut cmd = common::bin();
        cmd.arg("scan").arg(d);
        if deep {
            cmd.arg("--deep");
        }
        let out = output_within(&mut cmd, 120);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        common::stderr(&out)
    };
    let listed = || {
        let out = common::run(&[
            "list",
            "--project",
            project_arg,
            "--all",
            "--format",
            "jsonl",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        common::stdout(&out)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (text("path"), text("kind"), text("status"), text("error"))
            })
            .collect::<Vec<_>>()
    };
    let row = |path: &str, status: &str, error: &str| {
        let kind = if status.starts_with("not_") {
            "other"
        } else {
            "image"
        };
        (
            path.to_string(),
            kind.to_string(),
            status.to_string(),
            error.to_string(),
        )
    };

    let said = scan(true);
    assert!(
        said.contains("6 entries are not regular files"),
        "the summary counts them: {said}"
    );
    let mut rows = listed();
    rows.sort();
    assert_eq!(
        rows,
        [
            row(
                "dangling.mp4",
                "not_a_file",
                "broken symbolic link -> /nonexistent/clip.mp4"
            ),
            row("keep.jpg", "ok", ""),
            row("moved.jpg", "ok", ""),
            row(
                "noise.jpg",
                "not_a_file",
                "not a regular file: character device, linked to /dev/urandom"
            ),
            row("pipe.mp4", "not_a_file", "not a regular file: FIFO"),
            row(
                "soon.jpg",
                "not_a_file",
                "broken symbolic link -> .later.jpg"
            ),
            row(
                "sub/gone",
                "not_a_file",
                "broken symbolic link -> ../nowhere"
            ),
            row(
                "zero.mp4",
                "not_a_file",
                "not a regular file: character device, linked to /dev/zero"
            ),
        ]
    );
    let out = common::run(&["stats", "--project", project_arg, "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["files"], 2);
    assert_eq!(stats["not_files"], 6);
    assert_eq!(stats["other_files"], 0);
    let out = common::run(&["stats", "--project", project_arg]);
    assert!(
        common::stdout(&out).contains("and 6 entries that are not regular files"),
        "{}",
        common::stdout(&out)
    );

    // The dataset moved: a file became a link that leads nowhere. It is missing, the link
    // is listed; a link whose target appears is media again.
    std::fs::remove_file(d.join("moved.jpg")).unwrap();
    symlink("/mnt/old-disk/moved.jpg", d.join("moved.jpg")).unwrap();
    common::image(d, ".later.jpg", ImageKind::Jpeg, 48, 24, None);
    scan(false);
    let mut rows = listed();
    rows.sort();
    let statuses: Vec<(&str, &str)> = rows
        .iter()
        .map(|(p, _, s, _)| (p.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("dangling.mp4", "not_a_file"),
            ("keep.jpg", "ok"),
            ("moved.jpg", "missing"),
            ("moved.jpg", "not_a_file"),
            ("noise.jpg", "not_a_file"),
            ("pipe.mp4", "not_a_file"),
            ("soon.jpg", "ok"),
            ("sub/gone", "not_a_file"),
            ("zero.mp4", "not_a_file"),
        ]
    );
}
