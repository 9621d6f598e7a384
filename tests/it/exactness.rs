//! Frame exactness: every frame the reader and the loader hand out is, pixel for pixel, the
//! frame a decode from the start shows at the index they report, on files made to break
//! seeking: open GOPs with B-frames (H.264 4:4:4, 10-bit HEVC), AVI and elementary streams
//! whose packets carry no pts, MPEG-TS with a start offset and a single keyframe, an AVI
//! index that calls every packet a keyframe, VP8, H.264 and AV1 streams that change size, Cinepak,
//! variable frame rate and rotation. In order, at random and shuffled; with 1, 2 and 4
//! workers and across runs.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::ffmpeg;
use framecull::loader::plan::Rng;
use framecull::loader::preprocess::{FrameJob, FrameParams, OutputSpec, Scratch, write_frame};
use framecull::loader::{
    Batching, Crop, DType, DeviceChoice, Filter, Layout, Loader, LoaderConfig, Mode, Sampling,
    Timing,
};
use framecull::media::frames::Identity;
use framecull::media::picture::{Frame, FrameFormat};
use framecull::media::reader::{ReadTimes, VideoReader};
use framecull::media::synth::{self, Pattern, VideoSpec};

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

/// The raw YUV 4:2:0 frames of the ffmpeg command line's own decode (8-bit 4:2:0 sources),
/// one `Vec` per frame.
fn ffmpeg_raw_frames(path: &Path, dir: &Path, w: u32, h: u32) -> Vec<Vec<u8>> {
    let raw = dir.join("raw.yuv");
    ffmpeg(&[
        "-noautorotate",
        "-i",
        path.to_str().unwrap(),
        "-map",
        "0:v:0",
        "-fps_mode",
        "passthrough",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "yuv420p",
        raw.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&raw).unwrap();
    let size = (w * h) as usize + 2 * (w.div_ceil(2) * h.div_ceil(2)) as usize;
    bytes.chunks(size).map(<[u8]>::to_vec).collect()
}

fn check_picture(name: &str, how: &str, got: &Frame, want: &Frame, index: usize) {
    assert_eq!(got.index, index, "{name} ({how}): reported index");
    assert_eq!(got.pts, want.pts, "{name} ({how}): pts of frame {index}");
    assert!(
        got.width == want.width && got.height == want.height && got.data == want.data,
        "{name} ({how}): frame {index} differs from the sequential decode"
    );
}

/// Read `windows` (each a list of frame indices) with `reader`, checking each frame.
fn read_windows(
    name: &str,
    how: &str,
    reader: &mut VideoReader,
    windows: &[Vec<usize>],
    reference: &[Frame],
) -> ReadTimes {
    let mut times = ReadTimes::default();
    for wanted in windows {
        let mut got = vec![None; wanted.len()];
        reader
            .read(wanted, None, &mut times, &mut |i, p| got[i] = Some(p))
            .unwrap_or_else(|e| panic!("{name} ({how}): frames {wanted:?}: {e}"));
        for (slot, &index) in wanted.iter().enumerate() {
            let picture = got[slot]
                .as_ref()
                .unwrap_or_else(|| panic!("{name} ({how}): frame {index} not handed out"));
            check_picture(name, how, picture, &reference[index], index);
        }
    }
    times
}

#[test]
fn reader_hands_out_the_frames_of_a_sequential_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir);
    for case in CASES {
        let path = dir.join(case.name);
        let reference = sequential(&path);
        let n = reference.len();
        // The frame count is the decoded count, not the header's.
        assert_eq!(n, ffprobe_frame_count(&path), "{}: frame count", case.name);
        let opened = VideoReader::open(&path, 1).unwrap();
        assert_eq!(
            opened.frames().identity == Identity::Pts,
            case.pts_identity,
            "{}: how frames are recognised",
            case.name
        );
        drop(opened);
        // Independent of this reader: FFmpeg's own decode of 4:2:0 files, byte for byte at
        // 8 bits; at 10 and 12 bits within 1 of swscale's rounding to 8 bits (ours does not
        // dither).
        let deep = case.name.contains("bit");
        if reference[0].format == FrameFormat::Yuv420 && !case.name.contains("444") {
            let (w, h) = (reference[0].width, reference[0].height);
            if reference.iter().all(|p| p.width == w && p.height == h) {
                let raw = ffmpeg_raw_frames(&path, dir, w, h);
                assert_eq!(raw.len(), n, "{}: ffmpeg's frame count", case.name);
                for (i, (ours, theirs)) in reference.iter().zip(&raw).enumerate() {
                    let ours = ours.data.as_slice();
                    let worst = ours
                        .iter()
                        .zip(theirs)
                        .map(|(a, b)| a.abs_diff(*b))
                        .max()
                        .unwrap_or(0);
                    assert!(
                        ours.len() == theirs.len() && worst <= u8::from(deep),
                        "{}: frame {i} differs from ffmpeg's decode by up to {worst}",
                        case.name
                    );
                }
            }
        }
        let len = 6usize;
        // In order: touching windows.
        let in_order: Vec<Vec<usize>> = (0..n)
            .step_by(len)
            .map(|s| (s..(s + len).min(n)).collect())
            .collect();
        // Shuffled: the same windows in a seeded random order.
        let mut shuffled = in_order.clone();
        Rng::new(&[n as u64, 1]).shuffle(&mut shuffled);
        // Random: windows at random starts with a random stride (repeats included), and
        // single frames (the player's requests).
        let mut rng = Rng::new(&[n as u64, 2]);
        let random: Vec<Vec<usize>> = (0..24)
            .map(|k| {
                let stride = 1 + rng.below(3) as usize;
                let count = if k % 4 == 0 { 1 } else { len };
                let start = rng.below(n as u64) as usize;
                let mut w: Vec<usize> = (0..count)
                    .map(|j| (start + j * stride).min(n - 1))
                    .collect();
                w.dedup();
                w
            })
            .collect();
        for (how, windows) in [
            ("in order", &in_order),
            ("shuffled", &shuffled),
            ("random", &random),
        ] {
            // One reader kept open across windows (a worker), and a fresh one per window.
            let mut reader = VideoReader::open(&path, 1).unwrap();
            let times = read_windows(case.name, how, &mut reader, windows, &reference);
            eprintln!(
                "{:32} {how:9} {:3} windows: {:5} frames decoded, {:4} left undecoded, {:3} seeks",
                case.name,
                windows.len(),
                times.frames_decoded,
                times.frames_skipped,
                times.seeks
            );
            // H.264 B-frames that nothing refers to, on the way from a keyframe to a window,
            // are not decoded (and the frames handed out are still the sequential decode's).
            if case.name == "h264_open_gop_bframes.mkv" && how == "random" {
                assert!(times.frames_skipped > 0, "{}: {times:?}", case.name);
            }
            for w in windows.iter().take(6) {
                let mut fresh = VideoReader::open(&path, 1).unwrap();
                read_windows(
                    case.name,
                    how,
                    &mut fresh,
                    std::slice::from_ref(w),
                    &reference,
                );
            }
        }
        // Frame threading gives the same frames.
        let mut threaded = VideoReader::open(&path, 3).unwrap();
        read_windows(case.name, "threads", &mut threaded, &shuffled, &reference);
    }
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

/// Scan and export: metadata only (the loader must be exact without analysis), or with the
/// deep pass (its frame tables go beside the manifest, and the loader checks seeks with them).
fn manifest(dir: &Path, project: &Path, deep: bool) -> PathBuf {
    let p = project.to_str().unwrap();
    let mut args = vec!["scan", dir.to_str().unwrap(), "--project", p];
    if deep {
        args.push("--deep");
    }
    let out = common::run(&args);
    assert_eq!(out.status.code(), Some(0), "scan: {}", common::stderr(&out));
    if deep {
        // The generated files share one test pattern: accept them, near-duplicates included.
        let mut args = vec!["review", "accept", "--project", p];
        args.extend(CASES.iter().map(|c| c.name));
        let out = common::run(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "accept: {}",
            common::stderr(&out)
        );
    }
    let out = common::run(&["export", "--name", "x", "--project", p, "--format", "jsonl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "export: {}",
        common::stderr(&out)
    );
    project.join("manifests/x")
}

#[test]
fn loader_batches_hold_the_frames_they_name_with_any_worker_count() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    generate(&data);
    let references: References = CASES
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                (sequential(&data.join(c.name)), c.rotation_deg),
            )
        })
        .collect();
    for deep in [false, true] {
        let project = tmp.path().join(format!("project-{deep}"));
        let manifest = manifest(&data, &project, deep);
        let (meta, _) = framecull::manifest::open_path(&manifest).unwrap();
        let index = framecull::manifest::read_seek_references(&manifest, &meta).unwrap();
        if deep {
            let mut named: Vec<&str> = index.values().map(|r| r.path.as_str()).collect();
            named.sort_unstable();
            assert_eq!(
                index.len(),
                CASES.len(),
                "a seek reference per video: {named:?}"
            );
            for r in index.values() {
                let n = references[Path::new(&r.path).file_name().unwrap().to_str().unwrap()]
                    .0
                    .len();
                assert_eq!(r.frames, n as u64, "{}: frames in the frame table", r.path);
                assert!(
                    !r.keyframes.is_empty() && r.keyframes[0].0 == 0,
                    "{}",
                    r.path
                );
            }
        } else {
            assert!(index.is_empty());
        }
        check_loader(&manifest, &references);
    }
}

/// Each file's sequential decode and rotation, by file name.
type References = std::collections::HashMap<String, (Vec<Frame>, i64)>;

/// Every frame of every batch is the frame it names; batches are identical across worker
/// counts and runs; `all` windows cover exactly the frames they should.
fn check_loader(manifest: &Path, references: &References) {
    for (mode, shuffle) in [
        (Mode::All, false),
        (Mode::All, true),
        (Mode::Random, true),
        (Mode::Uniform, true),
    ] {
        let mut runs = Vec::new();
        for workers in [1, 2, 4, 4, 4] {
            let config = loader_config(mode, shuffle, workers);
            let out = config.output;
            let mut loader = Loader::open(manifest, None, config).unwrap();
            assert_eq!(loader.clip_count(), CASES.len());
            let (rows, paths) = row_paths(manifest);
            let mut seen: std::collections::HashMap<String, Vec<u64>> = Default::default();
            let batches: Vec<_> = loader.epoch(0).map(Result::unwrap).collect();
            let mut scratch = Scratch::default();
            for batch in &batches {
                let bytes = match &batch.data {
                    framecull::loader::BatchData::Host(b) => b,
                    framecull::loader::BatchData::Gpu(_) => unreachable!("CPU loader"),
                };
                let t = batch.shape[1];
                let frame_bytes = out.frame_elements();
                for (w, window) in batch.windows.iter().enumerate() {
                    assert_eq!(window.frames.len(), batch.lengths[w] as usize);
                    assert_eq!(rows[window.row], window.clip_id);
                    let name = &paths[window.row];
                    let (reference, rotation) = &references[name];
                    let quarter_turns = (((rotation + 45) / 90) % 4) as u8;
                    for (slot, &f) in window.frames.iter().enumerate() {
                        let frame = reference[f as usize].clone();
                        assert_eq!(window.pts[slot], frame.pts, "{name}: pts of frame {f}");
                        let (dw, dh) = frame.display_size(quarter_turns);
                        let params = FrameParams {
                            quarter_turns,
                            crop: [0.0, 0.0, dw as f32, dh as f32],
                            flip: false,
                        };
                        let mut want = vec![0u8; frame_bytes];
                        write_frame(
                            Some(&FrameJob {
                                frame: &frame,
                                params,
                            }),
                            &out,
                            &mut scratch,
                            &mut want,
                        );
                        let at = (w * t + slot) * frame_bytes;
                        assert!(
                            bytes[at..at + frame_bytes] == want[..],
                            "{name}: window {w} of batch {}, slot {slot} is not frame {f} \
                             ({mode:?}, {workers} workers)",
                            batch.index
                        );
                    }
                    for slot in window.frames.len()..t {
                        assert!(batch.is_padding(w, slot));
                        let at = (w * t + slot) * frame_bytes;
                        assert!(bytes[at..at + frame_bytes].iter().all(|&b| b == 0));
                    }
                    seen.entry(name.clone()).or_default().extend(&window.frames);
                }
            }
            let stats = loader.stats();
            assert!(
                stats.skipped_windows.is_empty() && stats.skipped_clips.is_empty(),
                "{mode:?}: skipped {:?}",
                stats.errors
            );
            if mode == Mode::All {
                // Windows of 5 frames at stride 2 (a span of 9), starting every 3 sampled
                // frames (6 frames), planned on the frames the manifest's row counts: one
                // more than there are where a declared duration ends with the last frame
                // (no frame count in the headers, no deep pass), and then the window that
                // runs past the real frames is moved to end at the last. Exactly these.
                let planned = planned_frames(manifest);
                for (name, (reference, _)) in references {
                    let n = reference.len() as u64;
                    let planned = planned[name];
                    assert!(
                        planned == n || planned == n + 1,
                        "{name}: the row counts {planned} frames of {n}"
                    );
                    let mut want: Vec<u64> = (0..=(planned - 9) / 6)
                        .flat_map(|w| (0..5).map(move |k| (6 * w).min(n - 9) + 2 * k))
                        .collect();
                    want.sort_unstable();
                    want.dedup();
                    let mut got = seen[name].clone();
                    got.sort_unstable();
                    got.dedup();
                    assert_eq!(got, want, "{name}: frames covered of {n}");
                }
            }
            runs.push(stats.checksum.clone());
        }
        assert!(
            runs.iter().all(|c| *c == runs[0]),
            "{mode:?}: checksums differ across worker counts and runs: {runs:?}"
        );
    }
}

/// Each manifest row's clip id and file name, in row order.
/// The frames each row of a manifest of whole files counts, by file name.
fn planned_frames(manifest: &Path) -> std::collections::HashMap<String, u64> {
    let (_, rows) = framecull::manifest::open_path(manifest).unwrap();
    rows.into_iter()
        .map(|r| {
            let name = Path::new(&r.path).file_name().unwrap().to_string_lossy();
            let frames = r.end_frame.unwrap() - r.start_frame.unwrap_or(0);
            (name.into_owned(), frames as u64)
        })
        .collect()
}

fn row_paths(manifest: &Path) -> (Vec<String>, Vec<String>) {
    let (_, rows) = framecull::manifest::open_path(manifest).unwrap();
    rows.into_iter()
        .map(|r| {
            let name = Path::new(&r.path)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (r.clip_id, name)
        })
        .unzip()
}

/// Content hashes of every frame of one plain decode from the start (no decoder flags, one
/// thread), independent of the reader and the deep pass.
fn decoded_hashes(path: &Path) -> Vec<u64> {
    use ffmpeg_next as ff;
    let mut input = ff::format::input(&path).unwrap();
    // The stream FFmpeg picks (`av_find_best_stream`), as the reader and the deep pass do.
    let stream = input.streams().best(ff::media::Type::Video).unwrap();
    let index = stream.index();
    let ctx = ff::codec::context::Context::from_parameters(stream.parameters()).unwrap();
    let mut decoder = ctx.decoder().video().unwrap();
    let mut hashes = Vec::new();
    let mut frame = ff::frame::Video::empty();
    let mut drain = |decoder: &mut ff::decoder::Video, hashes: &mut Vec<u64>| {
        while decoder.receive_frame(&mut frame).is_ok() {
            hashes.push(framecull::media::frames::content_hash(&frame));
        }
    };
    for (s, packet) in input.packets() {
        if s.index() == index {
            let _ = decoder.send_packet(&packet);
            drain(&mut decoder, &mut hashes);
        }
    }
    let _ = decoder.send_eof();
    drain(&mut decoder, &mut hashes);
    hashes
}

/// Every video of the corpus that FFmpeg decodes without errors, deep-scanned: the frame
/// table holds every frame of a plain decode (same content hashes), the reader's frame count
/// is the decoded count, and windows read shuffled and at random (12 whole windows of 8
/// frames, the first and last among them, and 6 of every other frame), with seeks checked
/// against the frame table, equal the sequential decode.
#[test]
fn corpus_videos_read_exactly() {
    let Some((media, project)) = common::corpus_deep_project() else {
        return;
    };
    let catalog = framecull::catalog::Catalog::open(&project).unwrap();
    let ids: std::collections::HashMap<String, i64> = catalog
        .items()
        .unwrap()
        .into_iter()
        .map(|i| (i.path, i.id))
        .collect();
    let truth = std::fs::read_to_string(media.join("ground_truth.jsonl")).unwrap();
    let mut checked = 0;
    for line in truth.lines() {
        let g: serde_json::Value = serde_json::from_str(line).unwrap();
        let clean = g["has_video"] == true
            && g["video_is_attached_pic"] != true
            && g["ffmpeg_decode_rc"] == 0
            && g["ffmpeg_error_lines"] == 0;
        if !clean {
            continue;
        }
        let name = g["file"].as_str().unwrap();
        let path = media.join(name);
        let reference = sequential(&path);
        let n = reference.len();
        let plain = decoded_hashes(&path);
        // The ground truth counts the first video stream's frames; with several, the one
        // read is FFmpeg's pick (`tc_nasa_13013.mp4`: stream 3 of 390 frames, not stream 0
        // of 325), counted by the plain decode.
        let truth = if g["n_video_streams"].as_u64() > Some(1) {
            Some(plain.len() as u64)
        } else {
            g["nb_frames"].as_u64()
        };
        assert_eq!(
            Some(n as u64),
            truth,
            "{name}: frames against ffprobe's decoded count"
        );
        let table = catalog
            .frame_table(ids[name])
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: no frame table"));
        let table_hashes: Vec<u64> = table.frames.iter().map(|f| f.hash).collect();
        let differ: Vec<usize> = (0..plain.len().max(table_hashes.len()))
            .filter(|&i| plain.get(i) != table_hashes.get(i))
            .collect();
        assert!(
            differ.is_empty(),
            "{name}: the frame table ({} frames) differs from a plain decode ({} frames) at \
             frames {:?}",
            table_hashes.len(),
            plain.len(),
            &differ[..differ.len().min(10)]
        );
        let len = 8.min(n);
        let mut windows: Vec<Vec<usize>> = (0..n)
            .step_by(len)
            .map(|s| (s..(s + len).min(n)).collect())
            .collect();
        // The first and last windows and 10 others, shuffled: each seek from a keyframe costs
        // up to a GOP of decoding, and every frame's content is checked above already.
        let (first, last) = (windows[0].clone(), windows[windows.len() - 1].clone());
        Rng::new(&[n as u64, 3]).shuffle(&mut windows);
        windows.retain(|w| *w != first && *w != last);
        windows.truncate(10);
        windows.push(first.clone());
        if last != first {
            windows.push(last);
        }
        Rng::new(&[n as u64, 5]).shuffle(&mut windows);
        let mut rng = Rng::new(&[n as u64, 4]);
        windows.extend((0..6).map(|_| {
            let start = rng.below(n as u64) as usize;
            (start..(start + len).min(n)).step_by(2).collect()
        }));
        let mut reader = VideoReader::open(&path, 1).unwrap();
        assert!(
            reader.set_reference(&table.seek_reference(name, "")),
            "{name}: the reader and the frame table count frames alike"
        );
        read_windows(name, "corpus", &mut reader, &windows, &reference);
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} corpus videos checked");
}

/// Files whose packets say more than a decode shows, or that declare no duration, each with
/// the frames FFmpeg decodes from it: H.264 and VP9 muxed live (Matroska and WebM without a
/// duration, as recorders and pipes write them), VP8 in IVF with a hidden packet (a copy of
/// the first keyframe that is not shown, as libvpx's alt-ref packets in the corpus's
/// `fate_sintel-signbias.ivf`: the header and the packets count one frame more than a decode
/// shows; 9 frames, 10 packets), and an MP4 cut short in its media data (its index lists 40
/// frames, about half of them decode).
fn generate_odd(dir: &Path) -> Vec<(&'static str, usize)> {
    encode(
        dir,
        "h264_live.mkv",
        "160x96",
        40,
        &[
            "-c:v", "libx264", "-g", "12", "-f", "matroska", "-live", "1",
        ],
    );
    encode(
        dir,
        "vp9_live.webm",
        "160x96",
        40,
        &["-c:v", "libvpx-vp9", "-g", "12", "-f", "webm", "-live", "1"],
    );
    let vp8 = encode(dir, "vp8.tmp.ivf", "160x96", 9, &["-c:v", "libvpx"]);
    hide_first_keyframe_copy(&vp8, &dir.join("vp8_hidden_packet.ivf"));
    std::fs::remove_file(vp8).unwrap();
    let full = encode(
        dir,
        "h264_full.tmp.mp4",
        "160x96",
        40,
        &[
            "-c:v",
            "libx264",
            "-bf",
            "0",
            "-g",
            "12",
            "-movflags",
            "+faststart",
        ],
    );
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(dir.join("h264_truncated.mp4"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::remove_file(full).unwrap();
    [
        "h264_live.mkv",
        "vp9_live.webm",
        "vp8_hidden_packet.ivf",
        "h264_truncated.mp4",
    ]
    .into_iter()
    .map(|name| (name, ffprobe_frame_count(&dir.join(name))))
    .collect()
}

/// Copy an IVF file, inserting after its first packet a copy of it with VP8's show_frame bit
/// cleared (decoded, never shown), and counting it in the header.
fn hide_first_keyframe_copy(src: &Path, dst: &Path) {
    let b = std::fs::read(src).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let header = usize::from(u16::from_le_bytes([b[6], b[7]]));
    let mut out = b[..header].to_vec();
    out[24..28].copy_from_slice(&(u32_at(24) + 1).to_le_bytes());
    let mut at = header;
    while at + 12 <= b.len() {
        let end = at + 12 + u32_at(at) as usize;
        out.extend_from_slice(&b[at..end]);
        if at == header {
            let mut hidden = b[at..end].to_vec();
            assert_eq!(hidden[12] & 0x11, 0x10, "a shown keyframe");
            hidden[12] &= !0x10;
            out.extend_from_slice(&hidden);
        }
        at = end;
    }
    std::fs::write(dst, out).unwrap();
}

/// Without a deep pass, files that declare no duration and files whose packets promise frames
/// a decode never shows lose no window: a whole-file row of a file without a duration covers
/// all of its frames, and a window planned past the frames a decode shows is moved back to
/// end at the last one (with a stride, too). Every frame is the one it names.
#[test]
fn metadata_only_windows_stay_within_the_frames_a_decode_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let files = generate_odd(&data);
    let manifest = manifest(&data, &tmp.path().join("project"), false);
    let (rows, names) = row_paths(&manifest);
    let (_, manifest_rows) = framecull::manifest::open_path(&manifest).unwrap();
    let decoded: std::collections::HashMap<&str, Vec<Frame>> = files
        .iter()
        .map(|&(name, n)| (name, first_frames(&data.join(name), n)))
        .collect();
    for (row, name) in manifest_rows.iter().zip(&names) {
        if name.contains("live") {
            // Counted from the packets at scan time: the whole file.
            assert_eq!(
                row.end_frame,
                Some(decoded[name.as_str()].len() as i64),
                "{name}: the whole-file row's end"
            );
        }
    }
    for mode in [Mode::Uniform, Mode::All] {
        let mut runs = Vec::new();
        for workers in [1, 2] {
            let mut config = loader_config(mode, false, workers);
            config.sampling.clip_len = Some(6);
            config.sampling.timing = Timing::Stride(3);
            config.sampling.window_step = None;
            config.batching.batch_size = 1;
            let out = config.output;
            let mut loader = Loader::open(&manifest, None, config).unwrap();
            let mut last_frame: std::collections::HashMap<String, u64> = Default::default();
            let mut scratch = Scratch::default();
            for batch in loader.epoch(0).map(Result::unwrap) {
                let framecull::loader::BatchData::Host(bytes) = &batch.data else {
                    unreachable!("CPU loader");
                };
                let t = batch.shape[1];
                for (w, window) in batch.windows.iter().enumerate() {
                    assert_eq!(rows[window.row], window.clip_id);
                    let name = &names[window.row];
                    let reference = &decoded[name.as_str()];
                    for (slot, &f) in window.frames.iter().enumerate() {
                        let picture = reference.get(f as usize).unwrap_or_else(|| {
                            panic!("{name}: frame {f} named, {} decoded", reference.len())
                        });
                        let frame = picture.clone();
                        let (dw, dh) = frame.display_size(0);
                        let mut want = vec![0u8; out.frame_elements()];
                        write_frame(
                            Some(&FrameJob {
                                frame: &frame,
                                params: FrameParams {
                                    quarter_turns: 0,
                                    crop: [0.0, 0.0, dw as f32, dh as f32],
                                    flip: false,
                                },
                            }),
                            &out,
                            &mut scratch,
                            &mut want,
                        );
                        let at = (w * t + slot) * out.frame_elements();
                        assert!(
                            bytes[at..at + want.len()] == want[..],
                            "{name}: slot {slot} is not frame {f} ({mode:?})"
                        );
                    }
                    let last = last_frame.entry(name.clone()).or_default();
                    *last = (*last).max(window.frames.last().copied().unwrap_or(0));
                }
            }
            let stats = loader.stats();
            assert!(
                stats.skipped_windows.is_empty() && stats.skipped_clips.is_empty(),
                "{mode:?}: skipped {:?}",
                stats.errors
            );
            assert_eq!(last_frame.len(), files.len(), "{mode:?}: a window per file");
            if mode == Mode::Uniform {
                // 6 frames at stride 3 span 16 frames, centred in the frames the manifest
                // plans (the row's count), moved back to end at the last frame a decode
                // shows where the plan goes past it; a clip shorter than the span starts
                // at its first frame and takes the frames there are.
                for (row, name) in manifest_rows.iter().zip(&names) {
                    let n = decoded[name.as_str()].len() as u64;
                    let planned = row.end_frame.unwrap() as u64;
                    let start = (planned.saturating_sub(16) / 2).min(n.saturating_sub(16));
                    let len = 6.min(planned.div_ceil(3));
                    let want = (0..len).map(|k| start + 3 * k).filter(|&f| f < n).max();
                    assert_eq!(
                        Some(last_frame[name]),
                        want,
                        "{name}: last frame ({n} decoded, {planned} planned)"
                    );
                    if name.contains("live") {
                        assert_eq!(last_frame[name], 12 + 15, "{name}: centred");
                    } else {
                        assert!(planned > n, "{name}: the packets promise more frames");
                    }
                }
            }
            runs.push(stats.checksum.clone());
        }
        assert_eq!(
            runs[0], runs[1],
            "{mode:?}: checksums differ across workers"
        );
    }
}

/// A 10-bit HEVC video tagged BT.2020 (non-constant luminance, as HDR10 is): its pictures say
/// so, and their RGB is close to FFmpeg's own conversion of the same frame (2.1 levels per
/// channel on this pattern's sharp coloured edges, from rounding to 8 bits before converting
/// and from chroma interpolation; 0.03 in mean luma). Converted as BT.709 it is 4.5 levels and
/// 0.25 off, as BT.601 7.2 and 0.8.
#[test]
fn bt2020_video_converts_like_ffmpeg() {
    let tmp = tempfile::tempdir().unwrap();
    let path = encode(
        tmp.path(),
        "hevc_bt2020.mkv",
        "160x96",
        5,
        &[
            "-c:v",
            "libx265",
            "-pix_fmt",
            "yuv420p10le",
            "-x265-params",
            "log-level=error",
            "-colorspace",
            "bt2020nc",
            "-color_primaries",
            "bt2020",
            "-color_trc",
            "smpte2084",
        ],
    );
    let picture = first_frames(&path, 3).pop().unwrap();
    assert_eq!(
        picture.matrix,
        framecull::loader::preprocess::Matrix::Bt2020
    );
    let (w, h) = (picture.width, picture.height);
    let frame = picture;
    let out = OutputSpec::rgb8(w, h, Filter::Bilinear);
    let mut ours = vec![0u8; out.frame_elements()];
    write_frame(
        Some(&FrameJob {
            frame: &frame,
            params: FrameParams::full(&frame, 0),
        }),
        &out,
        &mut Scratch::default(),
        &mut ours,
    );
    let raw = tmp.path().join("frame2.rgb");
    ffmpeg(&[
        "-i",
        path.to_str().unwrap(),
        "-vf",
        "select=eq(n\\,2)",
        "-frames:v",
        "1",
        "-sws_flags",
        "bilinear+full_chroma_int+accurate_rnd",
        "-pix_fmt",
        "rgb24",
        "-f",
        "rawvideo",
        raw.to_str().unwrap(),
    ]);
    let theirs = std::fs::read(&raw).unwrap();
    assert_eq!(theirs.len(), ours.len());
    let mean_abs = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| f64::from(a.abs_diff(*b)))
        .sum::<f64>()
        / ours.len() as f64;
    let luma = |rgb: &[u8]| {
        rgb.chunks(3)
            .map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2]))
            .sum::<f64>()
            / (rgb.len() / 3) as f64
    };
    let luma_diff = luma(&ours) - luma(&theirs);
    assert!(
        mean_abs < 3.0 && luma_diff.abs() < 0.15,
        "against FFmpeg's BT.2020 conversion: {mean_abs:.3} levels per channel, {luma_diff:+.3} \
         in mean luma"
    );
}

/// Streams that change their frame size mid-stream (VP8 in a WebM whose declared duration
/// ends just before its last frame starts, H.264 with B-frames in MPEG-TS, AV1 in WebM): the
/// reader's index and a sequential decode hold every frame FFmpeg decodes, and one whole-clip
/// window of the loader delivers them all, in order, with their timestamps: from the
/// metadata alone (the whole video as the headers give it) and after the deep pass (as the
/// decode measured it).
#[test]
fn streams_that_change_size_load_every_frame_in_a_whole_clip_window() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "vp8_size_change.webm",
        "h264_size_change.ts",
        "av1_size_change.webm",
    ] {
        let data = tmp.path().join(name).join("data");
        std::fs::create_dir_all(&data).unwrap();
        let path = match name {
            "vp8_size_change.webm" => vp8_size_change(&data, 150),
            "h264_size_change.ts" => size_change(&data, name, 150, &H264_SIZE_CHANGE),
            _ => size_change(&data, name, 150, &AV1_SIZE_CHANGE),
        };
        whole_clip_window_holds_every_frame(&path, &tmp.path().join(name));
    }
}

/// The property above for one file, alone in its folder; projects go in `work`.
fn whole_clip_window_holds_every_frame(path: &Path, work: &Path) {
    let (data, name) = (
        path.parent().unwrap(),
        path.file_name().unwrap().to_str().unwrap(),
    );
    let n = ffprobe_frame_count(path);
    assert_eq!(n, 300, "{name}");
    let reference = sequential(path);
    assert_eq!(
        reference.len(),
        n,
        "{name}: the reader's index against ffprobe's count"
    );
    let sizes: std::collections::BTreeSet<(u32, u32)> =
        reference.iter().map(|p| (p.width, p.height)).collect();
    assert_eq!(sizes.len(), 2, "{name}: the frame size changes: {sizes:?}");
    for deep in [false, true] {
        let project = work.join(format!("project-{deep}"));
        common::scan_and_export(data, &project, name, deep);
        let mut config = loader_config(Mode::Uniform, false, 1);
        config.sampling = Sampling {
            clip_len: None,
            max_frames: 1000,
            timing: Timing::Stride(1),
            mode: Mode::Uniform,
            ..Sampling::default()
        };
        config.batching.batch_size = 1;
        let mut loader = Loader::open(&project.join("manifests/x"), None, config).unwrap();
        let batch = loader.epoch(0).next().unwrap().unwrap();
        let window = &batch.windows[0];
        assert_eq!(
            window.frames,
            (0..n as u64).collect::<Vec<_>>(),
            "{name}, deep {deep}: the whole-clip window's frames"
        );
        let pts: Vec<i64> = reference.iter().map(|p| p.pts).collect();
        assert_eq!(window.pts, pts, "{name}, deep {deep}: their timestamps");
        assert_eq!(batch.lengths[0] as usize, n, "{name}, deep {deep}");
    }
}
