//! Synthetic media written with FFmpeg's encoders: test fixtures, benchmarks and the demo
//! dataset. Content is deterministic for a given spec.

use std::path::Path;

use ff::ffi;
use ff::format::Pixel;
use ffmpeg_next as ff;

use crate::ffmpeg_log;

pub mod damage;

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("FFmpeg error while writing {what}: {source}")]
    Ffmpeg {
        what: &'static str,
        source: ff::Error,
    },
    #[error("no FFmpeg encoder named {0}")]
    NoEncoder(String),
    #[error("cannot write {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

fn ff_err(what: &'static str) -> impl FnOnce(ff::Error) -> SynthError {
    move |source| SynthError::Ffmpeg { what, source }
}

/// What the frames show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    /// A fixed gradient: no motion at all.
    Static,
    /// A gradient background with a bright box moving `speed` pixels per frame.
    MovingBox { speed: u32 },
    /// The whole gradient shifts `speed` pixels per frame (a camera pan).
    Pan { speed: u32 },
    /// Frame `i` shows its index (for frame-accuracy tests): the top half is 8 blocks, black
    /// or white by the bits of `i % 256` (most significant first); the bottom half is grey at
    /// luma 16 + (i * 37) % 220.
    Counter,
    /// Static, except frames `start..end` where a box moves `speed` pixels per frame.
    Burst { start: u32, end: u32, speed: u32 },
    /// Shots of `len` frames, each a different flat colour and texture (hard cuts between).
    Shots { len: u32 },
}

/// A synthetic video to write. The container is chosen from the file extension.
#[derive(Debug, Clone)]
pub struct VideoSpec {
    /// FFmpeg encoder name: `libx264`, `mpeg4`, `libvpx`, `libvpx-vp9`, `mjpeg`, ...
    pub codec: String,
    pub width: u32,
    pub height: u32,
    /// Frame rate as a rational (`(30000, 1001)` for 29.97).
    pub fps: (i32, i32),
    pub frames: u32,
    pub pattern: Pattern,
    /// Clockwise display rotation to record in the container (display matrix).
    pub rotation_deg: Option<i32>,
    /// Irregular frame durations (variable frame rate): every third frame lasts twice as long.
    pub vfr: bool,
    /// Keyframe interval in frames.
    pub gop: u32,
    /// Per-pixel luma noise amplitude (uniform, +-noise), like sensor noise.
    pub noise: u8,
    /// Global brightness flicker: even frames brighter, odd frames darker, by this fraction.
    pub flicker: f32,
    /// MP4/MOV: put the index in front (`movflags=faststart`), as streaming files do.
    pub faststart: bool,
}

impl VideoSpec {
    pub fn new(codec: &str, width: u32, height: u32, fps: i32, frames: u32) -> Self {
        VideoSpec {
            codec: codec.to_string(),
            width,
            height,
            fps: (fps, 1),
            frames,
            pattern: Pattern::MovingBox { speed: 4 },
            rotation_deg: None,
            vfr: false,
            gop: 12,
            noise: 0,
            flicker: 0.0,
            faststart: false,
        }
    }
}

/// Fill a YUV 4:2:0 frame with frame `index` of the spec's pattern, noise and flicker.
fn fill_spec_frame(frame: &mut ff::frame::Video, spec: &VideoSpec, index: u32) {
    fill_frame(frame, spec.pattern, index);
    if spec.noise == 0 && spec.flicker == 0.0 {
        return;
    }
    let gain = 1.0
        + if index.is_multiple_of(2) {
            spec.flicker
        } else {
            -spec.flicker
        };
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let stride = frame.stride(0);
    let y = frame.data_mut(0);
    // xorshift: deterministic noise, different in every frame.
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (u64::from(index) << 17);
    let amplitude = i32::from(spec.noise);
    for row in 0..h {
        for px in &mut y[row * stride..row * stride + w] {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = if amplitude > 0 {
                (state % (2 * amplitude as u64 + 1)) as i32 - amplitude
            } else {
                0
            };
            let v = (f32::from(*px) * gain).round() as i32 + n;
            *px = v.clamp(0, 255) as u8;
        }
    }
}

/// Fill a YUV 4:2:0 frame with frame `index` of `pattern`.
fn fill_frame(frame: &mut ff::frame::Video, pattern: Pattern, index: u32) {
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let stride = frame.stride(0);
    let y = frame.data_mut(0);
    let gradient = |x: usize, row: usize, shift: usize| -> u8 {
        let v = ((x + shift) * 3 + row * 2) % 200;
        (28 + v) as u8
    };
    for row in 0..h {
        let line = &mut y[row * stride..row * stride + w];
        for (x, px) in line.iter_mut().enumerate() {
            *px = match pattern {
                Pattern::Static | Pattern::MovingBox { .. } | Pattern::Burst { .. } => {
                    gradient(x, row, 0)
                }
                Pattern::Shots { len } => {
                    let shot = (index / len.max(1)) as usize;
                    let base = [40usize, 200, 90, 160, 60, 220][shot % 6];
                    let stripe = if (x / (8 + shot * 3) + row / 16).is_multiple_of(2) {
                        0
                    } else {
                        20
                    };
                    (base + stripe).min(235) as u8
                }
                Pattern::Pan { speed } => gradient(x, row, index as usize * speed as usize),
                Pattern::Counter => {
                    if row < h / 2 {
                        let bit = 7 - (x * 8 / w.max(1)).min(7);
                        if (index >> bit) & 1 == 1 { 235 } else { 16 }
                    } else {
                        (16 + (index as usize * 37) % 220) as u8
                    }
                }
            };
        }
    }
    let moving = match pattern {
        Pattern::MovingBox { speed } => Some((speed, index)),
        // Before the burst the box waits at its start; after it, where the burst left it.
        Pattern::Burst { start, end, speed } => Some((speed, index.clamp(start, end) - start)),
        _ => None,
    };
    if let Some((speed, index)) = moving {
        let side = (w.min(h) / 4).max(2);
        let span = w.saturating_sub(side).max(1);
        let pos = (index as usize * speed as usize) % (2 * span);
        let x0 = if pos < span { pos } else { 2 * span - pos };
        let y0 = (h - side) / 2;
        for row in y0..y0 + side {
            for px in &mut y[row * stride + x0..row * stride + x0 + side] {
                *px = 235;
            }
        }
    }
    for plane in 1..3 {
        let stride = frame.stride(plane);
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let data = frame.data_mut(plane);
        let value = match pattern {
            Pattern::Shots { len } => {
                let shot = (index / len.max(1)) as usize;
                let (u, v) = [
                    (90u8, 170u8),
                    (170, 90),
                    (60, 60),
                    (200, 200),
                    (128, 40),
                    (40, 128),
                ][shot % 6];
                if plane == 1 { u } else { v }
            }
            _ if plane == 1 => 110,
            _ => 140,
        };
        for row in 0..ch {
            for px in &mut data[row * stride..row * stride + cw] {
                *px = value;
            }
        }
    }
}

/// Write a synthetic video.
pub fn write_video(path: &Path, spec: &VideoSpec) -> Result<(), SynthError> {
    ffmpeg_log::init();
    let mut octx = ff::format::output(&path).map_err(ff_err("output container"))?;
    let codec = ff::encoder::find_by_name(&spec.codec)
        .ok_or_else(|| SynthError::NoEncoder(spec.codec.clone()))?;
    let global_header = octx
        .format()
        .flags()
        .contains(ff::format::Flags::GLOBAL_HEADER);
    let pix = if spec.codec == "mjpeg" {
        Pixel::YUVJ420P
    } else {
        Pixel::YUV420P
    };
    // One tick per nominal frame; variable-rate frames last one or two ticks.
    let tb = ff::Rational::new(spec.fps.1, spec.fps.0);
    let mut enc = ff::codec::context::Context::new_with_codec(codec)
        .encoder()
        .video()
        .map_err(ff_err("encoder context"))?;
    enc.set_width(spec.width);
    enc.set_height(spec.height);
    enc.set_format(pix);
    enc.set_time_base(tb);
    enc.set_frame_rate(Some(ff::Rational::new(spec.fps.0, spec.fps.1)));
    enc.set_gop(spec.gop);
    enc.set_max_b_frames(0);
    if global_header {
        enc.set_flags(ff::codec::Flags::GLOBAL_HEADER);
    }
    let mut opts = ff::Dictionary::new();
    match spec.codec.as_str() {
        "libx264" | "libx265" => {
            opts.set("preset", "ultrafast");
            opts.set("crf", "23");
        }
        "libvpx" | "libvpx-vp9" => {
            opts.set("deadline", "realtime");
            opts.set("cpu-used", "8");
            opts.set("b", "1M");
        }
        _ => {}
    }
    // Quiet the libraries' own banners and statistics.
    match spec.codec.as_str() {
        "libx264" => opts.set("x264-params", "log-level=error"),
        "libx265" => opts.set("x265-params", "log-level=error"),
        _ => {}
    }
    let mut encoder = enc.open_with(opts).map_err(ff_err("encoder"))?;
    {
        let mut ost = octx.add_stream(codec).map_err(ff_err("stream"))?;
        ost.set_parameters(&encoder);
        ost.set_time_base(tb);
        if let Some(deg) = spec.rotation_deg {
            set_display_rotation(&mut ost, deg);
        }
    }
    if spec.faststart {
        let mut mux = ff::Dictionary::new();
        mux.set("movflags", "faststart");
        octx.write_header_with(mux).map_err(ff_err("header"))?;
    } else {
        octx.write_header().map_err(ff_err("header"))?;
    }
    let ost_tb = octx.stream(0).map_or(tb, |s| s.time_base());

    let mut frame = ff::frame::Video::new(pix, spec.width, spec.height);
    let mut pts: i64 = 0;
    let mut durations = std::collections::HashMap::new();
    for i in 0..spec.frames {
        fill_spec_frame(&mut frame, spec, i);
        frame.set_pts(Some(pts));
        let ticks = if spec.vfr && i % 3 == 2 { 2 } else { 1 };
        durations.insert(pts, ticks);
        pts += ticks;
        encoder.send_frame(&frame).map_err(ff_err("frame"))?;
        drain(&mut encoder, &mut octx, tb, ost_tb, &durations)?;
    }
    encoder.send_eof().map_err(ff_err("end of stream"))?;
    drain(&mut encoder, &mut octx, tb, ost_tb, &durations)?;
    octx.write_trailer().map_err(ff_err("trailer"))?;
    Ok(())
}

fn drain(
    encoder: &mut ff::encoder::Video,
    octx: &mut ff::format::context::Output,
    enc_tb: ff::Rational,
    ost_tb: ff::Rational,
    durations: &std::collections::HashMap<i64, i64>,
) -> Result<(), SynthError> {
    let mut packet = ff::Packet::empty();
    while encoder.receive_packet(&mut packet).is_ok() {
        packet.set_stream(0);
        if let Some(d) = packet.pts().and_then(|p| durations.get(&p)) {
            packet.set_duration(*d);
        }
        packet.rescale_ts(enc_tb, ost_tb);
        packet.write_interleaved(octx).map_err(ff_err("packet"))?;
    }
    Ok(())
}

fn set_display_rotation(ost: &mut ff::format::stream::StreamMut, clockwise_deg: i32) {
    // SAFETY: the stream belongs to an output context that has not written its header;
    // av_stream_new_side_data allocates 9 i32 values owned by the stream, which
    // av_display_rotation_set fully initialises. `set` takes a clockwise angle (`get`
    // returns the counter-clockwise one), checked against the corpus' rotated files.
    unsafe {
        let data = ffi::av_stream_new_side_data(
            ost.as_mut_ptr(),
            ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
            9 * 4,
        );
        if !data.is_null() {
            ffi::av_display_rotation_set(data.cast::<i32>(), f64::from(clockwise_deg));
        }
    }
}

/// Copy the first video stream of `src` to `dst` (same kind of container) with every packet
/// marked a keyframe: the broken index of some AVI writers, whose "keyframes" are not
/// complete pictures, for tests of seeking.
pub fn remux_every_packet_key(src: &Path, dst: &Path) -> Result<(), SynthError> {
    remux_video(src, dst, |packet| packet.set_flags(ff::packet::Flags::KEY))
}

/// The index of the best video stream of `input`.
fn best_video(input: &ff::format::context::Input) -> Result<usize, SynthError> {
    input
        .streams()
        .best(ff::media::Type::Video)
        .map(|s| s.index())
        .ok_or(SynthError::Ffmpeg {
            what: "video stream",
            source: ff::Error::StreamNotFound,
        })
}

/// Copy the best video stream of `src` to `dst` (the kind of container its extension names),
/// each packet passed through `edit` first (in the input's time base, its position still the
/// input's).
pub(crate) fn remux_video(
    src: &Path,
    dst: &Path,
    mut edit: impl FnMut(&mut ff::Packet),
) -> Result<(), SynthError> {
    ffmpeg_log::init();
    let mut ictx = ff::format::input(&src).map_err(ff_err("input container"))?;
    let index = best_video(&ictx)?;
    let (parameters, in_tb) = {
        let stream = ictx.stream(index).ok_or(SynthError::Ffmpeg {
            what: "video stream",
            source: ff::Error::StreamNotFound,
        })?;
        (stream.parameters(), stream.time_base())
    };
    let mut octx = ff::format::output(&dst).map_err(ff_err("output container"))?;
    {
        let mut ost = octx
            .add_stream(ff::encoder::find(ff::codec::Id::None))
            .map_err(ff_err("stream"))?;
        ost.set_parameters(parameters);
        ost.set_time_base(in_tb);
    }
    octx.write_header().map_err(ff_err("header"))?;
    let out_tb = octx.stream(0).map_or(in_tb, |s| s.time_base());
    for (stream, mut packet) in ictx.packets() {
        if stream.index() != index {
            continue;
        }
        edit(&mut packet);
        packet.set_stream(0);
        packet.set_position(-1);
        packet.rescale_ts(in_tb, out_tb);
        packet
            .write_interleaved(&mut octx)
            .map_err(ff_err("packet"))?;
    }
    octx.write_trailer().map_err(ff_err("trailer"))
}

/// Image formats the synthesiser writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Png,
    Jpeg,
}

/// Write a synthetic still image; `exif_orientation` adds an EXIF block to JPEGs.
pub fn write_image(
    path: &Path,
    kind: ImageKind,
    width: u32,
    height: u32,
    pattern: Pattern,
    index: u32,
    exif_orientation: Option<u16>,
) -> Result<(), SynthError> {
    let bytes = encode_image(kind, width, height, pattern, index)?;
    let bytes = match (kind, exif_orientation) {
        (ImageKind::Jpeg, Some(o)) => with_exif_orientation(&bytes, o),
        _ => bytes,
    };
    std::fs::write(path, bytes).map_err(|source| SynthError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Encode one frame with FFmpeg's `png` or `mjpeg` encoder; the packet is the whole file.
pub fn encode_image(
    kind: ImageKind,
    width: u32,
    height: u32,
    pattern: Pattern,
    index: u32,
) -> Result<Vec<u8>, SynthError> {
    ffmpeg_log::init();
    let (name, pix) = match kind {
        ImageKind::Png => ("png", Pixel::RGB24),
        ImageKind::Jpeg => ("mjpeg", Pixel::YUVJ420P),
    };
    let codec =
        ff::encoder::find_by_name(name).ok_or_else(|| SynthError::NoEncoder(name.to_string()))?;
    let mut enc = ff::codec::context::Context::new_with_codec(codec)
        .encoder()
        .video()
        .map_err(ff_err("image encoder context"))?;
    enc.set_width(width);
    enc.set_height(height);
    enc.set_format(pix);
    enc.set_time_base(ff::Rational::new(1, 25));
    let mut encoder = enc.open().map_err(ff_err("image encoder"))?;
    let mut yuv = ff::frame::Video::new(Pixel::YUV420P, width, height);
    fill_frame(&mut yuv, pattern, index);
    let frame = if pix == Pixel::YUV420P {
        yuv
    } else {
        let mut out = ff::frame::Video::new(pix, width, height);
        let mut scaler = ff::software::scaling::Context::get(
            Pixel::YUV420P,
            width,
            height,
            pix,
            width,
            height,
            ff::software::scaling::Flags::BILINEAR,
        )
        .map_err(ff_err("scaler"))?;
        scaler.run(&yuv, &mut out).map_err(ff_err("scaler"))?;
        out
    };
    encoder.send_frame(&frame).map_err(ff_err("image frame"))?;
    encoder.send_eof().map_err(ff_err("image end"))?;
    let mut out = Vec::new();
    let mut packet = ff::Packet::empty();
    while encoder.receive_packet(&mut packet).is_ok() {
        if let Some(data) = packet.data() {
            out.extend_from_slice(data);
        }
    }
    Ok(out)
}

/// Insert an APP1 EXIF segment holding only an Orientation tag right after SOI.
pub fn with_exif_orientation(jpeg: &[u8], orientation: u16) -> Vec<u8> {
    let mut tiff = Vec::new();
    tiff.extend_from_slice(b"II*\0");
    tiff.extend_from_slice(&8u32.to_le_bytes()); // IFD0 offset
    tiff.extend_from_slice(&1u16.to_le_bytes()); // one entry
    tiff.extend_from_slice(&0x0112u16.to_le_bytes()); // Orientation
    tiff.extend_from_slice(&3u16.to_le_bytes()); // SHORT
    tiff.extend_from_slice(&1u32.to_le_bytes()); // count
    tiff.extend_from_slice(&orientation.to_le_bytes());
    tiff.extend_from_slice(&[0, 0]);
    tiff.extend_from_slice(&0u32.to_le_bytes()); // no next IFD
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&tiff);
    let len = (app1.len() + 2) as u16;
    let mut out = Vec::with_capacity(jpeg.len() + app1.len() + 4);
    out.extend_from_slice(&jpeg[..2.min(jpeg.len())]);
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&jpeg[2.min(jpeg.len())..]);
    out
}
