//! What the probes and decoders read: a local file, or an object in a store read through
//! ranged requests (FFmpeg reads it through a custom AVIOContext over [`ObjectReader`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use ffmpeg_next as ff;

use framecull_storage::{CachedObject, Object, ObjectReader, Root, StorageError};

/// A file to read, named but not opened.
#[derive(Debug, Clone)]
pub enum Source {
    File(PathBuf),
    Object(Object),
}

impl Source {
    /// The file at `rel_path` of a dataset root (`size_bytes` as the scan recorded it).
    pub fn in_root(root: &Root, rel_path: &str, size_bytes: u64) -> Source {
        match root {
            Root::Local(dir) => Source::File(framecull_model::local_path(dir, rel_path)),
            Root::Remote(remote) => Source::Object(Object {
                remote: remote.clone(),
                rel_path: rel_path.to_string(),
                size_bytes,
            }),
        }
    }

    /// The name the format is guessed from (its extension).
    pub fn name(&self) -> &Path {
        match self {
            Source::File(path) => path,
            Source::Object(object) => Path::new(&object.rel_path),
        }
    }

    /// The file's path, or the object's URL: what messages name.
    pub fn location(&self) -> PathBuf {
        match self {
            Source::File(path) => path.clone(),
            Source::Object(object) => PathBuf::from(object.url()),
        }
    }

    /// Open for one use (a probe, an analysis): every read of the returned value shares one
    /// cache of fetched ranges, so a header read by the sniffer is not fetched again by
    /// FFmpeg.
    pub fn open(&self) -> Opened {
        match self {
            Source::File(path) => Opened::File(path.clone()),
            Source::Object(object) => Opened::Object(CachedObject::new(object.clone())),
        }
    }

    /// As [`Source::open`], for a decoder that reads on (a deep analysis, the loader): an
    /// object is read with read-ahead, so the next range is on its way while the bytes before
    /// it decode.
    pub fn open_streaming(&self) -> Opened {
        match self {
            Source::File(path) => Opened::File(path.clone()),
            Source::Object(object) => Opened::Object(CachedObject::streaming(object.clone())),
        }
    }

    /// The object store it is in, if it is an object.
    pub fn store(&self) -> Option<&framecull_storage::Remote> {
        match self {
            Source::File(_) => None,
            Source::Object(object) => Some(&object.remote),
        }
    }

    /// The error that stops a whole scan (network, permission), if reading this source met
    /// one.
    pub fn storage_failure(&self) -> Option<StorageError> {
        match self {
            Source::File(_) => None,
            Source::Object(object) => object.remote.failure(),
        }
    }
}

impl From<&Path> for Source {
    fn from(path: &Path) -> Self {
        Source::File(path.to_path_buf())
    }
}

/// A [`Source`] opened for reading.
#[derive(Debug)]
pub enum Opened {
    File(PathBuf),
    Object(CachedObject),
}

impl Opened {
    /// The object store it is in, if it is an object.
    pub fn store(&self) -> Option<&framecull_storage::Remote> {
        match self {
            Opened::File(_) => None,
            Opened::Object(o) => Some(&o.object().remote),
        }
    }

    pub fn name(&self) -> &Path {
        match self {
            Opened::File(path) => path,
            Opened::Object(o) => Path::new(&o.object().rel_path),
        }
    }

    pub fn size_bytes(&self) -> io::Result<u64> {
        match self {
            Opened::File(path) => Ok(std::fs::metadata(path)?.len()),
            Opened::Object(o) => Ok(o.size_bytes()),
        }
    }

    /// A reader from the first byte.
    pub fn reader(&self) -> io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Opened::File(path) => Box::new(File::open(path)?),
            Opened::Object(o) => Box::new(o.reader()),
        })
    }

    /// The first `len` bytes (fewer when the file is shorter).
    pub fn read_prefix(&self, len: u64) -> io::Result<Vec<u8>> {
        let mut head = Vec::new();
        self.reader()?.take(len).read_to_end(&mut head)?;
        Ok(head)
    }

    /// All bytes (an object in one request).
    pub fn read_all(&self) -> io::Result<Vec<u8>> {
        match self {
            Opened::File(path) => std::fs::read(path),
            Opened::Object(o) => o.read_all().map_err(io::Error::other),
        }
    }

    /// Open with libavformat: a file by its path, an object through a custom AVIOContext
    /// (ffmpeg-next's `StreamIo`: read, seek and `AVSEEK_SIZE` over [`ObjectReader`], the
    /// context and its buffer freed with the input). `interrupt` returning `true` aborts.
    pub fn input(
        &self,
        interrupt: impl FnMut() -> bool + Send + 'static,
    ) -> Result<ff::format::context::Input, ff::Error> {
        self.input_with(None, interrupt)
    }

    /// [`Opened::input`] with options for the format context (e.g. `analyzeduration`).
    pub fn input_with(
        &self,
        options: Option<ff::Dictionary<'static>>,
        interrupt: impl FnMut() -> bool + Send + 'static,
    ) -> Result<ff::format::context::Input, ff::Error> {
        match self {
            Opened::File(path) => by_utf8_path(path, |p| match options {
                Some(options) => {
                    ff::format::input_with_interrupt_and_dictionary(p, interrupt, options)
                }
                None => ff::format::input_with_interrupt(p, interrupt),
            }),
            Opened::Object(o) => {
                let reader: ObjectReader = o.reader();
                let io = ff::format::context::StreamIo::from_read_seek(reader)?;
                ff::format::input_from_stream_with_interrupt(
                    io,
                    Some(&o.object().rel_path),
                    options,
                    interrupt,
                )
            }
        }
    }
}

/// Open `path` with `open`, which takes only UTF-8 paths (ffmpeg-next's `input` unwraps
/// `to_str`): a path that is not UTF-8 is opened through a symbolic link with a UTF-8 name
/// and the same extension (for FFmpeg's probe), removed once the file is open.
pub(crate) fn by_utf8_path<T>(
    path: &Path,
    open: impl FnOnce(&Path) -> Result<T, ff::Error>,
) -> Result<T, ff::Error> {
    if path.to_str().is_some() {
        return open(path);
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let link = std::env::temp_dir().join(format!(".framecull-{}-{n}{ext}", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(path, &link).map_err(|e| ff::Error::Other {
        errno: e.raw_os_error().unwrap_or(libc::EIO),
    })?;
    let opened = open(&link);
    let _ = std::fs::remove_file(&link);
    opened
}
