//! The window driven headless through AccessKit (egui_kittest): open a project, brush a
//! histogram, switch to the gallery, select a file, start and cancel a scan.
#![cfg(feature = "gui")]
#![allow(clippy::unwrap_used)]

mod browse;
mod clips;
mod flags;
mod player;
mod remote;
mod snapshots;

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use framecull::gui::App;

use crate::common;

fn harness(dir: &Path) -> Harness<'static, App> {
    let dir = dir.to_path_buf();
    // Background threads (player, thumbnails) ask for repaints: allow a few more steps for
    // `run` to settle on a slow machine.
    Harness::builder()
        .with_size(eframe::egui::vec2(1400.0, 860.0))
        .with_max_steps(24)
        .build_eframe(move |cc| App::new(cc, Some(dir)))
}

/// Step the UI until `done` holds (background jobs finish on their own threads).
fn wait(h: &mut Harness<'static, App>, what: &str, done: impl Fn(&App) -> bool) {
    let start = Instant::now();
    while !done(h.state()) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    h.step();
}

fn catalog_clips(project: &Path) -> Vec<framecull::model::Clip> {
    let catalog = framecull::catalog::Catalog::open(project).unwrap();
    catalog
        .all_clips()
        .unwrap()
        .into_values()
        .flatten()
        .collect()
}

/// Images 48 to 160 pixels wide (one copied: a duplicate group) and videos of 0.5, 1 and 2
/// seconds (176x144), deep-analysed, with `rules.min_width = 100` and `min_duration_secs = 1`
/// in the project's settings: two images are flagged `resolution_below_min`, one video
/// `duration_below_min`.
fn rules_dataset(dir: &Path) -> std::path::PathBuf {
    use framecull::media::synth::{ImageKind, VideoSpec};
    for (i, w) in [48, 64, 112, 128, 160].into_iter().enumerate() {
        common::image(
            dir,
            &format!("img/{i}_{w}.png"),
            ImageKind::Png,
            w,
            48,
            None,
        );
    }
    std::fs::copy(dir.join("img/4_160.png"), dir.join("img/copy.png")).unwrap();
    for (name, frames) in [("short.mp4", 12), ("one.mp4", 25), ("two.mp4", 50)] {
        common::video(
            dir,
            &format!("vid/{name}"),
            // FFmpeg's own MPEG-4 encoder: the same bytes every run (x264's threads are not).
            &VideoSpec::new("mpeg4", 176, 144, 25, frames),
        );
    }
    let project = dir.join(".framecull");
    let settings = framecull::catalog::Project::at(&project);
    settings
        .save_setting("rules.min_width", Some(100.0), true)
        .unwrap();
    settings
        .save_setting("rules.min_duration_secs", Some(1.0), false)
        .unwrap();
    let out = common::run(&["scan", dir.to_str().unwrap(), "--deep"]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    project
}
