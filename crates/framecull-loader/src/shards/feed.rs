//! The feeder thread of an epoch read from shards: each shard read once from its first byte to
//! its last, its clip files spooled shortly before the workers read them, within a bound on the
//! spool's bytes.

use std::collections::BTreeSet;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::{SPOOL_AHEAD_BYTES, ShardSet, ShardSource, TAIL_BYTES};
use crate::SkipReason;
use crate::epoch::{Job, Shared, Spooled};
use framecull_manifest::webdataset::{self, Member};
use framecull_media::source::Source;

/// A clip spooled: its EXIF orientation, or why it cannot be read.
type SpoolResult = Result<u16, (SkipReason, String)>;

/// Where a shard's walk is: the members of its list not yet met, and the clip being copied
/// when it failed, if one was.
struct Walk<'s> {
    expected: std::iter::Peekable<std::slice::Iter<'s, (String, u32)>>,
    current: Option<u32>,
}

/// What the feeder needs of the epoch, and where it reports.
pub(crate) struct Feed<'a> {
    pub set: &'a ShardSet,
    /// Each clip's fingerprint in the manifest, checked on the spooled file when asked.
    pub fingerprints: &'a [String],
    pub verify: bool,
    pub is_image: Vec<bool>,
    pub jobs: &'a [Job],
    pub job_start: &'a [usize],
    /// Batches the workers may read ahead of the consumer.
    pub ahead: usize,
    pub shared: &'a Shared,
}

impl Feed<'_> {
    /// Read the epoch's shards, each once from start to end, spooling the clips its jobs
    /// read, until every shard is read or the epoch stops.
    pub fn run(&self) {
        let clips = self.set.shard_of.len();
        let (mut first, mut last) = (vec![usize::MAX; clips], vec![0usize; clips]);
        for (j, job) in self.jobs.iter().enumerate() {
            let c = job.sample.clip as usize;
            first[c] = first[c].min(j);
            last[c] = j;
        }
        let mut order: Vec<(usize, usize)> = self
            .set
            .shards
            .iter()
            .enumerate()
            .filter_map(|(s, shard)| {
                let f = shard.clips.iter().map(|&(_, c)| first[c as usize]).min()?;
                (f != usize::MAX).then_some((f, s))
            })
            .collect();
        order.sort_unstable();
        let mut state = State {
            first,
            last,
            waiting: BTreeSet::new(),
            live: Vec::new(),
            live_bytes: 0,
        };
        state.waiting = (0..clips)
            .filter(|&c| state.first[c] != usize::MAX)
            .map(|c| (state.first[c], c as u32))
            .collect();
        for (_, s) in order {
            if !self.read_shard(&self.set.shards[s], &mut state) {
                return;
            }
        }
    }

    /// Read one shard; `false` when the epoch stopped.
    fn read_shard(&self, shard: &ShardSource, state: &mut State) -> bool {
        let location = shard.source.location();
        let mut walk = Walk {
            expected: shard.clips.iter().peekable(),
            current: None,
        };
        let failure = match self.walk(shard, state, &mut walk) {
            Ok(false) => return false,
            Ok(true) => None,
            Err(e) => {
                // A store that stopped answering ends the load, as for clip files.
                if let Some(f) = shard.source.storage_failure() {
                    let mut slot = self
                        .shared
                        .storage_failure
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    slot.get_or_insert(f);
                }
                Some(format!("{}: {e}", location.display()))
            }
        };
        // Clips the shard did not give: the one it broke in, those after, those not in it.
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        let rest = walk.expected.map(|(name, c)| (Some(name), *c));
        for (name, c) in walk.current.map(|c| (None, c)).into_iter().chain(rest) {
            if state.first[c as usize] == usize::MAX {
                continue;
            }
            state.waiting.remove(&(state.first[c as usize], c));
            queue.spooled[c as usize] = match (&failure, name) {
                (Some(why), _) => Spooled::Failed(SkipReason::Corrupt, why.clone()),
                (None, name) => Spooled::Failed(
                    SkipReason::Missing,
                    format!(
                        "{} holds no {}",
                        location.display(),
                        name.map_or("such clip", String::as_str)
                    ),
                ),
            };
        }
        self.shared.wake.notify_all();
        true
    }

    /// Walk `shard`'s members from its first byte, spooling the clips the epoch reads and
    /// passing over the rest, until its last wanted clip (and its tail, when small) is read:
    /// `Ok(false)` when the epoch stopped.
    fn walk(
        &self,
        shard: &ShardSource,
        state: &mut State,
        walk: &mut Walk<'_>,
    ) -> Result<bool, ShardError> {
        // Members of the shard's list passed, and how many to pass for the epoch's last clip.
        let mut passed = 0;
        let wanted_members = shard
            .clips
            .iter()
            .rposition(|&(_, c)| state.first[c as usize] != usize::MAX)
            .map_or(0, |i| i + 1);
        let mut buf = vec![0u8; 1 << 18];
        let opened = shard.source.open_streaming();
        let mut reader =
            BufReader::with_capacity(1 << 20, opened.reader().map_err(ShardError::Open)?);
        self.shared.shards_read.fetch_add(1, Ordering::Relaxed);
        let mut at = 0u64;
        loop {
            if passed >= wanted_members && shard.bytes.saturating_sub(at) > TAIL_BYTES {
                return Ok(true);
            }
            let mut block = Vec::with_capacity(512);
            let cut = |source| ShardError::Read { at, source };
            let Some(n) = self
                .pass(&mut reader, 512, |b| block.extend_from_slice(b), &mut buf)
                .map_err(cut)?
            else {
                return Ok(false);
            };
            at += n;
            let block: [u8; 512] = block.try_into().map_err(|_| ShardError::Short(at))?;
            let Some(member) = webdataset::read_header(&block)
                .map_err(|source| ShardError::Header { at, source })?
            else {
                // The end blocks, read to the end: the whole shard, once.
                let rest = self.pass(&mut reader, u64::MAX, |_| {}, &mut buf);
                return Ok(rest
                    .map_err(|source| ShardError::Read { at, source })?
                    .is_some());
            };
            let ours = walk.expected.next_if(|(name, _)| member.is(name));
            passed += usize::from(ours.is_some());
            let wanted = ours.filter(|&&(_, c)| state.first[c as usize] != usize::MAX);
            match wanted {
                Some((name, c)) => {
                    walk.current = Some(*c);
                    if !self.wait_for_room(state, member.size) {
                        return Ok(false);
                    }
                    let Some(spooled) = self.spool(&mut reader, &member, name, *c, &mut buf)?
                    else {
                        return Ok(false);
                    };
                    walk.current = None;
                    self.ready(state, *c, member.size, name, spooled);
                }
                None => {
                    let Some(n) = self
                        .pass(&mut reader, member.padded(), |_| {}, &mut buf)
                        .map_err(|source| ShardError::Read { at, source })?
                    else {
                        return Ok(false);
                    };
                    if n != member.padded() {
                        return Err(ShardError::Short(at + n));
                    }
                }
            }
            at += member.padded();
        }
    }

    /// Read up to `len` bytes of `reader` (fewer at its end) in chunks through `buf`, giving
    /// each to `out` and counting it as read from a shard: how many, or `None` once the
    /// epoch is stopped.
    fn pass(
        &self,
        reader: &mut impl Read,
        len: u64,
        mut out: impl FnMut(&[u8]),
        buf: &mut [u8],
    ) -> std::io::Result<Option<u64>> {
        let mut done = 0u64;
        while done < len {
            if self.shared.stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let want = buf
                .len()
                .min(usize::try_from(len - done).unwrap_or(usize::MAX));
            let n = match reader.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            out(&buf[..n]);
            done += n as u64;
            self.shared
                .shard_bytes
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(Some(done))
    }

    /// Copy a member's data (and pass its padding) into the spool: its EXIF orientation when
    /// a picture, or why the clip cannot be read (the spool's disk, a changed fingerprint);
    /// `None` once the epoch is stopped; an error is the shard's own (cut short, unreadable).
    fn spool(
        &self,
        reader: &mut impl Read,
        member: &Member,
        name: &str,
        c: u32,
        buf: &mut [u8],
    ) -> Result<Option<SpoolResult>, ShardError> {
        let path = self.set.spool.path(name);
        let part = self.set.spool.path(&format!("{name}.part"));
        let mut out = std::fs::File::create(&part);
        let mut data_left = member.size;
        let passed = self.pass(
            reader,
            member.padded(),
            |chunk| {
                let keep = usize::try_from(data_left).map_or(chunk.len(), |d| d.min(chunk.len()));
                data_left -= keep as u64;
                if keep > 0
                    && let Ok(file) = &mut out
                    && let Err(e) = file.write_all(&chunk[..keep])
                {
                    out = Err(e);
                }
            },
            buf,
        );
        let passed = match passed {
            Ok(Some(n)) if n == member.padded() => n,
            other => {
                let _ = std::fs::remove_file(&part);
                return match other {
                    Ok(None) => Ok(None),
                    Err(source) => Err(ShardError::Member {
                        name: name.to_string(),
                        source,
                    }),
                    Ok(Some(_)) => Err(ShardError::MemberShort(name.to_string())),
                };
            }
        };
        debug_assert_eq!(passed, member.padded());
        if let Err(e) = out.and_then(|_| std::fs::rename(&part, &path)) {
            let _ = std::fs::remove_file(&part);
            return Ok(Some(Err((
                SkipReason::Corrupt,
                format!("cannot spool {name}: {e}"),
            ))));
        }
        if self.verify {
            let recorded = &self.fingerprints[c as usize];
            let why = match framecull_media::fingerprint::fingerprint(&path, member.size) {
                Ok(now) if now == *recorded => None,
                Ok(now) => Some((
                    SkipReason::Changed,
                    format!(
                        "{name} changed since the manifest was written (fingerprint {now}, manifest {recorded})"
                    ),
                )),
                Err(e) => Some((
                    SkipReason::Corrupt,
                    format!("cannot read {name} spooled: {e}"),
                )),
            };
            if let Some(why) = why {
                let _ = std::fs::remove_file(&path);
                return Ok(Some(Err(why)));
            }
        }
        let orientation = if self.is_image[c as usize] {
            framecull_media::exif_orientation_in(&Source::File(path).open()).unwrap_or(1)
        } else {
            1
        };
        Ok(Some(Ok(orientation)))
    }

    fn ready(&self, state: &mut State, c: u32, bytes: u64, name: &str, spooled: SpoolResult) {
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        state.waiting.remove(&(state.first[c as usize], c));
        queue.spooled[c as usize] = match spooled {
            Ok(orientation) => {
                state.live.push((c, bytes, self.set.spool.path(name)));
                state.live_bytes += bytes;
                Spooled::Ready { orientation }
            }
            Err((reason, why)) => Spooled::Failed(reason, why),
        };
        self.shared.wake.notify_all();
    }

    /// Wait until a clip of `bytes` may be spooled: the windows in flight need a clip not yet
    /// spooled, or the spool has room. Removes the clips whose windows are all in batches.
    /// `false` when the epoch stopped.
    fn wait_for_room(&self, state: &mut State, bytes: u64) -> bool {
        let end = self.job_start.len() - 1;
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.shared.stop.load(Ordering::SeqCst) {
                return false;
            }
            let assembled = self.job_start[queue.consumed.min(end)];
            let last = &state.last;
            let mut freed = 0;
            state.live.retain(|(c, b, path)| {
                let done = last[*c as usize] < assembled;
                if done {
                    let _ = std::fs::remove_file(path);
                    queue.spooled[*c as usize] = Spooled::Gone;
                    freed += b;
                }
                !done
            });
            state.live_bytes -= freed;
            let horizon = self.job_start[(queue.consumed + self.ahead).min(end)];
            let needed = state.waiting.first().is_some_and(|&(f, _)| f < horizon);
            if needed || state.live.is_empty() || state.live_bytes + bytes <= SPOOL_AHEAD_BYTES {
                return true;
            }
            queue = self
                .shared
                .wake
                .wait(queue)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// The feeder's own account of the epoch's clips.
struct State {
    /// Each clip's first and last job (`usize::MAX` first: not in this epoch).
    first: Vec<usize>,
    last: Vec<usize>,
    /// Clips not spooled yet, by first job.
    waiting: BTreeSet<(usize, u32)>,
    /// Clips in the spool: each one's bytes and file.
    live: Vec<(u32, u64, PathBuf)>,
    live_bytes: u64,
}

/// Why a shard could not be read through: its clips from where it broke are skipped.
#[derive(Debug, thiserror::Error)]
enum ShardError {
    #[error("{0}")]
    Open(std::io::Error),
    #[error("cut short at byte {at}: {source}")]
    Read { at: u64, source: std::io::Error },
    #[error("cut short at byte {0}")]
    Short(u64),
    #[error("at byte {at}: {source}")]
    Header {
        at: u64,
        source: webdataset::HeaderError,
    },
    #[error("in {name}: {source}")]
    Member {
        name: String,
        source: std::io::Error,
    },
    #[error("cut short in {0}")]
    MemberShort(String),
}
