//! What people decide: decisions, tags and notes, clips and how they were made, and the
//! undoable edits that change them.

use serde::{Deserialize, Serialize};

use super::{ItemId, Ratio};

/// A reviewer's decision on a file or a clip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    #[default]
    Unreviewed,
    Accepted,
    Rejected,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Unreviewed => "unreviewed",
            Decision::Accepted => "accepted",
            Decision::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "unreviewed" => Some(Decision::Unreviewed),
            "accepted" => Some(Decision::Accepted),
            "rejected" => Some(Decision::Rejected),
            _ => None,
        }
    }
}

/// Review state of a file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Review {
    pub decision: Decision,
    pub tags: Vec<String>,
    pub note: Option<String>,
    /// The file's label (a class), given to its clips that have none of their own.
    #[serde(default)]
    pub label: Option<String>,
}

/// A label as typed or imported: trimmed; empty is no label.
pub fn label_of(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// How a clip was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClipOrigin {
    /// Marked by a person.
    #[default]
    Manual,
    /// A shot between scene cuts.
    Cuts,
    /// Proposed from the motion curve.
    Auto,
}

impl ClipOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            ClipOrigin::Manual => "manual",
            ClipOrigin::Cuts => "cuts",
            ClipOrigin::Auto => "auto",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "manual" => Some(ClipOrigin::Manual),
            "cuts" => Some(ClipOrigin::Cuts),
            "auto" => Some(ClipOrigin::Auto),
            _ => None,
        }
    }
}

impl std::fmt::Display for ClipOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A part of a video chosen for training: `[start, end)` in stream timestamps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clip {
    pub id: i64,
    pub item_id: ItemId,
    pub start_pts: i64,
    pub end_pts: i64,
    pub time_base: Ratio,
    pub start_secs: f64,
    pub end_secs: f64,
    pub start_frame: Option<i64>,
    pub end_frame: Option<i64>,
    pub label: Option<String>,
    pub origin: ClipOrigin,
    pub decision: Decision,
}

/// One change a person makes, with what it replaced, so it can be undone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
pub enum Edit {
    Decision {
        item: ItemId,
        before: Decision,
        after: Decision,
    },
    Tags {
        item: ItemId,
        before: Vec<String>,
        after: Vec<String>,
    },
    Note {
        item: ItemId,
        before: Option<String>,
        after: Option<String>,
    },
    /// A file's label.
    Label {
        item: ItemId,
        before: Option<String>,
        after: Option<String>,
    },
    /// A clip's label.
    ClipLabel {
        clip: i64,
        before: Option<String>,
        after: Option<String>,
    },
    AddClip {
        clip: Clip,
    },
    RemoveClip {
        clip: Clip,
    },
}

impl Edit {
    /// The edit that undoes this one.
    pub fn inverse(&self) -> Edit {
        match self {
            Edit::Decision {
                item,
                before,
                after,
            } => Edit::Decision {
                item: *item,
                before: *after,
                after: *before,
            },
            Edit::Tags {
                item,
                before,
                after,
            } => Edit::Tags {
                item: *item,
                before: after.clone(),
                after: before.clone(),
            },
            Edit::Note {
                item,
                before,
                after,
            } => Edit::Note {
                item: *item,
                before: after.clone(),
                after: before.clone(),
            },
            Edit::Label {
                item,
                before,
                after,
            } => Edit::Label {
                item: *item,
                before: after.clone(),
                after: before.clone(),
            },
            Edit::ClipLabel {
                clip,
                before,
                after,
            } => Edit::ClipLabel {
                clip: *clip,
                before: after.clone(),
                after: before.clone(),
            },
            Edit::AddClip { clip } => Edit::RemoveClip { clip: clip.clone() },
            Edit::RemoveClip { clip } => Edit::AddClip { clip: clip.clone() },
        }
    }
}
