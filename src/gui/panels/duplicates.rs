//! The duplicate groups window: each group's members side by side with what tells them apart
//! (size, resolution, duration, decision), the member "keep the best" would keep, and one
//! click to keep it and reject the rest (journaled: Undo restores).

use eframe::egui::{self, RichText};

use super::gallery::paint_thumb;
use crate::gui::command::{Command, ReviewCommand};
use crate::gui::theme;
use crate::gui::thumbs::Thumbnails;
use crate::gui::view::View;
use crate::model::{Decision, Measure, human_bit_rate};

/// Size of a member's thumbnail.
const THUMB: egui::Vec2 = egui::vec2(64.0, 48.0);

pub(super) fn duplicates_ui(
    ctx: &egui::Context,
    view: &View,
    open: &mut bool,
    thumbs: &mut Thumbnails,
    commands: &mut Vec<Command>,
) {
    egui::Window::new("Duplicate groups")
        .open(open)
        .default_width(720.0)
        .default_height(480.0)
        .show(ctx, |ui| {
            if view.dup_groups.is_empty() {
                ui.label("No duplicate groups (deep analysis finds them: framecull analyze).");
                return;
            }
            let order: Vec<&str> = view.best_order.iter().map(|b| b.label()).collect();
            ui.horizontal(|ui| {
                ui.label(format!(
                    "{}; the best is the largest by {}",
                    crate::model::count(view.dup_groups.len() as u64, "group"),
                    order.join(", then ")
                ));
                if ui.button("Keep the best in every group").clicked() {
                    commands.push(Command::Review(ReviewCommand::KeepBest(None)));
                }
            });
            ui.separator();
            egui::ScrollArea::vertical().show(ui, |ui| {
                for (n, g) in view.dup_groups.iter().enumerate() {
                    ui.horizontal(|ui| {
                        let kind = if g.exact { "exact" } else { "near" };
                        let title = format!("group {} ({kind})", n + 1);
                        ui.label(RichText::new(title).strong())
                            .on_hover_text(format!("framecull dups --group {}", g.group));
                        if ui.button("Keep best, reject the rest").clicked() {
                            commands.push(Command::Review(ReviewCommand::KeepBest(Some(g.group))));
                        }
                    });
                    egui::Grid::new(("dup-group", g.group))
                        .striped(true)
                        .show(ui, |ui| {
                            for id in &g.members {
                                let Some(row) = view.row_of.get(id).map(|&i| &view.rows[i]) else {
                                    continue;
                                };
                                let measure = |m: Measure| {
                                    row.measures.get(&m).map_or("-".into(), |v| m.format(*v))
                                };
                                if *id == g.best {
                                    ui.colored_label(theme::ACCEPTED, "keep");
                                } else {
                                    ui.label("");
                                }
                                let (rect, response) =
                                    ui.allocate_exact_size(THUMB, egui::Sense::hover());
                                let painter = ui.painter_at(rect);
                                painter.rect_filled(rect, 3.0, theme::CARD_BG);
                                paint_thumb(&painter, &response, thumbs, view, row, rect);
                                ui.label(&row.path);
                                ui.label(measure(Measure::SizeBytes));
                                ui.label(row.resolution());
                                ui.label(measure(Measure::DurationSecs));
                                ui.label(row.bit_rate.map_or("-".into(), human_bit_rate));
                                let decision = view.review.decision_of(*id);
                                let color = match decision {
                                    Decision::Accepted => theme::ACCEPTED,
                                    Decision::Rejected => theme::ERROR,
                                    Decision::Unreviewed => theme::INFO,
                                };
                                ui.colored_label(color, decision.as_str());
                                ui.end_row();
                            }
                        });
                    ui.add_space(theme::SPACING);
                }
            });
        });
}
