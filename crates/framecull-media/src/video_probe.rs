//! Video metadata through libavformat: container and stream headers, no full decode.

use std::ffi::CStr;
use std::time::Instant;

use ff::ffi;
use ff::format::stream::Disposition;
use ff::media::Type as Medium;
use ffmpeg_next as ff;

use crate::ffmpeg_log;
use crate::source::Opened;
use framecull_model::{ItemStatus, MediaInfo, MediaKind, Probe, Ratio, StreamChoice};

/// Probe a file with libavformat: the video stream `stream` chooses, whose index the probe
/// records. `deadline` bounds the time spent in FFmpeg's I/O and stream analysis, so a
/// pathological file cannot hang the caller.
pub fn probe_video(source: &Opened, deadline: Instant, stream: StreamChoice) -> Probe {
    ffmpeg_log::init();
    ffmpeg_log::clear_last_error();
    let mut input = match open_for_probe(source, deadline) {
        Ok(input) => input,
        Err(ff::Error::Exit) => {
            return Probe::failed(
                MediaKind::Video,
                ItemStatus::Error,
                "probe took longer than the per-file time budget",
            );
        }
        Err(e) => {
            let reason = match ffmpeg_log::take_last_error() {
                Some(detail) if !detail.eq_ignore_ascii_case(&e.to_string()) => {
                    format!("cannot open: {e} ({detail})")
                }
                _ => format!("cannot open: {e}"),
            };
            let status = match e {
                ff::Error::InvalidData | ff::Error::Eof => ItemStatus::Error,
                ff::Error::DemuxerNotFound | ff::Error::DecoderNotFound => ItemStatus::Unsupported,
                _ => ItemStatus::Error,
            };
            return Probe::failed(MediaKind::Video, status, reason);
        }
    };
    let mut probe = describe(&input, stream);
    count_frames_without_duration(&mut input, &mut probe, deadline);
    probe
}

/// Demuxers whose streams declare no frame rate (MPEG transport and program streams, FLV):
/// FFmpeg's stream analysis reads packets until it has timed 20 frames of an H.264 stream (0.7 s
/// at 30 fps, 2.7 % of an 80 MB 720p recording read from a bucket with its end).
const FOUND_BY_READING: &[&str] = &["mpegts", "mpeg", "flv"];

/// How much of such a file the probe analyses (`analyzeduration`, microseconds): 7 frames at
/// 30 fps, 1.1 MiB of an 80 MB 720p recording with its head and end (1.4 %). A stream still
/// without its parameters then is analysed again with FFmpeg's defaults.
const SHORT_ANALYSIS_US: &str = "250000";

/// Open `source` for the probe: FFmpeg's stream analysis, shortened for the demuxers of
/// [`FOUND_BY_READING`] while it finds every stream's parameters.
fn open_for_probe(
    source: &Opened,
    deadline: Instant,
) -> Result<ff::format::context::Input, ff::Error> {
    let open = |options| source.input_with(options, move || Instant::now() > deadline);
    let found_by_reading = source
        .read_prefix(crate::sniff::FFMPEG_PROBE_LEN as u64)
        .ok()
        .and_then(|head| crate::sniff::ffmpeg_format_of(&head))
        .is_some_and(|(format, _)| FOUND_BY_READING.contains(&format.as_str()));
    if !found_by_reading {
        return open(None);
    }
    let mut options = ff::Dictionary::new();
    options.set("analyzeduration", SHORT_ANALYSIS_US);
    match open(Some(options)) {
        Ok(input) if !every_stream_described(&input) => {
            drop(input);
            open(None)
        }
        opened => opened,
    }
}

/// Whether FFmpeg's analysis gave every video stream its size, pixel format and a frame rate,
/// and every audio stream its sample rate and format.
fn every_stream_described(input: &ff::format::context::Input) -> bool {
    input.streams().all(|stream| {
        let params = stream.parameters();
        // SAFETY: `params` wraps the stream's AVCodecParameters, valid while `input` lives;
        // we only read plain fields.
        let par = unsafe { &*params.as_ptr() };
        match params.medium() {
            Medium::Video if !stream.disposition().contains(Disposition::ATTACHED_PIC) => {
                par.width > 0
                    && par.format >= 0
                    && (stream.avg_frame_rate().numerator() > 0 || stream.rate().numerator() > 0)
            }
            Medium::Audio => par.sample_rate > 0 && par.format >= 0,
            _ => true,
        }
    })
}

/// The reason for a stream this FFmpeg cannot decode; [`MISSING_DECODER`] starts it, so
/// a scan can report such files once, grouped by codec.
fn missing_decoder(codec: ff::codec::Id) -> String {
    let name = match codec {
        ff::codec::Id::None => "an unknown codec (the container names none FFmpeg knows)".into(),
        id => format!("the {} decoder", id.name()),
    };
    format!(
        "{MISSING_DECODER}{name}, which this FFmpeg ({}) lacks",
        crate::ffmpeg_version()
    )
}

/// How the reason of a file that needs a decoder this FFmpeg lacks begins.
pub const MISSING_DECODER: &str = "needs ";

/// Demuxers of raw elementary streams: no container, so no declared duration or frame count.
const ELEMENTARY: &[&str] = &[
    "h264",
    "hevc",
    "mpegvideo",
    "m4v",
    "cavsvideo",
    "vc1",
    "obu",
];

/// Files that declare neither a duration nor a frame count get their frames counted from
/// the packets (no decoding), so a whole-file clip covers the whole file: elementary streams
/// (raw H.264, HEVC, MPEG-2, ...), which have no container, and containers written without
/// one (a live Matroska or WebM recording, a file muxed to a pipe). Elementary streams also
/// get their duration from the packets; a container that omits it keeps it unknown, as
/// ffprobe reports it (the deep pass measures it). A count cut short by the per-file time
/// budget (the interrupt callback) is not kept.
fn count_frames_without_duration(
    input: &mut ff::format::context::Input,
    probe: &mut Probe,
    deadline: Instant,
) {
    let info = &mut probe.info;
    let elementary = info
        .container
        .as_deref()
        .is_some_and(|c| ELEMENTARY.contains(&c));
    if probe.kind != MediaKind::Video || info.duration_secs.is_some() || info.frame_count.is_some()
    {
        return;
    }
    let chosen = StreamChoice::Index(info.stream_index.unwrap_or_default());
    let Some((index, tb, step)) = crate::decode::video_stream(input, chosen).and_then(|s| {
        let tb = s.time_base();
        let time_base = Ratio::new(tb.numerator(), tb.denominator())?;
        Some((
            s.index(),
            time_base,
            crate::frames::stream_frame_step(&s, time_base),
        ))
    }) else {
        return;
    };
    let frames = crate::frames::FrameIndex::read(input, index, step);
    if Instant::now() > deadline {
        return;
    }
    if let (Some(first), Some(last)) = (frames.pts.first(), frames.pts.last()) {
        info.frame_count = Some(frames.len() as i64);
        if elementary {
            info.duration_secs = Some((last - first + step) as f64 * tb.as_f64());
        }
    }
}

fn describe(input: &ff::format::context::Input, choice: StreamChoice) -> Probe {
    let container = input.format().name().to_string();
    let has_audio = input
        .streams()
        .any(|s| s.parameters().medium() == Medium::Audio);
    let Some(stream) = crate::decode::video_stream(input, choice).filter(|s| !is_attached(s))
    else {
        return no_video_stream(input, container, has_audio);
    };

    let codec_id = stream.parameters().id();
    let info = video_stream_info(input, &stream, &container, has_audio);
    // Single-picture demuxers (`png_pipe`, `image2`, ...) mean an image FFmpeg can read.
    let kind = if container.ends_with("_pipe") || container == "image2" {
        MediaKind::Image
    } else {
        MediaKind::Video
    };
    let info = if kind == MediaKind::Image {
        // A still picture: rates and durations of the single-frame demuxer mean nothing.
        MediaInfo {
            container: info.codec.clone(),
            frame_count: Some(1),
            fps: None,
            fps_base: None,
            time_base: None,
            start_secs: None,
            duration_secs: None,
            bit_rate: None,
            has_audio: None,
            ..info
        }
    } else {
        info
    };
    if info.width.is_none() || info.height.is_none() {
        let reason = if kind == MediaKind::Image {
            "image header declares no size (damaged header)"
        } else {
            "video stream declares no frame size (damaged or missing codec headers)"
        };
        let mut probe = Probe::failed(kind, ItemStatus::Error, reason);
        probe.info = info;
        return probe;
    }
    if ff::decoder::find(codec_id).is_none() {
        let mut probe = Probe::failed(kind, ItemStatus::Unsupported, missing_decoder(codec_id));
        probe.info = info;
        return probe;
    }
    Probe::ok(kind, info)
}

/// Whether stream `s` is a picture attached to the file (cover art), not a video.
fn is_attached(s: &ff::format::stream::Stream) -> bool {
    s.disposition().contains(Disposition::ATTACHED_PIC)
}

/// The probe of a file in `container` without a video stream to choose: why (sound only,
/// cover art only, or both), and whether it has sound.
fn no_video_stream(
    input: &ff::format::context::Input,
    container: String,
    has_audio: bool,
) -> Probe {
    let cover = input
        .streams()
        .any(|s| s.parameters().medium() == Medium::Video && is_attached(&s));
    let reason = match (has_audio, cover) {
        (true, true) => "no video stream: audio with cover art only",
        (true, false) => "no video stream: audio only",
        (false, true) => "no video stream: cover art only",
        (false, false) => "no video stream",
    };
    let mut probe = Probe::failed(MediaKind::Other, ItemStatus::Unsupported, reason);
    probe.info.container = Some(container);
    probe.info.has_audio = Some(has_audio);
    probe
}

/// What the headers of `input` (in `container`) and of its video stream `stream` say of the
/// video: codec, size, timing, rates and colour.
fn video_stream_info(
    input: &ff::format::context::Input,
    stream: &ff::format::stream::Stream,
    container: &str,
    has_audio: bool,
) -> MediaInfo {
    let params = stream.parameters();
    // SAFETY: `params` wraps the stream's AVCodecParameters, valid while `input` lives;
    // we only read plain fields.
    let par = unsafe { &*params.as_ptr() };
    let codec_id = params.id();
    let tb = stream.time_base();
    let time_base = Ratio::new(tb.numerator(), tb.denominator());
    let to_secs =
        |ts: i64| -> Option<f64> { (ts != ffi::AV_NOPTS_VALUE).then(|| ts as f64 * f64::from(tb)) };
    // SAFETY: reading plain fields of the format context owned by `input`.
    let (fmt_start, fmt_duration, fmt_bit_rate) = unsafe {
        let ctx = &*input.as_ptr();
        (ctx.start_time, ctx.duration, ctx.bit_rate)
    };
    let av_time = |ts: i64| -> Option<f64> {
        (ts != ffi::AV_NOPTS_VALUE).then(|| ts as f64 / f64::from(ffi::AV_TIME_BASE))
    };
    let duration_secs = to_secs(stream.duration())
        .filter(|d| *d > 0.0)
        .or_else(|| av_time(fmt_duration).filter(|d| *d > 0.0));
    let start_secs = to_secs(stream.start_time()).or_else(|| av_time(fmt_start));
    let rate = |r: ff::Rational| Ratio::new(r.numerator(), r.denominator()).map(Ratio::as_f64);
    let fps_base = rate(stream.rate()).filter(|f| f.is_finite() && *f > 0.0);
    let fps = rate(stream.avg_frame_rate())
        .filter(|f| f.is_finite() && *f > 0.0)
        .or(fps_base);
    let frames = stream.frames();
    let bit_rate = if par.bit_rate > 0 {
        Some(par.bit_rate)
    } else {
        (fmt_bit_rate > 0).then_some(fmt_bit_rate)
    };
    let sar = Ratio::new(par.sample_aspect_ratio.num, par.sample_aspect_ratio.den)
        .or_else(|| {
            // SAFETY: reading a plain field of the stream, valid while `input` lives.
            let s = unsafe { (*stream.as_ptr()).sample_aspect_ratio };
            Ratio::new(s.num, s.den)
        })
        .filter(|r| r.num > 0 && r.den > 0);

    MediaInfo {
        container: Some(container.to_string()),
        codec: Some(codec_id.name().to_string()),
        profile: profile_name(par.codec_id, par.profile),
        pix_fmt: pix_fmt_name(par.format),
        width: u32::try_from(par.width).ok().filter(|w| *w > 0),
        height: u32::try_from(par.height).ok().filter(|h| *h > 0),
        rotation_deg: Some(rotation_deg(stream)),
        sample_aspect_ratio: sar,
        fps,
        fps_base,
        time_base,
        start_secs,
        duration_secs,
        frame_count: (frames > 0).then_some(frames),
        bit_rate,
        has_audio: Some(has_audio),
        exif_orientation: None,
        stream_index: u32::try_from(stream.index()).ok(),
        color_space: Some(par.color_space)
            .filter(|c| *c != ffi::AVColorSpace::AVCOL_SPC_UNSPECIFIED)
            .and_then(|c| ff::color::Space::from(c).name())
            .map(str::to_string),
    }
}

/// Clockwise display rotation in degrees (0, 90, 180, 270), from the display matrix or the
/// legacy `rotate` tag.
fn rotation_deg(stream: &ff::format::stream::Stream) -> u32 {
    for side in stream.side_data() {
        if side.kind() == ff::codec::packet::side_data::Type::DisplayMatrix
            && side.data().len() >= 9 * 4
        {
            // SAFETY: the display matrix is 9 i32 values (checked length above); FFmpeg
            // reads it without keeping the pointer. Unaligned reads are handled by copying.
            let mut m = [0i32; 9];
            for (i, v) in m.iter_mut().enumerate() {
                let b = &side.data()[i * 4..i * 4 + 4];
                *v = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            }
            let ccw = unsafe { ffi::av_display_rotation_get(m.as_ptr()) };
            if ccw.is_finite() {
                return normalise_degrees(-ccw);
            }
        }
    }
    stream
        .metadata()
        .get("rotate")
        .and_then(|r| r.trim().parse::<f64>().ok())
        .map_or(0, normalise_degrees)
}

fn normalise_degrees(deg: f64) -> u32 {
    let quarter = (deg / 90.0).round() as i64;
    (quarter.rem_euclid(4) * 90) as u32
}

fn profile_name(codec: ffi::AVCodecID, profile: i32) -> Option<String> {
    if profile < 0 {
        return None;
    }
    // SAFETY: avcodec_profile_name returns a static string or NULL.
    let p = unsafe { ffi::avcodec_profile_name(codec, profile) };
    // SAFETY: non-null pointers from FFmpeg point at static NUL-terminated strings.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn pix_fmt_name(format: i32) -> Option<String> {
    if format < 0 {
        return None;
    }
    // SAFETY: the value comes from codec parameters of a video stream, so it is an
    // AVPixelFormat; av_get_pix_fmt_name returns NULL for unknown values.
    let p =
        unsafe { ffi::av_get_pix_fmt_name(std::mem::transmute::<i32, ffi::AVPixelFormat>(format)) };
    // SAFETY: a non-null result is a static NUL-terminated string.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::normalise_degrees;

    #[test]
    fn rotation_is_normalised_clockwise() {
        assert_eq!(normalise_degrees(180.0), 180);
        assert_eq!(normalise_degrees(-90.0), 270);
        assert_eq!(normalise_degrees(90.0), 90);
        assert_eq!(normalise_degrees(-0.0), 0);
        assert_eq!(normalise_degrees(359.9), 0);
    }
}
