//! Shared types used by every layer. Plain data, in one file per seam; everything is
//! re-exported here, so `crate::X` names each type.
//!
//! - `reading`: how a video is read: [`StreamChoice`], the stream, and [`Matrix`] and
//!   [`MatrixGuess`], the YUV matrix;
//! - `item`: ids, [`MediaKind`], [`ItemStatus`], [`MediaInfo`], [`Probe`], [`Item`];
//! - `metrics`: [`Metrics`], [`Curves`], [`Flag`] and its [`Severity`] and [`FlagSource`],
//!   [`DupInfo`];
//! - `review`: [`Decision`], [`Review`], [`Clip`] and [`ClipOrigin`], [`Edit`];
//! - `frames`: [`FrameView`], [`FrameTable`], [`SeekReference`], [`FrameTimeline`];
//! - `measure`: [`Measure`], the numbers the histograms, table, filters and statistics share;
//! - `units`: [`Ratio`], [`human_bytes`], [`count`] (`1 file`, `2 files`);
//! - `names`: [`path_text`] and [`path_bytes`], any file name as reversible text;
//! - `faults`: [`faults_on`], the switch for the tests' fault injection, and [`slow_down`].

/// The package version and the git revision it was built from (`framecull --version`, the
/// Python package's `framecull.__version__`, a shard's `shard.json`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("FRAMECULL_GIT_REV"),
    ")"
);

mod faults;
mod flag_codes;
mod frames;
mod item;
mod measure;
mod metrics;
mod names;
mod reading;
mod review;
mod units;

pub use faults::{FAULTS_ENV, SLOW_ANALYSIS_ENV, SLOW_SHARD_ENV, faults_on, slow_down};
pub use flag_codes::{FlagCode, FlagSpec, OUTLIER, is_flag_code, outlier_code, outlier_measure};
pub use frames::{
    ClipBounds, FrameRecord, FrameSpecError, FrameTable, FrameTimeline, FrameView,
    PACKET_HEADER_BYTES, PacketRecord, PacketScan, Plane, SampledDecode, SeekReference, TimeOrder,
    blocks16, repeat_packet_bytes,
};
pub use item::{
    Item, ItemId, ItemStatus, MediaInfo, MediaKind, OtherFile, OtherStatus, Probe,
    orientation_turns,
};
pub use measure::{Measure, MeasureSpec, Measured, OutlierTest, Stored};
pub use metrics::{
    AnalysisLevel, Crop, Curves, Cut, DupInfo, FieldOrder, Flag, FlagSource, Metrics, Severity,
};
pub use names::{local_path, path_as_text, path_bytes, path_of_text, path_text, text_of_path};
pub use reading::{Matrix, MatrixGuess, ReadAs, StreamChoice};
pub use review::{Clip, ClipOrigin, Decision, Edit, Review, label_of};
pub use units::{
    Ratio, count, human_bit_rate, human_bytes, human_duration, human_number, noun_for,
};
