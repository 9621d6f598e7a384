//! The window driven headless through AccessKit (egui_kittest): open a project, brush a
//! histogram, switch to the gallery, select a file, start and cancel a scan.
#![cfg(feature = "gui")]
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use framecull::gui::{App, Command};

fn harness(dir: &Path) -> Harness<'static, App> {
    let dir = dir.to_path_buf();
    Harness::builder()
        .with_size(eframe::egui::vec2(1400.0, 860.0))
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

#[test]
fn open_brush_gallery_select_scan_and_cancel() {
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let out = common::run(&["scan", data.path().to_str().unwrap(), "--deep"]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));

    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    assert_eq!(h.state().shown(), 8);

    // Brushing the duration histogram keeps the videos in range only.
    h.state_mut().apply(Command::Brush {
        column: "duration_secs".into(),
        lo: 0.9,
        hi: 1.1,
    });
    h.run();
    let shown = h.state().shown();
    assert!((1..8).contains(&shown), "{shown}");
    assert!(
        h.query_by_label_contains("duration_secs 0.90..1.10")
            .is_some()
    );
    // Removing the chip brings everything back.
    h.get_by_label_contains("duration_secs 0.90..1.10").click();
    h.run();
    assert_eq!(h.state().shown(), 8);

    // A flag filter from the flags panel: the two broken files.
    h.get_by_label("unreadable  2").click();
    h.run();
    assert_eq!(h.state().shown(), 2);
    h.get_by_label_contains("flag unreadable").click();
    h.run();
    assert_eq!(h.state().shown(), 8);

    // Select a file in the table: the inspector shows its path.
    h.get_by_label("clips/h264.mp4").click();
    h.run();
    assert_eq!(h.state().selected_path(), Some("clips/h264.mp4"));
    assert_eq!(
        h.query_all_by_label("clips/h264.mp4").count(),
        2,
        "table and inspector"
    );

    // The gallery tab.
    h.get_by_label("Gallery").click();
    h.run();
    assert!(h.state().state().gallery);

    // Start a scan and cancel it: the window stays usable and the project reloads.
    h.get_by_label("Rescan").click();
    h.step();
    assert!(h.state().is_scanning());
    // The scan may already be over on a fast machine; cancel it if it is not.
    if let Some(cancel) = h.query_by_label("Cancel") {
        cancel.click();
    }
    wait(&mut h, "the scan to stop", |a| {
        !a.is_scanning() && a.is_idle()
    });
    assert_eq!(h.state().shown(), 8);
}
