//! Commands on the selected files.

use crate::gui::app::App;
use crate::gui::command::{Command, SelectionCommand};

impl App {
    pub(in crate::gui) fn on_selection(&mut self, command: SelectionCommand) {
        match command {
            SelectionCommand::Select(item) => {
                let i = match item {
                    Some(id) => match self.row_of(id) {
                        Some(i) => Some(i),
                        // Not in the view (gone since the command was made): nothing to do.
                        None => return,
                    },
                    None => None,
                };
                self.selection.selected = i;
                self.selection.picked = i.into_iter().collect();
                self.open_player();
            }
            SelectionCommand::TogglePick(item) => {
                let Some(i) = self.row_of(item) else { return };
                if !self.selection.picked.remove(&i) {
                    self.selection.picked.insert(i);
                    self.selection.selected = Some(i);
                } else if self.selection.selected == Some(i) {
                    self.selection.selected = self.selection.picked.iter().next().copied();
                }
                self.open_player();
            }
            SelectionCommand::PickRange(item) => {
                let Some(i) = self.row_of(item) else { return };
                let from = self
                    .selection
                    .selected
                    .and_then(|s| self.shown.filtered.iter().position(|&f| f == s));
                let to = self.shown.filtered.iter().position(|&f| f == i);
                if let (Some(a), Some(b)) = (from, to) {
                    self.selection
                        .picked
                        .extend(self.shown.filtered[a.min(b)..=a.max(b)].iter().copied());
                } else {
                    self.selection.picked.insert(i);
                }
                self.selection.selected = Some(i);
                self.open_player();
            }
            SelectionCommand::SelectNext(d) => {
                let at = self
                    .selection
                    .selected
                    .and_then(|s| self.shown.filtered.iter().position(|&i| i == s));
                let next = match at {
                    Some(p) => {
                        (p as i64 + d).clamp(0, self.shown.filtered.len() as i64 - 1) as usize
                    }
                    None => 0,
                };
                let item = self
                    .shown
                    .filtered
                    .get(next)
                    .and_then(|&i| self.view.as_ref().map(|v| v.rows[i].id));
                if let Some(item) = item {
                    self.selection.scroll_to_selected = Some(());
                    self.apply(Command::Selection(SelectionCommand::Select(Some(item))));
                }
            }
        }
    }
}
