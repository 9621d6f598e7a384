//! Decoding to small frames: one pass over a video (or one image) with FFmpeg, each frame
//! scaled to a small planar RGB copy for analysis (box averages for 8-bit planar YUV, else
//! swscale's area filter). Errors are counted, not fatal: a damaged
//! stream yields the frames FFmpeg can conceal, plus a report of what went wrong.

use std::time::Instant;

use ff::ffi;
use ff::format::Pixel;
use ff::format::stream::Disposition;
use ff::media::Type as Medium;
use ff::software::scaling;
use ffmpeg_next as ff;

use crate::downscale::YuvBox;
use crate::ffmpeg_log;
use crate::source::{Opened, Source};
use framecull_model::{FrameView, Ratio, StreamChoice};

#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// Frames are scaled to fit this width (and `max_height`), keeping the aspect ratio.
    pub max_width: u32,
    pub max_height: u32,
    /// Decoder threads (FFmpeg's frame threads). 1 gives exact, repeatable error counts and
    /// keeps FFmpeg's messages on the calling thread; with more, the decoder's error lines are
    /// counted wherever they are logged ([`ffmpeg_log::Sink`]), but a damaged stream's counts
    /// may differ from one thread's: [`DecodeReport::saw_errors`] tells when to decode again
    /// with one for exact counts.
    pub threads: usize,
    /// Allow the decoder's non-spec-compliant speedups (`AV_CODEC_FLAG2_FAST`). The loop
    /// filter is kept: skipping it shifts content scores enough to move borderline cuts.
    pub fast: bool,
    /// Stop (and report `timed_out`) after this instant.
    pub deadline: Option<Instant>,
    /// The video stream decoded (the catalog's record of the probe's choice).
    pub stream: StreamChoice,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_width: 256,
            max_height: 256,
            threads: 1,
            fast: true,
            deadline: None,
            stream: StreamChoice::Best,
        }
    }
}

/// What one decode pass saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecodeReport {
    pub frames: u64,
    pub packets: u64,
    /// Decoder calls that failed plus frames flagged as damaged.
    pub decode_errors: u64,
    /// Error-level messages FFmpeg logged while demuxing and decoding: on this thread, and
    /// the decoder's on its own threads when `threads` > 1 (where `first_error` has the
    /// call's error, not FFmpeg's words, which are in `first_message`).
    pub error_messages: u64,
    /// The first of those messages.
    pub first_message: Option<String>,
    /// The first error, in FFmpeg's words when it logged one.
    pub first_error: Option<String>,
    /// Reading the container stopped on an error other than end of file.
    pub read_error: Option<String>,
    pub timed_out: bool,
    pub time_base: Option<Ratio>,
    /// Container duration in seconds, when declared (stream, else container).
    pub declared_duration_secs: Option<f64>,
    /// Frame count declared by the header.
    pub declared_frames: Option<i64>,
    /// Packets the demuxer marks to discard (before the start of an MP4 edit list): counted
    /// by the header, shown never.
    pub discarded_packets: u64,
    pub codec: Option<String>,
}

impl DecodeReport {
    /// Whether anything went wrong: a decoder error, a damaged frame, an error line, a read
    /// that stopped early.
    pub fn saw_errors(&self) -> bool {
        self.decode_errors > 0
            || self.error_messages > 0
            || self.first_message.is_some()
            || self.read_error.is_some()
    }

    fn error(&mut self, message: String) {
        self.decode_errors += 1;
        if self.first_error.is_none() {
            let logged = ffmpeg_log::take_last_error();
            // Keep the logged message for the report of messages as well.
            if self.first_message.is_none() {
                self.first_message.clone_from(&logged);
            }
            self.first_error = Some(logged.unwrap_or(message));
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("cannot open: {0}")]
    Open(String),
    #[error("the time budget ran out while opening the file")]
    TimedOut,
    #[error("no video stream")]
    NoVideo,
    #[error("no decoder for codec {0}")]
    NoDecoder(String),
    #[error("decoder setup failed: {0}")]
    Setup(String),
    #[error("no frame decodes")]
    NoFrame,
}

/// Why a decoded frame has no analysis copy.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConvertError {
    #[error("cannot convert {format:?} {width}x{height}: {source}")]
    Setup {
        format: Pixel,
        width: u32,
        height: u32,
        source: ff::Error,
    },
    #[error("conversion failed: {0}")]
    Run(#[from] ff::Error),
}

/// Decode every frame of the video stream `options.stream` of `source`, calling `on_frame` with a small
/// RGB copy of each. `on_frame` returns `false` to stop early. `lowres` (0-3) asks decoders
/// that support it (JPEG) to decode at 1/2^lowres size directly.
///
/// One function: the input, decoder and error sink it sets up serve the read loop that runs
/// for every packet, and the sink is made before the decoder and read once the decoder is
/// dropped (the decoder's threads log into it until then).
pub fn decode_frames(
    source: &Opened,
    options: &DecodeOptions,
    lowres: u8,
    on_frame: &mut dyn FnMut(&FrameView) -> bool,
) -> Result<DecodeReport, DecodeError> {
    ffmpeg_log::init();
    ffmpeg_log::clear_last_error();
    let deadline = options.deadline;
    let mut input = source
        .input(move || deadline.is_some_and(|d| Instant::now() > d))
        .map_err(|e| {
            if e == ff::Error::Exit {
                return DecodeError::TimedOut;
            }
            let detail = ffmpeg_log::take_last_error();
            DecodeError::Open(match detail {
                Some(d) => format!("{e} ({d})"),
                None => e.to_string(),
            })
        })?;
    let stream = video_stream(&input, options.stream).ok_or(DecodeError::NoVideo)?;
    let index = stream.index();
    let tb = stream.time_base();
    let mut report = DecodeReport {
        time_base: Ratio::new(tb.numerator(), tb.denominator()),
        declared_frames: (stream.frames() > 0).then_some(stream.frames()),
        codec: Some(stream.parameters().id().name().to_string()),
        ..DecodeReport::default()
    };
    report.declared_duration_secs = declared_duration_secs(&input, &stream);
    let mut ctx = ff::codec::context::Context::from_parameters(stream.parameters())
        .map_err(|e| DecodeError::Setup(e.to_string()))?;
    ctx.set_threading(ff::codec::threading::Config {
        kind: ff::codec::threading::Type::Frame,
        count: options.threads.max(1),
        ..Default::default()
    });
    // Frame threads log on threads of their own: their error lines go to a sink. Declared
    // before the decoder, so that it outlives it and its threads.
    let sink = (options.threads > 1).then(ffmpeg_log::Sink::new);
    if let Some(sink) = &sink {
        // SAFETY: `ctx` owns a valid, not yet opened context whose `opaque` nothing else uses;
        // the sink is dropped after the decoder made from it.
        unsafe { sink.attach(ctx.as_mut_ptr()) };
    }
    // SAFETY: `ctx` owns a valid, not yet opened AVCodecContext; these are plain option
    // fields that avcodec_open2 reads.
    unsafe {
        let c = ctx.as_mut_ptr();
        if options.fast {
            (*c).flags2 |= ffi::AV_CODEC_FLAG2_FAST;
        }
        if lowres > 0 {
            let codec = ffi::avcodec_find_decoder((*c).codec_id);
            let max = if codec.is_null() {
                0
            } else {
                (*codec).max_lowres
            };
            (*c).lowres = i32::from(lowres).min(i32::from(max));
        }
    }
    let mut decoder = ctx.decoder().video().map_err(|e| match e {
        ff::Error::DecoderNotFound => {
            DecodeError::NoDecoder(report.codec.clone().unwrap_or_default())
        }
        other => DecodeError::Setup(other.to_string()),
    })?;

    let mut state = FrameState::default();
    let mut keep_going = true;
    while keep_going {
        if deadline.is_some_and(|d| Instant::now() > d) {
            report.timed_out = true;
            break;
        }
        let mut packet = ff::Packet::empty();
        match packet.read(&mut input) {
            Ok(()) => {
                if packet.stream() != index {
                    continue;
                }
                report.packets += 1;
                report.discarded_packets += u64::from(is_discarded(&packet));
                if let Err(e) = decoder.send_packet(&packet) {
                    report.error(format!("packet {}: {e}", report.packets));
                }
                keep_going = drain(&mut decoder, tb, options, &mut state, &mut report, on_frame);
            }
            Err(ff::Error::Eof) => break,
            Err(ff::Error::Exit) => {
                report.timed_out = true;
                break;
            }
            Err(e) => {
                let detail = ffmpeg_log::take_last_error();
                report.read_error = Some(match detail {
                    Some(d) => format!("{e} ({d})"),
                    None => e.to_string(),
                });
                break;
            }
        }
    }
    if keep_going && !report.timed_out {
        let _ = decoder.send_eof();
        drain(&mut decoder, tb, options, &mut state, &mut report, on_frame);
    }
    // The decoder's threads end with it: every line they log is in the sink by then.
    drop(decoder);
    report.error_messages = ffmpeg_log::error_lines();
    if report.first_message.is_none() {
        report.first_message = ffmpeg_log::take_last_error();
    }
    if let Some(sink) = &sink {
        report.error_messages += sink.lines();
        if report.first_message.is_none() {
            report.first_message = sink.first();
        }
    }
    Ok(report)
}

/// Decoded frames made into the small planar RGB copy analysis reads.
#[derive(Default)]
pub(crate) struct FrameState {
    /// The converter for the current format and size.
    converter: Option<(Converter, Pixel, u32, u32)>,
    planes: [Vec<u8>; 3],
}

impl FrameState {
    /// Convert `frame` to its copy within `max_w` x `max_h` (a converter made for each new
    /// format and size) and return the copy's size; `None` for a frame without a picture.
    pub(crate) fn convert(
        &mut self,
        frame: &ff::frame::Video,
        max_w: u32,
        max_h: u32,
    ) -> Result<Option<(usize, usize)>, ConvertError> {
        let (w, h, fmt) = (frame.width(), frame.height(), frame.format());
        if w == 0 || h == 0 || fmt == Pixel::None {
            return Ok(None);
        }
        let (dw, dh) = fit(w, h, max_w, max_h);
        let rebuild =
            !matches!(&self.converter, Some((_, f, sw, sh)) if *f == fmt && *sw == w && *sh == h);
        if rebuild {
            match Converter::new(fmt, w, h, dw, dh) {
                Ok(c) => self.converter = Some((c, fmt, w, h)),
                Err(source) => {
                    self.converter = None;
                    return Err(ConvertError::Setup {
                        format: fmt,
                        width: w,
                        height: h,
                        source,
                    });
                }
            }
        }
        let Some((converter, ..)) = self.converter.as_mut() else {
            return Ok(None);
        };
        let (dw, dh) = (dw as usize, dh as usize);
        converter.run(frame, dw, dh, &mut self.planes)?;
        Ok(Some((dw, dh)))
    }

    /// The R, G and B planes of the last frame converted.
    pub(crate) fn planes(&self) -> [&[u8]; 3] {
        [&self.planes[0], &self.planes[1], &self.planes[2]]
    }

    /// Its luma, where the converter had it at hand.
    pub(crate) fn luma(&self) -> Option<&[u8]> {
        self.converter.as_ref().and_then(|(c, ..)| c.luma())
    }
}

/// How decoded frames become the small planar RGB copy.
enum Converter {
    /// 8-bit planar YUV: box averages of the planes (see [`crate::downscale`]).
    Box(Box<YuvBox>),
    /// Everything else: swscale's area filter, into its own frame.
    Sws(scaling::Context, ff::frame::Video),
}

impl Converter {
    fn new(fmt: Pixel, w: u32, h: u32, dw: u32, dh: u32) -> Result<Converter, ff::Error> {
        let chroma_shift = match fmt {
            Pixel::YUV420P | Pixel::YUVJ420P => Some((1, 1)),
            Pixel::YUV422P | Pixel::YUVJ422P => Some((1, 0)),
            Pixel::YUV444P | Pixel::YUVJ444P => Some((0, 0)),
            _ => None,
        };
        let boxes = chroma_shift
            .and_then(|c| YuvBox::new(w as usize, h as usize, c, dw as usize, dh as usize));
        if let Some(b) = boxes {
            return Ok(Converter::Box(Box::new(b)));
        }
        let sws = scaling::Context::get(fmt, w, h, Pixel::GBRP, dw, dh, scaling::Flags::AREA)?;
        Ok(Converter::Sws(
            sws,
            ff::frame::Video::new(Pixel::GBRP, dw, dh),
        ))
    }

    /// Full-range luma of the last frame converted, where the conversion made one.
    fn luma(&self) -> Option<&[u8]> {
        match self {
            Converter::Box(b) => Some(b.luma()),
            Converter::Sws(..) => None,
        }
    }

    /// Convert `frame` into `planes` (R, G and B, `dw` x `dh` each, no padding).
    fn run(
        &mut self,
        frame: &ff::frame::Video,
        dw: usize,
        dh: usize,
        planes: &mut [Vec<u8>; 3],
    ) -> Result<(), ff::Error> {
        match self {
            Converter::Box(b) => {
                let full_range = matches!(
                    frame.format(),
                    Pixel::YUVJ420P | Pixel::YUVJ422P | Pixel::YUVJ444P
                ) || frame.color_range() == ff::color::Range::JPEG;
                let plane = |i: usize| (frame.data(i), frame.stride(i));
                b.run([plane(0), plane(1), plane(2)], full_range, planes);
            }
            Converter::Sws(sws, out) => {
                sws.run(frame, out)?;
                // GBRP holds G, B, R in planes 0, 1, 2.
                for (plane, index) in planes.iter_mut().zip([2, 0, 1]) {
                    let (stride, data) = (out.stride(index), out.data(index));
                    plane.clear();
                    for row in 0..dh {
                        plane.extend_from_slice(&data[row * stride..row * stride + dw]);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Receive every frame the decoder has ready. Returns `false` when the callback asked to stop.
fn drain(
    decoder: &mut ff::decoder::Video,
    tb: ff::Rational,
    options: &DecodeOptions,
    state: &mut FrameState,
    report: &mut DecodeReport,
    on_frame: &mut dyn FnMut(&FrameView) -> bool,
) -> bool {
    let mut frame = ff::frame::Video::empty();
    loop {
        match decoder.receive_frame(&mut frame) {
            Ok(()) => {}
            Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => return true,
            Err(ff::Error::Eof) => return true,
            Err(e) => {
                report.error(format!("frame {}: {e}", report.frames));
                return true;
            }
        }
        let corrupt = crate::frames::is_damaged(&frame);
        if corrupt {
            report.error(format!(
                "frame {} decoded with errors (concealed)",
                report.frames
            ));
        }
        let (w, h) = (frame.width(), frame.height());
        let (dw, dh) = match state.convert(&frame, options.max_width, options.max_height) {
            Ok(Some(size)) => size,
            Ok(None) => continue,
            Err(e) => {
                report.error(format!("frame {}: {e}", report.frames));
                continue;
            }
        };
        let pts = frame.timestamp();
        let view = FrameView {
            index: report.frames,
            pts,
            time_secs: pts.map(|p| p as f64 * f64::from(tb)),
            coded_width: w,
            coded_height: h,
            corrupt,
            key: frame.is_key(),
            content_hash: crate::frames::content_hash(&frame),
            planes: state.planes(),
            luma: state.luma(),
            width: dw,
            height: dh,
            coded_luma: crate::frames::luma_plane(&frame),
            declared_fields: crate::frames::declared_fields(&frame),
        };
        report.frames += 1;
        if !on_frame(&view) {
            return false;
        }
    }
}

/// Largest size within `max_w` x `max_h` with the aspect ratio of `w` x `h` (even, >= 2).
fn fit(w: u32, h: u32, max_w: u32, max_h: u32) -> (u32, u32) {
    let scale = (f64::from(max_w) / f64::from(w))
        .min(f64::from(max_h) / f64::from(h))
        .min(1.0);
    let even = |v: f64| ((v.round() as u32) & !1).max(2);
    (even(f64::from(w) * scale), even(f64::from(h) * scale))
}

/// The duration a video stream declares: its own, else the container's.
pub(crate) fn declared_duration_secs(
    input: &ff::format::context::Input,
    stream: &ff::format::stream::Stream<'_>,
) -> Option<f64> {
    if stream.duration() > 0 {
        Some(stream.duration() as f64 * f64::from(stream.time_base()))
    } else {
        // SAFETY: reading a plain field of the format context owned by `input`.
        let d = unsafe { (*input.as_ptr()).duration };
        (d > 0).then(|| d as f64 / f64::from(ffi::AV_TIME_BASE))
    }
}

/// Whether the demuxer marks `packet` to discard (`AV_PKT_FLAG_DISCARD`, which ffmpeg-next's
/// flags do not name): decoded for the frames after it, shown never.
pub(crate) fn is_discarded(packet: &ff::Packet) -> bool {
    // SAFETY: reading a plain field of the packet owned by `packet`.
    let flags = unsafe { (*ff::packet::Ref::as_ptr(packet)).flags };
    flags & ffi::AV_PKT_FLAG_DISCARD != 0
}

/// Whether the container states its length (a header's or an index's duration), rather than
/// FFmpeg estimating it from the last timestamps or the bit rate (MPEG-TS and -PS, elementary
/// streams): only a stated length shows a file cut short.
pub(crate) fn duration_stated(input: &ff::format::context::Input) -> bool {
    // SAFETY: reading a plain field of the format context owned by `input`.
    let method = unsafe { (*input.as_ptr()).duration_estimation_method };
    method == ffi::AVDurationEstimationMethod::AVFMT_DURATION_FROM_STREAM
}

/// The video stream `choice` names ([`StreamChoice`]): FFmpeg's best by default.
pub(crate) fn video_stream(
    input: &ff::format::context::Input,
    choice: StreamChoice,
) -> Option<ff::format::stream::Stream<'_>> {
    let is_video = |s: &ff::format::stream::Stream| s.parameters().medium() == Medium::Video;
    let is_cover =
        |s: &ff::format::stream::Stream| s.disposition().contains(Disposition::ATTACHED_PIC);
    let first = || input.streams().find(|s| is_video(s) && !is_cover(s));
    match choice {
        StreamChoice::Index(i) => input
            .stream(i as usize)
            .filter(|s| is_video(s) && !is_cover(s))
            .or_else(|| video_stream(input, StreamChoice::Best)),
        StreamChoice::First => first().or_else(|| input.streams().find(|s| is_video(s))),
        // av_find_best_stream ranks cover art by the same rules; a file with a video besides
        // it is read from the video.
        StreamChoice::Best => match input.streams().best(ff::media::Type::Video) {
            Some(best) if is_cover(&best) => first().or(Some(best)),
            best => best,
        },
    }
}

/// Timestamps of every frame of a file's or an object's video stream (`stream`) in display
/// order, read from the packets (no decoding), with the stream's time base: the same frames, and the same
/// indices, as the loader's reader ([`FrameIndex`](crate::frames::FrameIndex)).
/// Frame `i` is shown from `pts[i]` until `pts[i + 1]`.
pub fn frame_timestamps(
    source: &Source,
    stream: StreamChoice,
) -> Result<(Vec<i64>, Ratio), DecodeError> {
    ffmpeg_log::init();
    let mut input = source
        .open()
        .input(|| false)
        .map_err(|e| DecodeError::Open(e.to_string()))?;
    let stream = video_stream(&input, stream).ok_or(DecodeError::NoVideo)?;
    let index = stream.index();
    let tb = stream.time_base();
    let time_base = Ratio::new(tb.numerator(), tb.denominator())
        .ok_or_else(|| DecodeError::Setup("the stream has no time base".into()))?;
    let step = crate::frames::stream_frame_step(&stream, time_base);
    let frames = crate::frames::FrameIndex::read(&mut input, index, step);
    Ok((frames.pts, time_base))
}

/// The first picture of a file that decodes, fitted within `max_side` (JPEGs decode at a
/// quarter size when that is enough), as packed RGB: a thumbnail's source.
pub fn first_picture(
    source: &Opened,
    max_side: u32,
    deadline: Instant,
) -> Result<(usize, usize, Vec<u8>), DecodeError> {
    let options = DecodeOptions {
        max_width: max_side,
        max_height: max_side,
        deadline: Some(deadline),
        ..DecodeOptions::default()
    };
    let mut picture = None;
    decode_frames(source, &options, 2, &mut |f| {
        picture = Some((f.width, f.height, f.rgb24()));
        false
    })?;
    picture.ok_or(DecodeError::NoFrame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{ImageKind, Pattern, write_image};
    use std::path::Path;

    /// Mean of each of the R, G and B planes of the first frame of `path`.
    fn channel_means(path: &Path) -> [f64; 3] {
        let mut means = None;
        decode_frames(
            &Source::from(path).open(),
            &DecodeOptions::default(),
            0,
            &mut |f| {
                means = Some(
                    f.planes
                        .map(|p| p.iter().map(|&v| f64::from(v)).sum::<f64>() / p.len() as f64),
                );
                false
            },
        )
        .expect("decodes");
        means.expect("a frame")
    }

    #[test]
    fn box_and_swscale_paths_agree_on_colour() {
        // The same coloured shots as PNG (RGB: swscale into planar GBRP) and JPEG (8-bit
        // YUV: the box path). A plane swap or a wrong range would move a mean by far more.
        let dir = tempfile::tempdir().expect("tempdir");
        for shot in 0..6 {
            let pattern = Pattern::Shots { len: 1 };
            let png = dir.path().join(format!("{shot}.png"));
            let jpg = dir.path().join(format!("{shot}.jpg"));
            write_image(&png, ImageKind::Png, 640, 360, pattern, shot, None).expect("png");
            write_image(&jpg, ImageKind::Jpeg, 640, 360, pattern, shot, None).expect("jpeg");
            let (a, b) = (channel_means(&png), channel_means(&jpg));
            for c in 0..3 {
                assert!(
                    (a[c] - b[c]).abs() < 4.0,
                    "shot {shot}, channel {c}: PNG {a:?} against JPEG {b:?}"
                );
            }
            let spread = a.iter().copied().fold(f64::MIN, f64::max)
                - a.iter().copied().fold(f64::MAX, f64::min);
            assert!(spread > 20.0, "shot {shot} is coloured: {a:?}");
        }
    }

    #[test]
    fn fit_keeps_aspect_and_never_upscales() {
        assert_eq!(fit(1920, 1080, 256, 256), (256, 144));
        assert_eq!(fit(1080, 1920, 256, 256), (144, 256));
        assert_eq!(fit(100, 50, 256, 256), (100, 50));
        assert_eq!(fit(1, 1, 256, 256), (2, 2));
    }
}
