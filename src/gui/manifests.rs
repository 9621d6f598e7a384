//! Export dialog (preview of counts per split, then a new version) and the manifest history
//! with a diff of two versions. Their buttons push commands; the work they start (catalog
//! reads, the export) runs as background jobs the dialogs poll.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, anyhow};
use eframe::egui::{self, RichText};

use super::command::{Command, DialogCommand};
use super::jobs::{Job, Polled, Reporter, take_finished};
use super::theme;
use crate::analysis::filter::Filter;
use crate::catalog::Catalog;
use crate::loader::materialize::{MaterializeProgress, Materialized};
use crate::manifest::webdataset::ShardProgress;
use crate::manifest::{
    self, Counts, Diff, ExportOptions, Format, Include, SplitSpec, Stratify, VersionMeta,
};
use crate::model::count;
use crate::output::error_text;

mod export_form;

type Background<T> = Option<Job<anyhow::Result<T>>>;

/// The formats the dialog offers, with their names there and what each is for.
const FORMATS: [(Format, &str, &str); 8] = [
    (
        Format::Parquet,
        "Parquet",
        "the rows, for framecull's loader, pandas, Polars, Spark",
    ),
    (
        Format::Jsonl,
        "JSON lines",
        "the rows, one JSON object a line",
    ),
    (Format::Csv, "CSV", "the rows, for spreadsheets"),
    (
        Format::Dali,
        "DALI lists",
        "--format dali: DALI's video reader file_list per split, in frames",
    ),
    (
        Format::FrameMaps,
        "frame maps",
        "--format frame-maps: torchcodec's frame map of each video, to seek without a scan",
    ),
    (
        Format::Folders,
        "class folders",
        "--format folders: the clip files as SPLIT/LABEL/CLIP.EXT (needs clip files)",
    ),
    (
        Format::Hf,
        "Hugging Face",
        "--format hf: the clip files as imagefolder and videofolder folders with \
         metadata.jsonl (needs clip files)",
    ),
    (
        Format::Webdataset,
        "WebDataset",
        "--format webdataset: the clip files in tar shards of 1 GiB per split, each with its \
         row as KEY.json (needs clip files)",
    ),
];

fn background<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> Job<anyhow::Result<T>> {
    Job::run(name, work)
}

fn poll<T: Send + 'static>(slot: &mut Background<T>) -> Option<anyhow::Result<T>> {
    take_finished(slot, || Err(anyhow!("the background job stopped")))
}

pub struct ExportDialog {
    pub open: bool,
    name: String,
    /// The formats ticked, in the order of [`FORMATS`].
    formats: [bool; FORMATS.len()],
    split: String,
    /// Give each label its share of every split (`--stratify label`).
    stratify: bool,
    seed: u64,
    accepted_only: bool,
    /// Export only the files the window's filter shows.
    only_shown: bool,
    /// The window's filter, as of the last frame.
    filter: Filter,
    /// Also write each clip as a file of its own (`--materialize`), into `clip_dir` (empty:
    /// the project's `clip-files/NAME`).
    clip_files: bool,
    clip_dir: String,
    preview: Option<anyhow::Result<Counts>>,
    done: Option<anyhow::Result<Exported>>,
    preview_job: Background<Counts>,
    export_job: Option<Job<anyhow::Result<Exported>, ExportProgress>>,
    /// The clip files' progress, as the export job last reported it.
    clip_progress: Option<ExportProgress>,
}

/// A version written, with its clip files where asked for.
type Exported = (VersionMeta, Option<Materialized>);

impl Default for ExportDialog {
    fn default() -> Self {
        ExportDialog {
            open: false,
            name: "train".into(),
            formats: [true, false, false, false, false, false, false, false],
            split: "train=0.8,val=0.1,test=0.1".into(),
            stratify: false,
            seed: 0,
            accepted_only: false,
            only_shown: true,
            filter: Filter::default(),
            clip_files: false,
            clip_dir: String::new(),
            preview: None,
            done: None,
            preview_job: None,
            export_job: None,
            clip_progress: None,
        }
    }
}

impl ExportDialog {
    fn options(&self) -> anyhow::Result<ExportOptions> {
        let formats: Vec<Format> = FORMATS
            .iter()
            .zip(self.formats)
            .filter_map(|(f, on)| on.then_some(f.0))
            .collect();
        if !self.clip_files
            && let Some((_, name, _)) = FORMATS
                .iter()
                .zip(self.formats)
                .find(|(f, on)| {
                    *on && matches!(f.0, Format::Folders | Format::Hf | Format::Webdataset)
                })
                .map(|(f, _)| f)
        {
            anyhow::bail!("{name}: made of the clip files; tick \"clip files\" too");
        }
        let split = if self.split.trim().is_empty() {
            None
        } else {
            let spec = SplitSpec::parse(&self.split)?;
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
            shard_size: None,
        })
    }

    /// Count what an export with the dialog's settings would write (in the background).
    pub fn start_preview(&mut self, project: &Path) {
        let (Ok(o), None) = (self.options(), &self.preview_job) else {
            return;
        };
        let p = project.to_path_buf();
        self.preview_job = Some(background("framecull-export-preview", move || {
            let catalog = Catalog::open(&p).context("cannot open the catalog")?;
            let (_, counts) =
                manifest::select_rows(&catalog, &o).context("cannot select the rows")?;
            Ok(counts)
        }));
    }

    /// Write a new version with the dialog's settings (in the background), its clip files
    /// first where asked for (as `export --materialize`: progress reported, stopped by
    /// Cancel with the files written kept and no version).
    pub fn start_export(&mut self, project: &Path) {
        let (Ok(o), None) = (self.options(), &self.export_job) else {
            return;
        };
        let p = project.to_path_buf();
        let clip_dir = self.clip_files.then(|| match self.clip_dir.trim() {
            "" => p.join("clip-files").join(&o.name),
            dir => std::path::PathBuf::from(dir),
        });
        self.clip_progress = None;
        self.export_job = Some(Job::spawn(
            "framecull-export",
            move |r: &Reporter<_, ExportProgress>| {
                export_version(&p, &o, clip_dir.as_deref(), r)
                    .with_context(|| format!("the export of {} stopped", o.name))
            },
        ));
    }

    /// Stop a running export (its clip files: between clips).
    pub fn cancel_export(&self) {
        if let Some(job) = &self.export_job {
            job.cancel();
        }
    }

    /// Take what the export job reported: progress, then its result once it is done.
    fn poll_export(&mut self) {
        let Some(job) = &mut self.export_job else {
            return;
        };
        let progress = &mut self.clip_progress;
        match job.poll_with(|p| *progress = Some(p)) {
            Polled::Running => {}
            Polled::Done(r) => {
                self.done = Some(r);
                self.export_job = None;
            }
            Polled::Lost => {
                self.done = Some(Err(anyhow!("the background job stopped")));
                self.export_job = None;
            }
        }
    }

    pub fn ui(&mut self, ctx: &egui::Context, filter: &Filter, commands: &mut Vec<Command>) {
        if self.filter != *filter {
            self.filter = filter.clone();
            self.preview = None;
        }
        if let Some(r) = poll(&mut self.preview_job) {
            self.preview = Some(r);
        }
        self.poll_export();
        if self.preview_job.is_some() || self.export_job.is_some() {
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
        }
        let mut open = self.open;
        egui::Window::new("Export manifest")
            .open(&mut open)
            .show(ctx, |ui| {
                self.settings_ui(ui);
                let options = self.options();
                if let Err(e) = &options {
                    ui.colored_label(theme::ERROR, error_text(e));
                }
                self.buttons_ui(ui, options.is_ok(), commands);
                if let (Some(p), Some(_)) = (&self.clip_progress, &self.export_job) {
                    ui.add(egui::ProgressBar::new(p.fraction()).text(p.text()));
                }
                self.preview_ui(ui);
                self.done_ui(ui);
            });
        self.open = open;
    }
}

/// Write a version of `options` in `project`, with its clip files in `clip_dir` where given,
/// reporting their progress to `r` and stopping when it is cancelled.
fn export_version(
    project: &Path,
    options: &ExportOptions,
    clip_dir: Option<&Path>,
    r: &Reporter<anyhow::Result<Exported>, ExportProgress>,
) -> anyhow::Result<Exported> {
    let catalog = Catalog::open(project)?;
    let stop = r.cancel_flag();
    let Some(dir) = clip_dir else {
        return Ok((manifest::export_until(&catalog, options, stop)?, None));
    };
    let shards = ShardProgress::default();
    let root = crate::storage::Root::of_recorded(&catalog.dataset_root()?.unwrap_or_default())?;
    let jobs = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut materialized = None;
    let mut write = |rows: &mut [manifest::ManifestRow],
                     references: &[crate::model::SeekReference]| {
        let done = crate::loader::materialize::materialize(
            &root,
            rows,
            references,
            dir,
            jobs,
            stop,
            &mut |p| r.report(ExportProgress::Clips(p), false),
        )?;
        let files = done.files.clone();
        materialized = Some(done);
        Ok(files)
    };
    let finished = AtomicBool::new(false);
    let exported = std::thread::scope(|scope| {
        if options.formats.contains(&manifest::Format::Webdataset) {
            scope.spawn(|| report_shards(&shards, &finished, r));
        }
        let exported = manifest::export_watched(&catalog, options, stop, Some(&mut write), &shards);
        finished.store(true, Ordering::SeqCst);
        exported
    });
    let meta = exported.map_err(|e| match e {
        manifest::ManifestError::Stopped => anyhow::anyhow!(
            "cancelled: the clip files and shards written are kept, no version was written; \
             export again to write the rest"
        ),
        e => e.into(),
    })?;
    Ok((meta, materialized))
}

/// Report the shards' progress to `r` every 200 ms, from when their writing starts until
/// `finished` is set.
fn report_shards(
    shards: &ShardProgress,
    finished: &AtomicBool,
    r: &Reporter<anyhow::Result<Exported>, ExportProgress>,
) {
    let started = std::time::Instant::now();
    let mut first = None;
    while !finished.load(Ordering::SeqCst) {
        let bytes = shards.bytes.load(Ordering::Relaxed);
        if bytes > 0 {
            let since = *first.get_or_insert_with(|| started.elapsed());
            r.report(
                ExportProgress::Shards {
                    samples_done: shards.samples_done.load(Ordering::Relaxed),
                    samples: shards.samples.load(Ordering::Relaxed),
                    bytes_done: shards.bytes_done.load(Ordering::Relaxed),
                    bytes,
                    secs: (started.elapsed() - since).as_secs_f64(),
                },
                false,
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// What an export reports as it goes: its clip files, then its WebDataset shards.
#[derive(Debug, Clone, Copy)]
pub enum ExportProgress {
    Clips(MaterializeProgress),
    Shards {
        samples_done: u64,
        samples: u64,
        bytes_done: u64,
        bytes: u64,
        secs: f64,
    },
}

impl ExportProgress {
    /// The share done.
    fn fraction(&self) -> f32 {
        match *self {
            ExportProgress::Clips(p) => p.done as f32 / p.total.max(1) as f32,
            ExportProgress::Shards {
                bytes_done, bytes, ..
            } => bytes_done as f32 / bytes.max(1) as f32,
        }
    }

    /// Done of all, bytes, rate and time left.
    fn text(&self) -> String {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let eta = |done: u64, total: u64, secs: f64| {
            if done == 0 {
                "ETA ...".to_string()
            } else {
                let rate = done as f64 / secs.max(1e-3);
                format!("ETA {:.0} s", total.saturating_sub(done) as f64 / rate)
            }
        };
        match *self {
            ExportProgress::Clips(p) => format!(
                "clip files {}/{}, {:.1} MiB, {:.1} clips/s, {}",
                p.done,
                p.total,
                mib(p.bytes),
                p.done as f64 / p.secs.max(1e-3),
                eta(p.done, p.total, p.secs)
            ),
            ExportProgress::Shards {
                samples_done,
                samples,
                bytes_done,
                bytes,
                secs,
            } => format!(
                "shards: {samples_done}/{samples} samples, {:.1} of {:.1} MiB, {:.1} MiB/s, {}",
                mib(bytes_done),
                mib(bytes),
                mib(bytes_done) / secs.max(1e-3),
                eta(bytes_done, bytes, secs)
            ),
        }
    }
}

/// A diff between two versions of one manifest: name, older and newer version.
type VersionDiff = (String, u32, u32, Diff);

#[derive(Default)]
pub struct History {
    pub open: bool,
    versions: Option<anyhow::Result<Vec<VersionMeta>>>,
    diff: Option<anyhow::Result<VersionDiff>>,
    versions_job: Background<Vec<VersionMeta>>,
    diff_job: Background<VersionDiff>,
}

impl History {
    pub fn refresh(&mut self, project: &Path) {
        let p = project.to_path_buf();
        self.versions_job = Some(background("framecull-manifests", move || {
            let mut all = Vec::new();
            for name in manifest::names(&p) {
                all.extend(manifest::versions(&p, &name)?);
            }
            Ok(all)
        }));
    }

    /// Read two versions of a manifest and diff them (in the background).
    pub fn start_diff(&mut self, project: &Path, name: String, from: u32, to: u32) {
        let p = project.to_path_buf();
        self.diff_job = Some(background("framecull-diff", move || {
            let a = manifest::read_version(&p, &name, from)?;
            let b = manifest::read_version(&p, &name, to)?;
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
                    commands.push(Command::Dialog(DialogCommand::ShowManifests));
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
                                    commands.push(Command::Dialog(DialogCommand::DiffManifests {
                                        name: m.name.clone(),
                                        from: parent,
                                        to: m.version,
                                    }));
                                }
                                ui.end_row();
                            }
                        });
                    }
                    Some(Err(e)) => {
                        ui.colored_label(theme::ERROR, error_text(e));
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
                            ui.colored_label(theme::ERROR, error_text(e));
                        }
                    }
                }
            });
        self.open = open;
    }
}
