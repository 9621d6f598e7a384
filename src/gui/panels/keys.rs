//! Keyboard shortcuts and the window that lists them (F1).

use eframe::egui::{self};

use crate::gui::command::{Command, PlayerCommand, ReviewCommand, SelectionCommand};
use crate::model::Decision;

/// Keyboard shortcuts (when no text field has the keyboard).
pub(super) fn shortcuts(ui: &egui::Ui, commands: &mut Vec<Command>) {
    use egui::Key;
    ui.input(|i| {
        let shift = i.modifiers.shift;
        let command = i.modifiers.command;
        // Several presses can land in one frame (key repeat, fast typing): count them.
        let step = if shift { 10 } else { 1 };
        let right = i.num_presses(Key::ArrowRight) as i64;
        let left = i.num_presses(Key::ArrowLeft) as i64;
        if !command && right != left {
            commands.push(Command::Player(PlayerCommand::Step(step * (right - left))));
        }
        let down = i.num_presses(Key::ArrowDown) as i64 - i.num_presses(Key::ArrowUp) as i64;
        if !command && down != 0 {
            commands.push(Command::Selection(SelectionCommand::SelectNext(down)));
        }
        for (key, c) in [
            (Key::Space, Command::Player(PlayerCommand::PlayPause)),
            (Key::J, Command::Player(PlayerCommand::Shuttle(-1))),
            (Key::K, Command::Player(PlayerCommand::Shuttle(0))),
            (Key::L, Command::Player(PlayerCommand::Shuttle(1))),
            (Key::I, Command::Player(PlayerCommand::MarkIn)),
            (Key::O, Command::Player(PlayerCommand::MarkOut)),
        ] {
            if !command && i.key_pressed(key) {
                commands.push(c);
            }
        }
        if !command {
            for (key, d) in [
                (Key::A, Decision::Accepted),
                (Key::R, Decision::Rejected),
                (Key::U, Decision::Unreviewed),
            ] {
                if i.key_pressed(key) {
                    commands.push(Command::Review(ReviewCommand::Decide(d)));
                }
            }
        }
        if command && i.key_pressed(Key::Z) {
            commands.push(if shift {
                Command::Review(ReviewCommand::Redo)
            } else {
                Command::Review(ReviewCommand::Undo)
            });
        }
        if command && i.key_pressed(Key::Y) {
            commands.push(Command::Review(ReviewCommand::Redo));
        }
    });
}

/// Every shortcut, in a window (F1).
pub(super) fn help_ui(ctx: &egui::Context, open: &mut bool) {
    egui::Window::new("Keyboard shortcuts")
        .open(open)
        .resizable(false)
        .collapsible(false)
        .show(ctx, |ui| {
            egui::Grid::new("keys").striped(true).show(ui, |ui| {
                for (k, what) in [
                    ("Space", "play / pause"),
                    ("Up Down", "previous / next file"),
                    ("Left Right", "previous / next frame (Shift: 10 frames)"),
                    (
                        "J K L",
                        "play backward / pause / play forward (again: faster)",
                    ),
                    ("I", "in point of a clip at the playhead"),
                    ("O", "out point: adds the clip (both frames included)"),
                    (
                        "A R U",
                        "accept / reject / reset the clip under the playhead, else the file",
                    ),
                    ("Ctrl+Z", "undo"),
                    ("Ctrl+Shift+Z, Ctrl+Y", "redo"),
                    ("Tab, Shift+Tab", "move to the next / previous control"),
                    ("Enter", "press the control that has the keyboard"),
                    ("F1", "this window"),
                ] {
                    ui.monospace(k);
                    ui.label(what);
                    ui.end_row();
                }
            });
        });
}
