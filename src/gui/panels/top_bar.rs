//! The top bar (project, rescan, the deep pass on the files shown, export, manifests, scan
//! progress) and the start screen.

use std::path::PathBuf;

use eframe::egui::{self, RichText};

use crate::gui::app::App;
use crate::gui::command::{Command, DialogCommand, JobCommand};
use crate::gui::theme;

pub(super) fn top_bar_ui(ui: &mut egui::Ui, app: &App, commands: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        ui.label(RichText::new("framecull").strong().color(theme::ACCENT));
        if let Some(v) = &app.view {
            ui.label(v.root.recorded().display().to_string());
            if app.scan.is_none() && ui.button("Rescan").clicked() {
                commands.push(Command::Job(JobCommand::Rescan));
            }
            let shallow = app.shown.shallow;
            if app.scan.is_none()
                && shallow > 0
                && ui
                    .button(format!(
                        "Analyse the {} shown deeply",
                        crate::model::count(shallow as u64, "file")
                    ))
                    .on_hover_text(format!(
                        "Run the deep pass (every frame decoded) on the {} the filter shows \
                         whose figures a triage estimated or that are not analysed yet",
                        crate::model::count(shallow as u64, "file")
                    ))
                    .clicked()
            {
                commands.push(Command::Job(JobCommand::DeepenShown));
            }
            if ui.button("Export…").clicked() {
                commands.push(Command::Dialog(DialogCommand::ShowExport));
            }
            if ui.button("Duplicates").clicked() {
                commands.push(Command::Dialog(DialogCommand::ShowDuplicates));
            }
            if ui.button("Manifests").clicked() {
                commands.push(Command::Dialog(DialogCommand::ShowManifests));
            }
            if ui.button("Close").clicked() {
                commands.push(Command::Job(JobCommand::Close));
            }
        }
        if let Some(job) = app.scan.as_ref().map(|s| &s.state) {
            let fraction = if job.total > 0 {
                job.done as f32 / job.total as f32
            } else {
                0.0
            };
            let secs = job.stage_started.elapsed().as_secs_f64().max(1e-3);
            let rate = job.done as f64 / secs;
            let eta = if rate > 0.0 && job.total > job.done {
                format!("ETA {:.0} s", (job.total - job.done) as f64 / rate)
            } else {
                String::new()
            };
            ui.add(
                egui::ProgressBar::new(fraction)
                    .desired_width(220.0)
                    .text(format!(
                        "{} {}/{}  {rate:.0} files/s  {eta}",
                        job.phase, job.done, job.total
                    )),
            );
            if ui.button("Cancel").clicked() {
                commands.push(Command::Job(JobCommand::CancelScan));
            }
        }
        if app.loading.is_some() {
            ui.spinner();
        }
        if let Some(m) = &app.message {
            ui.colored_label(theme::ERROR, m);
        }
        if let Some(s) = &app.status {
            ui.colored_label(theme::INFO, format!("saved: {s}"));
        }
    });
}

pub(super) fn start_ui(ui: &mut egui::Ui, app: &mut App, commands: &mut Vec<Command>) {
    ui.vertical_centered(|ui| {
        ui.add_space(60.0);
        ui.heading("See, filter, trim and ship your image and video datasets");
        ui.add_space(20.0);
        ui.horizontal(|ui| {
            // Centred under the heading: the row is about this wide.
            const ROW_WIDTH: f32 = 594.0;
            ui.add_space(((ui.available_width() - ROW_WIDTH) / 2.0).max(0.0));
            let label = ui.label("Dataset folder or URL:");
            ui.add(
                egui::TextEdit::singleline(&mut app.drafts.open_text)
                    .desired_width(320.0)
                    .hint_text("/data/clips or s3://bucket/prefix"),
            )
            .labelled_by(label.id);
            if ui.button("Open").clicked() && !app.drafts.open_text.trim().is_empty() {
                commands.push(Command::Job(JobCommand::Open(PathBuf::from(
                    app.drafts.open_text.trim(),
                ))));
            }
            if ui.button("Browse…").clicked() {
                commands.push(Command::Job(JobCommand::Browse));
            }
        });
        ui.add_space(10.0);
        if ui
            .button(RichText::new("Try the demo").size(18.0))
            .clicked()
        {
            commands.push(Command::Job(JobCommand::Demo));
        }
        if !app.state.recent.is_empty() {
            ui.add_space(20.0);
            ui.label(RichText::new("Recent projects").strong());
            for p in app.state.recent.clone() {
                if ui.link(p.display().to_string()).clicked() {
                    commands.push(Command::Job(JobCommand::Open(p)));
                }
            }
        }
    });
}
