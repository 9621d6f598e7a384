//! The `framecull` command line: headless use of everything, for people and pipelines.
//! Data goes to stdout; progress and logs to stderr.

mod analyze;
mod demo;
mod dups;
mod export;
mod flags;
mod labels;
mod list;
mod load_bench;
mod manifests;
mod merge;
mod progress;
mod review;
mod scan;
mod stats;
mod stop;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::catalog::{Catalog, PROJECT_DIR_NAME, Project};
use crate::output::init_logging;
pub(crate) use crate::output::write_stdout;

pub use crate::VERSION;

/// Exit status: 0 clean, 1 finished with per-file problems, 2 usage or fatal error, 3
/// transient error (retry: [`crate::transient`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    Problems,
}

#[derive(Parser, Debug)]
#[command(
    name = "framecull",
    version = VERSION,
    about = "See, filter, trim and ship image and video datasets before training",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    /// Log filter for stderr (e.g. `info`, `framecull=debug`); also FRAMECULL_LOG.
    #[arg(long, global = true)]
    log: Option<String>,
    /// Without a command: open the window on this dataset (or project) folder, or on a URL
    /// (s3://bucket/prefix, gs://, az://, https://).
    dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Scan a dataset folder into its catalog (incremental: unchanged files are skipped).
    Scan(scan::Args),
    /// Merge finished shard projects (`scan --shard I/N`) into one project, then derive
    /// duplicate groups, statistics and flags over the whole dataset.
    Merge(merge::Args),
    /// Deep analysis of a scanned project: motion, cuts, integrity, quality, duplicates, flags.
    Analyze(analyze::Args),
    /// Flags grouped by code, each with its reason.
    Flags(flags::Args),
    /// Accept, reject or reset files (by path or by flag code).
    Review(review::ReviewArgs),
    /// Duplicate groups and the member to keep; `--keep-best` rejects the others.
    Dups(dups::Args),
    /// Add or remove a tag on files.
    Tag(review::TagArgs),
    /// Set or remove a file's note.
    Note(review::NoteArgs),
    /// Clips: add, list, rm, split-at-cuts.
    Clips(review::ClipsArgs),
    /// Labels: import (CSV, JSON lines, Kinetics layout, class folders), export, set.
    Labels(labels::Args),
    /// Undo the last review operation.
    Undo(review::UndoArgs),
    /// Redo the last undone operation.
    Redo(review::UndoArgs),
    /// Crash-safety test support: a burst of journaled edits, each acknowledged on stdout.
    #[command(hide = true)]
    EditBurst(review::BurstArgs),
    /// A worker process: JSON requests on stdin, answers on stdout (`scan`: probes and
    /// analyses; `loader`: the loader's windows; `pictures`: thumbnails and the player's
    /// pictures; the last two in the memory shared as descriptor 3).
    #[command(hide = true)]
    Worker {
        /// The service to run.
        service: String,
    },
    /// Export a new version of a manifest (Parquet, JSON lines, CSV).
    Export(export::Args),
    /// List manifests and their versions.
    Manifests(manifests::ListArgs),
    /// Clips added, removed, changed and moved between two versions of a manifest.
    Diff(manifests::DiffArgs),
    /// List catalogued files.
    List(list::Args),
    /// Counts, sizes and distributions of the catalogued files.
    Stats(stats::Args),
    /// Generate a small demo dataset and scan it.
    Demo(demo::Args),
    /// Run the data loader on a manifest: stage timings, frames/s, memory, checksum.
    LoadBench(load_bench::Args),
    /// Shell completions on stdout: `framecull completions bash > /etc/bash_completion.d/framecull`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The manual page (roff) on stdout: `framecull man > framecull.1`.
    Man,
}

/// Where the project (catalog) lives: `--project`, else `.framecull` in the dataset.
#[derive(clap::Args, Debug, Clone)]
pub struct ProjectArg {
    /// Project folder (default: `.framecull` inside the dataset, searched upwards from the
    /// current folder for commands without a dataset argument).
    #[arg(long, value_name = "DIR", global = true)]
    project: Option<PathBuf>,
}

impl ProjectArg {
    /// The project named by `--project`, else the one the current folder is in (the rule
    /// the window follows too).
    fn locate(&self) -> anyhow::Result<Project> {
        match &self.project {
            Some(p) => Ok(Project::at(p)),
            None => Project::locate(&std::env::current_dir()?).ok_or_else(|| {
                anyhow::anyhow!(
                    "no {PROJECT_DIR_NAME} project in this folder or above; pass --project DIR or run `framecull scan DIR`"
                )
            }),
        }
    }

    /// Open an existing project.
    fn open(&self) -> anyhow::Result<Catalog> {
        Ok(self.locate()?.open()?)
    }
}

/// The command line, with `--version` also naming the FFmpeg it runs with (`-V` stays short).
fn parse() -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let long_version = format!("{VERSION}\n{}", crate::media::ffmpeg_report());
    // Built once per process, for clap's 'static text.
    let command = Cli::command().long_version(&*Box::leak(long_version.into_boxed_str()));
    Cli::from_arg_matches(&command.try_get_matches()?)
}

pub fn main() -> ExitCode {
    crate::media::ignore_file_size_signal();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_logging(cli.log.as_deref());
    let Some(command) = cli.command else {
        if let Some(dir) = cli
            .dir
            .as_ref()
            .filter(|d| !d.exists() && !crate::storage::Root::is_url(d))
        {
            eprintln!(
                "error: {} is neither a folder nor a framecull command; see `framecull --help`",
                dir.display()
            );
            return ExitCode::from(2);
        }
        return match open_window(cli.dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {}", crate::output::error_text(&e));
                ExitCode::from(2)
            }
        };
    };
    if matches!(
        command,
        Command::Scan(_)
            | Command::Analyze(_)
            | Command::Merge(_)
            | Command::Export(_)
            | Command::LoadBench(_)
    ) {
        // Before the command opens anything: a scheduler's SIGTERM may come at any moment.
        stop::Stop::on_signals();
    }
    let result = match command {
        Command::Scan(args) => scan::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Flags(args) => flags::run(args),
        Command::Review(args) => review::review(args),
        Command::Dups(args) => dups::run(args),
        Command::Tag(args) => review::tag(args),
        Command::Clips(args) => review::clips(args),
        Command::Note(args) => review::note(args),
        Command::Labels(args) => labels::run(args),
        Command::Undo(args) => review::undo(args, false),
        Command::Redo(args) => review::undo(args, true),
        Command::EditBurst(args) => review::edit_burst(args),
        Command::Worker { service } => {
            stop::leave_to_the_parent();
            worker(&service)
        }
        Command::Export(args) => export::run(args),
        Command::Manifests(args) => manifests::list(args),
        Command::Diff(args) => manifests::diff(args),
        Command::List(args) => list::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Demo(args) => demo::run(args),
        Command::LoadBench(args) => load_bench::run(args),
        Command::Completions { shell } => completions(shell),
        Command::Man => man_page(),
    };
    match result {
        Ok(Outcome::Clean) => ExitCode::SUCCESS,
        Ok(Outcome::Problems) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {}", crate::output::error_text(&e));
            ExitCode::from(exit_status_of(&e))
        }
    }
}

/// 3 for an error worth retrying as is (a database busy, a storage or network error), else 2.
/// An error and its causes on one line, each cause once: errors that already name their
/// source in their text (`cannot open dataset folder X: No such file ...`) are not followed by
/// it again.
fn exit_status_of(e: &anyhow::Error) -> u8 {
    if e.chain().any(crate::transient::is_transient) {
        3
    } else {
        2
    }
}

/// Completions for `shell` on stdout.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<Outcome> {
    let mut out = Vec::new();
    clap_complete::generate(
        shell,
        &mut <Cli as clap::CommandFactory>::command(),
        "framecull",
        &mut out,
    );
    write_stdout(&String::from_utf8_lossy(&out))?;
    Ok(Outcome::Clean)
}

/// The manual page (name, synopsis, options, the commands) as roff on stdout.
fn man_page() -> anyhow::Result<Outcome> {
    let mut out = Vec::new();
    clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out)?;
    write_stdout(&String::from_utf8_lossy(&out))?;
    Ok(Outcome::Clean)
}

#[cfg(feature = "gui")]
fn open_window(dir: Option<PathBuf>) -> anyhow::Result<()> {
    crate::gui::run(dir)
}

#[cfg(not(feature = "gui"))]
fn open_window(_dir: Option<PathBuf>) -> anyhow::Result<()> {
    anyhow::bail!(
        "this framecull was built without the window (feature `gui`); see `framecull --help`"
    )
}

/// Peak resident memory of this process (bytes), from /proc where available.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A worker service's process: serve requests until stdin closes.
type Serve = fn() -> std::io::Result<()>;

/// The worker services this binary runs (`framecull worker NAME`), each under the name its
/// parent starts it by.
const SERVICES: [(&str, Serve); 3] = [
    (
        crate::media::pictures::SERVICE,
        crate::media::pictures::serve,
    ),
    (crate::scan::service::SERVICE, crate::scan::service::serve),
    (
        crate::loader::isolate::SERVICE,
        crate::loader::isolate::serve,
    ),
];

/// Run the worker service `name` until its parent closes its stdin.
fn worker(name: &str) -> anyhow::Result<Outcome> {
    let Some((_, serve)) = SERVICES.iter().find(|(n, _)| *n == name) else {
        let known: Vec<&str> = SERVICES.iter().map(|(n, _)| *n).collect();
        anyhow::bail!(
            "no worker service {name:?} (this build runs {})",
            known.join(", ")
        );
    };
    serve()?;
    Ok(Outcome::Clean)
}
