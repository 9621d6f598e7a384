//! The project's durable store: one SQLite database (WAL, numbered migrations, batched
//! transactions), and the polars views built from it.

mod analysis;
mod columns;
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

use rayon::prelude::*;
use rusqlite::{Connection, OptionalExtension, ToSql, params, params_from_iter};

pub use analysis::{AnalysisResult, AnalysisTodo};
pub use frame::items_frame;
pub use merge::{MergedShard, SHARD_ID_BLOCK, ShardSource};
pub use project::{CONFIG_FILE, ConfigError, PROJECT_DIR_NAME, Project};

use framecull_model::{
    Item, ItemId, ItemStatus, Measure, MediaKind, OtherFile, OtherStatus, Probe,
};

const DB_FILE: &str = "catalog.db";

/// A hint for a project folder that cannot be made: a read-only dataset keeps its project
/// elsewhere.
/// What to do about a write refused because the catalog was opened read-only
/// ([`Catalog::open`] on a folder that cannot be written).
fn read_only_hint(e: &rusqlite::Error) -> &'static str {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::ReadOnly) => {
            " (the project's folder is read-only: this command changes the catalog; run it on a \
             writable copy of the project)"
        }
        _ => "",
    }
}

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
    #[error("catalog database error: {0}{hint}", hint = read_only_hint(.0))]
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
        "the catalog in {0} was made by an older framecull and its folder is read-only: open it \
         once where it can be written (this framecull updates it)"
    )]
    ReadOnlyAndOld(PathBuf),
    #[error(
        "shard {shard} holds item id {largest}: a merged catalog takes shards of fewer than a \
         billion items"
    )]
    TooManyItems { shard: PathBuf, largest: i64 },
    #[error(
        "the catalog is damaged: {what} does not parse ({message}); `framecull flags --recompute` records them anew"
    )]
    Damaged { what: &'static str, message: String },
    #[error("the project at {project} belongs to dataset {recorded}, not {given}")]
    OtherDataset {
        project: PathBuf,
        recorded: PathBuf,
        given: PathBuf,
    },
}

pub type Result<T> = std::result::Result<T, CatalogError>;

/// `path` as the path of a `file:` URI: every byte but unreserved ones percent-encoded (a
/// name need not be UTF-8).
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut text = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            text.push(b as char);
        } else {
            text.push_str(&format!("%{b:02X}"));
        }
    }
    text
}

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
    /// Entries that are not media: regular files and entries that are not regular files.
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
        // Reversible text: a folder whose name is not UTF-8 is recorded exactly.
        let root = framecull_model::text_of_path(dataset_root).into_owned();
        match catalog.meta("dataset_root")? {
            None => catalog.set_meta("dataset_root", &root)?,
            Some(recorded) if recorded != root => {
                return Err(CatalogError::OtherDataset {
                    project: project_dir.to_path_buf(),
                    recorded: framecull_model::path_of_text(&recorded),
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

    /// Open an existing project. One in a folder this process cannot write (read-only
    /// storage, another user's project) is opened read-only: what reads it works, a change is
    /// refused with a clear error.
    pub fn open(project_dir: &Path) -> Result<Self> {
        if !project_dir.join(DB_FILE).is_file() {
            return Err(CatalogError::NotFound(project_dir.to_path_buf()));
        }
        match Self::open_db(project_dir) {
            // The folder cannot be written: SQLite cannot make the write-ahead log's files.
            Err(CatalogError::Sqlite(e))
                if matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
                ) =>
            {
                match Self::open_read_only(project_dir) {
                    Err(CatalogError::Sqlite(_)) => Err(CatalogError::Sqlite(e)),
                    opened => opened,
                }
            }
            opened => opened,
        }
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

    /// A catalog whose folder cannot be written: SQLite could not make the write-ahead log's
    /// index beside it, so the database is opened as immutable (nothing in this process can
    /// change it; a writer elsewhere, on a file system shared read-only here, is not seen
    /// until the next command).
    fn open_read_only(project_dir: &Path) -> Result<Self> {
        use rusqlite::OpenFlags;
        let uri = format!("file:{}?immutable=1", uri_path(&project_dir.join(DB_FILE)));
        let conn = Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let supported = schema::MIGRATIONS.len() as i64;
        if found > supported {
            return Err(CatalogError::TooNew { found, supported });
        }
        if found < supported {
            return Err(CatalogError::ReadOnlyAndOld(project_dir.to_path_buf()));
        }
        Ok(Catalog {
            conn,
            project_dir: project_dir.to_path_buf(),
        })
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
        Ok(self
            .meta("dataset_root")?
            .map(|text| framecull_model::path_of_text(&text)))
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

    /// The video stream choice (`[video] stream`) the last finished scan probed with: a
    /// scan with another reads every file again.
    pub fn probed_stream_choice(&self) -> Result<framecull_model::StreamChoice> {
        Ok(self
            .meta("video_stream")?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default())
    }

    pub fn set_probed_stream_choice(&self, choice: framecull_model::StreamChoice) -> Result<()> {
        let text = serde_json::to_string(&choice).unwrap_or_default();
        self.set_meta("video_stream", &text)
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
        let [path, size, mtime, status, probe, fingerprint] = columns::positions(
            &stmt,
            [
                "path",
                Measure::SizeBytes.name(),
                "mtime_ns",
                "status",
                "probe_version",
                "fingerprint",
            ],
        )?;
        let rows = stmt.query_map([], |r| {
            let status: String = r.get(status)?;
            Ok((
                r.get::<_, String>(path)?,
                KnownFile {
                    size_bytes: r.get::<_, i64>(size)? as u64,
                    mtime_ns: r.get(mtime)?,
                    status: ItemStatus::parse(&status).unwrap_or(ItemStatus::Error),
                    probe_version: r.get(probe)?,
                    fingerprint: r.get(fingerprint)?,
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
                "INSERT INTO other_files(path, size_bytes, reason, status) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for f in files {
                stmt.execute(params![
                    f.path,
                    f.size_bytes as i64,
                    f.reason,
                    f.status.as_str()
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The entries of the last finished walk that are not media, by path.
    pub fn other_files(&self) -> Result<Vec<OtherFile>> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, size_bytes, reason, status FROM other_files ORDER BY path")?;
        let [path, size, reason, status] = columns::positions(
            &stmt,
            ["path", Measure::SizeBytes.name(), "reason", "status"],
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(OtherFile {
                path: r.get(path)?,
                size_bytes: r.get::<_, i64>(size)?.max(0) as u64,
                reason: r.get(reason)?,
                status: OtherStatus::parse(&r.get::<_, String>(status)?)
                    .unwrap_or(OtherStatus::NotMedia),
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
            let columns = ITEM_KEYS
                .iter()
                .chain(columns::MEDIA_FIELDS)
                .chain(&ITEM_SCAN);
            let mut stmt = tx.prepare_cached(&format!(
                "INSERT INTO items({}) VALUES ({})
                 ON CONFLICT(path) DO UPDATE SET {}",
                columns::list(columns.clone(), ""),
                columns::placeholders(columns.clone().count()),
                columns
                    .filter(|c| **c != "path")
                    .map(|c| format!("{c} = excluded.{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))?;
            for u in batch {
                // In the order of `ITEM_KEYS`, `MEDIA_FIELDS` and `ITEM_SCAN`.
                let keys: [&dyn ToSql; 7] = [
                    &u.path,
                    &u.probe.kind.as_str(),
                    &u.probe.status.as_str(),
                    &u.probe.error,
                    &(u.size_bytes as i64),
                    &u.mtime_ns,
                    &u.fingerprint,
                ];
                let media = columns::media_values(&u.probe.info)?;
                let scan: [&dyn ToSql; 3] = [&now, &scan_id, &probe_version];
                stmt.execute(params_from_iter(
                    keys.into_iter()
                        .chain(media.iter().map(|m| m as &dyn ToSql))
                        .chain(scan),
                ))?;
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

    /// Every item ([`ItemFields`] of each), ordered by path, and what `also` reads meanwhile
    /// through another connection to the same catalog (the items' analysis, say): at a
    /// million files, reading rows is most of the time a listing or the window's view takes.
    pub fn items_and<T: Send>(
        &self,
        fields: ItemFields,
        also: impl FnOnce(&Catalog) -> Result<T> + Send,
    ) -> Result<(Vec<Item>, T)> {
        let (parts, also) = self.items_in_parts_and(fields, also)?;
        let mut items = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for part in parts {
            items.extend(part);
        }
        sort_by_path(&mut items, |i| &i.path);
        Ok((items, also))
    }

    /// Every item ([`ItemFields`] of each) in table order (ascending ids), in parts read on
    /// two more connections, and what `also` reads meanwhile on a third: for a caller that
    /// makes something smaller of each item before it orders them ([`sort_by_path`]).
    pub fn items_in_parts_and<T: Send>(
        &self,
        fields: ItemFields,
        also: impl FnOnce(&Catalog) -> Result<T> + Send,
    ) -> Result<(Vec<Vec<Item>>, T)> {
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
            let second = s.spawn(|| open()?.items_between(middle, ItemId::MAX, fields));
            let also = s.spawn(|| also(&open()?));
            let first = match middle.checked_sub(1) {
                Some(last) => self.items_between(ItemId::MIN, last, fields),
                None => Ok(Vec::new()),
            };
            let second = join(second)?;
            let also = join(also)?;
            Ok((vec![first?, second], also))
        })
    }

    /// Every item, ordered by path.
    pub fn items(&self) -> Result<Vec<Item>> {
        let mut items = self.items_between(ItemId::MIN, ItemId::MAX, ItemFields::All)?;
        sort_by_path(&mut items, |i| &i.path);
        Ok(items)
    }

    /// The items with ids from `first` to `last` (both included), in table order.
    fn items_between(&self, first: ItemId, last: ItemId, fields: ItemFields) -> Result<Vec<Item>> {
        // The columns a brief read leaves out are read as NULL: no text decoded or allocated.
        let media = columns::MEDIA_FIELDS.iter().map(|&c| match fields {
            ItemFields::Brief if !BRIEF_MEDIA.contains(&c) => "NULL",
            _ => c,
        });
        let mtime = match fields {
            ItemFields::All => "mtime_ns",
            ItemFields::Brief => "0 AS mtime_ns",
        };
        let size = Measure::SizeBytes.name();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT id, path, kind, status, error, {size}, {mtime}, fingerprint, {}
             FROM items WHERE id BETWEEN ?1 AND ?2",
            media.collect::<Vec<_>>().join(", ")
        ))?;
        let [id, path, kind, status, error, size, mtime, fingerprint] = columns::positions(
            &stmt,
            [
                "id",
                "path",
                "kind",
                "status",
                "error",
                size,
                "mtime_ns",
                "fingerprint",
            ],
        )?;
        // The media information follows, in its list's order.
        let media = fingerprint + 1;
        let rows = stmt.query_map(params![first, last], |r| {
            Ok(Item {
                id: r.get::<_, ItemId>(id)?,
                path: r.get(path)?,
                kind: MediaKind::parse(r.get_ref(kind)?.as_str()?).unwrap_or(MediaKind::Other),
                status: ItemStatus::parse(r.get_ref(status)?.as_str()?)
                    .unwrap_or(ItemStatus::Error),
                error: r.get(error)?,
                size_bytes: r.get::<_, i64>(size)? as u64,
                mtime_ns: r.get(mtime)?,
                fingerprint: r.get(fingerprint)?,
                info: columns::read_media(r, media)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

/// The items table's columns before an item's [`framecull_model::MediaInfo`]
/// ([`columns::MEDIA_FIELDS`]). A measure kept there (`Stored::Items`) has its name's column.
const ITEM_KEYS: [&str; 7] = [
    "path",
    "kind",
    "status",
    "error",
    Measure::SizeBytes.name(),
    "mtime_ns",
    "fingerprint",
];

/// The items table's columns after its media information: when, by which scan and which version
/// of the probe.
const ITEM_SCAN: [&str; 3] = ["probed_at", "scan_id", "probe_version"];

/// The media information columns an [`ItemFields::Brief`] read reads.
const BRIEF_MEDIA: [&str; 9] = [
    "codec",
    Measure::Width.name(),
    Measure::Height.name(),
    "rotation_deg",
    Measure::Fps.name(),
    Measure::DurationSecs.name(),
    "bit_rate",
    "exif_orientation",
    "stream_index",
];

/// Which of an item's fields [`Catalog::items_and`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemFields {
    All,
    /// What the window shows and measures of a file: id, path, kind, status, error, size,
    /// fingerprint, codec, width, height, rotation, EXIF orientation, fps, duration and bit
    /// rate; the other fields are left empty (`mtime_ns` 0). A third less to read and no
    /// strings to allocate and free for the rest.
    Brief,
}

/// What a scoped thread returned; its panic goes on here.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Orders `items` by their `path`, in byte order as SQLite's BINARY collation. Catalog rows
/// are read in table order and sorted here: `ORDER BY path` walks the path index and looks
/// each row up in the table, twice as slow at a million items. A sort of the items themselves
/// moved them (~370 bytes for an [`Item`]) at each step of the sort, 0.4 to 1.2 s for a
/// million; what is sorted here are 28-byte keys (the bytes past the prefix all paths share,
/// and the item's place), the full paths compared only where the keys tie, and the items are
/// then put in place by swaps along the permutation's cycles, each moved once.
pub fn sort_by_path<T: Send + Sync>(items: &mut [T], path: impl Fn(&T) -> &str + Sync) {
    let Some(first) = items.first() else {
        return;
    };
    let mut shared = path(first);
    for item in items.iter() {
        shared = &shared[..common_prefix(shared, path(item))];
    }
    let skip = shared.len();
    let mut keys: Vec<([u8; 24], u32)> = items
        .par_iter()
        .enumerate()
        .map(|(at, item)| {
            // Zero-padded: a path that is a prefix of another sorts first or ties.
            let mut key = [0u8; 24];
            let rest = &path(item).as_bytes()[skip..];
            let n = rest.len().min(key.len());
            key[..n].copy_from_slice(&rest[..n]);
            (key, at as u32)
        })
        .collect();
    keys.par_sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| {
            let bytes = |at: u32| path(&items[at as usize]).as_bytes();
            bytes(a.1).cmp(bytes(b.1))
        })
    });
    // Position k takes the item now at source[k]; a position done points at itself.
    let mut source: Vec<u32> = keys.into_iter().map(|(_, at)| at).collect();
    for start in 0..source.len() {
        let mut k = start;
        loop {
            let from = source[k] as usize;
            source[k] = k as u32;
            if from == start {
                break;
            }
            items.swap(k, from);
            k = from;
        }
    }
}

/// The length of the longest common prefix of `a` and `b`, at a character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
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

pub fn unix_now() -> i64 {
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
            "SELECT path, COALESCE(error, '') AS reason FROM items WHERE status = ?1 ORDER BY path",
        )?;
        let [path, reason] = columns::positions(&stmt, ["path", "reason"])?;
        let rows = stmt.query_map([status.as_str()], |r| Ok((r.get(path)?, r.get(reason)?)))?;
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
    use framecull_model::{
        AnalysisLevel, Crop, Curves, FieldOrder, Flag, FlagSource, Measured, MediaInfo, Metrics,
        Ratio, Severity,
    };

    /// Media information with every field set: read back whole, and a brief read holds the
    /// brief fields and no other. A rescan replaces every field.
    #[test]
    fn every_media_field_reads_back_as_written_and_a_brief_read_holds_the_brief_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::create_or_open(&dir.path().join("p"), dir.path()).unwrap();
        let info = MediaInfo {
            container: Some("mpegts".into()),
            codec: Some("hevc".into()),
            profile: Some("Main 10".into()),
            pix_fmt: Some("yuv420p10le".into()),
            width: Some(1920),
            height: Some(1080),
            rotation_deg: Some(270),
            sample_aspect_ratio: Ratio::new(4, 3),
            fps: Some(25.0),
            fps_base: Some(50.0),
            time_base: Ratio::new(1, 90_000),
            start_secs: Some(1.4),
            duration_secs: Some(12.5),
            frame_count: Some(312),
            bit_rate: Some(8_000_000),
            has_audio: Some(false),
            exif_orientation: Some(3),
            stream_index: Some(2),
            color_space: Some("bt709".into()),
        };
        let mut update = ItemUpdate {
            path: "a.ts".into(),
            size_bytes: 7,
            mtime_ns: 9,
            fingerprint: Some("f".into()),
            probe: Probe::ok(MediaKind::Video, MediaInfo::default()),
        };
        for info in [MediaInfo::default(), info.clone()] {
            update.probe.info = info;
            let scan = catalog.begin_scan(dir.path()).unwrap();
            catalog.upsert_items(scan, 1, &[update.clone()]).unwrap();
        }
        let items = catalog.items().unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!((items[0].size_bytes, items[0].mtime_ns), (7, 9));
        assert_eq!(items[0].info, info);
        let (brief, ()) = catalog.items_and(ItemFields::Brief, |_| Ok(())).unwrap();
        let expected = MediaInfo {
            codec: info.codec.clone(),
            width: info.width,
            height: info.height,
            rotation_deg: info.rotation_deg,
            fps: info.fps,
            duration_secs: info.duration_secs,
            bit_rate: info.bit_rate,
            exif_orientation: info.exif_orientation,
            stream_index: info.stream_index,
            ..MediaInfo::default()
        };
        assert_eq!(brief[0].info, expected);
        assert_eq!(brief[0].mtime_ns, 0);
    }

    /// Flags read back in the order written, every field; a severity or source this version
    /// does not know reads as a warning from a rule.
    #[test]
    fn flags_read_back_as_written() {
        let (_dir, mut catalog) = catalog_with(&["a.mp4"]);
        let id = catalog.items().unwrap()[0].id;
        let flag = |code: &str, severity, source| Flag {
            code: code.into(),
            severity,
            reason: format!("why {code}"),
            source,
        };
        let flags = vec![
            (id, flag("truncated", Severity::Error, FlagSource::Decode)),
            (id, flag("letterbox", Severity::Info, FlagSource::Rule)),
        ];
        let config = framecull_analysis::flags::Config::default();
        catalog
            .replace_derived(&HashMap::new(), &flags, &config)
            .unwrap();
        let read = catalog.all_flags().unwrap();
        let expected: Vec<Flag> = flags.into_iter().map(|(_, f)| f).collect();
        assert_eq!(read[&id], expected);
        catalog
            .conn
            .execute("UPDATE flags SET severity = 'dire', source = 'oracle'", [])
            .unwrap();
        let read = catalog.all_flags().unwrap();
        assert!(
            read[&id]
                .iter()
                .all(|f| f.severity == Severity::Warning && f.source == FlagSource::Rule)
        );
    }

    /// Metrics with every field set to a value of its own (none the default), and a large
    /// hash: what the catalog writes it must read back, field for field.
    #[test]
    fn every_metrics_field_reads_back_as_written() {
        let (_dir, mut catalog) = catalog_with(&["a.mp4"]);
        let id = catalog.items().unwrap()[0].id;
        let text = |s: &str| Some(s.to_string());
        let metrics = Metrics {
            level: AnalysisLevel::Triage,
            decoded_frames: 1,
            decode_errors: 2,
            first_error: text("e"),
            decoder_messages: 3,
            first_message: text("m"),
            repeat_frames: 4,
            discarded_frames: 5,
            undecodable: text("u"),
            no_decoder: text("n"),
            timed_out: true,
            motion_mean: Some(6.5),
            motion_p95: Some(7.5),
            static_share: Some(0.125),
            brightness: Some(8.5),
            brightness_p5: Some(9.5),
            brightness_p95: Some(10.5),
            sharpness: Some(11.5),
            entropy: Some(12.5),
            colorfulness: Some(13.5),
            black_share: Some(0.25),
            frozen_share: Some(0.375),
            decoded_duration_secs: Some(14.5),
            pts_backwards: 15,
            pts_repeats: 16,
            vfr: Some(true),
            interval_cv: Some(0.5),
            resolution_changes: 17,
            truncated: true,
            suspect: text("s"),
            structure_error: text("x"),
            phash: Some(u64::MAX - 1),
            content_hash: text("h"),
            content_crop: Crop::parse("1440:1080:240:0"),
            field_order: Some(FieldOrder::Bff),
            declared_field_order: Some(FieldOrder::Progressive),
            fields_tested: 31,
            tff_frames: 1,
            bff_frames: 27,
            progressive_frames: 2,
            repeated_fields: 3,
        };
        let result = AnalysisResult {
            id,
            size_bytes: 0,
            mtime_ns: 0,
            stream_index: Some(0),
            metrics: metrics.clone(),
            curves: Curves::default(),
        };
        catalog.store_analyses(1, [&result]).unwrap();
        assert_eq!(
            catalog.metrics_by_id().unwrap(),
            vec![(id, metrics.clone())]
        );
        let measured = catalog.measured_by_id().unwrap();
        assert_eq!(measured, vec![(id, Measured::from(&metrics))]);
    }

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
                fingerprint: Some(format!("f{i}")),
                probe: Probe::ok(
                    MediaKind::Video,
                    MediaInfo {
                        container: Some("mov,mp4,m4a,3gp,3g2,mj2".into()),
                        codec: Some("h264".into()),
                        profile: Some("High".into()),
                        pix_fmt: Some("yuv420p".into()),
                        width: Some(640 + i as u32),
                        height: Some(480),
                        rotation_deg: Some(90),
                        fps: Some(29.97),
                        fps_base: Some(30.0),
                        duration_secs: Some(i as f64 + 0.5),
                        frame_count: Some(15),
                        bit_rate: Some(1_000 * i as i64),
                        has_audio: Some(true),
                        exif_orientation: Some(6),
                        ..MediaInfo::default()
                    },
                ),
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
            let (items, count) = catalog
                .items_and(ItemFields::All, |c| c.count_items())
                .unwrap();
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

    /// Paths from a few pieces that share long prefixes (past the sort keys' 24 bytes),
    /// prefixes of one another, multi-byte characters that differ in their last byte:
    /// the order is a byte sort of the paths, every item once.
    #[test]
    fn sort_by_path_is_a_byte_sort_of_the_paths() {
        let pieces = [
            "recordings/cam01/2024-05-01/",
            "clip_0001.mp4",
            "clip_0001.mp4.bak",
            "é",
            "è",
            "/",
            "a",
            "A",
            "clip",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for round in 0..200 {
            let count = next(40);
            let lead = if round % 2 == 0 { pieces[0] } else { "" };
            let paths: Vec<String> = (0..count)
                .map(|_| {
                    let mut p = lead.to_string();
                    for _ in 0..next(6) {
                        p.push_str(pieces[next(pieces.len())]);
                    }
                    p
                })
                .collect();
            let items: Vec<Item> = paths
                .iter()
                .enumerate()
                .map(|(id, path)| Item {
                    id: id as ItemId,
                    path: path.clone(),
                    kind: MediaKind::Image,
                    status: ItemStatus::Ok,
                    error: None,
                    size_bytes: 0,
                    mtime_ns: 0,
                    fingerprint: None,
                    info: MediaInfo::default(),
                })
                .collect();
            let mut ordered = items;
            sort_by_path(&mut ordered, |i| &i.path);
            let mut expected: Vec<(&[u8], ItemId)> = paths
                .iter()
                .enumerate()
                .map(|(id, p)| (p.as_bytes(), id as ItemId))
                .collect();
            expected.sort();
            let got: Vec<&[u8]> = ordered.iter().map(|i| i.path.as_bytes()).collect();
            let want: Vec<&[u8]> = expected.iter().map(|e| e.0).collect();
            assert_eq!(got, want, "round {round}");
            let mut ids: Vec<ItemId> = ordered.iter().map(|i| i.id).collect();
            ids.sort();
            assert_eq!(
                ids,
                (0..count as ItemId).collect::<Vec<_>>(),
                "round {round}"
            );
        }
    }

    /// A brief read has the window's fields as a full read has them, the others empty.
    #[test]
    fn a_brief_read_keeps_the_fields_the_window_uses() {
        let (_dir, catalog) = catalog_with(&PATHS);
        let (all, ()) = catalog.items_and(ItemFields::All, |_| Ok(())).unwrap();
        let (brief, ()) = catalog.items_and(ItemFields::Brief, |_| Ok(())).unwrap();
        assert_eq!(all.len(), brief.len());
        for (a, b) in all.iter().zip(&brief) {
            let (x, y) = (&a.info, &b.info);
            assert_eq!(
                (a.id, &a.path, a.kind, a.status, &a.error, a.size_bytes),
                (b.id, &b.path, b.kind, b.status, &b.error, b.size_bytes)
            );
            assert_eq!(
                (&a.fingerprint, &x.codec, x.width, x.height, x.rotation_deg),
                (&b.fingerprint, &y.codec, y.width, y.height, y.rotation_deg)
            );
            assert_eq!(
                (x.fps, x.duration_secs, x.bit_rate, x.exif_orientation),
                (y.fps, y.duration_secs, y.bit_rate, y.exif_orientation)
            );
            assert!(x.container.is_some() && y.container.is_none(), "{}", a.path);
            assert_eq!(b.mtime_ns, 0);
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
