//! Reading a version's WebDataset shards (`LoaderConfig::shards`, written by `export --format
//! webdataset`) in place of its clip files. Each shard of the epoch is read once, from its
//! first byte to its last (a folder's file, or a bucket's object through read-ahead ranged
//! reads), by one feeder thread, in the order the epoch's plan needs them; each clip file it
//! holds is copied into a spool folder shortly before the workers read it, decoded from there
//! as a clip file is, and removed once its windows are in batches, so the spool holds about
//! [`SPOOL_AHEAD_BYTES`] more than the windows in flight need.
//!
//! The plan follows the shards, as WebDataset's readers do: shuffling shuffles the order of
//! the shards and, within a shard, the windows of runs of [`SHUFFLE_CLIPS`] clips; ranks take
//! every `world_size`-th shard. Without shuffling the windows come in the version's row order,
//! as they do from the clip files, so both give the same batches.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::pipeline::{Job, Shared};
use super::plan::{Batching, Rng, Sample};
use super::source::{Check, Checked};
use super::{LoaderConfig, LoaderError, SkipReason};
use framecull_manifest::webdataset::{self, Member, ShardsIndex};
use framecull_manifest::{ManifestRow, VersionMeta};
use framecull_media::source::Source;
use framecull_model::MediaKind;
use framecull_storage::{Root, StorageError};

/// Clips whose windows shuffle among each other within a shard.
pub(crate) const SHUFFLE_CLIPS: usize = 64;

/// Spooled clip files kept beyond those the windows in flight need.
const SPOOL_AHEAD_BYTES: u64 = 256 << 20;

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
    /// The clips it holds, in its order: each one's media member and clip index.
    pub clips: Vec<(String, u32)>,
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

/// The folder clip files are spooled into, removed with the loader.
#[derive(Debug)]
pub(crate) struct Spool(PathBuf);

impl Spool {
    fn new() -> std::io::Result<Spool> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "framecull-shards-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Spool(dir))
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
            if let Ok(source) = found {
                sources.push(ShardSource {
                    source,
                    clips: Vec::new(),
                });
            } else {
                // No clip of it is read: its place stays for the members' indices.
                sources.push(ShardSource {
                    source: Source::File(PathBuf::new()),
                    clips: Vec::new(),
                });
            }
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

/// Shard `rel` of `root`, if it is there with the size the index gives it.
fn find_shard(
    root: &Root,
    rel: &str,
    bytes: u64,
) -> Result<Result<Source, (SkipReason, String)>, LoaderError> {
    let found = match root {
        Root::Local(dir) => {
            let path = framecull_model::local_path(dir, rel);
            std::fs::metadata(&path)
                .map(|m| (Source::File(path.clone()), m.len()))
                .map_err(|e| (SkipReason::Missing, format!("{}: {e}", path.display())))
        }
        Root::Remote(remote) => match remote.head(rel) {
            Ok(head) => Ok((Source::in_root(root, rel, head.size_bytes), head.size_bytes)),
            Err(StorageError::NotFound { .. }) => Err((
                SkipReason::Missing,
                format!("{}: no such object", remote.url_of(rel)),
            )),
            Err(e) => return Err(e.into()),
        },
    };
    Ok(found.and_then(|(source, size)| {
        if size == bytes {
            Ok(source)
        } else {
            Err((
                SkipReason::Changed,
                format!(
                    "{}: {size} bytes where the index says {bytes}",
                    source.location().display()
                ),
            ))
        }
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
        let world = batching.world_size.max(1);
        let mut out = Vec::new();
        for (_, s) in order
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % world == batching.rank)
        {
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
        out
    }
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
        let mut expected = shard.clips.iter().peekable();
        let result = (|| -> Result<bool, String> {
            let opened = shard.source.open_streaming();
            let mut reader =
                BufReader::with_capacity(1 << 20, opened.reader().map_err(|e| e.to_string())?);
            self.shared.shards_read.fetch_add(1, Ordering::Relaxed);
            let mut at = 0u64;
            let mut buf = vec![0u8; 1 << 18];
            loop {
                let mut block = [0u8; 512];
                reader
                    .read_exact(&mut block)
                    .map_err(|e| format!("cut short at byte {at}: {e}"))?;
                at += 512;
                self.shared.shard_bytes.fetch_add(512, Ordering::Relaxed);
                let Some(member) =
                    webdataset::read_header(&block).map_err(|e| format!("at byte {at}: {e}"))?
                else {
                    // The end blocks, read to the end: the whole shard, once.
                    let rest = std::io::copy(&mut reader, &mut std::io::sink())
                        .map_err(|e| format!("cut short at byte {at}: {e}"))?;
                    self.shared.shard_bytes.fetch_add(rest, Ordering::Relaxed);
                    return Ok(true);
                };
                let ours = expected.next_if(|(name, _)| member.is(name));
                let wanted = ours.filter(|&&(_, c)| state.first[c as usize] != usize::MAX);
                match wanted {
                    Some((name, c)) => {
                        if !self.wait_for_room(state, member.size) {
                            return Ok(false);
                        }
                        let spooled = self.spool(&mut reader, &member, name, *c, &mut buf)?;
                        self.ready(state, *c, member.size, name, spooled);
                    }
                    None => {
                        let skipped = std::io::copy(
                            &mut (&mut reader).take(member.padded()),
                            &mut std::io::sink(),
                        )
                        .map_err(|e| format!("cut short at byte {at}: {e}"))?;
                        self.shared
                            .shard_bytes
                            .fetch_add(skipped, Ordering::Relaxed);
                        if skipped != member.padded() {
                            return Err(format!("cut short at byte {}", at + skipped));
                        }
                    }
                }
                at += member.padded();
            }
        })();
        let failure = match result {
            Ok(false) => return false,
            Ok(true) => None,
            Err(e) => Some(format!("{}: {e}", location.display())),
        };
        // Clips the shard did not give: gone from it, or after the point it broke.
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        for &(ref name, c) in expected {
            if state.first[c as usize] == usize::MAX {
                continue;
            }
            state.waiting.remove(&(state.first[c as usize], c));
            queue.spooled[c as usize] = match &failure {
                Some(why) => Spooled::Failed(SkipReason::Corrupt, why.clone()),
                None => Spooled::Failed(
                    SkipReason::Missing,
                    format!("{} holds no {name}", location.display()),
                ),
            };
        }
        self.shared.wake.notify_all();
        true
    }

    /// Copy a member's data (and its padding) into the spool: its EXIF orientation when a
    /// picture, or why the clip cannot be read (the spool's disk, a changed fingerprint); an
    /// error is the shard's own (cut short, unreadable).
    fn spool(
        &self,
        reader: &mut impl Read,
        member: &Member,
        name: &str,
        c: u32,
        buf: &mut [u8],
    ) -> Result<Result<u16, (SkipReason, String)>, String> {
        let path = self.set.spool.path(name);
        let part = self.set.spool.path(&format!("{name}.part"));
        let mut out = std::fs::File::create(&part);
        let mut left = member.padded();
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = reader.read(&mut buf[..want]).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!("cut short in {name}"));
            }
            let data = (member.padded() - left).min(member.size);
            let keep = usize::try_from((member.size - data).min(n as u64)).unwrap_or(n);
            if let Ok(file) = &mut out
                && let Err(e) = file.write_all(&buf[..keep])
            {
                out = Err(e);
            }
            left -= n as u64;
            self.shared
                .shard_bytes
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        if let Err(e) = out.and_then(|_| std::fs::rename(&part, &path)) {
            let _ = std::fs::remove_file(&part);
            return Ok(Err((
                SkipReason::Corrupt,
                format!("cannot spool {name}: {e}"),
            )));
        }
        if self.verify {
            let now = framecull_media::fingerprint::fingerprint(&path, member.size)
                .map_err(|e| e.to_string())?;
            let recorded = &self.fingerprints[c as usize];
            if now != *recorded {
                return Ok(Err((
                    SkipReason::Changed,
                    format!(
                        "{name} changed since the manifest was written (fingerprint {now}, manifest {recorded})"
                    ),
                )));
            }
        }
        let orientation = if self.is_image[c as usize] {
            framecull_media::exif_orientation_in(&Source::File(path).open()).unwrap_or(1)
        } else {
            1
        };
        Ok(Ok(orientation))
    }

    fn ready(
        &self,
        state: &mut State,
        c: u32,
        bytes: u64,
        name: &str,
        spooled: Result<u16, (SkipReason, String)>,
    ) {
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
