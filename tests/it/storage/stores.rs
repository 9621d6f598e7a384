//! Datasets in Azure, GCS and on WebDAV scan and load like the local folder.

use std::path::{Path, PathBuf};

use super::{
    assert_only_listed, assert_refused, comparable_rows, differences, export_with, load_bench_with,
    local_deep_rows, report_of,
};
use crate::common;
use crate::common::s3::{Server, moto_server};

/// A copy of `data` at `url`, read with the settings of `framecull()`: a deep scan gives the
/// local folder's rows and records the URL (and never `secret`), an unchanged rescan only
/// lists, and its manifest read from the store gives the batches of the same manifest read
/// from the local folder. The project and the manifest.
fn assert_like_the_local_folder(
    framecull: &dyn Fn() -> std::process::Command,
    url: &str,
    data: &Path,
    secret: &str,
) -> (tempfile::TempDir, PathBuf) {
    let project = tempfile::tempdir().unwrap();
    let scan = |extra: &[&str]| {
        framecull()
            .args(["scan", url, "--project"])
            .arg(project.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let out = scan(&["--deep"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains(&format!("{url}: ")),
        "{}",
        common::stderr(&out)
    );
    let remote = comparable_rows(project.path());
    assert!(remote.contains_key("clips/h264.mp4"));
    assert_eq!(
        differences(&local_deep_rows(data), &remote),
        Vec::<String>::new()
    );
    let catalog = std::fs::read(project.path().join("catalog.db")).unwrap();
    let text = String::from_utf8_lossy(&catalog);
    assert!(text.contains(url));
    assert!(!text.contains(secret));

    let out = scan(&["--json"]);
    assert_only_listed(&out);

    let manifest = export_with(framecull(), project.path());
    let (meta, rows) = framecull::manifest::open_path(&manifest).unwrap();
    assert_eq!(meta.dataset_root, url);
    assert!(!rows.is_empty());
    let from_store = report_of(&load_bench_with(framecull(), &manifest, None), 0);
    let from_folder = report_of(
        &load_bench_with(framecull(), &manifest, Some(data.to_str().unwrap())),
        0,
    );
    assert!(from_store["frames"].as_u64().unwrap() > 0);
    assert_eq!(from_store["checksum"], from_folder["checksum"]);
    assert_eq!(from_store["frames"], from_folder["frames"]);
    (project, manifest)
}

/// The same dataset in an Azure container (Azurite, Microsoft's emulator) behaves as the local
/// folder (above), and a wrong key is one clear error (exit 2).
#[test]
fn a_dataset_in_an_azure_container_scans_and_loads_like_the_local_folder() {
    use common::azurite::{Azurite, KEY, azurite};
    let Some(binary) = azurite() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let azure = Azurite::start(&binary);
    azure.upload(data.path(), "datasets", "mixed");
    assert_like_the_local_folder(
        &|| azure.framecull(KEY),
        "az://datasets/mixed",
        data.path(),
        KEY,
    );

    let other = tempfile::tempdir().unwrap();
    let wrong = KEY.replace('E', "F");
    let out = azure
        .framecull(&wrong)
        .args(["scan", "az://datasets/mixed", "--project"])
        .arg(other.path())
        .output()
        .unwrap();
    assert_refused(
        &out,
        "az://datasets/mixed",
        "AZURE_STORAGE_ACCOUNT_KEY",
        &wrong,
    );
}

/// The same dataset in a Google Cloud Storage bucket (`gs://`, through GCS's XML API, which
/// moto answers) behaves as the local folder; the manifest also loads over plain HTTP from the
/// objects' URLs (`--root http://...`), as a training machine with only a web address would.
#[test]
fn a_dataset_in_a_gcs_bucket_scans_and_loads_like_the_local_folder() {
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let server = Server::start(&moto, None);
    server.upload_public(data.path(), "datasets", "mixed");
    let settings = tempfile::tempdir().unwrap();
    let gcs = || common::s3::framecull_gcs(&server, settings.path());
    let (_project, manifest) =
        assert_like_the_local_folder(&gcs, "gs://datasets/mixed", data.path(), "private_key");

    let over_http = format!("{}/datasets/mixed", server.endpoint());
    let from_http = report_of(&load_bench_with(gcs(), &manifest, Some(&over_http)), 0);
    let from_folder = report_of(
        &load_bench_with(gcs(), &manifest, Some(data.path().to_str().unwrap())),
        0,
    );
    assert_eq!(from_http["checksum"], from_folder["checksum"]);
    assert_eq!(from_http["frames"], from_folder["frames"]);
}

/// A folder served by a web server with WebDAV (`http://host/path`, listed with PROPFIND)
/// behaves as the local folder; a path the server does not have lists nothing, which the scan
/// says.
#[test]
fn a_folder_on_a_webdav_server_scans_and_loads_like_the_local_folder() {
    use common::webdav::{WebDav, wsgidav};
    let Some(binary) = wsgidav() else { return };
    let served = tempfile::tempdir().unwrap();
    let data = served.path().join("mixed");
    std::fs::create_dir(&data).unwrap();
    common::mixed_dataset(&data);
    let server = WebDav::start(&binary, served.path());
    let url = server.url("mixed");
    assert_like_the_local_folder(&common::bin, &url, &data, "secret");

    let project = tempfile::tempdir().unwrap();
    let missing = server.url("nothing/here");
    let out = common::bin()
        .args(["scan", &missing, "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let stderr = common::stderr(&out);
    assert!(
        stderr.contains(&format!("no objects under {missing}: check the")),
        "{stderr}"
    );
}
