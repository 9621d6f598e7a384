//! Manifest files: rows to and from Parquet, JSON lines and CSV, written atomically.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use polars_io::SerReader;
use polars_io::parquet::read::ParquetReader;

use super::{ClipFileColumns, ManifestError, ManifestRow};
use framecull_model::{Measure, MediaKind};

/// Write `write`'s output to `path` through a temporary file that is synced before the
/// caller renames it into place; returns the temporary path. On failure (a full disk, a
/// file-size limit) the temporary file is removed and the error names `path`.
pub fn write_temp(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<(), ManifestError>,
) -> Result<PathBuf, ManifestError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let file = File::create(&tmp).map_err(|e| ManifestError::io(&tmp, e))?;
    let mut out = BufWriter::new(file);
    let written = write(&mut out).and_then(|()| {
        out.flush().map_err(|e| ManifestError::io(&tmp, e))?;
        out.get_ref()
            .sync_all()
            .map_err(|e| ManifestError::io(&tmp, e))
    });
    if let Err(e) = written {
        drop(out);
        let _ = std::fs::remove_file(&tmp);
        return Err(match e {
            ManifestError::Io { source, .. } => ManifestError::io(path, source),
            other => ManifestError::Write {
                path: path.to_path_buf(),
                reason: other.to_string(),
            },
        });
    }
    Ok(tmp)
}

/// Make a finished temporary file visible under its final name, durably.
pub fn publish(tmp: &Path, path: &Path) -> Result<(), ManifestError> {
    std::fs::rename(tmp, path).map_err(|e| ManifestError::io(path, e))?;
    if let Some(dir) = path.parent() {
        // The rename is durable once the directory is synced.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| ManifestError::io(dir, e))?;
    }
    Ok(())
}

pub fn frame_from_rows(rows: &[ManifestRow]) -> PolarsResult<DataFrame> {
    let str_col = |name: &str, f: &dyn Fn(&ManifestRow) -> Option<&str>| {
        Column::new(name.into(), rows.iter().map(f).collect::<Vec<_>>())
    };
    let i64_col = |name: &str, f: &dyn Fn(&ManifestRow) -> Option<i64>| {
        Column::new(name.into(), rows.iter().map(f).collect::<Vec<_>>())
    };
    let f64_col = |name: &str, f: &dyn Fn(&ManifestRow) -> Option<f64>| {
        Column::new(name.into(), rows.iter().map(f).collect::<Vec<_>>())
    };
    let list_col = |name: &str, f: &dyn Fn(&ManifestRow) -> &Vec<String>| -> Column {
        let mut ca: ListChunked = rows
            .iter()
            .map(|r| Some(Series::new(PlSmallStr::EMPTY, f(r))))
            .collect();
        ca.rename(name.into());
        if rows.is_empty() {
            return Column::new_empty(name.into(), &DataType::List(Box::new(DataType::String)));
        }
        ca.into_series().into_column()
    };
    DataFrame::new(
        rows.len(),
        vec![
            str_col("clip_id", &|r| Some(&r.clip_id)),
            str_col("path", &|r| Some(&r.path)),
            str_col("file_fingerprint", &|r| Some(&r.file_fingerprint)),
            i64_col(Measure::SizeBytes.manifest_column(), &|r| {
                Some(r.size_bytes)
            }),
            str_col("kind", &|r| Some(r.kind.as_str())),
            f64_col("start_secs", &|r| Some(r.start_secs)),
            f64_col("end_secs", &|r| Some(r.end_secs)),
            i64_col("start_frame", &|r| r.start_frame),
            i64_col("end_frame", &|r| r.end_frame),
            i64_col("start_pts", &|r| r.start_pts),
            i64_col("end_pts", &|r| r.end_pts),
            str_col("time_base", &|r| r.time_base.as_deref()),
            f64_col(Measure::Fps.manifest_column(), &|r| r.fps),
            i64_col(Measure::Width.manifest_column(), &|r| r.width),
            i64_col(Measure::Height.manifest_column(), &|r| r.height),
            i64_col("rotation_deg", &|r| r.rotation_deg),
            i64_col("stream_index", &|r| r.stream_index),
            str_col("color_matrix", &|r| r.color_matrix.as_deref()),
            str_col("analysis_level", &|r| r.analysis_level.as_deref()),
            str_col("label", &|r| r.label.as_deref()),
            list_col("tags", &|r| &r.tags),
            str_col("split", &|r| r.split.as_deref()),
            str_col("group_key", &|r| Some(&r.group_key)),
            f64_col(Measure::MotionMean.manifest_column(), &|r| r.motion),
            f64_col(Measure::Brightness.manifest_column(), &|r| r.brightness),
            f64_col(Measure::Sharpness.manifest_column(), &|r| r.sharpness),
            list_col("flags", &|r| &r.flags),
            str_col("clip_file", &|r| r.clip.file.as_deref()),
            i64_col("clip_bytes", &|r| r.clip.bytes),
            str_col("clip_hash", &|r| r.clip.hash.as_deref()),
            str_col("clip_fingerprint", &|r| r.clip.fingerprint.as_deref()),
            i64_col("clip_frames", &|r| r.clip.frames),
            i64_col("clip_copied_frames", &|r| r.clip.copied_frames),
            i64_col("clip_encoded_frames", &|r| r.clip.encoded_frames),
            str_col("clip_note", &|r| r.clip.note.as_deref()),
            str_col("frame_map", &|r| r.frame_map.as_deref()),
            str_col("content_crop", &|r| r.content_crop.as_deref()),
        ],
    )
}

pub fn rows_from_frame(df: &DataFrame) -> PolarsResult<Vec<ManifestRow>> {
    let columns = RowColumns::read(df)?;
    Ok((0..df.height()).map(|k| columns.row(k)).collect())
}

/// A string column of `df`, whatever type it holds.
fn string_column(df: &DataFrame, name: &str) -> PolarsResult<StringChunked> {
    Ok(df.column(name)?.cast(&DataType::String)?.str()?.clone())
}

/// An integer column of `df`, whatever type it holds.
fn int_column(df: &DataFrame, name: &str) -> PolarsResult<Int64Chunked> {
    Ok(df.column(name)?.cast(&DataType::Int64)?.i64()?.clone())
}

/// A float column of `df`, whatever type it holds.
fn float_column(df: &DataFrame, name: &str) -> PolarsResult<Float64Chunked> {
    Ok(df.column(name)?.cast(&DataType::Float64)?.f64()?.clone())
}

/// A column of lists of strings of `df`, a list per row (empty for a null).
fn list_column(df: &DataFrame, name: &str) -> PolarsResult<Vec<Vec<String>>> {
    let list = df.column(name)?.list()?.clone();
    let mut out = Vec::with_capacity(list.len());
    for v in list.amortized_iter() {
        let strings = match v {
            Some(series) => {
                let strings = series.as_ref().str()?;
                (0..strings.len())
                    .filter_map(|k| strings.get(k).map(str::to_string))
                    .collect()
            }
            None => Vec::new(),
        };
        out.push(strings);
    }
    Ok(out)
}

/// An integer column added after schema 1's first versions, all nulls where `df` lacks it.
fn later_int_column(df: &DataFrame, name: &str) -> PolarsResult<Int64Chunked> {
    if df.column(name).is_err() {
        Ok(Int64Chunked::full_null(name.into(), df.height()))
    } else {
        int_column(df, name)
    }
}

/// A string column added after schema 1's first versions, all nulls where `df` lacks it.
fn later_string_column(df: &DataFrame, name: &str) -> PolarsResult<StringChunked> {
    if df.column(name).is_err() {
        Ok(StringChunked::full_null(name.into(), df.height()))
    } else {
        string_column(df, name)
    }
}

/// The columns of a manifest's frame that its rows are read from.
struct RowColumns {
    clip_id: StringChunked,
    path: StringChunked,
    file_fingerprint: StringChunked,
    kind: StringChunked,
    time_base: StringChunked,
    label: StringChunked,
    split: StringChunked,
    group_key: StringChunked,
    size_bytes: Int64Chunked,
    start_frame: Int64Chunked,
    end_frame: Int64Chunked,
    start_pts: Int64Chunked,
    end_pts: Int64Chunked,
    width: Int64Chunked,
    height: Int64Chunked,
    rotation_deg: Int64Chunked,
    start_secs: Float64Chunked,
    end_secs: Float64Chunked,
    fps: Float64Chunked,
    motion: Float64Chunked,
    brightness: Float64Chunked,
    sharpness: Float64Chunked,
    tags: Vec<Vec<String>>,
    flags: Vec<Vec<String>>,
    stream_index: Int64Chunked,
    color_matrix: StringChunked,
    analysis_level: StringChunked,
    clip_file: StringChunked,
    clip_bytes: Int64Chunked,
    clip_hash: StringChunked,
    clip_fingerprint: StringChunked,
    clip_frames: Int64Chunked,
    clip_copied_frames: Int64Chunked,
    clip_encoded_frames: Int64Chunked,
    clip_note: StringChunked,
    frame_map: StringChunked,
    content_crop: StringChunked,
}

impl RowColumns {
    /// Read the row columns of `df`; the first one missing or of another shape is the error.
    fn read(df: &DataFrame) -> PolarsResult<Self> {
        Ok(Self {
            clip_id: string_column(df, "clip_id")?,
            path: string_column(df, "path")?,
            file_fingerprint: string_column(df, "file_fingerprint")?,
            kind: string_column(df, "kind")?,
            time_base: string_column(df, "time_base")?,
            label: string_column(df, "label")?,
            split: string_column(df, "split")?,
            group_key: string_column(df, "group_key")?,
            size_bytes: int_column(df, Measure::SizeBytes.manifest_column())?,
            start_frame: int_column(df, "start_frame")?,
            end_frame: int_column(df, "end_frame")?,
            start_pts: int_column(df, "start_pts")?,
            end_pts: int_column(df, "end_pts")?,
            width: int_column(df, Measure::Width.manifest_column())?,
            height: int_column(df, Measure::Height.manifest_column())?,
            rotation_deg: int_column(df, "rotation_deg")?,
            start_secs: float_column(df, "start_secs")?,
            end_secs: float_column(df, "end_secs")?,
            fps: float_column(df, Measure::Fps.manifest_column())?,
            motion: float_column(df, Measure::MotionMean.manifest_column())?,
            brightness: float_column(df, Measure::Brightness.manifest_column())?,
            sharpness: float_column(df, Measure::Sharpness.manifest_column())?,
            tags: list_column(df, "tags")?,
            flags: list_column(df, "flags")?,
            // Columns added after schema 1's first versions: absent in those, null in every row.
            stream_index: later_int_column(df, "stream_index")?,
            color_matrix: later_string_column(df, "color_matrix")?,
            analysis_level: later_string_column(df, "analysis_level")?,
            clip_file: later_string_column(df, "clip_file")?,
            clip_bytes: later_int_column(df, "clip_bytes")?,
            clip_hash: later_string_column(df, "clip_hash")?,
            clip_fingerprint: later_string_column(df, "clip_fingerprint")?,
            clip_frames: later_int_column(df, "clip_frames")?,
            clip_copied_frames: later_int_column(df, "clip_copied_frames")?,
            clip_encoded_frames: later_int_column(df, "clip_encoded_frames")?,
            clip_note: later_string_column(df, "clip_note")?,
            frame_map: later_string_column(df, "frame_map")?,
            content_crop: later_string_column(df, "content_crop")?,
        })
    }

    /// The row at index `k`.
    fn row(&self, k: usize) -> ManifestRow {
        let owned = |v: Option<&str>| v.map(str::to_string);
        ManifestRow {
            clip_id: owned(self.clip_id.get(k)).unwrap_or_default(),
            path: owned(self.path.get(k)).unwrap_or_default(),
            file_fingerprint: owned(self.file_fingerprint.get(k)).unwrap_or_default(),
            size_bytes: self.size_bytes.get(k).unwrap_or(0),
            kind: self
                .kind
                .get(k)
                .and_then(MediaKind::parse)
                .unwrap_or(MediaKind::Other),
            start_secs: self.start_secs.get(k).unwrap_or(0.0),
            end_secs: self.end_secs.get(k).unwrap_or(0.0),
            start_frame: self.start_frame.get(k),
            end_frame: self.end_frame.get(k),
            start_pts: self.start_pts.get(k),
            end_pts: self.end_pts.get(k),
            time_base: owned(self.time_base.get(k)),
            fps: self.fps.get(k),
            width: self.width.get(k),
            height: self.height.get(k),
            rotation_deg: self.rotation_deg.get(k),
            stream_index: self.stream_index.get(k),
            color_matrix: owned(self.color_matrix.get(k)),
            analysis_level: owned(self.analysis_level.get(k)),
            label: owned(self.label.get(k)),
            tags: self.tags[k].clone(),
            split: owned(self.split.get(k)),
            group_key: owned(self.group_key.get(k)).unwrap_or_default(),
            motion: self.motion.get(k),
            brightness: self.brightness.get(k),
            sharpness: self.sharpness.get(k),
            flags: self.flags[k].clone(),
            clip: ClipFileColumns {
                file: owned(self.clip_file.get(k)),
                bytes: self.clip_bytes.get(k),
                hash: owned(self.clip_hash.get(k)),
                fingerprint: owned(self.clip_fingerprint.get(k)),
                frames: self.clip_frames.get(k),
                copied_frames: self.clip_copied_frames.get(k),
                encoded_frames: self.clip_encoded_frames.get(k),
                note: owned(self.clip_note.get(k)),
            },
            frame_map: owned(self.frame_map.get(k)),
            content_crop: owned(self.content_crop.get(k)),
        }
    }
}

/// Parquet with the oldest Arrow compatibility level (`large_string`, not `string_view`):
/// pandas cannot convert lists of string views, and every reader takes large strings.
pub fn write_parquet(out: &mut BufWriter<File>, rows: &[ManifestRow]) -> Result<(), ManifestError> {
    use polars_parquet::write::{
        CompressionOptions, FileWriter, StatisticsOptions, Version, WriteOptions, row_group_iter,
        to_parquet_schema,
    };
    let mut df = frame_from_rows(rows)?;
    df.rechunk_mut();
    let arrow_schema = df.schema().to_arrow(CompatLevel::oldest());
    let encodings = polars_io::parquet::write::get_encodings(&arrow_schema);
    let parquet_schema = to_parquet_schema(&arrow_schema)?;
    let options = WriteOptions {
        statistics: StatisticsOptions::default(),
        version: Version::V1,
        compression: CompressionOptions::Snappy,
        data_page_size: None,
    };
    let mut writer = FileWriter::try_new(out, arrow_schema, options)?;
    for batch in df.iter_chunks(CompatLevel::oldest(), true) {
        let n = batch.len() as u64;
        let group = row_group_iter(
            batch,
            encodings.clone(),
            parquet_schema.fields().to_vec(),
            options,
        );
        writer.write(n, group)?;
    }
    writer.end(None)?;
    Ok(())
}

pub fn write_jsonl(out: &mut BufWriter<File>, rows: &[ManifestRow]) -> Result<(), ManifestError> {
    for r in rows {
        serde_json::to_writer(&mut *out, r).map_err(|e| ManifestError::Encode(e.to_string()))?;
        out.write_all(b"\n")
            .map_err(|e| ManifestError::Encode(e.to_string()))?;
    }
    Ok(())
}

/// CSV: lists (`tags`, `flags`) as `;`-joined text, nulls as empty cells.
pub fn write_csv(out: &mut BufWriter<File>, rows: &[ManifestRow]) -> Result<(), ManifestError> {
    let enc = |e: std::io::Error| ManifestError::Encode(e.to_string());
    writeln!(out, "{}", ManifestRow::COLUMNS.join(",")).map_err(enc)?;
    for r in rows {
        let v = serde_json::to_value(r).map_err(|e| ManifestError::Encode(e.to_string()))?;
        let cells: Vec<String> = ManifestRow::COLUMNS
            .iter()
            .map(|c| match &v[*c] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => csv_quote(s),
                serde_json::Value::Array(a) => csv_quote(
                    &a.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(";"),
                ),
                other => other.to_string(),
            })
            .collect();
        writeln!(out, "{}", cells.join(",")).map_err(enc)?;
    }
    Ok(())
}

fn csv_quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Read a manifest's Parquet file on the calling thread: not on polars' global thread pool,
/// whose threads a process forked after using it (Python's `multiprocessing`, PyTorch's
/// `DataLoader` workers) does not have, and would wait for forever.
/// xxh3-128 of a file's bytes, as hex.
pub fn file_hash(path: &Path) -> Result<String, ManifestError> {
    let bytes = std::fs::read(path).map_err(|e| ManifestError::io(path, e))?;
    Ok(format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes)))
}

/// Read a version's data file (`parquet` or `jsonl`), first checking its bytes against the
/// hash its version recorded, when it recorded one: a damaged file is an error that says so,
/// and no decoder sees it (polars' Parquet decoder aborts the process on some damaged files,
/// found by fuzzing: an allocation sized by a corrupt field).
pub fn read_checked(
    path: &Path,
    format: &str,
    hash: Option<&String>,
) -> Result<Vec<ManifestRow>, ManifestError> {
    if let Some(expected) = hash
        && file_hash(path)? != *expected
    {
        return Err(ManifestError::Invalid(format!(
            "{} is damaged: its bytes are not those its version recorded",
            path.display()
        )));
    }
    match format {
        "parquet" => read_parquet(path),
        _ => read_jsonl(path),
    }
}

pub fn read_parquet(path: &Path) -> Result<Vec<ManifestRow>, ManifestError> {
    let file = File::open(path).map_err(|e| ManifestError::io(path, e))?;
    // polars' Parquet decoder panics on some damaged files (an out-of-range dictionary
    // index, found by fuzzing): a damaged manifest is an error that names it, not a crash.
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let df = ParquetReader::new(file)
            .read_parallel(polars_io::parquet::read::ParallelStrategy::None)
            .finish()?;
        rows_from_frame(&df)
    }));
    match read {
        Ok(rows) => Ok(rows?),
        Err(_) => Err(ManifestError::Invalid(format!(
            "{} is damaged: its Parquet data does not decode",
            path.display()
        ))),
    }
}

pub fn read_jsonl(path: &Path) -> Result<Vec<ManifestRow>, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|e| ManifestError::io(path, e))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| ManifestError::Encode(e.to_string())))
        .collect()
}
