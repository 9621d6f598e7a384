//! Commands on what the filter keeps, the table order and the flag panel's thresholds.

use crate::gui::app::App;
use crate::gui::command::FilterCommand;
use crate::gui::jobs::spawn_save_settings;

impl App {
    pub(in crate::gui) fn on_filter(&mut self, command: FilterCommand) {
        match command {
            FilterCommand::Brush { measure, lo, hi } => {
                let (lo, hi) = round_outward(lo.min(hi), lo.max(hi));
                self.shown.filter.ranges.retain(|r| r.0 != measure);
                self.shown.filter.ranges.push((measure, lo, hi));
                self.refilter();
            }
            FilterCommand::ClearRange(measure) => {
                self.shown.filter.ranges.retain(|r| r.0 != measure);
                self.refilter();
            }
            FilterCommand::FilterLabel(label) => {
                self.shown.filter.label = label;
                self.refilter();
            }
            FilterCommand::FilterFlag(code) => {
                if code != self.shown.filter.flag {
                    // Edited thresholds belong to the flag they were made on.
                    self.drafts.settings = None;
                }
                self.shown.filter.flag = code;
                self.refilter();
            }
            FilterCommand::DraftSetting { key, value } => {
                let setting = crate::analysis::rules::SETTINGS
                    .iter()
                    .find(|s| s.key == key);
                if let (Some(view), Some(setting)) = (&self.view, setting) {
                    let draft = self
                        .drafts
                        .settings
                        .get_or_insert_with(|| view.config.clone());
                    setting.set(draft, value);
                }
            }
            FilterCommand::ResetSettings => self.drafts.settings = None,
            FilterCommand::SaveSettings => {
                if let (Some(view), Some(draft), None) =
                    (&self.view, &self.drafts.settings, &self.loading)
                {
                    let changes = crate::analysis::rules::SETTINGS
                        .iter()
                        .map(|s| (s, s.value(draft)))
                        .filter(|(s, v)| *v != s.value(&view.config))
                        .collect();
                    self.loading = Some(spawn_save_settings(view.project.clone(), changes));
                }
            }
            FilterCommand::Search(text) => {
                self.shown.filter.search = text;
                self.refilter();
            }
            FilterCommand::SortBy(key) => {
                self.state.sort = match self.state.sort.take() {
                    Some((c, asc)) if c == key => Some((c, !asc)),
                    _ => Some((key, true)),
                };
                self.resort();
                self.refilter();
            }
        }
    }
}

/// A brushed range widened to three significant digits of its width, so the filter reads
/// `0.2<=duration_secs<=3.34` rather than with every digit of a pointer position.
fn round_outward(lo: f64, hi: f64) -> (f64, f64) {
    let width = hi - lo;
    if !(width.is_finite() && width > 0.0) {
        return (lo, hi);
    }
    let step = 10f64.powf(width.log10().floor() - 2.0);
    let (l, h) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    // Keep the shortest decimal form (a multiple of 0.001 is not exact in binary).
    let tidy = |v: f64| {
        format!("{v:.*}", (-step.log10()).max(0.0) as usize)
            .parse()
            .unwrap_or(v)
    };
    (tidy(l).min(lo), tidy(h).max(hi))
}

#[cfg(test)]
mod tests {
    use super::round_outward;

    #[test]
    fn brushed_ranges_round_outward_to_three_digits_of_their_width() {
        assert_eq!(
            round_outward(0.2035051840972784, 3.333903370404572),
            (0.2, 3.34)
        );
        assert_eq!(round_outward(0.9, 1.1), (0.9, 1.1));
        assert_eq!(round_outward(1234.5, 98765.4), (1200.0, 98800.0));
        assert_eq!(round_outward(5.0, 5.0), (5.0, 5.0));
    }
}
