//! Writing a version: the rows [`select_rows`] picks, in every format asked for, with the
//! seek references of its videos and the metadata that says what shaped it, published
//! atomically (temporary files, synced, renamed; the metadata last).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use xxhash_rust::xxh3::Xxh3;

use crate::webdataset::{DEFAULT_SHARD_BYTES, ShardProgress};

use super::{
    ClipFiles, ExportOptions, Format, ManifestError, ManifestRow, SCHEMA_VERSION, VersionMeta, io,
    manifest_dir, select_rows, versions,
};
use framecull_analysis::filter::Filter;
use framecull_catalog::Catalog;
use framecull_model::{MediaKind, SeekReference};

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.')
}

/// xxh3-128 over the rows as canonical JSON lines (rows sorted by clip id).
pub fn rows_hash(rows: &[ManifestRow]) -> String {
    let mut h = Xxh3::new();
    for r in rows {
        if let Ok(line) = serde_json::to_vec(r) {
            h.update(&line);
            h.update(b"\n");
        }
    }
    format!("{:032x}", h.digest128())
}

/// The temporary files of a version being written, removed when the export stops before
/// publishing them (an error such as a full disk), so they do not hold the space.
struct Staged(
    Vec<(std::path::PathBuf, std::path::PathBuf)>,
    /// Temporary folders a failure leaves for the next run to resume (WebDataset shards).
    Vec<std::path::PathBuf>,
);

impl Drop for Staged {
    fn drop(&mut self) {
        for (tmp, _) in &self.0 {
            if !self.1.contains(tmp) {
                remove_any(tmp);
            }
        }
    }
}

/// A layout's folder name: `vNNNN.folders`, `vNNNN.hf`, `vNNNN.webdataset`.
fn is_layout(name: &str) -> bool {
    name.strip_prefix('v')
        .and_then(|n| n.split_once('.'))
        .is_some_and(|(number, format)| {
            !number.is_empty()
                && number.bytes().all(|b| b.is_ascii_digit())
                && matches!(format, "folders" | "hf" | "webdataset")
        })
}

/// Remove a file, or a folder with what it holds.
fn remove_any(path: &Path) {
    if std::fs::remove_file(path).is_err() {
        let _ = std::fs::remove_dir_all(path);
    }
}

/// Export a new version. Files go to temporary names, are synced, then renamed; the
/// metadata file is renamed last, so a crash leaves a whole version or none.
pub fn export(catalog: &Catalog, options: &ExportOptions) -> Result<VersionMeta, ManifestError> {
    export_until(catalog, options, &AtomicBool::new(false))
}

/// [`export`], given up with [`ManifestError::Stopped`] once `stop` is set (a signal): it is
/// looked at between the steps (selection, each file), and nothing is published after it.
pub fn export_until(
    catalog: &Catalog,
    options: &ExportOptions,
    stop: &AtomicBool,
) -> Result<VersionMeta, ManifestError> {
    export_with(catalog, options, stop, None)
}

/// Writes a version's clip files before it is published (`export --materialize`): given the
/// rows and the seek references of their videos, it fills the rows' `clip_*` columns and says
/// where the files are. Its error (a stop included) leaves the version unpublished.
pub type ClipFileWriter<'a> =
    &'a mut dyn FnMut(&mut [ManifestRow], &[SeekReference]) -> Result<ClipFiles, ManifestError>;

/// [`export_until`], with the version's clip files written by `clip_files` (when given)
/// after the rows are chosen and before anything of the version is written: the version
/// records every clip file.
pub fn export_with(
    catalog: &Catalog,
    options: &ExportOptions,
    stop: &AtomicBool,
    clip_files: Option<ClipFileWriter>,
) -> Result<VersionMeta, ManifestError> {
    export_watched(
        catalog,
        options,
        stop,
        clip_files,
        &ShardProgress::default(),
    )
}

/// [`export_with`], counting the WebDataset shards' samples and bytes written in `shards` as
/// it writes them (for a progress bar on another thread).
pub fn export_watched(
    catalog: &Catalog,
    options: &ExportOptions,
    stop: &AtomicBool,
    clip_files: Option<ClipFileWriter>,
    shards: &ShardProgress,
) -> Result<VersionMeta, ManifestError> {
    check_options(options)?;
    let project = catalog.project_dir().to_path_buf();
    let dir = manifest_dir(&project, &options.name);
    std::fs::create_dir_all(&dir).map_err(|e| ManifestError::io(&dir, e))?;
    clean_leftovers(&dir);
    let existing = versions(&project, &options.name)?;
    let parent = existing.last().map(|m| m.version);
    let version = parent.map_or(1, |p| p + 1);
    let catalog_fingerprint = catalog.state_fingerprint()?;
    // The settings that produced the stored flags (defaults, and no flags, before the first
    // derivation), not whatever framecull.toml says now; but how the rows' videos are read,
    // as the rows say it (`[video]` now).
    let mut config = catalog.flags_config()?.unwrap_or_default();
    config.video = crate::select::reading(catalog)?;
    let (mut rows, counts) = select_rows(catalog, options)?;
    check_stop(stop)?;
    let references = seek_references(catalog, &rows)?;
    let clip_files = match clip_files {
        Some(write) => Some(write(&mut rows, &references)?),
        None => None,
    };
    check_stop(stop)?;
    let stem = format!("v{version:04}");
    let mut staged = Staged(Vec::new(), Vec::new());
    let (files, file_hashes) = write_formats(
        catalog,
        options,
        &dir,
        &stem,
        &mut rows,
        clip_files.as_ref(),
        (stop, shards),
        &mut staged,
    )?;
    let frame_index = write_frame_index(&dir, &stem, &references, &mut staged)?;
    let meta = VersionMeta {
        schema_version: SCHEMA_VERSION,
        name: options.name.clone(),
        version,
        parent,
        created_at: framecull_catalog::unix_now(),
        framecull_version: env!("CARGO_PKG_VERSION").to_string(),
        dataset_root: catalog
            .dataset_root()?
            .map(|p| framecull_model::text_of_path(&p).into_owned())
            .unwrap_or_default(),
        catalog_fingerprint,
        include: options.include,
        filter: options.filter.as_ref().map(Filter::to_text),
        config,
        split: options.split.clone(),
        split_seed: options.split_seed,
        counts,
        rows_hash: rows_hash(&rows),
        files,
        file_hashes,
        frame_index,
        clip_files,
    };
    publish_version(catalog, &dir, &stem, &meta, &mut staged, stop)?;
    Ok(meta)
}

/// [`ManifestError::Stopped`] once `stop` is set (a signal).
fn check_stop(stop: &AtomicBool) -> Result<(), ManifestError> {
    if stop.load(Ordering::SeqCst) {
        Err(ManifestError::Stopped)
    } else {
        Ok(())
    }
}

/// Refuse a manifest name that is not letters, digits, '-', '_' and '.', and an export
/// without an output format.
fn check_options(options: &ExportOptions) -> Result<(), ManifestError> {
    if !valid_name(&options.name) {
        return Err(ManifestError::Invalid(format!(
            "manifest name {:?}: use letters, digits, '-', '_' and '.'",
            options.name
        )));
    }
    if options.formats.is_empty() {
        return Err(ManifestError::Invalid("no output format".into()));
    }
    Ok(())
}

/// Names by format: a version's files, or the hashes of its row files.
type Named = BTreeMap<String, String>;

/// The version's files in each format of `options` (the frame maps first, named in `rows`),
/// staged in `dir` under `stem`; the files by format, and the hashes of the row files.
/// Given up once `stop` is set, looked at after each format.
#[allow(clippy::too_many_arguments)]
fn write_formats(
    catalog: &Catalog,
    options: &ExportOptions,
    dir: &Path,
    stem: &str,
    rows: &mut [ManifestRow],
    clip_files: Option<&ClipFiles>,
    (stop, shards): (&AtomicBool, &ShardProgress),
    staged: &mut Staged,
) -> Result<(Named, Named), ManifestError> {
    let mut files = BTreeMap::new();
    let mut file_hashes = BTreeMap::new();
    // The maps first: each video's rows name theirs.
    if options.formats.contains(&Format::FrameMaps) {
        let maps = write_frame_maps(catalog, dir, stem, rows, staged, &mut files)?;
        for row in rows.iter_mut() {
            row.frame_map = maps.get(&row.path).cloned();
        }
        check_stop(stop)?;
    }
    for format in &options.formats {
        if *format == Format::Dali {
            write_dali(catalog, dir, stem, rows, staged, &mut files)?;
            check_stop(stop)?;
            continue;
        }
        if *format == Format::FrameMaps {
            continue;
        }
        if matches!(format, Format::Folders | Format::Hf | Format::Webdataset) {
            write_layout(
                *format,
                dir,
                stem,
                rows,
                clip_files,
                (
                    options.shard_size.unwrap_or(DEFAULT_SHARD_BYTES),
                    stop,
                    shards,
                ),
                staged,
                &mut files,
            )?;
            check_stop(stop)?;
            continue;
        }
        let file = format!("{stem}.{}", format.extension());
        let path = dir.join(&file);
        if path.exists() {
            return Err(ManifestError::Invalid(format!(
                "{} already exists",
                path.display()
            )));
        }
        let tmp = io::write_temp(&path, |out| match format {
            Format::Parquet => io::write_parquet(out, rows),
            Format::Jsonl => io::write_jsonl(out, rows),
            Format::Csv => io::write_csv(out, rows),
            Format::Dali
            | Format::FrameMaps
            | Format::Folders
            | Format::Hf
            | Format::Webdataset => Ok(()),
        })?;
        staged.0.push((tmp.clone(), path));
        check_stop(stop)?;
        file_hashes.insert(format.extension().to_string(), io::file_hash(&tmp)?);
        files.insert(format.extension().to_string(), file);
    }
    Ok((files, file_hashes))
}

/// The seek references of the version's videos as `vNNNN.frames.jsonl` in `dir`, staged;
/// its name, or none when there are no references.
fn write_frame_index(
    dir: &Path,
    stem: &str,
    references: &[SeekReference],
    staged: &mut Staged,
) -> Result<Option<String>, ManifestError> {
    if references.is_empty() {
        return Ok(None);
    }
    let file = format!("{stem}.frames.jsonl");
    let path = dir.join(&file);
    let tmp = io::write_temp(&path, |out| {
        for r in references {
            serde_json::to_writer(&mut *out, r)
                .map_err(|e| ManifestError::Encode(e.to_string()))?;
            out.write_all(b"\n")
                .map_err(|e| ManifestError::io(&path, e))?;
        }
        Ok(())
    })?;
    staged.0.push((tmp, path));
    Ok(Some(file))
}

/// Stage `meta` as the version's metadata (`vNNNN.json` in `dir`), publish every staged file
/// (the metadata last) unless `stop` is set, and record the version in the catalog.
fn publish_version(
    catalog: &Catalog,
    dir: &Path,
    stem: &str,
    meta: &VersionMeta,
    staged: &mut Staged,
    stop: &AtomicBool,
) -> Result<(), ManifestError> {
    let meta_path = dir.join(format!("{stem}.json"));
    let meta_tmp = io::write_temp(&meta_path, |out| {
        serde_json::to_writer_pretty(&mut *out, meta)
            .map_err(|e| ManifestError::Encode(e.to_string()))
    })?;
    // The metadata last: a version is visible once it is.
    staged.0.push((meta_tmp, meta_path));
    check_stop(stop)?;
    for (tmp, path) in &staged.0 {
        io::publish(tmp, path)?;
    }
    staged.0.clear();
    catalog.record_manifest(
        &meta.name,
        meta.version,
        meta.parent,
        meta.counts.rows,
        &meta.rows_hash,
        &meta.catalog_fingerprint,
    )?;
    Ok(())
}

/// DALI's lists of `rows` (one per split) and their index (`vNNNN.dali.json`), staged; the
/// files recorded as `dali` (the index) and `dali.SPLIT`.
fn write_dali(
    catalog: &Catalog,
    dir: &Path,
    stem: &str,
    rows: &[ManifestRow],
    staged: &mut Staged,
    files: &mut BTreeMap<String, String>,
) -> Result<(), ManifestError> {
    let root = catalog
        .dataset_root()?
        // A bucket's root is a URL (s3://, gs://, az://, https://).
        .filter(|r| !framecull_model::text_of_path(r).contains("://"))
        .ok_or_else(|| {
            ManifestError::Invalid(
                "DALI reads local files: --format dali needs a dataset in a local folder".into(),
            )
        })?;
    let (lists, index) = crate::dali::lists(rows, &root, stem);
    for (split, text) in &lists {
        let file = &index.lists[split];
        stage(dir, file, text.as_bytes(), staged)?;
        files.insert(format!("dali.{split}"), file.clone());
    }
    let file = format!("{stem}.dali.json");
    let json =
        serde_json::to_vec_pretty(&index).map_err(|e| ManifestError::Encode(e.to_string()))?;
    stage(dir, &file, &json, staged)?;
    files.insert("dali".into(), file);
    Ok(())
}

/// The clip files of `rows` laid out as `format` asks (class folders, Hugging Face folders,
/// WebDataset shards of `shard_size` bytes) in a folder `vNNNN.FORMAT` and its index
/// `vNNNN.FORMAT.json`, staged (the folder built under a temporary name, renamed with the
/// version); recorded as `FORMAT` (the index) and `FORMAT.dir`. The shards' temporary folder
/// stays after a stop or a failure: the next run keeps the shards it finished.
#[allow(clippy::too_many_arguments)]
fn write_layout(
    format: Format,
    dir: &Path,
    stem: &str,
    rows: &[ManifestRow],
    clip_files: Option<&ClipFiles>,
    (shard_size, stop, progress): (u64, &AtomicBool, &ShardProgress),
    staged: &mut Staged,
    files: &mut BTreeMap<String, String>,
) -> Result<(), ManifestError> {
    let name = match format {
        Format::Folders => "folders",
        Format::Hf => "hf",
        _ => "webdataset",
    };
    let clips = clip_files.ok_or_else(|| {
        ManifestError::Invalid(format!(
            "--format {name} uses the version's clip files: add --materialize DIR"
        ))
    })?;
    let clip_dir = Path::new(&clips.dir);
    if !clip_dir.is_dir() {
        return Err(ManifestError::Invalid(format!(
            "--format {name} uses the clip files of a local folder; {} is not one",
            clips.dir
        )));
    }
    let folder = format!("{stem}.{name}");
    let path = dir.join(&folder);
    if path.exists() {
        return Err(ManifestError::Invalid(format!(
            "{} already exists",
            path.display()
        )));
    }
    let tmp = dir.join(format!(".{folder}.tmp"));
    // Staged before it is written: a failure part way removes what was made (but shards).
    staged.0.push((tmp.clone(), path));
    let index = match format {
        Format::Webdataset => {
            staged.1.push(tmp.clone());
            let index = crate::webdataset::write_webdataset(
                rows,
                clip_dir,
                &tmp,
                shard_size,
                (stop, progress),
            )?;
            serde_json::to_value(crate::webdataset::ShardsIndex {
                dir: folder.clone(),
                ..index
            })
        }
        _ => {
            remove_any(&tmp);
            let index = match format {
                Format::Folders => crate::layouts::write_folders(rows, clip_dir, &tmp)?,
                _ => crate::layouts::write_hf(rows, clip_dir, &tmp)?,
            };
            serde_json::to_value(crate::layouts::LayoutIndex {
                dir: folder.clone(),
                ..index
            })
        }
    }
    .map_err(|e| ManifestError::Encode(e.to_string()))?;
    files.insert(format!("{name}.dir"), folder);
    let file = format!("{stem}.{name}.json");
    let json =
        serde_json::to_vec_pretty(&index).map_err(|e| ManifestError::Encode(e.to_string()))?;
    stage(dir, &file, &json, staged)?;
    files.insert(name.into(), file);
    Ok(())
}

/// A file of a version written to a temporary name, to be published with it.
fn stage(dir: &Path, file: &str, bytes: &[u8], staged: &mut Staged) -> Result<(), ManifestError> {
    let path = dir.join(file);
    if path.exists() {
        return Err(ManifestError::Invalid(format!(
            "{} already exists",
            path.display()
        )));
    }
    let tmp = io::write_temp(&path, |out| {
        out.write_all(bytes)
            .map_err(|e| ManifestError::io(&path, e))
    })?;
    staged.0.push((tmp, path));
    Ok(())
}

/// torchcodec's frame map of each video of `rows` with a frame table, and their index
/// (`vNNNN.frame-maps.json`, recorded as `frame-maps`), staged; each video's map by its path.
fn write_frame_maps(
    catalog: &Catalog,
    dir: &Path,
    stem: &str,
    rows: &[ManifestRow],
    staged: &mut Staged,
    files: &mut BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ManifestError> {
    use crate::frame_maps::{FrameMapIndex, file_name, map_of};
    let ids = video_ids(catalog)?;
    let mut index = FrameMapIndex::default();
    let mut seen = std::collections::HashSet::new();
    for row in rows.iter().filter(|r| r.kind == MediaKind::Video) {
        // A video's clips: one map.
        if !seen.insert(row.path.as_str()) {
            continue;
        }
        let Some(&id) = ids.get(&row.path) else {
            continue;
        };
        let why = match catalog.frame_table(id)? {
            None => "no frame table (framecull analyze makes one)",
            Some(table) => match map_of(&table) {
                Ok(map) => {
                    let file = file_name(stem, &row.file_fingerprint);
                    let json = serde_json::to_vec(&map)
                        .map_err(|e| ManifestError::Encode(e.to_string()))?;
                    // Two paths with the same bytes share a map.
                    if !staged.0.iter().any(|(_, p)| p.ends_with(&file)) {
                        stage(dir, &file, &json, staged)?;
                    }
                    index.maps.insert(row.path.clone(), file);
                    continue;
                }
                Err(why) => why,
            },
        };
        *index.left_out.entry(why.into()).or_default() += 1;
    }
    let file = format!("{stem}.frame-maps.json");
    let json =
        serde_json::to_vec_pretty(&index).map_err(|e| ManifestError::Encode(e.to_string()))?;
    stage(dir, &file, &json, staged)?;
    files.insert("frame-maps".into(), file);
    Ok(index.maps)
}

/// The seek references of the videos in `rows` that have a frame table, one per file.
fn seek_references(
    catalog: &Catalog,
    rows: &[ManifestRow],
) -> Result<Vec<SeekReference>, ManifestError> {
    let ids = video_ids(catalog)?;
    let mut done = std::collections::HashSet::new();
    let mut out = Vec::new();
    for row in rows {
        let Some(&id) = ids.get(&row.path) else {
            continue;
        };
        if !done.insert(id) {
            continue;
        }
        if let Some(table) = catalog.frame_table(id)? {
            out.push(table.seek_reference(&row.path, &row.file_fingerprint));
        }
    }
    Ok(out)
}

/// The item id of each video of the catalog, by path.
fn video_ids(catalog: &Catalog) -> Result<HashMap<String, i64>, ManifestError> {
    Ok(catalog
        .items()?
        .into_iter()
        .filter(|i| i.kind == MediaKind::Video)
        .map(|i| (i.path, i.id))
        .collect())
}

/// Remove what an interrupted export left: temporary files, and data files of a version
/// whose metadata was never published.
fn clean_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for name in &names {
        let stem = name.split('.').next().unwrap_or_default();
        // Every file of a version but its metadata, which is published last.
        let meta = format!("{stem}.json");
        let orphan = name.starts_with('v') && *name != meta && !names.contains(&meta);
        // A version's shards being written stay for the run that resumes them.
        let resumable = name.starts_with(".v")
            && name.ends_with(".webdataset.tmp")
            && !names.contains(&format!(
                "{}.json",
                &name[1..].split('.').next().unwrap_or_default()
            ));
        if ((name.starts_with('.') && name.ends_with(".tmp")) || orphan) && !resumable {
            let path = dir.join(name);
            // Folders only where a layout of a version made them (`.vNNNN.hf.tmp`,
            // `vNNNN.folders`), never another folder that happens to be there.
            if !path.is_dir() {
                let _ = std::fs::remove_file(&path);
            } else if is_layout(name.trim_start_matches('.').trim_end_matches(".tmp")) {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }
}
