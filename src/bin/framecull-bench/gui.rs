//! `gui`: the window on a generated catalog of N items: apply a brush filter (file size, about
//! half the items) and lay out one frame (table, then gallery; the scatter draws a dot per
//! item), then drag a flag's threshold in the flag panel (its preview counts every item), then
//! click the label chart (a label each frame), with egui's layout and tessellation, no GPU.

use std::path::{Path, PathBuf};
use std::time::Instant;

use eframe::egui;
use framecull::analysis::filter::LabelTerm;
use framecull::gui::{
    App, Command, DialogCommand, FilterCommand, ReviewCommand, SelectionCommand, State,
};
use framecull::model::Measure;
use serde::Serialize;

use crate::generated::catalog as generated_catalog;
use crate::util::{median, peak_rss_mb, print};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, default_value_t = 100_000)]
    items: usize,
    /// Frames measured per view.
    #[arg(long, default_value_t = 30)]
    frames: usize,
    #[arg(long)]
    json: bool,
    /// Keep the generated catalog in DIR (made there when missing, reused when present), for
    /// repeated runs and profiling without generating it again.
    #[arg(long)]
    dir: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let r = bench_gui(args.items, args.frames.max(1), args.dir)?;
    print(&r, args.json, || {
        format!(
            "window on {} items (load {:.2} s off the UI thread), the scatter drawing {} \
             dots: brush + one frame, table: median {:.2} ms, p95 {:.2} ms; gallery: median \
             {:.2} ms, p95 {:.2} ms; flag panel with a threshold dragged: median {:.2} ms, \
             p95 {:.2} ms; label chart clicked ({CLASSES} labels): median {:.2} ms, p95 \
             {:.2} ms; a label edit, its slowest frame: median {:.2} ms; {} .. {} files shown; \
             peak RSS {}",
            r.items,
            r.load_secs,
            r.scatter_dots,
            r.table_median_ms,
            r.table_p95_ms,
            r.gallery_median_ms,
            r.gallery_p95_ms,
            r.flag_panel_median_ms,
            r.flag_panel_p95_ms,
            r.label_chart_median_ms,
            r.label_chart_p95_ms,
            r.label_edit_median_ms,
            r.shown_min,
            r.shown_max,
            r.peak_rss_mb
                .map_or("unknown".into(), |m| format!("{m:.0} MB"))
        )
    })
}

#[derive(Serialize)]
struct GuiBench {
    items: usize,
    load_secs: f64,
    scatter_dots: usize,
    table_ms: Vec<f64>,
    table_median_ms: f64,
    table_p95_ms: f64,
    gallery_ms: Vec<f64>,
    gallery_median_ms: f64,
    gallery_p95_ms: f64,
    flag_panel_ms: Vec<f64>,
    flag_panel_median_ms: f64,
    flag_panel_p95_ms: f64,
    label_chart_ms: Vec<f64>,
    label_chart_median_ms: f64,
    label_chart_p95_ms: f64,
    label_edit_ms: Vec<f64>,
    label_edit_median_ms: f64,
    shown_min: usize,
    shown_max: usize,
    peak_rss_mb: Option<f64>,
}

/// Labels of the generated catalog: as many as Kinetics-400 has classes.
const CLASSES: usize = 400;

/// The label of class `k`.
fn class(k: usize) -> String {
    format!("class {:03}", k % CLASSES)
}

/// Label the generated items (one in ten left without), as `labels import` does.
fn label_items(catalog: &mut framecull::catalog::Catalog, items: usize) -> anyhow::Result<()> {
    use framecull::model::Edit;
    let edits = catalog
        .items()?
        .iter()
        .enumerate()
        .filter(|(i, _)| items == 0 || i % 10 != 9)
        .map(|(i, item)| Edit::Label {
            item: item.id,
            before: None,
            after: Some(class(i * 7919)),
        })
        .collect();
    catalog.apply(edits)?;
    Ok(())
}

/// The window without a renderer, at 1400x860.
struct Window {
    ctx: egui::Context,
}

impl Window {
    /// One frame of the window; the textures it made or freed are let go (no renderer here).
    fn run(&self, app: &mut App) -> egui::FullOutput {
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(1400.0, 860.0),
            )),
            ..Default::default()
        };
        let mut out = self.ctx.run_ui(input, |ui| app.frame_ui(ui));
        out.textures_delta.clear();
        out
    }

    /// One whole frame, laid out and tessellated.
    fn draw(&self, app: &mut App) {
        let out = self.run(app);
        let _ = self.ctx.tessellate(out.shapes, out.pixels_per_point);
    }

    /// The window on `project`, its catalog loaded, and how long the load took in seconds.
    fn open(&self, project: &Path) -> anyhow::Result<(App, f64)> {
        let started = Instant::now();
        let mut app = App::with_state(&self.ctx, State::default(), Some(project.to_path_buf()));
        while !app.is_idle() {
            anyhow::ensure!(
                started.elapsed().as_secs() < 300,
                "the catalog did not load"
            );
            let _ = self.run(&mut app);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok((app, started.elapsed().as_secs_f64()))
    }

    /// Each of `frames` frames: `step(k)` applied (a drag step), then the whole frame, after
    /// `setup`: the frames' milliseconds, and the files each showed pushed to `shown`.
    fn measure(
        &self,
        app: &mut App,
        frames: usize,
        setup: Vec<Command>,
        step: &dyn Fn(usize) -> Command,
        shown: &mut Vec<usize>,
    ) -> Vec<f64> {
        for c in setup {
            app.apply(c);
        }
        let _ = self.run(app);
        let mut ms = Vec::with_capacity(frames);
        for k in 0..frames {
            let t = Instant::now();
            app.apply(step(k));
            self.draw(app);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            shown.push(app.shown());
        }
        ms
    }

    /// A label set in the inspector on each of the first rows (at most 10): the frame that
    /// takes the committed edit rebuilds each row's labels and the chart's counts, and
    /// filters again. The slowest frame from each edit until it is committed, in ms.
    fn label_edits(&self, app: &mut App, frames: usize) -> anyhow::Result<Vec<f64>> {
        let mut label_edit = Vec::new();
        app.apply(Command::Filter(FilterCommand::FilterLabel(None)));
        let picked: Vec<_> = (0..frames.min(10))
            .filter_map(|k| app.row_item(k))
            .collect();
        for (k, item) in picked.into_iter().enumerate() {
            app.apply(Command::Selection(SelectionCommand::Select(Some(item))));
            // A label of this run's own (a kept catalog has the last run's).
            app.apply(Command::Review(ReviewCommand::SetLabel(format!(
                "edited {k} {}",
                std::process::id()
            ))));
            let mut slowest = 0f64;
            let waiting = Instant::now();
            while app.pending_edits() > 0 {
                anyhow::ensure!(waiting.elapsed().as_secs() < 120, "the label edit hung");
                let t = Instant::now();
                self.draw(app);
                slowest = slowest.max(t.elapsed().as_secs_f64() * 1e3);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            label_edit.push(slowest);
        }
        Ok(label_edit)
    }
}

/// The 95th percentile of `v`'s values (not empty).
fn p95(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * 0.95).ceil() as usize).clamp(1, v.len()) - 1]
}

/// The benchmark's project: `keep` where given (generated there once), else a new one in the
/// temporary folder; `items` generated files with labels.
fn bench_project(items: usize, keep: Option<&Path>) -> anyhow::Result<PathBuf> {
    let project = keep.map(Path::to_path_buf).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("framecull-bench-gui-{}", std::process::id()))
    });
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&project);
    }
    if !framecull::catalog::Project::at(&project).exists() {
        let mut catalog = generated_catalog(&project, items)?;
        label_items(&mut catalog, items)?;
    }
    Ok(project)
}

/// Brush, then one whole frame (layout and tessellation) at 1400x860, as the window does on
/// each drag step.
fn bench_gui(items: usize, frames: usize, keep: Option<PathBuf>) -> anyhow::Result<GuiBench> {
    let project = bench_project(items, keep.as_deref())?;
    let window = Window {
        ctx: egui::Context::default(),
    };
    let (mut app, load_secs) = window.open(&project)?;
    // The catalog's items (a kept catalog may hold another count than --items): no filter is
    // set yet, so every row is shown.
    let items = app.shown();
    // The scatter on two measures every item has, so each frame draws a dot per item.
    app.apply(Command::Dialog(DialogCommand::ScatterAxes(
        Measure::SizeBytes,
        Measure::Aspect,
    )));
    let _ = window.run(&mut app);
    let scatter_dots = app.scatter_dots();
    let mut shown = Vec::new();
    // A drag step on the file size histogram (every item has a size): a new range, about
    // half the files, every frame.
    let brush = |k: usize| {
        let lo = 10_000.0 + (k % 20) as f64 * 100_000.0;
        Command::Filter(FilterCommand::Brush {
            measure: Measure::SizeBytes,
            lo,
            hi: lo + 2_500_000.0,
        })
    };
    let show_gallery = |on| vec![Command::Dialog(DialogCommand::ShowGallery(on))];
    let table = window.measure(&mut app, frames, show_gallery(false), &brush, &mut shown);
    let gallery = window.measure(&mut app, frames, show_gallery(true), &brush, &mut shown);
    // The flag panel open on a rule, its threshold dragged: each frame previews the files
    // the edited value would flag, over every item.
    let flag_panel = window.measure(
        &mut app,
        frames,
        vec![
            Command::Dialog(DialogCommand::ShowGallery(false)),
            Command::Filter(FilterCommand::FilterFlag(Some(
                framecull::model::FlagCode::FpsBelowMin.as_str().into(),
            ))),
        ],
        &|k| {
            Command::Filter(FilterCommand::DraftSetting {
                key: "rules.min_fps",
                value: Some(10.0 + k as f64),
            })
        },
        &mut shown,
    );
    // The label chart clicked: each frame filters on another label (a class's files, or
    // the unlabelled), then counts the shown files of each label for the chart.
    let labels = window.measure(
        &mut app,
        frames,
        vec![Command::Filter(FilterCommand::FilterFlag(None))],
        &|k| {
            Command::Filter(FilterCommand::FilterLabel(Some(if k % 5 == 4 {
                LabelTerm::None
            } else {
                LabelTerm::Is(class(k * 37))
            })))
        },
        &mut shown,
    );
    let label_edit = window.label_edits(&mut app, frames)?;
    drop(app);
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&project);
    }
    Ok(GuiBench {
        items,
        load_secs,
        scatter_dots,
        table_median_ms: median(table.clone()),
        table_p95_ms: p95(&table),
        table_ms: table,
        gallery_median_ms: median(gallery.clone()),
        gallery_p95_ms: p95(&gallery),
        gallery_ms: gallery,
        flag_panel_median_ms: median(flag_panel.clone()),
        flag_panel_p95_ms: p95(&flag_panel),
        flag_panel_ms: flag_panel,
        label_chart_median_ms: median(labels.clone()),
        label_chart_p95_ms: p95(&labels),
        label_chart_ms: labels,
        label_edit_median_ms: median(label_edit.clone()),
        label_edit_ms: label_edit,
        shown_min: shown.iter().copied().min().unwrap_or(0),
        shown_max: shown.iter().copied().max().unwrap_or(0),
        peak_rss_mb: peak_rss_mb(),
    })
}
