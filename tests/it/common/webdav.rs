//! WsgiDAV, a WebDAV server, on 127.0.0.1 for tests of `http(s)://` datasets: found as
//! `$FRAMECULL_WSGIDAV` or `wsgidav` on PATH (`pip install wsgidav cheroot`); without it tests
//! skip, unless FRAMECULL_REQUIRE_S3 (the object-store servers) is set, where they fail. It
//! serves a local folder as it is: listing is WebDAV's PROPFIND, reads are ranged GETs.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `wsgidav` program, or `None` (the test skips) unless FRAMECULL_REQUIRE_S3 is set.
pub fn wsgidav() -> Option<PathBuf> {
    super::s3::server_program(
        "FRAMECULL_WSGIDAV",
        "wsgidav",
        "pip install wsgidav cheroot",
    )
}

/// A WebDAV server sharing one folder as `/`, killed on drop.
pub struct WebDav {
    pub port: u16,
    child: Child,
}

impl WebDav {
    pub fn start(binary: &Path, folder: &Path) -> WebDav {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(binary)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .args(["--auth", "anonymous", "--no-config", "-q", "-r"])
            .arg(folder)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "wsgidav did not start");
            if let Ok(Some(status)) = child.try_wait() {
                panic!("wsgidav exited: {status}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        WebDav { port, child }
    }

    /// The URL of a path under the shared folder.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }
}

impl Drop for WebDav {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
