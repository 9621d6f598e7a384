//! Loader batches hold the frames they name, with any worker count, with or without a deep pass.

use std::path::{Path, PathBuf};

use framecull::loader::preprocess::{FrameJob, FrameParams, Scratch, write_frame};
use framecull::loader::{Loader, Mode, Timing};
use framecull::media::picture::Frame;

use super::{
    CASES, encode, ffprobe_frame_count, first_frames, generate, loader_config, sequential,
};
use crate::common;

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

/// Each manifest row's clip id and file name, in row order.
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
