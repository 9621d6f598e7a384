//! The export dialog's parts: its settings, its buttons, the preview's counts and what the
//! export wrote.

use eframe::egui::{self, RichText};

use super::{ExportDialog, FORMATS};
use crate::gui::command::{Command, DialogCommand};
use crate::gui::theme;
use crate::model::count;
use crate::output::error_text;

impl ExportDialog {
    /// The settings, a row each: name, formats, splits, seed, what to include, clip files,
    /// and (while the window filters) whether to keep to the files shown.
    pub(super) fn settings_ui(&mut self, ui: &mut egui::Ui) {
        egui::Grid::new("export").num_columns(2).show(ui, |ui| {
            let label = ui.label("name");
            ui.text_edit_singleline(&mut self.name)
                .labelled_by(label.id);
            ui.end_row();
            ui.label("formats");
            // The rows (framecull's own formats), what other stacks read to seek,
            // and the clip files laid out as other stacks read them.
            ui.vertical(|ui| {
                let mut formats = FORMATS.iter().zip(&mut self.formats);
                for line in [3, 2, FORMATS.len() - 5] {
                    ui.horizontal(|ui| {
                        for ((_, name, what), on) in formats.by_ref().take(line) {
                            ui.checkbox(on, *name).on_hover_text(*what);
                        }
                    });
                }
            });
            ui.end_row();
            let label = ui.label("splits");
            ui.horizontal(|ui| {
                ui.text_edit_singleline(&mut self.split)
                    .labelled_by(label.id);
                ui.checkbox(&mut self.stratify, "each label its share")
                    .on_hover_text(
                        "--stratify label: every label gets its share of each split, \
                         within one file, and files keep the previous version's split",
                    );
            });
            ui.end_row();
            let label = ui.label("split seed");
            ui.add(egui::DragValue::new(&mut self.seed))
                .labelled_by(label.id);
            ui.end_row();
            ui.label("include");
            ui.horizontal(|ui| {
                ui.radio_value(
                    &mut self.accepted_only,
                    false,
                    "accepted + clean unreviewed",
                );
                ui.radio_value(&mut self.accepted_only, true, "accepted only");
            });
            ui.end_row();
            let label = ui.label("clip files");
            ui.horizontal(|ui| {
                ui.checkbox(&mut self.clip_files, "each clip as a file of its own")
                    .on_hover_text(
                        "--materialize: every clip as an MP4 holding exactly its \
                         frames (GOPs copied, the ends encoded again) and its sound; \
                         files already there are kept",
                    );
                if self.clip_files {
                    ui.add(
                        egui::TextEdit::singleline(&mut self.clip_dir)
                            .hint_text(format!("project/clip-files/{}", self.name.trim()))
                            .desired_width(220.0),
                    )
                    .labelled_by(label.id);
                }
            });
            ui.end_row();
            if !self.filter.is_empty() {
                ui.label("filter");
                ui.checkbox(
                    &mut self.only_shown,
                    format!("only the files shown: {}", self.filter.to_text()),
                );
                ui.end_row();
            }
        });
    }

    /// Preview, Export (once a preview counted), a spinner while a job runs, and Cancel
    /// while clip files are written. `options_ok`: the settings make valid options.
    pub(super) fn buttons_ui(
        &self,
        ui: &mut egui::Ui,
        options_ok: bool,
        commands: &mut Vec<Command>,
    ) {
        ui.horizontal(|ui| {
            if ui
                .add_enabled(
                    options_ok && self.preview_job.is_none(),
                    egui::Button::new("Preview"),
                )
                .clicked()
            {
                commands.push(Command::Dialog(DialogCommand::PreviewExport));
            }
            let can_export = options_ok
                && self.preview.as_ref().is_some_and(Result::is_ok)
                && self.export_job.is_none();
            if ui
                .add_enabled(can_export, egui::Button::new("Export"))
                .clicked()
            {
                commands.push(Command::Dialog(DialogCommand::Export));
            }
            if self.preview_job.is_some() || self.export_job.is_some() {
                ui.spinner();
            }
            if self.export_job.is_some() && self.clip_files && ui.button("Cancel").clicked() {
                commands.push(Command::Dialog(DialogCommand::CancelExport));
            }
        });
    }

    /// The preview's counts: clips and files, per split, and those left out (or why it
    /// failed, or what Preview does before it ran).
    pub(super) fn preview_ui(&self, ui: &mut egui::Ui) {
        match &self.preview {
            Some(Ok(c)) => {
                ui.label(format!(
                    "{} from {}",
                    count(c.rows, "clip"),
                    count(c.files, "file")
                ));
                for (split, n) in &c.by_split {
                    ui.label(format!(
                        "  {split}: {n} ({:.1}%)",
                        100.0 * *n as f64 / c.rows.max(1) as f64
                    ));
                }
                for (why, n) in &c.excluded {
                    ui.label(RichText::new(format!("  left out, {why}: {n}")).small());
                }
            }
            Some(Err(e)) => {
                ui.colored_label(theme::ERROR, error_text(e));
            }
            None => {
                ui.label(
                    RichText::new("Preview shows the counts per split before anything is written.")
                        .small(),
                );
            }
        }
    }

    /// What the last export wrote: the version, its clip files and the first failures (or
    /// why it failed).
    pub(super) fn done_ui(&self, ui: &mut egui::Ui) {
        match &self.done {
            Some(Ok((m, clips))) => {
                ui.colored_label(
                    theme::ACCENT,
                    format!(
                        "wrote {} v{:04}: {}",
                        m.name,
                        m.version,
                        count(m.counts.rows, "clip")
                    ),
                );
                if let Some(c) = clips {
                    ui.label(format!(
                        "clip files in {}: {} written ({:.1} MiB, {} frames copied, {} \
                         encoded), {} there before",
                        c.files.dir,
                        c.written,
                        c.bytes as f64 / (1 << 20) as f64,
                        c.copied_frames,
                        c.reencoded_frames,
                        c.present
                    ));
                    for failure in c.failed.iter().take(5) {
                        ui.colored_label(theme::ERROR, failure);
                    }
                }
            }
            Some(Err(e)) => {
                ui.colored_label(theme::ERROR, error_text(e));
            }
            None => {}
        }
    }
}
