//! Pictures encoded again with libx264 (or libx265), each encoded frame measured (by x264
//! itself, or decoded again) against the picture it was made from.

use ff::ffi;
use ff::format::Pixel;
use ff::software::scaling;
use ffmpeg_next as ff;

use super::{ClipError, Described, MIN_PSNR, encode_error, smart};
use crate::ffmpeg_log;
use crate::nal::Family;
use crate::picture::{Frame, FrameFormat, Matrix, Range};

/// libx264 (or libx265) fed a clip's pictures, converted to 4:2:0 where they are RGB.
pub(super) struct Encoder {
    /// The pictures' size (the first's).
    pub(super) size: (u32, u32),
    pub(super) encoder: ff::encoder::Video,
    frame: ff::frame::Video,
    /// Converts RGB pictures (sources that are not 4:2:0) to the encoder's 4:2:0.
    scaler: Option<(scaling::Context, ff::frame::Video)>,
    check: Check,
}

impl Encoder {
    /// An encoder for pictures like `first`, timestamps in `time_base`, at rate factor `crf`.
    /// Its packets are Annex B, its parameter sets leading every keyframe (a clip is joined
    /// from parts, each with its own), each decoded again and measured ([`Check`]).
    pub(super) fn open(
        first: &Frame,
        time_base: ff::Rational,
        described: &Described,
        kind: smart::Codec,
        crf: u32,
    ) -> Result<Encoder, ClipError> {
        let name = kind.encoder();
        let codec = ff::encoder::find_by_name(name).ok_or(ClipError::NoEncoder(name))?;
        let mut enc = ff::codec::context::Context::new_with_codec(codec)
            .encoder()
            .video()
            .map_err(encode_error("encoder context"))?;
        // x264 wants even sizes for 4:2:0.
        let (width, height) = (first.width & !1, first.height & !1);
        // RGB pictures are written limited range, as the reader writes other layouts.
        let full_range = first.format == FrameFormat::Yuv420 && first.range == Range::Full;
        set_picture_fields(
            &mut enc,
            first,
            (width, height),
            full_range,
            time_base,
            described,
        );
        let opts = encoder_options(&mut enc, kind, crf);
        let check = Check::for_encoder(&mut enc, kind, crf)?;
        let encoder = enc.open_with(opts).map_err(encode_error("encoder"))?;
        let scaler = if first.format == FrameFormat::Yuv420 {
            None
        } else {
            Some(rgb_to_yuv420(first, (width, height), full_range)?)
        };
        Ok(Encoder {
            size: (first.width, first.height),
            encoder,
            frame: ff::frame::Video::new(Pixel::YUV420P, width.max(2), height.max(2)),
            scaler,
            check,
        })
    }

    /// Send `picture`, shown at `pts`, to the encoder.
    pub(super) fn send(&mut self, picture: &Frame, pts: i64) -> Result<(), ClipError> {
        let size = (picture.width, picture.height);
        if size != self.size {
            return Err(ClipError::SizeChange {
                from: self.size,
                to: size,
            });
        }
        let (w, h) = (picture.width as usize, picture.height as usize);
        match &mut self.scaler {
            None => {
                copy_yuv420(picture, &mut self.frame);
                let planes = [
                    (w, h),
                    (w.div_ceil(2), h.div_ceil(2)),
                    (w.div_ceil(2), h.div_ceil(2)),
                ];
                for (plane, (pw, ph)) in planes.into_iter().enumerate() {
                    pad_edges(&mut self.frame, plane, pw, ph, 1);
                }
            }
            Some((ctx, rgb)) => {
                copy_rows(&picture.data, w * 3, h, rgb.stride(0), rgb.data_mut(0));
                pad_edges(rgb, 0, w, h, 3);
                ctx.run(rgb, &mut self.frame)
                    .map_err(encode_error("colour conversion"))?;
            }
        }
        self.frame.set_pts(Some(pts));
        match &mut self.check {
            Check::Stats { sent, .. } => *sent += 1,
            Check::Decode(check) => {
                check.pending.insert(pts, self.frame.clone());
            }
        }
        self.encoder
            .send_frame(&self.frame)
            .map_err(encode_error("frame"))
    }

    /// The next packet the encoder has ready, if any; [`ClipError::Quality`] where its frame
    /// is further than [`MIN_PSNR`] from its picture.
    pub(super) fn receive(&mut self) -> Result<Option<ff::Packet>, ClipError> {
        let mut packet = ff::Packet::empty();
        match self.encoder.receive_packet(&mut packet) {
            Ok(()) => {}
            Err(ff::Error::Eof) => return Ok(None),
            Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => {
                return Ok(None);
            }
            Err(e) => return Err(encode_error("packet")(e)),
        }
        self.check.packet(Some(&packet))?;
        Ok(Some(packet))
    }

    /// After the last packet: every frame sent was measured, within [`MIN_PSNR`] of its
    /// picture.
    pub(super) fn checked(&mut self) -> Result<(), ClipError> {
        self.check.packet(None)?;
        let missing = match &self.check {
            Check::Stats { sent, seen, .. } => {
                (seen != sent).then(|| format!("x264 measured {seen} of the {sent} frames sent"))
            }
            Check::Decode(check) => check
                .pending
                .keys()
                .next()
                .map(|pts| format!("the frame at {pts} did not come back from the decoder")),
        };
        match missing {
            Some(message) => Err(ClipError::Encode {
                what: "check",
                message,
            }),
            None => Ok(()),
        }
    }

    /// No more pictures: the packets still in the encoder follow from [`Encoder::receive`].
    pub(super) fn send_eof(&mut self) -> Result<(), ClipError> {
        self.encoder
            .send_eof()
            .map_err(encode_error("end of stream"))
    }
}

/// Give the encoder context, not yet opened, the pictures' size (`width` x `height`, even,
/// at least 2 each), layout, timing and colour description.
fn set_picture_fields(
    enc: &mut ff::encoder::video::Video,
    first: &Frame,
    (width, height): (u32, u32),
    full_range: bool,
    time_base: ff::Rational,
    described: &Described,
) {
    enc.set_width(width.max(2));
    enc.set_height(height.max(2));
    enc.set_format(Pixel::YUV420P);
    enc.set_time_base(time_base);
    enc.set_frame_rate(described.frame_rate);
    enc.set_aspect_ratio(described.sample_aspect);
    // SAFETY: plain fields of the encoder context, set before it is opened.
    unsafe {
        let ctx = enc.as_mut_ptr();
        (*ctx).color_primaries = described.primaries;
        (*ctx).color_trc = described.transfer;
        // The pictures' own matrix and range; RGB pictures (of RGB, grey and palette
        // sources) are converted here with the matrix the reader converts with.
        (*ctx).colorspace = match first.matrix {
            Matrix::Bt601 => ffi::AVColorSpace::AVCOL_SPC_SMPTE170M,
            Matrix::Bt709 => ffi::AVColorSpace::AVCOL_SPC_BT709,
            Matrix::Bt2020 => ffi::AVColorSpace::AVCOL_SPC_BT2020_NCL,
        };
        (*ctx).color_range = if full_range {
            ffi::AVColorRange::AVCOL_RANGE_JPEG
        } else {
            ffi::AVColorRange::AVCOL_RANGE_MPEG
        };
    }
}

/// The private options of encoder `kind` at rate factor `crf`; VP9 and AV1 also get no bit
/// rate on `enc` (constant quality).
fn encoder_options(
    enc: &mut ff::encoder::video::Video,
    kind: smart::Codec,
    crf: u32,
) -> ff::Dictionary<'static> {
    let mut opts = ff::Dictionary::new();
    opts.set("crf", &crf.to_string());
    if let smart::Codec::Nal(_) = kind {
        opts.set("preset", "veryfast");
    }
    match kind {
        // No sub-partitions, the quickest sub-pixel and motion search, B-frames placed
        // without a search: half the time a frame of `veryfast` alone, at the same
        // quality (rate factor) and about the same bytes (docs/PERFORMANCE.md).
        // Each frame's PSNR logged by x264 itself, at its debug level (`log=3`), for
        // [`Check::Stats`].
        smart::Codec::Nal(Family::H264) => opts.set(
            "x264-params",
            "log=3:psnr=1:partitions=none:subme=1:me=dia:b-adapt=0",
        ),
        // x265 is lossless at rate factor 0 only when told.
        smart::Codec::Nal(Family::Hevc) => opts.set(
            "x265-params",
            if crf == 0 {
                "log-level=error:repeat-headers=1:lossless=1"
            } else {
                "log-level=error:repeat-headers=1"
            },
        ),
        // Constant quality (no bit rate), no frame looked ahead (no hidden frames: one
        // packet a frame, in order), the quickest settings; lossless at rate factor 0.
        smart::Codec::Vp9 | smart::Codec::Av1 => {
            enc.set_bit_rate(0);
            let vp9 = kind == smart::Codec::Vp9;
            opts.set(if vp9 { "deadline" } else { "usage" }, "realtime");
            opts.set("cpu-used", "8");
            opts.set("lag-in-frames", "0");
            opts.set("row-mt", "1");
            if vp9 {
                opts.set("auto-alt-ref", "0");
            }
            if crf == 0 {
                opts.set(
                    if vp9 { "lossless" } else { "aom-params" },
                    if vp9 { "1" } else { "lossless=1" },
                );
            }
        }
    }
    opts
}

/// The converter of `first`'s RGB pictures to the encoder's 4:2:0 (`width` x `height`,
/// even, at least 2 each) with `first`'s matrix, and the RGB frame it reads.
fn rgb_to_yuv420(
    first: &Frame,
    (width, height): (u32, u32),
    full_range: bool,
) -> Result<(scaling::Context, ff::frame::Video), ClipError> {
    // Odd sizes are cropped by a column or a row, as the 4:2:0 pictures are.
    let mut ctx = scaling::Context::get(
        Pixel::RGB24,
        width.max(2),
        height.max(2),
        Pixel::YUV420P,
        width.max(2),
        height.max(2),
        scaling::Flags::BICUBIC | scaling::Flags::ACCURATE_RND,
    )
    .map_err(encode_error("colour conversion"))?;
    let space = match first.matrix {
        Matrix::Bt601 => ffi::SWS_CS_ITU601,
        Matrix::Bt709 => ffi::SWS_CS_ITU709,
        Matrix::Bt2020 => ffi::SWS_CS_BT2020,
    };
    // SAFETY: the context is valid; the coefficient tables are static.
    unsafe {
        let table = ffi::sws_getCoefficients(space);
        ffi::sws_setColorspaceDetails(
            ctx.as_mut_ptr(),
            table,
            1,
            table,
            i32::from(full_range),
            0,
            1 << 16,
            1 << 16,
        );
    }
    Ok((
        ctx,
        ff::frame::Video::new(Pixel::RGB24, width.max(2), height.max(2)),
    ))
}

/// The frame rule checked as the clip is written: each encoded frame measured against the
/// picture the encoder was given, the lower of its luma PSNR and its three planes' together
/// at least [`MIN_PSNR`].
enum Check {
    /// x264's own measure of each frame it reconstructs, logged at the debug level and kept
    /// by the encoder context's sink: its reconstruction is the very picture every decoder
    /// makes of the frame (H.264 decoding is exact), so no decode again. Frames sent, and
    /// measured so far.
    Stats {
        sink: Box<ffmpeg_log::Sink>,
        sent: usize,
        seen: usize,
    },
    /// Each encoded packet decoded again (FFmpeg's decoder, as a reader of the clip decodes
    /// it) and compared with its picture.
    Decode(DecodeCheck),
}

impl Check {
    /// The check of encoder `kind` at rate factor `crf`: x264's own measure, its log kept by
    /// a sink attached to `enc` (not yet opened), or a decoder.
    fn for_encoder(
        enc: &mut ff::encoder::video::Video,
        kind: smart::Codec,
        crf: u32,
    ) -> Result<Check, ClipError> {
        // x264 measures no frame it encodes losslessly (rate factor 0): those are decoded.
        Ok(if kind == smart::Codec::Nal(Family::H264) && crf > 0 {
            let sink = ffmpeg_log::Sink::keeping_lines();
            // SAFETY: the context is the encoder's, not yet opened, its `opaque` unused; the
            // sink is kept in the Encoder, dropped after the encoder (field order).
            unsafe { sink.attach(enc.as_mut_ptr()) };
            Check::Stats {
                sink,
                sent: 0,
                seen: 0,
            }
        } else {
            Check::Decode(DecodeCheck::new(kind.id())?)
        })
    }

    /// Measure what `packet` (`None`: the end) brings.
    fn packet(&mut self, packet: Option<&ff::Packet>) -> Result<(), ClipError> {
        match self {
            Check::Decode(check) => check.packet(packet),
            Check::Stats { sink, seen, .. } => {
                for line in sink.take_lines() {
                    if let Some(psnr) = x264_frame_psnr(&line) {
                        *seen += 1;
                        if psnr < MIN_PSNR {
                            return Err(ClipError::Quality { psnr });
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// The lower of the luma PSNR and the three planes' together that x264 logs for a frame it
/// finished (`frame=  12 QP=... size=... bytes PSNR Y:45.12 U:47.00 V:47.50`), `None` for
/// any other line (its summaries at the end among them). The planes' together: their mean
/// squared errors weighted by their samples (4:2:0: four of luma to one of each chroma).
fn x264_frame_psnr(line: &str) -> Option<f64> {
    let line = ffmpeg_log::strip_context(line);
    if !line.starts_with("frame=") {
        return None;
    }
    let at = line.find("PSNR Y:")?;
    let rest = &line[at + 5..];
    let mut plane = [0.0f64; 3];
    // Each value after its key, padded to five places (`Y: 9.50`).
    for (value, key) in plane.iter_mut().zip(["Y:", "U:", "V:"]) {
        let after = rest[rest.find(key)? + key.len()..].trim_start();
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        *value = after[..end].parse().ok()?;
    }
    let mse = |psnr: f64| 10f64.powf(-psnr / 10.0);
    let all = -10.0 * ((4.0 * mse(plane[0]) + mse(plane[1]) + mse(plane[2])) / 6.0).log10();
    Some(plane[0].min(all))
}

struct DecodeCheck {
    decoder: ff::decoder::Video,
    /// Pictures sent to the encoder and not yet decoded back, by timestamp.
    pending: std::collections::HashMap<i64, ff::frame::Video>,
    decoded: ff::frame::Video,
}

impl DecodeCheck {
    fn new(id: ff::codec::Id) -> Result<DecodeCheck, ClipError> {
        let codec = ff::decoder::find(id).ok_or(ClipError::NoEncoder("a decoder to check"))?;
        let mut context = ff::codec::context::Context::new_with_codec(codec);
        context.set_threading(ff::codec::threading::Config {
            kind: ff::codec::threading::Type::None,
            count: 1,
            ..Default::default()
        });
        let decoder = context
            .decoder()
            .video()
            .map_err(encode_error("check decoder"))?;
        Ok(DecodeCheck {
            decoder,
            pending: std::collections::HashMap::new(),
            decoded: ff::frame::Video::empty(),
        })
    }

    /// Decode `packet` (`None`: the end) and compare the frames it gives.
    fn packet(&mut self, packet: Option<&ff::Packet>) -> Result<(), ClipError> {
        match packet {
            Some(p) => self.decoder.send_packet(p),
            None => self.decoder.send_eof(),
        }
        .map_err(encode_error("check decode"))?;
        while self.decoder.receive_frame(&mut self.decoded).is_ok() {
            let Some(picture) = self.decoded.pts().and_then(|p| self.pending.remove(&p)) else {
                return Err(ClipError::Encode {
                    what: "check",
                    message: format!("a decoded frame at {:?} was not sent", self.decoded.pts()),
                });
            };
            let psnr = psnr_420(&picture, &self.decoded);
            if psnr < MIN_PSNR {
                return Err(ClipError::Quality { psnr });
            }
        }
        Ok(())
    }
}

/// PSNR between two 8-bit 4:2:0 frames of one size: the lower of the luma plane's and the
/// three planes' together (grain in the luma can hide behind smooth chroma).
fn psnr_420(a: &ff::frame::Video, b: &ff::frame::Video) -> f64 {
    let is_420 = |f: &ff::frame::Video| matches!(f.format(), Pixel::YUV420P | Pixel::YUVJ420P);
    if (a.width(), a.height()) != (b.width(), b.height()) || !is_420(a) || !is_420(b) {
        return 0.0;
    }
    let (w, h) = (a.width() as usize, a.height() as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let sse = |plane: usize, width: usize, height: usize| -> u64 {
        let (sa, sb) = (a.stride(plane), b.stride(plane));
        let (da, db) = (a.data(plane), b.data(plane));
        (0..height)
            .map(|row| {
                let ra = &da[row * sa..row * sa + width];
                let rb = &db[row * sb..row * sb + width];
                ra.iter()
                    .zip(rb)
                    .map(|(&x, &y)| (x as i32 - y as i32).pow(2) as u64)
                    .sum::<u64>()
            })
            .sum()
    };
    let psnr = |sse: u64, samples: usize| {
        if sse == 0 {
            f64::INFINITY
        } else {
            10.0 * (255.0 * 255.0 * samples as f64 / sse as f64).log10()
        }
    };
    let luma = sse(0, w, h);
    let all = luma + sse(1, cw, ch) + sse(2, cw, ch);
    psnr(luma, w * h).min(psnr(all, w * h + 2 * cw * ch))
}

/// Copy a tightly packed 4:2:0 picture into `frame` (its size, or one pixel less where the
/// picture's is odd).
fn copy_yuv420(picture: &Frame, frame: &mut ff::frame::Video) {
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

/// Fill plane `plane` of `frame` beyond the `width` x `height` pixels (of `bytes` each)
/// copied into it by repeating the last column and row: a picture of one pixel's width or
/// height is encoded at two.
fn pad_edges(
    frame: &mut ff::frame::Video,
    plane: usize,
    width: usize,
    height: usize,
    bytes: usize,
) {
    let (plane_w, plane_h) = (
        frame.plane_width(plane) as usize,
        frame.plane_height(plane) as usize,
    );
    let stride = frame.stride(plane);
    let data = frame.data_mut(plane);
    if width == 0 || height == 0 {
        return;
    }
    for row in 0..height.min(plane_h) {
        let line = &mut data[row * stride..];
        for x in width..plane_w {
            line.copy_within((width - 1) * bytes..width * bytes, x * bytes);
        }
    }
    for row in height..plane_h {
        data.copy_within((height - 1) * stride..height * stride, row * stride);
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

#[cfg(test)]
mod tests {
    use super::x264_frame_psnr;

    #[test]
    fn x264s_frame_lines_give_the_lower_of_luma_and_all_planes() {
        let line = "[libx264 @ 0x55acf4f08780] frame=   1 QP=18.38 NAL=2 Slice:P Poc:8   I:18   \
                    P:49   SKIP:233  size=386 bytes PSNR Y:43.12 U:42.68 V:42.03";
        let psnr = x264_frame_psnr(line).unwrap();
        // The planes' mean squared errors, four luma samples to one of each chroma.
        let mse = |p: f64| 10f64.powf(-p / 10.0);
        let all = -10.0 * ((4.0 * mse(43.12) + mse(42.68) + mse(42.03)) / 6.0).log10();
        assert!((psnr - all).abs() < 1e-9 && psnr < 43.12, "{psnr}");
        // Luma the lower: luma.
        let line = "frame=   2 QP=1 size=9 bytes PSNR Y:41.00 U:60.00 V:60.00";
        assert_eq!(x264_frame_psnr(line), Some(41.0));
        // Under 10 dB, a value is padded.
        let line = "frame=   3 QP=51 size=9 bytes PSNR Y: 9.50 U:60.00 V:60.00";
        assert_eq!(x264_frame_psnr(line), Some(9.5));
        // The summaries at the end, and lines without a measure, are not frames.
        let summary = "[libx264 @ 0x1] frame I:1     Avg QP:21.32  size:  3151  PSNR Mean Y:43.14 \
                       U:41.28 V:41.64 Avg:41.95 Global:41.95";
        assert_eq!(x264_frame_psnr(summary), None);
        assert_eq!(x264_frame_psnr("frame=   0 QP=21.32 size=3151 bytes"), None);
    }
}
