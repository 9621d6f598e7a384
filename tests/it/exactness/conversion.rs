//! A 10-bit HEVC video tagged BT.2020 converts to RGB as FFmpeg converts it.

use framecull::loader::Filter;
use framecull::loader::preprocess::{FrameJob, FrameParams, OutputSpec, Scratch, write_frame};

use super::{encode, first_frames};
use crate::common::ffmpeg;

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
