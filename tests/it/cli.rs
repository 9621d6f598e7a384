//! The `framecull` binary end to end: scan, list, stats, rescans and exit codes.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;

use common::{list_jsonl, run, stderr, stdout};
use framecull::media::synth::VideoSpec;

fn scan(dir: &Path, project: &Path) -> std::process::Output {
    run(&[
        "scan",
        dir.to_str().unwrap(),
        "--project",
        project.to_str().unwrap(),
        "--jobs",
        "2",
    ])
}

#[test]
fn scan_then_list_reports_every_media_file_with_documented_fields() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let n = common::mixed_dataset(data.path());
    let out = scan(data.path(), proj.path());
    // Two broken files: exit code 1 (finished with per-file problems).
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));

    let rows = list_jsonl(proj.path());
    assert_eq!(rows.len(), n, "{:?}", rows.keys().collect::<Vec<_>>());
    assert!(!rows.contains_key("notes.txt"));
    let fields = [
        "path",
        "kind",
        "status",
        "error",
        "container",
        "codec",
        "width",
        "height",
        "rotation_deg",
        "fps",
        "fps_base",
        "duration_secs",
        "start_secs",
        "frame_count",
        "size_bytes",
        "has_audio",
        "exif_orientation",
    ];
    for row in rows.values() {
        for f in fields {
            assert!(row.get(f).is_some(), "field {f} missing in {row}");
        }
    }
    let h264 = &rows["clips/h264.mp4"];
    assert_eq!(h264["kind"], "video");
    assert_eq!(h264["status"], "ok");
    assert_eq!(h264["codec"], "h264");
    assert_eq!(h264["width"], 320);
    assert_eq!(h264["frame_count"], 25);
    assert_eq!(h264["error"], serde_json::Value::Null);
    assert_eq!(rows["clips/rotated.mp4"]["rotation_deg"], 90);
    assert_eq!(rows["images/b.jpg"]["exif_orientation"], 6);
    assert_eq!(rows["images/b.jpg"]["kind"], "image");
    let empty = &rows["images/empty.jpg"];
    assert_eq!(
        (empty["kind"].as_str(), empty["status"].as_str()),
        (Some("image"), Some("error"))
    );
    assert_eq!(empty["error"], "empty file (0 bytes)");
    assert_eq!(rows["clips/garbage.mp4"]["status"], "error");

    // A filter: the files under clips/ wider than 300 px.
    let wide: Vec<String> =
        common::list_jsonl_where(proj.path(), Some("width>300 and path:clips/"))
            .into_keys()
            .collect();
    let mut expected: Vec<String> = rows
        .iter()
        .filter(|(p, r)| p.starts_with("clips/") && r["width"].as_u64().is_some_and(|w| w > 300))
        .map(|(p, _)| p.to_string())
        .collect();
    expected.sort();
    assert!(!expected.is_empty());
    assert_eq!(wide, expected);
    // A misspelt measure is a usage error that names the measures.
    let bad = run(&[
        "list",
        "--project",
        proj.path().to_str().unwrap(),
        "--where",
        "widht>300",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("duration_secs"), "{}", stderr(&bad));

    // CSV carries the same rows with a header.
    let csv = run(&[
        "list",
        "--project",
        proj.path().to_str().unwrap(),
        "--format",
        "csv",
    ]);
    let text = stdout(&csv);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("path,kind,status,error,"));
    assert_eq!(lines.count(), n);

    // Stats as JSON: counts by kind add up.
    let stats = run(&[
        "stats",
        "--project",
        proj.path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(stats.status.code(), Some(0), "{}", stderr(&stats));
    let v: serde_json::Value = serde_json::from_str(&stdout(&stats)).unwrap();
    assert_eq!(v["files"], n);
    let by_kind: u64 = v["by_kind"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["files"].as_u64().unwrap())
        .sum();
    assert_eq!(by_kind, n as u64);
    let video = v["by_kind"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "video")
        .unwrap();
    assert_eq!(video["files"], 5);
    // The text file is not media: counted, and listed with --all (same fields, the reason).
    assert_eq!(v["other_files"], 1);
    let all = run(&[
        "list",
        "--project",
        proj.path().to_str().unwrap(),
        "--format",
        "jsonl",
        "--all",
    ]);
    let rows: Vec<serde_json::Value> = stdout(&all)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), n + 1);
    let notes = rows.iter().find(|r| r["path"] == "notes.txt").unwrap();
    assert_eq!(notes["kind"], "other");
    assert_eq!(notes["status"], "not_media");
    assert_eq!(
        notes["error"],
        "not media: .txt files are not images or videos"
    );
    assert_eq!(
        notes.as_object().unwrap().keys().collect::<Vec<_>>(),
        rows[0].as_object().unwrap().keys().collect::<Vec<_>>()
    );
    assert!(stderr(&out).contains("1 other file is not media"));
}

#[test]
fn rescans_are_incremental() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    common::video(
        data.path(),
        "a.mp4",
        &VideoSpec::new("libx264", 64, 48, 25, 10),
    );
    common::video(
        data.path(),
        "b.mp4",
        &VideoSpec::new("libx264", 64, 48, 25, 10),
    );
    common::video(
        data.path(),
        "sub/c.mp4",
        &VideoSpec::new("libx264", 64, 48, 25, 10),
    );
    let first = run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let s: serde_json::Value = serde_json::from_str(&stdout(&first)).unwrap();
    assert_eq!(
        (
            s["counts"]["probed"].as_u64(),
            s["counts"]["unchanged"].as_u64()
        ),
        (Some(3), Some(0))
    );

    // Unchanged: nothing probed.
    let again = run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
        "--json",
    ]);
    let s: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(
        (
            s["counts"]["probed"].as_u64(),
            s["counts"]["unchanged"].as_u64()
        ),
        (Some(0), Some(3))
    );

    // Changed content is re-probed, a deleted file becomes missing, a new one is added.
    common::video(
        data.path(),
        "a.mp4",
        &VideoSpec::new("libx264", 96, 64, 25, 20),
    );
    std::fs::remove_file(data.path().join("b.mp4")).unwrap();
    common::video(
        data.path(),
        "d.mp4",
        &VideoSpec::new("libx264", 64, 48, 25, 10),
    );
    let third = run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
        "--json",
    ]);
    let s: serde_json::Value = serde_json::from_str(&stdout(&third)).unwrap();
    assert_eq!(s["counts"]["probed"], 2);
    assert_eq!(s["counts"]["unchanged"], 1);
    assert_eq!(s["counts"]["missing"], 1);
    let rows = list_jsonl(proj.path());
    assert_eq!(rows["a.mp4"]["width"], 96);
    assert_eq!(rows["b.mp4"]["status"], "missing");
    assert_eq!(rows["sub/c.mp4"]["status"], "ok");
    assert_eq!(rows["d.mp4"]["status"], "ok");

    // A file that comes back is probed again.
    common::video(
        data.path(),
        "b.mp4",
        &VideoSpec::new("libx264", 64, 48, 25, 10),
    );
    let fourth = run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
    ]);
    assert_eq!(fourth.status.code(), Some(0));
    assert_eq!(list_jsonl(proj.path())["b.mp4"]["status"], "ok");
}

#[test]
fn default_project_lives_in_the_dataset_and_is_not_scanned() {
    let data = tempfile::tempdir().unwrap();
    common::video(
        data.path(),
        "a.mp4",
        &VideoSpec::new("libx264", 64, 48, 25, 5),
    );
    // Hidden folders (and the project folder) are skipped; so are FIFOs and symlink loops.
    std::fs::create_dir_all(data.path().join(".cache")).unwrap();
    std::fs::copy(data.path().join("a.mp4"), data.path().join(".cache/x.mp4")).unwrap();
    std::os::unix::fs::symlink(data.path(), data.path().join("loop")).unwrap();
    let fifo = data.path().join("pipe.mp4");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());

    for _ in 0..2 {
        let out = run(&["scan", data.path().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert!(data.path().join(".framecull/catalog.db").is_file());
    let rows = list_jsonl(&data.path().join(".framecull"));
    assert_eq!(rows.keys().collect::<Vec<_>>(), vec!["a.mp4"]);

    // `list` finds the project from the current folder.
    let out = common::bin()
        .arg("list")
        .current_dir(data.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("a.mp4"));
}

#[test]
fn usage_errors_exit_with_2() {
    let out = run(&["scan"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["scan", "/definitely/not/here"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/definitely/not/here"));
    let empty = tempfile::tempdir().unwrap();
    let out = run(&["list", "--project", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no framecull project"),
        "{}",
        stderr(&out)
    );
}

/// `--version` names the build's revision; completions and the manual page come from the
/// command definition, so they list every command.
#[test]
fn version_completions_and_manual_page() {
    let version = stdout(&run(&["--version"]));
    let mut lines = version.lines();
    let first = lines.next().unwrap_or_default();
    assert!(first.starts_with("framecull 0."), "{version}");
    assert!(first.contains(" (") && first.ends_with(')'), "{version}");
    // The FFmpeg it runs with, and the decoders of common dataset codecs it has and lacks.
    let ffmpeg = lines.next().unwrap_or_default();
    assert!(
        ffmpeg.starts_with("FFmpeg ") && ffmpeg.contains("libavcodec "),
        "{version}"
    );
    let decoders = lines.next().unwrap_or_default();
    assert!(
        decoders.starts_with("decoders: ") && decoders.contains("h264"),
        "{version}"
    );
    assert!(
        lines
            .next()
            .unwrap_or_default()
            .starts_with("missing decoders: ")
    );
    let short = stdout(&run(&["-V"]));
    assert_eq!(short.lines().count(), 1, "{short}");
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        for command in ["scan", "export", "dups", "load-bench"] {
            assert!(text.contains(command), "{shell} completions lack {command}");
        }
    }
    let man = run(&["man"]);
    assert_eq!(man.status.code(), Some(0), "{}", stderr(&man));
    let text = stdout(&man);
    assert!(
        text.contains(".TH framecull 1"),
        "{}",
        &text[..text.len().min(300)]
    );
    assert!(text.contains("scan") && text.contains("export"));

    // The page renders with man(1) without warnings, and bash loads the completions.
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("framecull.1");
    std::fs::write(&page, &text).unwrap();
    let out = std::process::Command::new("man")
        .args(["--warnings", "-l"])
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("man (packaging/deps.sh installs man-db)");
    let rendered = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        rendered.contains("NAME") && rendered.contains("framecull - "),
        "{rendered}"
    );
    let completions = dir.path().join("framecull.bash");
    std::fs::write(&completions, stdout(&run(&["completions", "bash"]))).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"source "$1" && complete -p framecull"#)
        .arg("bash")
        .arg(&completions)
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("framecull"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn the_desktop_entry_is_valid() {
    let entry = concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/framecull.desktop");
    let out = std::process::Command::new("desktop-file-validate")
        .arg(entry)
        .output()
        .expect("desktop-file-validate (packaging/deps.sh installs desktop-file-utils)");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A framecull.toml that does not parse is an error naming the file and its line, before any
/// work: never the default settings in its place (the deep pass would analyse every file under
/// the default limits, and fail only when the flags are derived).
#[test]
fn a_framecull_toml_that_does_not_parse_stops_scan_and_analyze_naming_its_line() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    assert_eq!(scan(data.path(), proj.path()).status.code(), Some(1));
    let config = proj.path().join("framecull.toml");
    std::fs::write(&config, "[limits]\nmax_memory_mib = \"plenty\"\n").unwrap();
    let project = proj.path().to_str().unwrap();
    for args in [
        vec!["analyze", "--project", project, "--jobs", "2"],
        vec![
            "scan",
            data.path().to_str().unwrap(),
            "--project",
            project,
            "--deep",
        ],
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(config.to_str().unwrap()) && err.contains("line 2"),
            "{args:?}: {err}"
        );
    }
    let analysed = common::list_jsonl_where(proj.path(), Some("motion_mean>=0"));
    assert!(
        analysed.is_empty(),
        "analysed anyway: {:?}",
        analysed.keys()
    );
}

/// Files with no content are `unreadable`, each on its own: not byte-identical duplicates of
/// one another (`empty.jpg` and `empty.mp4` were a duplicate group). A real copy still is one.
#[test]
fn empty_files_are_not_grouped_as_duplicates() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    std::fs::write(data.path().join("clips/empty.mp4"), b"").unwrap();
    std::fs::create_dir_all(data.path().join("more")).unwrap();
    std::fs::write(data.path().join("more/empty.jpg"), b"").unwrap();
    let h264 = data.path().join("clips/h264.mp4");
    std::fs::copy(&h264, data.path().join("more/h264 copy.mp4")).unwrap();
    let out = run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
        "--deep",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let rows = list_jsonl(proj.path());
    let codes = |path: &str| common::flag_codes(&rows[path]);
    for empty in ["images/empty.jpg", "clips/empty.mp4", "more/empty.jpg"] {
        assert_eq!(rows[empty]["dup_group"], serde_json::Value::Null, "{empty}");
        assert_eq!(codes(empty), ["unreadable"], "{empty}");
    }
    let copy = &rows["more/h264 copy.mp4"];
    assert_eq!(copy["dup_group"], rows["clips/h264.mp4"]["dup_group"]);
    assert!(copy["dup_group"].is_i64());
    assert!(codes("more/h264 copy.mp4").contains(&"duplicate_exact".to_string()));
}

/// Path arguments as git reads them: relative to the current folder inside the dataset,
/// absolute inside it, or relative to the dataset root as before; an absolute path outside the
/// dataset is an error that says so.
#[test]
fn path_arguments_resolve_from_the_current_folder_or_absolute() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    // A name with a space, a comma, an accent and a hash, reached from its folder.
    let odd = "night shot, é #1.mp4";
    std::fs::copy(
        data.path().join("clips/h264.mp4"),
        data.path().join("clips").join(odd),
    )
    .unwrap();
    assert_eq!(scan(data.path(), proj.path()).status.code(), Some(1));
    let project = proj.path().to_str().unwrap();
    let in_folder = |dir: &Path, args: &[&str]| {
        common::bin()
            .args(args)
            .args(["--project", project])
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let clips = data.path().join("clips");
    let accepted = [
        in_folder(&clips, &["review", "accept", "h264.mp4", "./vp9.webm"]),
        in_folder(&clips, &["review", "accept", "../images/a.png"]),
        in_folder(proj.path(), &["review", "accept", "clips/mpeg4.avi"]),
        in_folder(&clips, &["review", "accept", "clips/rotated.mp4"]),
    ];
    for out in &accepted {
        assert!(out.status.success(), "{}", stderr(out));
    }
    let absolute = data.path().join("images/b.jpg");
    let out = in_folder(
        proj.path(),
        &["tag", "add", "checked", absolute.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = list_jsonl(proj.path());
    let decided: Vec<&str> = rows
        .iter()
        .filter(|(_, r)| r["decision"] == "accepted")
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(
        decided,
        [
            "clips/h264.mp4",
            "clips/mpeg4.avi",
            "clips/rotated.mp4",
            "clips/vp9.webm",
            "images/a.png"
        ]
    );
    assert_eq!(rows["images/b.jpg"]["tags"], serde_json::json!(["checked"]));
    let out = in_folder(&clips, &["review", "reject", odd]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = list_jsonl(proj.path());
    assert_eq!(rows[&format!("clips/{odd}")]["decision"], "rejected");

    let outside = proj.path().join("elsewhere.mp4");
    let out = in_folder(&clips, &["review", "reject", outside.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("outside the dataset"),
        "{}",
        stderr(&out)
    );
    let out = in_folder(&clips, &["review", "reject", "nothing.mp4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nothing.mp4: not in the catalog"),
        "{}",
        stderr(&out)
    );
}
