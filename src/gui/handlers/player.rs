//! Commands on the player and its in and out points.

use crate::gui::app::App;
use crate::gui::command::PlayerCommand;

impl App {
    pub(in crate::gui) fn on_player(&mut self, command: PlayerCommand) {
        match command {
            PlayerCommand::PlayPause => {
                if let Some(p) = &mut self.player {
                    if p.speed == 0.0 {
                        p.play(1.0)
                    } else {
                        p.pause()
                    }
                }
            }
            PlayerCommand::Step(d) => {
                if let Some(p) = &mut self.player {
                    p.step(d);
                }
            }
            PlayerCommand::Shuttle(d) => {
                if let Some(p) = &mut self.player {
                    p.shuttle(d);
                }
            }
            PlayerCommand::SeekFrame(f) => {
                if let Some(p) = &mut self.player {
                    p.seek(f);
                }
            }
            PlayerCommand::MarkIn => {
                if let Some(p) = &mut self.player {
                    p.mark_in = Some(p.current);
                }
            }
            PlayerCommand::MarkOut => self.mark_out(),
        }
    }
}
