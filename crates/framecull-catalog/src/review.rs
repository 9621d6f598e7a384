//! Review decisions, tags and clips.

use std::collections::HashMap;

use rusqlite::params;

use super::columns;
use super::{Catalog, Result, unix_now};
use framecull_model::{Clip, Decision, ItemId, Review};

impl Catalog {
    pub fn all_reviews(&self) -> Result<HashMap<ItemId, Review>> {
        let mut stmt = self
            .conn
            .prepare("SELECT item_id, decision, tags, note, label FROM reviews")?;
        let [id, decision, tags, note, label] =
            super::columns::positions(&stmt, ["item_id", "decision", "tags", "note", "label"])?;
        let rows = stmt.query_map([], |r| {
            let decision: String = r.get(decision)?;
            let tags: String = r.get(tags)?;
            Ok((
                r.get::<_, ItemId>(id)?,
                Review {
                    decision: Decision::parse(&decision).unwrap_or_default(),
                    tags: serde_json::from_str(&tags).unwrap_or_default(),
                    note: r.get(note)?,
                    label: r.get(label)?,
                },
            ))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Every clip, by item, in start order.
    pub fn all_clips(&self) -> Result<HashMap<ItemId, Vec<Clip>>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {} FROM clips ORDER BY item_id, start_pts, id",
            columns::list(columns::CLIP_FIELDS, "")
        ))?;
        let rows = stmt.query_map([], |r| columns::read_clip(r, 0))?;
        let mut out: HashMap<ItemId, Vec<Clip>> = HashMap::new();
        for c in rows {
            let c = c?;
            out.entry(c.item_id).or_default().push(c);
        }
        Ok(out)
    }

    /// The labels of each file's clips, distinct and sorted (files whose clips have none are
    /// not in it).
    pub fn clip_labels(&self) -> Result<HashMap<ItemId, Vec<String>>> {
        let mut stmt = self.conn.prepare(
            "SELECT DISTINCT item_id, label FROM clips WHERE label IS NOT NULL
             ORDER BY item_id, label",
        )?;
        let [id, label] = super::columns::positions(&stmt, ["item_id", "label"])?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, ItemId>(id)?, r.get::<_, String>(label)?))
        })?;
        let mut out: HashMap<ItemId, Vec<String>> = HashMap::new();
        for row in rows {
            let (item, label) = row?;
            out.entry(item).or_default().push(label);
        }
        Ok(out)
    }

    /// Record an exported manifest version.
    #[allow(clippy::too_many_arguments)]
    pub fn record_manifest(
        &self,
        name: &str,
        version: u32,
        parent: Option<u32>,
        rows: u64,
        rows_hash: &str,
        catalog_fingerprint: &str,
    ) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO manifests(name, version, parent, created_at, rows, rows_hash,
                catalog_fingerprint) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                name,
                version,
                parent,
                unix_now(),
                rows as i64,
                rows_hash,
                catalog_fingerprint
            ],
        )?;
        Ok(())
    }

    /// A fingerprint of everything an export reads: items, metrics versions, flags, dups,
    /// reviews and clips.
    pub fn state_fingerprint(&self) -> Result<String> {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for sql in [
            "SELECT path || '|' || status || '|' || COALESCE(fingerprint, '') FROM items ORDER BY id",
            "SELECT item_id || '|' || analysis_version || '|' || item_mtime_ns FROM metrics ORDER BY item_id",
            "SELECT item_id || '|' || code || '|' || severity FROM flags ORDER BY item_id, code",
            "SELECT item_id || '|' || dup_group FROM dups ORDER BY item_id",
            // A review row at its defaults (left by an undo) reads as no row.
            "SELECT item_id || '|' || decision || '|' || tags || '|' || COALESCE(label, '')
             FROM reviews WHERE decision != 'unreviewed' OR tags != '[]' OR label IS NOT NULL
             ORDER BY item_id",
            "SELECT id || '|' || item_id || '|' || start_pts || '|' || end_pts || '|' || COALESCE(label, '') || '|' || decision FROM clips ORDER BY id",
        ] {
            let mut stmt = self.conn.prepare(sql)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let v: String = r.get(0)?;
                hasher.update(v.as_bytes());
                hasher.update(b"\n");
            }
            hasher.update(b"--\n");
        }
        Ok(format!("{:032x}", hasher.digest128()))
    }
}
