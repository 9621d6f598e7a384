//! The inspector: the selected file's metadata, flags, review, and its player with the
//! clip timeline.

use eframe::egui::{self, RichText};

use crate::gui::command::{Command, PlayerCommand, ReviewCommand};
use crate::gui::player::{Player, TimelineAction, clip_frames, timeline_ui};
use crate::gui::theme;
use crate::gui::view::{View, ViewRow};
use crate::model::{AnalysisLevel, Clip, Decision};

/// Editable state of the inspector that lives in the app between frames.
pub(super) struct Fields<'a> {
    pub(super) tags: &'a mut String,
    pub(super) note: &'a mut String,
    /// The file's label being edited.
    pub(super) file_label: &'a mut String,
    /// The label given to new clips.
    pub(super) label: &'a mut String,
    pub(super) drag: &'a mut Option<(usize, bool)>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn inspector_ui(
    ui: &mut egui::Ui,
    view: &View,
    row: &ViewRow,
    decision: Decision,
    player: Option<&Player>,
    clips: &[Clip],
    fields: Fields,
    commands: &mut Vec<Command>,
) {
    ui.heading("Inspector");
    ui.label(RichText::new(&row.path).strong());
    ui.label(format!(
        "{}  {}  {}  {}",
        row.kind.as_str(),
        row.status.as_str(),
        row.codec,
        row.resolution()
    ));
    ui.label(format!("analysis: {}", level_text(row.level)));
    if let Some(e) = &row.error {
        ui.colored_label(theme::ERROR, e);
    }
    ui.horizontal(|ui| {
        ui.label("review:");
        ui.colored_label(theme::decision_color(decision), decision.as_str());
        for (label, d) in [
            ("Accept (A)", Decision::Accepted),
            ("Reject (R)", Decision::Rejected),
            ("Reset (U)", Decision::Unreviewed),
        ] {
            if ui.small_button(label).clicked() {
                commands.push(Command::Review(ReviewCommand::Decide(d)));
            }
        }
    });
    ui.horizontal(|ui| {
        let label = ui.label("tags:");
        let edit = ui
            .add(egui::TextEdit::singleline(fields.tags).hint_text("comma, separated"))
            .labelled_by(label.id);
        let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.small_button("Set tags").clicked() || enter {
            commands.push(Command::Review(ReviewCommand::SetTags(fields.tags.clone())));
        }
    });
    label_ui(ui, fields.file_label, &view.labels.names, commands);
    ui.horizontal(|ui| {
        let label = ui.label("note:");
        let edit = ui
            .add(egui::TextEdit::singleline(fields.note).hint_text("why, for whom"))
            .labelled_by(label.id);
        let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.small_button("Set note").clicked() || enter {
            commands.push(Command::Review(ReviewCommand::SetNote(fields.note.clone())));
        }
    });
    if let Some(p) = player {
        ui.separator();
        player_ui(ui, p, clips, fields.label, fields.drag, commands);
    }
    ui.separator();
    egui::Grid::new("measures").striped(true).show(ui, |ui| {
        for (k, v) in &row.measures {
            ui.label(k.title());
            if row.level == AnalysisLevel::Triage && k.estimated_by_triage() {
                ui.label(format!("{} (triage estimate)", k.format(*v)))
                    .on_hover_text(
                        "estimated from the frames the triage decoded; the deep pass measures it",
                    );
            } else {
                ui.label(k.format(*v));
            }
            ui.end_row();
        }
    });
    ui.separator();
    for (code, severity, reason) in &row.flags {
        ui.colored_label(theme::severity_color(*severity), code);
        ui.label(reason);
    }
    ui.separator();
    ui.label(RichText::new(view.source(row).location().display().to_string()).small());
}

/// How many labels in use are offered while the label is typed.
const SUGGESTIONS: usize = 8;

/// The file's label: a text field, and while it has focus the labels in use that hold what
/// is typed (any case), a click on one sets it.
fn label_ui(ui: &mut egui::Ui, text: &mut String, names: &[String], commands: &mut Vec<Command>) {
    let mut focused = false;
    ui.horizontal(|ui| {
        let label = ui.label("label:");
        let edit = ui
            .add(
                egui::TextEdit::singleline(text)
                    .hint_text("class")
                    .desired_width(160.0),
            )
            .labelled_by(label.id);
        focused = edit.has_focus();
        let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.small_button("Set label").clicked() || enter {
            commands.push(Command::Review(ReviewCommand::SetLabel(text.clone())));
        }
    });
    let typed = text.trim().to_lowercase();
    let id = ui.scope_id().with("label suggestions");
    // Kept open a moment after the field loses focus: the click on a suggestion takes it.
    let open = ui.ctx().animate_bool_with_time(id, focused, 0.3) > 0.0;
    if !open || names.is_empty() {
        return;
    }
    let matching: Vec<&String> = names
        .iter()
        .filter(|n| n.to_lowercase().contains(&typed) && n.as_str() != text.trim())
        .take(SUGGESTIONS)
        .collect();
    if matching.is_empty() {
        return;
    }
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("labels in use:").small());
        for name in matching {
            if ui.small_button(name.as_str()).clicked() {
                *text = name.clone();
                commands.push(Command::Review(ReviewCommand::SetLabel(name.clone())));
            }
        }
    });
}

/// The player, its timeline and the clips of the video.
pub(super) fn player_ui(
    ui: &mut egui::Ui,
    player: &Player,
    clips: &[Clip],
    label: &mut String,
    drag: &mut Option<(usize, bool)>,
    commands: &mut Vec<Command>,
) {
    player.picture_ui(ui);
    ui.horizontal(|ui| {
        let play = if player.speed == 0.0 {
            "Play (Space)"
        } else {
            "Pause (Space)"
        };
        if ui.button(play).clicked() {
            commands.push(Command::Player(PlayerCommand::PlayPause));
        }
        if ui.button("< frame").clicked() {
            commands.push(Command::Player(PlayerCommand::Step(-1)));
        }
        if ui.button("frame >").clicked() {
            commands.push(Command::Player(PlayerCommand::Step(1)));
        }
        if ui.button("In (I)").clicked() {
            commands.push(Command::Player(PlayerCommand::MarkIn));
        }
        if ui.button("Out (O)").clicked() {
            commands.push(Command::Player(PlayerCommand::MarkOut));
        }
    });
    ui.label(RichText::new(player.position_text()).monospace());
    if let Some(action) = timeline_ui(ui, player, clips, drag) {
        commands.push(match action {
            TimelineAction::Seek(f) => Command::Player(PlayerCommand::SeekFrame(f)),
            TimelineAction::Reshape { clip, start, end } => {
                Command::Review(ReviewCommand::ReshapeClip { clip, start, end })
            }
        });
    }
    if let Some(m) = player.mark_in {
        ui.colored_label(
            theme::ACCEPTED,
            format!("in at frame {m}: step, then O to close the clip"),
        );
    }
    ui.horizontal(|ui| {
        let text = ui.label("label for new clips:");
        ui.add(egui::TextEdit::singleline(label).desired_width(120.0))
            .labelled_by(text.id);
        if ui.small_button("Split at cuts").clicked() {
            commands.push(Command::Review(ReviewCommand::SplitAtCuts));
        }
        if ui.small_button("Propose from motion").clicked() {
            commands.push(Command::Review(ReviewCommand::ProposeClips));
        }
    });
    ui.label(RichText::new(format!("Clips ({})", clips.len())).strong());
    for clip in clips {
        ui.horizontal(|ui| {
            let frames = match (clip.start_frame, clip.end_frame) {
                (Some(s), Some(e)) => format!("frames {s}..{e}"),
                _ => String::new(),
            };
            ui.colored_label(theme::decision_color(clip.decision), clip.decision.as_str());
            ui.label(format!(
                "{:.3}-{:.3} s  {frames}  {}",
                clip.start_secs,
                clip.end_secs,
                clip.label.as_deref().unwrap_or(clip.origin.as_str())
            ));
            if ui.small_button("go").clicked()
                && let Some(t) = &player.timeline
            {
                commands.push(Command::Player(PlayerCommand::SeekFrame(
                    clip_frames(clip, t).0,
                )));
            }
            let text = label.trim();
            if !text.is_empty()
                && clip.label.as_deref() != Some(text)
                && ui
                    .small_button("label it")
                    .on_hover_text(format!("give this clip the label {text:?}"))
                    .clicked()
            {
                commands.push(Command::Review(ReviewCommand::LabelClip {
                    clip: clip.id,
                    label: text.to_string(),
                }));
            }
            if ui.small_button("remove").clicked() {
                commands.push(Command::Review(ReviewCommand::RemoveClip(clip.clone())));
            }
        });
    }
}

/// What the inspector says of a file's analysis level.
fn level_text(level: AnalysisLevel) -> &'static str {
    match level {
        AnalysisLevel::None => "none (headers only)",
        AnalysisLevel::Triage => "triage (packets read, keyframes and a few GOPs decoded)",
        AnalysisLevel::Deep => "deep (every frame decoded)",
    }
}
