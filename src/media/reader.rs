//! Random access to the frames of a video (or a picture) at full resolution, for the loader:
//! an open demuxer and decoder kept between requests, a seek to the keyframe before each
//! request, and only the frames asked for converted and handed out.

use std::path::Path;
use std::time::Instant;

use ff::ffi;
use ff::format::Pixel;
use ff::software::scaling;
use ffmpeg_next as ff;

use crate::media::decode::{DecodeError, first_video_stream, packet_timestamps};
use crate::media::ffmpeg_log;
use crate::model::Ratio;

/// A decoded picture, tightly packed: planar YUV 4:2:0 (Y, then U, then V, each
/// `ceil(w/2) * ceil(h/2)`) or packed RGB.
#[derive(Debug, Clone, PartialEq)]
pub struct Picture {
    pub width: u32,
    pub height: u32,
    /// `true`: YUV 4:2:0 planes; `false`: RGB, 3 bytes per pixel.
    pub yuv420: bool,
    /// BT.709 matrix (else BT.601). Unspecified streams: BT.709 from 720 lines up.
    pub bt709: bool,
    /// Full-range samples (JPEG), else limited (16..235).
    pub full_range: bool,
    pub data: Vec<u8>,
    /// Presentation timestamp in the stream's time base.
    pub pts: i64,
}

/// Time spent per stage of a request, in seconds.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadTimes {
    /// Demuxing: reading packets from the file.
    pub read_secs: f64,
    /// Decoding packets to frames.
    pub decode_secs: f64,
    /// Copying or converting the wanted frames to packed pictures.
    pub convert_secs: f64,
    /// Frames decoded, including those decoded only to reach the wanted ones.
    pub frames_decoded: u64,
    pub seeks: u64,
}

impl ReadTimes {
    pub fn add(&mut self, other: &ReadTimes) {
        self.read_secs += other.read_secs;
        self.decode_secs += other.decode_secs;
        self.convert_secs += other.convert_secs;
        self.frames_decoded += other.frames_decoded;
        self.seeks += other.seeks;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Open(#[from] DecodeError),
    #[error("frames at pts {0:?} could not be decoded")]
    Missing(Vec<i64>),
    #[error("the time budget ran out")]
    TimedOut,
    #[error("cannot convert {format} {width}x{height}: {message}")]
    Convert {
        format: String,
        width: u32,
        height: u32,
        message: String,
    },
}

/// An open video (or picture) file.
pub struct VideoReader {
    path: std::path::PathBuf,
    input: ff::format::context::Input,
    decoder: ff::decoder::Video,
    stream_index: usize,
    time_base: Ratio,
    /// Presentation timestamps of every frame, ascending (from the packets).
    pts: Vec<i64>,
    /// The last frame handed out, when the decoder can go on from there without a seek.
    position: Option<i64>,
    /// Frames decoded since the file was (re)opened at its start: stands in for a missing
    /// timestamp (pictures, some raw streams).
    ordinal: Option<usize>,
    scaler: Option<(scaling::Context, Pixel, u32, u32, Pixel)>,
    converted: Option<ff::frame::Video>,
    /// Buffers of pictures the caller is done with, reused for the next ones (large frames
    /// would otherwise cost fresh pages every time).
    pub spare: Vec<Vec<u8>>,
}

/// Continue decoding instead of seeking when the next wanted frame is at most this many
/// frames after the last one handed out.
const SEQUENTIAL_FRAMES: usize = 48;

impl VideoReader {
    /// Open `path` and index its frames (one pass over the packets, no decoding).
    pub fn open(path: &Path, threads: usize) -> Result<VideoReader, DecodeError> {
        ffmpeg_log::init();
        ffmpeg_log::clear_last_error();
        let open_error = |e: ff::Error| {
            let detail = ffmpeg_log::take_last_error();
            DecodeError::Open(match detail {
                Some(d) => format!("{e} ({d})"),
                None => e.to_string(),
            })
        };
        let mut input = ff::format::input(&path).map_err(open_error)?;
        let stream = first_video_stream(&input).ok_or(DecodeError::NoVideo)?;
        let stream_index = stream.index();
        let tb = stream.time_base();
        let time_base = Ratio::new(tb.numerator(), tb.denominator())
            .ok_or_else(|| DecodeError::Setup("the stream has no time base".into()))?;
        let codec_name = stream.parameters().id().name().to_string();
        let mut ctx = ff::codec::context::Context::from_parameters(stream.parameters())
            .map_err(|e| DecodeError::Setup(e.to_string()))?;
        ctx.set_threading(ff::codec::threading::Config {
            kind: ff::codec::threading::Type::Frame,
            count: threads.max(1),
            ..Default::default()
        });
        let decoder = ctx.decoder().video().map_err(|e| match e {
            ff::Error::DecoderNotFound => DecodeError::NoDecoder(codec_name),
            other => DecodeError::Setup(other.to_string()),
        })?;
        let pts = packet_timestamps(&mut input, stream_index);
        // Open again rather than seek back: picture demuxers cannot seek.
        let input = ff::format::input(&path).map_err(open_error)?;
        Ok(VideoReader {
            path: path.to_path_buf(),
            input,
            decoder,
            stream_index,
            time_base,
            pts,
            position: None,
            ordinal: Some(0),
            scaler: None,
            converted: None,
            spare: Vec::new(),
        })
    }

    pub fn time_base(&self) -> Ratio {
        self.time_base
    }

    /// Presentation timestamps of every frame, ascending. Frame `i` is shown from `pts[i]`
    /// until `pts[i + 1]`.
    pub fn frame_pts(&self) -> &[i64] {
        &self.pts
    }

    /// Seek to the keyframe at or before `pts` (the start for `i64::MIN`) and reset the
    /// decoder. Where the demuxer cannot seek, the file is opened again.
    fn seek(&mut self, pts: i64) -> Result<(), DecodeError> {
        self.decoder.flush();
        self.position = None;
        // At or before the first frame: open again (exact, and picture demuxers need it).
        if self.pts.first().is_some_and(|&first| pts > first) {
            // SAFETY: `input` owns an open AVFormatContext; av_seek_frame only moves its
            // read position. The stream index is one of its streams.
            let rc = unsafe {
                ffi::av_seek_frame(
                    self.input.as_mut_ptr(),
                    self.stream_index as i32,
                    pts,
                    ffi::AVSEEK_FLAG_BACKWARD,
                )
            };
            if rc >= 0 {
                self.ordinal = None;
                return Ok(());
            }
        }
        self.input = ff::format::input(&self.path).map_err(|e| DecodeError::Open(e.to_string()))?;
        self.ordinal = Some(0);
        Ok(())
    }

    /// Decode the frames whose timestamps are in `wanted` (ascending, each one of
    /// [`frame_pts`](Self::frame_pts)) and hand each to `on_frame` with its position in
    /// `wanted`. A timestamp that appears twice is handed out twice.
    pub fn read(
        &mut self,
        wanted: &[i64],
        deadline: Option<Instant>,
        times: &mut ReadTimes,
        on_frame: &mut dyn FnMut(usize, Picture),
    ) -> Result<(), ReadError> {
        let Some(&first) = wanted.first() else {
            return Ok(());
        };
        let last = wanted[wanted.len() - 1];
        let sequential = self.position.is_some_and(|p| {
            p < first && {
                let from = self.pts.partition_point(|&t| t <= p);
                let to = self.pts.partition_point(|&t| t < first);
                to - from <= SEQUENTIAL_FRAMES
            }
        });
        // Seek targets, each further back, when a seek lands after the first wanted frame
        // (a keyframe whose frames show before it: open GOPs, B-frames).
        let mut attempts: Vec<i64> = Vec::new();
        if !sequential {
            let back = i64::from(self.time_base.den) / i64::from(self.time_base.num.max(1));
            attempts.extend([first, first.saturating_sub(back.max(1)), i64::MIN]);
        }
        let mut attempt = 0;
        loop {
            if !sequential {
                self.seek(attempts[attempt])?;
                times.seeks += 1;
            }
            let mut next = 0; // index in `wanted` of the next frame to hand out
            let outcome = self.decode_until(wanted, &mut next, last, deadline, times, on_frame)?;
            match outcome {
                Outcome::Done => return Ok(()),
                Outcome::LandedLate if !sequential && attempt + 1 < attempts.len() && next == 0 => {
                    attempt += 1;
                }
                Outcome::LandedLate | Outcome::Ended => {
                    return Err(ReadError::Missing(wanted[next..].to_vec()));
                }
            }
        }
    }

    fn decode_until(
        &mut self,
        wanted: &[i64],
        next: &mut usize,
        last: i64,
        deadline: Option<Instant>,
        times: &mut ReadTimes,
        on_frame: &mut dyn FnMut(usize, Picture),
    ) -> Result<Outcome, ReadError> {
        let mut frame = ff::frame::Video::empty();
        let mut first_frame = true;
        let mut eof = false;
        loop {
            if deadline.is_some_and(|d| Instant::now() > d) {
                self.position = None;
                return Err(ReadError::TimedOut);
            }
            // Receive what the decoder has, then feed it.
            loop {
                let t = Instant::now();
                let received = self.decoder.receive_frame(&mut frame);
                times.decode_secs += t.elapsed().as_secs_f64();
                match received {
                    Ok(()) => {}
                    Err(ff::Error::Eof) => {
                        self.position = None;
                        return Ok(if *next < wanted.len() {
                            Outcome::Ended
                        } else {
                            Outcome::Done
                        });
                    }
                    Err(_) => break,
                }
                times.frames_decoded += 1;
                let ordinal = self.ordinal;
                self.ordinal = ordinal.map(|n| n + 1);
                let Some(pts) = frame
                    .timestamp()
                    .or_else(|| ordinal.and_then(|n| self.pts.get(n).copied()))
                else {
                    continue;
                };
                if first_frame {
                    first_frame = false;
                    if pts > wanted[*next] && self.position.is_none() {
                        return Ok(Outcome::LandedLate);
                    }
                }
                if *next < wanted.len() && wanted[*next] < pts {
                    // A wanted frame that never came out (damaged): report it.
                    return Ok(Outcome::Ended);
                }
                while *next < wanted.len() && wanted[*next] == pts {
                    let t = Instant::now();
                    let picture = self.convert(&frame, pts)?;
                    times.convert_secs += t.elapsed().as_secs_f64();
                    on_frame(*next, picture);
                    *next += 1;
                }
                self.position = Some(pts);
                if pts >= last && *next == wanted.len() {
                    return Ok(Outcome::Done);
                }
            }
            if eof {
                continue;
            }
            let t = Instant::now();
            let mut packet = ff::Packet::empty();
            let read = packet.read(&mut self.input);
            times.read_secs += t.elapsed().as_secs_f64();
            match read {
                Ok(()) => {
                    if packet.stream() != self.stream_index {
                        continue;
                    }
                    let t = Instant::now();
                    // A packet the decoder rejects is skipped; missing frames are reported.
                    let _ = self.decoder.send_packet(&packet);
                    times.decode_secs += t.elapsed().as_secs_f64();
                }
                Err(_) => {
                    eof = true;
                    let _ = self.decoder.send_eof();
                }
            }
        }
    }

    /// Copy a decoded frame into a packed picture, converting formats other than 8-bit
    /// YUV 4:2:0 (to 4:2:0, or to RGB for RGB, grey and palette pictures).
    fn convert(&mut self, frame: &ff::frame::Video, pts: i64) -> Result<Picture, ReadError> {
        let (w, h, format) = (frame.width(), frame.height(), frame.format());
        let full_range = matches!(format, Pixel::YUVJ420P | Pixel::YUVJ422P | Pixel::YUVJ444P)
            || frame.color_range() == ff::color::Range::JPEG;
        let bt709 = match frame.color_space() {
            ff::color::Space::BT709 => true,
            ff::color::Space::BT470BG | ff::color::Space::SMPTE170M | ff::color::Space::FCC => {
                false
            }
            _ => h >= 720,
        };
        if matches!(format, Pixel::YUV420P | Pixel::YUVJ420P) {
            let (cw, ch) = (w.div_ceil(2) as usize, h.div_ceil(2) as usize);
            let mut data = self.spare.pop().unwrap_or_default();
            data.clear();
            data.reserve(w as usize * h as usize + 2 * cw * ch);
            copy_plane(frame, 0, w as usize, h as usize, &mut data);
            copy_plane(frame, 1, cw, ch, &mut data);
            copy_plane(frame, 2, cw, ch, &mut data);
            return Ok(Picture {
                width: w,
                height: h,
                yuv420: true,
                bt709,
                full_range,
                data,
                pts,
            });
        }
        let to_rgb = is_rgb_like(format);
        let target = if to_rgb { Pixel::RGB24 } else { Pixel::YUV420P };
        let rebuild = !matches!(&self.scaler, Some((_, f, sw, sh, t)) if *f == format && *sw == w && *sh == h && *t == target);
        if rebuild {
            let ctx = scaling::Context::get(format, w, h, target, w, h, scaling::Flags::BILINEAR)
                .map_err(|e| ReadError::Convert {
                format: format!("{format:?}"),
                width: w,
                height: h,
                message: e.to_string(),
            })?;
            self.scaler = Some((ctx, format, w, h, target));
            self.converted = None;
        }
        let Some((scaler, ..)) = self.scaler.as_mut() else {
            unreachable!("the scaler was just built");
        };
        let out = self
            .converted
            .get_or_insert_with(|| ff::frame::Video::new(target, w, h));
        scaler.run(frame, out).map_err(|e| ReadError::Convert {
            format: format!("{format:?}"),
            width: w,
            height: h,
            message: e.to_string(),
        })?;
        let mut data = self.spare.pop().unwrap_or_default();
        data.clear();
        if to_rgb {
            copy_plane(out, 0, 3 * w as usize, h as usize, &mut data);
        } else {
            let (cw, ch) = (w.div_ceil(2) as usize, h.div_ceil(2) as usize);
            copy_plane(out, 0, w as usize, h as usize, &mut data);
            copy_plane(out, 1, cw, ch, &mut data);
            copy_plane(out, 2, cw, ch, &mut data);
        }
        // swscale writes limited-range YUV (its default) from any input.
        Ok(Picture {
            width: w,
            height: h,
            yuv420: !to_rgb,
            bt709,
            full_range: to_rgb,
            data,
            pts,
        })
    }
}

enum Outcome {
    /// Every wanted frame was handed out.
    Done,
    /// The first decoded frame is after the first wanted one: seek further back.
    LandedLate,
    /// The stream ended (or skipped frames) before every wanted frame came out.
    Ended,
}

fn is_rgb_like(format: Pixel) -> bool {
    // SAFETY: av_pix_fmt_desc_get returns a pointer to a static descriptor or null.
    let desc = unsafe { ffi::av_pix_fmt_desc_get(format.into()) };
    if desc.is_null() {
        return true;
    }
    // SAFETY: non-null descriptors are valid for the program's lifetime.
    let (flags, components) = unsafe { ((*desc).flags, (*desc).nb_components) };
    let rgb = flags & (ffi::AV_PIX_FMT_FLAG_RGB as u64) != 0;
    let pal = flags & (ffi::AV_PIX_FMT_FLAG_PAL as u64) != 0;
    rgb || pal || components < 3
}

fn copy_plane(
    frame: &ff::frame::Video,
    plane: usize,
    row_bytes: usize,
    rows: usize,
    out: &mut Vec<u8>,
) {
    let stride = frame.stride(plane);
    let data = frame.data(plane);
    for row in 0..rows {
        out.extend_from_slice(&data[row * stride..row * stride + row_bytes]);
    }
}
