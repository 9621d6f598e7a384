//! The table of files: one virtualised row per shown file, sortable by column.

use eframe::egui::{self, RichText, Sense};
use egui_extras::{Column, TableBuilder, TableRow};

use super::click_command;
use crate::gui::command::{Command, FilterCommand};
use crate::gui::theme;
use crate::gui::view::{SortKey, View, ViewRow};
use crate::model::Decision;
use crate::model::{ItemStatus, Measure};

/// Table columns: sort key and title.
pub(super) const TABLE_COLUMNS: &[(SortKey, &str)] = &[
    (SortKey::Path, "path"),
    (SortKey::Kind, "kind"),
    (SortKey::Status, "status"),
    (SortKey::Level, "analysis"),
    (SortKey::Codec, "codec"),
    (SortKey::Resolution, "resolution"),
    (SortKey::Measure(Measure::DurationSecs), "duration"),
    (SortKey::Measure(Measure::MotionMean), "motion"),
    (SortKey::Measure(Measure::Fps), Measure::Fps.name()),
    (SortKey::Measure(Measure::SizeBytes), "size"),
    (
        SortKey::Measure(Measure::Brightness),
        Measure::Brightness.name(),
    ),
    (
        SortKey::Measure(Measure::Sharpness),
        Measure::Sharpness.name(),
    ),
    (SortKey::Review, "review"),
    (SortKey::Label, "label"),
    (SortKey::Flags, "flags"),
];

#[allow(clippy::too_many_arguments)]
pub(super) fn table_ui(
    ui: &mut egui::Ui,
    view: &View,
    filtered: &[usize],
    selected: Option<usize>,
    picked: &std::collections::BTreeSet<usize>,
    scroll_to: Option<usize>,
    sort: Option<(SortKey, bool)>,
    commands: &mut Vec<Command>,
) {
    // One line per row. The auto-sized columns take their values' width (cut to their
    // width, they could only ever shrink: a filter showing short values squeezed them for
    // good); the path and the flags, the long ones, are cut to theirs.
    ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
    let mut table = TableBuilder::new(ui);
    if let Some(row) = scroll_to.and_then(|s| filtered.iter().position(|&i| i == s)) {
        table = table.scroll_to_row(row, None);
    }
    table
        .striped(true)
        .sense(Sense::click())
        .column(Column::initial(300.0).resizable(true))
        .columns(Column::auto(), TABLE_COLUMNS.len() - 2)
        .column(Column::remainder())
        .header(20.0, |header| header_ui(header, sort, commands))
        .body(|body| {
            body.rows(18.0, filtered.len(), |row| {
                let index = filtered[row.index()];
                file_row_ui(row, view, index, selected, picked, commands);
            });
        });
}

/// The header: each column's title, with an arrow on the one the table is sorted by; a
/// click sorts by it.
fn header_ui(
    mut header: TableRow<'_, '_>,
    sort: Option<(SortKey, bool)>,
    commands: &mut Vec<Command>,
) {
    for &(key, title) in TABLE_COLUMNS {
        header.col(|ui| {
            let arrow = match sort {
                Some((c, true)) if c == key => " ^",
                Some((c, false)) if c == key => " v",
                _ => "",
            };
            let text = RichText::new(format!("{title}{arrow}")).strong();
            if ui.add(egui::Button::new(text).frame(false)).clicked() {
                commands.push(Command::Filter(FilterCommand::SortBy(key)));
            }
        });
    }
}

/// The row of file `index` (a row of the view): a cell per column; a click on it selects the
/// file (see [`click_command`]).
fn file_row_ui(
    mut row: TableRow<'_, '_>,
    view: &View,
    index: usize,
    selected: Option<usize>,
    picked: &std::collections::BTreeSet<usize>,
    commands: &mut Vec<Command>,
) {
    let cut = |ui: &mut egui::Ui| ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Truncate);
    let r = &view.rows[index];
    row.set_selected(picked.contains(&index));
    row.col(|ui| {
        cut(ui);
        // A selectable label: clickable from the keyboard and accessibility too.
        if ui
            .selectable_label(selected == Some(index), &r.path)
            .clicked()
        {
            commands.push(click_command(ui.ctx(), r.id));
        }
    });
    row.col(|ui| {
        ui.label(r.kind.as_str());
    });
    row.col(|ui| {
        let color = if r.status == ItemStatus::Ok {
            theme::INFO
        } else {
            theme::ERROR
        };
        ui.colored_label(color, r.status.as_str());
    });
    row.col(|ui| {
        ui.label(r.level.as_str());
    });
    row.col(|ui| {
        ui.label(&r.codec);
    });
    row.col(|ui| {
        ui.label(r.resolution());
    });
    measure_cells_ui(&mut row, r);
    row.col(|ui| {
        let d = view.review.decision_of(r.id);
        if d != Decision::Unreviewed {
            ui.colored_label(theme::decision_color(d), d.as_str());
        }
    });
    row.col(|ui| {
        let labels: Vec<&str> = view.labels.of(index).collect();
        ui.label(labels.join(", "));
    });
    row.col(|ui| {
        cut(ui);
        let text = r
            .flags
            .iter()
            .map(|f| f.0.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let color = r.worst().map_or(theme::INFO, theme::severity_color);
        ui.colored_label(color, text);
    });
    let response = row.response();
    if response.clicked() {
        commands.push(click_command(&response.ctx, r.id));
    }
}

/// The cells of the measures the table shows (duration to sharpness), empty where the file
/// has none.
fn measure_cells_ui(row: &mut TableRow<'_, '_>, r: &ViewRow) {
    let measure = |k: Measure| r.measures.get(&k).map_or(String::new(), |v| k.format(*v));
    for k in [
        Measure::DurationSecs,
        Measure::MotionMean,
        Measure::Fps,
        Measure::SizeBytes,
        Measure::Brightness,
        Measure::Sharpness,
    ] {
        row.col(|ui| {
            ui.label(measure(k));
        });
    }
}
