//! The side panel: summary cards, flags and decisions to filter on, and the histograms of
//! every measure (brushing one filters every view).

use eframe::egui::{self, RichText, Sense};

use crate::analysis::filter::LabelTerm;
use crate::gui::command::{Command, DialogCommand, FilterCommand, ReviewCommand};
use crate::gui::theme;
use crate::gui::view::{Filter, View};
use crate::model::{Decision, Measure};

/// A histogram drag narrower than this (screen points) sets no range.
const BRUSH_MIN_PX: f32 = 3.0;

pub(super) fn card_ui(ui: &mut egui::Ui, title: &str, value: String) {
    egui::Frame::new()
        .fill(theme::CARD_BG)
        .inner_margin(theme::SPACING)
        .corner_radius(6.0)
        .show(ui, |ui| {
            ui.set_min_width(100.0);
            ui.label(RichText::new(title).small());
            ui.label(RichText::new(value).strong().size(18.0));
        });
}

#[allow(clippy::too_many_arguments)]
pub(super) fn side_ui(
    ui: &mut egui::Ui,
    view: &View,
    shown: usize,
    picked: usize,
    filter: &Filter,
    label_subsets: &(Vec<u64>, u64),
    commands: &mut Vec<Command>,
) {
    egui::Grid::new("cards").num_columns(2).show(ui, |ui| {
        card_ui(ui, "files shown", format!("{shown} / {}", view.rows.len()));
        card_ui(ui, "size", crate::model::human_bytes(view.total_bytes));
        ui.end_row();
        card_ui(
            ui,
            "video time",
            format!("{:.1} min", view.total_video_secs / 60.0),
        );
        card_ui(ui, "flagged", view.flagged.to_string());
        ui.end_row();
    });
    ui.separator();
    ui.label(RichText::new("Review").strong());
    ui.label(format!(
        "{} accepted, {} rejected",
        view.review.accepted, view.review.rejected
    ));
    if picked > 1 {
        ui.colored_label(
            theme::ACCENT,
            format!("{picked} files selected: A / R / U apply to all"),
        );
    }
    ui.horizontal(|ui| {
        if ui.button(format!("Accept {shown} shown")).clicked() {
            commands.push(Command::Review(ReviewCommand::DecideShown(
                Decision::Accepted,
            )));
        }
        if ui.button(format!("Reject {shown} shown")).clicked() {
            commands.push(Command::Review(ReviewCommand::DecideShown(
                Decision::Rejected,
            )));
        }
    });
    ui.horizontal(|ui| {
        if ui.small_button("Undo").clicked() {
            commands.push(Command::Review(ReviewCommand::Undo));
        }
        if ui.small_button("Redo").clicked() {
            commands.push(Command::Review(ReviewCommand::Redo));
        }
        if ui.small_button("Shortcuts (F1)").clicked() {
            commands.push(Command::Dialog(DialogCommand::ToggleHelp));
        }
    });
    ui.separator();
    labels_ui(ui, view, filter, label_subsets, commands);
    ui.separator();
    ui.label(RichText::new("Flags").strong());
    egui::ScrollArea::vertical()
        .id_salt("flags")
        .show(ui, |ui| {
            for (code, severity, count) in &view.flag_counts {
                let selected = filter.flag.as_deref() == Some(code.as_str());
                let text = RichText::new(format!("{code}  {count}"))
                    .color(theme::severity_color(*severity));
                if ui.selectable_label(selected, text).clicked() {
                    commands.push(Command::Filter(FilterCommand::FilterFlag(
                        (!selected).then(|| code.clone()),
                    )));
                }
            }
        });
}

/// Height of one bar of the label chart.
const LABEL_ROW: f32 = 18.0;

/// The label chart: a bar per label (files, the shown ones over them) with its files and
/// clips, the unlabelled last; a click filters on it (`label:NAME`, `label:none`), again
/// drops the term. Rows are drawn only where the list is scrolled (thousands of classes).
fn labels_ui(
    ui: &mut egui::Ui,
    view: &View,
    filter: &Filter,
    (shown, shown_none): &(Vec<u64>, u64),
    commands: &mut Vec<Command>,
) {
    let counts = &view.labels.counts;
    let labelled = counts.iter().filter(|c| c.label.is_some()).count();
    ui.label(RichText::new(format!("Labels ({labelled})")).strong());
    if labelled == 0 {
        ui.label(RichText::new("none yet: framecull labels import, or the inspector").small());
        return;
    }
    let peak = counts.iter().map(|c| c.files).max().unwrap_or(1).max(1);
    egui::ScrollArea::vertical()
        .id_salt("labels")
        .max_height(LABEL_ROW * 10.0)
        .show_rows(ui, LABEL_ROW, counts.len(), |ui, range| {
            for c in &counts[range] {
                let term = match &c.label {
                    Some(l) => LabelTerm::Is(l.clone()),
                    None => LabelTerm::None,
                };
                let on = filter.label.as_ref() == Some(&term);
                let shown_files = match &c.label {
                    Some(l) => view
                        .labels
                        .names
                        .binary_search(l)
                        .ok()
                        .and_then(|i| shown.get(i).copied())
                        .unwrap_or(0),
                    None => *shown_none,
                };
                let name = c.label.as_deref().unwrap_or("(no label)");
                let width = ui.available_width();
                let (rect, response) =
                    ui.allocate_exact_size(egui::vec2(width, LABEL_ROW - 2.0), Sense::click());
                response.widget_info(|| {
                    egui::WidgetInfo::selected(
                        egui::Role::Button,
                        true,
                        on,
                        format!(
                            "label {name}: {}, {shown_files} shown, {}",
                            files(c.files),
                            crate::model::count(c.clips, "clip")
                        ),
                    )
                });
                let painter = ui.painter_at(rect);
                let bar = |n: u64| {
                    egui::Rect::from_min_size(
                        rect.min,
                        egui::vec2(rect.width() * n as f32 / peak as f32, rect.height()),
                    )
                };
                painter.rect_filled(bar(c.files), 2.0, theme::LABEL_BAR);
                painter.rect_filled(bar(shown_files), 2.0, theme::LABEL_BAR_SHOWN);
                if on {
                    painter.rect_stroke(
                        rect,
                        2.0,
                        egui::Stroke::new(1.0, theme::ACCENT),
                        egui::StrokeKind::Inside,
                    );
                }
                let clips = if c.clips > 0 {
                    format!(" · {}", crate::model::count(c.clips, "clip"))
                } else {
                    String::new()
                };
                painter.text(
                    rect.left_center() + egui::vec2(4.0, 0.0),
                    egui::Align2::LEFT_CENTER,
                    format!("{name}  {}{clips}", c.files),
                    egui::FontId::proportional(12.0),
                    ui.visuals().text_color(),
                );
                let response = response.on_hover_text(format!(
                    "{}, {shown_files} shown; {} clips",
                    files(c.files),
                    c.clips
                ));
                if response.clicked() {
                    commands.push(Command::Filter(FilterCommand::FilterLabel(
                        (!on).then_some(term),
                    )));
                }
            }
        });
}

pub(super) fn filter_chips_ui(ui: &mut egui::Ui, filter: &Filter, commands: &mut Vec<Command>) {
    if filter.is_empty() {
        ui.label(RichText::new("Drag across a histogram to filter").small());
        return;
    }
    ui.horizontal_wrapped(|ui| {
        for (measure, lo, hi) in &filter.ranges {
            let range = format!("{}..{}", measure.format(*lo), measure.format(*hi));
            if ui
                .button(format!("{} {range}  x", measure.title()))
                .clicked()
            {
                commands.push(Command::Filter(FilterCommand::ClearRange(*measure)));
            }
        }
        if let Some(code) = &filter.flag
            && ui.button(format!("flag {code}  x")).clicked()
        {
            commands.push(Command::Filter(FilterCommand::FilterFlag(None)));
        }
        let label = match &filter.label {
            Some(LabelTerm::Is(name)) => Some(name.as_str()),
            Some(LabelTerm::None) => Some("(none)"),
            None => None,
        };
        if let Some(name) = label
            && ui.button(format!("label {name}  x")).clicked()
        {
            commands.push(Command::Filter(FilterCommand::FilterLabel(None)));
        }
    });
    // The same filter on the command line (`list --where`, `export --where`).
    // Single-quoted for a POSIX shell (a ' in the text is written '\'').
    let text = format!("--where '{}'", filter.to_text().replace('\'', r"'\''"));
    ui.add(egui::Label::new(RichText::new(text).small().monospace()).selectable(true));
}

/// The histograms in rows as wide as the panel, `last` (the scatter) in the cell after them.
#[allow(clippy::too_many_arguments)]
pub(super) fn histograms_ui(
    ui: &mut egui::Ui,
    view: &View,
    subsets: &[Vec<u64>],
    filter: &Filter,
    log_counts: bool,
    brushing: &mut Option<(Measure, f32)>,
    commands: &mut Vec<Command>,
    last: impl FnOnce(&mut egui::Ui, &mut Vec<Command>),
) {
    let mut log = log_counts;
    if ui
        .checkbox(&mut log, "log counts")
        .on_hover_text("Bar heights by log(1 + files): small bins stay visible next to tall ones")
        .changed()
    {
        commands.push(Command::Dialog(DialogCommand::LogCounts(log)));
    }
    let cell = theme::HISTOGRAM_SIZE.x + theme::SPACING;
    let per_row = ((ui.available_width() / cell).floor() as usize).max(1);
    let empty = Vec::new();
    let cells: Vec<usize> = (0..=view.histograms.len()).collect();
    let mut last = Some(last);
    for chunk in cells.chunks(per_row) {
        ui.horizontal(|ui| {
            for &i in chunk {
                match view.histograms.get(i) {
                    Some(h) => {
                        let subset = subsets.get(i).unwrap_or(&empty);
                        let lines = rule_lines(h.measure, &view.config, theme::WARNING);
                        let estimated = view.triage_estimates.get(&h.measure).copied();
                        histogram_ui(
                            ui,
                            h,
                            subset,
                            &lines,
                            estimated.unwrap_or(0),
                            filter,
                            log_counts,
                            brushing,
                            commands,
                        );
                    }
                    None => {
                        if let Some(last) = last.take() {
                            last(ui, commands);
                        }
                    }
                }
            }
        });
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn histogram_ui(
    ui: &mut egui::Ui,
    h: &crate::analysis::histogram::Histogram,
    subset: &[u64],
    lines: &[Line],
    estimated: usize,
    filter: &Filter,
    log_counts: bool,
    brushing: &mut Option<(Measure, f32)>,
    commands: &mut Vec<Command>,
) {
    ui.vertical(|ui| {
        histogram_title_ui(ui, h, estimated);
        let (rect, response) = ui.allocate_exact_size(theme::HISTOGRAM_SIZE, Sense::drag());
        response.widget_info(|| {
            egui::WidgetInfo::labeled(
                egui::Role::Canvas,
                true,
                format!("{} histogram", h.measure.title()),
            )
        });
        let painter = ui.painter_at(rect);
        let peak_count = draw_bars(&painter, rect, &h.counts, subset, log_counts);
        // Value at a screen x, in the measure's units, and back.
        let Some(axis) = super::scatter::Axis::from_histogram(h) else {
            return;
        };
        // Axes: the count of the tallest bar, and the values at both ends and the middle.
        painter.text(
            rect.left_top() + egui::vec2(4.0, 2.0),
            egui::Align2::LEFT_TOP,
            if log_counts {
                format!("{} (log)", files(peak_count))
            } else {
                files(peak_count)
            },
            egui::FontId::proportional(10.0),
            theme::AXIS,
        );
        ticks_ui(ui, &axis, &[0.0, 0.5, 1.0]);
        bin_tooltip(&response, rect, h, subset);
        paint_filter_range(&painter, rect, &axis, filter);
        draw_lines(&painter, rect, &axis, lines);
        histogram_brush(ui, &response, rect, &axis, brushing, commands);
    });
}

/// A histogram's title: its measure, with the files a triage estimated and those beyond the
/// plotted range (the estimates explained on hover).
fn histogram_title_ui(
    ui: &mut egui::Ui,
    h: &crate::analysis::histogram::Histogram,
    estimated: usize,
) {
    let mut title = h.measure.title().to_string();
    if estimated > 0 {
        title += &format!(" · {estimated} from triage");
    }
    let (first, last) = (h.edges.first(), h.edges.last());
    if let (true, Some(lo)) = (h.underflow > 0, first) {
        title += &format!(" · {} below {}", h.underflow, h.measure.format(*lo));
    }
    if let (true, Some(hi)) = (h.overflow > 0, last) {
        title += &format!(" · {} above {}", h.overflow, h.measure.format(*hi));
    }
    let title = ui.label(RichText::new(title).small());
    if estimated > 0 {
        title.on_hover_text(format!(
            "The {} of {} are a triage's estimates, from the frames it decoded \
             (docs/ANALYSIS.md); \"Analyse the files shown deeply\" measures them",
            h.measure.title(),
            crate::model::count(estimated as u64, "file")
        ));
    }
}

/// On hover, the range of the bin under the pointer, its files, and how many the filter
/// shows.
fn bin_tooltip(
    response: &egui::Response,
    rect: egui::Rect,
    h: &crate::analysis::histogram::Histogram,
    subset: &[u64],
) {
    let n = h.counts.len().max(1);
    let w = rect.width() / n as f32;
    // Hover: the bin's range, its files, and how many the filter shows.
    if let Some(p) = response.hover_pos() {
        let i = (((p.x - rect.left()) / w) as usize).min(n - 1);
        if let (Some(a), Some(b)) = (h.edges.get(i), h.edges.get(i + 1)) {
            let text = format!(
                "{} to {}\n{}, {} shown",
                h.measure.format(*a),
                h.measure.format(*b),
                files(h.counts.get(i).copied().unwrap_or(0)),
                subset.get(i).copied().unwrap_or(0)
            );
            response.clone().on_hover_text_at_pointer(text);
        }
    }
}

/// The filter's range of the axis' measure, as a band with its edges marked.
fn paint_filter_range(
    painter: &egui::Painter,
    rect: egui::Rect,
    axis: &super::scatter::Axis,
    filter: &Filter,
) {
    let x_of = |v: f64| rect.left() + axis.t(v).unwrap_or(0.0) * rect.width();
    if let Some((_, lo, hi)) = filter.ranges.iter().find(|r| r.0 == axis.measure) {
        let r = egui::Rect::from_x_y_ranges(x_of(*lo)..=x_of(*hi), rect.y_range());
        painter.rect_filled(r, 0.0, theme::BRUSH);
        for x in [r.left(), r.right()] {
            painter.vline(x, rect.y_range(), egui::Stroke::new(1.0, theme::ACCENT));
        }
    }
}

/// A drag across the histogram brushes the axis' measure to the range dragged over;
/// `brushing` holds the measure and where the drag began.
fn histogram_brush(
    ui: &egui::Ui,
    response: &egui::Response,
    rect: egui::Rect,
    axis: &super::scatter::Axis,
    brushing: &mut Option<(Measure, f32)>,
    commands: &mut Vec<Command>,
) {
    let value_at = |x: f32| axis.value((x - rect.left()) / rect.width());
    if response.drag_started()
        && let Some(p) = ui
            .input(|i| i.pointer.press_origin())
            .or(response.interact_pointer_pos())
    {
        // Where the button went down, not where the drag was recognised.
        *brushing = Some((axis.measure, p.x));
    }
    if response.dragged() || response.drag_stopped() {
        if let (Some((col, start)), Some(p)) = (brushing.as_ref(), response.interact_pointer_pos())
            && *col == axis.measure
        {
            // A press held without moving is a drag too: narrower than a bar's few
            // pixels it is no range (a zero-width one would hide every file), and
            // releasing it clears the measure's range, as a click beside a brush does.
            if (p.x - start).abs() >= BRUSH_MIN_PX {
                commands.push(Command::Filter(FilterCommand::Brush {
                    measure: *col,
                    lo: value_at(*start),
                    hi: value_at(p.x),
                }));
            } else if response.drag_stopped() {
                commands.push(Command::Filter(FilterCommand::ClearRange(*col)));
            }
        }
        if response.drag_stopped() {
            *brushing = None;
        }
    }
}

/// A value marked on a histogram: a flag rule's threshold.
pub(super) struct Line {
    pub value: f64,
    pub color: egui::Color32,
    pub label: String,
}

/// The thresholds of `config` that are compared with `measure`, labelled by their setting.
pub(super) fn rule_lines(
    measure: Measure,
    config: &crate::analysis::flags::Config,
    color: egui::Color32,
) -> Vec<Line> {
    crate::analysis::rules::lines_on(measure, config)
        .into_iter()
        .map(|(setting, value)| Line {
            value,
            color,
            label: setting
                .key
                .rsplit('.')
                .next()
                .unwrap_or(setting.key)
                .to_string(),
        })
        .collect()
}

/// Bars of `counts` with the `subset` over them, heights as a share of the tallest: linear,
/// or by log(1 + count). Returns the tallest count.
pub(super) fn draw_bars(
    painter: &egui::Painter,
    rect: egui::Rect,
    counts: &[u64],
    subset: &[u64],
    log_counts: bool,
) -> u64 {
    painter.rect_filled(rect, 4.0, theme::CARD_BG);
    let peak = counts.iter().copied().max().unwrap_or(1).max(1);
    let scale = |count: u64| {
        if log_counts {
            (count as f32).ln_1p() / (peak as f32).ln_1p()
        } else {
            count as f32 / peak as f32
        }
    };
    let w = rect.width() / counts.len().max(1) as f32;
    for (i, &all) in counts.iter().enumerate() {
        let sub = subset.get(i).copied().unwrap_or(0);
        let x = rect.left() + i as f32 * w;
        let bar = |count: u64| {
            let height = rect.height() * scale(count);
            egui::Rect::from_min_max(
                egui::pos2(x + 1.0, rect.bottom() - height),
                egui::pos2(x + w - 1.0, rect.bottom()),
            )
        };
        painter.rect_filled(bar(all), 1.0, theme::BAR);
        painter.rect_filled(bar(sub), 1.0, theme::BAR_SELECTED);
    }
    peak
}

/// Each line that falls within the axis' range, labelled at its top (to the right of the
/// line in the left half, to the left in the right half).
pub(super) fn draw_lines(
    painter: &egui::Painter,
    rect: egui::Rect,
    axis: &super::scatter::Axis,
    lines: &[Line],
) {
    for (i, line) in lines.iter().enumerate() {
        let Some(t) = axis.t(line.value).filter(|_| axis.contains(line.value)) else {
            continue;
        };
        let x = rect.left() + t * rect.width();
        painter.vline(x, rect.y_range(), egui::Stroke::new(1.5, line.color));
        let (dx, align) = if t < 0.5 {
            (3.0, egui::Align2::LEFT_TOP)
        } else {
            (-3.0, egui::Align2::RIGHT_TOP)
        };
        painter.text(
            egui::pos2(x + dx, rect.top() + 14.0 + 11.0 * i as f32),
            align,
            &line.label,
            egui::FontId::proportional(10.0),
            line.color,
        );
    }
}

/// Values of `axis` under a histogram at the shares `at` of its width (0 left, 1 right).
pub(super) fn ticks_ui(ui: &mut egui::Ui, axis: &super::scatter::Axis, at: &[f32]) {
    let (ticks, _) =
        ui.allocate_exact_size(egui::vec2(theme::HISTOGRAM_SIZE.x, 12.0), Sense::hover());
    for &t in at {
        let align = match t {
            t if t <= 0.0 => egui::Align2::LEFT_TOP,
            t if t >= 1.0 => egui::Align2::RIGHT_TOP,
            _ => egui::Align2::CENTER_TOP,
        };
        ui.painter().text(
            egui::pos2(ticks.left() + t * ticks.width(), ticks.top()),
            align,
            axis.measure.format(axis.value(t)),
            egui::FontId::proportional(10.0),
            theme::AXIS,
        );
    }
}

/// `1 file`, `12 files`.
pub(super) fn files(n: impl Into<u64>) -> String {
    crate::model::count(n.into(), "file")
}
