//! The project's durable store: one SQLite database (WAL, numbered migrations, batched
//! transactions), and the polars views built from it.

mod analysis;
mod columns;
mod frame;
mod items;
mod journal;
pub mod listing;
mod merge;
mod project;
mod review;
mod schema;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, ToSql, params, params_from_iter};

pub use analysis::{AnalysisResult, AnalysisTodo};
pub use frame::items_frame;
pub use items::{ItemFields, by_item, sort_by_path};
pub use merge::{MergedShard, SHARD_ID_BLOCK, ShardSource};
pub use project::{CONFIG_FILE, ConfigError, PROJECT_DIR_NAME, Project};

use framecull_model::{ItemStatus, Measure, OtherFile, OtherStatus, Probe};

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
mod tests;
