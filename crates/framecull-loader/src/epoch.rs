//! What one epoch's decode workers, its consumer and its shard feeder share: the windows to
//! read ([`Job`]), which are taken and how far the consumer is ([`Queue`]), where each clip
//! read from a shard stands ([`Spooled`]), and the counters and flags they all see
//! ([`Shared`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};

use super::SkipReason;
use super::plan::Sample;

/// One window of the epoch, in plan order.
pub(crate) struct Job {
    pub sample: Sample,
    /// Frame slots of the window's batch.
    pub t: u32,
}

/// The state one epoch's threads share, behind its locks and atomics.
pub(crate) struct Shared {
    pub queue: Mutex<Queue>,
    /// Keyframe positions of the clips a worker has opened (stride sampling), by clip: a
    /// worker that starts a window with a seek picks one close after a keyframe.
    pub keyframes: Mutex<HashMap<u32, Arc<Vec<f64>>>>,
    /// Window buffers the consumer has copied out, for workers to fill again (no fresh
    /// allocation and page faults per window).
    pub pool: Mutex<Vec<Vec<u8>>>,
    pub wake: Condvar,
    pub stop: AtomicBool,
    /// Shards opened and their bytes read (a version read from its shards).
    pub shards_read: AtomicU64,
    pub shard_bytes: AtomicU64,
    /// The store a shard is read from stopped answering: the load ends with it.
    pub storage_failure: Mutex<Option<framecull_storage::StorageError>>,
}

/// Which windows are taken, where each worker's decoder is, and how far the consumer is.
pub(crate) struct Queue {
    pub taken: Vec<bool>,
    pub untaken: usize,
    /// The window (clip, start) each worker took last: its decoder goes on from there.
    pub at: Vec<Option<(u32, f64)>>,
    /// Batches the consumer has taken.
    pub consumed: usize,
    /// Reading shards: where each clip's file is (empty otherwise).
    pub spooled: Vec<Spooled>,
}

/// What the feeder has done with a clip of the epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Spooled {
    Waiting,
    /// In the spool, with a picture's EXIF orientation.
    Ready {
        orientation: u16,
    },
    Failed(SkipReason, String),
    /// Removed from the spool: its windows are in batches.
    Gone,
}
