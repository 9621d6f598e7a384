//! framecull: see, filter, trim and ship image and video datasets before training.
//!
//! Layers (a module uses those to its right, never the reverse):
//! `cli, gui → scan, manifest, loader → catalog, media, analysis → storage, model, output,
//! transient`.

/// The package version and the git revision it was built from (`framecull --version`, the
/// Python package's `framecull.__version__`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("FRAMECULL_GIT_REV"),
    ")"
);

pub mod analysis;
pub mod catalog;
pub mod cli;
pub mod demo;
#[cfg(feature = "gui")]
pub mod gui;
pub mod loader;
pub mod manifest;
#[allow(unsafe_code)]
pub mod media;
pub mod model;
pub mod output;
pub mod scan;
pub mod storage;
pub mod transient;
