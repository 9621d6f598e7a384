//! Deep scans of folders: problem flags, duplicates, the pixel limits and decoder threads.

use std::path::Path;

use framecull::media::synth::{ImageKind, Pattern};

use super::spec;
use crate::common;

#[test]
fn deep_scan_flags_problems_and_groups_duplicates() {
    let data = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let d = data.path();
    common::image(d, "a.jpg", ImageKind::Jpeg, 320, 240, None);
    std::fs::copy(d.join("a.jpg"), d.join("a_copy.jpg")).unwrap();
    // The same picture as PNG: a near duplicate.
    common::image(d, "a.png", ImageKind::Png, 320, 240, None);
    // A truncated JPEG.
    let bytes = std::fs::read(d.join("a.jpg")).unwrap();
    std::fs::write(d.join("cut.jpg"), &bytes[..bytes.len() / 2]).unwrap();
    common::video(d, "clip.mp4", &spec(Pattern::MovingBox { speed: 5 }, 50));
    common::video(d, "short.mp4", &spec(Pattern::MovingBox { speed: 5 }, 5));
    std::fs::write(
        proj.path().join("framecull.toml"),
        "[rules]\nmin_duration_secs = 0.5\n",
    )
    .unwrap();
    let out = common::run(&[
        "scan",
        d.to_str().unwrap(),
        "--project",
        proj.path().to_str().unwrap(),
        "--deep",
    ]);
    // The truncated JPEG is an error-severity flag: exit code 1.
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let rows = common::list_jsonl(proj.path());
    let codes = |p: &str| common::flag_codes(&rows[p]);
    assert!(
        codes("cut.jpg").contains(&"image_truncated".to_string()),
        "{:?}",
        codes("cut.jpg")
    );
    assert!(codes("a_copy.jpg").contains(&"duplicate_exact".to_string()));
    assert!(
        codes("a.png").contains(&"duplicate_near".to_string()),
        "{:?}",
        codes("a.png")
    );
    assert_eq!(rows["a.jpg"]["dup_group"], rows["a.png"]["dup_group"]);
    assert!(
        rows["clip.mp4"]["dup_group"].is_null()
            || rows["clip.mp4"]["dup_group"] != rows["a.jpg"]["dup_group"]
    );
    let short = rows["short.mp4"]["flags"].as_array().unwrap();
    let rule = short
        .iter()
        .find(|f| f["code"] == "duration_below_min")
        .unwrap();
    assert_eq!(
        rule["reason"],
        "duration 0.20 s is below the minimum 0.50 s"
    );
    assert!(rows["clip.mp4"]["motion_mean"].as_f64().unwrap() > 0.5);
    assert_eq!(rows["clip.mp4"]["decoded_frames"], 50);
    assert_eq!(rows["clip.mp4"]["phash"].as_str().unwrap().len(), 16);

    // Flags are recomputed from stored metrics when the config changes, without rescanning.
    std::fs::write(
        proj.path().join("framecull.toml"),
        "[rules]\nmin_duration_secs = 0.1\n",
    )
    .unwrap();
    let out = common::run(&[
        "flags",
        "--project",
        proj.path().to_str().unwrap(),
        "--recompute",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let groups: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert!(
        groups
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["code"] != "duration_below_min")
    );
    assert!(
        groups
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["code"] == "image_truncated")
    );
}

/// A PNG whose header declares `width` x `height` grey pixels, with `zero_bytes` of compressed
/// zero rows after it: a decompression bomb's shape (the stream is cut short to keep the test
/// fast; nothing past the header is read for a picture over the limit).
fn bomb_png(path: &Path, width: u32, height: u32, zero_bytes: usize) {
    use std::io::Write;
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
    }
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 0, 0, 0, 0]); // 8-bit greyscale
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&vec![0u8; zero_bytes]).unwrap();
    let idat = z.finish().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"IDAT", &idat);
    chunk(&mut png, b"IEND", &[]);
    std::fs::write(path, png).unwrap();
}

/// Pictures over the project's `[limits]` are not decoded and get `too_large` with both
/// sizes, not `undecodable`; the other files are analysed as usual; raising the limit in
/// framecull.toml analyses them.
#[test]
fn pictures_over_the_pixel_limits_are_flagged_too_large_not_decoded() {
    let data = tempfile::tempdir().unwrap();
    bomb_png(&data.path().join("bomb.png"), 60000, 60000, 8 << 20);
    common::image(data.path(), "small.png", ImageKind::Png, 320, 240, None);
    common::video(
        data.path(),
        "clip.mp4",
        &spec(Pattern::MovingBox { speed: 3 }, 10),
    );
    let project = data.path().join(".framecull");
    let scan = |extra: &[&str]| {
        let mut args = vec!["scan", data.path().to_str().unwrap(), "--deep"];
        args.extend_from_slice(extra);
        let out = common::run(&args);
        assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
        common::stderr(&out)
    };
    let log = scan(&[]);
    assert!(log.contains("1 over the picture size limits"), "{log}");
    let rows = common::list_jsonl(&project);
    let codes = |path: &str| common::flag_codes(&rows[path]);
    assert_eq!(codes("bomb.png"), ["too_large"]);
    let reason = rows["bomb.png"]["flags"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("60000x60000") && reason.contains("268.4 Mpx"),
        "{reason}"
    );
    assert!(rows["small.png"]["sharpness"].is_number());
    assert!(rows["clip.mp4"]["motion_mean"].is_number());

    // A lower image limit catches the small picture too; the video's frames have their own.
    let config = project.join("framecull.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("max_image_pixels = 268435456", "max_image_pixels = 50000"),
    )
    .unwrap();
    scan(&[]);
    let rows = common::list_jsonl(&project);
    let flags = rows["small.png"]["flags"].to_string();
    assert!(
        flags.contains("320x240 (0.1 Mpx) is over the limit of 0.1 Mpx"),
        "{flags}"
    );
    assert!(!rows["clip.mp4"]["flags"].to_string().contains("too_large"));

    // Raised past the bomb: it is decoded now, and FFmpeg's own refusal is what it gets.
    std::fs::write(
        &config,
        text.replace(
            "max_image_pixels = 268435456",
            "max_image_pixels = 4000000000",
        ),
    )
    .unwrap();
    scan(&[]);
    let rows = common::list_jsonl(&project);
    let flags = rows["bomb.png"]["flags"].to_string();
    assert!(
        !flags.contains("too_large") && flags.contains("undecodable"),
        "{flags}"
    );
}

/// The deep pass gives the same rows with one decoder thread per file as with two: metrics,
/// flags and frame tables, on clean files of several codecs and on damaged ones (bytes
/// overwritten in the picture data, a file cut short, an MPEG-TS with broken packets), whose
/// error counts frame threads alone would not keep.
#[test]
fn one_and_two_decoder_threads_per_file_give_the_same_rows() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path();
    let lavfi = "testsrc2=size=320x180:rate=25:duration=4,noise=alls=10:allf=t";
    let encode = |name: &str, args: &[&str]| {
        let out = dir.join(name);
        let mut all = vec!["-f", "lavfi", "-i", lavfi];
        all.extend_from_slice(args);
        all.push(out.to_str().unwrap());
        common::ffmpeg(&all);
        out
    };
    let h264 = [
        "-c:v", "libx264", "-g", "25", "-bf", "3", "-pix_fmt", "yuv420p",
    ];
    encode("h264.mp4", &h264);
    encode(
        "hevc.mkv",
        &[
            "-c:v",
            "libx265",
            "-x265-params",
            "keyint=25:log-level=error",
        ],
    );
    encode("mpeg2.ts", &["-c:v", "mpeg2video", "-g", "12", "-bf", "2"]);
    encode(
        "vp9.webm",
        &["-c:v", "libvpx-vp9", "-g", "25", "-deadline", "realtime"],
    );
    // Damaged copies: picture data overwritten in three places; the index first and the file
    // cut at 60%.
    let overwrite = |from: &Path, name: &str| {
        let mut bytes = std::fs::read(from).unwrap();
        let n = bytes.len();
        for at in [n * 3 / 10, n / 2, n * 7 / 10] {
            for (i, b) in bytes[at..at + 96].iter_mut().enumerate() {
                *b = (i as u8).wrapping_mul(37) ^ 0xa5;
            }
        }
        std::fs::write(dir.join(name), bytes).unwrap();
    };
    let sources = tempfile::tempdir().unwrap();
    let h264_ts = sources.path().join("h264.ts");
    common::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        lavfi,
        "-c:v",
        "libx264",
        "-g",
        "25",
        "-bf",
        "3",
        "-f",
        "mpegts",
        h264_ts.to_str().unwrap(),
    ]);
    overwrite(&dir.join("h264.mp4"), "h264_damaged.mp4");
    overwrite(&dir.join("hevc.mkv"), "hevc_damaged.mkv");
    overwrite(&dir.join("mpeg2.ts"), "mpeg2_damaged.ts");
    overwrite(&h264_ts, "h264_damaged.ts");
    let front = sources.path().join("front.mp4");
    common::ffmpeg(&[
        "-i",
        dir.join("h264.mp4").to_str().unwrap(),
        "-c",
        "copy",
        "-movflags",
        "+faststart",
        front.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&front).unwrap();
    std::fs::write(dir.join("h264_cut.mp4"), &bytes[..bytes.len() * 3 / 5]).unwrap();

    let one = common::deep_rows(dir, 1);
    let two = common::deep_rows(dir, 2);
    assert_eq!(one.len(), 9, "{:?}", one.keys());
    // The damaged files are seen as such, so the comparison covers error counts.
    for name in [
        "h264_damaged.mp4",
        "hevc_damaged.mkv",
        "h264_damaged.ts",
        "h264_cut.mp4",
    ] {
        let m = &one[name].0;
        assert!(
            m.decode_errors > 0 || m.truncated || m.decoder_messages > 0,
            "{name}: {m:?}"
        );
    }
    for (path, row) in &one {
        assert_eq!(Some(row), two.get(path), "{path}");
    }
}
