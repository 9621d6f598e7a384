//! Scatter of two measures: every file a dot, the files the filter shows bright (flagged ones in
//! their worst flag's colour), the others grey. Dragging a box brushes both measures, so the
//! scatter filters every other view and they filter it; hovering names the nearest file and a
//! click selects it. The dots are drawn into a texture when the data or the filter change, not
//! every frame, so it stays fluid at 100,000 files and more.

use eframe::egui::{self, Color32, ColorImage, Pos2, Rect, RichText, Sense, TextureHandle};

use crate::gui::command::{Command, DialogCommand, FilterCommand, SelectionCommand};
use crate::gui::theme;
use crate::gui::view::View;
use crate::model::{Measure, Severity};

/// What the dots were drawn from: the axes, the filter's generation, the size in pixels.
type Drawn = (Measure, Measure, u64, [usize; 2]);

/// The scatter's state between frames.
#[derive(Default)]
pub struct Scatter {
    texture: Option<(TextureHandle, Drawn)>,
    /// Where a box brush started.
    drag_from: Option<Pos2>,
    /// Dots in the texture (files with both values).
    pub(in crate::gui) dots: usize,
    /// Each row's place on the two axes (0..1; NaN without a value), and what it was
    /// computed for: the axes and the view's rows (their address and length).
    places: Vec<[f32; 2]>,
    places_for: Option<PlacesFor>,
    /// Each row's dot in the texture: the offset of its stamp's first pixel ([`NO_DOT`]
    /// without one), for the places and the texture size it was computed for.
    pixels: Vec<u32>,
    pixels_for: Option<(PlacesFor, [usize; 2])>,
}

/// What the places were computed for: the axes and the view's rows (address, length).
type PlacesFor = (Measure, Measure, usize, usize);

/// A row without a dot.
const NO_DOT: u32 = u32::MAX;

/// One axis: the measure's histogram range (robust, log for measures spanning decades). The
/// histograms' x axes and the scatter's two map values through it.
pub(super) struct Axis {
    pub(super) measure: Measure,
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn of(view: &View, measure: Measure) -> Option<Axis> {
        Axis::from_histogram(view.histograms.iter().find(|h| h.measure == measure)?)
    }

    pub(super) fn from_histogram(h: &crate::analysis::histogram::Histogram) -> Option<Axis> {
        Some(Axis {
            measure: h.measure,
            lo: *h.edges.first()?,
            hi: *h.edges.last()?,
            log: h.log,
        })
    }

    /// 0..1 along the axis (clamped: values beyond the robust range sit on its edges).
    pub(super) fn t(&self, v: f64) -> Option<f32> {
        if !v.is_finite() || (self.log && v <= 0.0) {
            return None;
        }
        let t = if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        Some(if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.5
        } as f32)
    }

    /// Whether `v` lies within the plotted range (not on an edge by clamping).
    pub(super) fn contains(&self, v: f64) -> bool {
        (self.lo..=self.hi).contains(&v)
    }

    pub(super) fn value(&self, t: f32) -> f64 {
        let t = f64::from(t.clamp(0.0, 1.0));
        if self.log {
            10f64.powf(self.lo.log10() + t * (self.hi.log10() - self.lo.log10()))
        } else {
            self.lo + t * (self.hi - self.lo)
        }
    }
}

/// The smallest and largest finite values.
fn extremes(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// Dot colour of a shown file: its worst flag's, else the selection blue.
fn shown_color(worst: Option<Severity>) -> Color32 {
    match worst {
        Some(s @ (Severity::Error | Severity::Warning)) => theme::severity_color(s),
        _ => theme::BAR_SELECTED,
    }
}

#[allow(clippy::too_many_arguments)]
pub(in crate::gui) fn scatter_ui(
    ui: &mut egui::Ui,
    view: &View,
    axes: (Measure, Measure),
    filtered: &[usize],
    generation: u64,
    ranges: &[(Measure, f64, f64)],
    scatter: &mut Scatter,
    commands: &mut Vec<Command>,
) {
    let measures: Vec<Measure> = view.histograms.iter().map(|h| h.measure).collect();
    ui.vertical(|ui| {
        ui.horizontal(|ui| axis_pickers_ui(ui, &measures, axes, commands));
        let (rect, response) =
            ui.allocate_exact_size(theme::HISTOGRAM_SIZE, Sense::click_and_drag());
        response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Canvas, true, "scatter"));
        let painter = ui.painter_at(rect);
        painter.rect_filled(rect, 4.0, theme::CARD_BG);
        let (Some(x), Some(y)) = (Axis::of(view, axes.0), Axis::of(view, axes.1)) else {
            return;
        };
        let (Some(xs), Some(ys)) = (view.columns.get(&x.measure), view.columns.get(&y.measure))
        else {
            return;
        };
        let plot = Plot { rect, x, y, xs, ys };
        update_dots(ui.ctx(), view, &plot, filtered, generation, scatter);
        if let Some((texture, _)) = &scatter.texture {
            painter.image(
                texture.id(),
                rect,
                Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                Color32::WHITE,
            );
        }
        paint_ranges(&painter, &plot, ranges);
        axis_labels_ui(ui, &painter, &plot);
        box_brush_ui(
            ui,
            &response,
            &painter,
            &plot,
            &mut scatter.drag_from,
            commands,
        );
        name_nearest_file(&response, view, &plot, filtered, commands);
    });
}

/// The plot's area and its two axes, with each row's values of their measures.
struct Plot<'a> {
    rect: Rect,
    x: Axis,
    y: Axis,
    xs: &'a [f64],
    ys: &'a [f64],
}

/// The two axis pickers ("x" and "y"), each offering every measure with a histogram.
fn axis_pickers_ui(
    ui: &mut egui::Ui,
    measures: &[Measure],
    axes: (Measure, Measure),
    commands: &mut Vec<Command>,
) {
    for (id, which, other) in [("scatter x", axes.0, axes.1), ("scatter y", axes.1, axes.0)] {
        // Labelled "x" / "y" (the accessible names are "scatter x" and "scatter y").
        egui::ComboBox::new(id, &id[8..])
            .selected_text(RichText::new(which.title()).small())
            .width(theme::HISTOGRAM_SIZE.x / 2.0 - 26.0)
            .show_ui(ui, |ui| {
                for &m in measures {
                    if ui.selectable_label(m == which, m.title()).clicked() {
                        let axes = if id == "scatter x" {
                            (m, other)
                        } else {
                            (other, m)
                        };
                        commands.push(Command::Dialog(DialogCommand::ScatterAxes(axes.0, axes.1)));
                    }
                }
            });
    }
}

/// Draws the dots into the scatter's texture when the axes, the filter or the size changed
/// since it was last drawn.
fn update_dots(
    ctx: &egui::Context,
    view: &View,
    plot: &Plot,
    filtered: &[usize],
    generation: u64,
    scatter: &mut Scatter,
) {
    let (rect, x, y, xs, ys) = (plot.rect, &plot.x, &plot.y, plot.xs, plot.ys);
    // The dots, drawn again only when the axes, the filter or the size change.
    let ppp = ctx.pixels_per_point();
    let size = [
        (rect.width() * ppp).round().max(1.0) as usize,
        (rect.height() * ppp).round().max(1.0) as usize,
    ];
    let key = (x.measure, y.measure, generation, size);
    if scatter.texture.as_ref().is_none_or(|(_, k)| *k != key) {
        let places_for = (
            x.measure,
            y.measure,
            view.rows.as_ptr() as usize,
            view.rows.len(),
        );
        if scatter.places_for != Some(places_for) {
            scatter.places = (0..view.rows.len())
                .map(|row| match (x.t(xs[row]), y.t(ys[row])) {
                    (Some(tx), Some(ty)) => [tx, ty],
                    _ => [f32::NAN; 2],
                })
                .collect();
            scatter.places_for = Some(places_for);
        }
        let side = dot_side(view.rows.len());
        if scatter.pixels_for != Some((places_for, size)) {
            scatter.pixels = dot_pixels(&scatter.places, size, side);
            scatter.pixels_for = Some((places_for, size));
            scatter.dots = scatter.pixels.iter().filter(|&&p| p != NO_DOT).count();
        }
        let image = draw_dots(&view.worst, filtered, size, side, &scatter.pixels);
        let options = egui::TextureOptions::NEAREST;
        match &mut scatter.texture {
            Some((texture, k)) => {
                texture.set(image, options);
                *k = key;
            }
            None => {
                let texture = ctx.load_texture("scatter", image, options);
                scatter.texture = Some((texture, key));
            }
        }
    }
}

/// The filter's ranges of the two plotted measures, as bands across the plot.
fn paint_ranges(painter: &egui::Painter, plot: &Plot, ranges: &[(Measure, f64, f64)]) {
    let (rect, x, y) = (plot.rect, &plot.x, &plot.y);
    // The filter's ranges of these two measures, as bands.
    for (m, lo, hi) in ranges {
        let band = if *m == x.measure {
            let (a, b) = (x.t(*lo).unwrap_or(0.0), x.t(*hi).unwrap_or(1.0));
            Rect::from_x_y_ranges(
                rect.left() + a * rect.width()..=rect.left() + b * rect.width(),
                rect.y_range(),
            )
        } else if *m == y.measure {
            let (a, b) = (y.t(*lo).unwrap_or(0.0), y.t(*hi).unwrap_or(1.0));
            Rect::from_x_y_ranges(
                rect.x_range(),
                rect.bottom() - b * rect.height()..=rect.bottom() - a * rect.height(),
            )
        } else {
            continue;
        };
        painter.rect_filled(band, 0.0, theme::BRUSH);
    }
}

/// The axes' labels: the y measure's range at the plot's top and bottom, the x measure's on
/// a row under it.
fn axis_labels_ui(ui: &mut egui::Ui, painter: &egui::Painter, plot: &Plot) {
    let (rect, x, y) = (plot.rect, &plot.x, &plot.y);
    // Axes: each measure's range at its ends.
    let small = egui::FontId::proportional(10.0);
    painter.text(
        rect.left_top() + egui::vec2(3.0, 2.0),
        egui::Align2::LEFT_TOP,
        y.measure.format(y.hi),
        small.clone(),
        theme::AXIS,
    );
    painter.text(
        rect.left_bottom() + egui::vec2(3.0, -2.0),
        egui::Align2::LEFT_BOTTOM,
        y.measure.format(y.lo),
        small.clone(),
        theme::AXIS,
    );
    let (ticks, _) =
        ui.allocate_exact_size(egui::vec2(theme::HISTOGRAM_SIZE.x, 12.0), Sense::hover());
    for (text, at, align) in [
        (
            x.measure.format(x.lo),
            ticks.left_top(),
            egui::Align2::LEFT_TOP,
        ),
        (
            x.measure.format(x.hi),
            ticks.right_top(),
            egui::Align2::RIGHT_TOP,
        ),
    ] {
        ui.painter()
            .text(at, align, text, small.clone(), theme::AXIS);
    }
}

/// A box brush: drawn while dragged from `drag_from`, both measures' ranges on release.
fn box_brush_ui(
    ui: &mut egui::Ui,
    response: &egui::Response,
    painter: &egui::Painter,
    plot: &Plot,
    drag_from: &mut Option<Pos2>,
    commands: &mut Vec<Command>,
) {
    let (rect, x, y, xs, ys) = (plot.rect, &plot.x, &plot.y, plot.xs, plot.ys);
    // A box brush: both measures' ranges on release.
    if response.drag_started() {
        // Where the button went down, not where the drag was recognised.
        *drag_from = ui
            .input(|i| i.pointer.press_origin())
            .or(response.interact_pointer_pos());
    }
    if let (Some(from), Some(to)) = (*drag_from, response.interact_pointer_pos())
        && (response.dragged() || response.drag_stopped())
    {
        let brush = Rect::from_two_pos(from, to).intersect(rect);
        painter.rect_filled(brush, 0.0, theme::BRUSH);
        if response.drag_stopped() {
            *drag_from = None;
            let tx = |px: f32| (px - rect.left()) / rect.width();
            let ty = |py: f32| (rect.bottom() - py) / rect.height();
            // A box reaching an edge takes the files drawn on it too (values beyond the
            // robust range sit there): that end goes to the data's extreme.
            let range = |axis: &Axis, values: &[f64], a: f32, b: f32| {
                let (min, max) = extremes(values);
                let lo = if a <= 0.01 { min } else { axis.value(a) };
                let hi = if b >= 0.99 { max } else { axis.value(b) };
                Command::Filter(FilterCommand::Brush {
                    measure: axis.measure,
                    lo: lo.min(axis.value(a)),
                    hi: hi.max(axis.value(b)),
                })
            };
            if brush.width() >= 3.0 {
                commands.push(range(x, xs, tx(brush.left()), tx(brush.right())));
            }
            if brush.height() >= 3.0 {
                commands.push(range(y, ys, ty(brush.bottom()), ty(brush.top())));
            }
        }
    }
}

/// Names the shown file nearest the pointer on hover; a click selects it.
fn name_nearest_file(
    response: &egui::Response,
    view: &View,
    plot: &Plot,
    filtered: &[usize],
    commands: &mut Vec<Command>,
) {
    let (rect, x, y, xs, ys) = (plot.rect, &plot.x, &plot.y, plot.xs, plot.ys);
    // Screen position of a row's dot.
    let pos = |row: usize| -> Option<Pos2> {
        let (tx, ty) = (x.t(xs[row])?, y.t(ys[row])?);
        Some(egui::pos2(
            rect.left() + tx * rect.width(),
            rect.bottom() - ty * rect.height(),
        ))
    };
    // The shown file nearest the pointer: named on hover, selected on click.
    if let Some(p) = response.hover_pos() {
        let nearest = filtered
            .iter()
            .filter_map(|&row| Some((pos(row)?.distance_sq(p), row)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .filter(|(d, _)| *d <= 64.0);
        if let Some((_, row)) = nearest {
            let r = &view.rows[row];
            response.clone().on_hover_text_at_pointer(format!(
                "{}\n{} {}, {} {}",
                r.path,
                x.measure.title(),
                x.measure.format(xs[row]),
                y.measure.title(),
                y.measure.format(ys[row])
            ));
            if response.clicked() {
                commands.push(Command::Selection(SelectionCommand::Select(Some(r.id))));
            }
        }
    }
}

/// Side of a dot in pixels: larger when there are few.
fn dot_side(rows: usize) -> usize {
    match rows {
        0..2_000 => 5,
        2_000..20_000 => 3,
        _ => 2,
    }
}

/// Each row's dot as the offset of its stamp's top-left pixel in a `w` x `h` image (kept
/// inside it), [`NO_DOT`] for rows without both values. Computed when the axes or the size
/// change, so that a filter change only paints.
fn dot_pixels(places: &[[f32; 2]], [w, h]: [usize; 2], side: usize) -> Vec<u32> {
    let (room_x, room_y) = (w.saturating_sub(side), h.saturating_sub(side));
    places
        .iter()
        .map(|&[tx, ty]| {
            if tx.is_nan() || ty.is_nan() {
                return NO_DOT;
            }
            let px = ((tx * room_x as f32).round() as usize).min(room_x);
            let py = (((1.0 - ty) * room_y as f32).round() as usize).min(room_y);
            u32::try_from(py * w + px).unwrap_or(NO_DOT)
        })
        .collect()
}

/// A dot's colour by its rank: filtered out, shown, shown with a warning, with an error.
fn rank_colors() -> [Color32; 4] {
    [
        theme::BAR,
        theme::BAR_SELECTED,
        shown_color(Some(Severity::Warning)),
        shown_color(Some(Severity::Error)),
    ]
}

/// Every row with a dot: the others grey first, then the shown ones in their colours (by
/// their worst flag, `worst[row]`), so shown files are never hidden under filtered-out ones.
fn draw_dots(
    worst: &[Option<Severity>],
    filtered: &[usize],
    [w, h]: [usize; 2],
    side: usize,
    pixels: &[u32],
) -> ColorImage {
    let mut image = ColorImage::filled([w, h], Color32::TRANSPARENT);
    let mut shown = vec![false; worst.len()];
    for &row in filtered {
        shown[row] = true;
    }
    // A round stamp of `side` pixels, as offsets from its top-left pixel.
    let centre = (side as f32 - 1.0) / 2.0;
    let stamp: Vec<usize> = (0..side)
        .flat_map(|dy| (0..side).map(move |dx| (dx, dy)))
        .filter(|&(dx, dy)| {
            let (fx, fy) = (dx as f32 - centre, dy as f32 - centre);
            fx * fx + fy * fy <= (centre + 0.5) * (centre + 0.5)
        })
        .map(|(dx, dy)| dy * w + dx)
        .collect();
    // Each dot's pixel takes the highest of its dots' ranks (grey, shown, warning, error);
    // the stamps are then drawn once per pixel in rank order: what drawing every dot in that
    // order gives, without a stamp per row (a million rows fall on some tens of thousands of
    // pixels).
    let mut rank = vec![0u8; w * h];
    for (row, &p) in pixels.iter().enumerate() {
        if p == NO_DOT {
            continue;
        }
        let r = if !shown[row] {
            1
        } else {
            match worst[row] {
                Some(Severity::Error) => 4,
                Some(Severity::Warning) => 3,
                _ => 2,
            }
        };
        if let Some(top) = rank.get_mut(p as usize) {
            *top = (*top).max(r);
        }
    }
    for (r, color) in (1u8..).zip(rank_colors()) {
        for (p, _) in rank.iter().enumerate().filter(|(_, top)| **top == r) {
            for &o in &stamp {
                if let Some(px) = image.pixels.get_mut(p + o) {
                    *px = color;
                }
            }
        }
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_ranked_per_pixel_look_as_painting_every_dot_in_order() {
        let (w, h) = (23, 17);
        for side in [1, 2, 3] {
            // Rows crowded on few pixels (overlapping stamps), some without a dot.
            let rows = 400;
            let hash =
                |k: u64, salt: u64| xxhash_rust::xxh3::xxh3_64_with_seed(&k.to_le_bytes(), salt);
            let pixels: Vec<u32> = (0..rows as u64)
                .map(|k| match hash(k, 1) % 10 {
                    0 => NO_DOT,
                    _ => {
                        let (x, y) = (
                            hash(k, 2) % (w - side + 1) as u64,
                            hash(k, 3) % (h - side + 1) as u64,
                        );
                        (y * w as u64 + x) as u32
                    }
                })
                .collect();
            let worst: Vec<Option<Severity>> = (0..rows as u64)
                .map(|k| match hash(k, 4) % 4 {
                    0 => Some(Severity::Error),
                    1 => Some(Severity::Warning),
                    2 => Some(Severity::Info),
                    _ => None,
                })
                .collect();
            let filtered: Vec<usize> = (0..rows).filter(|&k| hash(k as u64, 5) % 3 != 0).collect();
            let ranked = draw_dots(&worst, &filtered, [w, h], side, &pixels);
            // What the scatter drew before: a stamp per row, grey ones first, then the shown
            // ones without flags, with warnings, with errors.
            let mut painted = ColorImage::filled([w, h], Color32::TRANSPARENT);
            let stamp = draw_dots(&[None], &[0], [w, h], side, &[0]);
            let offsets: Vec<usize> = (0..w * h)
                .filter(|&p| stamp.pixels[p] != Color32::TRANSPARENT)
                .collect();
            let rank = |row: usize| match (filtered.contains(&row), worst[row]) {
                (false, _) => 0,
                (true, Some(Severity::Error)) => 3,
                (true, Some(Severity::Warning)) => 2,
                (true, _) => 1,
            };
            for (r, color) in rank_colors().into_iter().enumerate() {
                for (row, &p) in pixels.iter().enumerate() {
                    if p != NO_DOT && rank(row) == r {
                        for &o in &offsets {
                            if let Some(px) = painted.pixels.get_mut(p as usize + o) {
                                *px = color;
                            }
                        }
                    }
                }
            }
            assert!(
                ranked.pixels.contains(&theme::BAR),
                "side {side}: some grey"
            );
            assert_eq!(ranked.pixels, painted.pixels, "side {side}");
        }
    }
}
