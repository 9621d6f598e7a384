//! The gallery: thumbnails of the shown files, loaded lazily.

use eframe::egui::{self, Sense};

use super::click_command;
use crate::gui::command::Command;
use crate::gui::theme;
use crate::gui::thumbs::{THUMB_SIZE, Thumb, Thumbnails};
use crate::gui::view::View;
use crate::model::{ItemStatus, MediaKind};

pub(super) fn gallery_ui(
    ui: &mut egui::Ui,
    view: &View,
    filtered: &[usize],
    picked: &std::collections::BTreeSet<usize>,
    thumbs: &mut Thumbnails,
    commands: &mut Vec<Command>,
) {
    let tile = egui::vec2(THUMB_SIZE as f32, THUMB_SIZE as f32 * 0.75 + 20.0);
    let per_row = ((ui.available_width() / (tile.x + theme::SPACING)).floor() as usize).max(1);
    let rows = filtered.len().div_ceil(per_row);
    egui::ScrollArea::vertical().id_salt("gallery").show_rows(
        ui,
        tile.y + theme::SPACING,
        rows,
        |ui, range| {
            for r in range {
                ui.horizontal(|ui| {
                    for &index in filtered.iter().skip(r * per_row).take(per_row) {
                        let row = &view.rows[index];
                        let (rect, response) = ui.allocate_exact_size(tile, Sense::click());
                        let image_rect =
                            egui::Rect::from_min_size(rect.min, egui::vec2(tile.x, tile.y - 20.0));
                        let painter = ui.painter_at(rect);
                        painter.rect_filled(image_rect, 4.0, theme::CARD_BG);
                        // Hovering a video scrubs through frames spread over it.
                        let scrub = response
                            .hover_pos()
                            .filter(|_| {
                                row.kind == MediaKind::Video && row.status == ItemStatus::Ok
                            })
                            .and_then(|pos| {
                                let frames = thumbs.scrub(
                                    &row.key,
                                    &view.source(row),
                                    &view.project,
                                    row.orientation,
                                );
                                let t = ((pos.x - rect.left()) / rect.width()).clamp(0.0, 0.999);
                                let i = (t * frames.len() as f32) as usize;
                                frames.get(i).map(|f| (f.clone(), t))
                            });
                        if let Some((texture, t)) = &scrub {
                            paint_fitted(&painter, texture, image_rect);
                            let bar = egui::Rect::from_min_size(
                                egui::pos2(image_rect.left(), image_rect.bottom() - 3.0),
                                egui::vec2(image_rect.width() * t, 3.0),
                            );
                            painter.rect_filled(bar, 0.0, theme::ACCENT);
                        } else {
                            paint_thumb(&painter, &response, thumbs, view, row, image_rect);
                        }
                        if let Some(severity) = row.worst() {
                            let dot = egui::pos2(image_rect.right() - 8.0, image_rect.top() + 8.0);
                            painter.circle_filled(dot, 5.0, theme::severity_color(severity));
                        }
                        if picked.contains(&index) {
                            painter.rect_stroke(
                                image_rect,
                                4.0,
                                egui::Stroke::new(2.0, theme::ACCENT),
                                egui::StrokeKind::Inside,
                            );
                        }
                        let name = row.path.rsplit('/').next().unwrap_or(&row.path);
                        painter.text(
                            egui::pos2(rect.left() + 2.0, rect.bottom() - 10.0),
                            egui::Align2::LEFT_CENTER,
                            name,
                            egui::FontId::proportional(11.0),
                            ui.visuals().text_color(),
                        );
                        // The label on the picture's corner, as a tag on a print.
                        let labels: Vec<&str> = view.labels.of(index).collect();
                        if !labels.is_empty() {
                            let text = painter.layout_no_wrap(
                                labels.join(", "),
                                egui::FontId::proportional(11.0),
                                egui::Color32::WHITE,
                            );
                            let at = image_rect.left_top() + egui::vec2(4.0, 4.0);
                            let back = egui::Rect::from_min_size(at, text.size())
                                .expand(2.0)
                                .intersect(image_rect);
                            painter.rect_filled(back, 3.0, theme::LABEL_BG);
                            painter.galley(at, text, egui::Color32::WHITE);
                        }
                        if response.clicked() {
                            commands.push(click_command(ui.ctx(), row.id));
                        }
                    }
                });
            }
        },
    );
}

/// A file's thumbnail fitted into `rect` (kept to its aspect ratio), "cannot decode" with the
/// reason on hover when it failed, nothing while it loads.
pub(super) fn paint_thumb(
    painter: &egui::Painter,
    response: &egui::Response,
    thumbs: &mut Thumbnails,
    view: &View,
    row: &crate::gui::view::ViewRow,
    rect: egui::Rect,
) {
    let file = view.source(row);
    match thumbs.get(&row.key, &file, &view.project, row.orientation) {
        Thumb::Ready(texture) => paint_fitted(painter, texture, rect),
        Thumb::Failed(why) => {
            painter.text(
                rect.center(),
                egui::Align2::CENTER_CENTER,
                "cannot decode",
                egui::FontId::proportional(12.0),
                theme::ERROR,
            );
            response.clone().on_hover_text(why.as_str());
        }
        Thumb::Pending => {}
    }
}

fn paint_fitted(painter: &egui::Painter, texture: &egui::TextureHandle, rect: egui::Rect) {
    let size = texture.size_vec2();
    let scale = (rect.width() / size.x).min(rect.height() / size.y);
    let fitted = egui::Rect::from_center_size(rect.center(), size * scale);
    let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
    painter.image(texture.id(), fitted, uv, egui::Color32::WHITE);
}
