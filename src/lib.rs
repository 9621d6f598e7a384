//! framecull: see, filter, trim and ship image and video datasets before training.
//!
//! This package is the application: the command line (`cli`), the window (`gui`, feature
//! `gui`), what they print (`output`) and which errors are worth a retry (`transient`). The
//! library is the workspace's crates by layer (`crates/`), re-exported here under their layer's
//! name so that `framecull::catalog` is `framecull_catalog`. A crate uses those to its right,
//! never the reverse, and Cargo enforces it:
//! `scan, loader → manifest → catalog, media → analysis, storage → model`
//! (docs/ARCHITECTURE.md).

pub use framecull_analysis as analysis;
pub use framecull_catalog as catalog;
pub use framecull_loader as loader;
pub use framecull_manifest as manifest;
pub use framecull_media as media;
pub use framecull_model as model;
pub use framecull_model::VERSION;
pub use framecull_scan as scan;
pub use framecull_scan::demo;
pub use framecull_storage as storage;

pub mod cli;
#[cfg(feature = "gui")]
pub mod gui;
pub mod output;
pub mod transient;
