//! Browsing a project: filters, sorting, selection, decisions, duplicates, labels, thumbnails.

use std::path::Path;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use framecull::gui::{App, Command, DialogCommand, FilterCommand, JobCommand, ReviewCommand};

use super::{harness, wait};
use crate::common;

/// Brush the duration histogram to the files of 0.9 to 1.1 s.
fn brush_one_second(h: &mut Harness<'static, App>) {
    h.state_mut().apply(Command::Filter(FilterCommand::Brush {
        measure: framecull::model::Measure::DurationSecs,
        lo: 0.9,
        hi: 1.1,
    }));
    h.run();
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
    brush_one_second(&mut h);
    let shown = h.state().shown();
    assert!((1..8).contains(&shown), "{shown}");
    assert!(
        h.query_by_label_contains("duration 00:00.900..00:01.100")
            .is_some()
    );
    // The window shows its filter as command-line text; `list --where` with it lists the
    // same files.
    let text = {
        use egui_kittest::kittest::NodeT;
        h.get_by_label_contains("--where '")
            .accesskit_node()
            .value()
            .unwrap()
    };
    let filter = text.trim_start_matches("--where '").trim_end_matches('\'');
    let project = data.path().join(".framecull");
    let listed: Vec<String> = common::list_jsonl_where(&project, Some(filter))
        .into_keys()
        .collect();
    let mut shown: Vec<String> = h
        .state()
        .shown_paths()
        .into_iter()
        .map(String::from)
        .collect();
    shown.sort();
    assert_eq!(listed, shown, "{filter}");
    // Removing the chip brings everything back.
    h.get_by_label_contains("duration 00:00.900..00:01.100")
        .click();
    h.run();
    assert_eq!(h.state().shown(), 8);

    // The scatter (duration against motion by default): a box dragged over it brushes both
    // measures, and the window shows what `list --where` with that filter lists.
    assert!(
        h.state().scatter_dots() >= 2,
        "{}",
        h.state().scatter_dots()
    );
    let plot = h.get_by_label("scatter").rect();
    let (from, to) = (
        plot.left_top() + eframe::egui::vec2(1.0, 1.0),
        plot.right_bottom() - eframe::egui::vec2(1.0, 1.0),
    );
    h.drag_at(from);
    h.step();
    h.hover_at(plot.center());
    h.step();
    h.hover_at(to);
    h.step();
    h.drop_at(to);
    h.run();
    let text = {
        use egui_kittest::kittest::NodeT;
        h.get_by_label_contains("--where '")
            .accesskit_node()
            .value()
            .unwrap()
    };
    assert!(
        text.contains("duration_secs") && text.contains("motion_mean"),
        "{text}"
    );
    let filter = text.trim_start_matches("--where '").trim_end_matches('\'');
    let listed = common::list_jsonl_where(&project, Some(filter)).len();
    assert!((1..8).contains(&listed), "{filter}: {listed}");
    assert_eq!(h.state().shown(), listed);
    for measure in [
        framecull::model::Measure::DurationSecs,
        framecull::model::Measure::MotionMean,
    ] {
        h.state_mut()
            .apply(Command::Filter(FilterCommand::ClearRange(measure)));
    }
    h.run();
    assert_eq!(h.state().shown(), 8);

    // A flag filter from the flags panel: the two broken files.
    h.get_by_label("unreadable  2").click();
    h.run();
    assert_eq!(h.state().shown(), 2);
    h.get_by_label_contains("flag unreadable").click();
    h.run();
    assert_eq!(h.state().shown(), 8);

    // The path search, then sorting by a column (again: the other way).
    use eframe::egui::accesskit::Role;
    h.get_by_role_and_label(Role::TextInput, "path contains:")
        .focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "path contains:")
        .type_text("CLIPS/");
    h.run();
    assert_eq!(h.state().shown(), 5, "{:?}", h.state().shown_paths());
    h.get_by_role_and_label(Role::Button, "duration").click();
    h.run();
    let sorted = h.state().shown_paths();
    assert_eq!(sorted[0], "clips/rotated.mp4", "{sorted:?}"); // 10 frames at 30 fps
    h.get_by_label("duration ^").click();
    h.run();
    assert_eq!(h.state().shown_paths()[0], "clips/h264.mp4"); // 1 s
    assert_eq!(h.state().shown_paths().last(), Some(&"clips/garbage.mp4")); // none: last
    h.state_mut()
        .apply(Command::Filter(FilterCommand::Search(String::new())));
    h.run();
    assert_eq!(h.state().shown(), 8);

    // Select a file in the table: the inspector shows its path.
    h.get_by_label("clips/h264.mp4").click();
    h.run_steps(10);
    assert_eq!(h.state().selected_path(), Some("clips/h264.mp4"));
    assert_eq!(
        h.query_all_by_label("clips/h264.mp4").count(),
        2,
        "table and inspector"
    );

    // Ctrl+click adds a second file; R rejects both, and only them.
    h.get_by_label("clips/vp9.webm")
        .click_modifiers(eframe::egui::Modifiers::COMMAND);
    h.run_steps(10);
    assert!(h.query_by_label_contains("2 files selected").is_some());
    h.key_press(eframe::egui::Key::R);
    h.step();
    wait(&mut h, "the decisions", |a| a.pending_edits() == 0);
    let project = data.path().join(".framecull");
    let reviews = framecull::catalog::Catalog::open(&project)
        .unwrap()
        .all_reviews()
        .unwrap();
    assert_eq!(reviews.len(), 2);
    assert_eq!(
        h.state().decision("clips/h264.mp4"),
        Some(framecull::model::Decision::Rejected)
    );
    assert_eq!(
        h.state().decision("clips/vp9.webm"),
        Some(framecull::model::Decision::Rejected)
    );

    // The gallery tab.
    h.get_by_label("Gallery").click();
    h.run_steps(10);
    assert!(h.state().state().gallery);

    // Log counts: a setting kept with the window's state, shown on the count axis.
    assert!(!h.state().state().log_counts);
    h.get_by_label("log counts").click();
    h.run_steps(5);
    assert!(h.state().state().log_counts);
    h.get_by_label("log counts").click();
    h.run_steps(5);
    assert!(!h.state().state().log_counts);

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

    // A filter is the project's: opening another project starts unfiltered, and so does a
    // window started on another project than the one whose filter it kept.
    h.get_by_label("unreadable  2").click();
    h.run();
    assert_eq!(h.state().shown(), 2);
    let other = tempfile::tempdir().unwrap();
    common::mixed_dataset(other.path());
    let out = common::run(&["scan", other.path().to_str().unwrap()]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    h.state_mut()
        .apply(Command::Job(JobCommand::Open(other.path().to_path_buf())));
    wait(&mut h, "the other project to load", App::is_idle);
    assert_eq!(h.state().shown(), 8);
    assert!(h.query_by_label_contains("flag unreadable").is_none());
}

/// The duplicate groups window: "Keep the best in every group" rejects the other members,
/// Undo restores them.
#[test]
fn duplicates_window_keeps_the_best_and_undo_restores() {
    use framecull::media::synth::ImageKind;
    let data = tempfile::tempdir().unwrap();
    let a = common::image(data.path(), "a.png", ImageKind::Png, 64, 48, None);
    std::fs::copy(&a, data.path().join("copy.png")).unwrap();
    common::image(data.path(), "other.jpg", ImageKind::Jpeg, 80, 60, None);
    let out = common::run(&["scan", data.path().to_str().unwrap(), "--deep"]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let project = data.path().join(".framecull");

    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    h.get_by_label("Duplicates").click();
    h.run();
    assert!(h.query_by_label_contains("group ").is_some());
    h.get_by_label("Keep the best in every group").click();
    h.step();
    wait(&mut h, "the edit", |a| a.pending_edits() == 0);
    let rejected = || {
        let mut paths: Vec<String> = framecull::catalog::Catalog::open(&project)
            .unwrap()
            .items()
            .unwrap()
            .into_iter()
            .filter(|i| decision_of(&project, i.id) == framecull::model::Decision::Rejected)
            .map(|i| i.path)
            .collect();
        paths.sort();
        paths
    };
    // Equal copies: the one with the smaller item id is kept (ids follow the scan's order).
    let items = framecull::catalog::Catalog::open(&project)
        .unwrap()
        .items()
        .unwrap();
    let id = |p: &str| items.iter().find(|i| i.path == p).unwrap().id;
    let other = if id("a.png") < id("copy.png") {
        "copy.png"
    } else {
        "a.png"
    };
    assert_eq!(rejected(), [other]);
    h.state_mut().apply(Command::Review(ReviewCommand::Undo));
    h.step();
    wait(&mut h, "the undo", |a| a.pending_edits() == 0);
    assert!(rejected().is_empty());
}

fn decision_of(project: &Path, id: i64) -> framecull::model::Decision {
    framecull::catalog::Catalog::open(project)
        .unwrap()
        .all_reviews()
        .unwrap()
        .get(&id)
        .map(|r| r.decision)
        .unwrap_or_default()
}

/// Thumbnails are decoded in a worker process: a decoder that crashes on one file (fault
/// injection) costs that thumbnail, shown as "cannot decode" with the reason, and the window
/// goes on with the others.
#[test]
fn a_decoder_that_crashes_on_a_thumbnail_costs_that_thumbnail_only() {
    framecull::media::isolate::inject_faults_in_workers();
    use framecull::media::synth::ImageKind;
    let data = tempfile::tempdir().unwrap();
    common::image(data.path(), "good.png", ImageKind::Png, 64, 48, None);
    common::image(data.path(), "other.jpg", ImageKind::Jpeg, 80, 60, None);
    common::image(
        data.path(),
        "framecull-fault-crash.png",
        ImageKind::Png,
        72,
        48,
        None,
    );
    let out = common::run(&["scan", data.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));

    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ShowGallery(true)));
    h.run();
    wait(&mut h, "the thumbnails", |a| !a.thumbnails_loading());
    h.run();
    assert_eq!(
        h.state().thumbnail_failures(),
        ["decoder crashed: signal 11 (SIGSEGV)"]
    );
    let cached = std::fs::read_dir(data.path().join(".framecull/thumbs"))
        .unwrap()
        .count();
    assert_eq!(cached, 2, "the two good thumbnails are made and kept");
    assert_eq!(h.state().shown(), 3);
}

/// On a triaged dataset, "Analyse the files shown deeply" runs the deep pass on the files the
/// filter shows (here: after a brush that keeps two of the four videos) as a background job;
/// they come back deep, the others stay triaged, and the action counts what is left.
#[test]
fn analyse_the_files_shown_deeply_runs_the_deep_pass_on_the_filter() {
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let out = common::run(&["scan", data.path().to_str().unwrap(), "--triage"]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let project = data.path().join(".framecull");
    let levels = || {
        common::list_jsonl(&project)
            .into_iter()
            .filter(|(_, r)| r["kind"] == "video" && r["status"] == "ok")
            .map(|(p, r)| (p, r["analysis_level"].as_str().unwrap().to_string()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert!(levels().values().all(|l| l == "triage"), "{:?}", levels());

    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    // Four triaged videos; the pictures are analysed deeply by a triage.
    h.get_by_label("Analyse the 4 files shown deeply");
    // Keep the videos of about 1 s.
    brush_one_second(&mut h);
    let shown = h.state().shown();
    let label = |n: usize| {
        format!(
            "Analyse the {} shown deeply",
            framecull::model::count(n as u64, "file")
        )
    };
    h.get_by_label(&label(shown)).click();
    h.step();
    assert!(h.state().is_scanning());
    wait(&mut h, "the deep pass", |a| !a.is_scanning() && a.is_idle());
    let after = levels();
    let deep: Vec<&String> = after
        .iter()
        .filter(|(_, l)| *l == "deep")
        .map(|(p, _)| p)
        .collect();
    assert_eq!(deep.len(), shown, "{after:?}");
    assert_eq!(after.len() - deep.len(), 4 - shown, "{after:?}");
    // Nothing shallow left in the filter: the action is gone; cleared, it offers the rest.
    assert!(h.query_by_label_contains("shown deeply").is_none());
    h.state_mut()
        .apply(Command::Filter(FilterCommand::ClearRange(
            framecull::model::Measure::DurationSecs,
        )));
    h.run();
    h.get_by_label(&label(4 - shown));
}

/// The label chart filters as the histograms do (`label:NAME`, `label:none`), and the
/// inspector sets a file's label, offering the labels in use as it is typed.
#[test]
fn label_chart_filters_and_the_inspector_sets_a_label_from_those_in_use() {
    use eframe::egui::accesskit::Role;
    use framecull::media::synth::ImageKind;
    let data = tempfile::tempdir().unwrap();
    for (n, name) in [
        "cat/a.png",
        "cat/b.png",
        "cat/c.png",
        "dog/d.png",
        "loose.png",
    ]
    .into_iter()
    .enumerate()
    {
        let w = 32 + 8 * n as u32;
        common::image(data.path(), name, ImageKind::Png, w, w * 3 / 4, None);
    }
    let out = common::run(&["scan", data.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let project = data.path().join(".framecull");
    let out = common::run(&[
        "labels",
        "import",
        "--from-folders",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));

    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    assert_eq!(h.state().shown(), 5);
    h.get_by_label_contains("label cat:").click();
    h.run();
    assert_eq!(
        h.state().shown_paths(),
        ["cat/a.png", "cat/b.png", "cat/c.png"]
    );
    assert!(h.query_by_label("label cat  x").is_some());
    assert!(h.query_by_label_contains("label:cat").is_some());
    h.get_by_label_contains("label (no label):").click();
    h.run();
    assert_eq!(h.state().shown_paths(), ["loose.png"]);

    // The unlabelled file gets a label from those in use: typed in part, then picked.
    h.get_by_label("loose.png").click();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "label:").focus();
    h.run_steps(5);
    h.get_by_role_and_label(Role::TextInput, "label:")
        .type_text("DO");
    h.run_steps(5);
    assert!(
        h.query_by_label("cat").is_none(),
        "only labels holding the text"
    );
    h.get_by_label("dog").click();
    h.step();
    wait(&mut h, "the label", |a| a.pending_edits() == 0);
    let reviews = framecull::catalog::Catalog::open(&project)
        .unwrap()
        .all_reviews()
        .unwrap();
    let labelled: Vec<_> = reviews
        .values()
        .filter_map(|r| r.label.as_deref())
        .filter(|l| *l == "dog")
        .collect();
    assert_eq!(labelled.len(), 2);
    // The filter (label:none) no longer shows it, and the chart counts it under dog.
    assert!(h.state().shown_paths().is_empty());
    h.get_by_label("label (none)  x").click();
    h.run();
    assert!(h.query_by_label_contains("label dog: 2 files").is_some());
    // Undo takes the label back.
    h.state_mut().apply(Command::Review(ReviewCommand::Undo));
    wait(&mut h, "the undo", |a| a.pending_edits() == 0);
    h.run();
    assert!(h.query_by_label_contains("label dog: 1 file,").is_some());
}
