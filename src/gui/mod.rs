//! The desktop window (feature `gui`): eframe app, panels and background jobs.
//!
//! Only this module may depend on egui, eframe or winit; CI builds the crate with
//! `--no-default-features` to prove the library, CLI and loader carry no GUI crate.

mod app;
mod command;
mod edits;
mod jobs;
mod manifests;
mod panels;
pub mod player;
mod review;
mod theme;
mod thumbs;
mod view;

use std::path::PathBuf;

pub use app::{App, State};
pub use command::Command;

/// Open the window, on a dataset or project folder if given (else the last one).
pub fn run(dir: Option<PathBuf>) -> anyhow::Result<()> {
    let options = eframe::NativeOptions {
        viewport: eframe::egui::ViewportBuilder::default()
            .with_title("framecull")
            .with_inner_size([1400.0, 860.0]),
        ..Default::default()
    };
    eframe::run_native(
        "framecull",
        options,
        Box::new(move |cc| Ok(Box::new(App::new(cc, dir)))),
    )
    .map_err(|e| anyhow::anyhow!("the window could not start: {e}"))
}
