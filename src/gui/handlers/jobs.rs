//! Commands on the project and its background jobs.

use crate::catalog::Project;
use crate::gui::app::App;
use crate::gui::command::JobCommand;
use crate::gui::jobs::{Job, spawn_deepen, spawn_load, spawn_rescan, spawn_scan, spawn_scan_url};

impl App {
    pub(in crate::gui) fn on_job(&mut self, command: JobCommand) {
        match command {
            JobCommand::Open(dir) => {
                if crate::storage::Root::is_url(&dir) {
                    // A dataset in object storage: its project where the window keeps them
                    // (scanned there the first time, loaded and rescanned after).
                    let url = dir.to_string_lossy().trim_end_matches('/').to_string();
                    self.scan = Some(spawn_scan_url(url));
                } else if let Some(project) = Project::locate(&dir) {
                    self.loading = Some(spawn_load(project.dir().to_path_buf()));
                    self.remember(project.dir().to_path_buf());
                } else if dir.is_dir() {
                    // A folder never scanned: scan it.
                    self.scan = Some(spawn_scan(dir, false));
                } else {
                    self.message = Some(format!("{} is not a folder", dir.display()));
                }
            }
            JobCommand::Demo => {
                self.scan = Some(spawn_scan(crate::demo::default_dir(), true));
            }
            JobCommand::Rescan => {
                if let Some(v) = &self.view {
                    self.scan = Some(spawn_rescan(v.project.clone()));
                }
            }
            JobCommand::DeepenShown => {
                if let Some(v) = &self.view {
                    let ids: std::collections::HashSet<_> = self.shallow_shown().collect();
                    if !ids.is_empty() {
                        self.scan = Some(spawn_deepen(v.project.clone(), ids));
                    }
                }
            }
            JobCommand::CancelScan => {
                if let Some(s) = &self.scan {
                    s.job.cancel();
                }
            }
            JobCommand::Browse => {
                if self.browse.is_none() {
                    self.browse = Some(Job::run("framecull-browse", || {
                        rfd::FileDialog::new()
                            .set_title("Open a dataset folder")
                            .pick_folder()
                    }));
                }
            }
            JobCommand::Close => {
                self.view = None;
                self.player = None;
                self.edits = None;
                self.state.last_project = None;
            }
        }
    }
}
