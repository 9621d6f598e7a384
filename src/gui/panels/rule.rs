//! The selected flag explained: what it means, the settings of `framecull.toml` that decide
//! it, each compared measure's histogram with the saved threshold and the edited one, and how
//! many files the edited settings would flag, before they are saved.

use eframe::egui::{self, RichText, Sense};

use super::side::{Line, draw_bars, draw_lines, files};
use crate::analysis::flags::Config;
use crate::analysis::histogram::Histogram;
use crate::analysis::rules::{self, Setting};
use crate::gui::command::{Command, FilterCommand};
use crate::gui::theme;
use crate::gui::view::{Caught, View};

/// The files a flag's edited thresholds would catch, kept while the flag, the edited settings
/// and the view are the same (counting them visits every file).
#[derive(Default)]
pub struct Preview {
    made_for: Option<(String, Config, usize, usize)>,
    caught: Option<Caught>,
}

impl Preview {
    fn of(&mut self, view: &View, code: &str, draft: &Config) -> Option<&Caught> {
        let key = (
            code.to_string(),
            draft.clone(),
            view.rows.as_ptr() as usize,
            view.rows.len(),
        );
        if self.made_for.as_ref() != Some(&key) {
            self.caught = view.caught(code, draft);
            self.made_for = Some(key);
        }
        self.caught.as_ref()
    }
}

pub(super) fn rule_ui(
    ui: &mut egui::Ui,
    view: &View,
    code: &str,
    draft: &Config,
    preview: &mut Preview,
    log_counts: bool,
    commands: &mut Vec<Command>,
) {
    let (severity, now) = view
        .flag_counts
        .iter()
        .find(|f| f.0 == code)
        .map_or((crate::model::Severity::Info, 0), |f| (f.1, f.2));
    egui::Frame::new()
        .stroke(egui::Stroke::new(1.0, theme::BAR))
        .inner_margin(theme::SPACING)
        .corner_radius(6.0)
        .show(ui, |ui| {
            ui.horizontal_wrapped(|ui| {
                ui.label(
                    RichText::new(code)
                        .strong()
                        .color(theme::severity_color(severity)),
                );
                let text = rules::describe(code)
                    .unwrap_or_else(|| "a flag this version of framecull does not set".into());
                ui.label(text);
            });
            if let Some(e) = &view.config_error {
                ui.colored_label(theme::ERROR, format!("{e}: the defaults apply"));
            }
            let settings = rules::settings_of(code);
            if settings.is_empty() {
                ui.label(format!(
                    "Flags {}. Found by decoding or by comparing files, not by a setting.",
                    files(now as u64)
                ));
                return;
            }
            let caught = preview.of(view, code, draft);
            let changed = settings
                .iter()
                .any(|s| s.value(draft) != s.value(&view.config));
            ui.horizontal(|ui| {
                ui.label(format!("Flags {} now.", files(now as u64)));
                match caught {
                    Some(c) if changed => {
                        let delta = c.files as i64 - now as i64;
                        ui.label(
                            RichText::new(format!(
                                "With the edited settings: {} ({delta:+})",
                                files(c.files as u64)
                            ))
                            .color(theme::ACCENT)
                            .strong(),
                        );
                    }
                    None if changed => {
                        ui.label("Saving recomputes the flags with the edited settings.");
                    }
                    _ => {}
                }
            });
            ui.horizontal(|ui| {
                for setting in &settings {
                    setting_ui(ui, view, setting, draft, caught, log_counts, commands);
                }
            });
            ui.horizontal(|ui| {
                let save = ui.add_enabled(
                    changed,
                    egui::Button::new("Save to framecull.toml and recompute flags"),
                );
                if save.clicked() {
                    commands.push(Command::Filter(FilterCommand::SaveSettings));
                }
                if ui
                    .add_enabled(changed, egui::Button::new("Reset"))
                    .clicked()
                {
                    commands.push(Command::Filter(FilterCommand::ResetSettings));
                }
            });
        });
}

/// A setting's key and its value's editor: a drag value and "Turn off" where it may be
/// off, or "Set" (from the middle of its histogram's range) where it is not set.
fn value_ui(
    ui: &mut egui::Ui,
    setting: &'static Setting,
    draft: &Config,
    histogram: Option<&Histogram>,
    commands: &mut Vec<Command>,
) {
    let key = ui.label(RichText::new(setting.key).monospace());
    match setting.value(draft) {
        Some(mut v) => {
            let speed = if setting.integer {
                1.0
            } else {
                (v.abs() * 0.01).max(0.01)
            };
            let mut edit = egui::DragValue::new(&mut v)
                .speed(speed)
                .range(0.0..=setting.max);
            if setting.integer {
                edit = edit.fixed_decimals(0);
            }
            if ui.add(edit).labelled_by(key.id).changed() {
                commands.push(Command::Filter(FilterCommand::DraftSetting {
                    key: setting.key,
                    value: Some(v),
                }));
            }
            if setting.optional && ui.small_button("Turn off").clicked() {
                commands.push(Command::Filter(FilterCommand::DraftSetting {
                    key: setting.key,
                    value: None,
                }));
            }
        }
        None => {
            ui.label("not set");
            // Start from the middle of the plotted range.
            let start = histogram
                .and_then(super::scatter::Axis::from_histogram)
                .map_or(1.0, |a| a.value(0.5) / setting.scale);
            if ui.small_button("Set").clicked() {
                commands.push(Command::Filter(FilterCommand::DraftSetting {
                    key: setting.key,
                    value: Some(start),
                }));
            }
        }
    }
}

/// One setting: its key, an editor for its value, and its measure's histogram with the saved
/// threshold (grey) and the edited one (accent), the files the edited settings catch
/// highlighted.
fn setting_ui(
    ui: &mut egui::Ui,
    view: &View,
    setting: &'static Setting,
    draft: &Config,
    caught: Option<&Caught>,
    log_counts: bool,
    commands: &mut Vec<Command>,
) {
    ui.vertical(|ui| {
        let histogram = setting.measure.and_then(|m| view.histogram_of(m));
        ui.horizontal(|ui| value_ui(ui, setting, draft, histogram, commands));
        let (Some(h), Some(axis)) = (
            histogram,
            histogram.and_then(super::scatter::Axis::from_histogram),
        ) else {
            return;
        };
        let (rect, response) = ui.allocate_exact_size(theme::HISTOGRAM_SIZE, Sense::hover());
        response.widget_info(|| {
            egui::WidgetInfo::labeled(
                egui::Role::Canvas,
                true,
                format!("{} histogram with {}", h.measure.title(), setting.key),
            )
        });
        let painter = ui.painter_at(rect);
        let empty = Vec::new();
        let subset = caught
            .and_then(|c| c.bins.get(&h.measure))
            .unwrap_or(&empty);
        draw_bars(&painter, rect, &h.counts, subset, log_counts);
        // The saved and the edited value of this setting, read from the setting itself.
        let mut lines: Vec<Line> = setting
            .value(&view.config)
            .map(|v| Line {
                value: v * setting.scale,
                color: theme::AXIS,
                label: format!("saved {}", h.measure.format(v * setting.scale)),
            })
            .into_iter()
            .collect();
        if let Some(v) = setting
            .value(draft)
            .filter(|_| setting.value(draft) != setting.value(&view.config))
        {
            lines.push(Line {
                value: v * setting.scale,
                color: theme::ACCENT,
                label: format!("edited {}", h.measure.format(v * setting.scale)),
            });
        }
        draw_lines(&painter, rect, &axis, &lines);
        super::side::ticks_ui(ui, &axis, &[0.0, 1.0]);
    });
}
