//! Frame exactness: every frame the reader and the loader hand out is, pixel for pixel, the
//! frame a decode from the start shows at the index they report, on files made to break
//! seeking: open GOPs with B-frames (H.264 4:4:4, 10-bit HEVC), AVI and elementary streams
//! whose packets carry no pts, MPEG-TS with a start offset and a single keyframe, an AVI
//! index that calls every packet a keyframe, VP8, H.264 and AV1 streams that change size, Cinepak,
//! variable frame rate and rotation. In order, at random and shuffled; with 1, 2 and 4
//! workers and across runs.

#![allow(clippy::unwrap_used)]

mod changing_size;
mod conversion;
mod loader;
mod reader;

use std::path::{Path, PathBuf};
use std::process::Command;

use framecull::loader::preprocess::OutputSpec;
use framecull::loader::{
    Batching, Crop, DType, DeviceChoice, Filter, Layout, LoaderConfig, Mode, Sampling, Timing,
};
use framecull::media::picture::Frame;
use framecull::media::reader::{ReadTimes, VideoReader};
use framecull::media::synth::{self, Pattern, VideoSpec};

use crate::common::ffmpeg;

/// A generated file and what it is made to test.
struct Case {
    name: &'static str,
    /// Clockwise rotation the container records.
    rotation_deg: i64,
    /// Its packets carry presentation timestamps (frames recognised after a seek).
    pts_identity: bool,
}

const CASES: &[Case] = &[
    case("h264_444_open_gop.mp4", true),
    case("h264_open_gop_bframes.mkv", true),
    case("hevc_10bit_open_gop.mp4", true),
    case("hevc_12bit.mkv", true),
    case("odd name – ünï #1 (copy).mov", true),
    case("mpeg4_bframes.avi", false),
    case("mpeg4_every_packet_key.avi", true),
    case("mpeg2_elementary.m2v", false),
    case("h264_elementary.h264", false),
    case("h264_one_keyframe_offset.ts", true),
    case("mpeg2_bframes.ts", true),
    case("cinepak.avi", true),
    case("vp8_size_change.webm", true),
    case("h264_size_change.ts", true),
    case("av1_size_change.webm", true),
    case("h264_vfr.mp4", true),
    Case {
        name: "h264_rotated.mp4",
        rotation_deg: 90,
        pts_identity: true,
    },
];

const fn case(name: &'static str, pts_identity: bool) -> Case {
    Case {
        name,
        rotation_deg: 0,
        pts_identity,
    }
}

/// A lavfi test pattern: `frames` frames of `size` at 25 fps.
fn source(size: &str, frames: u32) -> Vec<String> {
    [
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc2=size={size}:rate=25"),
        "-frames:v",
        &frames.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn encode(dir: &Path, name: &str, size: &str, frames: u32, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut all = source(size, frames);
    all.extend(args.iter().map(|s| s.to_string()));
    all.push(path.to_str().unwrap().to_string());
    ffmpeg(&all.iter().map(String::as_str).collect::<Vec<_>>());
    path
}

/// Every case, written into `dir`.
fn generate(dir: &Path) {
    let x264_open = "open-gop=1:keyint=24:min-keyint=24:scenecut=0:bframes=3";
    encode(
        dir,
        "h264_444_open_gop.mp4",
        "160x96",
        100,
        &[
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv444p",
            "-x264-params",
            x264_open,
        ],
    );
    encode(
        dir,
        "h264_open_gop_bframes.mkv",
        "160x96",
        100,
        &[
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-x264-params",
            x264_open,
        ],
    );
    encode(
        dir,
        "hevc_10bit_open_gop.mp4",
        "160x96",
        100,
        &[
            "-c:v",
            "libx265",
            "-pix_fmt",
            "yuv420p10le",
            "-x265-params",
            "open-gop=1:keyint=24:min-keyint=24:scenecut=0:bframes=4:log-level=error",
        ],
    );
    encode(
        dir,
        "hevc_12bit.mkv",
        "160x96",
        60,
        &[
            "-c:v",
            "libx265",
            "-pix_fmt",
            "yuv420p12le",
            "-x265-params",
            "keyint=20:bframes=2:log-level=error",
        ],
    );
    encode(
        dir,
        "odd name – ünï #1 (copy).mov",
        "160x96",
        60,
        &["-c:v", "libx264", "-g", "20"],
    );
    encode(
        dir,
        "mpeg4_bframes.avi",
        "160x96",
        90,
        &["-c:v", "mpeg4", "-bf", "2", "-g", "12"],
    );
    let plain = encode(
        dir,
        "mpeg4_plain.avi.tmp.avi",
        "160x96",
        90,
        &["-c:v", "mpeg4", "-bf", "0", "-g", "45"],
    );
    synth::remux_every_packet_key(&plain, &dir.join("mpeg4_every_packet_key.avi")).unwrap();
    std::fs::remove_file(plain).unwrap();
    encode(
        dir,
        "mpeg2_elementary.m2v",
        "160x96",
        90,
        &["-c:v", "mpeg2video", "-bf", "2", "-g", "12"],
    );
    encode(
        dir,
        "h264_elementary.h264",
        "160x96",
        90,
        &["-c:v", "libx264", "-bf", "3", "-g", "30"],
    );
    encode(
        dir,
        "h264_one_keyframe_offset.ts",
        "160x96",
        90,
        &[
            "-c:v",
            "libx264",
            "-g",
            "1000",
            "-bf",
            "2",
            "-output_ts_offset",
            "10",
        ],
    );
    encode(
        dir,
        "mpeg2_bframes.ts",
        "160x96",
        90,
        &["-c:v", "mpeg2video", "-bf", "2", "-g", "15"],
    );
    encode(dir, "cinepak.avi", "160x96", 60, &["-c:v", "cinepak"]);
    vp8_size_change(dir, 40);
    size_change(dir, "h264_size_change.ts", 40, &H264_SIZE_CHANGE);
    size_change(dir, "av1_size_change.webm", 40, &AV1_SIZE_CHANGE);
    let mut vfr = VideoSpec::new("libx264", 128, 64, 30, 90);
    vfr.pattern = Pattern::Counter;
    vfr.vfr = true;
    vfr.gop = 10;
    synth::write_video(&dir.join("h264_vfr.mp4"), &vfr).unwrap();
    let mut rotated = VideoSpec::new("libx264", 96, 64, 25, 60);
    rotated.rotation_deg = Some(90);
    rotated.gop = 15;
    synth::write_video(&dir.join("h264_rotated.mp4"), &rotated).unwrap();
}

/// H.264 with B-frames in MPEG-TS: the second part's parameter sets come in its stream.
const H264_SIZE_CHANGE: [&str; 8] = [
    "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "15", "-bf", "2",
];
/// AV1 (libaom): the second part's sequence header comes with its first keyframe.
const AV1_SIZE_CHANGE: [&str; 8] = [
    "-c:v",
    "libaom-av1",
    "-pix_fmt",
    "yuv420p",
    "-cpu-used",
    "8",
    "-g",
    "15",
];

/// `name`: two encodes (`args`) of different sizes (160x96, then 128x72; `frames` frames each
/// at 25 fps), one after the other in one stream (the concat demuxer, copied).
fn size_change(dir: &Path, name: &str, frames: u32, args: &[&str]) -> PathBuf {
    let (stem, ext) = name.rsplit_once('.').unwrap();
    let [big, small] = [("a", "160x96"), ("b", "128x72")]
        .map(|(part, size)| encode(dir, &format!("{stem}_{part}.tmp.{ext}"), size, frames, args));
    let list = dir.join(format!("{stem}.txt"));
    std::fs::write(
        &list,
        format!("file '{}'\nfile '{}'\n", big.display(), small.display()),
    )
    .unwrap();
    let path = dir.join(name);
    ffmpeg(&[
        "-f",
        "concat",
        "-safe",
        "0",
        "-i",
        list.to_str().unwrap(),
        "-c",
        "copy",
        path.to_str().unwrap(),
    ]);
    for p in [big, small, list] {
        std::fs::remove_file(p).unwrap();
    }
    path
}

/// `vp8_size_change.webm`: two VP8 streams of different sizes ([`size_change`]), whose
/// declared duration ends a millisecond before the last frame starts, as muxers that write
/// the last timestamp, in milliseconds, declare it (the last of 80 frames starts at 3.16 s;
/// declared: 3.159 s).
fn vp8_size_change(dir: &Path, frames: u32) -> PathBuf {
    let path = size_change(
        dir,
        "vp8_size_change.webm",
        frames,
        &["-c:v", "libvpx", "-g", "15"],
    );
    // The segment's Duration (EBML 0x4489, an 8-byte float of milliseconds).
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(3)
        .position(|w| w == [0x44, 0x89, 0x88])
        .expect("a Duration element")
        + 3;
    let last_start_ms = f64::from(2 * frames - 1) * 1000.0 / 25.0;
    bytes[at..at + 8].copy_from_slice(&(last_start_ms - 1.0).to_be_bytes());
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Frames FFmpeg decodes from the file, counted by ffprobe.
fn ffprobe_frame_count(path: &Path) -> usize {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=nb_read_frames",
            "-of",
            "csv=p=0",
        ])
        .arg(path)
        .output()
        .unwrap();
    // MPEG-TS lists the stream once more under its program: the first line counts.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .trim_end_matches(',')
        .parse()
        .unwrap_or_else(|_| panic!("ffprobe count of {}: {out:?}", path.display()))
}

/// The reference: every frame of one decode from the start, in order.
fn sequential(path: &Path) -> Vec<Frame> {
    let n = VideoReader::open(path, 1).unwrap().frames().len();
    first_frames(path, n)
}

/// The first `n` frames of one decode from the start, in order.
fn first_frames(path: &Path, n: usize) -> Vec<Frame> {
    let mut reader = VideoReader::open(path, 1).unwrap();
    let mut frames = vec![None; n];
    reader
        .read(
            &(0..n).collect::<Vec<_>>(),
            None,
            &mut ReadTimes::default(),
            &mut |i, p| frames[i] = Some(p),
        )
        .unwrap_or_else(|e| panic!("{}: sequential decode: {e}", path.display()));
    frames.into_iter().map(Option::unwrap).collect()
}

fn loader_config(mode: Mode, shuffle: bool, workers: usize) -> LoaderConfig {
    LoaderConfig {
        sampling: Sampling {
            clip_len: Some(5),
            timing: Timing::Stride(2),
            mode,
            window_step: Some(3),
            ..Sampling::default()
        },
        batching: Batching {
            batch_size: 4,
            shuffle,
            ..Batching::default()
        },
        output: OutputSpec {
            width: 48,
            height: 32,
            layout: Layout::Bthwc,
            dtype: DType::U8,
            filter: Filter::Area,
            mean: [0.0; 3],
            std: [1.0; 3],
        },
        crop: Crop::Full,
        hflip: 0.0,
        seed: 11,
        device: DeviceChoice::Cpu,
        workers,
        verify_fingerprints: false,
        checksum: true,
        ..LoaderConfig::default()
    }
}
