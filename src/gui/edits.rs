//! Review edits, committed off the UI thread: one writer thread owns a catalog connection and
//! commits each action as its own journaled transaction as soon as it is asked, then reports
//! the reviews and clips as they now stand. What the window shows as done is on disk.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};

use crate::analysis::dups::BestBy;
use crate::catalog::{Catalog, CatalogError};
use crate::model::{Decision, Edit, ItemId};
use crate::scan::curate::keep_best_edits;

use super::review_state::{ReviewState, RowLabels, review_state};

#[derive(Debug, Clone, PartialEq)]
pub enum EditRequest {
    /// Journaled edits, one operation.
    Apply(Vec<Edit>),
    Decide {
        items: Vec<ItemId>,
        decision: Decision,
    },
    Tags {
        item: ItemId,
        tags: Vec<String>,
    },
    Note {
        item: ItemId,
        note: String,
    },
    Label {
        item: ItemId,
        label: Option<String>,
    },
    /// Keep the best member of each duplicate group (of `only`) and reject the others.
    KeepBest {
        order: Vec<BestBy>,
        only: Option<Vec<ItemId>>,
    },
    Undo,
    Redo,
}

pub struct EditDone {
    pub result: anyhow::Result<String>,
    pub state: Option<ReviewUpdate>,
}

/// The review state after an operation, with the rows' labels made from it (off the UI
/// thread: at a million labelled files that takes a few hundred milliseconds) for the rows
/// `row_ids` had then.
pub struct ReviewUpdate {
    pub review: ReviewState,
    pub labels: RowLabels,
    pub row_ids: Arc<Vec<ItemId>>,
}

/// The writer thread of one project.
pub struct EditWriter {
    tx: Sender<EditRequest>,
    rx: Receiver<EditDone>,
    /// Requests sent and not yet reported.
    pending: usize,
    /// The window's rows (item ids in row order), whose labels each update carries.
    rows: Arc<Mutex<Arc<Vec<ItemId>>>>,
}

impl EditWriter {
    pub fn start(project: PathBuf) -> EditWriter {
        let (tx, requests) = channel::<EditRequest>();
        let (done, rx) = channel();
        let rows: Arc<Mutex<Arc<Vec<ItemId>>>> = Arc::default();
        let rows_now = Arc::clone(&rows);
        let spawned = std::thread::Builder::new()
            .name("framecull-edits".into())
            .spawn(move || {
                let catalog = Catalog::open(&project);
                let mut catalog = match catalog {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = done.send(EditDone {
                            result: Err(anyhow::Error::new(e).context("cannot open the catalog")),
                            state: None,
                        });
                        return;
                    }
                };
                for request in requests {
                    let result = apply(&mut catalog, request).map_err(anyhow::Error::from);
                    let state = review_state(&catalog).ok().map(|review| {
                        let row_ids = rows_now.lock().map(|r| Arc::clone(&r)).unwrap_or_default();
                        ReviewUpdate {
                            labels: RowLabels::new(&row_ids, &review),
                            review,
                            row_ids,
                        }
                    });
                    if done.send(EditDone { result, state }).is_err() {
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the edit writer: {e}");
        }
        EditWriter {
            tx,
            rx,
            pending: 0,
            rows,
        }
    }

    /// The rows the window shows now (a view loaded): the labels of the updates that follow
    /// are made for them.
    pub fn set_rows(&self, row_ids: Arc<Vec<ItemId>>) {
        if let Ok(mut rows) = self.rows.lock() {
            *rows = row_ids;
        }
    }

    pub fn send(&mut self, request: EditRequest) {
        if self.tx.send(request).is_ok() {
            self.pending += 1;
        }
    }

    /// Edits asked for and not yet committed.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// What the writer finished since the last call.
    pub fn poll(&mut self) -> Vec<EditDone> {
        let mut out = Vec::new();
        loop {
            match self.rx.try_recv() {
                Ok(d) => {
                    self.pending = self.pending.saturating_sub(1);
                    out.push(d);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    if self.pending > 0 {
                        self.pending = 0;
                        out.push(EditDone {
                            result: Err(anyhow::anyhow!("the edit writer stopped")),
                            state: None,
                        });
                    }
                    break;
                }
            }
        }
        out
    }
}

fn apply(catalog: &mut Catalog, request: EditRequest) -> Result<String, CatalogError> {
    match request {
        EditRequest::Apply(edits) => {
            let what = describe(&edits);
            catalog
                .apply(edits)
                .map(|op| format!("{what} (operation {op})"))
        }
        EditRequest::KeepBest { order, only } => {
            let edits = keep_best_edits(catalog, &order, only.as_deref())?;
            if edits.is_empty() {
                return Ok("nothing to reject: the other duplicates are rejected already".into());
            }
            let n = edits.len();
            catalog
                .apply(edits)
                .map(|op| format!("kept the best duplicates, rejected {n} (operation {op})"))
        }
        EditRequest::Decide { items, decision } => {
            let n = items.len();
            catalog.set_decisions(&items, decision).map(|op| {
                format!(
                    "{} {n} file{} (operation {op})",
                    decision.as_str(),
                    if n == 1 { "" } else { "s" }
                )
            })
        }
        EditRequest::Tags { item, tags } => {
            let text = tags.join(", ");
            catalog
                .set_tags(item, tags)
                .map(|op| format!("tags [{text}] (operation {op})"))
        }
        EditRequest::Note { item, note } => catalog
            .set_note(item, Some(note))
            .map(|op| format!("note (operation {op})")),
        EditRequest::Label { item, label } => {
            catalog
                .set_label(item, label.as_deref())
                .map(|op| match label {
                    Some(l) => format!("label {l} (operation {op})"),
                    None => format!("label removed (operation {op})"),
                })
        }
        EditRequest::Undo => catalog.undo().map(|op| {
            op.map_or("nothing to undo".into(), |op| {
                format!("undid operation {op}")
            })
        }),
        EditRequest::Redo => catalog.redo().map(|op| {
            op.map_or("nothing to redo".into(), |op| {
                format!("redid operation {op}")
            })
        }),
    }
}

fn describe(edits: &[Edit]) -> String {
    match edits {
        [Edit::AddClip { clip }] => format!(
            "clip added: frames {}..{} ({:.3}-{:.3} s)",
            clip.start_frame.unwrap_or_default(),
            clip.end_frame.unwrap_or_default(),
            clip.start_secs,
            clip.end_secs
        ),
        [Edit::RemoveClip { .. }] => "clip removed".into(),
        _ => format!("{} edits", edits.len()),
    }
}
