//! Export dialog (preview of counts per split, then a new version) and the manifest history
//! with a diff of two versions. Their buttons push commands; the work they start (catalog
//! reads, the export) runs as background jobs the dialogs poll.

use std::path::Path;

use eframe::egui::{self, RichText};

use super::command::Command;
use super::jobs::{Job, take_finished};
use super::theme;
use crate::analysis::filter::Filter;
use crate::catalog::Catalog;
use crate::manifest::{
    self, Counts, Diff, ExportOptions, Format, Include, SplitSpec, Stratify, VersionMeta,
};
use crate::model::count;

type Background<T> = Option<Job<Result<T, String>>>;

fn background<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Job<Result<T, String>> {
    Job::run(name, work)
}

fn poll<T: Send + 'static>(slot: &mut Background<T>) -> Option<Result<T, String>> {
    take_finished(slot, Err("the background job stopped".into()))
}

pub struct ExportDialog {
    pub open: bool,
    name: String,
    formats: [bool; 3],
    split: String,
    /// Give each label its share of every split (`--stratify label`).
    stratify: bool,
    seed: u64,
    accepted_only: bool,
    /// Export only the files the window's filter shows.
    only_shown: bool,
    /// The window's filter, as of the last frame.
    filter: Filter,
    preview: Option<Result<Counts, String>>,
    done: Option<Result<VersionMeta, String>>,
    preview_job: Background<Counts>,
    export_job: Background<VersionMeta>,
}

impl Default for ExportDialog {
    fn default() -> Self {
        ExportDialog {
            open: false,
            name: "train".into(),
            formats: [true, false, false],
            split: "train=0.8,val=0.1,test=0.1".into(),
            stratify: false,
            seed: 0,
            accepted_only: false,
            only_shown: true,
            filter: Filter::default(),
            preview: None,
            done: None,
            preview_job: None,
            export_job: None,
        }
    }
}

impl ExportDialog {
    fn options(&self) -> Result<ExportOptions, String> {
        let formats: Vec<Format> = [Format::Parquet, Format::Jsonl, Format::Csv]
            .into_iter()
            .zip(self.formats)
            .filter_map(|(f, on)| on.then_some(f))
            .collect();
        let split = if self.split.trim().is_empty() {
            None
        } else {
            let spec = SplitSpec::parse(&self.split).map_err(|e| e.to_string())?;
            Some(spec.stratified(self.stratify.then_some(Stratify::Label)))
        };
        Ok(ExportOptions {
            name: self.name.trim().to_string(),
            formats,
            split,
            split_seed: self.seed,
            include: if self.accepted_only {
                Include::Accepted
            } else {
                Include::Unreviewed
            },
            filter: Some(self.filter.clone()).filter(|f| self.only_shown && !f.is_empty()),
        })
    }

    /// Count what an export with the dialog's settings would write (in the background).
    pub fn start_preview(&mut self, project: &Path) {
        let (Ok(o), None) = (self.options(), &self.preview_job) else {
            return;
        };
        let p = project.to_path_buf();
        self.preview_job = Some(background("framecull-export-preview", move || {
            let catalog = Catalog::open(&p).map_err(|e| e.to_string())?;
            manifest::select_rows(&catalog, &o)
                .map(|r| r.1)
                .map_err(|e| e.to_string())
        }));
    }

    /// Write a new version with the dialog's settings (in the background).
    pub fn start_export(&mut self, project: &Path) {
        let (Ok(o), None) = (self.options(), &self.export_job) else {
            return;
        };
        let p = project.to_path_buf();
        self.export_job = Some(background("framecull-export", move || {
            let catalog = Catalog::open(&p).map_err(|e| e.to_string())?;
            manifest::export(&catalog, &o).map_err(|e| e.to_string())
        }));
    }

    pub fn ui(&mut self, ctx: &egui::Context, filter: &Filter, commands: &mut Vec<Command>) {
        if self.filter != *filter {
            self.filter = filter.clone();
            self.preview = None;
        }
        if let Some(r) = poll(&mut self.preview_job) {
            self.preview = Some(r);
        }
        if let Some(r) = poll(&mut self.export_job) {
            self.done = Some(r);
        }
        if self.preview_job.is_some() || self.export_job.is_some() {
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
        }
        let mut open = self.open;
        egui::Window::new("Export manifest")
            .open(&mut open)
            .show(ctx, |ui| {
                egui::Grid::new("export").num_columns(2).show(ui, |ui| {
                    ui.label("name");
                    ui.text_edit_singleline(&mut self.name);
                    ui.end_row();
                    ui.label("formats");
                    ui.horizontal(|ui| {
                        ui.checkbox(&mut self.formats[0], "Parquet");
                        ui.checkbox(&mut self.formats[1], "JSON lines");
                        ui.checkbox(&mut self.formats[2], "CSV");
                    });
                    ui.end_row();
                    ui.label("splits");
                    ui.horizontal(|ui| {
                        ui.text_edit_singleline(&mut self.split);
                        ui.checkbox(&mut self.stratify, "each label its share")
                            .on_hover_text(
                                "--stratify label: every label gets its share of each split, \
                                 within one file, and files keep the previous version's split",
                            );
                    });
                    ui.end_row();
                    ui.label("split seed");
                    ui.add(egui::DragValue::new(&mut self.seed));
                    ui.end_row();
                    ui.label("include");
                    ui.horizontal(|ui| {
                        ui.radio_value(
                            &mut self.accepted_only,
                            false,
                            "accepted + clean unreviewed",
                        );
                        ui.radio_value(&mut self.accepted_only, true, "accepted only");
                    });
                    ui.end_row();
                    if !self.filter.is_empty() {
                        ui.label("filter");
                        ui.checkbox(
                            &mut self.only_shown,
                            format!("only the files shown: {}", self.filter.to_text()),
                        );
                        ui.end_row();
                    }
                });
                let options = self.options();
                if let Err(e) = &options {
                    ui.colored_label(theme::ERROR, e);
                }
                ui.horizontal(|ui| {
                    if ui
                        .add_enabled(
                            options.is_ok() && self.preview_job.is_none(),
                            egui::Button::new("Preview"),
                        )
                        .clicked()
                    {
                        commands.push(Command::PreviewExport);
                    }
                    let can_export = options.is_ok()
                        && self.preview.as_ref().is_some_and(Result::is_ok)
                        && self.export_job.is_none();
                    if ui
                        .add_enabled(can_export, egui::Button::new("Export"))
                        .clicked()
                    {
                        commands.push(Command::Export);
                    }
                    if self.preview_job.is_some() || self.export_job.is_some() {
                        ui.spinner();
                    }
                });
                match &self.preview {
                    Some(Ok(c)) => {
                        ui.label(format!(
                            "{} from {}",
                            count(c.rows, "clip"),
                            count(c.files, "file")
                        ));
                        for (split, n) in &c.by_split {
                            ui.label(format!(
                                "  {split}: {n} ({:.1}%)",
                                100.0 * *n as f64 / c.rows.max(1) as f64
                            ));
                        }
                        for (why, n) in &c.excluded {
                            ui.label(RichText::new(format!("  left out, {why}: {n}")).small());
                        }
                    }
                    Some(Err(e)) => {
                        ui.colored_label(theme::ERROR, e);
                    }
                    None => {
                        ui.label(
                            RichText::new(
                                "Preview shows the counts per split before anything is written.",
                            )
                            .small(),
                        );
                    }
                }
                match &self.done {
                    Some(Ok(m)) => {
                        ui.colored_label(
                            theme::ACCENT,
                            format!(
                                "wrote {} v{:04}: {}",
                                m.name,
                                m.version,
                                count(m.counts.rows, "clip")
                            ),
                        );
                    }
                    Some(Err(e)) => {
                        ui.colored_label(theme::ERROR, e);
                    }
                    None => {}
                }
            });
        self.open = open;
    }
}

/// A diff between two versions of one manifest: name, older and newer version.
type VersionDiff = (String, u32, u32, Diff);

#[derive(Default)]
pub struct History {
    pub open: bool,
    versions: Option<Result<Vec<VersionMeta>, String>>,
    diff: Option<Result<VersionDiff, String>>,
    versions_job: Background<Vec<VersionMeta>>,
    diff_job: Background<VersionDiff>,
}

impl History {
    pub fn refresh(&mut self, project: &Path) {
        let p = project.to_path_buf();
        self.versions_job = Some(background("framecull-manifests", move || {
            let mut all = Vec::new();
            for name in manifest::names(&p) {
                all.extend(manifest::versions(&p, &name).map_err(|e| e.to_string())?);
            }
            Ok(all)
        }));
    }

    /// Read two versions of a manifest and diff them (in the background).
    pub fn start_diff(&mut self, project: &Path, name: String, from: u32, to: u32) {
        let p = project.to_path_buf();
        self.diff_job = Some(background("framecull-diff", move || {
            let a = manifest::read_version(&p, &name, from).map_err(|e| e.to_string())?;
            let b = manifest::read_version(&p, &name, to).map_err(|e| e.to_string())?;
            Ok((name, from, to, manifest::diff(&a, &b)))
        }));
    }

    pub fn ui(&mut self, ctx: &egui::Context, commands: &mut Vec<Command>) {
        if let Some(r) = poll(&mut self.versions_job) {
            self.versions = Some(r);
        }
        if let Some(r) = poll(&mut self.diff_job) {
            self.diff = Some(r);
        }
        if self.versions_job.is_some() || self.diff_job.is_some() {
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
        }
        let mut open = self.open;
        egui::Window::new("Manifests")
            .open(&mut open)
            .default_width(520.0)
            .show(ctx, |ui| {
                if ui.button("Refresh").clicked() {
                    commands.push(Command::ShowManifests);
                }
                match &self.versions {
                    Some(Ok(versions)) if versions.is_empty() => {
                        ui.label("No manifest yet: use Export.");
                    }
                    Some(Ok(versions)) => {
                        egui::Grid::new("versions").striped(true).show(ui, |ui| {
                            for m in versions {
                                ui.label(format!("{} v{:04}", m.name, m.version));
                                ui.label(m.parent.map_or("-".into(), |p| format!("from v{p:04}")));
                                ui.label(count(m.counts.rows, "clip"));
                                ui.label(format!("{:?}", m.counts.by_split));
                                if let Some(parent) = m.parent
                                    && ui.button("diff with parent").clicked()
                                {
                                    commands.push(Command::DiffManifests {
                                        name: m.name.clone(),
                                        from: parent,
                                        to: m.version,
                                    });
                                }
                                ui.end_row();
                            }
                        });
                    }
                    Some(Err(e)) => {
                        ui.colored_label(theme::ERROR, e);
                    }
                    None => {
                        ui.spinner();
                    }
                }
                if let Some(d) = &self.diff {
                    ui.separator();
                    match d {
                        Ok((name, a, b, d)) => {
                            ui.label(RichText::new(format!("{name} v{a:04} -> v{b:04}")).strong());
                            ui.label(format!(
                                "{} added, {} removed, {} changed, {} moved split",
                                d.added.len(),
                                d.removed.len(),
                                d.changed.len(),
                                d.split_moves.len()
                            ));
                            egui::ScrollArea::vertical()
                                .max_height(200.0)
                                .show(ui, |ui| {
                                    for id in &d.added {
                                        ui.label(format!("+ {id}"));
                                    }
                                    for id in &d.removed {
                                        ui.label(format!("- {id}"));
                                    }
                                    for (id, fields) in &d.changed {
                                        ui.label(format!("~ {id} ({})", fields.join(", ")));
                                    }
                                    for (id, from, to) in &d.split_moves {
                                        ui.label(format!(
                                            "> {id}: {} -> {}",
                                            from.as_deref().unwrap_or("-"),
                                            to.as_deref().unwrap_or("-")
                                        ));
                                    }
                                });
                        }
                        Err(e) => {
                            ui.colored_label(theme::ERROR, e);
                        }
                    }
                }
            });
        self.open = open;
    }
}
