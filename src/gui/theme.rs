//! Colours and spacing: the one place the look is decided.

use eframe::egui::{self, Color32};

pub const ACCENT: Color32 = Color32::from_rgb(0x4C, 0x9A, 0xFF);
pub const BAR: Color32 = Color32::from_rgb(0x5A, 0x6B, 0x82);
pub const BAR_SELECTED: Color32 = ACCENT;
/// ACCENT at 19% opacity (premultiplied).
pub const BRUSH: Color32 = Color32::from_rgba_premultiplied(14, 29, 48, 48);
pub const ACCEPTED: Color32 = Color32::from_rgb(0x3F, 0xB9, 0x50);
pub const ERROR: Color32 = Color32::from_rgb(0xE5, 0x48, 0x4D);
pub const WARNING: Color32 = Color32::from_rgb(0xF0, 0xA2, 0x02);
pub const INFO: Color32 = Color32::from_rgb(0x8A, 0x94, 0xA6);
/// Axis labels and tick values.
pub const AXIS: Color32 = Color32::from_rgb(0xA8, 0xB1, 0xC0);
pub const CARD_BG: Color32 = Color32::from_rgb(0x20, 0x24, 0x2B);
/// Behind a label written over a picture.
pub const LABEL_BG: Color32 = Color32::from_rgba_premultiplied(12, 14, 18, 200);
/// The label chart's bars: every file of a label, and those the filter shows.
pub const LABEL_BAR: Color32 = Color32::from_rgb(0x34, 0x3C, 0x48);
pub const LABEL_BAR_SHOWN: Color32 = Color32::from_rgb(0x2B, 0x55, 0x8C);
pub const SPACING: f32 = 8.0;
pub const HISTOGRAM_SIZE: egui::Vec2 = egui::vec2(260.0, 110.0);

pub fn apply(ctx: &egui::Context) {
    ctx.set_visuals(egui::Visuals::dark());
    ctx.global_style_mut(|style| {
        style.spacing.item_spacing = egui::vec2(SPACING, SPACING * 0.75);
    });
}

pub fn severity_color(severity: crate::model::Severity) -> Color32 {
    match severity {
        crate::model::Severity::Error => ERROR,
        crate::model::Severity::Warning => WARNING,
        crate::model::Severity::Info => INFO,
    }
}

pub fn decision_color(decision: crate::model::Decision) -> Color32 {
    match decision {
        crate::model::Decision::Accepted => ACCEPTED,
        crate::model::Decision::Rejected => ERROR,
        crate::model::Decision::Unreviewed => INFO,
    }
}
