//! The window driven headless through AccessKit (egui_kittest): open a project, brush a
//! histogram, switch to the gallery, select a file, start and cancel a scan.
#![cfg(feature = "gui")]
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use framecull::gui::{
    App, Command, DialogCommand, FilterCommand, JobCommand, PlayerCommand, ReviewCommand,
    SelectionCommand,
};

fn harness(dir: &Path) -> Harness<'static, App> {
    let dir = dir.to_path_buf();
    // Background threads (player, thumbnails) ask for repaints: allow a few more steps for
    // `run` to settle on a slow machine.
    Harness::builder()
        .with_size(eframe::egui::vec2(1400.0, 860.0))
        .with_max_steps(24)
        .build_eframe(move |cc| App::new(cc, Some(dir)))
}

/// Brush the duration histogram to the files of 0.9 to 1.1 s.
fn brush_one_second(h: &mut Harness<'static, App>) {
    h.state_mut().apply(Command::Filter(FilterCommand::Brush {
        measure: framecull::model::Measure::DurationSecs,
        lo: 0.9,
        hi: 1.1,
    }));
    h.run();
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

/// Frame index of the counter pattern, from the shown picture's top half (8 blocks).
fn counter_in(image: &eframe::egui::ColorImage) -> usize {
    let [w, _] = image.size;
    (0..8).fold(0, |acc, k| {
        let px = image.pixels[8 * w + k * w / 8 + w / 16];
        (acc << 1) | usize::from(px.r() > 128)
    })
}

fn settled(a: &App) -> bool {
    a.player().is_some_and(|p| p.is_settled()) && a.pending_edits() == 0
}

fn press(h: &mut Harness<'static, App>, key: eframe::egui::Key, times: usize) {
    for _ in 0..times {
        h.key_press(key);
        h.step();
        wait(h, "the frame", settled);
    }
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

#[test]
fn player_marks_a_clip_with_i_and_o_undo_redo_decisions_and_bulk_reject() {
    use eframe::egui::{Key, Modifiers};
    use framecull::media::synth::{Pattern, VideoSpec};
    let data = tempfile::tempdir().unwrap();
    let mut counter = VideoSpec::new("libx264", 128, 64, 30, 60);
    counter.pattern = Pattern::Counter;
    counter.vfr = true;
    counter.gop = 15;
    let path = common::video(data.path(), "counter.mp4", &counter);
    common::video(
        data.path(),
        "other.mp4",
        &VideoSpec::new("libx264", 96, 64, 25, 20),
    );
    let out = common::run(&["scan", data.path().to_str().unwrap(), "--deep"]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let project = data.path().join(".framecull");
    let (pts, _) =
        framecull::media::decode::frame_timestamps(&path.as_path().into(), Default::default())
            .unwrap();

    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    let item = h.state().item_id("counter.mp4").unwrap();
    h.state_mut()
        .apply(Command::Selection(SelectionCommand::Select(Some(item))));
    wait(&mut h, "the first frame", settled);
    let shown = |h: &Harness<'static, App>| {
        let (i, image) = h.state().player().unwrap().shown().unwrap();
        (i, counter_in(image))
    };
    assert_eq!(shown(&h), (0, 0));

    // Step to frame 5, mark in, step 3, mark out: frames 5..=8.
    press(&mut h, Key::ArrowRight, 5);
    assert_eq!(
        shown(&h),
        (5, 5),
        "the picture shows the frame the playhead is on"
    );
    press(&mut h, Key::I, 1);
    press(&mut h, Key::ArrowRight, 3);
    press(&mut h, Key::O, 1);
    let clips = catalog_clips(&project);
    assert_eq!(clips.len(), 1);
    let c = &clips[0];
    assert_eq!((c.start_frame, c.end_frame), (Some(5), Some(9)));
    assert_eq!((c.start_pts, c.end_pts), (pts[5], pts[9]));

    // Frame accuracy on a variable-frame-rate file: seeking far away and back to the stored
    // boundary shows the marked frame (decoded pixels).
    h.state_mut()
        .apply(Command::Player(PlayerCommand::SeekFrame(50)));
    wait(&mut h, "frame 50", settled);
    assert_eq!(shown(&h), (50, 50));
    h.get_by_label("go").click();
    h.step();
    wait(&mut h, "the clip start", settled);
    assert_eq!(shown(&h), (5, 5));

    // Undo removes the clip, redo restores it.
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.step();
    wait(&mut h, "undo", settled);
    assert!(catalog_clips(&project).is_empty());
    h.key_press_modifiers(Modifiers::COMMAND | Modifiers::SHIFT, Key::Z);
    h.step();
    wait(&mut h, "redo", settled);
    assert_eq!(catalog_clips(&project).len(), 1);

    // Dragging the clip's end on the timeline moves it (frame 9 -> about 20); undo puts it back.
    h.run_steps(3);
    let (from, to) = {
        let p = h.state().player().unwrap();
        (p.timeline_point(9).unwrap(), p.timeline_point(20).unwrap())
    };
    h.hover_at(from);
    h.step();
    h.drag_at(from);
    h.step();
    for k in 1..=6 {
        h.hover_at(from.lerp(to, k as f32 / 6.0));
        h.step();
    }
    h.drop_at(to);
    h.step();
    wait(&mut h, "the reshaped clip", settled);
    let clips = catalog_clips(&project);
    assert_eq!(clips.len(), 1);
    assert_eq!(clips[0].start_frame, Some(5));
    let end = clips[0].end_frame.unwrap();
    assert!((18..=23).contains(&end), "end frame {end}");
    assert_eq!(clips[0].end_pts, pts[end as usize]);
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.step();
    wait(&mut h, "undo of the drag", settled);
    let clips = catalog_clips(&project);
    assert_eq!(
        (clips[0].start_frame, clips[0].end_frame),
        (Some(5), Some(9))
    );

    // A on a frame outside the clip accepts the file; R inside the clip rejects the clip.
    h.state_mut()
        .apply(Command::Player(PlayerCommand::SeekFrame(30)));
    wait(&mut h, "frame 30", settled);
    press(&mut h, Key::A, 1);
    let reviews = framecull::catalog::Catalog::open(&project)
        .unwrap()
        .all_reviews()
        .unwrap();
    assert_eq!(
        reviews.values().map(|r| r.decision).collect::<Vec<_>>(),
        [framecull::model::Decision::Accepted]
    );
    assert_eq!(
        h.state().decision("counter.mp4"),
        Some(framecull::model::Decision::Accepted)
    );
    h.state_mut()
        .apply(Command::Player(PlayerCommand::SeekFrame(6)));
    wait(&mut h, "frame 6", settled);
    press(&mut h, Key::R, 1);
    let clips = catalog_clips(&project);
    assert_eq!(clips[0].decision, framecull::model::Decision::Rejected);
    assert_eq!(
        (clips[0].start_frame, clips[0].end_frame),
        (Some(5), Some(9))
    );

    // Bulk: reject every file the filter shows (both).
    h.get_by_label("Reject 2 shown").click();
    h.step();
    wait(&mut h, "the bulk reject", |a| a.pending_edits() == 0);
    let reviews = framecull::catalog::Catalog::open(&project)
        .unwrap()
        .all_reviews()
        .unwrap();
    assert_eq!(reviews.len(), 2);
    assert!(
        reviews
            .values()
            .all(|r| r.decision == framecull::model::Decision::Rejected)
    );
}

/// Update a player outside a window until `done` holds.
fn drive(
    ctx: &eframe::egui::Context,
    player: &mut framecull::gui::player::Player,
    done: impl Fn(&framecull::gui::player::Player) -> bool,
) {
    let start = Instant::now();
    while !done(player) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the player did not answer"
        );
        player.update(ctx);
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn player_shows_the_stored_boundary_frame_on_the_corpus_variable_frame_rate_file() {
    use framecull::gui::player::{Converter, Player, Video, clip_frames};
    use framecull::media::reader::{ReadTimes, VideoReader};
    let Some(media) = common::corpus_dir() else {
        return;
    };
    let path = media.join("video/dvr_traffic_camera_vfr.mp4");
    let ctx = eframe::egui::Context::default();
    let video = Video {
        source: framecull::media::Source::File(path.clone()),
        read: Default::default(),
        item: 1,
        quarter_turns: 0,
    };
    let mut player = Player::open(&ctx, Path::new("/nonexistent"), video);
    drive(&ctx, &mut player, |p| p.is_settled());
    let timeline = player.timeline.clone().unwrap();
    let n = timeline.len();
    assert!(n > 100, "{n} frames");
    // A clip over the middle third, stored as timestamps, maps back to the same frames.
    let (s, e) = (n / 3, 2 * n / 3);
    let clip = timeline.clip(1, s, e, None, framecull::model::ClipOrigin::Manual);
    assert_eq!(clip_frames(&clip, &timeline), (s, e));
    for target in [e - 1, s, s + 1, 0] {
        player.seek(target);
        drive(&ctx, &mut player, |p| p.is_settled());
        let (shown, image) = player.shown().unwrap();
        assert_eq!(shown, target);
        // The same frame decoded from the start, every frame up to it, with no seek.
        let mut reader = VideoReader::open(&path, 1).unwrap();
        let mut picture = None;
        reader
            .read(
                &(0..=target).collect::<Vec<usize>>(),
                None,
                &mut ReadTimes::default(),
                &mut |i, p| {
                    if i == target {
                        picture = Some(p);
                    }
                },
            )
            .unwrap();
        let reference = Converter::default().display(picture.unwrap(), 0);
        assert!(
            image.pixels == reference.pixels,
            "frame {target}: the player shows another frame"
        );
    }
}

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

/// A video of three shots in `data`, scanned at `level` (`--deep`, `--triage`) into
/// `data/.framecull`, open in the window's player with its curves loaded.
fn shots_in_the_player(data: &Path, level: &str) -> Harness<'static, App> {
    use framecull::media::synth::{Pattern, VideoSpec};
    let mut shots = VideoSpec::new("libx264", 160, 96, 25, 75);
    shots.pattern = Pattern::Shots { len: 25 };
    common::video(data, "shots.mp4", &shots);
    let out = common::run(&["scan", data.to_str().unwrap(), level]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let mut h = harness(data);
    wait(&mut h, "the project to load", App::is_idle);
    let first = h.state().shown_paths()[0].to_string();
    let item = h
        .state()
        .item_id(&first)
        .expect("the first shown file has an id");
    h.state_mut()
        .apply(Command::Selection(SelectionCommand::Select(Some(item))));
    wait(&mut h, "the player", |a| {
        a.player()
            .is_some_and(|p| p.is_settled() && p.curves.is_some())
    });
    h
}

#[test]
fn split_at_cuts_with_a_label_and_tags_from_the_inspector() {
    use eframe::egui::accesskit::Role;
    let data = tempfile::tempdir().unwrap();
    let project = data.path().join(".framecull");
    let mut h = shots_in_the_player(data.path(), "--deep");
    h.get_by_role_and_label(Role::TextInput, "label for new clips:")
        .focus();
    h.run_steps(5);
    h.get_by_role_and_label(Role::TextInput, "label for new clips:")
        .type_text("interview");
    h.run_steps(5);
    h.get_by_label("Split at cuts").click();
    h.step();
    wait(&mut h, "the clips", |a| a.pending_edits() == 0);
    let mut clips = catalog_clips(&project);
    clips.sort_by_key(|c| c.start_frame);
    let frames: Vec<_> = clips
        .iter()
        .map(|c| (c.start_frame.unwrap(), c.end_frame.unwrap()))
        .collect();
    assert_eq!(frames, [(0, 25), (25, 50), (50, 75)]);
    assert!(clips.iter().all(|c| c.label.as_deref() == Some("interview")
        && c.origin == framecull::model::ClipOrigin::Cuts));
    // Another label in the field, and "label it" on one clip: that clip alone changes.
    h.get_by_role_and_label(Role::TextInput, "label for new clips:")
        .focus();
    h.run_steps(5);
    for _ in 0.."interview".len() {
        h.key_press(eframe::egui::Key::Backspace);
        h.step();
    }
    h.get_by_role_and_label(Role::TextInput, "label for new clips:")
        .type_text("broll");
    h.run_steps(5);
    h.get_all_by_label("label it").next().unwrap().click();
    h.step();
    wait(&mut h, "the clip's label", |a| a.pending_edits() == 0);
    let mut labels: Vec<_> = catalog_clips(&project)
        .into_iter()
        .map(|c| (c.start_frame, c.label))
        .collect();
    labels.sort();
    assert_eq!(
        labels,
        [
            (Some(0), Some("broll".to_string())),
            (Some(25), Some("interview".to_string())),
            (Some(50), Some("interview".to_string())),
        ]
    );

    h.get_by_role_and_label(Role::TextInput, "tags:").focus();
    h.run_steps(5);
    h.get_by_role_and_label(Role::TextInput, "tags:")
        .type_text("outdoor, day");
    h.run_steps(5);
    h.get_by_label("Set tags").click();
    h.step();
    wait(&mut h, "the tags", |a| a.pending_edits() == 0);
    let reviews = framecull::catalog::Catalog::open(&project)
        .unwrap()
        .all_reviews()
        .unwrap();
    assert_eq!(reviews.values().next().unwrap().tags, ["day", "outdoor"]);

    h.get_by_role_and_label(Role::TextInput, "note:").focus();
    h.run_steps(5);
    h.get_by_role_and_label(Role::TextInput, "note:")
        .type_text("keep for night tests");
    h.run_steps(5);
    h.get_by_label("Set note").click();
    h.step();
    wait(&mut h, "the note", |a| a.pending_edits() == 0);
    let reviews = framecull::catalog::Catalog::open(&project)
        .unwrap()
        .all_reviews()
        .unwrap();
    let review = reviews.values().next().unwrap();
    assert_eq!(review.note.as_deref(), Some("keep for night tests"));
    assert_eq!(review.tags, ["day", "outdoor"], "the note keeps the tags");
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

/// The window's "Split at cuts" and "Propose clips" and the command line's `clips
/// split-at-cuts` and `clips propose` give the same clips, to the frame and the timestamp,
/// on copies of one analysed project (an NTSC-rate video with cuts, one with a motion burst).
#[test]
fn the_window_and_the_command_line_propose_the_same_clips() {
    use framecull::media::synth::{Pattern, VideoSpec};
    let data = tempfile::tempdir().unwrap();
    let mut shots = VideoSpec::new("libx264", 160, 96, 30, 90);
    shots.fps = (30000, 1001);
    shots.pattern = Pattern::Shots { len: 23 };
    common::video(data.path(), "shots.mp4", &shots);
    let mut burst = VideoSpec::new("libx264", 160, 96, 25, 150);
    burst.pattern = Pattern::Burst {
        start: 40,
        end: 80,
        speed: 8,
    };
    common::video(data.path(), "burst.mp4", &burst);
    let projects = tempfile::tempdir().unwrap();
    let (window, cli) = (projects.path().join("window"), projects.path().join("cli"));
    let out = common::run(&[
        "scan",
        data.path().to_str().unwrap(),
        "--deep",
        "--project",
        window.to_str().unwrap(),
    ]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    std::fs::create_dir_all(&cli).unwrap();
    for entry in std::fs::read_dir(&window).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, cli.join(path.file_name().unwrap())).unwrap();
        }
    }

    let mut h = harness(&window);
    wait(&mut h, "the project to load", App::is_idle);
    for i in 0..2 {
        let path = h.state().shown_paths()[i].to_string();
        let item = h.state().item_id(&path).expect("a shown file has an id");
        h.state_mut()
            .apply(Command::Selection(SelectionCommand::Select(Some(item))));
        wait(&mut h, "the player", |a| {
            a.player()
                .is_some_and(|p| p.is_settled() && p.curves.is_some())
        });
        for command in [
            Command::Review(ReviewCommand::SplitAtCuts),
            Command::Review(ReviewCommand::ProposeClips),
        ] {
            h.state_mut().apply(command);
            h.step();
            wait(&mut h, "the clips", |a| a.pending_edits() == 0);
        }
    }
    for action in ["split-at-cuts", "propose"] {
        let out = common::run(&["clips", action, "--project", cli.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }

    let key = |project: &Path| {
        let mut clips: Vec<_> = catalog_clips(project)
            .into_iter()
            .map(|c| {
                (
                    c.item_id,
                    c.origin,
                    c.start_frame,
                    c.end_frame,
                    c.start_pts,
                    c.end_pts,
                )
            })
            .collect();
        clips.sort_by_key(|c| (c.0, c.1.as_str(), c.2, c.3));
        clips
    };
    let (from_window, from_cli) = (key(&window), key(&cli));
    use framecull::model::ClipOrigin;
    assert!(
        from_cli.iter().any(|c| c.1 == ClipOrigin::Cuts)
            && from_cli.iter().any(|c| c.1 == ClipOrigin::Auto),
        "both kinds of proposal: {from_cli:?}"
    );
    assert_eq!(from_window, from_cli);
}

/// A triaged video has curves (its keyframes' hashes) but no cuts or motion: "Split at cuts"
/// and "Propose clips" say it needs the deep pass, and add nothing.
#[test]
fn clips_from_cuts_or_motion_ask_for_the_deep_pass_on_a_triaged_video() {
    let data = tempfile::tempdir().unwrap();
    let mut h = shots_in_the_player(data.path(), "--triage");
    for command in [
        Command::Review(ReviewCommand::SplitAtCuts),
        Command::Review(ReviewCommand::ProposeClips),
    ] {
        h.state_mut().apply(command);
        h.step();
        h.get_by_label_contains("no deep analysis for this video yet (framecull analyze)");
        assert_eq!(h.state().pending_edits(), 0);
    }
    assert!(catalog_clips(&data.path().join(".framecull")).is_empty());
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

fn flagged(project: &Path, code: &str) -> Vec<String> {
    let out = common::run(&[
        "flags",
        "--project",
        project.to_str().unwrap(),
        "--code",
        code,
        "--json",
    ]);
    let groups: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut paths: Vec<String> = groups
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["items"].as_array().unwrap().clone())
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect();
    paths.sort();
    paths
}

/// The flag panel: reached by keyboard (Tab to the flag, Enter), it explains the rule and
/// shows its setting; an edited threshold previews how many files it would flag (the same
/// number `flags` gives once saved); saving writes framecull.toml, recomputes the flags and
/// reloads the window; Reset drops an edit.
#[test]
fn a_flag_threshold_is_explained_previewed_saved_and_recomputed() {
    use eframe::egui::Key;
    let data = tempfile::tempdir().unwrap();
    let project = rules_dataset(data.path());
    assert_eq!(flagged(&project, "resolution_below_min").len(), 2);

    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    let all = h.state().shown();
    let mut tabs = 0;
    while !h.get_by_label("resolution_below_min  2").is_focused() {
        tabs += 1;
        assert!(tabs < 60, "Tab never reached the flag");
        h.key_press(Key::Tab);
        h.run();
    }
    h.key_press(Key::Enter);
    h.run();
    assert_eq!(h.state().shown(), 2, "Enter on the flag filters on it");
    assert!(
        h.query_by_label_contains("Width or height below rules.min_width")
            .is_some()
    );
    assert!(h.query_by_label("Flags 2 files now.").is_some());
    assert!(h.query_by_label("rules.min_width").is_some());

    // 112 and 128 wide are caught too at 130: a preview, nothing saved yet.
    h.state_mut()
        .apply(Command::Filter(FilterCommand::DraftSetting {
            key: "rules.min_width",
            value: Some(130.0),
        }));
    h.run();
    assert!(
        h.query_by_label("With the edited settings: 4 files (+2)")
            .is_some()
    );
    assert_eq!(flagged(&project, "resolution_below_min").len(), 2);
    h.get_by_label("Reset").click();
    h.run();
    assert!(
        h.query_by_label_contains("With the edited settings")
            .is_none()
    );

    h.state_mut()
        .apply(Command::Filter(FilterCommand::DraftSetting {
            key: "rules.min_width",
            value: Some(130.0),
        }));
    h.run();
    h.get_by_label("Save to framecull.toml and recompute flags")
        .click();
    h.step();
    wait(&mut h, "the flags to be recomputed", App::is_idle);
    let text = std::fs::read_to_string(project.join("framecull.toml")).unwrap();
    assert!(text.contains("min_width = 130"), "{text}");
    let now = flagged(&project, "resolution_below_min");
    assert_eq!(now.len(), 4, "{now:?}");
    let mut shown: Vec<String> = h
        .state()
        .shown_paths()
        .iter()
        .map(|p| p.to_string())
        .collect();
    shown.sort();
    assert_eq!(shown, now, "the window shows what `flags` lists");
    assert!(h.query_by_label("Flags 4 files now.").is_some());
    assert!(
        h.query_by_label_contains("With the edited settings")
            .is_none()
    );
    h.state_mut()
        .apply(Command::Filter(FilterCommand::FilterFlag(None)));
    h.run();
    assert_eq!(h.state().shown(), all);

    // A framecull.toml that does not parse: the window opens with the defaults and the
    // panel says why, naming the file.
    std::fs::write(project.join("framecull.toml"), "[rules\nmin_width = 130\n").unwrap();
    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    h.state_mut()
        .apply(Command::Filter(FilterCommand::FilterFlag(Some(
            "resolution_below_min".into(),
        ))));
    h.run();
    assert!(
        h.query_by_label_contains("the defaults apply").is_some(),
        "the panel says the settings are invalid"
    );
    let file = project.join("framecull.toml").display().to_string();
    assert!(
        h.query_by_label_contains(&file).is_some(),
        "it names {file}"
    );
    assert!(h.query_by_label("rules.min_width").is_some());
    // min_width and min_height: no limit by default.
    assert_eq!(h.query_all_by_label("not set").count(), 2);
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

/// A project of a dataset in a bucket opens in the window: the table lists its objects and
/// thumbnails are decoded from the objects. Against moto (skipped without it, as in
/// tests/it/storage.rs); the window runs in a child test process given the store's settings in
/// its environment, which the client reads.
#[test]
fn a_project_of_a_bucket_opens_with_thumbnails_read_from_its_objects() {
    use common::s3::{Server, framecull, moto_server};
    let Some(moto) = moto_server() else { return };
    let data = tempfile::tempdir().unwrap();
    common::mixed_dataset(data.path());
    let server = Server::start(&moto, None);
    server.upload(data.path(), "window", "set", false);
    let project = tempfile::tempdir().unwrap();
    let out = framecull(&server, "test")
        .args(["scan", "s3://window/set", "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let settings = framecull(&server, "test")
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect::<Vec<_>>();
    let in_child = |test: &str, variable: &str, value: &std::ffi::OsStr, data: &Path| {
        // This binary again, running the one test: its name as libtest lists it (the module
        // path within the test binary: `gui::NAME`).
        let this_module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args(["--exact", &format!("{this_module}::{test}")])
            .args(["--nocapture", "--test-threads=1"])
            .env(variable, value)
            .env("XDG_DATA_HOME", data);
        for (name, value) in &settings {
            match value {
                Some(v) => child.env(name, v),
                None => child.env_remove(name),
            };
        }
        let out = child.output().unwrap();
        let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
    };
    let data_home = tempfile::tempdir().unwrap();
    in_child(
        "remote_project_in_the_window",
        "FRAMECULL_TEST_REMOTE_PROJECT",
        project.path().as_os_str(),
        data_home.path(),
    );
    // The URL typed on the start screen: scanned into the window's own project for it.
    in_child(
        "remote_url_typed_in_the_window",
        "FRAMECULL_TEST_REMOTE_URL",
        "s3://window/set/".as_ref(),
        data_home.path(),
    );
    let projects: Vec<_> = std::fs::read_dir(data_home.path().join("framecull/projects"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(projects.len(), 1, "{projects:?}");
    assert!(projects[0].starts_with("s3-window-set-"), "{projects:?}");
}

/// The window part of the test above for a URL typed on the start screen.
#[test]
fn remote_url_typed_in_the_window() {
    let Some(url) = std::env::var("FRAMECULL_TEST_REMOTE_URL").ok() else {
        return;
    };
    let mut h = Harness::builder()
        .with_size(eframe::egui::vec2(1400.0, 860.0))
        .with_max_steps(24)
        .build_eframe(|cc| App::new(cc, None));
    h.run();
    use eframe::egui::accesskit::Role;
    h.get_by_role_and_label(Role::TextInput, "Dataset folder or URL:")
        .focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "Dataset folder or URL:")
        .type_text(&url);
    h.run();
    h.get_by_role_and_label(Role::Button, "Open").click();
    h.run();
    wait(&mut h, "the scan and the load", App::is_idle);
    assert_eq!(h.state().shown(), 8);
    assert!(h.query_by_label_contains("s3://window/set").is_some());
    let project = framecull::catalog::Project::of_url(&url);
    assert!(project.exists(), "{}", project.dir().display());
    // Opening it again finds the same project (only what changed is read: nothing).
    h.state_mut()
        .apply(Command::Job(JobCommand::Open(url.into())));
    wait(&mut h, "the rescan", App::is_idle);
    assert_eq!(h.state().shown(), 8);
}

/// The window part of the test above; does nothing unless that test started it.
#[test]
fn remote_project_in_the_window() {
    let Some(project) = std::env::var_os("FRAMECULL_TEST_REMOTE_PROJECT") else {
        return;
    };
    let project = std::path::PathBuf::from(project);
    let mut h = harness(&project);
    wait(&mut h, "the project to load", App::is_idle);
    assert_eq!(h.state().shown(), 8);
    assert!(h.query_by_label_contains("s3://window/set").is_some());
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ShowGallery(true)));
    h.run();
    wait(&mut h, "the thumbnails", |a| !a.thumbnails_loading());
    h.run();
    // A thumbnail is cached in the project once it decoded: the videos and pictures that can
    // be read (not the empty or garbage files).
    let cached = std::fs::read_dir(project.join("thumbs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(cached >= 4, "{cached} thumbnails decoded from objects");
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

/// Step the UI until a widget whose label contains `text` shows.
fn wait_for_label(h: &mut Harness<'static, App>, text: &str) {
    let start = Instant::now();
    while h.query_by_label_contains(text).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {text:?}"
        );
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_export_dialog_writes_clip_files_and_their_folders_with_the_version() {
    let data = tempfile::tempdir().unwrap();
    let mut spec = framecull::media::synth::VideoSpec::new("libx264", 160, 96, 25, 60);
    spec.gop = 25;
    common::video(data.path(), "v.mp4", &spec);
    let out = common::run(&["scan", data.path().to_str().unwrap(), "--deep"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let project = data.path().join(".framecull");
    let project_arg = project.to_str().unwrap();
    for (start, end) in [("f3", "f30"), ("f25", "f55")] {
        let out = common::run(&[
            "clips",
            "--project",
            project_arg,
            "add",
            "v.mp4",
            "--start",
            start,
            "--end",
            end,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    }
    let mut h = harness(data.path());
    wait(&mut h, "the project to load", App::is_idle);
    h.state_mut()
        .apply(Command::Dialog(DialogCommand::ShowExport));
    h.run();
    // Hugging Face folders and WebDataset shards are made of clip files: asked for alone,
    // the dialog says so.
    h.get_by_label("Hugging Face").click();
    h.get_by_label("WebDataset").click();
    h.run();
    assert!(
        h.query_by_label_contains("made of the clip files")
            .is_some()
    );
    h.get_by_label("each clip as a file of its own").click();
    h.run();
    assert!(
        h.query_by_label_contains("made of the clip files")
            .is_none()
    );
    h.get_by_label("Preview").click();
    h.step();
    wait_for_label(&mut h, "2 clips from 1 file");
    h.get_by_label("Export").click();
    h.step();
    wait_for_label(&mut h, "clip files in");
    // The version records each clip file, written where the dialog said.
    let dir = project.join("clip-files").join("train");
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.join("manifests/train/v0001.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["clip_files"]["files"], 2, "{meta}");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mp4"))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let mut frames: Vec<u64> = files.iter().map(|f| common::decoded_frames(f)).collect();
    frames.sort_unstable();
    assert_eq!(frames, [27, 30]);
    // And the Hugging Face folders of them: a metadata line for each clip.
    let hf = project
        .join("manifests/train")
        .join(meta["files"]["hf.dir"].as_str().unwrap());
    let lines: usize = std::fs::read_dir(hf.join("videos"))
        .unwrap()
        .map(|split| {
            std::fs::read_to_string(split.unwrap().path().join("metadata.jsonl"))
                .unwrap()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(lines, 2);
    // And the WebDataset shards: every clip file in one, as one sample.
    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            project
                .join("manifests/train")
                .join(meta["files"]["webdataset"].as_str().unwrap()),
        )
        .unwrap(),
    )
    .unwrap();
    let samples: u64 = index["splits"]
        .as_object()
        .unwrap()
        .values()
        .map(|s| s["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(samples, 2, "{index}");
}
