//! A project of a bucket in the window, opened or typed as a URL, its thumbnails from objects.

use std::path::Path;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use framecull::gui::{App, Command, DialogCommand, JobCommand};

use super::{harness, wait};
use crate::common;

/// A project of a dataset in a bucket opens in the window: the table lists its objects and
/// thumbnails are decoded from the objects. Against moto (skipped without it, as in
/// tests/it/storage/); the window runs in a child test process given the store's settings in
/// its environment, which the client reads.
#[test]
fn a_project_of_a_bucket_opens_with_thumbnails_read_from_its_objects() {
    use common::s3::{Server, framecull, moto_server};
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let server = Server::start(&moto, None);
    server.upload(data.path(), "window", "set", false);
    let project = tempfile::tempdir().unwrap();
    let out = framecull(&server, "test")
        .args(["scan", "s3://window/set", "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let settings = framecull(&server, "test")
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect::<Vec<_>>();
    let in_child = |test: &str, variable: &str, value: &std::ffi::OsStr, data: &Path| {
        // This binary again, running the one test: its name as libtest lists it (the module
        // path within the test binary: `gui::remote::NAME`).
        let this_module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args(["--exact", &format!("{this_module}::{test}")])
            .args(["--nocapture", "--test-threads=1"])
            .env(variable, value)
            .env("XDG_DATA_HOME", data);
        for (name, value) in &settings {
            match value {
                Some(v) => child.env(name, v),
                None => child.env_remove(name),
            };
        }
        let out = child.output().unwrap();
        let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
    };
    let data_home = tempfile::tempdir().unwrap();
    in_child(
        "remote_project_in_the_window",
        "FRAMECULL_TEST_REMOTE_PROJECT",
        project.path().as_os_str(),
        data_home.path(),
    );
    // The URL typed on the start screen: scanned into the window's own project for it.
    in_child(
        "remote_url_typed_in_the_window",
        "FRAMECULL_TEST_REMOTE_URL",
        "s3://window/set/".as_ref(),
        data_home.path(),
    );
    let projects: Vec<_> = std::fs::read_dir(data_home.path().join("framecull/projects"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(projects.len(), 1, "{projects:?}");
    assert!(projects[0].starts_with("s3-window-set-"), "{projects:?}");
}

/// The window part of the test above for a URL typed on the start screen.
#[test]
fn remote_url_typed_in_the_window() {
    let Some(url) = std::env::var("FRAMECULL_TEST_REMOTE_URL").ok() else {
        return;
    };
    let mut h = Harness::builder()
        .with_size(eframe::egui::vec2(1400.0, 860.0))
        .with_max_steps(24)
        .build_eframe(|cc| App::new(cc, None));
    h.run();
    use eframe::egui::accesskit::Role;
    h.get_by_role_and_label(Role::TextInput, "Dataset folder or URL:")
        .focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "Dataset folder or URL:")
        .type_text(&url);
    h.run();
    h.get_by_role_and_label(Role::Button, "Open").click();
    h.run();
    wait(&mut h, "the scan and the load", App::is_idle);
    assert_eq!(h.state().shown(), 8);
    assert!(h.query_by_label_contains("s3://window/set").is_some());
    let project = framecull::catalog::Project::of_url(&url);
    assert!(project.exists(), "{}", project.dir().display());
    // Opening it again finds the same project (only what changed is read: nothing).
    h.state_mut()
        .apply(Command::Job(JobCommand::Open(url.into())));
    wait(&mut h, "the rescan", App::is_idle);
    assert_eq!(h.state().shown(), 8);
}

/// The window part of the test above; does nothing unless that test started it.
#[test]
fn remote_project_in_the_window() {
    let Some(project) = std::env::var_os("FRAMECULL_TEST_REMOTE_PROJECT") else {
        return;
    };
    let project = std::path::PathBuf::from(project);
    let mut h = harness(&project);
    wait(&mut h, "the project to load", App::is_idle);
    assert_eq!(h.state().shown(), 8);
    assert!(h.query_by_label_contains("s3://window/set").is_some());
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ShowGallery(true)));
    h.run();
    wait(&mut h, "the thumbnails", |a| !a.thumbnails_loading());
    h.run();
    // A thumbnail is cached in the project once it decoded: the videos and pictures that can
    // be read (not the empty or garbage files).
    let cached = std::fs::read_dir(project.join("thumbs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(cached >= 4, "{cached} thumbnails decoded from objects");
}
