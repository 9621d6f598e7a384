//! Commands on the dashboard's display and the windows over it.

use crate::gui::app::App;
use crate::gui::command::DialogCommand;

impl App {
    pub(in crate::gui) fn on_dialog(&mut self, command: DialogCommand) {
        match command {
            DialogCommand::ShowGallery(on) => self.state.gallery = on,
            DialogCommand::LogCounts(on) => self.state.log_counts = on,
            DialogCommand::ScatterAxes(x, y) => self.state.scatter = Some((x, y)),
            DialogCommand::ShowExport => self.export.open = true,
            DialogCommand::ShowDuplicates => self.duplicates = true,
            DialogCommand::PreviewExport => {
                if let Some(v) = &self.view {
                    self.export.start_preview(&v.project);
                }
            }
            DialogCommand::Export => {
                if let Some(v) = &self.view {
                    self.export.start_export(&v.project);
                }
            }
            DialogCommand::CancelExport => self.export.cancel_export(),
            DialogCommand::DiffManifests { name, from, to } => {
                if let Some(v) = &self.view {
                    self.history.start_diff(&v.project, name, from, to);
                }
            }
            DialogCommand::ShowManifests => {
                self.history.open = true;
                if let Some(v) = &self.view {
                    self.history.refresh(&v.project);
                }
            }
            DialogCommand::ToggleHelp => self.help = !self.help,
        }
    }
}
