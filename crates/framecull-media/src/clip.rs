//! Clip files that hold exactly a clip's frames. [`write_clip`] writes frames `[start, end)`
//! of a video (the frames a decode from the start shows at those indices) to an MP4 of their
//! own: by smart cut where the clip holds whole closed GOPs of an H.264, HEVC, VP9 or AV1 source
//! (their packets copied, the ends encoded again with the source's encoder: [`smart`],
//! [`join`]), else read as the loader reads them (through checked seeks) and encoded with
//! libx264; every encoded frame measured (by x264 itself, or decoded again) and held within
//! 40 dB PSNR of the source's. Timestamps run from zero (a variable-rate source keeps its intervals), with
//! the source's rotation, sample aspect ratio and colour description. The file appears under
//! its name only when complete.

use std::path::{Path, PathBuf};

use ff::ffi;
use ffmpeg_next as ff;

use crate::decode::DecodeError;
use crate::ffmpeg_log;
use crate::nal::Family;
use crate::picture::Frame;
use crate::reader::{ReadError, ReadTimes, VideoReader};
use crate::source::Source;
use framecull_model::{ClipBounds, ReadAs, SeekReference};

mod audio;
mod codec;
mod encode;
mod intra;
mod join;
mod smart;

use encode::Encoder;

/// The constant rate factors parts of clips are encoded at, tried in turn until every frame
/// is within [`MIN_PSNR`] of its picture. 20 holds a source at x264's default quality (CRF
/// 23) at 44 to 45 dB with about 1.3 times its bytes for the frames encoded; grainier or
/// harder content (an MPEG-2 city at night: 40.0 dB at 12) takes the next; 0 is lossless.
const CRF_LADDER: [u32; 4] = [20, 14, 8, 0];

/// The floor for encoded frames, in dB, each measured against the picture given to the
/// encoder ([`Check`](encode::Check)): the frame rule's 40 and one more, for a reader that
/// converts the source's pictures otherwise (10-bit to 8-bit, full-range luma).
const MIN_PSNR: f64 = 41.0;

#[derive(Debug, thiserror::Error)]
pub enum ClipError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Open(#[from] DecodeError),
    #[error("the clip holds none of the file's {frames} frames")]
    NoFrames { frames: usize },
    #[error("the picture size changes within the clip, from {from:?} to {to:?}")]
    SizeChange { from: (u32, u32), to: (u32, u32) },
    #[error("no encoder {0} in this FFmpeg")]
    NoEncoder(&'static str),
    #[error("{what}: {message}")]
    Encode { what: &'static str, message: String },
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("an encoded frame is {psnr:.1} dB from its picture, under {MIN_PSNR} dB")]
    Quality { psnr: f64 },
}

/// What a clip file holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClipWritten {
    /// Frames in the file: the clip's length.
    pub frames: u64,
    /// Of them, frames encoded again from the decoded pictures, and packets copied as they
    /// are in the source.
    pub reencoded: u64,
    pub copied: u64,
    pub bytes: u64,
    /// Why every frame was encoded again (no packet copied), when none was copied.
    pub note: Option<String>,
}

/// What the clip keeps of its source's video stream.
struct Described {
    sample_aspect: ff::Rational,
    frame_rate: Option<ff::Rational>,
    primaries: ffi::AVColorPrimaries,
    transfer: ffi::AVColorTransferCharacteristic,
    /// The display matrix (rotation), as the source stores it.
    display_matrix: Option<Vec<u8>>,
}

/// What the clip keeps of the stream `reader` reads (from its open demuxer: nothing is read
/// again).
fn describe(reader: &VideoReader) -> Result<Described, ClipError> {
    let stream = reader.stream().ok_or(DecodeError::NoVideo)?;
    let rate = stream.avg_frame_rate();
    // SAFETY: the stream and its codec parameters are valid while the reader's demuxer is
    // open; the side data returned is owned by the stream and copied here.
    unsafe {
        let st = stream.as_ptr();
        let par = (*st).codecpar;
        // The container's aspect (an MP4's `pasp`, Matroska's display size) over the codec's.
        let container_sar: ff::Rational = (*st).sample_aspect_ratio.into();
        let mut size: usize = 0;
        let matrix = ffi::av_stream_get_side_data(
            st,
            ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
            &mut size,
        );
        Ok(Described {
            sample_aspect: if container_sar.numerator() > 0 {
                container_sar
            } else {
                (*par).sample_aspect_ratio.into()
            },
            frame_rate: (rate.numerator() > 0 && rate.denominator() > 0).then_some(rate),
            primaries: (*par).color_primaries,
            transfer: (*par).color_trc,
            display_matrix: (!matrix.is_null() && size >= 36)
                .then(|| std::slice::from_raw_parts(matrix, size).to_vec()),
        })
    }
}

/// Write the frames of the clip `bounds` (as the loader finds them: [`ClipBounds::range_in`])
/// of the video stream `read.stream` of `source` to the MP4 file `out`, through `out`'s name
/// with `.part` added (renamed when complete, so that `out` never holds half a clip). Seeks
/// land only on the keyframes `reference` (the deep pass's frame table) has, where given.
pub fn write_clip(
    source: &Source,
    read: ReadAs,
    bounds: &ClipBounds,
    reference: Option<&SeekReference>,
    out: &Path,
) -> Result<ClipWritten, ClipError> {
    ClipSource::open(source, read, reference)?.write(bounds, out)
}

/// A video open for writing clips of it, one after another: its frames indexed once (a pass
/// over every packet of the file) for all of them.
pub struct ClipSource {
    source: Source,
    reader: VideoReader,
    described: Described,
    /// Where every frame's packet is copied as it is (an intra-only codec), the container.
    whole: Option<intra::Container>,
}

impl ClipSource {
    /// Open the video stream `read.stream` of `source`; seeks land only on the keyframes
    /// `reference` (the deep pass's frame table) has, where given.
    pub fn open(
        source: &Source,
        read: ReadAs,
        reference: Option<&SeekReference>,
    ) -> Result<ClipSource, ClipError> {
        ffmpeg_log::init();
        let mut reader = VideoReader::open_as(source, 1, read)?;
        let described = describe(&reader)?;
        if let Some(reference) = reference {
            reader.set_reference(reference);
        }
        Ok(ClipSource {
            source: source.clone(),
            whole: intra::copies_whole(&reader),
            reader,
            described,
        })
    }

    /// The extension of its clip files: `mp4`, or the container that holds an intra-only
    /// codec's packets copied (`mov`, `mkv`) where MP4 does not.
    pub fn extension(&self) -> &'static str {
        self.whole.unwrap_or(intra::Container::MP4).extension
    }

    /// Write the frames of the clip `bounds` to `out`, as [`write_clip`] does.
    pub fn write(&mut self, bounds: &ClipBounds, out: &Path) -> Result<ClipWritten, ClipError> {
        let part = part_path(out);
        let (reader, described, whole) = (&mut self.reader, &self.described, self.whole);
        let written = match write_any(reader, &self.source, bounds, described, whole, &part) {
            // A decode from the start that ends early (a truncated file, a frame count the
            // packets overstate) shortens the file's frames: the clip is what is left of it.
            Err(ClipError::Read(ReadError::Missing(_))) => {
                write_any(reader, &self.source, bounds, described, whole, &part)
            }
            other => other,
        }
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&part);
        })?;
        finish_file(&part, out, written)
    }
}

/// Put the complete clip `part` under its name `out`.
fn finish_file(part: &Path, out: &Path, written: ClipWritten) -> Result<ClipWritten, ClipError> {
    let part = part.to_path_buf();
    // The bytes on disk before the name: a crash leaves the part file, never a short clip.
    let file = std::fs::File::open(&part).map_err(|e| ClipError::Io(part.clone(), e))?;
    file.sync_all()
        .map_err(|e| ClipError::Io(part.clone(), e))?;
    std::fs::rename(&part, out).map_err(|e| ClipError::Io(out.to_path_buf(), e))?;
    if let Some(dir) = out.parent().and_then(|d| std::fs::File::open(d).ok()) {
        let _ = dir.sync_all();
    }
    let bytes = std::fs::metadata(out)
        .map_err(|e| ClipError::Io(out.to_path_buf(), e))?
        .len();
    Ok(ClipWritten { bytes, ..written })
}

/// Write the clip to `part`: every frame's packet copied where the codec is intra-only
/// (`whole`: the container), by smart cut where a GOP of it can be copied, else encoded
/// whole, at the first rate factor of [`CRF_LADDER`] that keeps every encoded frame within
/// [`MIN_PSNR`]. A copy that fails for any reason but a read of the source (a stream it does
/// not expect) leaves the clip to the whole encoding.
fn write_any(
    reader: &mut VideoReader,
    source: &Source,
    bounds: &ClipBounds,
    described: &Described,
    whole: Option<intra::Container>,
    part: &Path,
) -> Result<ClipWritten, ClipError> {
    let frames = bounds.range_in(reader.frame_pts(), reader.time_base());
    if frames.is_empty() {
        return Err(ClipError::NoFrames {
            frames: reader.frame_pts().len(),
        });
    }
    let sound = read_sound(reader, source, &frames, part);
    let sound = sound.as_ref();
    let copied_whole = match whole {
        Some(container) => {
            match intra::write(
                reader,
                source,
                frames.clone(),
                described,
                sound,
                part,
                container,
            ) {
                Ok(copied) => {
                    return Ok(ClipWritten {
                        frames: copied,
                        reencoded: 0,
                        copied,
                        bytes: 0,
                        note: None,
                    });
                }
                Err(e @ ClipError::Read(_)) => return Err(e),
                Err(e) => {
                    tracing::debug!("{}: no copy of every frame: {e}", part.display());
                    let _ = std::fs::remove_file(part);
                    Some(format!("the copy of every frame failed: {e}"))
                }
            }
        }
        None => None,
    };
    let plan = match copied_whole {
        Some(why) => smart::Plan::encode_all(frames.clone(), why),
        None => smart::plan_clip(reader, source, frames.clone()).unwrap_or_else(|e| {
            tracing::debug!("{}: no smart cut: {e}", part.display());
            smart::Plan::encode_all(frames.clone(), format!("no smart cut: {e}"))
        }),
    };
    write_plan(reader, plan, &frames, described, sound, part)
}

/// The sound of frames `frames` of `reader`'s video, read again from `source`; `None` where
/// the video has none, or it cannot be read (a warning says so, naming `part`).
fn read_sound(
    reader: &VideoReader,
    source: &Source,
    frames: &std::ops::Range<usize>,
    part: &Path,
) -> Option<audio::Sound> {
    // The sound of the same span, on the container's clock: from the first frame's time to
    // the end of the last one's.
    let tb = reader.time_base().as_f64();
    let pts = reader.frame_pts();
    let span = pts[frames.start] as f64 * tb
        ..(pts[frames.end - 1] + frame_duration(pts, frames.end - 1)) as f64 * tb;
    if reader.has_audio() {
        audio::Sound::read(source, span).unwrap_or_else(|e| {
            tracing::warn!(
                "{}: the clip is written without its sound: {e}",
                part.display()
            );
            None
        })
    } else {
        None
    }
}

/// Write `plan` for frames `frames` to `part`, at the first rate factor of [`CRF_LADDER`]
/// that keeps every encoded frame within [`MIN_PSNR`]; a smart cut, or an encoder other than
/// x264, that fails is replaced by x264 encoding the clip whole, from the ladder's top.
fn write_plan(
    reader: &mut VideoReader,
    mut plan: smart::Plan,
    frames: &std::ops::Range<usize>,
    described: &Described,
    sound: Option<&audio::Sound>,
    part: &Path,
) -> Result<ClipWritten, ClipError> {
    let mut rungs = CRF_LADDER.iter().peekable();
    while let Some(&crf) = rungs.next() {
        let result = join::write(reader, &plan, described, sound, part, crf);
        match result {
            Ok(cut) => {
                return Ok(ClipWritten {
                    frames: cut.reencoded + cut.copied,
                    reencoded: cut.reencoded,
                    copied: cut.copied,
                    bytes: 0,
                    note: plan.why_encoded,
                });
            }
            Err(ClipError::Quality { psnr }) if rungs.peek().is_some() => {
                tracing::debug!(
                    "{}: a frame at {psnr:.1} dB at CRF {crf}: encoding again",
                    part.display()
                );
            }
            Err(e @ ClipError::Read(_)) => return Err(e),
            // A smart cut, or an encoder other than x264, that failed (an option this build
            // refuses, a frame still under the floor losslessly): x264, whole.
            Err(e) if plan.copies() || plan.codec != smart::Codec::Nal(Family::H264) => {
                tracing::debug!(
                    "{}: smart cut failed, encoding the clip whole: {e}",
                    part.display()
                );
                plan = smart::Plan::encode_all(frames.clone(), format!("smart cut failed: {e}"));
                rungs = CRF_LADDER.iter().peekable();
            }
            Err(e) => return Err(e),
        }
        let _ = std::fs::remove_file(part);
    }
    Err(ClipError::NoFrames {
        frames: reader.frame_pts().len(),
    })
}

/// How long frame `i` of frames shown at `pts` shows: to the next frame's time (the last: as
/// long as the one before it, or one tick).
fn frame_duration(pts: &[i64], i: usize) -> i64 {
    match (pts.get(i + 1), i.checked_sub(1).and_then(|p| pts.get(p))) {
        (Some(next), _) => next - pts[i],
        (None, Some(before)) => pts[i] - before,
        (None, None) => 1,
    }
    .max(1)
}

/// Decode `frames` with `reader` and hand each picture to `each`, in order, until it fails.
fn each_picture(
    reader: &mut VideoReader,
    frames: std::ops::Range<usize>,
    each: &mut dyn FnMut(&Frame) -> Result<(), ClipError>,
) -> Result<(), ClipError> {
    let wanted: Vec<usize> = frames.collect();
    let mut failure: Option<ClipError> = None;
    // Each picture's buffer goes back to the reader for the next (fresh pages for every
    // frame otherwise).
    reader.read_recycling(
        &wanted,
        None,
        &mut ReadTimes::default(),
        &mut |_, picture| {
            if failure.is_none() {
                failure = each(&picture).err();
            }
            Some(picture.data)
        },
    )?;
    failure.map_or(Ok(()), Err)
}

/// Where a clip is written before it is complete: `out`'s name with `.part` added, in the
/// same folder (so that the rename is atomic).
pub fn part_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    out.with_file_name(name)
}

fn encode_error(what: &'static str) -> impl Fn(ff::Error) -> ClipError {
    move |e| ClipError::Encode {
        what,
        message: match ffmpeg_log::take_last_error() {
            Some(d) => format!("{e} ({d})"),
            None => e.to_string(),
        },
    }
}

/// Give an output stream the source's sample aspect ratio and display matrix (rotation).
fn keep_stream_description(ost: &mut ff::format::stream::StreamMut<'_>, described: &Described) {
    // SAFETY: the stream belongs to an output context that has not written its header; the
    // side data allocated is owned by the stream and filled whole.
    unsafe {
        let st = ost.as_mut_ptr();
        (*st).sample_aspect_ratio = described.sample_aspect.into();
        if let Some(matrix) = &described.display_matrix {
            let data = ffi::av_stream_new_side_data(
                st,
                ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
                matrix.len(),
            );
            if !data.is_null() {
                std::ptr::copy_nonoverlapping(matrix.as_ptr(), data, matrix.len());
            }
        }
    }
}
