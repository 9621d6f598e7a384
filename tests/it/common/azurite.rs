//! Azurite, Microsoft's Azure Storage emulator, on 127.0.0.1 for tests of `az://` datasets:
//! found as `$FRAMECULL_AZURITE` or `azurite-blob` on PATH (`npm install azurite`); without it
//! tests skip, unless FRAMECULL_REQUIRE_S3 (the object-store servers) is set, where they fail.
//! Blobs are uploaded and deleted with the `azure-storage-blob` package from the Python beside
//! moto's server (scripts/test.sh installs both in one venv).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Azurite's one account and its published key.
pub const ACCOUNT: &str = "devstoreaccount1";
pub const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const UPLOAD_PY: &str = r#"
import os, sys
from azure.storage.blob import BlobServiceClient
endpoint, account, key, container, src, prefix = sys.argv[1:7]
conn = (f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key};"
        f"BlobEndpoint={endpoint};")
service = BlobServiceClient.from_connection_string(conn)
client = service.get_container_client(container)
if not client.exists():
    client.create_container()
for path, rel in files_under(src):
    with open(path, "rb") as data:
        client.upload_blob(prefix + "/" + rel, data, overwrite=True)
"#;

/// The `azurite-blob` launcher, or `None` (the test skips) unless FRAMECULL_REQUIRE_S3 is set.
pub fn azurite() -> Option<PathBuf> {
    super::s3::server_program("FRAMECULL_AZURITE", "azurite-blob", "npm install azurite")
}

/// An Azurite blob service on 127.0.0.1 (blobs in a temporary folder), killed on drop.
pub struct Azurite {
    pub port: u16,
    child: Child,
    _workspace: tempfile::TempDir,
}

impl Azurite {
    pub fn start(binary: &Path) -> Azurite {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Blobs, its debug log and settings in a folder of its own. The Python SDK is often
        // newer than the emulator: API versions are not checked.
        let workspace = tempfile::tempdir().unwrap();
        let mut child = Command::new(binary)
            .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            .args([
                "--silent",
                "--disableTelemetry",
                "--skipApiVersionCheck",
                "--location",
            ])
            .arg(workspace.path())
            .current_dir(workspace.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(workspace.path().join("stderr.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "azurite-blob did not start");
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(workspace.path().join("stderr.log"));
                panic!("azurite-blob exited: {status}: {}", log.unwrap_or_default());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Azurite {
            port,
            child,
            _workspace: workspace,
        }
    }

    /// The account's blob endpoint (path style: the account is the first segment).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{ACCOUNT}", self.port)
    }

    /// Upload `dir` to `az://container/prefix` (the container made when missing).
    pub fn upload(&self, dir: &Path, container: &str, prefix: &str) {
        let out = Command::new(super::s3::venv_python())
            .args(["-c", &format!("{}{UPLOAD_PY}", super::s3::FILES_UNDER_PY)])
            .args([&self.endpoint(), ACCOUNT, KEY, container])
            .arg(dir)
            .arg(prefix)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "upload failed: {}",
            super::stderr(&out)
        );
    }

    /// framecull with this account's settings (`key` as its key) and no other Azure or AWS
    /// setting of the caller's.
    pub fn framecull(&self, key: &str) -> Command {
        let mut cmd = super::bin();
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("AZURE_") || name_text.starts_with("AWS_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT)
            .env("AZURE_STORAGE_ACCOUNT_KEY", key)
            .env("AZURE_STORAGE_ENDPOINT", self.endpoint())
            .env("AZURE_ALLOW_HTTP", "true");
        cmd
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
