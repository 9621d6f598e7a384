//! Clips from the window: cuts, proposals as the command line makes them, exported clip files.

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use framecull::gui::{App, Command, DialogCommand, ReviewCommand, SelectionCommand};

use super::{catalog_clips, harness, wait};
use crate::common;

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
