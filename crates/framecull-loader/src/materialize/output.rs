//! Where a materialization's clip files go: a local folder, or a bucket prefix they are
//! uploaded to from a local staging folder, with the ledger's copy there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use framecull_manifest::ManifestError;
use framecull_storage::{Remote, Root, StorageError};

use super::{Entry, LEDGER, file_name, parse_ledger};

/// Where clip files go: a local folder, or a bucket prefix they are uploaded to from a local
/// staging folder.
pub(super) enum Output {
    Folder(PathBuf),
    Bucket {
        remote: Arc<Remote>,
        staging: PathBuf,
        /// When the ledger's copy in the bucket was last written.
        published: std::sync::Mutex<Instant>,
    },
}

/// How often a bucket's copy of the ledger is written again while clips are written.
const LEDGER_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl Output {
    /// `dir` as a folder, or as a bucket prefix (a URL: opened with the settings of the
    /// dataset's store, where the dataset is in one, else from the environment).
    pub(super) fn open(root: &Root, dir: &Path) -> Result<Output, ManifestError> {
        if !Root::is_url(dir) {
            std::fs::create_dir_all(dir).map_err(|e| ManifestError::io(dir, e))?;
            let canonical = std::fs::canonicalize(dir).map_err(|e| ManifestError::io(dir, e))?;
            return Ok(Output::Folder(canonical));
        }
        let url = dir.to_string_lossy();
        let url = url.trim_end_matches('/');
        let settings: Vec<(&str, &str)> = root
            .as_remote()
            .map(|r| {
                r.settings()
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        let remote = Remote::open_with(url, &settings).map_err(storage)?;
        // One staging folder a prefix, as one folder a local output: its ledger survives a
        // kill for this machine's rerun.
        let key = xxhash_rust::xxh3::xxh3_64(url.as_bytes());
        let staging = std::env::temp_dir().join(format!("framecull-clips-{key:016x}"));
        Ok(Output::Bucket {
            remote: Arc::new(remote),
            staging,
            published: std::sync::Mutex::new(Instant::now()),
        })
    }

    /// Where clip files are written: the folder, or the staging folder.
    pub(super) fn work_dir(&self) -> &Path {
        match self {
            Output::Folder(dir) => dir,
            Output::Bucket { staging, .. } => staging,
        }
    }

    /// The folder or the URL, as the version records it.
    pub(super) fn recorded(&self) -> String {
        match self {
            Output::Folder(dir) => framecull_model::text_of_path(dir).into_owned(),
            Output::Bucket { remote, .. } => remote.url().to_string(),
        }
    }

    /// The objects under a bucket prefix now, by name: their sizes (one listing); `None` for
    /// a folder, whose files are looked at one by one ([`Output::size_of`]).
    pub(super) fn listing(&self) -> Result<Option<HashMap<String, u64>>, ManifestError> {
        match self {
            Output::Folder(_) => Ok(None),
            Output::Bucket { remote, .. } => Ok(Some(
                remote
                    .list()
                    .map_err(storage)?
                    .into_iter()
                    .map(|l| (l.rel_path, l.size_bytes))
                    .collect(),
            )),
        }
    }

    /// The size of clip file `name` there: a folder's file, or the object `listing` has.
    pub(super) fn size_of(
        &self,
        name: &str,
        listing: Option<&HashMap<String, u64>>,
    ) -> Option<u64> {
        match (self, listing) {
            (_, Some(listed)) => listed.get(name).copied(),
            (Output::Folder(dir), None) => std::fs::metadata(dir.join(name)).ok().map(|m| m.len()),
            (Output::Bucket { .. }, None) => None,
        }
    }

    /// The ledger a bucket prefix holds (none for a folder, whose ledger is its own file).
    pub(super) fn remote_ledger(&self) -> Result<HashMap<String, Entry>, ManifestError> {
        match self {
            Output::Folder(_) => Ok(HashMap::new()),
            Output::Bucket { remote, .. } => Ok(remote
                .get_all(LEDGER)
                .map_err(storage)?
                .map(|bytes| parse_ledger(&bytes))
                .unwrap_or_default()),
        }
    }

    /// Put the clip file `file`, complete in the work folder, where it goes: a bucket's is
    /// uploaded and its local copy removed, and its fingerprint is then the object's (its
    /// size and ETag, as a scan or the loader finds it), where the store gives one.
    pub(super) fn deliver(&self, file: &Path) -> Result<Option<String>, StorageError> {
        let Output::Bucket { remote, .. } = self else {
            return Ok(None);
        };
        let name = file_name(file);
        // The object as the upload's answer gives it (no HEAD after it).
        let uploaded = remote.put_file(&name, file);
        let _ = std::fs::remove_file(file);
        let object = uploaded?;
        Ok(framecull_media::fingerprint::of_listing(
            object.size_bytes,
            object.e_tag.as_deref(),
            object.version.as_deref(),
        ))
    }

    /// Whether a bucket's copy of the ledger is due again.
    pub(super) fn ledger_due(&self) -> bool {
        match self {
            Output::Folder(_) => false,
            Output::Bucket { published, .. } => published
                .lock()
                .is_ok_and(|at| at.elapsed() >= LEDGER_EVERY),
        }
    }

    /// Write a bucket's copy of the ledger: every entry known, with those another machine
    /// wrote there since (a failure only warns: the staging folder's ledger has them, and a
    /// rerun elsewhere writes those clips again).
    pub(super) fn publish_ledger(&self, ledger: &HashMap<String, Entry>) {
        let Output::Bucket {
            remote, published, ..
        } = self
        else {
            return;
        };
        // Another machine's entries, written there since, kept beside this run's.
        let theirs = match remote.get_all(LEDGER) {
            Ok(Some(bytes)) => parse_ledger(&bytes),
            _ => HashMap::new(),
        };
        let mut entries: Vec<&Entry> = ledger
            .values()
            .chain(theirs.values().filter(|e| !ledger.contains_key(&e.clip_id)))
            .collect();
        entries.sort_by(|a, b| a.clip_id.cmp(&b.clip_id));
        let mut text = Vec::new();
        for entry in entries {
            if serde_json::to_writer(&mut text, entry).is_ok() {
                text.push(b'\n');
            }
        }
        if let Err(e) = remote.put(LEDGER, text) {
            tracing::warn!("the clip files' ledger was not copied to the bucket: {e}");
        }
        if let Ok(mut at) = published.lock() {
            *at = Instant::now();
        }
    }
}

/// A bucket's error as the export's.
fn storage(e: framecull_storage::StorageError) -> ManifestError {
    ManifestError::Invalid(e.to_string())
}
