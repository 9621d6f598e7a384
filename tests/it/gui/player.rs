//! The player: clips marked with I and O, undo and redo, a drag on the timeline, exact frames.

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use framecull::gui::{App, Command, PlayerCommand, SelectionCommand};

use super::{catalog_clips, harness, wait};
use crate::common;

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
