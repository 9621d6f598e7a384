//! The window: start screen, scan progress, dashboard (cards, brushable histograms, flags),
//! the file table and the inspector. Panels return [`Command`]s; the app applies them in one
//! place per frame.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use eframe::egui::{self, RichText, Sense};
use egui_extras::{Column, TableBuilder};

use super::edits::{EditRequest, EditWriter};
use super::jobs::{ScanJob, ScanMsg, spawn_load, spawn_scan};
use super::manifests::{ExportDialog, History};
use super::player::{Player, TimelineAction, clip_frames, timeline_ui};
use super::theme;
use super::thumbs::{THUMB_SIZE, Thumb, Thumbnails};
use super::view::{Filter, View, ViewRow, binned};
use crate::catalog::PROJECT_DIR_NAME;
use crate::model::{Clip, Decision, Edit};

/// Persisted between runs (eframe storage).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct State {
    pub last_project: Option<PathBuf>,
    pub recent: Vec<PathBuf>,
    pub gallery: bool,
    pub filter: Filter,
    /// Table order: column and ascending.
    pub sort: Option<(String, bool)>,
}

/// Everything the UI can ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Open(PathBuf),
    Demo,
    Rescan,
    CancelScan,
    Brush {
        column: String,
        lo: f64,
        hi: f64,
    },
    ClearRange(String),
    FilterFlag(Option<String>),
    Select(Option<usize>),
    ShowGallery(bool),
    ShowExport,
    ShowManifests,
    Close,
    /// Player: Space.
    PlayPause,
    /// Player: arrow keys (frames).
    Step(i64),
    /// Player: J (-1), K (0), L (+1).
    Shuttle(i32),
    SeekFrame(usize),
    /// I: the in point of the next clip at the playhead.
    MarkIn,
    /// O: a clip from the in point (or the playhead) to the playhead, both frames included.
    MarkOut,
    /// A / R / U: the clip under the playhead, else the selected file.
    Decide(Decision),
    /// Bulk: every file the filter shows.
    DecideShown(Decision),
    RemoveClip(Clip),
    ReshapeClip {
        clip: Clip,
        start: usize,
        end: usize,
    },
    Undo,
    Redo,
    ToggleHelp,
    /// Up / Down: the previous or next file the filter shows.
    SelectNext(i64),
    /// One clip per shot of the open video, at its scene cuts.
    SplitAtCuts,
    /// Clips where the motion curve shows motion (lead-in, minimum and maximum length from
    /// the defaults of `framecull clips propose`).
    ProposeClips,
    /// Replace the selected file's tags (comma separated).
    SetTags(String),
    /// Replace the selected file's note (empty: none).
    SetNote(String),
    /// Ctrl+click: add a file to the selection, or take it out.
    TogglePick(usize),
    /// Shift+click: select every shown file from the selected one to this one.
    PickRange(usize),
    /// The system's folder picker (on its own thread; the window keeps drawing).
    Browse,
    /// Show only paths containing this text (case-insensitive).
    Search(String),
    /// Sort the table by this column (again: the other way).
    SortBy(&'static str),
}

pub struct App {
    state: State,
    view: Option<View>,
    loading: Option<Receiver<Result<View, String>>>,
    scan: Option<ScanJob>,
    filter: Filter,
    filtered: Vec<usize>,
    /// Counts of the filtered files in each histogram's bins, recomputed when the filter
    /// changes (not every frame).
    subsets: Vec<Vec<u64>>,
    selected: Option<usize>,
    /// Every selected file (the inspector shows `selected`); A / R apply to all of them.
    picked: std::collections::BTreeSet<usize>,
    open_text: String,
    /// A folder picker in flight.
    browse: Option<Receiver<Option<PathBuf>>>,
    message: Option<String>,
    /// The last committed edit.
    status: Option<String>,
    /// Every row in the table's sort order (see `resort`).
    sort_order: Option<Vec<usize>>,
    /// The selection moved by keyboard: bring it into view once.
    scroll_to_selected: Option<()>,
    /// Histogram being brushed: column and the value where the drag started.
    brushing: Option<(String, f64)>,
    last_reload: Instant,
    thumbs: Thumbnails,
    export: ExportDialog,
    history: History,
    player: Option<Player>,
    edits: Option<EditWriter>,
    /// A clip edge being dragged on the timeline: (clip index, start edge).
    clip_drag: Option<(usize, bool)>,
    ctx: egui::Context,
    /// The keyboard shortcuts window (F1).
    help: bool,
    /// Label given to the clips made next.
    clip_label: String,
    /// The tags and note fields of the inspector, and the file they were filled for.
    tags_text: (Option<crate::model::ItemId>, String, String),
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
            filter: Filter::default(),
            filtered: Vec::new(),
            subsets: Vec::new(),
            selected: None,
            picked: std::collections::BTreeSet::new(),
            open_text: String::new(),
            browse: None,
            message: None,
            status: None,
            scroll_to_selected: None,
            sort_order: None,
            brushing: None,
            last_reload: Instant::now(),
            thumbs: Thumbnails::new(),
            export: ExportDialog::default(),
            history: History::default(),
            player: None,
            edits: None,
            clip_drag: None,
            ctx: ctx.clone(),
            help: false,
            clip_label: String::new(),
            tags_text: (None, String::new(), String::new()),
        };
        app.filter = app.state.filter.clone();
        let start = dir.or_else(|| app.state.last_project.clone());
        if let Some(dir) = start {
            app.apply(Command::Open(dir));
        }
        app
    }

    /// Files that pass the current filter.
    pub fn shown(&self) -> usize {
        self.filtered.len()
    }

    /// A project is loaded and no load or scan is running.
    pub fn is_idle(&self) -> bool {
        self.view.is_some() && self.loading.is_none() && self.scan.is_none()
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

    /// Index of the row with this path.
    pub fn row_index(&self, path: &str) -> Option<usize> {
        self.view.as_ref()?.rows.iter().position(|r| r.path == path)
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

    /// The file the inspector shows.
    fn selected_row(&self) -> Option<&ViewRow> {
        let view = self.view.as_ref()?;
        self.selected.and_then(|i| view.rows.get(i))
    }

    /// Apply a command, as the panels do.
    pub fn apply(&mut self, command: Command) {
        tracing::debug!(?command, "apply");
        match command {
            Command::Open(dir) => {
                let project = if dir.join("catalog.db").is_file() {
                    dir
                } else {
                    dir.join(PROJECT_DIR_NAME)
                };
                if project.join("catalog.db").is_file() {
                    self.loading = Some(spawn_load(project.clone()));
                    self.remember(project);
                } else if dir_is_dataset(&project) {
                    // A folder never scanned: scan it.
                    if let Some(root) = project.parent() {
                        self.scan = Some(spawn_scan(root.to_path_buf(), false));
                    }
                } else {
                    self.message = Some(format!("{} is not a folder", project.display()));
                }
            }
            Command::Demo => {
                self.scan = Some(spawn_scan(crate::demo::default_dir(), true));
            }
            Command::Rescan => {
                if let Some(v) = &self.view {
                    self.scan = Some(spawn_scan(v.root.clone(), false));
                }
            }
            Command::CancelScan => {
                if let Some(s) = &self.scan {
                    s.cancel.store(true, Ordering::SeqCst);
                }
            }
            Command::Brush { column, lo, hi } => {
                self.filter.ranges.retain(|r| r.0 != column);
                self.filter.ranges.push((column, lo.min(hi), lo.max(hi)));
                self.refilter();
            }
            Command::ClearRange(column) => {
                self.filter.ranges.retain(|r| r.0 != column);
                self.refilter();
            }
            Command::FilterFlag(code) => {
                self.filter.flag = code;
                self.refilter();
            }
            Command::Select(i) => {
                self.selected = i;
                self.picked = i.into_iter().collect();
                self.open_player();
            }
            Command::Search(text) => {
                self.filter.search = text;
                self.refilter();
            }
            Command::SortBy(column) => {
                self.state.sort = match self.state.sort.take() {
                    Some((c, asc)) if c == column => Some((c, !asc)),
                    _ => Some((column.to_string(), true)),
                };
                self.resort();
                self.refilter();
            }
            Command::Browse => {
                if self.browse.is_none() {
                    let (tx, rx) = std::sync::mpsc::channel();
                    let spawned = std::thread::Builder::new()
                        .name("framecull-browse".into())
                        .spawn(move || {
                            let _ = tx.send(
                                rfd::FileDialog::new()
                                    .set_title("Open a dataset folder")
                                    .pick_folder(),
                            );
                        });
                    match spawned {
                        Ok(_) => self.browse = Some(rx),
                        Err(e) => {
                            self.message = Some(format!("cannot open the folder picker: {e}"))
                        }
                    }
                }
            }
            Command::TogglePick(i) => {
                if !self.picked.remove(&i) {
                    self.picked.insert(i);
                    self.selected = Some(i);
                } else if self.selected == Some(i) {
                    self.selected = self.picked.iter().next().copied();
                }
                self.open_player();
            }
            Command::PickRange(i) => {
                let from = self
                    .selected
                    .and_then(|s| self.filtered.iter().position(|&f| f == s));
                let to = self.filtered.iter().position(|&f| f == i);
                if let (Some(a), Some(b)) = (from, to) {
                    self.picked
                        .extend(self.filtered[a.min(b)..=a.max(b)].iter().copied());
                } else {
                    self.picked.insert(i);
                }
                self.selected = Some(i);
                self.open_player();
            }
            Command::ShowGallery(on) => self.state.gallery = on,
            Command::ShowExport => self.export.open = true,
            Command::ShowManifests => {
                self.history.open = true;
                if let Some(v) = &self.view {
                    self.history.refresh(&v.project);
                }
            }
            Command::Close => {
                self.view = None;
                self.player = None;
                self.edits = None;
                self.state.last_project = None;
            }
            Command::PlayPause => {
                if let Some(p) = &mut self.player {
                    if p.speed == 0.0 {
                        p.play(1.0)
                    } else {
                        p.pause()
                    }
                }
            }
            Command::Step(d) => {
                if let Some(p) = &mut self.player {
                    p.step(d);
                }
            }
            Command::Shuttle(d) => {
                if let Some(p) = &mut self.player {
                    p.shuttle(d);
                }
            }
            Command::SeekFrame(f) => {
                if let Some(p) = &mut self.player {
                    p.seek(f);
                }
            }
            Command::MarkIn => {
                if let Some(p) = &mut self.player {
                    p.mark_in = Some(p.current);
                }
            }
            Command::MarkOut => self.mark_out(),
            Command::Decide(decision) => self.decide(decision),
            Command::DecideShown(decision) => {
                if let Some(v) = &self.view {
                    let items = self.filtered.iter().map(|&i| v.rows[i].id).collect();
                    self.send_edit(EditRequest::Decide { items, decision });
                }
            }
            Command::RemoveClip(clip) => {
                self.send_edit(EditRequest::Apply(vec![Edit::RemoveClip { clip }]))
            }
            Command::ReshapeClip { clip, start, end } => {
                if let Some(t) = self.player.as_ref().and_then(|p| p.timeline.as_ref()) {
                    let mut new =
                        t.clip(clip.item_id, start, end, clip.label.clone(), &clip.origin);
                    new.decision = clip.decision;
                    self.send_edit(EditRequest::Apply(vec![
                        Edit::RemoveClip { clip },
                        Edit::AddClip { clip: new },
                    ]));
                }
            }
            Command::ToggleHelp => self.help = !self.help,
            Command::SplitAtCuts => self.split_at_cuts(),
            Command::ProposeClips => self.propose_clips(),
            Command::SetNote(note) => {
                if let Some(item) = self.selected_row().map(|r| r.id) {
                    self.send_edit(EditRequest::Note { item, note });
                }
            }
            Command::SetTags(text) => {
                if let Some(item) = self.selected_row().map(|r| r.id) {
                    let mut tags: Vec<String> = text
                        .split(',')
                        .map(|t| t.trim().to_string())
                        .filter(|t| !t.is_empty())
                        .collect();
                    tags.sort();
                    tags.dedup();
                    self.send_edit(EditRequest::Tags { item, tags });
                }
            }
            Command::SelectNext(d) => {
                let at = self
                    .selected
                    .and_then(|s| self.filtered.iter().position(|&i| i == s));
                let next = match at {
                    Some(p) => (p as i64 + d).clamp(0, self.filtered.len() as i64 - 1) as usize,
                    None => 0,
                };
                if let Some(&i) = self.filtered.get(next) {
                    self.scroll_to_selected = Some(());
                    self.apply(Command::Select(Some(i)));
                }
            }
            Command::Undo => self.send_edit(EditRequest::Undo),
            Command::Redo => self.send_edit(EditRequest::Redo),
        }
    }

    fn send_edit(&mut self, request: EditRequest) {
        if let Some(w) = &mut self.edits {
            w.send(request);
        }
    }

    /// Open the player on the selected file when it is a playable video.
    fn open_player(&mut self) {
        let Some(view) = &self.view else {
            self.player = None;
            return;
        };
        let row = self.selected.and_then(|i| view.rows.get(i));
        let playable = row.filter(|r| r.kind == "video" && r.status == "ok");
        match playable {
            Some(r) if self.player.as_ref().is_some_and(|p| p.item == r.id) => {}
            Some(r) => {
                // Videos carry rotations only (no mirror).
                let (quarter_turns, _) = crate::model::orientation_turns(r.orientation);
                self.player = Some(Player::open(
                    &self.ctx,
                    &view.project,
                    view.root.join(&r.path),
                    r.id,
                    quarter_turns,
                ));
            }
            None => self.player = None,
        }
    }

    /// Clips `[a, b)` (frame indices) of the open video, labelled with the label field.
    fn add_clips(&mut self, ranges: &[(usize, usize)], origin: &str) {
        let Some(p) = &self.player else {
            return;
        };
        let Some(t) = &p.timeline else {
            return;
        };
        let label = Some(self.clip_label.trim().to_string()).filter(|l| !l.is_empty());
        let edits: Vec<Edit> = ranges
            .iter()
            .filter(|(a, b)| b > a)
            .map(|&(a, b)| Edit::AddClip {
                clip: t.clip(p.item, a, b.min(t.len()), label.clone(), origin),
            })
            .collect();
        if edits.is_empty() {
            self.message = Some("no clips to add".into());
        } else {
            self.send_edit(EditRequest::Apply(edits));
        }
    }

    fn split_at_cuts(&mut self) {
        let Some(p) = &self.player else {
            return;
        };
        let (Some(t), Some(curves)) = (&p.timeline, &p.curves) else {
            self.message = Some("no analysis for this video yet (framecull analyze)".into());
            return;
        };
        let mut bounds = vec![0];
        bounds.extend(
            curves
                .cuts
                .iter()
                .map(|c| c.frame as usize)
                .filter(|&f| f > 0 && f < t.len()),
        );
        bounds.push(t.len());
        let ranges: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        self.add_clips(&ranges, "cuts");
    }

    fn propose_clips(&mut self) {
        use crate::analysis::proposals::{ProposalOptions, propose};
        let Some(p) = &self.player else {
            return;
        };
        let (Some(t), Some(curves)) = (&p.timeline, &p.curves) else {
            self.message = Some("no analysis for this video yet (framecull analyze)".into());
            return;
        };
        let t0 = t.secs(t.pts_at(0));
        let duration = t.secs(t.pts_at(t.len())) - t0;
        let ranges: Vec<(usize, usize)> =
            propose(&curves.motion, duration, &ProposalOptions::default())
                .into_iter()
                .map(|(a, b)| {
                    let end = t.pts.partition_point(|&p| t.secs(p) < t0 + b - 1e-9);
                    (t.frame_at_secs(t0 + a), end)
                })
                .collect();
        self.add_clips(&ranges, "auto");
    }

    fn mark_out(&mut self) {
        let Some(p) = &mut self.player else {
            return;
        };
        if p.timeline.is_none() {
            return;
        }
        let from = p.mark_in.take().unwrap_or(p.current);
        let (s, e) = (from.min(p.current), from.max(p.current) + 1);
        self.add_clips(&[(s, e)], "manual");
    }

    fn decide(&mut self, decision: Decision) {
        let Some(view) = &self.view else {
            return;
        };
        if self.picked.len() > 1 {
            let items = self.picked.iter().map(|&i| view.rows[i].id).collect();
            self.send_edit(EditRequest::Decide { items, decision });
            return;
        }
        let Some(row) = self.selected.and_then(|i| view.rows.get(i)) else {
            return;
        };
        // The clip under the playhead, when there is one.
        if let Some(p) = &self.player
            && let Some(t) = &p.timeline
            && let Some(clip) = view.review.clips.get(&row.id).and_then(|clips| {
                clips.iter().find(|c| {
                    let (s, e) = clip_frames(c, t);
                    (s..e).contains(&p.current)
                })
            })
        {
            let mut new = clip.clone();
            new.decision = decision;
            let edits = vec![
                Edit::RemoveClip { clip: clip.clone() },
                Edit::AddClip { clip: new },
            ];
            self.send_edit(EditRequest::Apply(edits));
            return;
        }
        let items = vec![row.id];
        self.send_edit(EditRequest::Decide { items, decision });
    }

    fn remember(&mut self, project: PathBuf) {
        self.state.recent.retain(|p| *p != project);
        self.state.recent.insert(0, project.clone());
        self.state.recent.truncate(8);
        self.state.last_project = Some(project);
    }

    /// Every row in the table's sort order, when a sort is chosen.
    fn resort(&mut self) {
        self.sort_order = match (&self.view, &self.state.sort) {
            (Some(view), Some((column, ascending))) => {
                let mut all: Vec<usize> = (0..view.rows.len()).collect();
                sort_rows(view, &mut all, column, *ascending);
                Some(all)
            }
            _ => None,
        };
    }

    fn refilter(&mut self) {
        self.filtered = match &self.view {
            Some(v) => self.filter.select(&v.rows, &v.columns),
            None => Vec::new(),
        };
        self.subsets = match &self.view {
            Some(v) => v
                .histograms
                .iter()
                .map(|h| match v.columns.get(h.column.as_str()) {
                    Some(values) => binned(h, values, &self.filtered),
                    None => vec![0; h.counts.len()],
                })
                .collect(),
            None => Vec::new(),
        };
        let filtered = &self.filtered;
        self.picked.retain(|i| filtered.binary_search(i).is_ok());
        let gone = self
            .selected
            .is_some_and(|s| self.filtered.binary_search(&s).is_err());
        // Table order: walk the sorted list once (no sort per filter change, a brush drag
        // refilters every frame).
        if let Some(order) = &self.sort_order {
            let mut keep = vec![false; order.len()];
            for &i in &self.filtered {
                keep[i] = true;
            }
            self.filtered = order.iter().copied().filter(|&i| keep[i]).collect();
        }
        if gone {
            self.selected = None;
        }
    }

    /// Take what background jobs finished.
    fn poll(&mut self, ctx: &egui::Context) {
        if let Some(rx) = &self.browse {
            match rx.try_recv() {
                Ok(Some(dir)) => {
                    self.browse = None;
                    self.apply(Command::Open(dir));
                }
                Ok(None) => self.browse = None,
                Err(TryRecvError::Empty) => ctx.request_repaint_after(Duration::from_millis(100)),
                Err(TryRecvError::Disconnected) => {
                    self.browse = None;
                    self.message = Some(
                        "no folder picker on this system (needs the XDG desktop portal or zenity): type the path".into(),
                    );
                }
            }
        }
        if let Some(rx) = &self.loading {
            match rx.try_recv() {
                Ok(Ok(view)) => {
                    if self.view.as_ref().is_none_or(|v| v.project != view.project)
                        || self.edits.is_none()
                    {
                        self.edits = Some(EditWriter::start(view.project.clone()));
                        self.player = None;
                    }
                    self.view = Some(view);
                    self.resort();
                    self.loading = None;
                    self.refilter();
                    self.open_player();
                }
                Ok(Err(e)) => {
                    self.message = Some(e);
                    self.loading = None;
                }
                Err(TryRecvError::Empty) => ctx.request_repaint_after(Duration::from_millis(50)),
                Err(TryRecvError::Disconnected) => self.loading = None,
            }
        }
        let mut finished = None;
        let mut reload = false;
        if let Some(job) = &mut self.scan {
            loop {
                match job.rx.try_recv() {
                    Ok(ScanMsg::Phase(p)) => {
                        job.phase = p;
                        job.started = Instant::now();
                        job.done = 0;
                    }
                    Ok(ScanMsg::Progress { done, total }) => {
                        job.done = done;
                        job.total = total;
                    }
                    Ok(ScanMsg::Stored) => reload = true,
                    Ok(ScanMsg::Finished(r)) => {
                        finished = Some(r);
                        break;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        finished = Some(Err("the scan stopped unexpectedly".into()));
                        break;
                    }
                }
            }
            ctx.request_repaint_after(Duration::from_millis(100));
        }
        if let Some(r) = finished {
            self.scan = None;
            match r {
                Ok(project) => self.apply(Command::Open(project)),
                Err(e) => self.message = Some(e),
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
    fn poll_edits(&mut self) {
        let Some(w) = &mut self.edits else {
            return;
        };
        for done in w.poll() {
            match done.result {
                Ok(m) => self.status = Some(m),
                Err(e) => self.message = Some(format!("not saved: {e}")),
            }
            if let (Some(state), Some(view)) = (done.state, &mut self.view) {
                view.review = state;
                if self.state.sort.as_ref().is_some_and(|(c, _)| c == "review") {
                    self.resort();
                    self.refilter();
                }
            }
        }
    }

    fn scan_project(&self) -> Option<PathBuf> {
        self.view.as_ref().map(|v| v.project.clone())
    }
}

fn dir_is_dataset(project: &std::path::Path) -> bool {
    project.parent().is_some_and(|p| p.is_dir())
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.frame_ui(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        self.state.filter = self.filter.clone();
        eframe::set_value(storage, eframe::APP_KEY, &self.state);
    }
}

impl App {
    /// One frame of the whole window.
    pub fn frame_ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.poll(&ctx);
        self.poll_edits();
        if let Some(p) = &mut self.player {
            p.update(&ctx);
        }
        self.thumbs.poll(&ctx);
        if self.thumbs.waiting() || self.pending_edits() > 0 {
            ctx.request_repaint_after(Duration::from_millis(30));
        }
        let mut commands = Vec::new();
        if self.view.is_some() && !ctx.text_edit_focused() {
            // Shortcuts win over egui's focus moves (arrows) and clicks (Space) on buttons.
            let key = ui.input(|i| {
                i.events
                    .iter()
                    .any(|e| matches!(e, egui::Event::Key { pressed: true, .. }))
            });
            if key && let Some(id) = ctx.memory(|m| m.focused()) {
                ctx.memory_mut(|m| m.surrender_focus(id));
            }
            shortcuts(ui, &mut commands);
        }
        if ui.input(|i| i.key_pressed(egui::Key::F1)) {
            commands.push(Command::ToggleHelp);
        }
        help_ui(&ctx, &mut self.help);
        egui::Panel::top("top").show(ui, |ui| top_bar_ui(ui, self, &mut commands));
        if let Some(view) = &self.view {
            let shown = self.filtered.len();
            let picked = self.picked.len();
            egui::Panel::left("side")
                .resizable(true)
                .default_size(260.0)
                .show(ui, |ui| {
                    side_ui(ui, view, shown, picked, &self.filter, &mut commands)
                });
            if let Some(sel) = self.selected.and_then(|s| view.rows.get(s)) {
                let clips = view
                    .review
                    .clips
                    .get(&sel.id)
                    .map_or(&[][..], Vec::as_slice);
                let decision = view
                    .review
                    .decisions
                    .get(&sel.id)
                    .copied()
                    .unwrap_or_default();
                let player = self.player.as_ref();
                let drag = &mut self.clip_drag;
                if self.tags_text.0 != Some(sel.id) {
                    let tags = view.review.tags.get(&sel.id).cloned().unwrap_or_default();
                    let note = view.review.notes.get(&sel.id).cloned().unwrap_or_default();
                    self.tags_text = (Some(sel.id), tags.join(", "), note);
                }
                let fields = Fields {
                    tags: &mut self.tags_text.1,
                    note: &mut self.tags_text.2,
                    label: &mut self.clip_label,
                    drag,
                };
                egui::Panel::right("inspector")
                    .resizable(true)
                    .default_size(if player.is_some() { 520.0 } else { 300.0 })
                    .show(ui, |ui| {
                        egui::ScrollArea::vertical()
                            .id_salt("inspector")
                            .show(ui, |ui| {
                                inspector_ui(
                                    ui,
                                    view,
                                    sel,
                                    decision,
                                    player,
                                    clips,
                                    fields,
                                    &mut commands,
                                );
                            });
                    });
            }
            egui::CentralPanel::default().show(ui, |ui| {
                filter_chips_ui(ui, &self.filter, &mut commands);
                histograms_ui(
                    ui,
                    view,
                    &self.subsets,
                    &self.filter,
                    &mut self.brushing,
                    &mut commands,
                );
                ui.separator();
                ui.horizontal(|ui| {
                    if ui.selectable_label(!self.state.gallery, "Table").clicked() {
                        commands.push(Command::ShowGallery(false));
                    }
                    if ui.selectable_label(self.state.gallery, "Gallery").clicked() {
                        commands.push(Command::ShowGallery(true));
                    }
                    ui.separator();
                    let label = ui.label("path contains:");
                    let mut text = self.filter.search.clone();
                    let edit = ui
                        .add(egui::TextEdit::singleline(&mut text).desired_width(220.0))
                        .labelled_by(label.id);
                    if edit.changed() {
                        commands.push(Command::Search(text));
                    }
                });
                if self.state.gallery {
                    gallery_ui(
                        ui,
                        view,
                        &self.filtered,
                        &self.picked,
                        &mut self.thumbs,
                        &mut commands,
                    );
                } else {
                    let scroll_to = self.scroll_to_selected.take().and(self.selected);
                    table_ui(
                        ui,
                        view,
                        &self.filtered,
                        self.selected,
                        &self.picked,
                        scroll_to,
                        self.state.sort.as_ref().map(|(c, a)| (c.as_str(), *a)),
                        &mut commands,
                    );
                }
            });
        } else {
            egui::CentralPanel::default().show(ui, |ui| start_ui(ui, self, &mut commands));
        }
        if let Some(v) = &self.view {
            let project = v.project.clone();
            self.export.ui(&ctx, &project);
            self.history.ui(&ctx, &project);
        }
        for c in commands {
            self.apply(c);
        }
    }
}

fn top_bar_ui(ui: &mut egui::Ui, app: &App, commands: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        ui.label(RichText::new("framecull").strong().color(theme::ACCENT));
        if let Some(v) = &app.view {
            ui.label(v.root.display().to_string());
            if app.scan.is_none() && ui.button("Rescan").clicked() {
                commands.push(Command::Rescan);
            }
            if ui.button("Export…").clicked() {
                commands.push(Command::ShowExport);
            }
            if ui.button("Manifests").clicked() {
                commands.push(Command::ShowManifests);
            }
            if ui.button("Close").clicked() {
                commands.push(Command::Close);
            }
        }
        if let Some(job) = &app.scan {
            let fraction = if job.total > 0 {
                job.done as f32 / job.total as f32
            } else {
                0.0
            };
            let secs = job.started.elapsed().as_secs_f64().max(1e-3);
            let rate = job.done as f64 / secs;
            let eta = if rate > 0.0 && job.total > job.done {
                format!("ETA {:.0} s", (job.total - job.done) as f64 / rate)
            } else {
                String::new()
            };
            ui.add(
                egui::ProgressBar::new(fraction)
                    .desired_width(220.0)
                    .text(format!(
                        "{} {}/{}  {rate:.0} files/s  {eta}",
                        job.phase, job.done, job.total
                    )),
            );
            if ui.button("Cancel").clicked() {
                commands.push(Command::CancelScan);
            }
        }
        if app.loading.is_some() {
            ui.spinner();
        }
        if let Some(m) = &app.message {
            ui.colored_label(theme::ERROR, m);
        }
        if let Some(s) = &app.status {
            ui.colored_label(theme::INFO, format!("saved: {s}"));
        }
    });
}

fn start_ui(ui: &mut egui::Ui, app: &mut App, commands: &mut Vec<Command>) {
    ui.vertical_centered(|ui| {
        ui.add_space(60.0);
        ui.heading("See, filter, trim and ship your image and video datasets");
        ui.add_space(20.0);
        ui.horizontal(|ui| {
            let label = ui.label("Dataset folder:");
            ui.text_edit_singleline(&mut app.open_text)
                .labelled_by(label.id);
            if ui.button("Open folder").clicked() && !app.open_text.trim().is_empty() {
                commands.push(Command::Open(PathBuf::from(app.open_text.trim())));
            }
            if ui.button("Browse…").clicked() {
                commands.push(Command::Browse);
            }
        });
        ui.add_space(10.0);
        if ui
            .button(RichText::new("Try the demo").size(18.0))
            .clicked()
        {
            commands.push(Command::Demo);
        }
        if !app.state.recent.is_empty() {
            ui.add_space(20.0);
            ui.label(RichText::new("Recent projects").strong());
            for p in app.state.recent.clone() {
                if ui.link(p.display().to_string()).clicked() {
                    commands.push(Command::Open(p));
                }
            }
        }
    });
}

fn card_ui(ui: &mut egui::Ui, title: &str, value: String) {
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

fn side_ui(
    ui: &mut egui::Ui,
    view: &View,
    shown: usize,
    picked: usize,
    filter: &Filter,
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
    let count = |d: Decision| view.review.decisions.values().filter(|v| **v == d).count();
    ui.label(format!(
        "{} accepted, {} rejected",
        count(Decision::Accepted),
        count(Decision::Rejected)
    ));
    if picked > 1 {
        ui.colored_label(
            theme::ACCENT,
            format!("{picked} files selected: A / R / U apply to all"),
        );
    }
    ui.horizontal(|ui| {
        if ui.button(format!("Accept {shown} shown")).clicked() {
            commands.push(Command::DecideShown(Decision::Accepted));
        }
        if ui.button(format!("Reject {shown} shown")).clicked() {
            commands.push(Command::DecideShown(Decision::Rejected));
        }
    });
    ui.horizontal(|ui| {
        if ui.small_button("Undo").clicked() {
            commands.push(Command::Undo);
        }
        if ui.small_button("Redo").clicked() {
            commands.push(Command::Redo);
        }
        if ui.small_button("Shortcuts (F1)").clicked() {
            commands.push(Command::ToggleHelp);
        }
    });
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
                    commands.push(Command::FilterFlag((!selected).then(|| code.clone())));
                }
            }
        });
}

fn filter_chips_ui(ui: &mut egui::Ui, filter: &Filter, commands: &mut Vec<Command>) {
    if filter.is_empty() {
        ui.label(RichText::new("Drag across a histogram to filter").small());
        return;
    }
    ui.horizontal_wrapped(|ui| {
        for (col, lo, hi) in &filter.ranges {
            if ui.button(format!("{col} {lo:.2}..{hi:.2}  x")).clicked() {
                commands.push(Command::ClearRange(col.clone()));
            }
        }
        if let Some(code) = &filter.flag
            && ui.button(format!("flag {code}  x")).clicked()
        {
            commands.push(Command::FilterFlag(None));
        }
    });
}

fn histograms_ui(
    ui: &mut egui::Ui,
    view: &View,
    subsets: &[Vec<u64>],
    filter: &Filter,
    brushing: &mut Option<(String, f64)>,
    commands: &mut Vec<Command>,
) {
    let cell = theme::HISTOGRAM_SIZE.x + theme::SPACING;
    let per_row = ((ui.available_width() / cell).floor() as usize).max(1);
    let empty = Vec::new();
    let histograms: Vec<(usize, &crate::analysis::histogram::Histogram)> =
        view.histograms.iter().enumerate().collect();
    for chunk in histograms.chunks(per_row) {
        ui.horizontal(|ui| {
            for &(i, h) in chunk {
                let subset = subsets.get(i).unwrap_or(&empty);
                histogram_ui(ui, h, subset, filter, brushing, commands);
            }
        });
    }
}

fn histogram_ui(
    ui: &mut egui::Ui,
    h: &crate::analysis::histogram::Histogram,
    subset: &[u64],
    filter: &Filter,
    brushing: &mut Option<(String, f64)>,
    commands: &mut Vec<Command>,
) {
    ui.vertical(|ui| {
        ui.label(RichText::new(&h.label).small());
        let (rect, response) = ui.allocate_exact_size(theme::HISTOGRAM_SIZE, Sense::drag());
        let painter = ui.painter_at(rect);
        painter.rect_filled(rect, 4.0, theme::CARD_BG);
        let peak = h.counts.iter().copied().max().unwrap_or(1).max(1) as f32;
        let n = h.counts.len().max(1);
        let w = rect.width() / n as f32;
        for (i, (&all, &sub)) in h.counts.iter().zip(subset).enumerate() {
            let x = rect.left() + i as f32 * w;
            let bar = |count: u64| {
                let height = rect.height() * (count as f32 / peak);
                egui::Rect::from_min_max(
                    egui::pos2(x + 1.0, rect.bottom() - height),
                    egui::pos2(x + w - 1.0, rect.bottom()),
                )
            };
            painter.rect_filled(bar(all), 1.0, theme::BAR);
            painter.rect_filled(bar(sub), 1.0, theme::BAR_SELECTED);
        }
        // Value at a screen x, in the measure's units.
        let value_at = |x: f32| {
            let t = ((x - rect.left()) / rect.width()).clamp(0.0, 1.0) as f64;
            let (lo, hi) = (h.edges[0], h.edges[h.edges.len() - 1]);
            if h.log {
                10f64.powf(lo.log10() + t * (hi.log10() - lo.log10()))
            } else {
                lo + t * (hi - lo)
            }
        };
        let x_of = |v: f64| {
            let (lo, hi) = (h.edges[0], h.edges[h.edges.len() - 1]);
            let t = if h.log {
                (v.log10() - lo.log10()) / (hi.log10() - lo.log10())
            } else {
                (v - lo) / (hi - lo)
            };
            rect.left() + (t.clamp(0.0, 1.0) as f32) * rect.width()
        };
        if let Some((_, lo, hi)) = filter.ranges.iter().find(|r| r.0 == h.column) {
            let r = egui::Rect::from_x_y_ranges(x_of(*lo)..=x_of(*hi), rect.y_range());
            painter.rect_filled(r, 0.0, theme::BRUSH);
        }
        if response.drag_started()
            && let Some(p) = response.interact_pointer_pos()
        {
            *brushing = Some((h.column.clone(), value_at(p.x)));
        }
        if response.dragged() || response.drag_stopped() {
            if let (Some((col, start)), Some(p)) =
                (brushing.as_ref(), response.interact_pointer_pos())
                && *col == h.column
            {
                commands.push(Command::Brush {
                    column: col.clone(),
                    lo: *start,
                    hi: value_at(p.x),
                });
            }
            if response.drag_stopped() {
                *brushing = None;
            }
        }
    });
}

#[allow(clippy::too_many_arguments)]
fn table_ui(
    ui: &mut egui::Ui,
    view: &View,
    filtered: &[usize],
    selected: Option<usize>,
    picked: &std::collections::BTreeSet<usize>,
    scroll_to: Option<usize>,
    sort: Option<(&str, bool)>,
    commands: &mut Vec<Command>,
) {
    // One line per row: long values are cut, not wrapped.
    ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Truncate);
    let mut table = TableBuilder::new(ui);
    if let Some(row) = scroll_to.and_then(|s| filtered.iter().position(|&i| i == s)) {
        table = table.scroll_to_row(row, None);
    }
    table
        .striped(true)
        .sense(Sense::click())
        .column(Column::initial(300.0).resizable(true))
        .columns(Column::auto(), TABLE_COLUMNS.len() - 2)
        .column(Column::remainder())
        .header(20.0, |mut header| {
            for &(key, title) in TABLE_COLUMNS {
                header.col(|ui| {
                    let arrow = match sort {
                        Some((c, true)) if c == key => " ^",
                        Some((c, false)) if c == key => " v",
                        _ => "",
                    };
                    let text = RichText::new(format!("{title}{arrow}")).strong();
                    if ui.add(egui::Button::new(text).frame(false)).clicked() {
                        commands.push(Command::SortBy(key));
                    }
                });
            }
        })
        .body(|body| {
            body.rows(18.0, filtered.len(), |mut row| {
                let index = filtered[row.index()];
                let r = &view.rows[index];
                row.set_selected(picked.contains(&index));
                let measure = |k: &str| {
                    r.measures
                        .get(k)
                        .map_or(String::new(), |v| format!("{v:.2}"))
                };
                row.col(|ui| {
                    // A selectable label: clickable from the keyboard and accessibility too.
                    if ui
                        .selectable_label(selected == Some(index), &r.path)
                        .clicked()
                    {
                        commands.push(click_command(ui.ctx(), index));
                    }
                });
                row.col(|ui| {
                    ui.label(r.kind);
                });
                row.col(|ui| {
                    let color = if r.status == "ok" {
                        theme::INFO
                    } else {
                        theme::ERROR
                    };
                    ui.colored_label(color, r.status);
                });
                row.col(|ui| {
                    ui.label(&r.codec);
                });
                row.col(|ui| {
                    ui.label(&r.resolution);
                });
                row.col(|ui| {
                    ui.label(measure("duration_secs"));
                });
                row.col(|ui| {
                    ui.label(measure("motion_mean"));
                });
                row.col(|ui| {
                    ui.label(measure("fps"));
                });
                row.col(|ui| {
                    ui.label(
                        r.measures
                            .get("size_bytes")
                            .map_or(String::new(), |v| crate::model::human_bytes(*v as u64)),
                    );
                });
                row.col(|ui| {
                    ui.label(measure("brightness"));
                });
                row.col(|ui| {
                    ui.label(measure("sharpness"));
                });
                row.col(|ui| {
                    let d = view
                        .review
                        .decisions
                        .get(&r.id)
                        .copied()
                        .unwrap_or_default();
                    if d != Decision::Unreviewed {
                        ui.colored_label(theme::decision_color(d), d.as_str());
                    }
                });
                row.col(|ui| {
                    let text = r
                        .flags
                        .iter()
                        .map(|f| f.0.as_str())
                        .collect::<Vec<_>>()
                        .join(", ");
                    let color = r.worst().map_or(theme::INFO, theme::severity_color);
                    ui.colored_label(color, text);
                });
                let response = row.response();
                if response.clicked() {
                    commands.push(click_command(&response.ctx, index));
                }
            });
        });
}

/// Editable state of the inspector that lives in the app between frames.
struct Fields<'a> {
    tags: &'a mut String,
    note: &'a mut String,
    label: &'a mut String,
    drag: &'a mut Option<(usize, bool)>,
}

#[allow(clippy::too_many_arguments)]
fn inspector_ui(
    ui: &mut egui::Ui,
    view: &View,
    row: &ViewRow,
    decision: Decision,
    player: Option<&Player>,
    clips: &[Clip],
    fields: Fields,
    commands: &mut Vec<Command>,
) {
    ui.heading("Inspector");
    ui.label(RichText::new(&row.path).strong());
    ui.label(format!(
        "{}  {}  {}  {}",
        row.kind, row.status, row.codec, row.resolution
    ));
    if let Some(e) = &row.error {
        ui.colored_label(theme::ERROR, e);
    }
    ui.horizontal(|ui| {
        ui.label("review:");
        ui.colored_label(theme::decision_color(decision), decision.as_str());
        for (label, d) in [
            ("Accept (A)", Decision::Accepted),
            ("Reject (R)", Decision::Rejected),
            ("Reset (U)", Decision::Unreviewed),
        ] {
            if ui.small_button(label).clicked() {
                commands.push(Command::Decide(d));
            }
        }
    });
    ui.horizontal(|ui| {
        let label = ui.label("tags:");
        let edit = ui
            .add(egui::TextEdit::singleline(fields.tags).hint_text("comma, separated"))
            .labelled_by(label.id);
        let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.small_button("Set tags").clicked() || enter {
            commands.push(Command::SetTags(fields.tags.clone()));
        }
    });
    ui.horizontal(|ui| {
        let label = ui.label("note:");
        let edit = ui
            .add(egui::TextEdit::singleline(fields.note).hint_text("why, for whom"))
            .labelled_by(label.id);
        let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.small_button("Set note").clicked() || enter {
            commands.push(Command::SetNote(fields.note.clone()));
        }
    });
    if let Some(p) = player {
        ui.separator();
        player_ui(ui, p, clips, fields.label, fields.drag, commands);
    }
    ui.separator();
    egui::Grid::new("measures").striped(true).show(ui, |ui| {
        for (k, v) in &row.measures {
            ui.label(*k);
            ui.label(format!("{v:.3}"));
            ui.end_row();
        }
    });
    ui.separator();
    for (code, severity, reason) in &row.flags {
        ui.colored_label(theme::severity_color(*severity), code);
        ui.label(reason);
    }
    ui.separator();
    ui.label(RichText::new(view.root.join(&row.path).display().to_string()).small());
}

/// The player, its timeline and the clips of the video.
fn player_ui(
    ui: &mut egui::Ui,
    player: &Player,
    clips: &[Clip],
    label: &mut String,
    drag: &mut Option<(usize, bool)>,
    commands: &mut Vec<Command>,
) {
    player.picture_ui(ui);
    ui.horizontal(|ui| {
        let play = if player.speed == 0.0 {
            "Play (Space)"
        } else {
            "Pause (Space)"
        };
        if ui.button(play).clicked() {
            commands.push(Command::PlayPause);
        }
        if ui.button("< frame").clicked() {
            commands.push(Command::Step(-1));
        }
        if ui.button("frame >").clicked() {
            commands.push(Command::Step(1));
        }
        if ui.button("In (I)").clicked() {
            commands.push(Command::MarkIn);
        }
        if ui.button("Out (O)").clicked() {
            commands.push(Command::MarkOut);
        }
    });
    ui.label(RichText::new(player.position_text()).monospace());
    if let Some(action) = timeline_ui(ui, player, clips, drag) {
        commands.push(match action {
            TimelineAction::Seek(f) => Command::SeekFrame(f),
            TimelineAction::Reshape { clip, start, end } => {
                Command::ReshapeClip { clip, start, end }
            }
        });
    }
    if let Some(m) = player.mark_in {
        ui.colored_label(
            theme::ACCEPTED,
            format!("in at frame {m}: step, then O to close the clip"),
        );
    }
    ui.horizontal(|ui| {
        let text = ui.label("label for new clips:");
        ui.add(egui::TextEdit::singleline(label).desired_width(120.0))
            .labelled_by(text.id);
        if ui.small_button("Split at cuts").clicked() {
            commands.push(Command::SplitAtCuts);
        }
        if ui.small_button("Propose from motion").clicked() {
            commands.push(Command::ProposeClips);
        }
    });
    ui.label(RichText::new(format!("Clips ({})", clips.len())).strong());
    for clip in clips {
        ui.horizontal(|ui| {
            let frames = match (clip.start_frame, clip.end_frame) {
                (Some(s), Some(e)) => format!("frames {s}..{e}"),
                _ => String::new(),
            };
            ui.colored_label(theme::decision_color(clip.decision), clip.decision.as_str());
            ui.label(format!(
                "{:.3}-{:.3} s  {frames}  {}",
                clip.start_secs,
                clip.end_secs,
                clip.label.as_deref().unwrap_or(&clip.origin)
            ));
            if ui.small_button("go").clicked()
                && let Some(t) = &player.timeline
            {
                commands.push(Command::SeekFrame(clip_frames(clip, t).0));
            }
            if ui.small_button("remove").clicked() {
                commands.push(Command::RemoveClip(clip.clone()));
            }
        });
    }
}

/// Keyboard shortcuts (when no text field has the keyboard).
fn shortcuts(ui: &egui::Ui, commands: &mut Vec<Command>) {
    use egui::Key;
    ui.input(|i| {
        let shift = i.modifiers.shift;
        let command = i.modifiers.command;
        // Several presses can land in one frame (key repeat, fast typing): count them.
        let step = if shift { 10 } else { 1 };
        let right = i.num_presses(Key::ArrowRight) as i64;
        let left = i.num_presses(Key::ArrowLeft) as i64;
        if !command && right != left {
            commands.push(Command::Step(step * (right - left)));
        }
        let down = i.num_presses(Key::ArrowDown) as i64 - i.num_presses(Key::ArrowUp) as i64;
        if !command && down != 0 {
            commands.push(Command::SelectNext(down));
        }
        for (key, c) in [
            (Key::Space, Command::PlayPause),
            (Key::J, Command::Shuttle(-1)),
            (Key::K, Command::Shuttle(0)),
            (Key::L, Command::Shuttle(1)),
            (Key::I, Command::MarkIn),
            (Key::O, Command::MarkOut),
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
                    commands.push(Command::Decide(d));
                }
            }
        }
        if command && i.key_pressed(Key::Z) {
            commands.push(if shift { Command::Redo } else { Command::Undo });
        }
        if command && i.key_pressed(Key::Y) {
            commands.push(Command::Redo);
        }
    });
}

/// Every shortcut, in a window (F1).
fn help_ui(ctx: &egui::Context, open: &mut bool) {
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
                    ("F1", "this window"),
                ] {
                    ui.monospace(k);
                    ui.label(what);
                    ui.end_row();
                }
            });
        });
}

fn gallery_ui(
    ui: &mut egui::Ui,
    view: &View,
    filtered: &[usize],
    picked: &std::collections::BTreeSet<usize>,
    thumbs: &mut Thumbnails,
    commands: &mut Vec<Command>,
) {
    let tile = egui::vec2(THUMB_SIZE as f32, THUMB_SIZE as f32 * 0.75 + 20.0);
    let per_row = ((ui.available_width() / (tile.x + theme::SPACING)).floor() as usize).max(1);
    let rows = filtered.len().div_ceil(per_row);
    egui::ScrollArea::vertical().id_salt("gallery").show_rows(
        ui,
        tile.y + theme::SPACING,
        rows,
        |ui, range| {
            for r in range {
                ui.horizontal(|ui| {
                    for &index in filtered.iter().skip(r * per_row).take(per_row) {
                        let row = &view.rows[index];
                        let (rect, response) = ui.allocate_exact_size(tile, Sense::click());
                        let image_rect =
                            egui::Rect::from_min_size(rect.min, egui::vec2(tile.x, tile.y - 20.0));
                        let painter = ui.painter_at(rect);
                        painter.rect_filled(image_rect, 4.0, theme::CARD_BG);
                        // Hovering a video scrubs through frames spread over it.
                        let scrub = response
                            .hover_pos()
                            .filter(|_| row.kind == "video" && row.status == "ok")
                            .and_then(|pos| {
                                let frames = thumbs.scrub(
                                    &row.key,
                                    &view.root.join(&row.path),
                                    &view.project,
                                    row.orientation,
                                );
                                let t = ((pos.x - rect.left()) / rect.width()).clamp(0.0, 0.999);
                                let i = (t * frames.len() as f32) as usize;
                                frames.get(i).map(|f| (f.clone(), t))
                            });
                        if let Some((texture, t)) = &scrub {
                            let size = texture.size_vec2();
                            let scale =
                                (image_rect.width() / size.x).min(image_rect.height() / size.y);
                            let fitted =
                                egui::Rect::from_center_size(image_rect.center(), size * scale);
                            let uv = egui::Rect::from_min_max(
                                egui::pos2(0.0, 0.0),
                                egui::pos2(1.0, 1.0),
                            );
                            painter.image(texture.id(), fitted, uv, egui::Color32::WHITE);
                            let bar = egui::Rect::from_min_size(
                                egui::pos2(image_rect.left(), image_rect.bottom() - 3.0),
                                egui::vec2(image_rect.width() * t, 3.0),
                            );
                            painter.rect_filled(bar, 0.0, theme::ACCENT);
                        } else {
                            match thumbs.get(
                                &row.key,
                                &view.root.join(&row.path),
                                &view.project,
                                row.orientation,
                            ) {
                                Thumb::Ready(texture) => {
                                    let size = texture.size_vec2();
                                    let scale = (image_rect.width() / size.x)
                                        .min(image_rect.height() / size.y);
                                    let fitted = egui::Rect::from_center_size(
                                        image_rect.center(),
                                        size * scale,
                                    );
                                    painter.image(
                                        texture.id(),
                                        fitted,
                                        egui::Rect::from_min_max(
                                            egui::pos2(0.0, 0.0),
                                            egui::pos2(1.0, 1.0),
                                        ),
                                        egui::Color32::WHITE,
                                    );
                                }
                                Thumb::Failed(why) => {
                                    painter.text(
                                        image_rect.center(),
                                        egui::Align2::CENTER_CENTER,
                                        "cannot decode",
                                        egui::FontId::proportional(12.0),
                                        theme::ERROR,
                                    );
                                    response.clone().on_hover_text(why.as_str());
                                }
                                Thumb::Pending => {}
                            }
                        }
                        if let Some(severity) = row.worst() {
                            let dot = egui::pos2(image_rect.right() - 8.0, image_rect.top() + 8.0);
                            painter.circle_filled(dot, 5.0, theme::severity_color(severity));
                        }
                        if picked.contains(&index) {
                            painter.rect_stroke(
                                image_rect,
                                4.0,
                                egui::Stroke::new(2.0, theme::ACCENT),
                                egui::StrokeKind::Inside,
                            );
                        }
                        let name = row.path.rsplit('/').next().unwrap_or(&row.path);
                        painter.text(
                            egui::pos2(rect.left() + 2.0, rect.bottom() - 10.0),
                            egui::Align2::LEFT_CENTER,
                            name,
                            egui::FontId::proportional(11.0),
                            ui.visuals().text_color(),
                        );
                        if response.clicked() {
                            commands.push(click_command(ui.ctx(), index));
                        }
                    }
                });
            }
        },
    );
}

/// What a click on a file does: select it, or with Ctrl add it (or take it out), or with
/// Shift select the range from the selected file.
fn click_command(ctx: &egui::Context, index: usize) -> Command {
    let modifiers = ctx.input(|i| i.modifiers);
    if modifiers.command {
        Command::TogglePick(index)
    } else if modifiers.shift {
        Command::PickRange(index)
    } else {
        Command::Select(Some(index))
    }
}

/// Table columns: sort key and title. Keys are measure names, or `path`, `kind`,
/// `status`, `codec`, `resolution`, `flags`, `review`.
const TABLE_COLUMNS: &[(&str, &str)] = &[
    ("path", "path"),
    ("kind", "kind"),
    ("status", "status"),
    ("codec", "codec"),
    ("resolution", "resolution"),
    ("duration_secs", "duration"),
    ("motion_mean", "motion"),
    ("fps", "fps"),
    ("size_bytes", "size"),
    ("brightness", "brightness"),
    ("sharpness", "sharpness"),
    ("review", "review"),
    ("flags", "flags"),
];

/// Order `rows` (indices into the view) by a table column; files without a value last.
fn sort_rows(view: &View, rows: &mut [usize], column: &str, ascending: bool) {
    let flip = |o: std::cmp::Ordering| if ascending { o } else { o.reverse() };
    if let Some(values) = view.columns.get(column) {
        rows.sort_by(|&a, &b| match (values[a].is_nan(), values[b].is_nan()) {
            (false, false) => flip(values[a].total_cmp(&values[b])),
            (x, y) => x.cmp(&y),
        });
        return;
    }
    let text = |i: usize| -> String {
        let r = &view.rows[i];
        match column {
            "kind" => r.kind.to_string(),
            "status" => r.status.to_string(),
            "codec" => r.codec.clone(),
            "resolution" => r.resolution.clone(),
            "review" => view
                .review
                .decisions
                .get(&r.id)
                .copied()
                .unwrap_or_default()
                .as_str()
                .to_string(),
            "flags" => format!("{:04}", r.flags.len()),
            _ => r.path.clone(),
        }
    };
    rows.sort_by_cached_key(|&i| text(i));
    if !ascending {
        rows.reverse();
    }
}
