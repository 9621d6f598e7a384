//! The triage level: a video's index and packets read, nothing decoded. Its rows say so, it
//! flags what the deep pass flags wherever the packets show it, and a later triage never makes
//! a deep analysis shallower.

#![allow(clippy::unwrap_used)]

mod integrity;
mod levels;
mod pictures;

use std::path::Path;

use crate::common;

fn scan(data: &Path, project: &Path, level: &str) -> std::process::Output {
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--project",
        project.to_str().unwrap(),
        level,
    ]);
    assert!(
        out.status.code().unwrap() <= 1,
        "scan {level}: {}",
        common::stderr(&out)
    );
    out
}
