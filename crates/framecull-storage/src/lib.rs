//! Where a dataset's bytes live: a local folder or an object-storage URL (`s3://bucket/prefix`,
//! `gs://bucket/prefix`, `az://container/prefix`, `https://host/path`).
//!
//! The scan, the media layer and the loader read remote datasets through this module alone:
//! listing ([`Remote::list`]), ranged reads through a small block cache ([`CachedObject`],
//! whose readers are `Read + Seek`, so FFmpeg reads objects through a custom AVIOContext), and
//! per-kind request counters ([`RequestCounts`]). Credentials and endpoints come from the
//! standard environment variables (docs/STORAGE.md); none is ever stored or logged.

mod aws_profile;
mod cache;
mod remote;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use cache::{BLOCK_BYTES, CachedObject, ObjectReader};
pub use remote::{Listed, Object, PART_BYTES, PendingRange, Remote, RequestCounts, StorageError};

/// A dataset root: a local folder or an object-storage prefix.
#[derive(Debug, Clone)]
pub enum Root {
    Local(PathBuf),
    Remote(Arc<Remote>),
}

impl Root {
    /// Whether a dataset argument is a URL (`scheme://...`) rather than a folder.
    pub fn is_url(text: &Path) -> bool {
        text.to_str().is_some_and(|t| t.contains("://"))
    }

    /// Open the object store a URL names (nothing is requested yet).
    pub fn remote(url: &str) -> Result<Root, StorageError> {
        Ok(Root::Remote(Arc::new(Remote::open(url)?)))
    }

    /// The root a catalog or a manifest records (or a `--root` names): a URL opens its object
    /// store, anything else is a folder.
    pub fn of_recorded(recorded: &Path) -> Result<Root, StorageError> {
        if Root::is_url(recorded) {
            Root::remote(&recorded.to_string_lossy())
        } else {
            Ok(Root::Local(recorded.to_path_buf()))
        }
    }

    /// The root as the catalog records it: the folder, or the URL (no credential in it).
    pub fn recorded(&self) -> PathBuf {
        match self {
            Root::Local(path) => path.clone(),
            Root::Remote(remote) => PathBuf::from(remote.url()),
        }
    }

    /// The local folder, if the dataset is one.
    pub fn local(&self) -> Option<&Path> {
        match self {
            Root::Local(path) => Some(path),
            Root::Remote(_) => None,
        }
    }

    /// The object store, if the dataset is in one.
    pub fn as_remote(&self) -> Option<&Arc<Remote>> {
        match self {
            Root::Local(_) => None,
            Root::Remote(remote) => Some(remote),
        }
    }
}

impl From<PathBuf> for Root {
    fn from(path: PathBuf) -> Self {
        Root::Local(path)
    }
}
