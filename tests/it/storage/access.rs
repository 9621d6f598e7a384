//! Keys and AWS profiles, a refused key or URL, and a server that stops mid-scan (exit 3).

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{assert_refused, comparable_rows, differences, local_deep_rows, scan};
use crate::common;
use crate::common::s3::{Server, framecull, moto_server};

/// A folder with one small picture, `a.png`.
fn one_picture() -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    let png = framecull::media::synth::ImageKind::Png;
    common::image(data.path(), "a.png", png, 32, 24, None);
    data
}

#[test]
fn a_wrong_key_is_one_clear_error() {
    let Some(moto) = moto_server() else { return };
    let data = one_picture();
    let server = Server::start(&moto, None);
    server.upload(data.path(), "locked", "images", true);
    let project = tempfile::tempdir().unwrap();
    let out = framecull(&server, "AKIAWRONGKEY")
        .args(["scan", "s3://locked/images", "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_refused(
        &out,
        "s3://locked/images",
        "AWS_ACCESS_KEY_ID",
        "test-secret",
    );
}

/// Settings kept where `aws configure` writes them (a profile's key, region and endpoint in
/// `~/.aws`) reach the server as the variables do: a profile scans the server its endpoint
/// names, a profile's wrong key is refused by a server that checks keys, and a profile that
/// does not exist is one clear error.
#[test]
fn a_profile_in_the_aws_config_files_is_read_like_the_variables() {
    let Some(moto) = moto_server() else { return };
    let data = one_picture();
    // One server open to any key, one that checks keys (moto knows none of these).
    let open = Server::start(&moto, None);
    open.upload(data.path(), "locked", "images", false);
    let checking = Server::start(&moto, None);
    checking.upload(data.path(), "locked", "images", true);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        "[train]\naws_access_key_id = test\naws_secret_access_key = test-secret\n\n\
         [wrong]\naws_access_key_id = AKIAWRONGKEY\naws_secret_access_key = profile-secret\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join(".aws/config"),
        format!(
            "[profile train]\nregion = us-east-1\nendpoint_url = {}\n\n\
             [profile wrong]\nregion = us-east-1\nendpoint_url = {}\n",
            open.endpoint(),
            checking.endpoint()
        ),
    )
    .unwrap();
    let scan = |profile: &str| {
        let project = tempfile::tempdir().unwrap();
        let mut cmd = common::bin();
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("AWS_") {
                cmd.env_remove(name);
            }
        }
        let out = cmd
            .env("HOME", home.path())
            .env("AWS_PROFILE", profile)
            .args(["scan", "s3://locked/images", "--project"])
            .arg(project.path())
            .output()
            .unwrap();
        (out, project)
    };
    let (out, project) = scan("train");
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(common::list_jsonl(project.path()).contains_key("a.png"));
    let (out, _) = scan("wrong");
    assert_refused(
        &out,
        "s3://locked/images",
        "AWS_ACCESS_KEY_ID",
        "profile-secret",
    );
    let (out, _) = scan("nope");
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("AWS_PROFILE=nope: no such profile in "),
        "{stderr}"
    );
}

#[test]
fn a_url_without_a_project_is_refused() {
    let out = common::run(&["scan", "s3://bucket/prefix"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        common::stderr(&out).trim(),
        "error: s3://bucket/prefix is not a folder: a dataset URL needs --project DIR, the \
         local folder its catalog is kept in"
    );
    let out = common::run(&["scan", "ftp://host/prefix", "--project", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("ftp:// is not supported (s3://, gs://, az:// and https://"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn a_server_stopped_mid_scan_exits_3_and_a_rerun_finishes() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    for i in 0..6 {
        common::video(
            data.path(),
            &format!("more/v{i}.mp4"),
            &framecull::media::synth::VideoSpec::new("libx264", 320, 240, 25, 50),
        );
    }
    let mut server = Server::start(&moto, None);
    server.upload(data.path(), "flaky", "set", false);
    let project = tempfile::tempdir().unwrap();
    let db = project.path().join("catalog.db");
    let child = framecull(&server, "test")
        .args([
            "scan",
            "s3://flaky/set",
            "--deep",
            "--jobs",
            "1",
            "--project",
        ])
        .arg(project.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop the server once the scan has stored something.
    let deadline = Instant::now() + Duration::from_secs(60);
    while common::count_items(&db) == 0 {
        assert!(Instant::now() < deadline, "the scan stored nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
    let out = child.wait_with_output().unwrap();
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("cannot reach the object store for s3://flaky/set"),
        "{stderr}"
    );

    // The same objects again (moto keeps nothing): the rerun finishes the scan.
    let server = Server::start(&moto, Some(server.port));
    server.upload(data.path(), "flaky", "set", false);
    let out = scan(&server, "s3://flaky/set", project.path(), &["--deep"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let remote = comparable_rows(project.path());
    let local = local_deep_rows(data.path());
    assert_eq!(differences(&local, &remote), Vec::<String>::new());
}
