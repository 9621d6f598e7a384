//! How videos are read, end to end (scan, list, export, loader): from the video stream FFmpeg
//! picks among several, or the one `[video] stream` names; and with the colour matrix FFmpeg
//! uses for a stream that declares none, or the size-based guess when it is set.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::ffmpeg;
use framecull::loader::preprocess::{OutputSpec, decode_elements};
use framecull::loader::{
    Batching, Crop, DType, DeviceChoice, Filter, Layout, Loader, LoaderConfig, Mode, Sampling,
    Timing,
};
use framecull::media::Source;
use framecull::media::decode::{DecodeOptions, decode_frames};

/// The loader's first frames of the manifest's one clip at the video's own size, as RGB
/// bytes: (frame index in the file, pixels).
fn loaded_frames(project: &Path, width: u32, height: u32) -> Vec<(u64, Vec<u8>)> {
    let config = LoaderConfig {
        sampling: Sampling {
            clip_len: Some(3),
            timing: Timing::Stride(1),
            mode: Mode::Uniform,
            ..Sampling::default()
        },
        batching: Batching {
            batch_size: 1,
            ..Batching::default()
        },
        output: OutputSpec {
            width,
            height,
            layout: Layout::Bthwc,
            dtype: DType::U8,
            filter: Filter::Bilinear,
            mean: [0.0; 3],
            std: [1.0; 3],
        },
        crop: Crop::Full,
        hflip: 0.0,
        device: DeviceChoice::Cpu,
        workers: 1,
        ..LoaderConfig::default()
    };
    let mut loader = Loader::open(&project.join("manifests/x"), None, config).unwrap();
    let batch = loader.epoch(0).next().unwrap().unwrap();
    let bytes: Vec<u8> = decode_elements(&loader.to_host(&batch).unwrap(), DType::U8)
        .into_iter()
        .map(|v| v as u8)
        .collect();
    let size = (width * height * 3) as usize;
    batch.windows[0]
        .frames
        .iter()
        .zip(bytes.chunks_exact(size))
        .map(|(&k, px)| (k, px.to_vec()))
        .collect()
}

/// Frame `index` of stream `stream` as FFmpeg converts it to RGB (`vf` before the
/// conversion).
fn ffmpeg_rgb(path: &Path, stream: u32, index: u64, vf: &str) -> Vec<u8> {
    ffmpeg_raw(path, stream, index, vf, "rgb24")
}

/// Frame `index` of stream `stream` as FFmpeg decodes it, in `pix_fmt` (`vf` before).
fn ffmpeg_raw(path: &Path, stream: u32, index: u64, vf: &str, pix_fmt: &str) -> Vec<u8> {
    // Beside the dataset's folder, not in it (the next scan would find it).
    let raw = path
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join(format!("{stream}.{index}.rgb"));
    let select = format!("select=eq(n\\,{index}){vf}");
    ffmpeg(&[
        "-i",
        path.to_str().unwrap(),
        "-map",
        &format!("0:{stream}"),
        "-vf",
        &select,
        "-frames:v",
        "1",
        "-sws_flags",
        "bilinear+full_chroma_int+accurate_rnd",
        "-pix_fmt",
        pix_fmt,
        "-f",
        "rawvideo",
        raw.to_str().unwrap(),
    ]);
    std::fs::read(raw).unwrap()
}

fn mean_abs(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(x.abs_diff(*y)))
        .sum::<f64>()
        / a.len() as f64
}

fn write_config(project: &Path, text: &str) {
    std::fs::write(project.join("framecull.toml"), text).unwrap();
}

/// Two video streams and cover art: a 320x180 stream 0, a 480x270 stream 1 that is the
/// default one, so that FFmpeg's choice (`av_find_best_stream`, and the `ffmpeg` tool's) is
/// stream 1, and a 1920x1080 PNG attached picture, stream 2, the largest, which is never
/// read as the video.
fn two_streams(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("two streams.mp4");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x180:rate=25:duration=1",
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=480x270:rate=25:duration=1",
        "-f",
        "lavfi",
        "-i",
        "color=red:size=1920x1080,format=rgb24",
        "-frames:v:2",
        "1",
        "-map",
        "0",
        "-map",
        "1",
        "-map",
        "2",
        "-c:v",
        "libx264",
        "-c:v:2",
        "png",
        "-disposition:v:0",
        "0",
        "-disposition:v:1",
        "default",
        "-disposition:v:2",
        "attached_pic",
        path.to_str().unwrap(),
    ]);
    path
}

#[test]
fn the_stream_ffmpeg_picks_is_catalogued_analysed_and_loaded_and_the_setting_overrides_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let path = two_streams(&data);
    let project = tmp.path().join("project");
    let rows = common::scan_and_export(&data, &project, "two streams.mp4", true);
    let listed = common::list_jsonl(&project);
    let item = &listed["two streams.mp4"];
    assert_eq!(
        (&item["stream_index"], &item["width"], &item["height"]),
        (&1.into(), &480.into(), &270.into()),
        "{item}"
    );
    assert_eq!(item["decoded_frames"], 25, "{item}");
    assert_eq!(
        (&rows[0]["stream_index"], &rows[0]["width"]),
        (&1.into(), &480.into())
    );
    // The loader reads the same stream: its frames are FFmpeg's frames of stream 1.
    for (k, ours) in loaded_frames(&project, 480, 270) {
        let theirs = ffmpeg_rgb(&path, 1, k, "");
        let off = mean_abs(&ours, &theirs);
        assert!(off < 3.0, "frame {k}: {off:.2} levels from stream 1's");
    }

    // Cover art named by index is not read either: FFmpeg's best stream is.
    write_config(&project, "[video]\nstream = 2\n");
    common::scan_and_export(&data, &project, "two streams.mp4", false);
    let listed = common::list_jsonl(&project);
    assert_eq!(listed["two streams.mp4"]["stream_index"], 1);

    // The setting reads stream 0 instead: the next scan probes and analyses it again.
    let brightness = item["brightness"].as_f64().unwrap();
    write_config(&project, "[video]\nstream = 0\n");
    let rows = common::scan_and_export(&data, &project, "two streams.mp4", true);
    let listed = common::list_jsonl(&project);
    let item = &listed["two streams.mp4"];
    assert_eq!(
        (&item["stream_index"], &item["width"], &item["height"]),
        (&0.into(), &320.into(), &180.into()),
        "{item}"
    );
    let again = item["brightness"].as_f64().unwrap();
    assert!(
        (again - brightness).abs() > 1.0,
        "brightness {again} after the switch, {brightness} before: not analysed again"
    );
    assert_eq!(
        (&rows[0]["stream_index"], &rows[0]["width"]),
        (&0.into(), &320.into())
    );
    for (k, ours) in loaded_frames(&project, 320, 180) {
        // This pattern is mostly sharp coloured edges, where chroma interpolation differs by
        // a few levels; another picture is tens of levels off.
        let theirs = ffmpeg_rgb(&path, 0, k, "");
        let off = mean_abs(&ours, &theirs);
        assert!(off < 6.0, "frame {k}: {off:.2} levels from stream 0's");
    }
}

/// HD H.264 videos (720p and 1080p) that declare no colour matrix, with smooth colours
/// (chroma that interpolation cannot move): the loader's frames are FFmpeg's own RGB
/// conversion (BT.601, as swscale, PyAV, torchcodec and decord convert) within one level per
/// channel; with `color_matrix_guess = "by_size"`, FFmpeg's conversion as BT.709. Each
/// manifest row names the matrix.
#[test]
fn an_untagged_hd_video_converts_as_ffmpeg_does_or_by_size_when_set() {
    let tmp = tempfile::tempdir().unwrap();
    for (w, h) in [(1280, 720), (1920, 1080)] {
        untagged_hd_converts_as_ffmpeg_does(&tmp.path().join(format!("{h}p")), w, h);
    }
}

/// The property above for one size; its folders go in `work`.
fn untagged_hd_converts_as_ffmpeg_does(work: &Path, width: u32, height: u32) {
    let data = work.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let name = format!("untagged_{height}p.mp4");
    let path = data.join(&name);
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc2=size={width}x{height}:rate=25:duration=0.4"),
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
        "-crf",
        "12",
        path.to_str().unwrap(),
    ]);
    let project = work.join("project");
    let rows = common::scan_and_export(&data, &project, &name, false);
    assert_eq!(
        common::list_jsonl(&project)[name.as_str()]["color_space"],
        serde_json::Value::Null
    );
    assert_eq!(rows[0]["color_matrix"], "bt601", "{}", rows[0]);
    let as_601 = loaded_frames(&project, width, height);
    assert!(!as_601.is_empty(), "{name}: no frames loaded");
    for (k, ours) in &as_601 {
        let theirs = ffmpeg_rgb(&path, 0, *k, "");
        let off = mean_abs(ours, &theirs);
        assert!(
            off < 1.0,
            "{name}, frame {k}: {off:.3} levels from FFmpeg's"
        );
    }
    // Whether the content tells the two matrices apart, on the frames the file has (10: 0.4 s
    // at 25 fps), not only on those the loader chose: FFmpeg's own conversions, so the guard
    // does not depend on the loader.
    let gap = (0..10u64)
        .map(|k| {
            let theirs = ffmpeg_rgb(&path, 0, k, "");
            let as_709 = ffmpeg_rgb(&path, 0, k, ",scale=in_color_matrix=bt709");
            mean_abs(&theirs, &as_709)
        })
        .fold(0.0f64, f64::max);
    assert!(
        gap > 2.0,
        "{name}: the two matrices differ by {gap:.2} levels only: the test cannot tell them apart"
    );

    write_config(&project, "[video]\ncolor_matrix_guess = \"by_size\"\n");
    let rows = common::scan_and_export(&data, &project, &name, false);
    assert_eq!(rows[0]["color_matrix"], "bt709", "{}", rows[0]);
    for (k, ours) in loaded_frames(&project, width, height) {
        let theirs = ffmpeg_rgb(&path, 0, k, ",scale=in_color_matrix=bt709");
        let off = mean_abs(&ours, &theirs);
        assert!(
            off < 1.0,
            "{name}, frame {k}: {off:.3} levels from FFmpeg's BT.709 conversion"
        );
    }
}

/// The analysis copy of a frame (the small RGB picture every measure reads, 256 pixels on its
/// long side) is the box average its definition gives ([`box_copy`], from FFmpeg's decode of
/// the frame), for each chroma layout (4:2:0, 4:2:2, 4:4:4), in limited and full range, and
/// with boxes of one width (1280 to 256: 5 columns) and of two (640 to 256: 2 and 3; 1000 to
/// 256: 3 and 4), and at an odd width (853x480, wide-screen SD: chroma planes of 427 columns). A chroma plane read with another layout's size, a box off by a column or a
/// range taken for the other would move the colours by levels, not fractions of one.
#[test]
fn the_analysis_copy_is_the_box_average_for_every_chroma_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // Limited range losslessly (FFV1); full range as Motion JPEG stores it (`yuvj`: FFV1
    // would convert it to limited range).
    let layouts = [
        ("yuv420p", (1, 1), "ffv1"),
        ("yuv422p", (1, 0), "ffv1"),
        ("yuv444p", (0, 0), "ffv1"),
        ("yuvj420p", (1, 1), "mjpeg"),
        ("yuvj422p", (1, 0), "mjpeg"),
        ("yuvj444p", (0, 0), "mjpeg"),
    ];
    for (pix_fmt, shift, codec) in layouts {
        let full = pix_fmt.starts_with("yuvj");
        for (w, h) in [(640, 360), (1280, 720), (1000, 562), (853, 480)] {
            let name = format!("{pix_fmt}_{w}x{h}.mkv");
            let path = data.join(&name);
            ffmpeg(&[
                "-f",
                "lavfi",
                "-i",
                // testsrc2 makes even widths only: scaled to the size.
                &format!("testsrc2=size=1280x720:rate=25,scale={w}:{h}"),
                "-frames:v",
                "2",
                "-c:v",
                codec,
                "-q:v",
                "2",
                "-pix_fmt",
                pix_fmt,
                path.to_str().unwrap(),
            ]);
            let mut copies = Vec::new();
            let options = DecodeOptions {
                fast: false,
                ..DecodeOptions::default()
            };
            decode_frames(
                &Source::from(path.as_path()).open(),
                &options,
                0,
                &mut |f| {
                    let rgb: Vec<u8> = (0..f.width * f.height)
                        .flat_map(|i| f.planes.map(|p| p[i]))
                        .collect();
                    copies.push((f.width, f.height, rgb));
                    true
                },
            )
            .unwrap();
            assert_eq!(copies.len(), 2, "{name}");
            for (k, (dw, dh, ours)) in copies.iter().enumerate() {
                let frame = ffmpeg_raw(&path, 0, k as u64, "", pix_fmt);
                let want = box_copy(&frame, (w, h), shift, full, (*dw, *dh));
                let off: Vec<f64> = ours
                    .iter()
                    .zip(&want)
                    .map(|(&o, &w)| (f64::from(o) - w).abs())
                    .collect();
                let mean = off.iter().sum::<f64>() / off.len() as f64;
                let most = off.iter().copied().fold(0.0, f64::max);
                // Fixed-point arithmetic against floating point: within 0.08 on average and 2
                // at most here.
                assert!(
                    mean < 0.15 && most <= 3.0,
                    "{name}, frame {k} at {dw}x{dh}: {mean:.3} levels from the box average on \
                     average, {most:.1} at most"
                );
            }
        }
    }
}

/// The analysis copy of a `width` x `height` frame of planar YUV (`raw`, chroma subsampled
/// by `2^shift`) at `dw` x `dh`, by its definition, in floating point: each luma box the mean
/// of the source's pixels between edges `(i * src + dst / 2) / dst`; chroma the same on the
/// chroma plane at the copy's size over the subsampling (a 4:2:0 copy has one chroma sample
/// for each 2 x 2 pixels); then RGB by BT.601 (FFmpeg's choice for a stream that declares no
/// matrix), limited range or `full`. Interleaved R, G, B, each rounded and clamped.
fn box_copy(
    raw: &[u8],
    (w, h): (usize, usize),
    (sx, sy): (u32, u32),
    full: bool,
    (dw, dh): (usize, usize),
) -> Vec<f64> {
    let (cw, ch) = (w.div_ceil(1 << sx), h.div_ceil(1 << sy));
    let planes = [
        (&raw[..w * h], w, h),
        (&raw[w * h..w * h + cw * ch], cw, ch),
        (&raw[w * h + cw * ch..w * h + 2 * cw * ch], cw, ch),
    ];
    let means = |(plane, pw, ph): (&[u8], usize, usize), bw: usize, bh: usize| {
        let edges = |src: usize, dst: usize| -> Vec<usize> {
            (0..=dst).map(|i| (i * src + dst / 2) / dst).collect()
        };
        let (xe, ye) = (edges(pw, bw), edges(ph, bh));
        let mut out = Vec::with_capacity(bw * bh);
        for y in ye.windows(2) {
            for x in xe.windows(2) {
                let sum: f64 = (y[0]..y[1])
                    .flat_map(|row| &plane[row * pw + x[0]..row * pw + x[1]])
                    .map(|&v| f64::from(v))
                    .sum();
                out.push(sum / ((y[1] - y[0]) * (x[1] - x[0])) as f64);
            }
        }
        out
    };
    let luma = means(planes[0], dw, dh);
    let (bw, bh) = (dw >> sx, dh >> sy);
    let (u, v) = (means(planes[1], bw, bh), means(planes[2], bw, bh));
    let (y_scale, c_scale) = if full {
        (1.0, 1.0)
    } else {
        (255.0 / 219.0, 255.0 / 224.0)
    };
    let y_off = if full { 0.0 } else { 16.0 };
    let mut rgb = Vec::with_capacity(dw * dh * 3);
    for oy in 0..dh {
        for ox in 0..dw {
            let c = (oy >> sy) * bw + (ox >> sx);
            let y = (luma[oy * dw + ox] - y_off) * y_scale;
            let (u, v) = ((u[c] - 128.0) * c_scale, (v[c] - 128.0) * c_scale);
            for value in [
                y + 1.402 * v,
                y - 0.344_136 * u - 0.714_136 * v,
                y + 1.772 * u,
            ] {
                rgb.push(value.round().clamp(0.0, 255.0));
            }
        }
    }
    rgb
}
