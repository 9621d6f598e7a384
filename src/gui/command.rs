//! Everything the window can be asked to do: panels, shortcuts and tests push commands,
//! [`App::apply`](super::App::apply) carries them out. Files are named by item id, not by row:
//! a command made before the view reloads (a scan reloads it every second) still names the
//! file it was made for.

use std::path::PathBuf;

use super::view::SortKey;
use crate::analysis::filter::LabelTerm;
use crate::model::{Clip, Decision, ItemId, Measure};

/// Everything the UI can ask for, by the part of the window that carries it out.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Job(JobCommand),
    Filter(FilterCommand),
    Selection(SelectionCommand),
    Player(PlayerCommand),
    Review(ReviewCommand),
    Dialog(DialogCommand),
}

/// The project and the background jobs on it: open, scan, deepen, close.
#[derive(Debug, Clone, PartialEq)]
pub enum JobCommand {
    Open(PathBuf),
    Demo,
    Rescan,
    /// The deep pass on the files the filter shows that are not analysed deeply yet (a
    /// triage's estimates measured), as a background job.
    DeepenShown,
    CancelScan,
    Close,
    /// The system's folder picker (on its own thread; the window keeps drawing).
    Browse,
}

/// What the filter keeps and in what order, and the thresholds the flag panel edits.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterCommand {
    /// Keep files whose `measure` is within `[lo, hi]` (either order).
    Brush {
        measure: Measure,
        lo: f64,
        hi: f64,
    },
    ClearRange(Measure),
    FilterFlag(Option<String>),
    /// Show files with this label (`label:NAME`), or with none (`label:none`); `None` drops
    /// the label term.
    FilterLabel(Option<LabelTerm>),
    /// Edit a threshold of the flag being explained (`quality.dark_below`; `None` turns an
    /// optional rule off). Not saved: the flag panel previews what it would catch.
    DraftSetting {
        key: &'static str,
        value: Option<f64>,
    },
    /// Write the edited thresholds to framecull.toml and recompute the flags with them.
    SaveSettings,
    /// Drop the edited thresholds.
    ResetSettings,
    /// Show only paths containing this text (case-insensitive).
    Search(String),
    /// Sort the table by this column (again: the other way).
    SortBy(SortKey),
}

/// Which files are selected.
#[derive(Debug, Clone, PartialEq)]
pub enum SelectionCommand {
    /// Show this file in the inspector (and the player), the only one selected.
    Select(Option<ItemId>),
    /// Up / Down: the previous or next file the filter shows.
    SelectNext(i64),
    /// Ctrl+click: add a file to the selection, or take it out.
    TogglePick(ItemId),
    /// Shift+click: select every shown file from the selected one to this one.
    PickRange(ItemId),
}

/// The player of the selected video and its in and out points.
#[derive(Debug, Clone, PartialEq)]
pub enum PlayerCommand {
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
}

/// Review edits: decisions, clips, labels, tags and notes, undo and redo.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewCommand {
    /// Keep the best member of a duplicate group (every group when `None`), reject the rest.
    KeepBest(Option<ItemId>),
    /// A / R / U: the clip under the playhead, else the selected file.
    Decide(Decision),
    /// Bulk: every file the filter shows.
    DecideShown(Decision),
    RemoveClip(Clip),
    /// Give a clip (by id) a label.
    LabelClip {
        clip: i64,
        label: String,
    },
    ReshapeClip {
        clip: Clip,
        start: usize,
        end: usize,
    },
    Undo,
    Redo,
    /// One clip per shot of the open video, at its scene cuts.
    SplitAtCuts,
    /// Clips where the motion curve shows motion (lead-in, minimum and maximum length from
    /// the defaults of `framecull clips propose`).
    ProposeClips,
    /// Replace the selected file's tags (comma separated).
    SetTags(String),
    /// Replace the selected file's note (empty: none).
    SetNote(String),
    /// Replace the selected file's label (empty: none).
    SetLabel(String),
}

/// How the dashboard shows the files, and the windows over it (export, duplicates, manifests, help).
#[derive(Debug, Clone, PartialEq)]
pub enum DialogCommand {
    ShowGallery(bool),
    /// Histogram bar heights on a log scale of counts (a few tall bins no longer flatten the
    /// rest).
    LogCounts(bool),
    /// The scatter's measures: x, y.
    ScatterAxes(Measure, Measure),
    ShowExport,
    /// Count what the export dialog's settings would write.
    PreviewExport,
    /// Write a new manifest version with the export dialog's settings.
    Export,
    /// Stop the export running (its clip files, between clips).
    CancelExport,
    /// Open the duplicate groups window.
    ShowDuplicates,
    /// Open the manifest history (and read it again).
    ShowManifests,
    /// Diff two versions of a manifest in the history window.
    DiffManifests {
        name: String,
        from: u32,
        to: u32,
    },
    ToggleHelp,
}
