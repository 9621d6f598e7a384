//! A version's clip files as WebDataset tar shards (`--format webdataset`): per split,
//! shards of about `--shard-size` bytes (`SPLIT-000000.tar`, ...), each sample the clip file
//! (`KEY.mp4`, or a picture's `KEY.jpg`, `KEY.png`, ...) and `KEY.json` (the row: label,
//! tags, source path, frames, timestamps, size, measures, flags, analysis level), its key the
//! row's clip id (stable across versions); a list of each split's shards (`SPLIT.txt`).
//!
//! A shard is written under its name plus `.part`, synced and renamed when complete, then
//! recorded in the folder's ledger (`.shards.jsonl`: its name, the hash of what it holds, its
//! bytes). A rerun after a stop keeps every shard the ledger records with the same contents
//! and size, and writes the rest.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::layouts::{Metadata, clip_file, folder_name};
use crate::ledger;
use crate::{ManifestError, ManifestRow};

/// The shard size when none is given: 1 GiB.
pub const DEFAULT_SHARD_BYTES: u64 = 1 << 30;

/// The ledger of a shard folder.
const LEDGER: &str = ".shards.jsonl";

/// A tar block.
const BLOCK: u64 = 512;

/// What the shards hold, written beside them as `vNNNN.webdataset.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardsIndex {
    /// The folder of the shards, beside this index.
    pub dir: String,
    /// The size a shard is kept under (one sample larger than it makes a shard of its own).
    pub shard_size: u64,
    /// Each split's shards (`all` without splits).
    pub splits: BTreeMap<String, SplitShards>,
    /// Samples' keys: the rows' clip ids.
    pub key: String,
    /// Shards written by this run, and kept from an earlier run that stopped.
    pub written: u64,
    pub kept: u64,
    /// Rows left out, by reason.
    pub left_out: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SplitShards {
    /// The file listing the split's shards, one name a line.
    pub list: String,
    pub samples: u64,
    pub bytes: u64,
    pub shards: Vec<Shard>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shard {
    pub file: String,
    pub samples: u64,
    pub bytes: u64,
    /// Each sample's media member (`KEY.mp4`, `KEY.jpg`, ...), in the shard's order: what a
    /// reader plans its epoch with before it reads the shard.
    #[serde(default)]
    pub members: Vec<String>,
}

/// How far a shard write has got, read by another thread while it writes (a progress bar):
/// samples and their bytes in the shards, done (written, or kept from an earlier run) of all.
#[derive(Debug, Default)]
pub struct ShardProgress {
    pub samples: AtomicU64,
    pub samples_done: AtomicU64,
    pub bytes: AtomicU64,
    pub bytes_done: AtomicU64,
}

impl ShardProgress {
    fn add(&self, samples: u64, bytes: u64) {
        self.samples_done.fetch_add(samples, Ordering::Relaxed);
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// A shard as the ledger records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Done {
    file: String,
    /// Hash of its samples' keys, files' hashes and metadata.
    plan: String,
    bytes: u64,
}

/// One sample to write: its clip file and its metadata.
struct Sample {
    key: String,
    ext: String,
    from: PathBuf,
    file_bytes: u64,
    /// The clip file's hash, as the row records it.
    content: String,
    json: Vec<u8>,
}

impl Sample {
    /// The name of its media member in a shard.
    fn member(&self) -> String {
        format!("{}.{}", self.key, self.ext)
    }

    /// Its bytes in a tar: each member's header and data padded to a block.
    fn tar_bytes(&self) -> u64 {
        2 * BLOCK
            + self.file_bytes.next_multiple_of(BLOCK)
            + (self.json.len() as u64).next_multiple_of(BLOCK)
    }
}

/// Write the shards of `rows` (their clip files in `clip_dir`) into `out`, kept across runs:
/// shards recorded whole by an earlier run stay. Stops between samples once `stop` is set
/// ([`ManifestError::Stopped`]: the shards written stay for the next run). Counts what is
/// done in `progress`.
pub fn write_webdataset(
    rows: &[ManifestRow],
    clip_dir: &Path,
    out: &Path,
    shard_size: u64,
    (stop, progress): (&AtomicBool, &ShardProgress),
) -> Result<ShardsIndex, ManifestError> {
    std::fs::create_dir_all(out).map_err(|e| ManifestError::io(out, e))?;
    let mut index = ShardsIndex {
        shard_size,
        key: "clip_id".into(),
        ..ShardsIndex::default()
    };
    let by_split = samples_by_split(rows, clip_dir, &mut index.left_out);
    for samples in by_split.values() {
        progress
            .samples
            .fetch_add(samples.len() as u64, Ordering::Relaxed);
        progress.bytes.fetch_add(
            samples.iter().map(Sample::tar_bytes).sum(),
            Ordering::Relaxed,
        );
    }
    let mut ledger = Ledger::open(out)?;
    for (split, samples) in &by_split {
        write_split(
            split,
            samples,
            out,
            shard_size,
            &mut ledger,
            &mut index,
            (stop, progress),
        )?;
    }
    remove_unplanned(out, &index)?;
    Ok(index)
}

/// The samples of `rows` by split; the rows without one counted in `left_out` by reason.
fn samples_by_split(
    rows: &[ManifestRow],
    clip_dir: &Path,
    left_out: &mut BTreeMap<String, u64>,
) -> BTreeMap<String, Vec<Sample>> {
    // Each split's samples, in the version's row order.
    let mut by_split: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    for row in rows {
        match sample_of(row, clip_dir) {
            Ok(sample) => by_split
                .entry(folder_name(row.split.as_deref().unwrap_or("all")))
                .or_default()
                .push(sample),
            Err(why) => *left_out.entry(why.to_string()).or_default() += 1,
        }
    }
    by_split
}

/// A shard folder's ledger: the shards an earlier run recorded, and the file this run
/// records its own in.
struct Ledger {
    file: ledger::Ledger,
    done: HashMap<String, Done>,
}

impl Ledger {
    /// The ledger of the shard folder `out`, read, and opened to record more.
    fn open(out: &Path) -> Result<Self, ManifestError> {
        let (file, done) = ledger::Ledger::open::<Done>(&out.join(LEDGER))?;
        let done = done.into_iter().map(|d| (d.file.clone(), d)).collect();
        Ok(Self { file, done })
    }

    /// Whether the shard `file` (at `path`) is whole: recorded with the same `plan` and
    /// `bytes`, and of that size.
    fn has_whole(&self, file: &str, plan: &str, bytes: u64, path: &Path) -> bool {
        self.done
            .get(file)
            .is_some_and(|d| d.plan == plan && d.bytes == bytes)
            && std::fs::metadata(path).is_ok_and(|m| m.len() == bytes)
    }

    /// Record the shard `file`, just written, durably.
    fn record(&mut self, file: &str, plan: String, bytes: u64) -> Result<(), ManifestError> {
        let done = Done {
            file: file.to_string(),
            plan,
            bytes,
        };
        self.file
            .append(&done)
            .map_err(|e| ManifestError::io(self.file.path(), e))
    }
}

/// Write the shards of one split's `samples` into `out` (keeping those `ledger` records
/// whole) and the split's list of them; recorded in `index`.
fn write_split(
    split: &str,
    samples: &[Sample],
    out: &Path,
    shard_size: u64,
    ledger: &mut Ledger,
    index: &mut ShardsIndex,
    (stop, progress): (&AtomicBool, &ShardProgress),
) -> Result<(), ManifestError> {
    let mut shards = SplitShards {
        list: format!("{split}.txt"),
        ..SplitShards::default()
    };
    for (n, group) in plan(samples, shard_size).into_iter().enumerate() {
        let file = format!("{split}-{n:06}.tar");
        let path = out.join(&file);
        let bytes: u64 = group.iter().map(|s| s.tar_bytes()).sum::<u64>() + 2 * BLOCK;
        let plan = plan_hash(group);
        if ledger.has_whole(&file, &plan, bytes, &path) {
            index.kept += 1;
            progress.add(
                group.len() as u64,
                group.iter().map(Sample::tar_bytes).sum(),
            );
        } else {
            write_shard(group, &path, (stop, progress))?;
            ledger.record(&file, plan, bytes)?;
            index.written += 1;
        }
        shards.samples += group.len() as u64;
        shards.bytes += bytes;
        shards.shards.push(Shard {
            file,
            samples: group.len() as u64,
            bytes,
            members: group.iter().map(Sample::member).collect(),
        });
    }
    let list: String = shards
        .shards
        .iter()
        .map(|s| format!("{}\n", s.file))
        .collect();
    let list_path = out.join(&shards.list);
    std::fs::write(&list_path, list).map_err(|e| ManifestError::io(&list_path, e))?;
    index.splits.insert(split.to_string(), shards);
    Ok(())
}

/// Remove the files of `out` that `index` does not list: shards and lists of an earlier plan,
/// and shards left part written (`.part`).
fn remove_unplanned(out: &Path, index: &ShardsIndex) -> Result<(), ManifestError> {
    // Shards and lists of an earlier plan that this one has not (fewer samples, other
    // splits) go.
    for entry in std::fs::read_dir(out)
        .map_err(|e| ManifestError::io(out, e))?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let listed = index
            .splits
            .values()
            .any(|s| s.list == name || s.shards.iter().any(|f| f.file == name));
        let ours = name.ends_with(".tar") || name.ends_with(".txt");
        if ours && !listed || name.ends_with(".part") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}

/// Why a row has no sample (counted by these words in the index's `left_out`).
#[derive(Debug, thiserror::Error)]
enum NoSample {
    #[error("{0}")]
    NoFile(&'static str),
    #[error("clip file unreadable: {0}")]
    Unreadable(std::io::Error),
    #[error(transparent)]
    Metadata(#[from] serde_json::Error),
}

/// The sample of `row`, or why it has none.
fn sample_of(row: &ManifestRow, clip_dir: &Path) -> Result<Sample, NoSample> {
    let (from, ext) = clip_file(row, clip_dir).map_err(NoSample::NoFile)?;
    let ext = ext.to_ascii_lowercase();
    let file_bytes = std::fs::metadata(&from)
        .map_err(NoSample::Unreadable)?
        .len();
    let json = serde_json::to_vec(&Metadata::of(row, format!("{}.{ext}", row.clip_id)))?;
    Ok(Sample {
        key: row.clip_id.clone(),
        ext,
        from,
        file_bytes,
        content: row.clip.hash.clone().unwrap_or_default(),
        json,
    })
}

/// Samples cut into shards in order, each shard under `shard_size` bytes with its end blocks
/// (a sample larger than that alone in its shard).
fn plan(samples: &[Sample], shard_size: u64) -> Vec<&[Sample]> {
    let mut shards = Vec::new();
    let (mut start, mut bytes) = (0, 2 * BLOCK);
    for (i, sample) in samples.iter().enumerate() {
        let more = sample.tar_bytes();
        if i > start && bytes + more > shard_size {
            shards.push(&samples[start..i]);
            (start, bytes) = (i, 2 * BLOCK);
        }
        bytes += more;
    }
    if start < samples.len() {
        shards.push(&samples[start..]);
    }
    shards
}

/// What a shard holds, hashed: each sample's key, extension, file size and hash, and
/// metadata.
fn plan_hash(samples: &[Sample]) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for s in samples {
        hasher.update(s.key.as_bytes());
        hasher.update(b"\0");
        hasher.update(s.ext.as_bytes());
        hasher.update(&s.file_bytes.to_le_bytes());
        hasher.update(s.content.as_bytes());
        hasher.update(&s.json);
    }
    format!("{:032x}", hasher.digest128())
}

/// Bytes written to a shard before the disk is asked to start writing them.
const WRITEBACK_BYTES: u64 = 32 << 20;

/// Ask the disk to start writing what `file` holds past `flushed` once that is
/// [`WRITEBACK_BYTES`] or more, without waiting (`sync_file_range`): the shard's `fsync` then
/// waits for its last part only, and the disk writes while the next samples are copied. The
/// offset now asked for.
#[allow(unsafe_code)]
fn start_writeback(file: &std::fs::File, flushed: u64) -> u64 {
    use std::io::Seek;
    use std::os::fd::AsRawFd;
    let Ok(at) = (&mut &*file).stream_position() else {
        return flushed;
    };
    if at < flushed + WRITEBACK_BYTES {
        return flushed;
    }
    let (Ok(from), Ok(len)) = (i64::try_from(flushed), i64::try_from(at - flushed)) else {
        return flushed;
    };
    // SAFETY: a plain system call on an open descriptor; nothing is read from memory.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), from, len, libc::SYNC_FILE_RANGE_WRITE);
    }
    at
}

/// Write `samples` as the tar `path`, through `path.part`.
fn write_shard(
    samples: &[Sample],
    path: &Path,
    (stop, progress): (&AtomicBool, &ShardProgress),
) -> Result<(), ManifestError> {
    let mut part_name = path.file_name().unwrap_or_default().to_os_string();
    part_name.push(".part");
    let part = path.with_file_name(part_name);
    let written = (|| -> Result<(), ManifestError> {
        let io = |e| ManifestError::io(&part, e);
        let mut tar = std::fs::File::create(&part).map_err(io)?;
        let mut flushed = 0u64;
        for sample in samples {
            if stop.load(Ordering::SeqCst) {
                return Err(ManifestError::Stopped);
            }
            flushed = start_writeback(&tar, flushed);
            framecull_model::slow_down(framecull_model::SLOW_SHARD_ENV);
            tar.write_all(&header(&sample.member(), sample.file_bytes))
                .map_err(io)?;
            let mut from = std::fs::File::open(&sample.from)
                .map_err(|e| ManifestError::io(&sample.from, e))?;
            // File to file: the kernel copies (copy_file_range), no bytes through here.
            let copied = std::io::copy(&mut from, &mut tar).map_err(io)?;
            if copied != sample.file_bytes {
                return Err(ManifestError::Invalid(format!(
                    "{} changed while it was written into {}",
                    sample.from.display(),
                    path.display()
                )));
            }
            pad(&mut tar, copied).map_err(io)?;
            let json = format!("{}.json", sample.key);
            tar.write_all(&header(&json, sample.json.len() as u64))
                .map_err(io)?;
            tar.write_all(&sample.json).map_err(io)?;
            pad(&mut tar, sample.json.len() as u64).map_err(io)?;
            progress.add(1, sample.tar_bytes());
        }
        tar.write_all(&[0u8; 2 * BLOCK as usize]).map_err(io)?;
        tar.sync_all().map_err(io)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&part);
        return Err(e);
    }
    std::fs::rename(&part, path).map_err(|e| ManifestError::io(path, e))
}

/// Zeros after `len` bytes of a member, to the next block.
fn pad(out: &mut impl Write, len: u64) -> std::io::Result<()> {
    let fill = (len.next_multiple_of(BLOCK) - len) as usize;
    out.write_all(&[0u8; BLOCK as usize][..fill])
}

/// A POSIX ustar header of a regular file `name` (under 100 bytes) of `size` bytes: mode
/// 0644, owner 0, time 0 (the same shard for the same samples).
fn header(name: &str, size: u64) -> [u8; BLOCK as usize] {
    let mut h = [0u8; BLOCK as usize];
    let field = |h: &mut [u8; 512], at: usize, bytes: &[u8]| {
        h[at..at + bytes.len()].copy_from_slice(bytes);
    };
    field(&mut h, 0, &name.as_bytes()[..name.len().min(99)]);
    field(&mut h, 100, b"0000644\0");
    field(&mut h, 108, b"0000000\0");
    field(&mut h, 116, b"0000000\0");
    field(&mut h, 124, format!("{size:011o}\0").as_bytes());
    field(&mut h, 136, b"00000000000\0");
    h[156] = b'0';
    field(&mut h, 257, b"ustar\0");
    field(&mut h, 263, b"00");
    // The checksum: every byte summed with its own field read as spaces.
    field(&mut h, 148, b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    field(&mut h, 148, format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A member as a shard's header gives it: its name (at most 99 bytes) and its data's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub size: u64,
}

impl Member {
    /// Its data's bytes in the shard: the size padded to a block.
    pub fn padded(&self) -> u64 {
        self.size.next_multiple_of(BLOCK)
    }

    /// Whether this is the member a shard's index names `name` (a header holds its first 99
    /// bytes).
    pub fn is(&self, name: &str) -> bool {
        self.name.as_bytes() == &name.as_bytes()[..name.len().min(99)]
    }
}

/// Why a block of a shard is no member's header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("a header without a checksum")]
    NoChecksum,
    #[error("a header whose checksum is {recorded}, not {sum}")]
    Checksum { recorded: u64, sum: u64 },
    #[error("a header without a size")]
    NoSize,
}

/// The member whose header is `h` (a block of a shard), `None` at the end blocks, or why the
/// block is no header (its checksum, its size field).
pub fn read_header(h: &[u8; BLOCK as usize]) -> Result<Option<Member>, HeaderError> {
    if h.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let octal = |field: &[u8]| -> Option<u64> {
        let digits = std::str::from_utf8(field).ok()?;
        let digits = digits.trim_matches(|c: char| c == '\0' || c == ' ');
        u64::from_str_radix(digits, 8).ok()
    };
    let recorded = octal(&h[148..156]).ok_or(HeaderError::NoChecksum)?;
    let sum: u64 = h
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(b)
            }
        })
        .sum();
    if sum != recorded {
        return Err(HeaderError::Checksum { recorded, sum });
    }
    let size = octal(&h[124..136]).ok_or(HeaderError::NoSize)?;
    let name = &h[..100];
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(100)];
    Ok(Some(Member {
        name: String::from_utf8_lossy(name).into_owned(),
        size,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(key: &str, file_bytes: u64) -> Sample {
        Sample {
            key: key.into(),
            ext: "mp4".into(),
            from: PathBuf::new(),
            file_bytes,
            content: String::new(),
            json: b"{}".to_vec(),
        }
    }

    #[test]
    fn samples_are_cut_into_shards_under_the_size() {
        let samples: Vec<Sample> = (0..5).map(|i| sample(&format!("k{i}"), 1000)).collect();
        // Each sample: 512 + 1024 + 512 + 512 = 2560 bytes; a shard's end 1024.
        assert_eq!(samples[0].tar_bytes(), 2560);
        let sizes: Vec<usize> = plan(&samples, 1024 + 2 * 2560)
            .iter()
            .map(|s| s.len())
            .collect();
        assert_eq!(sizes, vec![2, 2, 1]);
        // A sample over the size makes a shard of its own.
        let sizes: Vec<usize> = plan(&samples, 100).iter().map(|s| s.len()).collect();
        assert_eq!(sizes, vec![1; 5]);
        assert!(plan(&[], 100).is_empty());
    }

    #[test]
    fn a_header_sums_as_tar_reads_it() {
        let h = header("abc.mp4", 1234);
        assert_eq!(&h[0..7], b"abc.mp4");
        assert_eq!(&h[124..136], b"00000002322\0");
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        let mut blank = h;
        blank[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, blank.iter().map(|&b| u32::from(b)).sum::<u32>());
    }

    #[test]
    fn a_header_reads_back_as_written_and_a_damaged_one_is_refused() {
        let long = format!("{}.mp4", "k".repeat(120));
        for (name, size) in [
            ("abc.mp4", 1234u64),
            ("x.json", 0),
            (long.as_str(), 1 << 33),
        ] {
            let member = read_header(&header(name, size)).unwrap().unwrap();
            assert!(member.is(name), "{name}");
            assert_eq!(member.size, size);
            assert_eq!(member.padded() % BLOCK, 0);
            assert!(member.padded() >= size && member.padded() < size + BLOCK);
        }
        let mut h = header("abc.mp4", 1234);
        h[126] ^= 1;
        assert!(matches!(read_header(&h), Err(HeaderError::Checksum { .. })));
        assert_eq!(read_header(&[0u8; BLOCK as usize]), Ok(None));
    }
}
