//! A version's clip files laid out as other training stacks read folders: class folders
//! (`--format folders`: `SPLIT/LABEL/KEY.EXT`, as torchvision's `ImageFolder` and UCF-101
//! loaders read them) and Hugging Face folders (`--format hf`: `images/SPLIT/` and
//! `videos/SPLIT/`, each with a `metadata.jsonl` whose `file_name` names each file, as
//! `datasets.load_dataset("imagefolder")` and `"videofolder"` read them). Each file is a hard
//! link to the clip file where the two folders share a file system, else a copy; its key is
//! the row's clip id, which names the same file, range and footage in every version.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{ManifestError, ManifestRow};
use framecull_model::MediaKind;

/// What a layout holds, written beside it as `vNNNN.FORMAT.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutIndex {
    /// The folder of the layout, beside this index.
    pub dir: String,
    /// Files by split, and by label (class folders) or by kind (Hugging Face).
    pub by_split: BTreeMap<String, u64>,
    pub by_group: BTreeMap<String, u64>,
    /// Files hard-linked to their clip file, and copied (another file system).
    pub linked: u64,
    pub copied: u64,
    /// Rows left out, by reason.
    pub left_out: BTreeMap<String, u64>,
}

/// The split folder of a row: its split, `all` without splits, as a folder name.
fn split_of(row: &ManifestRow) -> String {
    folder_name(row.split.as_deref().unwrap_or("all"))
}

/// A label (or a split) as a folder name that stays inside its parent: path separators, `:`,
/// and control characters become `_`, a name that is empty or starts with a dot gets a `_`
/// in front (no `.`, `..` or hidden folder), and a long one is cut to 200 bytes. A name so
/// changed ends with `~` and 8 hex digits of the label's hash, so two labels never share a
/// folder ("a/b" is `a_b~…`, "a_b" is `a_b`).
pub fn folder_name(label: &str) -> String {
    let mut name: String = label
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if name.is_empty() || name.starts_with('.') {
        name.insert(0, '_');
    }
    if name.len() > 200 {
        let mut cut = 200;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    if name == label {
        name
    } else {
        let hash = xxhash_rust::xxh3::xxh3_64(label.as_bytes());
        format!("{name}~{:08x}", hash >> 32)
    }
}

impl LayoutIndex {
    /// An empty index of a layout whose folder `out` is made here.
    fn made_at(out: &Path) -> Result<LayoutIndex, ManifestError> {
        std::fs::create_dir_all(out).map_err(|e| ManifestError::io(out, e))?;
        Ok(LayoutIndex::default())
    }

    /// Put clip file `from` at `to`: a hard link, else a copy (counted).
    fn place(&mut self, from: &Path, to: &Path) -> Result<(), ManifestError> {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ManifestError::io(parent, e))?;
        }
        if std::fs::hard_link(from, to).is_ok() {
            self.linked += 1;
            return Ok(());
        }
        std::fs::copy(from, to).map_err(|e| ManifestError::io(to, e))?;
        std::fs::File::open(to)
            .and_then(|f| f.sync_all())
            .map_err(|e| ManifestError::io(to, e))?;
        self.copied += 1;
        Ok(())
    }

    /// What `found` holds, or `None` with its reason counted as a row left out.
    fn take<T>(&mut self, found: Result<T, &'static str>) -> Option<T> {
        found
            .map_err(|why| *self.left_out.entry(why.into()).or_default() += 1)
            .ok()
    }

    /// Count a file placed in `split`, of `group` (a label, a kind).
    fn count(&mut self, split: &str, group: &str) {
        *self.by_split.entry(split.into()).or_default() += 1;
        *self.by_group.entry(group.into()).or_default() += 1;
    }
}

/// The clip file of `row` in `clip_dir` and its extension, or why there is none.
pub(crate) fn clip_file<'a>(
    row: &'a ManifestRow,
    clip_dir: &Path,
) -> Result<(std::path::PathBuf, &'a str), &'static str> {
    let file = row.clip.file.as_deref().ok_or("no clip file")?;
    let ext = Path::new(file)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("bin");
    Ok((clip_dir.join(file), ext))
}

/// Class folders of `rows` in `out` (made here): `SPLIT/LABEL/CLIP_ID.EXT`. Rows without a
/// label or a clip file are left out (counted).
pub fn write_folders(
    rows: &[ManifestRow],
    clip_dir: &Path,
    out: &Path,
) -> Result<LayoutIndex, ManifestError> {
    let mut index = LayoutIndex::made_at(out)?;
    for row in rows {
        let placed = clip_file(row, clip_dir).and_then(|(from, ext)| {
            let label = row.label.as_deref().ok_or("no label")?;
            Ok((from, ext, folder_name(label)))
        });
        let Some((from, ext, label)) = index.take(placed) else {
            continue;
        };
        let split = split_of(row);
        let to = out
            .join(&split)
            .join(&label)
            .join(format!("{}.{ext}", row.clip_id));
        index.place(&from, &to)?;
        index.count(&split, &label);
    }
    Ok(index)
}

/// A line of a Hugging Face `metadata.jsonl`, and a WebDataset sample's `KEY.json`: the
/// file, its label, and what the row says of it.
#[derive(Serialize)]
pub(crate) struct Metadata<'a> {
    file_name: String,
    label: Option<&'a str>,
    split: Option<&'a str>,
    clip_id: &'a str,
    path: &'a str,
    start_frame: Option<i64>,
    end_frame: Option<i64>,
    start_secs: f64,
    end_secs: f64,
    start_pts: Option<i64>,
    end_pts: Option<i64>,
    time_base: Option<&'a str>,
    fps: Option<f64>,
    width: Option<i64>,
    height: Option<i64>,
    tags: &'a [String],
    flags: &'a [String],
    analysis_level: Option<&'a str>,
    motion: Option<f64>,
    brightness: Option<f64>,
    sharpness: Option<f64>,
}

impl Metadata<'_> {
    /// What `row` says of its clip file, named `file_name`.
    pub(crate) fn of(row: &ManifestRow, file_name: String) -> Metadata<'_> {
        Metadata {
            file_name,
            label: row.label.as_deref(),
            split: row.split.as_deref(),
            clip_id: &row.clip_id,
            path: &row.path,
            start_frame: row.start_frame,
            end_frame: row.end_frame,
            start_secs: row.start_secs,
            end_secs: row.end_secs,
            start_pts: row.start_pts,
            end_pts: row.end_pts,
            time_base: row.time_base.as_deref(),
            fps: row.fps,
            width: row.width,
            height: row.height,
            tags: &row.tags,
            flags: &row.flags,
            analysis_level: row.analysis_level.as_deref(),
            motion: row.motion,
            brightness: row.brightness,
            sharpness: row.sharpness,
        }
    }
}

/// Hugging Face folders of `rows` in `out` (made here): `images/SPLIT/` and `videos/SPLIT/`,
/// each file `CLIP_ID.EXT` with a line in the folder's `metadata.jsonl`. Rows without a clip
/// file are left out (counted).
pub fn write_hf(
    rows: &[ManifestRow],
    clip_dir: &Path,
    out: &Path,
) -> Result<LayoutIndex, ManifestError> {
    let mut index = LayoutIndex::made_at(out)?;
    let mut metadata: BTreeMap<std::path::PathBuf, Vec<u8>> = BTreeMap::new();
    for row in rows {
        let Some((from, ext)) = index.take(clip_file(row, clip_dir)) else {
            continue;
        };
        let kind = match row.kind {
            MediaKind::Video => "videos",
            _ => "images",
        };
        let folder = out.join(kind).join(split_of(row));
        let file_name = format!("{}.{ext}", row.clip_id);
        index.place(&from, &folder.join(&file_name))?;
        index.count(&split_of(row), kind);
        let line = Metadata::of(row, file_name);
        let lines = metadata.entry(folder).or_default();
        serde_json::to_writer(&mut *lines, &line)
            .map_err(|e| ManifestError::Encode(e.to_string()))?;
        lines.push(b'\n');
    }
    for (folder, lines) in metadata {
        let path = folder.join("metadata.jsonl");
        std::fs::File::create(&path)
            .and_then(|mut f| {
                f.write_all(&lines)?;
                f.sync_all()
            })
            .map_err(|e| ManifestError::io(&path, e))?;
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::folder_name;

    #[test]
    fn labels_become_folder_names_that_stay_inside() {
        assert_eq!(folder_name("cat"), "cat");
        assert_eq!(folder_name("été"), "été");
        assert_eq!(folder_name("a_b"), "a_b");
        // Changed names carry the label's hash: two labels never share a folder.
        for (label, stem) in [
            ("a/b", "a_b~"),
            ("..", "_..~"),
            ("", "_~"),
            ("tab\there", "tab_here~"),
        ] {
            let name = folder_name(label);
            assert!(
                name.starts_with(stem) && name.len() == stem.len() + 8,
                "{label}: {name}"
            );
        }
        assert_ne!(folder_name("a/b"), folder_name("a\\b"));
        let long = "é".repeat(150);
        assert!(
            folder_name(&long).len() <= 209,
            "{}",
            folder_name(&long).len()
        );
    }
}
