//! What crosses the pipe besides a protocol's own messages: sources and roots as a worker is
//! told them (paths as bytes, objects with their store's settings and the bytes already
//! fetched), and what a worker's reads of object stores cost, reported back to the parent.

use std::collections::HashMap;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::source::{Opened, Source};
use framecull_storage::{CachedObject, Object, Remote, RequestCounts, Root, StorageError};

/// What a worker reads, as it is told it: a local file's path (bytes: a name need not be
/// UTF-8), or an object named by its store's URL and the settings the store was opened with
/// ([`Remote::settings`]: credentials, when given so, cross the pipe to the worker and go no
/// further). The worker opens each store once ([`Stores`]), from them and the environment it
/// inherited.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceWire {
    File(Vec<u8>),
    Object {
        store: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        settings: Vec<(String, String)>,
        rel_path: String,
        size_bytes: u64,
        /// Ranges this process already fetched (a probe's header), not requested again.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fetched: Vec<Fetched>,
    },
}

/// A fetched range of an object, its bytes as hexadecimal text.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fetched {
    start: u64,
    hex: String,
}

/// The most of an object's fetched ranges handed to a worker with it.
const FETCHED_BYTES: usize = 4 << 20;

impl SourceWire {
    /// `source` for a worker.
    pub fn of(source: &Source) -> SourceWire {
        match source {
            Source::File(path) => SourceWire::File(path_to_wire(path)),
            Source::Object(object) => SourceWire::object(object, Vec::new()),
        }
    }

    /// An opened source for a worker, with the ranges of an object fetched so far.
    pub fn of_opened(opened: &Opened) -> SourceWire {
        match opened {
            Opened::File(path) => SourceWire::File(path_to_wire(path)),
            Opened::Object(cached) => SourceWire::object(
                cached.object(),
                cached
                    .fetched(FETCHED_BYTES)
                    .into_iter()
                    .map(|(start, bytes)| Fetched {
                        start,
                        hex: hex(&bytes),
                    })
                    .collect(),
            ),
        }
    }

    fn object(object: &Object, fetched: Vec<Fetched>) -> SourceWire {
        SourceWire::Object {
            store: object.remote.url().to_string(),
            settings: object.remote.settings().to_vec(),
            rel_path: object.rel_path.clone(),
            size_bytes: object.size_bytes,
            fetched,
        }
    }

    /// The name messages and fault injection use.
    pub fn name(&self) -> String {
        match self {
            SourceWire::File(path) => String::from_utf8_lossy(path).into_owned(),
            SourceWire::Object { rel_path, .. } => rel_path.clone(),
        }
    }

    /// In the worker: the source to read (an object's store opened once).
    pub fn into_source(self, stores: &mut Stores) -> Result<Source, StorageError> {
        Ok(match self {
            SourceWire::File(path) => Source::File(path_from_wire(path)),
            SourceWire::Object {
                store,
                settings,
                rel_path,
                size_bytes,
                ..
            } => Source::Object(Object {
                remote: stores.open(&store, settings)?,
                rel_path,
                size_bytes,
            }),
        })
    }

    /// In the worker: the source opened, holding the ranges the caller had fetched.
    pub fn into_opened(self, stores: &mut Stores) -> Result<Opened, StorageError> {
        Ok(match self {
            SourceWire::File(path) => Opened::File(path_from_wire(path)),
            SourceWire::Object {
                store,
                settings,
                rel_path,
                size_bytes,
                fetched,
            } => {
                let object = Object {
                    remote: stores.open(&store, settings)?,
                    rel_path,
                    size_bytes,
                };
                let fetched = fetched
                    .into_iter()
                    .filter_map(|f| Some((f.start, unhex(&f.hex)?)))
                    .collect();
                Opened::Object(CachedObject::with_fetched(object, fetched))
            }
        })
    }
}

/// A dataset root as a worker is told it: a folder (bytes) or a store's URL (see
/// [`SourceWire`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootWire {
    Folder(Vec<u8>),
    Store {
        url: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        settings: Vec<(String, String)>,
    },
}

impl RootWire {
    /// `root` for a worker.
    pub fn of(root: &Root) -> RootWire {
        match root {
            Root::Local(dir) => RootWire::Folder(path_to_wire(dir)),
            Root::Remote(remote) => RootWire::Store {
                url: remote.url().to_string(),
                settings: remote.settings().to_vec(),
            },
        }
    }

    /// In the worker: the root (its store opened once).
    pub fn into_root(self, stores: &mut Stores) -> Result<Root, StorageError> {
        Ok(match self {
            RootWire::Folder(dir) => Root::Local(path_from_wire(dir)),
            RootWire::Store { url, settings } => Root::Remote(stores.open(&url, settings)?),
        })
    }
}

/// A path as the protocols carry it: its bytes (any a Linux name holds, not only UTF-8).
pub fn path_to_wire(path: &Path) -> Vec<u8> {
    path.as_os_str().as_bytes().to_vec()
}

/// The path whose bytes [`path_to_wire`] gave.
pub fn path_from_wire(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 15)] as char);
    }
    text
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [hi, lo] => Some(digit(*hi)? << 4 | digit(*lo)?),
            _ => None,
        })
        .collect()
}

/// In a worker: the object stores it opened, by URL and settings, and what it has told its
/// parent of each.
#[derive(Default)]
pub struct Stores {
    open: HashMap<(String, Vec<(String, String)>), Opening>,
}

struct Opening {
    remote: Arc<Remote>,
    told: RequestCounts,
    failure_told: bool,
}

impl Stores {
    fn open(
        &mut self,
        url: &str,
        settings: Vec<(String, String)>,
    ) -> Result<Arc<Remote>, StorageError> {
        let key = (url.to_string(), settings);
        if let Some(o) = self.open.get(&key) {
            return Ok(o.remote.clone());
        }
        let pairs: Vec<(&str, &str)> = key.1.iter().map(|(k, v)| (&**k, &**v)).collect();
        let remote = Arc::new(Remote::open_with(url, &pairs)?);
        self.open.insert(
            key,
            Opening {
                remote: remote.clone(),
                told: RequestCounts::default(),
                failure_told: false,
            },
        );
        Ok(remote)
    }

    /// What reading the stores cost since the last report, and a failure that stops the
    /// parent's run (once): to send with the answer.
    pub fn report(&mut self) -> Vec<StorageReport> {
        let mut reports = Vec::new();
        for ((url, _), o) in &mut self.open {
            let now = o.remote.counts();
            let counts = now.since(&o.told);
            o.told = now;
            let failure = if o.failure_told {
                None
            } else {
                o.remote.failure()
            };
            o.failure_told |= failure.is_some();
            if counts.total() > 0 || counts.bytes_read > 0 || failure.is_some() {
                reports.push(StorageReport {
                    store: url.clone(),
                    counts,
                    failure,
                });
            }
        }
        reports
    }
}

/// What a worker's reads of one store cost and met, for the parent's
/// [`Remote::absorb`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StorageReport {
    pub store: String,
    pub counts: RequestCounts,
    pub failure: Option<StorageError>,
}

/// A worker's answer: the request's own answer and what its reads of object stores cost.
#[derive(Debug, Serialize, Deserialize)]
pub struct Reply<A> {
    pub answer: A,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage: Vec<StorageReport>,
}

/// In the parent: take in a worker's storage reports for the store `remote` (those of another
/// store are not this call's).
pub fn absorb(remote: Option<&Remote>, reports: &[StorageReport]) {
    let Some(remote) = remote else { return };
    for report in reports.iter().filter(|r| r.store == remote.url()) {
        remote.absorb(&report.counts, report.failure.clone());
    }
}
