//! The reader hands out the frames of a sequential decode, on the generated files and the corpus.

use std::path::Path;

use framecull::loader::plan::Rng;
use framecull::media::frames::Identity;
use framecull::media::picture::{Frame, FrameFormat};
use framecull::media::reader::{ReadTimes, VideoReader};

use super::{CASES, ffprobe_frame_count, generate, sequential};
use crate::common;
use crate::common::ffmpeg;

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
