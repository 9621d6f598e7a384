//! Review from the command line: decisions, tags, clips, undo and redo. Every command is
//! one journaled operation (the same path the GUI takes), durable when the command returns.

use std::path::{Path, PathBuf};

use super::{Outcome, ProjectArg};
use crate::analysis::proposals::{ProposalOptions, motion_ranges, shot_ranges};
use crate::catalog::Catalog;
use crate::model::{ClipOrigin, Decision, Edit, FrameTimeline, Item, ItemId, MediaKind, count};
use crate::storage::Root;

#[derive(clap::Args, Debug)]
pub struct ReviewArgs {
    #[command(flatten)]
    project: ProjectArg,
    /// accept, reject or reset (back to unreviewed).
    #[arg(value_parser = ["accept", "reject", "reset"])]
    action: String,
    /// Files (paths as `list` shows them).
    paths: Vec<String>,
    /// Also every file carrying this flag code (e.g. `--flag decode_errors`).
    #[arg(long)]
    flag: Vec<String>,
}

pub fn review(args: ReviewArgs) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    let items = catalog.items()?;
    let mut ids = resolve(&catalog, &items, &args.paths)?;
    if !args.flag.is_empty() {
        if let Some(unknown) = args
            .flag
            .iter()
            .find(|c| crate::analysis::rules::describe(c).is_none())
        {
            anyhow::bail!(
                "{unknown}: not a flag this version of framecull sets (see framecull flags)"
            );
        }
        let flags = catalog.all_flags()?;
        ids.extend(
            items
                .iter()
                .filter(|i| {
                    flags
                        .get(&i.id)
                        .is_some_and(|fs| fs.iter().any(|f| args.flag.contains(&f.code)))
                })
                .map(|i| i.id),
        );
    }
    ids.sort_unstable();
    ids.dedup();
    anyhow::ensure!(
        !ids.is_empty() || !args.flag.is_empty(),
        "no file named (give paths or --flag)"
    );
    if ids.is_empty() {
        // Nothing flagged is nothing to do, not a failure: a pipeline that rejects what is
        // flagged goes on when nothing is.
        eprintln!(
            "note: no file has the flag {}; nothing changed",
            args.flag.join(" or ")
        );
        return Ok(Outcome::Clean);
    }
    let decision = match args.action.as_str() {
        "accept" => Decision::Accepted,
        "reject" => Decision::Rejected,
        _ => Decision::Unreviewed,
    };
    let op = catalog.set_decisions(&ids, decision)?;
    eprintln!(
        "{} {}; operation {op} (undo: framecull undo)",
        count(ids.len() as u64, "file"),
        decision.as_str()
    );
    Ok(Outcome::Clean)
}

#[derive(clap::Args, Debug)]
pub struct TagArgs {
    #[command(flatten)]
    project: ProjectArg,
    #[arg(value_parser = ["add", "rm"])]
    action: String,
    tag: String,
    #[arg(required = true)]
    paths: Vec<String>,
}

pub fn tag(args: TagArgs) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    let items = catalog.items()?;
    let reviews = catalog.all_reviews()?;
    let mut edits = Vec::new();
    for id in resolve(&catalog, &items, &args.paths)? {
        let before = reviews.get(&id).map(|r| r.tags.clone()).unwrap_or_default();
        let mut after: Vec<String> = before.iter().filter(|t| **t != args.tag).cloned().collect();
        if args.action == "add" {
            after.push(args.tag.clone());
        }
        if after != before {
            edits.push(Edit::Tags {
                item: id,
                before,
                after,
            });
        }
    }
    let n = edits.len();
    if n > 0 {
        catalog.apply(edits)?;
    }
    eprintln!("{} changed", count(n as u64, "file"));
    Ok(Outcome::Clean)
}

#[derive(clap::Args, Debug)]
pub struct NoteArgs {
    #[command(flatten)]
    project: ProjectArg,
    path: String,
    /// The note; empty or absent removes it.
    text: Option<String>,
}

pub fn note(args: NoteArgs) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    let items = catalog.items()?;
    let id = resolve(&catalog, &items, std::slice::from_ref(&args.path))?[0];
    let op = catalog.set_note(id, args.text)?;
    eprintln!("note saved; operation {op}");
    Ok(Outcome::Clean)
}

#[derive(clap::Args, Debug)]
pub struct ClipsArgs {
    #[command(flatten)]
    project: ProjectArg,
    #[command(subcommand)]
    action: ClipsAction,
}

#[derive(clap::Subcommand, Debug)]
enum ClipsAction {
    /// Add a clip. START and END are seconds on the stream's clock (as `list` shows cut
    /// times) or frame indices written `f120`; the clip is [START, END), snapped to frames.
    Add {
        path: String,
        #[arg(long, allow_hyphen_values = true)]
        start: String,
        #[arg(long, allow_hyphen_values = true)]
        end: String,
        #[arg(long)]
        label: Option<String>,
    },
    /// List clips (of one file, or all).
    List {
        path: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove clips by id.
    Rm {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// One clip per shot, from the detected cuts (videos given, or every analysed video).
    SplitAtCuts { paths: Vec<String> },
    /// Clips where something moves: motion onsets with a lead-in, within a length range.
    Propose {
        paths: Vec<String>,
        /// Motion (docs/ANALYSIS.md units) from which a 0.5 s bucket counts as moving.
        #[arg(long, default_value_t = ProposalOptions::default().threshold)]
        threshold: f32,
        /// Seconds kept before each onset and after each end.
        #[arg(long, default_value_t = ProposalOptions::default().lead_in_secs)]
        lead_in: f64,
        /// Shortest clip, seconds.
        #[arg(long, default_value_t = ProposalOptions::default().min_secs)]
        min: f64,
        /// Longest clip, seconds (longer spans are cut into pieces).
        #[arg(long, default_value_t = ProposalOptions::default().max_secs)]
        max: f64,
    },
}

pub fn clips(args: ClipsArgs) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    let recorded = catalog
        .dataset_root()?
        .ok_or_else(|| anyhow::anyhow!("the project records no dataset folder"))?;
    // A folder or a bucket: clip boundaries are read from the file's or the object's packets.
    let root = Root::of_recorded(&recorded)?;
    let items = catalog.items()?;
    match args.action {
        ClipsAction::Add {
            path,
            start,
            end,
            label,
        } => add_clip(&mut catalog, &root, &items, path, &start, &end, label)?,
        ClipsAction::List { path, json } => list_clips(&catalog, &items, path, json)?,
        ClipsAction::Rm { ids } => remove_clips(&mut catalog, &ids)?,
        ClipsAction::SplitAtCuts { paths } => split_at_cuts(&mut catalog, &root, &items, &paths)?,
        ClipsAction::Propose {
            paths,
            threshold,
            lead_in,
            min,
            max,
        } => {
            let options = ProposalOptions {
                threshold,
                lead_in_secs: lead_in,
                min_secs: min,
                max_secs: max,
            };
            propose_clips(&mut catalog, &root, &items, &paths, &options)?
        }
    }
    Ok(Outcome::Clean)
}

/// Add a clip of the video `path` from `start` to `end` (seconds, or frames written `f120`),
/// snapped to its frames.
fn add_clip(
    catalog: &mut Catalog,
    root: &Root,
    items: &[Item],
    path: String,
    start: &str,
    end: &str,
    label: Option<String>,
) -> anyhow::Result<()> {
    let id = resolve(catalog, items, &[path])?[0];
    let item = items
        .iter()
        .find(|i| i.id == id)
        .ok_or_else(|| anyhow::anyhow!("no such file"))?;
    anyhow::ensure!(
        item.kind == MediaKind::Video,
        "{} is not a video",
        item.path
    );
    let frames = read_frames(root, item)?;
    let s = frames.index_at(start, false)?;
    let e = frames.index_at(end, true)?;
    anyhow::ensure!(
        e > s,
        "the clip is empty: end {end} is not after start {start}"
    );
    let clip = frames.clip(id, s, e, label, ClipOrigin::Manual);
    let op = catalog.apply(vec![Edit::AddClip { clip }])?;
    eprintln!("clip added: frames {s}..{e}; operation {op}");
    Ok(())
}

/// List the clips of the file `path`, or of every file, on stdout (as JSON with `json`).
fn list_clips(
    catalog: &Catalog,
    items: &[Item],
    path: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    let only = path.map(|p| resolve(catalog, items, &[p])).transpose()?;
    let all = catalog.all_clips()?;
    let mut rows = Vec::new();
    for item in items {
        if only.as_ref().is_some_and(|o| !o.contains(&item.id)) {
            continue;
        }
        for c in all.get(&item.id).into_iter().flatten() {
            rows.push((item.path.clone(), c.clone()));
        }
    }
    let text = if json {
        serde_json::to_string_pretty(
            &rows
                .iter()
                .map(|(p, c)| serde_json::json!({"path": p, "clip": c}))
                .collect::<Vec<_>>(),
        )?
    } else {
        rows.iter()
            .map(|(p, c)| {
                format!(
                    "{:>6}  {}  frames {}..{}  {:.3}-{:.3} s  {}  {}",
                    c.id,
                    p,
                    c.start_frame.unwrap_or(-1),
                    c.end_frame.unwrap_or(-1),
                    c.start_secs,
                    c.end_secs,
                    c.label.as_deref().unwrap_or("-"),
                    c.origin
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    super::write_stdout(&text)?;
    Ok(())
}

/// Remove the clips with these `ids`, all or none.
fn remove_clips(catalog: &mut Catalog, ids: &[i64]) -> anyhow::Result<()> {
    let all = catalog.all_clips()?;
    let edits: Vec<Edit> = all
        .values()
        .flatten()
        .filter(|c| ids.contains(&c.id))
        .map(|c| Edit::RemoveClip { clip: c.clone() })
        .collect();
    anyhow::ensure!(edits.len() == ids.len(), "no clip with some of these ids");
    let op = catalog.apply(edits)?;
    let removed = count(ids.len() as u64, "clip");
    eprintln!("{removed} removed; operation {op}");
    Ok(())
}

fn split_at_cuts(
    catalog: &mut Catalog,
    root: &Root,
    items: &[Item],
    paths: &[String],
) -> anyhow::Result<()> {
    let only = (!paths.is_empty())
        .then(|| resolve(catalog, items, paths))
        .transpose()?;
    let cuts = catalog.all_cuts()?;
    let mut edits = Vec::new();
    let (mut videos, mut analysed, mut with_cuts) = (0u64, 0u64, 0u64);
    for item in items.iter().filter(|i| i.kind == MediaKind::Video) {
        if only.as_ref().is_some_and(|o| !o.contains(&item.id)) {
            continue;
        }
        videos += 1;
        let Some(item_cuts) = cuts.get(&item.id) else {
            continue;
        };
        analysed += 1;
        if item_cuts.is_empty() {
            continue;
        }
        with_cuts += 1;
        let frames = read_frames(root, item)?;
        let shots = shot_ranges(item_cuts.iter().map(|c| c.frame as usize), frames.len());
        for (s, e) in shots {
            edits.push(Edit::AddClip {
                clip: frames.clip(item.id, s, e, None, ClipOrigin::Cuts),
            });
        }
    }
    require_analysed(videos, analysed)?;
    let n = edits.len();
    if n == 0 {
        // Analysed videos without a cut are nothing to split, not a failure.
        eprintln!(
            "note: no cut in {}; no clip added",
            count(analysed, "analysed video")
        );
        return Ok(());
    }
    let op = catalog.apply(edits)?;
    eprintln!(
        "{} added at cuts in {}; operation {op}",
        count(n as u64, "clip"),
        count(with_cuts, "video")
    );
    Ok(())
}

fn propose_clips(
    catalog: &mut Catalog,
    root: &Root,
    items: &[Item],
    paths: &[String],
    options: &ProposalOptions,
) -> anyhow::Result<()> {
    let only = (!paths.is_empty())
        .then(|| resolve(catalog, items, paths))
        .transpose()?;
    let mut edits = Vec::new();
    let (mut videos, mut analysed) = (0u64, 0u64);
    for item in items.iter().filter(|i| i.kind == MediaKind::Video) {
        if only.as_ref().is_some_and(|o| !o.contains(&item.id)) {
            continue;
        }
        videos += 1;
        let Some(curves) = catalog.curves(item.id)?.filter(|c| !c.motion.is_empty()) else {
            continue;
        };
        analysed += 1;
        let frames = read_frames(root, item)?;
        for (s, e) in motion_ranges(&frames, &curves.motion, options) {
            edits.push(Edit::AddClip {
                clip: frames.clip(item.id, s, e, None, ClipOrigin::Auto),
            });
        }
    }
    require_analysed(videos, analysed)?;
    let n = edits.len();
    if n == 0 {
        eprintln!(
            "note: no motion above {1} in {0}; no clip proposed",
            count(analysed, "analysed video"),
            options.threshold
        );
        return Ok(());
    }
    let op = catalog.apply(edits)?;
    eprintln!(
        "{} proposed from motion; operation {op}",
        count(n as u64, "clip")
    );
    Ok(())
}

/// Of `videos` looked at, `analysed` have the deep pass's results: none of some is an error
/// that says what to run; analysed videos with nothing to add are not.
fn require_analysed(videos: u64, analysed: u64) -> anyhow::Result<()> {
    anyhow::ensure!(
        analysed > 0 || videos == 0,
        "no video is analysed ({} looked at; run framecull analyze first)",
        count(videos, "video")
    );
    Ok(())
}

/// A video's frame timeline, read from its packets.
fn read_frames(root: &Root, item: &Item) -> anyhow::Result<FrameTimeline> {
    Ok(crate::scan::labels::frame_timeline(root, item)?)
}

/// Item ids of path arguments, read the way git reads them: relative to the current folder
/// when it is inside the dataset (`cd street && framecull review accept cam01.mp4`), absolute
/// inside the dataset, or relative to the dataset root as `list` shows them. An absolute path
/// outside the dataset is an error that says so.
pub(super) fn resolve(
    catalog: &Catalog,
    items: &[Item],
    paths: &[String],
) -> anyhow::Result<Vec<ItemId>> {
    // A local dataset's root as the file system names it (a bucket's has no current folder).
    let root = catalog
        .dataset_root()?
        .filter(|r| !crate::storage::Root::is_url(r))
        .map(|r| r.canonicalize().unwrap_or(r));
    let here = std::env::current_dir().and_then(|d| d.canonicalize()).ok();
    let inside = |path: &Path| -> Option<String> {
        let rel = normalized(path)
            .strip_prefix(root.as_deref()?)
            .ok()?
            .to_path_buf();
        Some(crate::model::text_of_path(&rel).into_owned())
    };
    // One look-up per argument, not a pass over every item (`review accept` of many paths).
    let by_path: std::collections::HashMap<&str, ItemId> =
        items.iter().map(|i| (i.path.as_str(), i.id)).collect();
    let find = |rel: &str| by_path.get(rel).copied();
    paths
        .iter()
        .map(|p| {
            let given = Path::new(p);
            if given.is_absolute() {
                let rel = inside(&real(given)).ok_or_else(|| {
                    let root = root
                        .as_deref()
                        .map_or("-".into(), |r| r.display().to_string());
                    anyhow::anyhow!("{p}: outside the dataset ({root})")
                })?;
                return find(&rel).ok_or_else(|| anyhow::anyhow!("{p}: not in the catalog"));
            }
            let from_here = here.as_ref().and_then(|h| inside(&h.join(given)));
            from_here
                .as_deref()
                .and_then(find)
                .or_else(|| find(p.trim_start_matches("./")))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{p}: not in the catalog (paths are relative to the current folder or \
                         to the dataset root)"
                    )
                })
        })
        .collect()
}

/// `path` with `.` and `..` taken out by their names (the file need not exist any more).
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// An absolute path with its folder's links resolved (as the dataset root is), the file's own
/// name kept: a file that is gone still names its row.
fn real(path: &Path) -> PathBuf {
    let path = normalized(path);
    match (path.parent().map(Path::canonicalize), path.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => path,
    }
}

#[derive(clap::Args, Debug)]
pub struct UndoArgs {
    #[command(flatten)]
    project: ProjectArg,
}

pub fn undo(args: UndoArgs, redo: bool) -> anyhow::Result<Outcome> {
    let mut catalog = args.project.open()?;
    let done = if redo {
        catalog.redo()?
    } else {
        catalog.undo()?
    };
    match done {
        Some(op) => eprintln!("{} operation {op}", if redo { "redid" } else { "undid" }),
        None => eprintln!("nothing to {}", if redo { "redo" } else { "undo" }),
    }
    Ok(Outcome::Clean)
}

#[derive(clap::Args, Debug)]
pub struct BurstArgs {
    #[command(flatten)]
    project: ProjectArg,
    #[arg(long, default_value_t = 1000)]
    count: usize,
}

/// Apply `count` decision edits, cycling over the files, printing `ack ITEM DECISION` after
/// each commit: the acknowledged edits must survive a kill (crash-safety test).
pub fn edit_burst(args: BurstArgs) -> anyhow::Result<Outcome> {
    use std::io::Write;
    let mut catalog = args.project.open()?;
    let items = catalog.items()?;
    anyhow::ensure!(!items.is_empty(), "the catalog is empty");
    let mut out = std::io::stdout().lock();
    for n in 0..args.count {
        let item = items[n % items.len()].id;
        let decision = if (n / items.len()) % 2 == 0 {
            Decision::Accepted
        } else {
            Decision::Rejected
        };
        catalog.set_decisions(&[item], decision)?;
        writeln!(out, "ack {item} {}", decision.as_str())?;
        out.flush()?;
    }
    Ok(Outcome::Clean)
}
