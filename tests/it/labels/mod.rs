//! Labels in and out: the Kinetics layout through a path template, class folders, CSV and
//! JSON lines with clip spans, tags, unmatched, ambiguous and contradicting rows, dry runs,
//! undo, the `label:` filter, `stats`, manifests, and the lossless round trip.

#![allow(clippy::unwrap_used)]

mod import;
mod manifests;

use std::path::Path;
use std::process::Output;

use framecull::media::synth::VideoSpec;

use crate::common;

fn framecull(proj: &Path, args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--project", proj.to_str().unwrap()]);
    common::run(&all)
}

/// Run and require exit code `code`.
fn expect(proj: &Path, code: i32, args: &[&str]) -> Output {
    let out = framecull(proj, args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}{}",
        common::stdout(&out),
        common::stderr(&out)
    );
    out
}

fn scan(data: &Path, proj: &Path) {
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--project",
        proj.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
}

fn short_video(dir: &Path, name: &str, frames: u32) {
    common::video(dir, name, &VideoSpec::new("libx264", 64, 48, 25, frames));
}
