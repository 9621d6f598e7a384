//! Shard catalogs merged into one: each shard's rows copied in one transaction, with the
//! shard's identity and content stamp recorded (`merged_shards`) and every copied row tagged
//! with the shard it came from, so merging a shard again replaces its rows.
//!
//! Item ids are `index × 10⁹ + shard id`: a shard's items get the same ids whatever the
//! order shards are merged in, and keep them when the shard is merged again, so review
//! work and the journal in the merged project stay attached to their files; and each shard's
//! rows are one contiguous range of the tables' keys, so merging a shard writes its own pages
//! instead of touching every page of a large catalog. Derived data
//! (duplicate groups, flags) is not copied: it needs the whole dataset and is recomputed.

use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, Transaction, params};

use super::{Catalog, CatalogError, Result, unix_now};
use framecull_model::AnalysisLevel;

/// SQLite's page cache while merging (KiB): the path index of a million items.
const MERGE_CACHE_KIB: i64 = 128 * 1024;
/// SQLite's default page cache (KiB).
const DEFAULT_CACHE_KIB: i64 = 2000;

/// The meta key holding the definitions of indexes set aside for a bulk merge.
const SET_ASIDE_INDEXES: &str = "merge_set_aside_indexes";

/// Ids of shard `i`'s items in a merged catalog start at `i × SHARD_ID_BLOCK`.
pub const SHARD_ID_BLOCK: i64 = 1_000_000_000;

/// A shard about to be merged: its catalog, identity and content stamp.
#[derive(Debug, Clone)]
pub struct ShardSource<'a> {
    /// The shard's project folder.
    pub dir: &'a Path,
    pub index: u32,
    pub count: u32,
    pub level: AnalysisLevel,
    /// Changes whenever the shard's content does (its marker and catalog state).
    pub stamp: &'a str,
    /// When the shard's scan finished (seconds since the Unix epoch).
    pub finished_at: i64,
}

/// A shard merged into this catalog.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MergedShard {
    pub index: u32,
    pub count: u32,
    pub level: AnalysisLevel,
    pub source_dir: PathBuf,
    pub stamp: String,
    pub items: u64,
    pub finished_at: i64,
    pub merged_at: i64,
}

/// Columns copied as they are (every column but the item id and the provenance ones).
fn copied_columns(tx: &Transaction, table: &str, skip: &[&str]) -> Result<Vec<String>> {
    let mut stmt = tx.prepare(&format!("PRAGMA main.table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>("name"))?;
    let mut out = Vec::new();
    for name in names {
        let name = name?;
        if !skip.contains(&name.as_str()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// `file:` URI of a database opened read-only (`%`, `?` and `#` escaped).
fn read_only_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro");
    uri
}

impl Catalog {
    /// The shards merged into this catalog, by index.
    pub fn merged_shards(&self) -> Result<Vec<MergedShard>> {
        let mut stmt = self.conn.prepare(
            "SELECT shard_index, shard_count, analysis_level, source_dir, stamp, items,
                finished_at, merged_at
             FROM merged_shards ORDER BY shard_index",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(MergedShard {
                index: r.get("shard_index")?,
                count: r.get("shard_count")?,
                level: AnalysisLevel::parse(&r.get::<_, String>("analysis_level")?)
                    .unwrap_or(AnalysisLevel::None),
                source_dir: PathBuf::from(r.get::<_, String>("source_dir")?),
                stamp: r.get("stamp")?,
                items: r.get::<_, i64>("items")?.max(0) as u64,
                finished_at: r.get("finished_at")?,
                merged_at: r.get("merged_at")?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Items that did not come from a merged shard (a scan of this project's own).
    pub fn count_unmerged_items(&self) -> Result<u64> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM items WHERE shard_index IS NULL",
            [],
            |r| r.get(0),
        )?;
        Ok(n as u64)
    }

    /// The stamp of the merged state the derived data was last computed for.
    pub fn merge_derived_stamp(&self) -> Result<Option<String>> {
        self.meta("merge_derived")
    }

    pub fn set_merge_derived_stamp(&self, stamp: &str) -> Result<()> {
        self.set_meta("merge_derived", stamp)
    }

    /// Copy the shard's items, metrics, curves and frame tables, other files, reviews and
    /// clips into this catalog in one transaction, replacing the rows an earlier merge of
    /// the same shard left, and record the shard. Returns the items copied.
    pub fn merge_shard(&mut self, shard: &ShardSource) -> Result<u64> {
        let db = shard.dir.join(super::DB_FILE);
        // Index pages of a large merged catalog stay in memory between shards.
        self.conn
            .pragma_update(None, "cache_size", -MERGE_CACHE_KIB)?;
        self.conn
            .execute("ATTACH DATABASE ?1 AS shard", [read_only_uri(&db)])?;
        let result = self.merge_attached(shard);
        let detached = self.conn.execute("DETACH DATABASE shard", []);
        let items = result?;
        detached?;
        Ok(items)
    }

    /// Before merging many shards: set aside the secondary indexes a merge does not read
    /// (their definitions are kept in the catalog, and [`Catalog::end_merges`] creates them
    /// again, also after a merge killed in between), so each shard's rows are indexed once at
    /// the end instead of rewriting those indexes' pages for every shard.
    pub fn begin_bulk_merges(&mut self) -> Result<()> {
        let tx = self.conn.transaction()?;
        let mut indexes: Vec<(String, String)> = {
            let mut stmt = tx.prepare(
                "SELECT name, sql FROM sqlite_master
                 WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('items', 'metrics')
                   AND name != 'items_shard'",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get("name")?, r.get("sql")?)))?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        if let Some(earlier) = tx
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                [SET_ASIDE_INDEXES],
                |r| r.get::<_, String>(0),
            )
            .optional()?
        {
            indexes.extend(
                serde_json::from_str::<Vec<(String, String)>>(&earlier).unwrap_or_default(),
            );
        }
        indexes.sort();
        indexes.dedup_by(|a, b| a.0 == b.0);
        for (name, _) in &indexes {
            tx.execute_batch(&format!("DROP INDEX IF EXISTS \"{name}\""))?;
        }
        tx.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![
                SET_ASIDE_INDEXES,
                serde_json::to_string(&indexes).unwrap_or_default()
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// After merging: create the indexes [`Catalog::begin_bulk_merges`] set aside, and give
    /// back the memory the merges' page cache took.
    pub fn end_merges(&mut self) -> Result<()> {
        if let Some(set_aside) = self.meta(SET_ASIDE_INDEXES)? {
            let indexes: Vec<(String, String)> =
                serde_json::from_str(&set_aside).unwrap_or_default();
            let tx = self.conn.transaction()?;
            for (name, sql) in &indexes {
                let exists: bool = tx.query_row(
                    "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1)",
                    [name],
                    |r| r.get(0),
                )?;
                if !exists {
                    tx.execute_batch(sql)?;
                }
            }
            tx.execute("DELETE FROM meta WHERE key = ?1", [SET_ASIDE_INDEXES])?;
            tx.commit()?;
        }
        self.conn
            .pragma_update(None, "cache_size", -DEFAULT_CACHE_KIB)?;
        self.conn.execute_batch("PRAGMA shrink_memory")?;
        Ok(())
    }

    fn merge_attached(&mut self, shard: &ShardSource) -> Result<u64> {
        let (block, i) = (SHARD_ID_BLOCK, i64::from(shard.index));
        let largest: i64 =
            self.conn
                .query_row("SELECT COALESCE(MAX(id), 0) FROM shard.items", [], |r| {
                    r.get(0)
                })?;
        if largest >= block {
            return Err(CatalogError::TooManyItems {
                shard: shard.dir.to_path_buf(),
                largest,
            });
        }
        let tx = self.conn.transaction()?;
        let items = merge_items(&tx, block, i)?;
        merge_item_data(&tx, block, i)?;
        merge_clips_and_other_files(&tx, block, i)?;
        record_merged_shard(&tx, shard, i, items)?;
        tx.commit()?;
        Ok(items as u64)
    }
}

/// Copy the attached shard `i`'s items into the catalog (ids `i × block + id`), replacing the
/// rows of its earlier merge; the items copied.
fn merge_items(tx: &Transaction, block: i64, i: i64) -> Result<usize> {
    // Rows of this shard that it no longer holds, and rows of its paths under other ids.
    tx.execute(
        "DELETE FROM main.items WHERE shard_index = ?2 AND NOT EXISTS (
             SELECT 1 FROM shard.items s
             WHERE s.id = main.items.id - ?2 * ?1 AND s.path = main.items.path)",
        params![block, i],
    )?;
    tx.execute(
        // CROSS JOIN: the shard's rows drive the join (the merged catalog is far larger).
        "DELETE FROM main.items WHERE id IN (
             SELECT m.id FROM shard.items s CROSS JOIN main.items m ON m.path = s.path
             WHERE m.id != ?2 * ?1 + s.id)",
        params![block, i],
    )?;
    let cols = copied_columns(tx, "items", &["id", "shard_index", "scan_id"])?;
    let list = cols.join(", ");
    let updates: Vec<String> = cols.iter().map(|c| format!("{c} = excluded.{c}")).collect();
    let items = tx.execute(
        &format!(
            "INSERT INTO main.items(id, shard_index, scan_id, {list})
             SELECT ?2 * ?1 + id, ?2, NULL, {list} FROM shard.items WHERE true
             ON CONFLICT(id) DO UPDATE SET shard_index = excluded.shard_index,
                 scan_id = NULL, {}",
            updates.join(", ")
        ),
        params![block, i],
    )?;
    Ok(items)
}

/// Copy the attached shard `i`'s metrics and curves, replacing those of its earlier merge,
/// and its review decisions.
fn merge_item_data(tx: &Transaction, block: i64, i: i64) -> Result<()> {
    for table in ["metrics", "curves"] {
        let cols = copied_columns(tx, table, &["item_id"])?.join(", ");
        tx.execute(
            &format!(
                "DELETE FROM main.{table} WHERE item_id >= ?2 * ?1 AND item_id < (?2 + 1) * ?1"
            ),
            params![block, i],
        )?;
        tx.execute(
            &format!(
                "INSERT INTO main.{table}(item_id, {cols})
                 SELECT ?2 * ?1 + item_id, {cols} FROM shard.{table}"
            ),
            params![block, i],
        )?;
    }
    // Review decisions: the later of the shard's and this catalog's wins.
    tx.execute(
        "INSERT INTO main.reviews(item_id, decision, tags, note, label, updated_at)
         SELECT ?2 * ?1 + item_id, decision, tags, note, label, updated_at FROM shard.reviews
         WHERE true
         ON CONFLICT(item_id) DO UPDATE SET decision = excluded.decision,
             tags = excluded.tags, note = excluded.note, label = excluded.label,
             updated_at = excluded.updated_at
         WHERE excluded.updated_at > main.reviews.updated_at",
        params![block, i],
    )?;
    Ok(())
}

/// Copy the attached shard `i`'s clips and other files, replacing those of its earlier
/// merge.
fn merge_clips_and_other_files(tx: &Transaction, block: i64, i: i64) -> Result<()> {
    let clip_cols = copied_columns(tx, "clips", &["id", "item_id", "shard_index"])?;
    let clip_list = clip_cols.join(", ");
    tx.execute("DELETE FROM main.clips WHERE shard_index = ?1", [i])?;
    tx.execute(
        &format!(
            "INSERT INTO main.clips(item_id, shard_index, {clip_list})
             SELECT ?2 * ?1 + item_id, ?2, {clip_list} FROM shard.clips
             ORDER BY item_id, start_pts, id"
        ),
        params![block, i],
    )?;
    tx.execute("DELETE FROM main.other_files WHERE shard_index = ?1", [i])?;
    tx.execute(
        "INSERT OR REPLACE INTO main.other_files(path, size_bytes, reason, status, shard_index)
         SELECT path, size_bytes, reason, status, ?1 FROM shard.other_files",
        [i],
    )?;
    Ok(())
}

/// Record `shard` (index `i`, `items` items) as merged now.
fn record_merged_shard(tx: &Transaction, shard: &ShardSource, i: i64, items: usize) -> Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO merged_shards(shard_index, shard_count, deep, source_dir,
             stamp, items, finished_at, merged_at, analysis_level)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            i,
            shard.count,
            shard.level == AnalysisLevel::Deep,
            shard.dir.to_string_lossy(),
            shard.stamp,
            items as i64,
            shard.finished_at,
            unix_now(),
            shard.level.as_str()
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_escapes_what_sqlite_reads_as_syntax() {
        assert_eq!(
            read_only_uri(Path::new("/a b/50%?#/catalog.db")),
            "file:/a b/50%25%3f%23/catalog.db?mode=ro"
        );
    }
}
