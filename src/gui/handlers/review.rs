//! Commands on review edits.

use crate::gui::app::App;
use crate::gui::command::ReviewCommand;
use crate::gui::edits::EditRequest;
use crate::model::Edit;

impl App {
    pub(in crate::gui) fn on_review(&mut self, command: ReviewCommand) {
        match command {
            ReviewCommand::KeepBest(group) => {
                if let Some(v) = &self.view {
                    let order = v.best_order.clone();
                    self.send_edit(EditRequest::KeepBest {
                        order,
                        only: group.map(|g| vec![g]),
                    });
                }
            }
            ReviewCommand::Decide(decision) => self.decide(decision),
            ReviewCommand::DecideShown(decision) => {
                if let Some(v) = &self.view {
                    let items = self.shown.filtered.iter().map(|&i| v.rows[i].id).collect();
                    self.send_edit(EditRequest::Decide { items, decision });
                }
            }
            ReviewCommand::RemoveClip(clip) => {
                self.send_edit(EditRequest::Apply(vec![Edit::RemoveClip { clip }]))
            }
            ReviewCommand::LabelClip { clip, label } => {
                let before = self.view.as_ref().and_then(|v| {
                    v.review
                        .clips
                        .values()
                        .flatten()
                        .find(|c| c.id == clip)
                        .map(|c| c.label.clone())
                });
                if let Some(before) = before {
                    let after = crate::model::label_of(&label);
                    if before != after {
                        self.send_edit(EditRequest::Apply(vec![Edit::ClipLabel {
                            clip,
                            before,
                            after,
                        }]));
                    }
                }
            }
            ReviewCommand::ReshapeClip { clip, start, end } => {
                if let Some(t) = self.player.as_ref().and_then(|p| p.timeline.as_ref()) {
                    let mut new = t.clip(clip.item_id, start, end, clip.label.clone(), clip.origin);
                    new.decision = clip.decision;
                    self.send_edit(EditRequest::Apply(vec![
                        Edit::RemoveClip { clip },
                        Edit::AddClip { clip: new },
                    ]));
                }
            }
            ReviewCommand::SplitAtCuts => self.split_at_cuts(),
            ReviewCommand::ProposeClips => self.propose_clips(),
            ReviewCommand::SetLabel(text) => {
                if let (Some(item), Some(view)) = (self.selected_row().map(|r| r.id), &self.view) {
                    let label = crate::model::label_of(&text);
                    // The same label again is no operation (it would clear what can be redone).
                    if view.review.labels.get(&item) != label.as_ref() {
                        self.send_edit(EditRequest::Label { item, label });
                    }
                }
            }
            ReviewCommand::SetNote(note) => {
                if let Some(item) = self.selected_row().map(|r| r.id) {
                    self.send_edit(EditRequest::Note { item, note });
                }
            }
            ReviewCommand::SetTags(text) => {
                if let Some(item) = self.selected_row().map(|r| r.id) {
                    let mut tags: Vec<String> = text
                        .split(',')
                        .map(|t| t.trim().to_string())
                        .filter(|t| !t.is_empty())
                        .collect();
                    tags.sort();
                    tags.dedup();
                    self.send_edit(EditRequest::Tags { item, tags });
                }
            }
            ReviewCommand::Undo => {
                self.drafts.refill = true;
                self.send_edit(EditRequest::Undo);
            }
            ReviewCommand::Redo => {
                self.drafts.refill = true;
                self.send_edit(EditRequest::Redo);
            }
        }
    }
}
