//! Tables' columns by name: one list per table drives its INSERT, its SELECT and the reads of
//! the rows, so a column cannot be written in one place and read from another, and a field
//! added to the model type does not compile until its column is listed.

use rusqlite::ToSql;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, Value, ValueRef};

use framecull_model::{
    AnalysisLevel, Clip, ClipOrigin, Crop, Decision, FieldOrder, Flag, FlagSource, MediaInfo,
    Metrics, Ratio, Severity,
};

/// A model field as SQLite holds it: integers that do not fit `i64`'s sign are stored as their
/// bits, a level and a ratio as their text. Text is written and read without a copy.
pub(crate) trait Stored: Sized {
    fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>>;
    fn load(v: ValueRef<'_>) -> FromSqlResult<Self>;
}

/// Types SQLite holds as they are.
macro_rules! stored_as_is {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                self.to_sql()
            }
            fn load(v: ValueRef<'_>) -> FromSqlResult<$t> {
                FromSql::column_result(v)
            }
        }
    )*};
}

stored_as_is!(
    bool,
    i64,
    f64,
    Option<bool>,
    Option<f64>,
    Option<i64>,
    Option<u32>,
    Option<u16>,
    Option<String>
);

impl Stored for u64 {
    fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(*self as i64))
    }
    fn load(v: ValueRef<'_>) -> FromSqlResult<u64> {
        i64::column_result(v).map(|v| v as u64)
    }
}

impl Stored for Option<u64> {
    fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Owned(
            self.map_or(Value::Null, |v| Value::Integer(v as i64)),
        ))
    }
    fn load(v: ValueRef<'_>) -> FromSqlResult<Option<u64>> {
        Option::<i64>::column_result(v).map(|v| v.map(|v| v as u64))
    }
}

/// Values stored as their text (`$text`, read back by `parse`), NULL for none; text that
/// does not parse reads as none.
macro_rules! stored_as_text_or_null {
    ($($t:ty => $text:expr),*) => {$(
        impl Stored for Option<$t> {
            fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::Owned(
                    self.map_or(Value::Null, |v| Value::Text($text(v))),
                ))
            }
            fn load(v: ValueRef<'_>) -> FromSqlResult<Option<$t>> {
                Ok(v.as_str_or_null()?.and_then(<$t>::parse))
            }
        }
    )*};
}

stored_as_text_or_null!(
    Ratio => Ratio::to_text,
    Crop => |c: Crop| c.to_string(),
    FieldOrder => |o: FieldOrder| o.as_str().to_string()
);

impl Stored for Ratio {
    fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Owned(Value::Text(self.to_text())))
    }
    /// Text that is not a ratio reads as 1/1.
    fn load(v: ValueRef<'_>) -> FromSqlResult<Ratio> {
        Ok(Ratio::parse(v.as_str()?).unwrap_or(Ratio { num: 1, den: 1 }))
    }
}

/// Enums stored as their names; a name this version does not know reads as `$unknown` (a
/// level: deep, as rows written before levels were).
macro_rules! stored_by_name {
    ($($t:ty => $unknown:expr),*) => {$(
        impl Stored for $t {
            fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
            fn load(v: ValueRef<'_>) -> FromSqlResult<$t> {
                Ok(<$t>::parse(v.as_str()?).unwrap_or($unknown))
            }
        }
    )*};
}

stored_by_name!(
    AnalysisLevel => AnalysisLevel::Deep,
    ClipOrigin => ClipOrigin::default(),
    Decision => Decision::default(),
    Severity => Severity::Warning,
    FlagSource => FlagSource::Rule
);

impl Stored for String {
    fn store(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.to_sql()
    }
    fn load(v: ValueRef<'_>) -> FromSqlResult<String> {
        FromSql::column_result(v)
    }
}

/// Field `field` of a row from column `at`.
pub(crate) fn load<T: Stored>(r: &rusqlite::Row, at: usize) -> rusqlite::Result<T> {
    let v = r.get_ref(at)?;
    T::load(v).map_err(|e| match e {
        FromSqlError::InvalidType => {
            let name = r.as_ref().column_name(at).unwrap_or_default().to_string();
            rusqlite::Error::InvalidColumnType(at, name, v.data_type())
        }
        other => rusqlite::Error::FromSqlConversionFailure(at, v.data_type(), Box::new(other)),
    })
}

/// The columns of a table that hold a model type's fields, from one list of fields (a field
/// whose column has another name says so: `level = "analysis_level"`). Makes the column
/// names, the values of a row to write and the reading of a row; the reading names every
/// field, so a field added to the type fails to compile until it is listed.
macro_rules! table_fields {
    ($names:ident, $values:ident, $read:ident, $ty:ident { $($field:ident $(= $column:literal)?),* $(,)? }) => {
        /// The columns, in the order [`$values`] writes and [`$read`] reads them.
        pub(crate) const $names: &[&str] = &[$(table_fields!(@column $field $($column)?)),*];

        /// The fields' values, in [`$names`]' order.
        pub(crate) fn $values(v: &$ty) -> rusqlite::Result<Vec<ToSqlOutput<'_>>> {
            Ok(vec![$(Stored::store(&v.$field)?),*])
        }

        /// The type from a row that holds [`$names`] from column `first` on, in order.
        pub(crate) fn $read(r: &rusqlite::Row, first: usize) -> rusqlite::Result<$ty> {
            let mut at = first;
            let mut next = || {
                at += 1;
                at - 1
            };
            // Fields are read in the order written here, which is the list's.
            Ok($ty {
                $($field: load(r, next())?),*
            })
        }
    };
    (@column $field:ident) => { stringify!($field) };
    (@column $field:ident $column:literal) => { $column };
}

table_fields!(METRICS_FIELDS, metrics_values, read_metrics, Metrics {
    level = "analysis_level",
    decoded_frames,
    decode_errors,
    first_error,
    decoder_messages,
    first_message,
    repeat_frames,
    discarded_frames,
    undecodable,
    no_decoder,
    timed_out,
    motion_mean,
    motion_p95,
    static_share,
    brightness,
    brightness_p5,
    brightness_p95,
    sharpness,
    entropy,
    colorfulness,
    black_share,
    frozen_share,
    decoded_duration_secs,
    pts_backwards,
    pts_repeats,
    vfr,
    interval_cv,
    resolution_changes,
    truncated,
    suspect,
    structure_error,
    phash,
    content_hash,
    content_crop,
    field_order,
    declared_field_order,
    fields_tested,
    tff_frames,
    bff_frames,
    progressive_frames,
    repeated_fields,
});

table_fields!(MEDIA_FIELDS, media_values, read_media, MediaInfo {
    container,
    codec,
    profile,
    pix_fmt,
    width,
    height,
    rotation_deg,
    sample_aspect_ratio = "sar",
    fps,
    fps_base,
    time_base,
    start_secs,
    duration_secs,
    frame_count,
    bit_rate,
    has_audio,
    exif_orientation,
    stream_index,
    color_space,
});

table_fields!(
    CLIP_FIELDS,
    clip_values,
    read_clip,
    Clip {
        id,
        item_id,
        start_pts,
        end_pts,
        time_base,
        start_secs,
        end_secs,
        start_frame,
        end_frame,
        label,
        origin,
        decision,
    }
);

table_fields!(
    FLAG_FIELDS,
    flag_values,
    read_flag,
    Flag {
        code,
        severity,
        reason,
        source,
    }
);

/// `column, column, ...` of `names`, each prefixed by `prefix` (`m.`).
pub(crate) fn list<'a>(names: impl IntoIterator<Item = &'a &'a str>, prefix: &str) -> String {
    names
        .into_iter()
        .map(|n| format!("{prefix}{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where each of `names` is among a prepared statement's columns: rows read by name, each
/// name looked up once a statement rather than once a row.
pub(crate) fn positions<const N: usize>(
    stmt: &rusqlite::Statement,
    names: [&str; N],
) -> rusqlite::Result<[usize; N]> {
    let mut at = [0; N];
    for (at, name) in at.iter_mut().zip(names) {
        *at = stmt.column_index(name)?;
    }
    Ok(at)
}

/// `?1, ?2, ...` for `n` values.
pub(crate) fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}
