//! The window's panels, one file each. A panel draws from the app's state and pushes
//! [`Command`]s; only [`App::apply`] changes state.

mod duplicates;
mod gallery;
mod inspector;
mod keys;
pub(super) mod rule;
pub(super) mod scatter;
mod side;
mod table;
mod top_bar;

use std::time::Duration;

use eframe::egui;

use duplicates::duplicates_ui;
use gallery::gallery_ui;
use inspector::{Fields, inspector_ui};
use keys::{help_ui, shortcuts};
use rule::rule_ui;
use side::{filter_chips_ui, histograms_ui, side_ui};
use table::table_ui;
use top_bar::{start_ui, top_bar_ui};

use super::app::App;
use super::command::{Command, DialogCommand, FilterCommand, SelectionCommand};
use crate::model::ItemId;

impl App {
    /// One frame of the whole window.
    pub fn frame_ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.poll_background(&ctx);
        let mut commands = Vec::new();
        self.handle_keys(ui, &ctx, &mut commands);
        help_ui(&ctx, &mut self.help);
        if let Some(view) = &self.view {
            duplicates_ui(
                &ctx,
                view,
                &mut self.duplicates,
                &mut self.thumbs,
                &mut commands,
            );
        }
        egui::Panel::top("top").show(ui, |ui| top_bar_ui(ui, self, &mut commands));
        if self.view.is_some() {
            self.side_panel_ui(ui, &mut commands);
            self.inspector_panel_ui(ui, &mut commands);
            self.central_panel_ui(ui, &mut commands);
        } else {
            egui::CentralPanel::default().show(ui, |ui| start_ui(ui, self, &mut commands));
        }
        if self.view.is_some() {
            self.export.ui(&ctx, &self.shown.filter, &mut commands);
            self.history.ui(&ctx, &mut commands);
        }
        for c in commands {
            self.apply(c);
        }
    }

    /// Takes what the background work finished (jobs, edits, the player's frames,
    /// thumbnails), and asks for another frame soon while thumbnails or edits are pending.
    fn poll_background(&mut self, ctx: &egui::Context) {
        self.poll(ctx);
        self.poll_edits();
        if let Some(p) = &mut self.player {
            p.update(ctx);
        }
        self.thumbs.poll(ctx);
        if self.thumbs.waiting() || self.pending_edits() > 0 {
            ctx.request_repaint_after(Duration::from_millis(30));
        }
    }

    /// The keyboard: the shortcuts while a project is open (taking the focus from egui's
    /// widgets first), and F1 for the help window.
    fn handle_keys(&self, ui: &egui::Ui, ctx: &egui::Context, commands: &mut Vec<Command>) {
        if self.view.is_some() && !ctx.text_edit_focused() {
            // Shortcuts win over egui's focus moves (arrows) and clicks (Space) on buttons;
            // Tab and Enter keep them, so every control is reachable by keyboard.
            let key = ui.input(|i| {
                i.events.iter().any(|e| {
                    matches!(e, egui::Event::Key { pressed: true, key, .. }
                        if !matches!(key, egui::Key::Tab | egui::Key::Enter | egui::Key::Escape))
                })
            });
            if key && let Some(id) = ctx.memory(|m| m.focused()) {
                ctx.memory_mut(|m| m.surrender_focus(id));
            }
            shortcuts(ui, commands);
        }
        if ui.input(|i| i.key_pressed(egui::Key::F1)) {
            commands.push(Command::Dialog(DialogCommand::ToggleHelp));
        }
    }

    /// The side panel on the left: the summary cards, and the flags, decisions and labels
    /// to filter on.
    fn side_panel_ui(&self, ui: &mut egui::Ui, commands: &mut Vec<Command>) {
        let Some(view) = &self.view else {
            return;
        };
        let shown = self.shown.filtered.len();
        let picked = self.selection.picked.len();
        egui::Panel::left("side")
            .resizable(true)
            .default_size(260.0)
            .show(ui, |ui| {
                let labels = &self.shown.label_subsets;
                side_ui(
                    ui,
                    view,
                    shown,
                    picked,
                    &self.shown.filter,
                    labels,
                    commands,
                )
            });
    }

    /// The inspector of the selected file in the right panel (nothing when none is
    /// selected), its text fields filled again when the selection moved to another file.
    fn inspector_panel_ui(&mut self, ui: &mut egui::Ui, commands: &mut Vec<Command>) {
        let Some(view) = &self.view else {
            return;
        };
        let Some(sel) = self.selection.selected.and_then(|s| view.rows.get(s)) else {
            return;
        };
        let clips = view
            .review
            .clips
            .get(&sel.id)
            .map_or(&[][..], Vec::as_slice);
        let decision = view.review.decision_of(sel.id);
        let player = self.player.as_ref();
        let drag = &mut self.drafts.clip_drag;
        if self.drafts.tags_text.0 != Some(sel.id) {
            let tags = view.review.tags.get(&sel.id).cloned().unwrap_or_default();
            let note = view.review.notes.get(&sel.id).cloned().unwrap_or_default();
            self.drafts.tags_text = (Some(sel.id), tags.join(", "), note);
            self.drafts.label_text = view.review.labels.get(&sel.id).cloned().unwrap_or_default();
        }
        let fields = Fields {
            tags: &mut self.drafts.tags_text.1,
            note: &mut self.drafts.tags_text.2,
            file_label: &mut self.drafts.label_text,
            label: &mut self.drafts.clip_label,
            drag,
        };
        egui::Panel::right("inspector")
            .resizable(true)
            .default_size(if player.is_some() { 520.0 } else { 300.0 })
            .show(ui, |ui| {
                egui::ScrollArea::vertical()
                    .id_salt("inspector")
                    .show(ui, |ui| {
                        inspector_ui(ui, view, sel, decision, player, clips, fields, commands);
                    });
            });
    }

    /// The central panel: the filter's chips and the flag's rule, the histograms with the
    /// scatter, then the table or the gallery of the files shown.
    fn central_panel_ui(&mut self, ui: &mut egui::Ui, commands: &mut Vec<Command>) {
        let Some(view) = &self.view else {
            return;
        };
        egui::CentralPanel::default().show(ui, |ui| {
            filter_chips_ui(ui, &self.shown.filter, commands);
            if let Some(code) = &self.shown.filter.flag {
                let draft = self.drafts.settings.as_ref().unwrap_or(&view.config);
                let (preview, log) = (&mut self.rule_preview, self.state.log_counts);
                rule_ui(ui, view, code, draft, preview, log, commands);
            }
            let axes = self.state.scatter_axes();
            let (filtered, generation) = (&self.shown.filtered, self.shown.generation);
            let ranges = &self.shown.filter.ranges;
            let scatter = &mut self.scatter;
            histograms_ui(
                ui,
                view,
                &self.shown.subsets,
                &self.shown.filter,
                self.state.log_counts,
                &mut self.shown.brushing,
                commands,
                |ui, commands| {
                    scatter::scatter_ui(
                        ui, view, axes, filtered, generation, ranges, scatter, commands,
                    );
                },
            );
            ui.separator();
            view_switch_ui(ui, self.state.gallery, &self.shown.filter.search, commands);
            if self.state.gallery {
                gallery_ui(
                    ui,
                    view,
                    &self.shown.filtered,
                    &self.selection.picked,
                    &mut self.thumbs,
                    commands,
                );
            } else {
                let scroll_to = self
                    .selection
                    .scroll_to_selected
                    .take()
                    .and(self.selection.selected);
                table_ui(
                    ui,
                    view,
                    &self.shown.filtered,
                    self.selection.selected,
                    &self.selection.picked,
                    scroll_to,
                    self.state.sort,
                    commands,
                );
            }
        });
    }
}

/// The row over the files: Table or Gallery, and the search of their paths.
fn view_switch_ui(ui: &mut egui::Ui, gallery: bool, search: &str, commands: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        if ui.selectable_label(!gallery, "Table").clicked() {
            commands.push(Command::Dialog(DialogCommand::ShowGallery(false)));
        }
        if ui.selectable_label(gallery, "Gallery").clicked() {
            commands.push(Command::Dialog(DialogCommand::ShowGallery(true)));
        }
        ui.separator();
        let label = ui.label("path contains:");
        let mut text = search.to_owned();
        let edit = ui
            .add(egui::TextEdit::singleline(&mut text).desired_width(220.0))
            .labelled_by(label.id);
        if edit.changed() {
            commands.push(Command::Filter(FilterCommand::Search(text)));
        }
    });
}

/// What a click on a file does: select it, or with Ctrl add it (or take it out), or with
/// Shift select the range from the selected file.
pub(super) fn click_command(ctx: &egui::Context, item: ItemId) -> Command {
    let modifiers = ctx.input(|i| i.modifiers);
    if modifiers.command {
        Command::Selection(SelectionCommand::TogglePick(item))
    } else if modifiers.shift {
        Command::Selection(SelectionCommand::PickRange(item))
    } else {
        Command::Selection(SelectionCommand::Select(Some(item)))
    }
}
