//! The S3 server the storage benchmark runs against: moto's, on a free port of 127.0.0.1, with a
//! relay that gives its requests a latency and a bandwidth.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use framecull::storage::{Remote, Root};

/// A moto server on a free port of 127.0.0.1, stopped on drop.
pub(super) struct Moto {
    child: Child,
    /// Where framecull's requests go: the server, or a relay that delays them.
    pub(super) endpoint: String,
    /// The server itself (uploads).
    pub(super) direct: String,
    python: PathBuf,
}

/// A network between framecull and a store: each request held `delay`, the answers of all
/// connections together paced to `bytes_per_sec` (0: unpaced).
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    pub(super) delay: Duration,
    pub(super) bytes_per_sec: u64,
}

/// The link's capacity, shared by every connection through the relay: each chunk passed on
/// takes its time on the wire after the chunks before it, whichever connection sent them.
struct Wire {
    bytes_per_sec: u64,
    free_at: std::sync::Mutex<std::time::Instant>,
}

impl Wire {
    /// Waits until `n` more bytes have crossed the wire.
    fn pass(&self, n: usize) {
        if self.bytes_per_sec == 0 {
            return;
        }
        let takes = Duration::from_secs_f64(n as f64 / self.bytes_per_sec as f64);
        let done = {
            let mut free_at = self.free_at.lock().unwrap_or_else(|e| e.into_inner());
            let done = (*free_at).max(std::time::Instant::now()) + takes;
            *free_at = done;
            done
        };
        std::thread::sleep(done.saturating_duration_since(std::time::Instant::now()));
    }
}

/// A TCP relay on 127.0.0.1 to the server on `port` that holds each chunk a client sends for
/// the link's delay before passing it on (every request waits that much more, as it would for
/// a store that far away) and passes answers back, all connections together, no faster than
/// the link's rate. Returns its port.
fn start_relay(port: u16, link: Link) -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let relay = listener.local_addr()?.port();
    let wire = std::sync::Arc::new(Wire {
        bytes_per_sec: link.bytes_per_sec,
        free_at: std::sync::Mutex::new(std::time::Instant::now()),
    });
    let pump = |mut from: TcpStream, mut to: TcpStream, delay: Duration, wire: Option<&Wire>| {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    std::thread::sleep(delay);
                    if let Some(wire) = wire {
                        wire.pass(n);
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    };
    std::thread::Builder::new()
        .name("bench-relay".into())
        .spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone())
                else {
                    continue;
                };
                let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
                    let _ = std::thread::Builder::new().name(name.into()).spawn(f);
                };
                spawn(
                    "bench-relay-up",
                    Box::new(move || pump(client, server, link.delay, None)),
                );
                let wire = wire.clone();
                spawn(
                    "bench-relay-down",
                    Box::new(move || pump(server_back, client_back, Duration::ZERO, Some(&wire))),
                );
            }
        })?;
    Ok(relay)
}

impl Moto {
    pub(super) fn start(binary: &Path, link: Link) -> anyhow::Result<Moto> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(binary)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let python = ["python3", "python"]
            .iter()
            .map(|name| binary.with_file_name(name))
            .find(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("python3"));
        let direct = format!("http://127.0.0.1:{port}");
        let endpoint = if link.delay.is_zero() && link.bytes_per_sec == 0 {
            direct.clone()
        } else {
            format!("http://127.0.0.1:{}", start_relay(port, link)?)
        };
        let moto = Moto {
            child,
            endpoint,
            direct,
            python,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            anyhow::ensure!(Instant::now() < deadline, "moto_server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(moto)
    }

    /// Upload the media files of `dir` (hidden entries skipped) to `s3://bucket/prefix`.
    pub(super) fn upload(&self, dir: &Path, bucket: &str, prefix: &str) -> anyhow::Result<()> {
        const UPLOAD_PY: &str = r#"
import os, sys
import boto3
endpoint, bucket, src, prefix = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="bench", aws_secret_access_key="bench")
try:
    s3.create_bucket(Bucket=bucket)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
for dirpath, dirs, files in os.walk(src):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for f in sorted(files):
        if not f.startswith("."):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            s3.upload_file(path, bucket, prefix + "/" + rel)
"#;
        let out = Command::new(&self.python)
            .args(["-c", UPLOAD_PY, &self.direct, bucket])
            .arg(dir)
            .arg(prefix)
            .output()
            .with_context(|| format!("cannot run {}", self.python.display()))?;
        anyhow::ensure!(
            out.status.success(),
            "upload with boto3 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// A root under `url`, with the server's endpoint and a test key.
    pub(super) fn root(&self, url: &str) -> anyhow::Result<Root> {
        let remote = Remote::open_with(
            url,
            &[
                ("AWS_ACCESS_KEY_ID", "bench"),
                ("AWS_SECRET_ACCESS_KEY", "bench"),
                ("AWS_REGION", "us-east-1"),
                ("AWS_ENDPOINT_URL", &self.endpoint),
                ("AWS_ALLOW_HTTP", "true"),
            ],
        )?;
        Ok(Root::Remote(Arc::new(remote)))
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn moto_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("FRAMECULL_MOTO_SERVER").map(PathBuf::from))
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("moto_server"))
                .find(|p| p.is_file())
        })
        .filter(|p| p.is_file())
        .context("moto_server not found: pip install 'moto[server]', then --moto PATH")
}
