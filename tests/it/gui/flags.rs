//! The flag panel: a rule explained, its threshold previewed, saved and recomputed.

use std::path::Path;

use egui_kittest::kittest::Queryable;
use framecull::gui::{App, Command, FilterCommand};

use super::{harness, rules_dataset, wait};
use crate::common;

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
    // An optional rule may be turned off: a preview of no file flagged, until Reset.
    h.get_by_label("Turn off").click();
    h.run();
    assert!(
        h.query_by_label_contains("With the edited settings: 0 files")
            .is_some()
    );
    h.get_by_label("Reset").click();
    h.run();
    assert!(h.query_by_label("Turn off").is_some());

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
