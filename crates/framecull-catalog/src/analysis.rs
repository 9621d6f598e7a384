//! Storage of analysis results (triage and deep): metrics, curves, duplicate groups and flags.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, ToSql, params, params_from_iter};

use super::columns;
use super::{Catalog, CatalogError, Result, unix_now};
use framecull_analysis::flags::Config;
use framecull_model::{
    AnalysisLevel, Curves, Cut, DupInfo, Flag, FrameTable, ItemId, ItemStatus, Measure, Measured,
    MediaKind, Metrics,
};

/// The metrics table's columns that are not [`Metrics`] fields, written before them: the
/// item, when and by which version it was analysed, and what of the file it was.
const METRICS_KEYS: [&str; 6] = [
    "item_id",
    "analysed_at",
    "analysis_version",
    "item_size",
    "item_mtime_ns",
    "item_stream",
];

/// An item whose analysis is missing or stale.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct AnalysisTodo {
    pub id: ItemId,
    pub path: String,
    pub kind: MediaKind,
    pub status: ItemStatus,
    pub codec: Option<String>,
    pub fps: Option<f64>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub exif_orientation: Option<u16>,
    /// The video stream to decode (the probe's choice; `None`: probed before it was recorded).
    pub stream_index: Option<u32>,
    pub size_bytes: u64,
    pub mtime_ns: i64,
    /// Frames to decode, from the header or duration x fps (for scheduling).
    pub frame_estimate: Option<f64>,
}

/// A finished analysis ready to store.
#[derive(Debug, Clone)]
pub struct AnalysisResult {
    pub id: ItemId,
    pub size_bytes: u64,
    pub mtime_ns: i64,
    /// The stream analysed ([`AnalysisTodo::stream_index`]).
    pub stream_index: Option<u32>,
    pub metrics: Metrics,
    pub curves: Curves,
}

fn f32_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64_blob(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn blob_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn blob_u64(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect()
}

impl Catalog {
    /// Items (not missing) to analyse at `level`: those with no analysis, an analysis made
    /// before the file last changed, or one of another stream than the probe now reads (an
    /// analysis recorded before streams were, counted as of stream 0, is kept for files whose
    /// video is stream 0); an analysis of an older version, except, for a triage, a video's
    /// deep one (a file is never made shallower); and, for the deep pass, every triaged video.
    /// A picture's triage is its deep analysis.
    pub fn analysis_todo(&self, version: u32, level: AnalysisLevel) -> Result<Vec<AnalysisTodo>> {
        let mut stmt = self.conn.prepare(
            "SELECT i.id, i.path, i.kind, i.status, i.fps, i.width, i.height, i.exif_orientation,
                    i.size_bytes, i.mtime_ns, i.codec,
                    COALESCE(i.frame_count, i.duration_secs * i.fps) AS frame_estimate,
                    i.stream_index
             FROM items i LEFT JOIN metrics m ON m.item_id = i.id
             WHERE i.status != 'missing'
               AND (m.item_id IS NULL
                    OR m.item_size != i.size_bytes OR m.item_mtime_ns != i.mtime_ns
                    OR COALESCE(m.item_stream, 0) != COALESCE(i.stream_index, 0)
                    OR (m.analysis_version < ?1
                        AND (?2 = 'deep' OR i.kind != 'video' OR m.analysis_level = 'triage'))
                    OR (?2 = 'deep' AND m.analysis_level = 'triage'))
             ORDER BY i.path",
        )?;
        let [
            id,
            path,
            kind,
            status,
            fps,
            width,
            height,
            exif,
            size,
            mtime,
            codec,
            frames,
            stream,
        ] = columns::positions(
            &stmt,
            [
                "id",
                "path",
                "kind",
                "status",
                Measure::Fps.name(),
                Measure::Width.name(),
                Measure::Height.name(),
                "exif_orientation",
                Measure::SizeBytes.name(),
                "mtime_ns",
                "codec",
                "frame_estimate",
                "stream_index",
            ],
        )?;
        let rows = stmt.query_map(params![version, level.as_str()], |r| {
            Ok(AnalysisTodo {
                id: r.get(id)?,
                path: r.get(path)?,
                kind: MediaKind::parse(&r.get::<_, String>(kind)?).unwrap_or(MediaKind::Other),
                status: ItemStatus::parse(&r.get::<_, String>(status)?)
                    .unwrap_or(ItemStatus::Error),
                fps: r.get(fps)?,
                width: r.get(width)?,
                height: r.get(height)?,
                exif_orientation: r.get(exif)?,
                size_bytes: r.get::<_, i64>(size)? as u64,
                mtime_ns: r.get(mtime)?,
                codec: r.get(codec)?,
                frame_estimate: r.get(frames)?,
                stream_index: r.get(stream)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Whether any item has been analysed.
    pub fn has_metrics(&self) -> Result<bool> {
        Ok(self
            .conn
            .query_row("SELECT EXISTS(SELECT 1 FROM metrics)", [], |r| r.get(0))?)
    }

    /// Store analyses in one transaction.
    pub fn store_analyses<'a>(
        &mut self,
        version: u32,
        batch: impl IntoIterator<Item = &'a AnalysisResult>,
    ) -> Result<()> {
        let now = unix_now();
        let tx = self.conn.transaction()?;
        {
            let mut m_stmt = tx.prepare_cached(&format!(
                "INSERT OR REPLACE INTO metrics({}) VALUES ({})",
                columns::list(METRICS_KEYS.iter().chain(columns::METRICS_FIELDS), ""),
                columns::placeholders(METRICS_KEYS.len() + columns::METRICS_FIELDS.len())
            ))?;
            let mut c_stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO curves(item_id, motion, cuts, frame_hashes, errors, frames)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for r in batch {
                let m = &r.metrics;
                // The keys, in `METRICS_KEYS`' order, then the fields.
                let keys: [&dyn ToSql; 6] = [
                    &r.id,
                    &now,
                    &version,
                    &(r.size_bytes as i64),
                    &r.mtime_ns,
                    &r.stream_index,
                ];
                let fields = columns::metrics_values(m)?;
                m_stmt.execute(params_from_iter(
                    keys.into_iter()
                        .chain(fields.iter().map(|f| f as &dyn ToSql)),
                ))?;
                // A triage's curves hold its keyframes' hashes only; they replace those of
                // an earlier analysis of the file.
                let cuts = serde_json::to_string(&r.curves.cuts).unwrap_or_else(|_| "[]".into());
                c_stmt.execute(params![
                    r.id,
                    f32_blob(&r.curves.motion),
                    cuts,
                    u64_blob(&r.curves.frame_hashes),
                    serde_json::to_string(&r.curves.error_secs).unwrap_or_else(|_| "[]".into()),
                    (!r.curves.frames.is_empty()).then(|| r.curves.frames.to_bytes()),
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Metrics of every analysed item.
    pub fn all_metrics(&self) -> Result<HashMap<ItemId, Metrics>> {
        Ok(self.metrics_by_id()?.into_iter().collect())
    }

    /// What [`Measure`](framecull_model::Measure)s read of every analysed item's metrics (motion,
    /// brightness, sharpness), by ascending item id: what the window's view needs, read in a
    /// fraction of the time and memory of [`Catalog::metrics_by_id`].
    pub fn measured_by_id(&self) -> Result<Vec<(ItemId, Measured)>> {
        // Measures kept in `metrics` are in the columns of their names.
        let [motion, brightness, sharpness] =
            [Measure::MotionMean, Measure::Brightness, Measure::Sharpness].map(Measure::name);
        let mut stmt = self.conn.prepare(&format!(
            "SELECT item_id, {motion}, {brightness}, {sharpness}, analysis_level
             FROM metrics ORDER BY item_id"
        ))?;
        let [id, motion, brightness, sharpness, level] = columns::positions(
            &stmt,
            ["item_id", motion, brightness, sharpness, "analysis_level"],
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, ItemId>(id)?,
                Measured {
                    motion_mean: r.get(motion)?,
                    brightness: r.get(brightness)?,
                    sharpness: r.get(sharpness)?,
                    level: AnalysisLevel::parse(&r.get::<_, String>(level)?)
                        .unwrap_or(AnalysisLevel::Deep),
                },
            ))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Metrics of every analysed item, by ascending item id: half the memory of
    /// [`Catalog::all_metrics`] for a million items (a hash map holds twice as many slots).
    /// [`by_item`] pairs them with the items.
    pub fn metrics_by_id(&self) -> Result<Vec<(ItemId, Metrics)>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT item_id, {} FROM metrics ORDER BY item_id",
            columns::list(columns::METRICS_FIELDS, "")
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, ItemId>(0)?, columns::read_metrics(r, 1)?))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Curves of one item.
    pub fn curves(&self, id: ItemId) -> Result<Option<Curves>> {
        Ok(self
            .conn
            .query_row(
                "SELECT motion, cuts, frame_hashes, errors FROM curves WHERE item_id = ?1",
                [id],
                |r| {
                    let motion: Option<Vec<u8>> = r.get("motion")?;
                    let cuts: Option<String> = r.get("cuts")?;
                    let hashes: Option<Vec<u8>> = r.get("frame_hashes")?;
                    let errors: Option<String> = r.get("errors")?;
                    Ok(Curves {
                        motion: motion.as_deref().map(blob_f32).unwrap_or_default(),
                        cuts: cuts
                            .and_then(|c| serde_json::from_str::<Vec<Cut>>(&c).ok())
                            .unwrap_or_default(),
                        frame_hashes: hashes.as_deref().map(blob_u64).unwrap_or_default(),
                        error_secs: errors
                            .and_then(|e| serde_json::from_str(&e).ok())
                            .unwrap_or_default(),
                        ..Curves::default()
                    })
                },
            )
            .optional()?)
    }

    /// The frame table the deep pass recorded for a video (`None` before analysis version 4,
    /// or for pictures).
    pub fn frame_table(&self, id: ItemId) -> Result<Option<FrameTable>> {
        let blob: Option<Option<Vec<u8>>> = self
            .conn
            .query_row("SELECT frames FROM curves WHERE item_id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(blob.flatten().as_deref().and_then(FrameTable::from_bytes))
    }

    /// Cut lists of every item analysed deeply.
    pub fn all_cuts(&self) -> Result<HashMap<ItemId, Vec<Cut>>> {
        // A triage finds no cuts: its rows are not videos searched for cuts.
        let mut stmt = self.conn.prepare(
            "SELECT c.item_id AS item_id, c.cuts AS cuts
             FROM curves c JOIN metrics m ON m.item_id = c.item_id
             WHERE m.analysis_level = 'deep'",
        )?;
        let [id, cuts] = columns::positions(&stmt, ["item_id", "cuts"])?;
        let rows = stmt.query_map([], |r| {
            let cuts: Option<String> = r.get(cuts)?;
            Ok((
                r.get::<_, ItemId>(id)?,
                cuts.and_then(|c| serde_json::from_str(&c).ok())
                    .unwrap_or_default(),
            ))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Frame hashes of every analysed item (dihedral variants for pictures).
    pub fn all_frame_hashes(&self) -> Result<HashMap<ItemId, Vec<u64>>> {
        let mut stmt = self
            .conn
            .prepare("SELECT item_id, frame_hashes FROM curves WHERE length(frame_hashes) > 0")?;
        let [id, hashes] = columns::positions(&stmt, ["item_id", "frame_hashes"])?;
        let rows = stmt.query_map([], |r| {
            let b: Option<Vec<u8>> = r.get(hashes)?;
            Ok((
                r.get::<_, ItemId>(id)?,
                b.as_deref().map(blob_u64).unwrap_or_default(),
            ))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The settings the stored flags were derived with (`None` before the first derivation);
    /// an error when they do not parse, as a manifest must not record other settings.
    pub fn flags_config(&self) -> Result<Option<Config>> {
        self.meta("flags_config")?
            .map(|text| {
                serde_json::from_str(&text).map_err(|e| CatalogError::Damaged {
                    what: "the flag settings recorded with the flags (meta flags_config)",
                    message: e.to_string(),
                })
            })
            .transpose()
    }

    /// Replace the duplicate groups and flags (derived data) in one transaction, recording
    /// the settings they were derived with.
    pub fn replace_derived(
        &mut self,
        dups: &HashMap<ItemId, DupInfo>,
        flags: &[(ItemId, Flag)],
        config: &Config,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM dups", [])?;
        tx.execute("DELETE FROM flags", [])?;
        let settings = serde_json::to_string(config).unwrap_or_default();
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('flags_config', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [settings],
        )?;
        {
            let mut d = tx.prepare_cached(
                "INSERT INTO dups(item_id, dup_group, relation, like_item, exact_group)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (id, info) in dups {
                d.execute(params![
                    id,
                    info.group,
                    if info.exact { "exact" } else { "near" },
                    info.like,
                    info.exact_group
                ])?;
            }
            let mut f = tx.prepare_cached(&format!(
                "INSERT INTO flags(item_id, {}) VALUES ({})",
                columns::list(columns::FLAG_FIELDS, ""),
                columns::placeholders(1 + columns::FLAG_FIELDS.len())
            ))?;
            for (id, flag) in flags {
                let fields = columns::flag_values(flag)?;
                f.execute(params_from_iter(
                    [id as &dyn ToSql]
                        .into_iter()
                        .chain(fields.iter().map(|v| v as &dyn ToSql)),
                ))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    pub fn all_dups(&self) -> Result<HashMap<ItemId, DupInfo>> {
        let mut stmt = self
            .conn
            .prepare("SELECT item_id, dup_group, relation, like_item, exact_group FROM dups")?;
        let [id, group, relation, like, exact_group] = columns::positions(
            &stmt,
            [
                "item_id",
                "dup_group",
                "relation",
                "like_item",
                "exact_group",
            ],
        )?;
        let rows = stmt.query_map([], |r| {
            let relation: String = r.get(relation)?;
            Ok((
                r.get::<_, ItemId>(id)?,
                DupInfo {
                    group: r.get(group)?,
                    exact: relation == "exact",
                    like: r.get(like)?,
                    exact_group: r.get(exact_group)?,
                },
            ))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Every flag, by item, in a stable order (severity, then code).
    pub fn all_flags(&self) -> Result<HashMap<ItemId, Vec<Flag>>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT item_id, {} FROM flags ORDER BY item_id, id",
            columns::list(columns::FLAG_FIELDS, "")
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, ItemId>(0)?, columns::read_flag(r, 1)?))
        })?;
        let mut out: HashMap<ItemId, Vec<Flag>> = HashMap::new();
        for row in rows {
            let (id, flag) = row?;
            out.entry(id).or_default().push(flag);
        }
        Ok(out)
    }
}
