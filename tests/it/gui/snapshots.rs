//! The window rendered on the software adapter: snapshots, and the demo project.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use framecull::gui::{App, Command, DialogCommand, FilterCommand, SelectionCommand};

use super::{rules_dataset, wait};
use crate::common;

/// Rendered on the software adapter (lavapipe) and compared with the committed images in
/// tests/snapshots (`UPDATE_SNAPSHOTS=1` rewrites them).
#[test]
fn snapshots_of_the_start_screen_and_the_shortcuts_window() {
    use egui_kittest::SnapshotOptions;
    let mut h = Harness::builder()
        .with_size(eframe::egui::vec2(900.0, 560.0))
        .wgpu()
        .build_eframe(|cc| App::new(cc, None));
    h.run();
    let options = SnapshotOptions::new().threshold(0.6).max_failed_pixels(100);
    h.snapshot_options("start_screen", &options);
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ToggleHelp));
    h.run();
    h.snapshot_options("shortcuts_window", &options);
}

/// The acceptance path on the demo project, rendered on the software adapter: open it, brush
/// a histogram and see the gallery count change, select a file and see its path in the
/// inspector, start and cancel a scan.
#[test]
fn demo_project_on_the_software_adapter() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let out = common::run(&["demo", "--dir", demo.to_str().unwrap(), "--no-window"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let project = demo.clone();
    let mut h = Harness::builder()
        .with_size(eframe::egui::vec2(1400.0, 860.0))
        .with_max_steps(24)
        .wgpu()
        .build_eframe(move |cc| App::new(cc, Some(project)));
    wait(&mut h, "the demo to load", App::is_idle);
    let all = h.state().shown();
    assert!(all >= 40, "{all} files");
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ShowGallery(true)));
    h.run_steps(5);
    h.state_mut().apply(Command::Filter(FilterCommand::Brush {
        measure: framecull::model::Measure::DurationSecs,
        lo: 0.5,
        hi: 2.5,
    }));
    h.run_steps(5);
    let brushed = h.state().shown();
    assert!(0 < brushed && brushed < all, "{brushed} of {all}");
    let first = h.state().shown_paths()[0].to_string();
    let item = h.state().item_id(&first).unwrap();
    h.state_mut()
        .apply(Command::Selection(SelectionCommand::Select(Some(item))));
    h.run_steps(10);
    assert!(
        h.query_by_label(&first).is_some(),
        "{first} not in the inspector"
    );
    // A command naming a file the view does not hold (gone since it was made) changes
    // nothing: the selection stays.
    h.state_mut()
        .apply(Command::Selection(SelectionCommand::Select(Some(i64::MAX))));
    h.run_steps(2);
    assert_eq!(h.state().selected_path(), Some(first.as_str()));
    h.get_by_label("Rescan").click();
    h.step();
    if let Some(cancel) = h.query_by_label("Cancel") {
        cancel.click();
    }
    wait(&mut h, "the scan to stop", |a| {
        !a.is_scanning() && a.is_idle()
    });
    assert!(h.state().shown() >= brushed);
}

/// The plots and views of the window rendered on the software adapter and compared with the
/// committed images in tests/snapshots (`UPDATE_SNAPSHOTS=1` rewrites them): histograms with
/// their axes, a threshold line and a bin's tooltip; the scatter with a box brush; the
/// duplicate groups; a flag explained with an edited threshold.
#[test]
fn snapshots_of_the_plots_the_duplicates_and_a_flag_explained() {
    use eframe::egui::{Pos2, pos2};
    use egui_kittest::SnapshotOptions;
    use framecull::model::Measure;
    let data = tempfile::tempdir().unwrap();
    let project = rules_dataset(data.path());
    let mut h = Harness::builder()
        .with_size(eframe::egui::vec2(1400.0, 860.0))
        .with_max_steps(24)
        .wgpu()
        .build_eframe(move |cc| App::new(cc, Some(project)));
    wait(&mut h, "the project to load", App::is_idle);
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ScatterAxes(
            Measure::Brightness,
            Measure::Sharpness,
        )));
    h.run();
    // The top bar is masked out: it shows the project's folder, a new temporary name (and
    // width) each run.
    let folder = h.get_by_label_contains(".tmp").rect();
    let top = eframe::egui::Rect::from_min_max(pos2(0.0, 0.0), pos2(1400.0, folder.bottom() + 2.0));
    let options = SnapshotOptions::new().threshold(0.6).max_failed_pixels(100);
    let snapshot = |h: &mut Harness<'static, App>, name: &str| {
        h.mask(top);
        h.snapshot_options(name, &options);
    };
    let at = |r: eframe::egui::Rect, x: f32, y: f32| -> Pos2 {
        pos2(r.left() + x * r.width(), r.top() + y * r.height())
    };

    let histogram = h.get_by_label("duration histogram").rect();
    h.hover_at(at(histogram, 0.98, 0.9));
    h.run();
    assert!(
        h.query_by_label_contains("1 file, 1 shown").is_some(),
        "the tooltip of the bin of the 2-second video"
    );
    snapshot(&mut h, "histograms_with_axes_and_a_tooltip");

    // A drag over a histogram brushes its measure; one released where it began (a press held
    // in place is a drag too) sets no empty range: it clears the measure's brush.
    let all = h.state().shown();
    let drag = |h: &mut Harness<'static, App>, points: &[Pos2]| {
        h.drag_at(points[0]);
        h.step();
        for p in &points[1..] {
            h.hover_at(*p);
            h.step();
        }
        h.drop_at(*points.last().unwrap());
        h.run();
    };
    let sizes = h.get_by_label("file size histogram").rect();
    let (left, middle) = (at(sizes, 0.005, 0.5), at(sizes, 0.6, 0.5));
    drag(&mut h, &[left, left.lerp(middle, 0.5), middle]);
    let brushed = h.state().shown();
    assert!(
        0 < brushed && brushed < all,
        "{brushed} of {all} files brushed"
    );
    drag(
        &mut h,
        &[
            middle,
            at(histogram, 0.8, 0.5),
            middle + eframe::egui::vec2(1.0, 0.0),
        ],
    );
    assert_eq!(
        h.state().shown(),
        all,
        "a drag back to its start clears the brush"
    );

    let scatter = h.get_by_label("scatter").rect();
    let (from, to) = (at(scatter, 0.3, 0.05), at(scatter, 0.99, 0.95));
    h.drag_at(from);
    h.step();
    h.hover_at(from.lerp(to, 0.5));
    h.step();
    h.hover_at(to);
    h.step();
    h.drop_at(to);
    h.run();
    h.remove_cursor();
    h.run();
    let brushed = h.state().shown();
    assert!(0 < brushed && brushed < 9, "{brushed} files in the box");
    snapshot(&mut h, "scatter_with_a_box_brush");

    h.state_mut()
        .apply(Command::Filter(FilterCommand::ClearRange(
            Measure::Brightness,
        )));
    h.state_mut()
        .apply(Command::Filter(FilterCommand::ClearRange(
            Measure::Sharpness,
        )));
    h.state_mut()
        .apply(Command::Filter(FilterCommand::FilterFlag(Some(
            "resolution_below_min".into(),
        ))));
    h.state_mut()
        .apply(Command::Filter(FilterCommand::DraftSetting {
            key: "rules.min_width",
            value: Some(130.0),
        }));
    h.run();
    snapshot(&mut h, "flag_explained_with_an_edited_threshold");

    h.state_mut()
        .apply(Command::Filter(FilterCommand::FilterFlag(None)));
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ShowDuplicates));
    h.run();
    wait(&mut h, "the thumbnails", |a| !a.thumbnails_loading());
    h.run();
    assert!(h.query_all_by_label_contains("group ").count() >= 2);
    snapshot(&mut h, "duplicate_groups");
}
