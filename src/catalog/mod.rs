//! The project's durable store: one SQLite database (WAL, numbered migrations, batched
//! transactions), and the polars views built from it.

mod analysis;
mod frame;
mod journal;
pub mod listing;
mod merge;
mod project;
mod review;
mod schema;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::slice::ParallelSliceMut;
use rusqlite::{Connection, OptionalExtension, params};

pub use analysis::{AnalysisResult, AnalysisTodo};
pub use frame::items_frame;
pub use merge::{MergedShard, SHARD_ID_BLOCK, ShardSource};
pub use project::{CONFIG_FILE, ConfigError, PROJECT_DIR_NAME, Project};

use crate::model::{Item, ItemId, ItemStatus, MediaInfo, MediaKind, OtherFile, Probe, Ratio};

const DB_FILE: &str = "catalog.db";

/// A hint for a project folder that cannot be made: a read-only dataset keeps its project
/// elsewhere.
fn unwritable_hint(path: &Path, e: &std::io::Error) -> &'static str {
    let denied = matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    );
    match (
        denied,
        path.file_name().is_some_and(|n| n == PROJECT_DIR_NAME),
    ) {
        (true, true) => {
            "; the dataset folder is not writable: keep the project elsewhere with --project DIR"
        }
        (true, false) => "; choose a writable folder for --project",
        _ => "",
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot create project folder {path}: {source}{}", unwritable_hint(.path, .source))]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no framecull project at {0} (run `framecull scan DIR` first)")]
    NotFound(PathBuf),
    #[error(
        "catalog schema version {found} is newer than this framecull supports ({supported}); upgrade framecull"
    )]
    TooNew { found: i64, supported: i64 },
    #[error(
        "shard {shard} holds item id {largest}: a merged catalog takes shards of fewer than a \
         billion items"
    )]
    TooManyItems { shard: PathBuf, largest: i64 },
    #[error("the project at {project} belongs to dataset {recorded}, not {given}")]
    OtherDataset {
        project: PathBuf,
        recorded: PathBuf,
        given: PathBuf,
    },
}

pub type Result<T> = std::result::Result<T, CatalogError>;

/// What the catalog knows about a file, for incremental rescans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownFile {
    pub size_bytes: u64,
    pub mtime_ns: i64,
    pub status: ItemStatus,
    /// The probe version the metadata was read with.
    pub probe_version: u32,
    pub fingerprint: Option<String>,
}

/// A probed file ready to be stored.
#[derive(Debug, Clone)]
pub struct ItemUpdate {
    pub path: String,
    pub size_bytes: u64,
    pub mtime_ns: i64,
    pub fingerprint: Option<String>,
    pub probe: Probe,
}

/// Counters of a finished or interrupted scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScanCounts {
    pub seen: u64,
    pub probed: u64,
    pub unchanged: u64,
    pub missing: u64,
    pub problems: u64,
    /// Regular files that are not media.
    pub other: u64,
}

pub struct Catalog {
    conn: Connection,
    project_dir: PathBuf,
}

impl Catalog {
    /// Open (creating if needed) the project at `project_dir` for the dataset at `dataset_root`.
    pub fn create_or_open(project_dir: &Path, dataset_root: &Path) -> Result<Self> {
        std::fs::create_dir_all(project_dir).map_err(|source| CatalogError::CreateDir {
            path: project_dir.to_path_buf(),
            source,
        })?;
        let catalog = Self::open_db(project_dir)?;
        let root = dataset_root.to_string_lossy().into_owned();
        match catalog.meta("dataset_root")? {
            None => catalog.set_meta("dataset_root", &root)?,
            Some(recorded) if recorded != root => {
                return Err(CatalogError::OtherDataset {
                    project: project_dir.to_path_buf(),
                    recorded: recorded.into(),
                    given: dataset_root.to_path_buf(),
                });
            }
            Some(_) => {}
        }
        Ok(catalog)
    }

    /// Read the database through a memory map instead of a copy per page, for a command that
    /// reads the whole catalog (`list` of a million items: a third faster). Not the default:
    /// an I/O error on a mapped file (a network file system failing) is a SIGBUS, not an
    /// error.
    pub fn map_for_reading(&self) -> Result<()> {
        self.conn.pragma_update(None, "mmap_size", 1i64 << 32)?;
        Ok(())
    }

    /// Open an existing project.
    pub fn open(project_dir: &Path) -> Result<Self> {
        if !project_dir.join(DB_FILE).is_file() {
            return Err(CatalogError::NotFound(project_dir.to_path_buf()));
        }
        Self::open_db(project_dir)
    }

    fn open_db(project_dir: &Path) -> Result<Self> {
        let conn = Connection::open(project_dir.join(DB_FILE))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut catalog = Catalog {
            conn,
            project_dir: project_dir.to_path_buf(),
        };
        catalog.migrate()?;
        Ok(catalog)
    }

    fn migrate(&mut self) -> Result<()> {
        let supported = schema::MIGRATIONS.len() as i64;
        let found: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        if found > supported {
            return Err(CatalogError::TooNew { found, supported });
        }
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(found as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// The dataset folder this project catalogues.
    pub fn dataset_root(&self) -> Result<Option<PathBuf>> {
        Ok(self.meta("dataset_root")?.map(PathBuf::from))
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [key, value],
        )?;
        Ok(())
    }

    /// The shard (`I/N`) this project holds, when it is a shard of a dataset.
    pub fn shard(&self) -> Result<Option<String>> {
        self.meta("shard")
    }

    /// Record the shard this project holds.
    pub fn set_shard(&self, shard: &str) -> Result<()> {
        self.set_meta("shard", shard)
    }

    /// Path, size, mtime and status of every catalogued file.
    pub fn known_files(&self) -> Result<HashMap<String, KnownFile>> {
        let mut stmt = self.conn.prepare(
            "SELECT path, size_bytes, mtime_ns, status, probe_version, fingerprint FROM items",
        )?;
        let rows = stmt.query_map([], |r| {
            let status: String = r.get(3)?;
            Ok((
                r.get::<_, String>(0)?,
                KnownFile {
                    size_bytes: r.get::<_, i64>(1)? as u64,
                    mtime_ns: r.get(2)?,
                    status: ItemStatus::parse(&status).unwrap_or(ItemStatus::Error),
                    probe_version: r.get(4)?,
                    fingerprint: r.get(5)?,
                },
            ))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    pub fn begin_scan(&self, root: &Path) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO scans(root, started_at, state) VALUES (?1, ?2, 'running')",
            params![root.to_string_lossy(), unix_now()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn finish_scan(&self, scan_id: i64, cancelled: bool, counts: ScanCounts) -> Result<()> {
        self.conn.execute(
            "UPDATE scans SET finished_at = ?2, state = ?3, seen = ?4, probed = ?5,
                 unchanged = ?6, missing = ?7, problems = ?8, other = ?9
             WHERE id = ?1",
            params![
                scan_id,
                unix_now(),
                if cancelled { "cancelled" } else { "finished" },
                counts.seen as i64,
                counts.probed as i64,
                counts.unchanged as i64,
                counts.missing as i64,
                counts.problems as i64,
                counts.other as i64,
            ],
        )?;
        Ok(())
    }

    /// Replace the list of files that are not media with what a finished walk found.
    pub fn replace_other_files(&mut self, files: &[OtherFile]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM other_files", [])?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO other_files(path, size_bytes, reason) VALUES (?1, ?2, ?3)",
            )?;
            for f in files {
                stmt.execute(params![f.path, f.size_bytes as i64, f.reason])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The files of the last finished walk that are not media, by path.
    pub fn other_files(&self) -> Result<Vec<OtherFile>> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, size_bytes, reason FROM other_files ORDER BY path")?;
        let rows = stmt.query_map([], |r| {
            Ok(OtherFile {
                path: r.get(0)?,
                size_bytes: r.get::<_, i64>(1)?.max(0) as u64,
                reason: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Store a batch of probed files in one transaction (insert or replace by path).
    /// `probe_version` records how the metadata was read.
    pub fn upsert_items(
        &mut self,
        scan_id: i64,
        probe_version: u32,
        batch: &[ItemUpdate],
    ) -> Result<()> {
        let now = unix_now();
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO items(path, kind, status, error, size_bytes, mtime_ns, fingerprint,
                    container, codec, profile, pix_fmt, width, height, rotation_deg, sar, fps,
                    fps_base, time_base, start_secs, duration_secs, frame_count, bit_rate,
                    has_audio, exif_orientation, probed_at, scan_id, probe_version)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)
                 ON CONFLICT(path) DO UPDATE SET kind = excluded.kind, status = excluded.status,
                    error = excluded.error, size_bytes = excluded.size_bytes,
                    mtime_ns = excluded.mtime_ns, fingerprint = excluded.fingerprint,
                    container = excluded.container, codec = excluded.codec,
                    profile = excluded.profile, pix_fmt = excluded.pix_fmt,
                    width = excluded.width, height = excluded.height,
                    rotation_deg = excluded.rotation_deg, sar = excluded.sar, fps = excluded.fps,
                    fps_base = excluded.fps_base, time_base = excluded.time_base,
                    start_secs = excluded.start_secs, duration_secs = excluded.duration_secs,
                    frame_count = excluded.frame_count, bit_rate = excluded.bit_rate,
                    has_audio = excluded.has_audio, exif_orientation = excluded.exif_orientation,
                    probed_at = excluded.probed_at, scan_id = excluded.scan_id,
                    probe_version = excluded.probe_version",
            )?;
            for u in batch {
                let i = &u.probe.info;
                stmt.execute(params![
                    u.path,
                    u.probe.kind.as_str(),
                    u.probe.status.as_str(),
                    u.probe.error,
                    u.size_bytes as i64,
                    u.mtime_ns,
                    u.fingerprint,
                    i.container,
                    i.codec,
                    i.profile,
                    i.pix_fmt,
                    i.width,
                    i.height,
                    i.rotation_deg,
                    i.sample_aspect_ratio.map(Ratio::to_text),
                    i.fps,
                    i.fps_base,
                    i.time_base.map(Ratio::to_text),
                    i.start_secs,
                    i.duration_secs,
                    i.frame_count,
                    i.bit_rate,
                    i.has_audio,
                    i.exif_orientation,
                    now,
                    scan_id,
                    probe_version,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Mark files that are no longer on disk as missing, in one transaction.
    pub fn mark_missing(&mut self, paths: &[String]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "UPDATE items SET status = 'missing', error = 'file no longer on disk' WHERE path = ?1",
            )?;
            for p in paths {
                stmt.execute([p])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Every item, and what `also` reads meanwhile through a second connection to the same
    /// catalog (the items' analysis, say): at a million files, reading rows is most of the
    /// time a listing or the window's view takes. The items are read in two halves, on two
    /// more connections.
    pub fn items_and<T: Send>(
        &self,
        also: impl FnOnce(&Catalog) -> Result<T> + Send,
    ) -> Result<(Vec<Item>, T)> {
        let dir = self.project_dir.clone();
        let mmap: i64 = self
            .conn
            .pragma_query_value(None, "mmap_size", |r| r.get(0))?;
        // The id in the middle: rows below it are read here, the rest by the other thread.
        let middle: Option<ItemId> = self
            .conn
            .query_row(
                "SELECT id FROM items ORDER BY id LIMIT 1 OFFSET (SELECT COUNT(*) FROM items) / 2",
                [],
                |r| r.get(0),
            )
            .optional()?;
        let middle = middle.unwrap_or(ItemId::MAX);
        let open = || -> Result<Catalog> {
            let catalog = Catalog::open(&dir)?;
            catalog.conn.pragma_update(None, "mmap_size", mmap)?;
            Ok(catalog)
        };
        std::thread::scope(|s| {
            let second = s.spawn(|| open()?.items_between(middle, ItemId::MAX));
            let also = s.spawn(|| also(&open()?));
            let first = match middle.checked_sub(1) {
                Some(last) => self.items_between(ItemId::MIN, last),
                None => Ok(Vec::new()),
            };
            let second = join(second)?;
            let also = join(also)?;
            let mut items = first?;
            items.extend(second);
            Ok((sorted_by_path(items), also))
        })
    }

    /// Every item, ordered by path.
    pub fn items(&self) -> Result<Vec<Item>> {
        Ok(sorted_by_path(
            self.items_between(ItemId::MIN, ItemId::MAX)?,
        ))
    }

    /// The items with ids from `first` to `last` (both included), in table order.
    fn items_between(&self, first: ItemId, last: ItemId) -> Result<Vec<Item>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, path, kind, status, error, size_bytes, mtime_ns, fingerprint, container,
                codec, profile, pix_fmt, width, height, rotation_deg, sar, fps, fps_base,
                time_base, start_secs, duration_secs, frame_count, bit_rate, has_audio,
                exif_orientation
             FROM items WHERE id BETWEEN ?1 AND ?2",
        )?;
        let rows = stmt.query_map(params![first, last], |r| {
            let ratio = |k: usize| -> rusqlite::Result<Option<Ratio>> {
                Ok(r.get_ref(k)?.as_str_or_null()?.and_then(Ratio::parse))
            };
            Ok(Item {
                id: r.get::<_, ItemId>(0)?,
                path: r.get(1)?,
                kind: MediaKind::parse(r.get_ref(2)?.as_str()?).unwrap_or(MediaKind::Other),
                status: ItemStatus::parse(r.get_ref(3)?.as_str()?).unwrap_or(ItemStatus::Error),
                error: r.get(4)?,
                size_bytes: r.get::<_, i64>(5)? as u64,
                mtime_ns: r.get(6)?,
                fingerprint: r.get(7)?,
                info: MediaInfo {
                    container: r.get(8)?,
                    codec: r.get(9)?,
                    profile: r.get(10)?,
                    pix_fmt: r.get(11)?,
                    width: r.get(12)?,
                    height: r.get(13)?,
                    rotation_deg: r.get(14)?,
                    sample_aspect_ratio: ratio(15)?,
                    fps: r.get(16)?,
                    fps_base: r.get(17)?,
                    time_base: ratio(18)?,
                    start_secs: r.get(19)?,
                    duration_secs: r.get(20)?,
                    frame_count: r.get(21)?,
                    bit_rate: r.get(22)?,
                    has_audio: r.get(23)?,
                    exif_orientation: r.get(24)?,
                },
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

/// What a scoped thread returned; its panic goes on here.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// `items` ordered by path, in byte order as SQLite's BINARY collation. Read in table order
/// and sorted here: `ORDER BY path` walks the path index and looks each row up in the table,
/// twice as slow at a million items. (Sorting indices and applying the order in one pass was
/// slower still: its reads of the items are random.)
fn sorted_by_path(mut items: Vec<Item>) -> Vec<Item> {
    items.par_sort_unstable_by(|a, b| a.path.cmp(&b.path));
    items
}

/// For each of `items`, its entry in `by_id` (ascending item ids, as
/// [`Catalog::metrics_by_id`] returns them): one merge walk in id order. A binary search per
/// item was a cache miss per step, seconds at a million items.
pub fn by_item<'a, T>(items: &[Item], by_id: &'a [(ItemId, T)]) -> Vec<Option<&'a T>> {
    let mut order: Vec<(ItemId, u32)> = items
        .iter()
        .zip(0u32..)
        .map(|(item, i)| (item.id, i))
        .collect();
    order.par_sort_unstable();
    let mut out = vec![None; items.len()];
    let mut k = 0;
    for (id, i) in order {
        while by_id.get(k).is_some_and(|(other, _)| *other < id) {
            k += 1;
        }
        if let Some((other, value)) = by_id.get(k)
            && *other == id
        {
            out[i as usize] = Some(value);
        }
    }
    out
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Catalog {
    pub fn count_items(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Files whose status is a per-file problem (error or unsupported).
    /// Path and reason of every file with `status`, in path order (a query, not a read of
    /// the whole catalog).
    pub fn reasons_with_status(&self, status: ItemStatus) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT path, COALESCE(error, '') FROM items WHERE status = ?1 ORDER BY path",
        )?;
        let rows = stmt.query_map([status.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    pub fn count_problems(&self) -> Result<u64> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM items WHERE status IN ('error', 'unsupported')",
            [],
            |r| r.get(0),
        )?;
        Ok(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A catalog whose ids are not in path order (as after a merge or a rescan adding files),
    /// with names that sort differently by bytes than by eye.
    fn catalog_with(paths: &[&str]) -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::create_or_open(&dir.path().join("p"), dir.path()).unwrap();
        let scan = catalog.begin_scan(dir.path()).unwrap();
        let batch: Vec<ItemUpdate> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| ItemUpdate {
                path: (*p).into(),
                size_bytes: i as u64,
                mtime_ns: 0,
                fingerprint: None,
                probe: Probe::ok(MediaKind::Image, MediaInfo::default()),
            })
            .collect();
        catalog.upsert_items(scan, 1, &batch).unwrap();
        (dir, catalog)
    }

    const PATHS: [&str; 7] = [
        "z/last.jpg",
        "B.jpg",
        "a/b.jpg",
        "a b.jpg",
        "é.jpg",
        "line\nbreak.jpg",
        "-dash.jpg",
    ];

    #[test]
    fn items_and_reads_every_item_once_in_path_byte_order() {
        for n in 0..=PATHS.len() {
            let (_dir, catalog) = catalog_with(&PATHS[..n]);
            let (items, count) = catalog.items_and(|c| c.count_items()).unwrap();
            assert_eq!(count, n as u64);
            let paths: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
            let mut expected: Vec<&str> = PATHS[..n].to_vec();
            expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            assert_eq!(paths, expected, "{n} items");
            let alone: Vec<(ItemId, String)> = catalog
                .items()
                .unwrap()
                .into_iter()
                .map(|i| (i.id, i.path))
                .collect();
            let both: Vec<(ItemId, String)> = items.into_iter().map(|i| (i.id, i.path)).collect();
            assert_eq!(alone, both);
        }
    }

    #[test]
    fn by_item_pairs_each_item_with_its_own_entry() {
        let (_dir, catalog) = catalog_with(&PATHS);
        let items = catalog.items().unwrap();
        // Entries for every other item, plus ids no item has, by ascending id.
        let mut by_id: Vec<(ItemId, String)> = items
            .iter()
            .step_by(2)
            .map(|i| (i.id, i.path.clone()))
            .chain([(-5, "none".to_string()), (1_000, "none".to_string())])
            .collect();
        by_id.sort();
        let paired = by_item(&items, &by_id);
        assert_eq!(paired.len(), items.len());
        for (k, (item, entry)) in items.iter().zip(&paired).enumerate() {
            let expected = (k % 2 == 0).then_some(&item.path);
            assert_eq!(*entry, expected, "{}", item.path);
        }
    }
}
