//! `framecull labels`: import labels from a file or from class folders, export them, set
//! them on files. Each change is one journaled operation (`framecull undo` takes it back).

use std::path::PathBuf;

use super::{Outcome, ProjectArg};
use crate::model::{Edit, count, label_of};
use crate::scan::labels::{
    ImportOptions, ImportReport, LabelSource, RowProblem, TimelineError, frame_timeline, import,
};
use crate::storage::Root;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    project: ProjectArg,
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Import labels: CSV or JSON lines of `path[, start, end], label` (start and end in
    /// seconds on the stream's clock, or frames written `f120`), a CSV with a header and a
    /// --path-template (the Kinetics layout), or --from-folders. Rows that match no file, or
    /// several, are reported and not applied.
    Import {
        /// The label file (CSV, or JSON lines: `.jsonl` or lines starting with `{`).
        #[arg(
            required_unless_present = "from_folders",
            conflicts_with = "from_folders"
        )]
        file: Option<PathBuf>,
        /// Each file's first folder under the dataset root is its label (ImageFolder,
        /// UCF-101).
        #[arg(long)]
        from_folders: bool,
        /// Make each row's path from its columns, e.g. for Kinetics
        /// `{label}/{youtube_id}_{time_start:06}_{time_end:06}.mp4`.
        #[arg(long, value_name = "TEMPLATE")]
        path_template: Option<String>,
        /// Add the labels to the files' tags (a CSV cell may hold several, split at `;`).
        #[arg(long)]
        as_tags: bool,
        /// Report what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Write the labels as CSV (`path,start,end,label`), the form `import` reads back.
    Export {
        /// Write to this file (atomically) instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Set the label of files; an empty LABEL removes it.
    Set {
        label: String,
        #[arg(required = true)]
        paths: Vec<String>,
    },
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    match args.action {
        Action::Import {
            file,
            from_folders,
            path_template,
            as_tags,
            dry_run,
            json,
        } => {
            anyhow::ensure!(
                !(from_folders && path_template.is_some()),
                "--path-template names the files of a label file; --from-folders has none"
            );
            let options = ImportOptions {
                path_template,
                as_tags,
                dry_run,
            };
            let source = match &file {
                Some(f) => LabelSource::File(f),
                None => LabelSource::Folders,
            };
            let recorded = catalog.dataset_root()?;
            let root = recorded.as_deref().map(Root::of_recorded).transpose()?;
            let mut timeline = |item: &crate::model::Item| match &root {
                Some(root) => frame_timeline(root, item),
                None => Err(TimelineError::NoRoot),
            };
            let report = import(&mut catalog, source, &options, &mut timeline)?;
            if json {
                super::write_stdout(&serde_json::to_string_pretty(&report)?)?;
            }
            eprint!("{}", render(&report));
            Ok(if report.has_problems() {
                Outcome::Problems
            } else {
                Outcome::Clean
            })
        }
        Action::Export { output } => {
            let mut buf = Vec::new();
            let n = crate::scan::labels::export(&catalog, &mut buf)?;
            match output {
                Some(path) => crate::output::write_atomically(&path, &buf)?,
                None => super::write_stdout(String::from_utf8_lossy(&buf).trim_end())?,
            }
            eprintln!("{} written", count(n, "label row"));
            Ok(Outcome::Clean)
        }
        Action::Set { label, paths } => {
            let items = catalog.items()?;
            let reviews = catalog.all_reviews()?;
            let after = label_of(&label);
            let edits: Vec<Edit> = super::review::resolve(&catalog, &items, &paths)?
                .into_iter()
                .filter_map(|item| {
                    let before = reviews.get(&item).and_then(|r| r.label.clone());
                    (before != after).then(|| Edit::Label {
                        item,
                        before,
                        after: after.clone(),
                    })
                })
                .collect();
            let n = edits.len() as u64;
            if n > 0 {
                let op = catalog.apply(edits)?;
                eprintln!("{} changed; operation {op}", count(n, "file"));
            } else {
                eprintln!("nothing changed");
            }
            Ok(Outcome::Clean)
        }
    }
}

/// How many rows of each kind of problem the report shows.
const SHOWN: usize = 5;

/// The import report people read: counts, then the first rows of each problem.
pub fn render(r: &ImportReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} matched, {} unmatched, {} ambiguous, {} invalid",
        count(r.rows, "row"),
        r.matched,
        r.unmatched.len(),
        r.ambiguous.len(),
        r.invalid.len()
    );
    let verb = if r.dry_run { "would change" } else { "changed" };
    let _ = writeln!(
        s,
        "{verb}: {} labelled, {} labelled, {} added, {} tagged; {} unchanged",
        count(r.files_labelled, "file"),
        count(r.clips_labelled, "clip"),
        count(r.clips_added, "clip"),
        count(r.files_tagged, "file"),
        count(r.unchanged, "row"),
    );
    for (title, rows) in [
        ("unmatched", &r.unmatched),
        ("ambiguous", &r.ambiguous),
        ("invalid", &r.invalid),
    ] {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(s, "{title}:");
        for RowProblem { line, path, why } in rows.iter().take(SHOWN) {
            let at = if *line > 0 {
                format!("line {line}: ")
            } else {
                String::new()
            };
            let _ = writeln!(s, "  {at}{path}: {why}");
        }
        if rows.len() > SHOWN {
            let _ = writeln!(
                s,
                "  … and {} more (--json lists them all)",
                rows.len() - SHOWN
            );
        }
    }
    for note in &r.notes {
        let _ = writeln!(s, "note: {note}");
    }
    match (r.operation, r.dry_run) {
        (Some(op), _) => {
            let _ = writeln!(s, "operation {op} (undo: framecull undo)");
        }
        (None, true) => {
            let _ = writeln!(s, "dry run: nothing changed");
        }
        (None, false) => {}
    }
    s
}
