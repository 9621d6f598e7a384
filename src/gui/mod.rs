//! The desktop window (feature `gui`): eframe app, panels and background jobs.
//!
//! Only this module may depend on egui, eframe or winit; CI builds the crate with
//! `--no-default-features` to prove the library, CLI and loader carry no GUI crate.

mod app;
mod command;
mod edits;
mod handlers;
mod jobs;
mod manifests;
mod panels;
pub mod player;
mod review;
mod review_state;
mod theme;
mod thumbs;
mod view;

use std::path::PathBuf;

pub use app::{App, State};
pub use command::{
    Command, DialogCommand, FilterCommand, JobCommand, PlayerCommand, ReviewCommand,
    SelectionCommand,
};

/// The window's icon (assets/framecull.svg rendered at 256 px; packaging installs the sizes).
const ICON: &[u8] = include_bytes!("../../assets/icons/framecull-256.png");

/// Open the window, on a dataset or project folder if given (else the last one).
pub fn run(dir: Option<PathBuf>) -> anyhow::Result<()> {
    let mut viewport = eframe::egui::ViewportBuilder::default()
        .with_title("framecull")
        // Matches the desktop entry (packaging/framecull.desktop: StartupWMClass).
        .with_app_id("framecull")
        .with_inner_size([1400.0, 860.0]);
    if let Ok(icon) = eframe::icon_data::from_png_bytes(ICON) {
        viewport = viewport.with_icon(std::sync::Arc::new(icon));
    }
    let options = eframe::NativeOptions {
        viewport,
        ..Default::default()
    };
    eframe::run_native(
        "framecull",
        options,
        Box::new(move |cc| Ok(Box::new(App::new(cc, dir)))),
    )
    .map_err(|e| anyhow::anyhow!("the window could not start: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_window_icon_decodes() {
        let icon = eframe::icon_data::from_png_bytes(super::ICON).unwrap();
        assert_eq!((icon.width, icon.height), (256, 256));
        // Not blank: the dark rounded square and the strip's colours are there.
        assert!(icon.rgba.chunks(4).any(|p| p[3] == 255 && p[0] < 60));
        assert!(icon.rgba.chunks(4).any(|p| p[0] > 150 && p[1] < 100));
    }
}
