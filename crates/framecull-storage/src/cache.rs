//! Reading an object as a `Read + Seek` stream through ranged GETs and a small cache: blocks
//! of [`BLOCK_BYTES`], the read-ahead window doubling while reads go on sequentially (up to
//! [`MAX_WINDOW_BLOCKS`] per request) and falling back to one block after a seek, and fetched
//! ranges kept up to [`CACHE_BYTES`] (least recently used dropped): an object that size or
//! smaller is fetched once however often a decoder goes back over it. A header probe costs one
//! request; a demuxer that reads the index at the end of a file costs one more.
//!
//! A decoder, which reads on for as long as it decodes, opens objects with read-ahead
//! ([`CachedObject::streaming`]): once reads go on sequentially, the next [`AHEAD_DEPTH`]
//! windows are requested in the background as soon as the current one arrives, so their round
//! trips overlap each other and the decoding of the bytes before them. Probes do without: they
//! stop early, and a read-ahead would fetch bytes nobody reads.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex, MutexGuard};

use super::remote::{Object, PendingRange, StorageError};

/// The unit of a ranged read: the first request of a probe fetches this much.
pub const BLOCK_BYTES: u64 = 256 * 1024;
/// The largest read-ahead, in blocks (8 MiB).
const MAX_WINDOW_BLOCKS: u64 = 32;
/// The bytes of fetched ranges kept per open object (four of the largest windows).
const CACHE_BYTES: usize = 32 * 1024 * 1024;
/// Read-ahead requests in flight per streaming object.
const AHEAD_DEPTH: usize = 2;
/// The least a [`CachedObject::bytes_at`] request fetches: a packet's bytes and, mostly, the
/// packet after it.
const AT_LEAST_BYTES: u64 = 64 * 1024;

#[derive(Debug)]
struct Extent {
    start: u64,
    bytes: Vec<u8>,
    last_used: u64,
}

impl Extent {
    fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Its bytes from `pos` (which it holds) on.
    fn from(&self, pos: u64) -> &[u8] {
        &self.bytes[(pos - self.start) as usize..]
    }
}

impl Extents {
    /// The range kept that holds `pos`, marked used now (the clock moves on at every lookup).
    fn kept_at(&mut self, pos: u64) -> Option<usize> {
        self.clock += 1;
        let i = self
            .kept
            .iter()
            .position(|e| e.start <= pos && pos < e.end())?;
        self.kept[i].last_used = self.clock;
        Some(i)
    }
}

#[derive(Debug, Default)]
struct Extents {
    kept: Vec<Extent>,
    clock: u64,
    /// Blocks the next sequential request fetches.
    window_blocks: u64,
    /// Where the last request ended: a miss there is a sequential read.
    last_end: Option<u64>,
    /// The next windows, in order, requested in the background (objects opened with
    /// read-ahead).
    ahead: std::collections::VecDeque<Ahead>,
    /// Reads of bytes not fetched yet give zeros, with no request ([`CachedObject::placeholders`]).
    placeholders: bool,
}

/// A read-ahead in flight: bytes from `start`, `blocks` blocks.
#[derive(Debug)]
struct Ahead {
    start: u64,
    end: u64,
    blocks: u64,
    pending: PendingRange,
}

/// An object opened for reading: readers made from it share one cache. Drop it when done
/// with the object (the cache holds up to [`CACHE_BYTES`], plus the read-ahead in flight).
#[derive(Debug, Clone)]
pub struct CachedObject {
    object: Object,
    extents: Arc<Mutex<Extents>>,
    read_ahead: bool,
}

impl CachedObject {
    pub fn new(object: Object) -> Self {
        CachedObject {
            object,
            extents: Arc::default(),
            read_ahead: false,
        }
    }

    /// As [`CachedObject::new`], with read-ahead: for a decoder that reads the object on.
    pub fn streaming(object: Object) -> Self {
        CachedObject {
            read_ahead: true,
            ..CachedObject::new(object)
        }
    }

    /// A [`CachedObject::new`] already holding ranges another reader of the object fetched
    /// ([`CachedObject::fetched`]): a worker process does not request them again.
    pub fn with_fetched(object: Object, fetched: Vec<(u64, Vec<u8>)>) -> Self {
        let cached = CachedObject::new(object);
        {
            let mut extents = cached.lock();
            for (start, bytes) in fetched {
                if !bytes.is_empty() {
                    extents.kept.push(Extent {
                        start,
                        bytes,
                        last_used: 0,
                    });
                }
            }
        }
        cached
    }

    /// The ranges fetched so far, up to `max_bytes` of them (the most recently used first).
    pub fn fetched(&self, max_bytes: usize) -> Vec<(u64, Vec<u8>)> {
        let extents = self.lock();
        let mut kept: Vec<&Extent> = extents.kept.iter().collect();
        kept.sort_by_key(|e| std::cmp::Reverse(e.last_used));
        let mut total = 0;
        kept.into_iter()
            .take_while(|e| {
                total += e.bytes.len();
                total <= max_bytes
            })
            .map(|e| (e.start, e.bytes.clone()))
            .collect()
    }

    pub fn object(&self) -> &Object {
        &self.object
    }

    pub fn size_bytes(&self) -> u64 {
        self.object.size_bytes
    }

    /// A reader at offset 0.
    pub fn reader(&self) -> ObjectReader {
        ObjectReader {
            cached: self.clone(),
            pos: 0,
        }
    }

    /// The whole object, in one request unless a cached range holds it.
    pub fn read_all(&self) -> Result<Vec<u8>, StorageError> {
        let size = self.size_bytes();
        if size == 0 {
            return Ok(Vec::new());
        }
        let mut extents = self.lock();
        if let Some(e) = extents
            .kept
            .iter()
            .find(|e| e.start == 0 && e.end() >= size)
        {
            return Ok(e.bytes[..size as usize].to_vec());
        }
        let bytes = self.fetch(&mut extents, 0..size)?;
        Ok(bytes.to_vec())
    }

    /// From now on, a read of bytes not fetched yet gives zeros and requests nothing (nor does
    /// any read-ahead): for a demuxer that has read an index giving every packet's place, so
    /// that reading on gives each packet's time, size and flags, while only the bytes of the
    /// packets decoded are fetched ([`CachedObject::bytes_at`]).
    pub fn placeholders(&self) {
        let mut extents = self.lock();
        extents.placeholders = true;
        extents.ahead.clear();
    }

    /// The `len` bytes at `pos` (fewer at the object's end), from the cache or fetched (at
    /// least [`AT_LEAST_BYTES`] from `pos`), whether or not [`CachedObject::placeholders`] is
    /// on.
    pub fn bytes_at(&self, pos: u64, len: usize) -> Result<Vec<u8>, StorageError> {
        let end = (pos + len as u64).min(self.size_bytes());
        let mut out = Vec::with_capacity(len);
        let mut at = pos;
        while at < end {
            let mut extents = self.lock();
            let bytes = match extents.kept_at(at) {
                Some(i) => extents.kept[i].from(at),
                None => {
                    let fetch_end = end.max(at + AT_LEAST_BYTES).min(self.size_bytes());
                    self.fetch(&mut extents, at..fetch_end)?
                }
            };
            let n = bytes.len().min((end - at) as usize);
            out.extend_from_slice(&bytes[..n]);
            at += n as u64;
        }
        Ok(out)
    }

    fn lock(&self) -> MutexGuard<'_, Extents> {
        // A panic while holding the lock leaves extents that are still whole: keep them.
        self.extents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Copy bytes at `pos` into `buf` from the cache, fetching a range first on a miss.
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<usize, StorageError> {
        let size = self.size_bytes();
        if pos >= size || buf.is_empty() {
            return Ok(0);
        }
        let mut extents = self.lock();
        let bytes: &[u8] = match extents.kept_at(pos) {
            Some(i) => extents.kept[i].from(pos),
            None if extents.placeholders => {
                // Zeros up to the next range fetched.
                let next = extents
                    .kept
                    .iter()
                    .map(|e| e.start)
                    .filter(|&s| s > pos)
                    .min()
                    .unwrap_or(size);
                let n = buf.len().min((next.min(size) - pos) as usize);
                buf[..n].fill(0);
                return Ok(n);
            }
            None => {
                // A read-ahead holds `pos` (the reader went on: those before it are of no
                // use), or none does (a seek: none is).
                let ahead = match extents
                    .ahead
                    .iter()
                    .position(|a| a.start <= pos && pos < a.end)
                {
                    Some(i) => {
                        extents.ahead.drain(..i);
                        extents.ahead.pop_front()
                    }
                    None => {
                        extents.ahead.clear();
                        None
                    }
                };
                let (start, fetched) = match ahead {
                    Some(ahead) => {
                        extents.window_blocks = ahead.blocks;
                        let bytes = ahead.pending.wait()?;
                        (ahead.start, self.keep(&mut extents, ahead.start, bytes)?)
                    }
                    None => {
                        let start = pos - pos % BLOCK_BYTES;
                        let window = if extents.last_end == Some(start) {
                            (extents.window_blocks * 2).clamp(1, MAX_WINDOW_BLOCKS)
                        } else {
                            1
                        };
                        extents.window_blocks = window;
                        let end = (start + window * BLOCK_BYTES).min(size);
                        (start, self.fetch(&mut extents, start..end)?)
                    }
                };
                let (offset, fetched_end) = (pos - start, start + fetched.len() as u64);
                if self.read_ahead && extents.window_blocks > 1 {
                    self.read_on(&mut extents, fetched_end)?;
                }
                // The extent just kept is the last one.
                let e = extents
                    .kept
                    .last()
                    .map(|e| e.bytes.as_slice())
                    .unwrap_or_default();
                &e[(offset as usize).min(e.len())..]
            }
        };
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }

    /// Keep [`AHEAD_DEPTH`] windows requested after `end` (where the bytes just fetched end),
    /// each twice the one before (up to [`MAX_WINDOW_BLOCKS`]), none past the object's end.
    fn read_on(&self, extents: &mut Extents, end: u64) -> Result<(), StorageError> {
        let size = self.size_bytes();
        let (mut start, mut blocks) = match extents.ahead.back() {
            Some(last) => (last.end, last.blocks),
            None => (end, extents.window_blocks),
        };
        while extents.ahead.len() < AHEAD_DEPTH && start < size {
            blocks = (blocks * 2).min(MAX_WINDOW_BLOCKS);
            let end = (start + blocks * BLOCK_BYTES).min(size);
            let pending = self
                .object
                .remote
                .spawn_range(&self.object.rel_path, start..end)?;
            extents.ahead.push_back(Ahead {
                start,
                end,
                blocks,
                pending,
            });
            start = end;
        }
        Ok(())
    }

    /// GET `range`, keep it (dropping the least recently used range) and return it.
    fn fetch<'a>(
        &self,
        extents: &'a mut Extents,
        range: std::ops::Range<u64>,
    ) -> Result<&'a [u8], StorageError> {
        let bytes = self
            .object
            .remote
            .get_range(&self.object.rel_path, range.clone())?;
        self.keep(extents, range.start, bytes)
    }

    /// Keep `bytes` fetched from `start` (dropping the least recently used range) and return
    /// them.
    fn keep<'a>(
        &self,
        extents: &'a mut Extents,
        start: u64,
        bytes: Vec<u8>,
    ) -> Result<&'a [u8], StorageError> {
        if bytes.is_empty() {
            return Err(StorageError::Other {
                url: self.object.url(),
                cause: format!(
                    "the object is shorter than its listing said ({} bytes)",
                    self.size_bytes()
                ),
            });
        }
        extents.last_end = Some(start + bytes.len() as u64);
        let mut held: usize = extents.kept.iter().map(|e| e.bytes.len()).sum();
        while held + bytes.len() > CACHE_BYTES
            && let Some(oldest) = (0..extents.kept.len()).min_by_key(|&i| extents.kept[i].last_used)
        {
            held -= extents.kept.swap_remove(oldest).bytes.len();
        }
        extents.kept.push(Extent {
            start,
            bytes,
            last_used: extents.clock,
        });
        Ok(extents
            .kept
            .last()
            .map(|e| e.bytes.as_slice())
            .unwrap_or_default())
    }
}

/// A `Read + Seek` view of a [`CachedObject`] (what FFmpeg's custom AVIOContext reads).
#[derive(Debug)]
pub struct ObjectReader {
    cached: CachedObject,
    pos: u64,
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.cached.read_at(self.pos, buf).map_err(io_error)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for ObjectReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let size = self.cached.size_bytes();
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the object",
            )
        })?;
        self.pos = target;
        Ok(target)
    }
}

/// A storage error as an I/O error of a matching kind (the caller's checks of transient
/// causes see it as such).
fn io_error(e: StorageError) -> io::Error {
    let kind = match &e {
        StorageError::Unreachable { .. } => io::ErrorKind::ConnectionRefused,
        StorageError::Denied { .. } => io::ErrorKind::PermissionDenied,
        StorageError::NotFound { .. } => io::ErrorKind::NotFound,
        StorageError::Url { .. } | StorageError::Other { .. } => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}
