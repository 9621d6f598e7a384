//! The window's review actions: decisions on files and clips, clips from the player's
//! marks, scene cuts and motion, all sent to the journal writer.

use super::app::App;
use super::edits::EditRequest;
use super::player::{Player, Video, clip_frames};
use crate::analysis::proposals::{ProposalOptions, motion_ranges, shot_ranges};
use crate::model::{
    AnalysisLevel, ClipOrigin, Curves, Decision, Edit, FrameTimeline, ItemStatus, MediaKind,
};

impl App {
    pub(super) fn send_edit(&mut self, request: EditRequest) {
        if let Some(w) = &mut self.edits {
            w.send(request);
        }
    }

    /// Open the player on the selected file when it is a playable video.
    pub(super) fn open_player(&mut self) {
        let Some(view) = &self.view else {
            self.player = None;
            return;
        };
        let row = self.selection.selected.and_then(|i| view.rows.get(i));
        let playable = row.filter(|r| r.kind == MediaKind::Video && r.status == ItemStatus::Ok);
        match playable {
            Some(r) if self.player.as_ref().is_some_and(|p| p.item == r.id) => {}
            Some(r) => {
                // Videos carry rotations only (no mirror).
                let (quarter_turns, _) = crate::model::orientation_turns(r.orientation);
                let video = Video {
                    source: view.source(r),
                    read: crate::model::ReadAs {
                        stream: crate::model::StreamChoice::recorded(r.stream_index),
                        color_matrix_guess: view.config.video.color_matrix_guess,
                    },
                    item: r.id,
                    quarter_turns,
                };
                self.player = Some(Player::open(&self.ctx, &view.project, video));
            }
            None => self.player = None,
        }
    }

    /// Clips `[a, b)` (frame indices) of the open video, labelled with the label field.
    pub(super) fn add_clips(&mut self, ranges: &[(usize, usize)], origin: ClipOrigin) {
        let Some(p) = &self.player else {
            return;
        };
        let Some(t) = &p.timeline else {
            return;
        };
        let label = Some(self.drafts.clip_label.trim().to_string()).filter(|l| !l.is_empty());
        let edits: Vec<Edit> = ranges
            .iter()
            .filter(|(a, b)| b > a)
            .map(|&(a, b)| Edit::AddClip {
                clip: t.clip(p.item, a, b.min(t.len()), label.clone(), origin),
            })
            .collect();
        if edits.is_empty() {
            self.message = Some("no clips to add".into());
        } else {
            self.send_edit(EditRequest::Apply(edits));
        }
    }

    pub(super) fn split_at_cuts(&mut self) {
        let ranges = self.ranges_of_deep_curves(|t, c| {
            shot_ranges(c.cuts.iter().map(|c| c.frame as usize), t.len())
        });
        if let Some(ranges) = ranges {
            self.add_clips(&ranges, ClipOrigin::Cuts);
        }
    }

    pub(super) fn propose_clips(&mut self) {
        let ranges = self
            .ranges_of_deep_curves(|t, c| motion_ranges(t, &c.motion, &ProposalOptions::default()));
        if let Some(ranges) = ranges {
            self.add_clips(&ranges, ClipOrigin::Auto);
        }
    }

    /// `ranges` of the player's video from its timeline and curves, where it was analysed
    /// deeply (a triage's curves hold keyframe hashes only: no cuts, no motion); else the
    /// message says what to run.
    fn ranges_of_deep_curves(
        &mut self,
        ranges: impl FnOnce(&FrameTimeline, &Curves) -> Vec<(usize, usize)>,
    ) -> Option<Vec<(usize, usize)>> {
        let p = self.player.as_ref()?;
        let deep = self.view.as_ref().is_some_and(|v| {
            v.rows
                .iter()
                .any(|r| r.id == p.item && r.level == AnalysisLevel::Deep)
        });
        match (&p.timeline, &p.curves) {
            (Some(t), Some(c)) if deep => Some(ranges(t, c)),
            _ => {
                self.message =
                    Some("no deep analysis for this video yet (framecull analyze)".into());
                None
            }
        }
    }

    pub(super) fn mark_out(&mut self) {
        let Some(p) = &mut self.player else {
            return;
        };
        if p.timeline.is_none() {
            return;
        }
        let from = p.mark_in.take().unwrap_or(p.current);
        let (s, e) = (from.min(p.current), from.max(p.current) + 1);
        self.add_clips(&[(s, e)], ClipOrigin::Manual);
    }

    pub(super) fn decide(&mut self, decision: Decision) {
        let Some(view) = &self.view else {
            return;
        };
        if self.selection.picked.len() > 1 {
            let items = self
                .selection
                .picked
                .iter()
                .map(|&i| view.rows[i].id)
                .collect();
            self.send_edit(EditRequest::Decide { items, decision });
            return;
        }
        let Some(row) = self.selection.selected.and_then(|i| view.rows.get(i)) else {
            return;
        };
        // The clip under the playhead, when there is one.
        if let Some(p) = &self.player
            && let Some(t) = &p.timeline
            && let Some(clip) = view.review.clips.get(&row.id).and_then(|clips| {
                clips.iter().find(|c| {
                    let (s, e) = clip_frames(c, t);
                    (s..e).contains(&p.current)
                })
            })
        {
            let mut new = clip.clone();
            new.decision = decision;
            let edits = vec![
                Edit::RemoveClip { clip: clip.clone() },
                Edit::AddClip { clip: new },
            ];
            self.send_edit(EditRequest::Apply(edits));
            return;
        }
        let items = vec![row.id];
        self.send_edit(EditRequest::Decide { items, decision });
    }
}
