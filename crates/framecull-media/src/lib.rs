//! The only place that touches FFmpeg, image headers and `unsafe`.

#![allow(unsafe_code)]

pub mod clip;
pub mod convert;
pub mod decode;
pub mod downscale;
mod ffmpeg_log;
pub mod fingerprint;
pub mod frames;
mod image_probe;
pub mod isolate;
mod nal;
pub mod packets;
pub mod picture;
pub mod pictures;
pub mod reader;
pub mod sniff;
pub mod source;
pub mod synth;
mod video_probe;

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

pub use ffmpeg_log::init;
pub use image_probe::{ImageProbeError, exif_orientation_in, exif_orientation_of, image_header};
pub use sniff::{
    ExtensionClass, FFMPEG_PROBE_LEN, ImageFormat, Sniffed, classify_extension, ffmpeg_recognises,
    sniff,
};
pub use source::{Opened, Source};
pub use video_probe::MISSING_DECODER;

use framecull_model::{ItemStatus, MediaKind, Probe, StreamChoice};

/// The FFmpeg libraries' version, as FFmpeg reports it (e.g. `5.1.6-0+deb12u1`).
pub fn ffmpeg_version() -> String {
    // SAFETY: av_version_info returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(ffmpeg_next::ffi::av_version_info()) };
    version.to_string_lossy().into_owned()
}

/// The decoders of the codecs datasets are usually made of, as `--version` reports them.
const DATASET_CODECS: &[ffmpeg_next::codec::Id] = {
    use ffmpeg_next::codec::Id;
    &[
        Id::H264,
        Id::HEVC,
        Id::AV1,
        Id::VP9,
        Id::VP8,
        Id::MPEG4,
        Id::MPEG2VIDEO,
        Id::MJPEG,
        Id::PRORES,
        Id::DNXHD,
        Id::FFV1,
        Id::THEORA,
        Id::VC1,
        Id::H263,
        Id::PNG,
        Id::JPEG2000,
        Id::WEBP,
        Id::GIF,
        Id::TIFF,
        Id::BMP,
    ]
};

/// The FFmpeg this binary runs with: its version, its libraries' versions, and which decoders
/// of common dataset codecs it has and lacks (files that need a missing one are recorded as
/// `unsupported`, and a scan names them once per codec).
pub fn ffmpeg_report() -> String {
    let triple = |v: u32| format!("{}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff);
    // SAFETY: the *_version functions only return constants of the loaded libraries.
    let (codec, format, util, scale) = unsafe {
        use ffmpeg_next::ffi;
        (
            ffi::avcodec_version(),
            ffi::avformat_version(),
            ffi::avutil_version(),
            ffi::swscale_version(),
        )
    };
    let (mut present, mut missing) = (Vec::new(), Vec::new());
    for &id in DATASET_CODECS {
        match ffmpeg_next::decoder::find(id) {
            Some(decoder) if decoder.name() != id.name() => {
                present.push(format!("{} ({})", id.name(), decoder.name()));
            }
            Some(_) => present.push(id.name().to_string()),
            None => missing.push(id.name().to_string()),
        }
    }
    let missing = if missing.is_empty() {
        "none".to_string()
    } else {
        missing.join(", ")
    };
    format!(
        "FFmpeg {}: libavcodec {}, libavformat {}, libavutil {}, libswscale {}\n\
         decoders: {}\n\
         missing decoders: {missing}",
        ffmpeg_version(),
        triple(codec),
        triple(format),
        triple(util),
        triple(scale),
        present.join(", ")
    )
}

/// Makes writes past a file-size limit (`ulimit -f`, RLIMIT_FSIZE) fail with an error that
/// names the file (EFBIG), as a full disk does, instead of SIGXFSZ ending the process in the
/// middle of a write. (Here because this module holds the crate's `unsafe`.)
pub fn ignore_file_size_signal() {
    // SAFETY: SIG_IGN installs no handler; nothing runs on the signal.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Read the first [`sniff::SNIFF_LEN`] bytes of a file.
pub fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    read_head_len(path, sniff::SNIFF_LEN)
}

/// Read the first `len` bytes of a file (fewer when it is shorter).
pub fn read_head_len(path: &Path, len: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(len);
    File::open(path)?.take(len as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Probe one file: recognise it by content, then read its metadata from headers.
/// Never panics on bad input; every failure becomes a `Probe` with a status and reason.
pub fn probe_file(path: &Path, budget: Duration) -> Probe {
    probe(&Source::from(path).open(), budget)
}

/// [`probe_file`] for any source. An object costs one ranged request for the signature and
/// image headers, and whatever more FFmpeg reads of a video's headers.
pub fn probe(source: &Opened, budget: Duration) -> Probe {
    probe_with(source, budget, &mut |deadline| {
        probe_with_ffmpeg(source, deadline, StreamChoice::Best)
    })
}

/// FFmpeg's probe of a file's container and streams (videos, and what our signatures and
/// header readers do not know), stopping at `deadline`, of the video stream `stream` chooses.
pub fn probe_with_ffmpeg(source: &Opened, deadline: Instant, stream: StreamChoice) -> Probe {
    video_probe::probe_video(source, deadline, stream)
}

/// [`probe`] with FFmpeg's part done by `ffmpeg` (given the deadline), e.g. in a worker
/// process: signatures and image headers are read here, by safe code.
pub fn probe_with(
    source: &Opened,
    budget: Duration,
    ffmpeg: &mut dyn FnMut(Instant) -> Probe,
) -> Probe {
    let ext_kind = match classify_extension(source.name()) {
        ExtensionClass::Image => MediaKind::Image,
        ExtensionClass::Video => MediaKind::Video,
        _ => MediaKind::Other,
    };
    let head = match source.read_prefix(sniff::SNIFF_LEN as u64) {
        Ok(head) => head,
        Err(e) => return Probe::failed(ext_kind, ItemStatus::Error, format!("cannot read: {e}")),
    };
    match sniff(&head) {
        Sniffed::Empty => Probe::failed(ext_kind, ItemStatus::Error, "empty file (0 bytes)"),
        Sniffed::Image(format) => {
            let probe = image_probe::probe_image(source, format);
            if probe.status == ItemStatus::Ok {
                return probe;
            }
            // Our header reader is strict; FFmpeg resynchronises past damaged segments. If it
            // finds a picture, the file is usable.
            let mut ff = ffmpeg(Instant::now() + budget);
            if ff.status == ItemStatus::Ok && ff.kind == MediaKind::Image {
                ff.info.container = Some(format.name().to_string());
                ff.info.codec = Some(format.name().to_string());
                ff.info.exif_orientation = image_probe::exif_orientation_in(source);
                return ff;
            }
            probe
        }
        Sniffed::Video => ffmpeg(Instant::now() + budget),
        Sniffed::Unknown => {
            // No signature we know; FFmpeg probes content for many more formats.
            let mut probe = ffmpeg(Instant::now() + budget);
            if probe.status != ItemStatus::Ok && probe.kind == MediaKind::Video {
                probe.kind = ext_kind;
                if ext_kind == MediaKind::Image && probe.status == ItemStatus::Error {
                    probe.error = Some(format!(
                        "not a recognised image: {}",
                        probe.error.as_deref().unwrap_or("unknown format")
                    ));
                }
            }
            probe
        }
    }
}
