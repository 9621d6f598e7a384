//! The desktop window (feature `gui`): eframe app, panels, player and background jobs.
//!
//! Only this module may depend on egui, eframe or winit; CI builds the crate with
//! `--no-default-features` to prove the library, CLI and loader carry no GUI crate.
