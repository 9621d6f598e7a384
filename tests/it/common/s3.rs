//! A moto S3 server on 127.0.0.1 for tests of datasets in object storage: found as
//! `$FRAMECULL_MOTO_SERVER` or `moto_server` on PATH; without it tests skip, unless
//! FRAMECULL_REQUIRE_S3 is set (CI), where they fail. Objects are uploaded and deleted with
//! boto3 from the server's own Python.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Uploads a folder (hidden entries skipped) under a prefix; with `--public-read`, objects any
/// client may read unsigned; with `--versioned`, into a bucket with versioning on (HEAD then
/// answers a version id, which listings lack); with `--enforce-auth`, then makes the server check credentials
/// (moto accepts any until told to).
const SETUP_PY: &str = r#"
import json, os, sys, urllib.request
import boto3
endpoint, bucket, src, prefix = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="test", aws_secret_access_key="test")
s3.create_bucket(Bucket=bucket)
if "--versioned" in sys.argv:
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
extra = {"ACL": "public-read"} if "--public-read" in sys.argv else None
for path, rel in files_under(src):
    s3.upload_file(path, bucket, prefix + "/" + rel, ExtraArgs=extra)
if "--enforce-auth" in sys.argv:
    req = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                 headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req).read()
"#;

/// Python: `files_under(src)`, the (path, `/`-separated relative path) of every file under
/// `src` by name, hidden entries skipped; the upload scripts start with it.
pub const FILES_UNDER_PY: &str = r#"
import os
def files_under(src):
    for dirpath, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if not f.startswith("."):
                path = os.path.join(dirpath, f)
                yield path, os.path.relpath(path, src).replace(os.sep, "/")
"#;

/// The moto server binary, or `None` (the test skips) unless FRAMECULL_REQUIRE_S3 is set.
pub fn moto_server() -> Option<PathBuf> {
    server_program(
        "FRAMECULL_MOTO_SERVER",
        "moto_server",
        "pip install 'moto[server]'",
    )
}

/// An object-store server's program: `$variable`, else `name` on PATH; `None` (the test skips)
/// unless FRAMECULL_REQUIRE_S3 is set (CI), where the test fails.
pub fn server_program(variable: &str, name: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os(variable)
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        });
    if found.is_none() {
        let message = format!("{name} not found ({install}, or set {variable} to its path)");
        if std::env::var_os("FRAMECULL_REQUIRE_S3").is_some() {
            panic!("{message} and FRAMECULL_REQUIRE_S3 is set");
        }
        eprintln!("SKIPPED: {message}");
    }
    found
}

/// A moto server on 127.0.0.1, killed on drop.
pub struct Server {
    binary: PathBuf,
    pub port: u16,
    child: Child,
}

impl Server {
    pub fn start(binary: &Path, port: Option<u16>) -> Server {
        let port = port.unwrap_or_else(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        });
        let child = Command::new(binary)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let server = Server {
            binary: binary.to_path_buf(),
            port,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Upload `dir` to `s3://bucket/prefix` with boto3 from the server's own Python.
    pub fn upload(&self, dir: &Path, bucket: &str, prefix: &str, enforce_auth: bool) {
        self.upload_with(
            dir,
            bucket,
            prefix,
            if enforce_auth {
                &["--enforce-auth"]
            } else {
                &[]
            },
        );
    }

    /// Upload `dir` as objects anyone may read without signing a request: what a client that
    /// sends no AWS signature (GCS's, plain HTTP) can fetch from moto.
    pub fn upload_public(&self, dir: &Path, bucket: &str, prefix: &str) {
        self.upload_with(dir, bucket, prefix, &["--public-read"]);
    }

    /// Upload `dir` with the upload script's `flags` (`--versioned`, ...).
    pub fn upload_with(&self, dir: &Path, bucket: &str, prefix: &str, flags: &[&str]) {
        let mut cmd = Command::new(self.python());
        cmd.args([
            "-c",
            &format!("{FILES_UNDER_PY}{SETUP_PY}"),
            &self.endpoint(),
            bucket,
        ])
        .arg(dir)
        .arg(prefix)
        .args(flags);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "upload failed: {}",
            super::stderr(&out)
        );
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// framecull with the object store's settings (and no other AWS setting of the caller's).
pub fn framecull(server: &Server, key: &str) -> Command {
    let mut cmd = super::bin();
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("AWS_ACCESS_KEY_ID", key)
        .env("AWS_SECRET_ACCESS_KEY", "test-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", server.endpoint())
        .env("AWS_ALLOW_HTTP", "true");
    cmd
}

/// Deletes `s3://bucket/key` with boto3 from the server's own Python.
const DELETE_PY: &str = r#"
import sys
import boto3
endpoint, bucket, key = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="test", aws_secret_access_key="test")
s3.delete_object(Bucket=bucket, Key=key)
"#;

/// The Python beside moto's server (boto3 comes with moto; scripts/test.sh installs
/// azure-storage-blob there too), else `python3`.
pub fn venv_python() -> PathBuf {
    python_beside(&PathBuf::from(
        std::env::var_os("FRAMECULL_MOTO_SERVER").unwrap_or_default(),
    ))
}

/// The Python in `binary`'s folder (a venv's `bin`), else `python3`.
fn python_beside(binary: &Path) -> PathBuf {
    ["python3", "python"]
        .iter()
        .map(|name| binary.with_file_name(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

impl Server {
    /// The Python beside the server (boto3 comes with moto).
    pub fn python(&self) -> PathBuf {
        python_beside(&self.binary)
    }

    pub fn delete(&self, bucket: &str, key: &str) {
        let out = Command::new(self.python())
            .args(["-c", DELETE_PY, &self.endpoint(), bucket, key])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "delete failed: {}",
            super::stderr(&out)
        );
    }

    /// An object store root opened in this process (the settings passed, not the
    /// environment, which tests running in parallel share).
    pub fn root(&self, url: &str) -> framecull::storage::Root {
        let endpoint = self.endpoint();
        let remote = framecull::storage::Remote::open_with(
            url,
            &[
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test-secret"),
                ("AWS_REGION", "us-east-1"),
                ("AWS_ENDPOINT_URL", &endpoint),
                ("AWS_ALLOW_HTTP", "true"),
            ],
        )
        .unwrap();
        framecull::storage::Root::Remote(std::sync::Arc::new(remote))
    }
}

/// framecull reading `gs://` buckets from this server through GCS's XML API, which moto
/// answers (listing with `list-type=2`, ranged GETs, HEAD). The credentials are a service
/// account file (`GOOGLE_SERVICE_ACCOUNT`, written into `dir`) of the kind emulators use: no
/// OAuth, the server's URL as the base; objects must be public (`upload_public`), as no
/// request is signed. No other Google or AWS setting of the caller's.
pub fn framecull_gcs(server: &Server, dir: &Path) -> Command {
    let account = dir.join("service-account.json");
    let json = serde_json::json!({
        "private_key": "",
        "private_key_id": "",
        "client_email": "",
        "disable_oauth": true,
        "gcs_base_url": server.endpoint(),
    });
    std::fs::write(&account, json.to_string()).unwrap();
    let mut cmd = super::bin();
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("GOOGLE_") || name_text.starts_with("AWS_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("GOOGLE_SERVICE_ACCOUNT", account)
        .env("GOOGLE_ALLOW_HTTP", "true");
    cmd
}
