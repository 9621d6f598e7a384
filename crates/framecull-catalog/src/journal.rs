//! User actions: each is one transaction that changes the review state and records the
//! change in the operations journal, so it is durable when the call returns and can be
//! undone and redone. The GUI and the CLI both go through [`Catalog::apply`].

use rusqlite::types::{ToSqlOutput, Value};
use rusqlite::{OptionalExtension, ToSql, Transaction, params, params_from_iter};

use super::{Catalog, Result, columns, unix_now};
use framecull_model::{Clip, Decision, Edit, ItemId, label_of};

impl Catalog {
    /// Apply edits as one operation (one transaction). Clips added without an id get one;
    /// the journal records it. A new operation clears what could be redone. Returns the
    /// operation id.
    pub fn apply(&mut self, edits: Vec<Edit>) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let mut applied = Vec::with_capacity(edits.len());
        for edit in edits {
            applied.push(apply_edit(&tx, edit)?);
        }
        tx.execute("DELETE FROM ops WHERE state = 'undone'", [])?;
        tx.execute(
            "INSERT INTO ops(at, edits, state) VALUES (?1, ?2, 'done')",
            params![
                unix_now(),
                serde_json::to_string(&applied).unwrap_or_default()
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Set the decision of several files as one operation.
    pub fn set_decisions(&mut self, items: &[ItemId], decision: Decision) -> Result<i64> {
        let reviews = self.all_reviews()?;
        let edits = items
            .iter()
            .map(|&item| Edit::Decision {
                item,
                before: reviews.get(&item).map(|r| r.decision).unwrap_or_default(),
                after: decision,
            })
            .collect();
        self.apply(edits)
    }

    /// Replace a file's tags as one operation.
    pub fn set_tags(&mut self, item: ItemId, tags: Vec<String>) -> Result<i64> {
        let before = self
            .all_reviews()?
            .remove(&item)
            .map(|r| r.tags)
            .unwrap_or_default();
        self.apply(vec![Edit::Tags {
            item,
            before,
            after: tags,
        }])
    }

    /// Replace a file's note (none when `note` is empty) as one operation.
    pub fn set_note(&mut self, item: ItemId, note: Option<String>) -> Result<i64> {
        let before = self.all_reviews()?.remove(&item).and_then(|r| r.note);
        let after = note.filter(|n| !n.trim().is_empty());
        self.apply(vec![Edit::Note {
            item,
            before,
            after,
        }])
    }

    /// Replace a file's label (none when `label` is empty) as one operation.
    pub fn set_label(&mut self, item: ItemId, label: Option<&str>) -> Result<i64> {
        let before = self.all_reviews()?.remove(&item).and_then(|r| r.label);
        self.apply(vec![Edit::Label {
            item,
            before,
            after: label.and_then(label_of),
        }])
    }

    /// Undo the latest operation still done. Returns its id, or `None` when there is none.
    pub fn undo(&mut self) -> Result<Option<i64>> {
        let tx = self.conn.transaction()?;
        let last: Option<(i64, String)> = tx
            .query_row(
                "SELECT id, edits FROM ops WHERE state = 'done' ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get("id")?, r.get("edits")?)),
            )
            .optional()?;
        let Some((id, edits)) = last else {
            return Ok(None);
        };
        let edits: Vec<Edit> = serde_json::from_str(&edits).unwrap_or_default();
        for edit in edits.iter().rev() {
            apply_edit(&tx, edit.inverse())?;
        }
        tx.execute("UPDATE ops SET state = 'undone' WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(Some(id))
    }

    /// Redo the earliest undone operation. Returns its id, or `None`.
    pub fn redo(&mut self) -> Result<Option<i64>> {
        let tx = self.conn.transaction()?;
        let next: Option<(i64, String)> = tx
            .query_row(
                "SELECT id, edits FROM ops WHERE state = 'undone' ORDER BY id LIMIT 1",
                [],
                |r| Ok((r.get("id")?, r.get("edits")?)),
            )
            .optional()?;
        let Some((id, edits)) = next else {
            return Ok(None);
        };
        let edits: Vec<Edit> = serde_json::from_str(&edits).unwrap_or_default();
        for edit in edits {
            apply_edit(&tx, edit)?;
        }
        tx.execute("UPDATE ops SET state = 'done' WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(Some(id))
    }
}

/// Apply one edit inside a transaction; returns it as applied (clip ids filled in).
fn apply_edit(tx: &Transaction, edit: Edit) -> Result<Edit> {
    match edit {
        Edit::Decision { item, after, .. } => {
            set_review(tx, item, ReviewColumn::Decision, &after.as_str())?;
        }
        Edit::Tags {
            item, ref after, ..
        } => {
            let tags = serde_json::to_string(after).unwrap_or_default();
            set_review(tx, item, ReviewColumn::Tags, &tags)?;
        }
        Edit::Note {
            item, ref after, ..
        } => {
            set_review(tx, item, ReviewColumn::Note, after)?;
        }
        Edit::Label {
            item, ref after, ..
        } => {
            set_review(tx, item, ReviewColumn::Label, after)?;
        }
        Edit::ClipLabel {
            clip, ref after, ..
        } => {
            let changed = tx
                .prepare_cached("UPDATE clips SET label = ?2 WHERE id = ?1")?
                .execute(params![clip, after])?;
            if changed == 0 {
                return Err(rusqlite::Error::QueryReturnedNoRows.into());
            }
        }
        Edit::AddClip { mut clip } => {
            insert_clip(tx, &mut clip)?;
            return Ok(Edit::AddClip { clip });
        }
        Edit::RemoveClip { ref clip } => {
            tx.execute("DELETE FROM clips WHERE id = ?1", [clip.id])?;
        }
    }
    Ok(edit)
}

/// The per-file review fields an edit sets.
#[derive(Clone, Copy)]
enum ReviewColumn {
    Decision,
    Tags,
    Note,
    Label,
}

/// Set one review field of `item` (creating its review row), stamping the update time.
fn set_review(
    tx: &Transaction,
    item: i64,
    column: ReviewColumn,
    value: &dyn rusqlite::ToSql,
) -> Result<()> {
    let column = match column {
        ReviewColumn::Decision => "decision",
        ReviewColumn::Tags => "tags",
        ReviewColumn::Note => "note",
        ReviewColumn::Label => "label",
    };
    // Cached: an import sets a hundred thousand labels in one operation.
    tx.prepare_cached(&format!(
        "INSERT INTO reviews(item_id, {column}, updated_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(item_id) DO UPDATE SET {column} = excluded.{column},
                updated_at = excluded.updated_at"
    ))?
    .execute(params![item, value, unix_now()])?;
    Ok(())
}

fn insert_clip(tx: &Transaction, clip: &mut Clip) -> Result<()> {
    let mut values = columns::clip_values(clip)?;
    // A new clip (id 0) gets the table's next id.
    debug_assert_eq!(columns::CLIP_FIELDS[0], "id");
    if clip.id <= 0 {
        values[0] = ToSqlOutput::Owned(Value::Null);
    }
    let now = unix_now();
    tx.prepare_cached(&format!(
        "INSERT INTO clips({}, created_at) VALUES ({})",
        columns::list(columns::CLIP_FIELDS, ""),
        columns::placeholders(columns::CLIP_FIELDS.len() + 1)
    ))?
    .execute(params_from_iter(
        values
            .iter()
            .map(|v| v as &dyn ToSql)
            .chain([&now as &dyn ToSql]),
    ))?;
    clip.id = tx.last_insert_rowid();
    Ok(())
}
