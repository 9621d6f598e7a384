//! Clip files that hold exactly a clip's frames. [`write_clip`] writes frames `[start, end)`
//! of a video (the frames a decode from the start shows at those indices) to an MP4 of their
//! own: by smart cut where the clip holds whole closed GOPs of an H.264 source (their packets
//! copied, the ends encoded again: [`smart`]), else read as the loader reads them (through
//! checked seeks) and encoded with libx264 at a quality that keeps them within 40 dB PSNR of
//! the source's. Timestamps run from zero (a variable-rate source keeps its intervals), with
//! the source's rotation, sample aspect ratio and colour description. The file appears under
//! its name only when complete.

use std::path::{Path, PathBuf};

use ff::ffi;
use ff::format::Pixel;
use ff::software::scaling;
use ffmpeg_next as ff;

use crate::decode::DecodeError;
use crate::ffmpeg_log;
use crate::picture::Matrix;
use crate::reader::{Picture, ReadError, ReadTimes, VideoReader};
use crate::source::Source;
use framecull_model::{ClipBounds, ReadAs, SeekReference};

mod smart;

/// The constant rate factor the clips are encoded at: grainy 720p footage comes out at 45 to
/// 50 dB PSNR against its source (the frame rule asks for 40).
const CRF: &str = "12";

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
}

/// What a clip file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClipWritten {
    /// Frames in the file: the clip's length.
    pub frames: u64,
    /// Of them, frames encoded again from the decoded pictures, and packets copied as they
    /// are in the source.
    pub reencoded: u64,
    pub copied: u64,
    pub bytes: u64,
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
    ffmpeg_log::init();
    let mut reader = VideoReader::open_as(source, 1, read)?;
    let described = describe(&reader)?;
    if let Some(reference) = reference {
        reader.set_reference(reference);
    }
    let part = part_path(out);
    let written = match write_any(&mut reader, source, bounds, &described, &part) {
        // A decode from the start that ends early (a truncated file, a frame count the
        // packets overstate) shortens the file's frames: the clip is what is left of it.
        Err(ClipError::Read(ReadError::Missing(_))) => {
            write_any(&mut reader, source, bounds, &described, &part)
        }
        other => other,
    }
    .inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })?;
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

/// Write the clip to `part`: by smart cut where a GOP of it can be copied, else encoded
/// whole. A smart cut that fails for any reason but a read of the source (a stream it does
/// not expect) leaves the clip to the whole encoding.
fn write_any(
    reader: &mut VideoReader,
    source: &Source,
    bounds: &ClipBounds,
    described: &Described,
    part: &Path,
) -> Result<ClipWritten, ClipError> {
    let frames = bounds.range_in(reader.frame_pts(), reader.time_base());
    match smart::write(reader, source, frames, described, part) {
        Ok(Some(cut)) => {
            return Ok(ClipWritten {
                frames: cut.reencoded + cut.copied,
                reencoded: cut.reencoded,
                copied: cut.copied,
                bytes: 0,
            });
        }
        Ok(None) => {}
        Err(e @ ClipError::Read(_)) => return Err(e),
        Err(e) => {
            tracing::debug!(
                "{}: smart cut failed, encoding the clip whole: {e}",
                part.display()
            );
            let _ = std::fs::remove_file(part);
        }
    }
    let frames = encode(reader, bounds, described, part)?;
    Ok(ClipWritten {
        frames,
        reencoded: frames,
        copied: 0,
        bytes: 0,
    })
}

/// Decode the clip's frames with `reader` and encode them into `part`: the frames written.
fn encode(
    reader: &mut VideoReader,
    bounds: &ClipBounds,
    described: &Described,
    part: &Path,
) -> Result<u64, ClipError> {
    let pts = reader.frame_pts().to_vec();
    let frames = bounds.range_in(&pts, reader.time_base());
    if frames.is_empty() {
        return Err(ClipError::NoFrames { frames: pts.len() });
    }
    let tb = reader.time_base();
    let time_base = ff::Rational::new(tb.num, tb.den);
    let mut writer: Option<Writer> = None;
    let first_pts = pts[frames.start];
    each_picture(reader, frames, &mut |picture| {
        let w = match writer.as_mut() {
            Some(w) => w,
            None => writer.insert(Writer::open(part, picture, time_base, described)?),
        };
        let index = picture.index;
        w.push(picture, pts[index] - first_pts, frame_duration(&pts, index))
    })?;
    let writer = writer.ok_or(ClipError::NoFrames { frames: pts.len() })?;
    writer.finish()
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
    each: &mut dyn FnMut(&Picture) -> Result<(), ClipError>,
) -> Result<(), ClipError> {
    let wanted: Vec<usize> = frames.collect();
    let mut failure: Option<ClipError> = None;
    reader.read(
        &wanted,
        None,
        &mut ReadTimes::default(),
        &mut |_, picture| {
            if failure.is_none() {
                failure = each(&picture).err();
            }
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

/// libx264 fed a clip's pictures, converted to its 4:2:0 where they are RGB.
struct Encoder {
    /// The pictures' size (the first's).
    size: (u32, u32),
    codec: ff::Codec,
    encoder: ff::encoder::Video,
    frame: ff::frame::Video,
    /// Converts RGB pictures (sources that are not 4:2:0) to the encoder's 4:2:0.
    scaler: Option<(scaling::Context, ff::frame::Video)>,
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

impl Encoder {
    /// An encoder for pictures like `first`, timestamps in `time_base`. With `global_header`
    /// its parameter sets go to the stream's header (an MP4 of its own); without, they lead
    /// every keyframe in the packets, in Annex B form (a clip joined from parts).
    fn open(
        first: &Picture,
        time_base: ff::Rational,
        described: &Described,
        global_header: bool,
    ) -> Result<Encoder, ClipError> {
        let codec = ff::encoder::find_by_name("libx264").ok_or(ClipError::NoEncoder("libx264"))?;
        let mut enc = ff::codec::context::Context::new_with_codec(codec)
            .encoder()
            .video()
            .map_err(encode_error("encoder context"))?;
        // x264 wants even sizes for 4:2:0.
        let (width, height) = (first.width & !1, first.height & !1);
        enc.set_width(width.max(2));
        enc.set_height(height.max(2));
        enc.set_format(Pixel::YUV420P);
        enc.set_time_base(time_base);
        enc.set_frame_rate(described.frame_rate);
        enc.set_aspect_ratio(described.sample_aspect);
        if global_header {
            enc.set_flags(ff::codec::Flags::GLOBAL_HEADER);
        }
        // SAFETY: plain fields of the encoder context, set before it is opened.
        unsafe {
            let ctx = enc.as_mut_ptr();
            (*ctx).color_primaries = described.primaries;
            (*ctx).color_trc = described.transfer;
            // The pictures' own matrix and range: RGB pictures are converted here to
            // limited-range BT.601, and the reader hands other YUV layouts over as limited or
            // full 4:2:0 as it says.
            (*ctx).colorspace = if first.yuv420 {
                match first.matrix {
                    Matrix::Bt601 => ffi::AVColorSpace::AVCOL_SPC_SMPTE170M,
                    Matrix::Bt709 => ffi::AVColorSpace::AVCOL_SPC_BT709,
                    Matrix::Bt2020 => ffi::AVColorSpace::AVCOL_SPC_BT2020_NCL,
                }
            } else {
                ffi::AVColorSpace::AVCOL_SPC_SMPTE170M
            };
            (*ctx).color_range = if first.yuv420 && first.full_range {
                ffi::AVColorRange::AVCOL_RANGE_JPEG
            } else {
                ffi::AVColorRange::AVCOL_RANGE_MPEG
            };
        }
        let mut opts = ff::Dictionary::new();
        opts.set("preset", "veryfast");
        opts.set("crf", CRF);
        opts.set("x264-params", "log-level=error");
        let encoder = enc.open_with(opts).map_err(encode_error("encoder"))?;
        let scaler = if first.yuv420 {
            None
        } else {
            // Odd sizes are cropped by a column or a row, as the 4:2:0 pictures are.
            let ctx = scaling::Context::get(
                Pixel::RGB24,
                width.max(2),
                height.max(2),
                Pixel::YUV420P,
                width.max(2),
                height.max(2),
                scaling::Flags::BICUBIC,
            )
            .map_err(encode_error("colour conversion"))?;
            Some((
                ctx,
                ff::frame::Video::new(Pixel::RGB24, width.max(2), height.max(2)),
            ))
        };
        Ok(Encoder {
            size: (first.width, first.height),
            codec,
            encoder,
            frame: ff::frame::Video::new(Pixel::YUV420P, width.max(2), height.max(2)),
            scaler,
        })
    }

    /// Send `picture`, shown at `pts`, to the encoder.
    fn send(&mut self, picture: &Picture, pts: i64) -> Result<(), ClipError> {
        let size = (picture.width, picture.height);
        if size != self.size {
            return Err(ClipError::SizeChange {
                from: self.size,
                to: size,
            });
        }
        match &mut self.scaler {
            None => copy_yuv420(picture, &mut self.frame),
            Some((ctx, rgb)) => {
                copy_rows(
                    &picture.data,
                    picture.width as usize * 3,
                    picture.height as usize,
                    rgb.stride(0),
                    rgb.data_mut(0),
                );
                ctx.run(rgb, &mut self.frame)
                    .map_err(encode_error("colour conversion"))?;
            }
        }
        self.frame.set_pts(Some(pts));
        self.encoder
            .send_frame(&self.frame)
            .map_err(encode_error("frame"))
    }

    /// The next packet the encoder has ready, if any.
    fn receive(&mut self) -> Option<ff::Packet> {
        let mut packet = ff::Packet::empty();
        self.encoder
            .receive_packet(&mut packet)
            .ok()
            .map(|()| packet)
    }

    /// No more pictures: the packets still in the encoder follow from [`Encoder::receive`].
    fn send_eof(&mut self) -> Result<(), ClipError> {
        self.encoder
            .send_eof()
            .map_err(encode_error("end of stream"))
    }
}

/// An MP4 being written: libx264 fed the clip's pictures.
struct Writer {
    octx: ff::format::context::Output,
    encoder: Encoder,
    enc_tb: ff::Rational,
    ost_tb: ff::Rational,
    durations: std::collections::HashMap<i64, i64>,
    frames: u64,
}

impl Writer {
    fn open(
        part: &Path,
        first: &Picture,
        time_base: ff::Rational,
        described: &Described,
    ) -> Result<Writer, ClipError> {
        let mut octx =
            ff::format::output_as(&part, "mp4").map_err(encode_error("output container"))?;
        let encoder = Encoder::open(first, time_base, described, true)?;
        {
            let mut ost = octx
                .add_stream(encoder.codec)
                .map_err(encode_error("stream"))?;
            ost.set_parameters(&encoder.encoder);
            ost.set_time_base(time_base);
            keep_stream_description(&mut ost, described);
        }
        let mut mux = ff::Dictionary::new();
        mux.set("movflags", "faststart");
        octx.write_header_with(mux)
            .map_err(encode_error("header"))?;
        let ost_tb = octx.stream(0).map_or(time_base, |s| s.time_base());
        Ok(Writer {
            octx,
            encoder,
            enc_tb: time_base,
            ost_tb,
            durations: std::collections::HashMap::new(),
            frames: 0,
        })
    }

    /// Encode `picture`, shown at `pts` (from the clip's start) for `duration`.
    fn push(&mut self, picture: &Picture, pts: i64, duration: i64) -> Result<(), ClipError> {
        self.encoder.send(picture, pts)?;
        self.durations.insert(pts, duration);
        self.frames += 1;
        self.drain()
    }

    fn drain(&mut self) -> Result<(), ClipError> {
        while let Some(mut packet) = self.encoder.receive() {
            packet.set_stream(0);
            if let Some(d) = packet.pts().and_then(|p| self.durations.remove(&p)) {
                packet.set_duration(d);
            }
            packet.rescale_ts(self.enc_tb, self.ost_tb);
            packet
                .write_interleaved(&mut self.octx)
                .map_err(encode_error("packet"))?;
        }
        Ok(())
    }

    /// Flush the encoder and close the file: the frames written.
    fn finish(mut self) -> Result<u64, ClipError> {
        self.encoder.send_eof()?;
        self.drain()?;
        self.octx.write_trailer().map_err(encode_error("trailer"))?;
        Ok(self.frames)
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

/// Copy a tightly packed 4:2:0 picture into `frame` (its size, or one pixel less where the
/// picture's is odd).
fn copy_yuv420(picture: &Picture, frame: &mut ff::frame::Video) {
    let (w, h) = (picture.width as usize, picture.height as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let planes = [
        (0, w, h, 0),
        (1, cw, ch, w * h),
        (2, cw, ch, w * h + cw * ch),
    ];
    for (plane, width, height, offset) in planes {
        let stride = frame.stride(plane);
        let rows = frame.plane_height(plane) as usize;
        copy_rows(
            &picture.data[offset..],
            width,
            height.min(rows),
            stride,
            frame.data_mut(plane),
        );
    }
}

/// Copy `rows` rows of `row_bytes`-wide packed data into a plane of `stride` bytes a row
/// (each row cut to the stride where the plane is narrower).
fn copy_rows(src: &[u8], row_bytes: usize, rows: usize, stride: usize, dst: &mut [u8]) {
    let n = row_bytes.min(stride);
    for r in 0..rows {
        let (from, to) = (r * row_bytes, r * stride);
        if from + n > src.len() || to + n > dst.len() {
            break;
        }
        dst[to..to + n].copy_from_slice(&src[from..from + n]);
    }
}
