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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::plan::{Batching, Rng, Sample};
use super::source::{Check, Checked};
use super::{LoaderConfig, LoaderError, SkipReason};
use framecull_manifest::webdataset::ShardsIndex;
use framecull_manifest::{ManifestRow, VersionMeta};
use framecull_media::source::Source;
use framecull_model::MediaKind;
use framecull_storage::Root;

mod feed;
pub(crate) use feed::Feed;

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
    let (index, index_path, root) = read_index(manifest_path, meta, root)?;
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
                return Err(LoaderError::File {
                    path: index_path,
                    reason: format!(
                        "its shard {} names {} of its {} samples: export the version again",
                        shard.file,
                        shard.members.len(),
                        shard.samples
                    ),
                });
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
    let missing = rows
        .iter()
        .enumerate()
        .filter(|&(i, row)| wanted(row) && !held[i]);
    entries.extend(missing.map(|(i, row)| not_held(i, row)));
    let set = ShardSet {
        shards: sources,
        shard_of: Vec::new(),
        spool,
    };
    Ok((entries, set))
}

/// The shards' index of `meta`'s version (beside the manifest at `manifest_path`), where it
/// was read from, and the root its shards are found in: `root` where given, else the folder
/// the index names.
fn read_index(
    manifest_path: &Path,
    meta: &VersionMeta,
    root: Option<&Path>,
) -> Result<(ShardsIndex, PathBuf, Root), LoaderError> {
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
    Ok((index, index_path, root))
}

/// The entry of row `i`, wanted but in no shard: skipped as missing, with why.
fn not_held(i: usize, row: &ManifestRow) -> Entry {
    let why = match &row.clip.file {
        None => format!(
            "no clip file: {}",
            row.clip.note.as_deref().unwrap_or("none was written")
        ),
        Some(_) => "in no shard".to_string(),
    };
    Entry {
        row: i,
        clip_row: row.clone(),
        check: Err((SkipReason::Missing, why)),
        member: None,
    }
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
