//! The window: start screen, scan progress, dashboard (cards, brushable histograms, flags),
//! the file table and the inspector. Panels return [`Command`]s; the app applies them in one
//! place per frame.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eframe::egui::{self};
use rayon::prelude::*;

use super::command::{Command, JobCommand};
use super::edits::EditWriter;
use super::jobs::{Job, Polled, ScanJob, spawn_load, take_finished};
use super::manifests::{ExportDialog, History};
use super::player::Player;
use super::theme;
use super::thumbs::Thumbnails;
use super::view::{Filter, SortKey, View, ViewRow, binned, sort_rows};
use crate::model::{Clip, Decision, Measure};

/// Persisted between runs (eframe storage).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct State {
    /// The project open at exit; `filter` is this project's.
    pub last_project: Option<PathBuf>,
    pub recent: Vec<PathBuf>,
    pub gallery: bool,
    /// Histogram heights by log(1 + count).
    pub log_counts: bool,
    pub filter: Filter,
    /// Table order: column and ascending.
    pub sort: Option<(SortKey, bool)>,
    /// The scatter's measures (x, y); `None`: motion against duration.
    pub scatter: Option<(Measure, Measure)>,
}

impl State {
    pub fn scatter_axes(&self) -> (Measure, Measure) {
        self.scatter
            .unwrap_or((Measure::DurationSecs, Measure::MotionMean))
    }
}

pub struct App {
    pub(super) state: State,
    pub(super) view: Option<View>,
    pub(super) loading: Option<Job<anyhow::Result<View>>>,
    pub(super) scan: Option<ScanJob>,
    /// What the filter keeps, in what order.
    pub(super) shown: Shown,
    pub(super) selection: Selection,
    /// Text being typed that is not yet a command.
    pub(super) drafts: Drafts,
    /// A folder picker in flight.
    pub(super) browse: Option<Job<Option<PathBuf>>>,
    pub(super) message: Option<String>,
    /// The last committed edit.
    pub(super) status: Option<String>,
    pub(super) last_reload: Instant,
    pub(super) thumbs: Thumbnails,
    pub(super) export: ExportDialog,
    pub(super) history: History,
    pub(super) player: Option<Player>,
    pub(super) edits: Option<EditWriter>,
    pub(super) ctx: egui::Context,
    /// The keyboard shortcuts window (F1).
    pub(super) help: bool,
    /// The duplicate groups window.
    pub(super) duplicates: bool,
    pub(super) scatter: super::panels::scatter::Scatter,
    /// What the flag panel's edited thresholds would catch.
    pub(super) rule_preview: super::panels::rule::Preview,
}

/// The filter and what it keeps.
#[derive(Default)]
pub(super) struct Shown {
    pub(super) filter: Filter,
    /// Indices of the rows the filter keeps, in table order.
    pub(super) filtered: Vec<usize>,
    /// Counts of the filtered files in each histogram's bins, recomputed when the filter
    /// changes (not every frame).
    pub(super) subsets: Vec<Vec<u64>>,
    /// Of the filtered files, those with each label (`View::labels`' names), and with none.
    pub(super) label_subsets: (Vec<u64>, u64),
    /// Every row in the table's sort order (see `resort`).
    pub(super) sort_order: Option<Vec<usize>>,
    /// Histogram being brushed: the measure and the screen x where the button went down.
    pub(super) brushing: Option<(Measure, f32)>,
    /// Counts the filter's changes (views that cache what they draw compare it).
    pub(super) generation: u64,
    /// Of the rows the filter keeps, those not analysed deeply (see `shallow_shown`),
    /// counted when the filter changes, not every frame.
    pub(super) shallow: usize,
}

/// The selected files.
#[derive(Default)]
pub(super) struct Selection {
    /// The file the inspector shows.
    pub(super) selected: Option<usize>,
    /// Every selected file; A / R apply to all of them.
    pub(super) picked: std::collections::BTreeSet<usize>,
    /// The selection moved by keyboard: bring it into view once.
    pub(super) scroll_to_selected: Option<()>,
}

/// Fields of the window being edited.
#[derive(Default)]
pub(super) struct Drafts {
    /// The folder typed on the start screen.
    pub(super) open_text: String,
    /// Label given to the clips made next.
    pub(super) clip_label: String,
    /// The tags, note and label fields of the inspector, and the file they were filled for.
    pub(super) tags_text: (Option<crate::model::ItemId>, String, String),
    pub(super) label_text: String,
    /// Fill the inspector's fields again from the review state the writer sends next.
    pub(super) refill: bool,
    /// A clip edge being dragged on the timeline: (clip index, start edge).
    pub(super) clip_drag: Option<(usize, bool)>,
    /// Thresholds edited in the flag panel and not yet saved (`None`: as saved).
    pub(super) settings: Option<crate::analysis::flags::Config>,
}

impl App {
    pub fn new(cc: &eframe::CreationContext<'_>, dir: Option<PathBuf>) -> Self {
        let state: State = cc
            .storage
            .and_then(|s| eframe::get_value(s, eframe::APP_KEY))
            .unwrap_or_default();
        App::with_state(&cc.egui_ctx, state, dir)
    }

    /// An app on an egui context of the caller's (benchmarks, tests), from a saved state.
    pub fn with_state(ctx: &egui::Context, state: State, dir: Option<PathBuf>) -> Self {
        theme::apply(ctx);
        let mut app = App {
            state,
            view: None,
            loading: None,
            scan: None,
            shown: Shown::default(),
            selection: Selection::default(),
            drafts: Drafts::default(),
            browse: None,
            message: None,
            status: None,
            last_reload: Instant::now(),
            thumbs: Thumbnails::new(),
            export: ExportDialog::default(),
            history: History::default(),
            player: None,
            edits: None,
            ctx: ctx.clone(),
            help: false,
            duplicates: false,
            scatter: Default::default(),
            rule_preview: Default::default(),
        };
        app.shown.filter = app.state.filter.clone();
        let start = dir.or_else(|| app.state.last_project.clone());
        if let Some(dir) = start {
            app.apply(Command::Job(JobCommand::Open(dir)));
        }
        app
    }

    /// Files drawn in the scatter (those with both of its measures).
    pub fn scatter_dots(&self) -> usize {
        self.scatter.dots
    }

    /// Files that pass the current filter.
    pub fn shown(&self) -> usize {
        self.shown.filtered.len()
    }

    /// A project is loaded and no load or scan is running.
    pub fn is_idle(&self) -> bool {
        self.view.is_some() && self.loading.is_none() && self.scan.is_none()
    }

    /// Thumbnails asked for and not yet decoded.
    pub fn thumbnails_loading(&self) -> bool {
        self.thumbs.waiting()
    }

    /// Why the thumbnails that could not be made failed (the gallery shows "cannot decode"
    /// with the reason on hover).
    pub fn thumbnail_failures(&self) -> Vec<String> {
        self.thumbs.failures()
    }

    pub fn is_scanning(&self) -> bool {
        self.scan.is_some()
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    /// Path of the selected file.
    pub fn selected_path(&self) -> Option<&str> {
        self.selected_row().map(|r| r.path.as_str())
    }

    /// Paths the filter shows, in display order.
    pub fn shown_paths(&self) -> Vec<&str> {
        match &self.view {
            Some(v) => self
                .shown
                .filtered
                .iter()
                .map(|&i| v.rows[i].path.as_str())
                .collect(),
            None => Vec::new(),
        }
    }

    /// The open player (a video is selected).
    pub fn player(&self) -> Option<&Player> {
        self.player.as_ref()
    }

    /// Review edits asked for and not yet committed.
    pub fn pending_edits(&self) -> usize {
        self.edits.as_ref().map_or(0, EditWriter::pending)
    }

    /// The item id of the file with this path.
    pub fn item_id(&self, path: &str) -> Option<crate::model::ItemId> {
        let view = self.view.as_ref()?;
        view.rows.iter().find(|r| r.path == path).map(|r| r.id)
    }

    /// The item id of row `row` of the view, shown or not (the benchmarks select by row).
    pub fn row_item(&self, row: usize) -> Option<crate::model::ItemId> {
        self.view.as_ref()?.rows.get(row).map(|r| r.id)
    }

    /// The row of the current view that shows this item.
    pub(super) fn row_of(&self, item: crate::model::ItemId) -> Option<usize> {
        self.view.as_ref()?.row_of.get(&item).copied()
    }

    /// The committed decision of a file.
    pub fn decision(&self, path: &str) -> Option<Decision> {
        let view = self.view.as_ref()?;
        let row = view.rows.iter().find(|r| r.path == path)?;
        Some(
            view.review
                .decisions
                .get(&row.id)
                .copied()
                .unwrap_or_default(),
        )
    }

    /// Clips of the selected file, as committed.
    pub fn selected_clips(&self) -> &[Clip] {
        match (&self.view, self.selected_row()) {
            (Some(v), Some(r)) => v.review.clips.get(&r.id).map_or(&[], Vec::as_slice),
            _ => &[],
        }
    }

    /// The media files the filter shows that are not analysed deeply (probed or triaged).
    pub fn shallow_shown(&self) -> impl Iterator<Item = crate::model::ItemId> + '_ {
        let rows = self.view.as_ref().map_or(&[][..], |v| v.rows.as_slice());
        self.shown
            .filtered
            .iter()
            .filter_map(move |&i| rows.get(i))
            .filter(|r| {
                r.level != crate::model::AnalysisLevel::Deep
                    && r.status == crate::model::ItemStatus::Ok
            })
            .map(|r| r.id)
    }

    /// The file the inspector shows.
    pub(super) fn selected_row(&self) -> Option<&ViewRow> {
        let view = self.view.as_ref()?;
        self.selection.selected.and_then(|i| view.rows.get(i))
    }

    /// Apply a command, as the panels do: each part of the window carries out its own
    /// (`gui::handlers`).
    pub fn apply(&mut self, command: Command) {
        tracing::debug!(?command, "apply");
        match command {
            Command::Job(c) => self.on_job(c),
            Command::Filter(c) => self.on_filter(c),
            Command::Selection(c) => self.on_selection(c),
            Command::Player(c) => self.on_player(c),
            Command::Review(c) => self.on_review(c),
            Command::Dialog(c) => self.on_dialog(c),
        }
    }

    pub(super) fn remember(&mut self, project: PathBuf) {
        // The kept filter belongs to the project it was made on: another starts unfiltered.
        if self.state.last_project.as_ref() != Some(&project) {
            self.shown.filter = Filter::default();
        }
        self.state.recent.retain(|p| *p != project);
        self.state.recent.insert(0, project.clone());
        self.state.recent.truncate(8);
        self.state.last_project = Some(project);
    }

    /// Every row in the table's sort order, when a sort is chosen.
    pub(super) fn resort(&mut self) {
        self.shown.sort_order = match (&self.view, &self.state.sort) {
            (Some(view), Some((column, ascending))) => {
                let mut all: Vec<usize> = (0..view.rows.len()).collect();
                sort_rows(view, &mut all, *column, *ascending);
                Some(all)
            }
            _ => None,
        };
    }

    pub(super) fn refilter(&mut self) {
        self.shown.generation += 1;
        self.shown.filtered = match &self.view {
            Some(v) => v.select(&self.shown.filter),
            None => Vec::new(),
        };
        self.shown.subsets = match &self.view {
            Some(v) => v
                .histograms
                .par_iter()
                .zip(&v.row_bins)
                .map(|(h, bins)| binned(bins, h.counts.len(), &self.shown.filtered))
                .collect(),
            None => Vec::new(),
        };
        self.shown.label_subsets = match &self.view {
            Some(v) => v.labels.shown(&self.shown.filtered),
            None => Default::default(),
        };
        self.shown.shallow = self.shallow_shown().count();
        let filtered = &self.shown.filtered;
        self.selection
            .picked
            .retain(|i| filtered.binary_search(i).is_ok());
        let gone = self
            .selection
            .selected
            .is_some_and(|s| self.shown.filtered.binary_search(&s).is_err());
        // Table order: walk the sorted list once (no sort per filter change, a brush drag
        // refilters every frame).
        if let Some(order) = &self.shown.sort_order {
            let mut keep = vec![false; order.len()];
            for &i in &self.shown.filtered {
                keep[i] = true;
            }
            self.shown.filtered = order.iter().copied().filter(|&i| keep[i]).collect();
        }
        if gone {
            self.selection.selected = None;
        }
    }

    /// Take what background jobs finished.
    pub(super) fn poll(&mut self, ctx: &egui::Context) {
        if let Some(job) = &mut self.browse {
            match job.poll() {
                Polled::Done(Some(dir)) => {
                    self.browse = None;
                    self.apply(Command::Job(JobCommand::Open(dir)));
                }
                Polled::Done(None) => self.browse = None,
                Polled::Running => ctx.request_repaint_after(Duration::from_millis(100)),
                Polled::Lost => {
                    self.browse = None;
                    self.message = Some(
                        "no folder picker on this system (needs the XDG desktop portal or zenity): type the path".into(),
                    );
                }
            }
        }
        if self.loading.is_some() {
            ctx.request_repaint_after(Duration::from_millis(50));
        }
        let lost = || Err(anyhow::anyhow!("loading the project stopped"));
        match take_finished(&mut self.loading, lost) {
            Some(Ok(view)) => {
                if self.view.as_ref().is_none_or(|v| v.project != view.project)
                    || self.edits.is_none()
                {
                    self.edits = Some(EditWriter::start(view.project.clone()));
                    self.player = None;
                }
                if let Some(edits) = &self.edits {
                    edits.set_rows(Arc::clone(&view.row_ids));
                }
                if self.drafts.settings.as_ref() == Some(&view.config) {
                    // Saved: the edits are the settings now.
                    self.drafts.settings = None;
                }
                self.view = Some(view);
                self.resort();
                self.refilter();
                self.open_player();
            }
            Some(Err(e)) => self.message = Some(crate::output::error_text(&e)),
            None => {}
        }
        let mut finished = None;
        let mut reload = false;
        if let Some(scan) = &mut self.scan {
            let ScanJob { job, state } = scan;
            let polled = job.poll_with(|p| reload |= state.absorb(p));
            match polled {
                Polled::Running => {}
                Polled::Done(r) => finished = Some(r),
                Polled::Lost => {
                    finished = Some(Err(anyhow::anyhow!("the scan stopped unexpectedly")));
                }
            }
            ctx.request_repaint_after(Duration::from_millis(100));
        }
        if let Some(r) = finished {
            self.scan = None;
            match r {
                Ok((project, warnings)) => {
                    self.apply(Command::Job(JobCommand::Open(project)));
                    if !warnings.is_empty() {
                        self.message = Some(warnings.join("\n"));
                    }
                }
                Err(e) => self.message = Some(crate::output::error_text(&e)),
            }
        } else if reload
            && self.loading.is_none()
            && self.last_reload.elapsed() > Duration::from_secs(1)
        {
            // Results appear while the scan runs.
            if let Some(p) = self.scan_project() {
                self.loading = Some(spawn_load(p));
                self.last_reload = Instant::now();
            }
        }
    }

    /// Take what the edit writer committed.
    pub(super) fn poll_edits(&mut self) {
        let Some(w) = &mut self.edits else {
            return;
        };
        for done in w.poll() {
            match done.result {
                Ok(m) => self.status = Some(m),
                Err(e) => {
                    self.message = Some(format!("not saved: {}", crate::output::error_text(&e)));
                }
            }
            if let (Some(update), Some(view)) = (done.state, &mut self.view) {
                let labels = if Arc::ptr_eq(&update.row_ids, &view.row_ids) {
                    update.labels
                } else {
                    // Made for the rows of a view since reloaded.
                    super::review_state::RowLabels::new(&view.row_ids, &update.review)
                };
                let old = (
                    std::mem::replace(&mut view.review, update.review),
                    std::mem::replace(&mut view.labels, labels),
                );
                // Freeing a million reviews takes a tenth of a second or more: not here.
                let _ = std::thread::Builder::new()
                    .name("framecull-free".into())
                    .spawn(move || drop(old));
                // After an undo or redo the inspector's fields show what is stored again.
                if std::mem::take(&mut self.drafts.refill) {
                    self.drafts.tags_text.0 = None;
                }
                let sorted_by_review = self
                    .state
                    .sort
                    .is_some_and(|(c, _)| matches!(c, SortKey::Review | SortKey::Label));
                if sorted_by_review {
                    self.resort();
                }
                // What a filter on decisions or labels shows, and the label chart's counts.
                self.refilter();
            }
        }
    }

    pub(super) fn scan_project(&self) -> Option<PathBuf> {
        self.view.as_ref().map(|v| v.project.clone())
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.frame_ui(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        self.state.filter = self.shown.filter.clone();
        eframe::set_value(storage, eframe::APP_KEY, &self.state);
    }
}
