//! Reading a version's WebDataset shards (`LoaderConfig::shards`, written by `export --format
//! webdataset`) in place of its clip files. Each shard of the epoch is read once, from its
//! first byte to its last (a folder's file, or a bucket's object through read-ahead ranged
//! reads), by one feeder thread, in the order the epoch's plan needs them; each clip file it
//! holds is copied into a spool folder shortly before the workers read it, decoded from there
//! as a clip file is, and removed once its windows are in batches, so the spool holds about
//! [`SPOOL_AHEAD_BYTES`] more than the windows in flight need.
//!
//! The plan follows the shards, as WebDataset's readers do: shuffling shuffles the order of
//! the shards and, within a shard, the windows of runs of [`SHUFFLE_CLIPS`] clips; each rank
//! takes a run of that order, as many windows as the others give or take one. Without
//! shuffling the windows come in each split's row order (splits by name), as they do from a
//! split's clip files, so both give the same batches.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::epoch::{Job, Shared, Spooled};
use super::plan::{Batching, Rng, Sample};
use super::source::{Check, Checked};
use super::{LoaderConfig, LoaderError, SkipReason};
use framecull_manifest::webdataset::{self, Member, ShardsIndex};
use framecull_manifest::{ManifestRow, VersionMeta};
use framecull_media::source::Source;
use framecull_model::MediaKind;
use framecull_storage::Root;

/// Clips whose windows shuffle among each other within a shard.
pub(crate) const SHUFFLE_CLIPS: usize = 64;

/// Spooled clip files kept beyond those the windows in flight need.
const SPOOL_AHEAD_BYTES: u64 = 256 << 20;

/// Past a shard's last clip of the epoch, the rest is read (the whole shard, once) when it
/// is this small (the last sample's metadata, the end blocks), left otherwise (the clips of
/// another rank).
const TAIL_BYTES: u64 = 1 << 20;

/// A version's shards as a loader reads them.
#[derive(Debug)]
pub(crate) struct ShardSet {
    pub shards: Vec<ShardSource>,
    /// Each clip's shard (an index into `shards`), by clip.
    pub shard_of: Vec<u32>,
    pub spool: Spool,
}

#[derive(Debug)]
pub(crate) struct ShardSource {
    pub source: Source,
    /// Its size, as the index gives it and the check at open found it.
    pub bytes: u64,
    /// The clips it holds, in its order: each one's media member and clip index.
    pub clips: Vec<(String, u32)>,
}

/// The folder clip files are spooled into, removed with the loader.
#[derive(Debug)]
pub(crate) struct Spool(PathBuf);

/// The spool folders' names: `framecull-shards-PID-N`.
const SPOOL_PREFIX: &str = "framecull-shards-";

impl Spool {
    /// A new folder of this process's own (mode 0700) in the temporary folder, after
    /// removing those of processes that are gone.
    fn new() -> std::io::Result<Spool> {
        use std::os::unix::fs::DirBuilderExt;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let temp = std::env::temp_dir();
        remove_stale(&temp);
        loop {
            let dir = temp.join(format!(
                "{SPOOL_PREFIX}{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(Spool(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub fn path(&self, member: &str) -> PathBuf {
        self.0.join(member)
    }

    /// Remove every file spooled (an epoch's end).
    pub fn clear(&self) {
        if let Ok(entries) = std::fs::read_dir(&self.0) {
            for entry in entries.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Remove the spool folders in `temp` of processes that are gone (killed before they could
/// remove their own) and untouched for an hour (a process of another PID namespace sharing
/// the folder writes to its own as it reads).
fn remove_stale(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SPOOL_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let idle = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|idle| idle > std::time::Duration::from_secs(3600));
        if idle && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// One row as the shards hold it: its index in the manifest, the row as its clip file holds
/// it, where that file will be read (or why it will not), and its shard and member.
pub(crate) struct Entry {
    pub row: usize,
    pub clip_row: ManifestRow,
    pub check: Check,
    pub member: Option<(u32, String)>,
}

/// The rows of `meta`'s version that its shards hold (the index beside the manifest at
/// `manifest_path`; the shards in `root`, a folder or a bucket prefix, else in the folder the
/// index names), in the shards' order, and the rows of the wanted split they do not hold.
pub(crate) fn open(
    manifest_path: &Path,
    meta: &VersionMeta,
    rows: &[ManifestRow],
    root: Option<&Path>,
    config: &LoaderConfig,
) -> Result<(Vec<Entry>, ShardSet), LoaderError> {
    let Some(file) = meta.files.get("webdataset") else {
        return Err(LoaderError::Config(format!(
            "version {} of manifest {} has no WebDataset shards: export it with --format webdataset",
            meta.version, meta.name
        )));
    };
    let dir = if manifest_path.is_dir() {
        manifest_path
    } else {
        manifest_path.parent().unwrap_or(Path::new("."))
    };
    let index_path = dir.join(file);
    let unreadable = |reason: String| LoaderError::File {
        path: index_path.clone(),
        reason,
    };
    let text = std::fs::read_to_string(&index_path).map_err(|e| unreadable(e.to_string()))?;
    let index: ShardsIndex = serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
    let root = Root::of_recorded(&root.map_or_else(|| dir.join(&index.dir), Path::to_path_buf))?;
    let split = config
        .split
        .as_deref()
        .map(framecull_manifest::layouts::folder_name);
    let wanted = |row: &ManifestRow| {
        matches!(row.kind, MediaKind::Video | MediaKind::Image)
            && split.as_ref().is_none_or(|s| {
                framecull_manifest::layouts::folder_name(row.split.as_deref().unwrap_or("all"))
                    == *s
            })
    };
    let by_key: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| wanted(r))
        .map(|(i, r)| (r.clip_id.as_str(), i))
        .collect();
    let spool = Spool::new().map_err(|e| LoaderError::Config(format!("no spool folder: {e}")))?;
    let mut entries = Vec::new();
    let mut sources = Vec::new();
    let mut held = vec![false; rows.len()];
    for (name, shards) in &index.splits {
        if split.as_ref().is_some_and(|s| s != name) {
            continue;
        }
        for shard in &shards.shards {
            if shard.members.len() as u64 != shard.samples {
                return Err(unreadable(format!(
                    "its shard {} names {} of its {} samples: export the version again",
                    shard.file,
                    shard.members.len(),
                    shard.samples
                )));
            }
            let found = find_shard(&root, &shard.file, shard.bytes)?;
            let s = sources.len() as u32;
            for member in &shard.members {
                let key = member.rsplit_once('.').map_or(member.as_str(), |(k, _)| k);
                let Some(&i) = by_key.get(key) else {
                    continue;
                };
                let Some(clip_row) = rows[i].as_clip_file() else {
                    continue;
                };
                held[i] = true;
                let check = match &found {
                    Ok(_) => Ok(Checked {
                        source: Source::File(spool.path(member)),
                        orientation: 1,
                    }),
                    Err(e) => Err(e.clone()),
                };
                entries.push(Entry {
                    row: i,
                    clip_row,
                    check,
                    member: Some((s, member.clone())),
                });
            }
            sources.push(ShardSource {
                // No clip of a shard not found is read: its place stays for the indices.
                source: found.unwrap_or_else(|_| Source::File(PathBuf::new())),
                bytes: shard.bytes,
                clips: Vec::new(),
            });
        }
    }
    for (i, row) in rows.iter().enumerate() {
        if wanted(row) && !held[i] {
            let why = match &row.clip.file {
                None => format!(
                    "no clip file: {}",
                    row.clip.note.as_deref().unwrap_or("none was written")
                ),
                Some(_) => "in no shard".to_string(),
            };
            entries.push(Entry {
                row: i,
                clip_row: row.clone(),
                check: Err((SkipReason::Missing, why)),
                member: None,
            });
        }
    }
    let set = ShardSet {
        shards: sources,
        shard_of: Vec::new(),
        spool,
    };
    Ok((entries, set))
}

/// Shard `rel` of `root`, if it is there ([`source::find`], as any file the loader reads)
/// with the size the index gives it; a store that cannot be reached is the load's error.
fn find_shard(
    root: &Root,
    rel: &str,
    bytes: u64,
) -> Result<Result<Source, (SkipReason, String)>, LoaderError> {
    let located = || Source::in_root(root, rel, 0).location();
    let found = super::source::find(root, rel, false);
    if let Some(failure) = root.as_remote().and_then(|r| r.failure()) {
        return Err(failure.into());
    }
    Ok(found
        .map_err(|(reason, why)| (reason, format!("{}: {why}", located().display())))
        .and_then(|(source, _)| match source.open().size_bytes() {
            Ok(size) if size == bytes => Ok(source),
            Ok(size) => Err((
                SkipReason::Changed,
                format!(
                    "{}: {size} bytes where the index says {bytes}",
                    located().display()
                ),
            )),
            Err(e) => Err((SkipReason::Missing, format!("{}: {e}", located().display()))),
        }))
}

impl ShardSet {
    /// The epoch's windows (in clip order) in the order the shards are read: see the module's
    /// documentation. Only this rank's shards' windows are kept.
    pub fn order(
        &self,
        windows: Vec<Sample>,
        batching: &Batching,
        seed: u64,
        epoch: u64,
    ) -> Vec<Sample> {
        let mut by_shard: Vec<Vec<Sample>> = vec![Vec::new(); self.shards.len()];
        for w in windows {
            by_shard[self.shard_of[w.clip as usize] as usize].push(w);
        }
        let mut order: Vec<usize> = (0..self.shards.len()).collect();
        if batching.shuffle {
            Rng::new(&[seed, epoch, 5]).shuffle(&mut order);
        }
        let mut out = Vec::new();
        for s in order {
            let mut windows = std::mem::take(&mut by_shard[s]);
            if batching.shuffle {
                let mut rng = Rng::new(&[seed, epoch, 6, s as u64]);
                let mut start = 0;
                while start < windows.len() {
                    let (mut end, mut clips, mut last) = (start, 0, None);
                    while end < windows.len() {
                        if last != Some(windows[end].clip) {
                            if clips == SHUFFLE_CLIPS {
                                break;
                            }
                            clips += 1;
                            last = Some(windows[end].clip);
                        }
                        end += 1;
                    }
                    rng.shuffle(&mut windows[start..end]);
                    start = end;
                }
            }
            out.extend(windows);
        }
        // Each rank a run of the order (so a few shards each, each read by one rank or, at a
        // run's ends, two), as many windows as the others give or take one.
        let world = batching.world_size.max(1);
        if world > 1 {
            let n = out.len();
            let (from, to) = (n * batching.rank / world, n * (batching.rank + 1) / world);
            out = out.drain(from..to.min(n)).collect();
        }
        out
    }
}

/// A clip spooled: its EXIF orientation, or why it cannot be read.
type SpoolResult = Result<u16, (SkipReason, String)>;

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
        let mut expected = shard.clips.iter().peekable();
        // Members of the shard's list passed, and how many to pass for the epoch's last clip.
        let mut passed = 0;
        let wanted_members = shard
            .clips
            .iter()
            .rposition(|&(_, c)| state.first[c as usize] != usize::MAX)
            .map_or(0, |i| i + 1);
        // The clip being copied when the shard failed, if one was.
        let mut current = None;
        let mut buf = vec![0u8; 1 << 18];
        let result = (|| -> Result<bool, ShardError> {
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
                let ours = expected.next_if(|(name, _)| member.is(name));
                passed += usize::from(ours.is_some());
                let wanted = ours.filter(|&&(_, c)| state.first[c as usize] != usize::MAX);
                match wanted {
                    Some((name, c)) => {
                        current = Some(*c);
                        if !self.wait_for_room(state, member.size) {
                            return Ok(false);
                        }
                        let Some(spooled) = self.spool(&mut reader, &member, name, *c, &mut buf)?
                        else {
                            return Ok(false);
                        };
                        current = None;
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
        })();
        let failure = match result {
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
        let rest = expected.map(|(name, c)| (Some(name), *c));
        for (name, c) in current.map(|c| (None, c)).into_iter().chain(rest) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_take_runs_of_the_shard_order_every_window_once_in_near_equal_shares() {
        // 7 shards of 1 to 7 clips, a window or two a clip.
        let mut shard_of = Vec::new();
        let mut windows = Vec::new();
        for s in 0..7u32 {
            for _ in 0..=s {
                let clip = shard_of.len() as u32;
                shard_of.push(s);
                for w in 0..1 + clip % 2 {
                    windows.push(Sample {
                        clip,
                        start: f64::from(w),
                        len: 4,
                        aug_seed: 0,
                    });
                }
            }
        }
        let set = ShardSet {
            shards: (0..7)
                .map(|_| ShardSource {
                    source: Source::File(PathBuf::new()),
                    bytes: 0,
                    clips: Vec::new(),
                })
                .collect(),
            shard_of,
            spool: Spool::new().unwrap(),
        };
        for shuffle in [false, true] {
            let mut all = Vec::new();
            let mut counts = Vec::new();
            for rank in 0..3 {
                let batching = Batching {
                    shuffle,
                    rank,
                    world_size: 3,
                    ..Batching::default()
                };
                let mine = set.order(windows.clone(), &batching, 5, 1);
                counts.push(mine.len());
                all.extend(mine.iter().map(|w| (w.clip, w.start.to_bits())));
            }
            let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            assert!(hi - lo <= 1, "{counts:?}");
            all.sort_unstable();
            let mut expected: Vec<(u32, u64)> = windows
                .iter()
                .map(|w| (w.clip, w.start.to_bits()))
                .collect();
            expected.sort_unstable();
            assert_eq!(all, expected, "shuffle {shuffle}");
        }
        // Unshuffled, one rank: the windows as they came (row order).
        let one = set.order(
            windows.clone(),
            &Batching {
                shuffle: false,
                ..Batching::default()
            },
            5,
            1,
        );
        assert_eq!(one, windows);
    }
}
