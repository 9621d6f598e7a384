//! Deep analysis on synthetic media of known content: motion, cuts, integrity, quality,
//! duplicates and flags.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;

use framecull::catalog::AnalysisTodo;
use framecull::media::synth::{ImageKind, Pattern, VideoSpec};
use framecull::model::{Curves, Metrics};
use framecull::scan::deep::{AnalyzeOptions, analyse_file};

fn analyse(dir: &Path, name: &str) -> (Metrics, Curves) {
    let probe = framecull::media::probe_file(&dir.join(name), std::time::Duration::from_secs(20));
    let todo = AnalysisTodo {
        id: 1,
        path: name.to_string(),
        kind: probe.kind,
        status: probe.status,
        codec: probe.info.codec.clone(),
        fps: probe.info.fps,
        width: probe.info.width,
        height: probe.info.height,
        exif_orientation: probe.info.exif_orientation,
        stream_index: probe.info.stream_index,
        size_bytes: 0,
        mtime_ns: 0,
        frame_estimate: None,
    };
    analyse_file(
        &framecull::storage::Root::Local(dir.to_path_buf()),
        &todo,
        &AnalyzeOptions::default(),
    )
}

fn spec(pattern: Pattern, frames: u32) -> VideoSpec {
    let mut s = VideoSpec::new("libx264", 320, 180, 25, frames);
    s.pattern = pattern;
    s
}

#[test]
fn motion_tells_a_static_camera_from_noise_flicker_pans_and_moving_objects() {
    let dir = tempfile::tempdir().unwrap();
    let mut noisy = spec(Pattern::Static, 50);
    noisy.noise = 12;
    noisy.flicker = 0.08;
    common::video(dir.path(), "static.mp4", &spec(Pattern::Static, 50));
    common::video(dir.path(), "noisy.mp4", &noisy);
    common::video(dir.path(), "pan.mp4", &spec(Pattern::Pan { speed: 3 }, 50));
    common::video(
        dir.path(),
        "object.mp4",
        &spec(Pattern::MovingBox { speed: 6 }, 50),
    );
    let motion = |name: &str| analyse(dir.path(), name).0.motion_mean.unwrap();
    let (still, noise, pan, object) = (
        motion("static.mp4"),
        motion("noisy.mp4"),
        motion("pan.mp4"),
        motion("object.mp4"),
    );
    assert!(still < 0.05, "static {still}");
    assert!(noise < 0.2, "noise and flicker {noise}");
    assert!(pan > 10.0 * noise.max(0.05), "pan {pan} vs noise {noise}");
    assert!(
        object > 10.0 * noise.max(0.05),
        "object {object} vs noise {noise}"
    );
}

#[test]
fn the_motion_curve_locates_a_burst_in_time() {
    let dir = tempfile::tempdir().unwrap();
    // 4 s at 25 fps; the box moves from 1.6 s to 2.4 s.
    let mut s = spec(
        Pattern::Burst {
            start: 40,
            end: 60,
            speed: 8,
        },
        100,
    );
    s.noise = 6;
    common::video(dir.path(), "burst.mp4", &s);
    let (m, c) = analyse(dir.path(), "burst.mp4");
    assert_eq!(c.motion.len(), 8, "{:?}", c.motion);
    let peak = c
        .motion
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap()
        .0;
    assert!(
        (3..=4).contains(&peak),
        "peak bucket {peak}: {:?}",
        c.motion
    );
    for (i, v) in c.motion.iter().enumerate() {
        if !(3..=4).contains(&i) {
            assert!(
                *v < 0.2 * c.motion[peak],
                "bucket {i} = {v}: {:?}",
                c.motion
            );
        }
    }
    let share = m.static_share.unwrap();
    assert!((0.6..0.9).contains(&share), "static share {share}");
}

#[test]
fn hard_cuts_are_found_at_the_right_frames_and_flashes_are_not_cuts() {
    let dir = tempfile::tempdir().unwrap();
    common::video(
        dir.path(),
        "shots.mp4",
        &spec(Pattern::Shots { len: 30 }, 120),
    );
    let (_, c) = analyse(dir.path(), "shots.mp4");
    let frames: Vec<u64> = c.cuts.iter().map(|c| c.frame).collect();
    assert_eq!(frames, vec![30, 60, 90]);
    let t = c.cuts[0].time_secs;
    assert!((t - 1.2).abs() < 1e-6, "{t}");

    // The same static scene with a two-frame flash in the middle: no cut.
    let mut flash = spec(Pattern::Static, 60);
    flash.flicker = 0.0;
    common::video(dir.path(), "plain.mp4", &flash);
    let (_, c) = analyse(dir.path(), "plain.mp4");
    assert!(c.cuts.is_empty());
}

#[test]
fn integrity_reports_truncation_vfr_and_frozen_frames() {
    let dir = tempfile::tempdir().unwrap();
    // Index in front: a truncated copy still opens and decodes part of the frames.
    let mut s = spec(Pattern::MovingBox { speed: 4 }, 100);
    s.faststart = true;
    s.gop = 10;
    let full = common::video(dir.path(), "full.mp4", &s);
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(dir.path().join("cut.mp4"), &bytes[..bytes.len() * 2 / 5]).unwrap();
    let (m, _) = analyse(dir.path(), "full.mp4");
    assert!(!m.truncated);
    assert_eq!(m.decoded_frames, 100);
    assert_eq!(m.vfr, Some(false));
    let (m, _) = analyse(dir.path(), "cut.mp4");
    assert!(m.truncated, "{m:?}");
    assert!(m.decoded_frames < 60, "{}", m.decoded_frames);

    let mut vfr = spec(Pattern::MovingBox { speed: 4 }, 30);
    vfr.vfr = true;
    common::video(dir.path(), "vfr.mp4", &vfr);
    assert_eq!(analyse(dir.path(), "vfr.mp4").0.vfr, Some(true));

    let (m, _) = analyse(dir.path(), "full.mp4");
    assert!(m.frozen_share.unwrap() < 0.05);
    common::video(dir.path(), "still.mp4", &spec(Pattern::Static, 30));
    let (m, _) = analyse(dir.path(), "still.mp4");
    // Encoders refine a still picture for a few frames after each keyframe; the rest repeat.
    assert!(m.frozen_share.unwrap() > 0.5, "{m:?}");
}

#[test]
fn the_time_budget_stops_a_long_analysis_and_keeps_what_was_decoded() {
    let dir = tempfile::tempdir().unwrap();
    common::video(
        dir.path(),
        "v.mp4",
        &spec(Pattern::MovingBox { speed: 4 }, 50),
    );
    let probe = framecull::media::probe_file(
        &dir.path().join("v.mp4"),
        std::time::Duration::from_secs(20),
    );
    let todo = AnalysisTodo {
        id: 1,
        path: "v.mp4".into(),
        kind: framecull::model::MediaKind::Video,
        status: framecull::model::ItemStatus::Ok,
        codec: probe.info.codec,
        fps: probe.info.fps,
        width: probe.info.width,
        height: probe.info.height,
        exif_orientation: None,
        stream_index: probe.info.stream_index,
        size_bytes: 0,
        mtime_ns: 0,
        frame_estimate: None,
    };
    let options = AnalyzeOptions {
        file_budget: std::time::Duration::ZERO,
        ..AnalyzeOptions::default()
    };
    let (m, _) = analyse_file(
        &framecull::storage::Root::Local(dir.path().to_path_buf()),
        &todo,
        &options,
    );
    assert!(m.timed_out, "{m:?}");
    assert!(m.undecodable.is_none());
    assert!(m.decoded_frames < 50);
}

#[test]
fn images_get_quality_and_truncated_ones_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let jpg = common::image(dir.path(), "a.jpg", ImageKind::Jpeg, 640, 480, None);
    let (m, c) = analyse(dir.path(), "a.jpg");
    assert_eq!(m.decoded_frames, 1);
    assert!(m.structure_error.is_none());
    assert!(m.sharpness.unwrap() > 10.0);
    assert!(m.entropy.unwrap() > 3.0);
    assert_eq!(c.frame_hashes.len(), 8);
    let bytes = std::fs::read(&jpg).unwrap();
    std::fs::write(dir.path().join("cut.jpg"), &bytes[..bytes.len() * 3 / 5]).unwrap();
    let (m, _) = analyse(dir.path(), "cut.jpg");
    let why = m.structure_error.unwrap();
    assert!(why.contains("truncated"), "{why}");
}

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

#[test]
fn frames_decoded_with_errors_are_located_for_the_timeline_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(Pattern::MovingBox { speed: 5 }, 100);
    s.noise = 10;
    s.gop = 25;
    let path = common::video(dir.path(), "damaged.mp4", &s);
    // Overwrite a stretch in the middle of the frame data (the index is at the end).
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    for (i, b) in bytes[mid..mid + 3000].iter_mut().enumerate() {
        *b = (i * 97 % 251) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let (m, c) = analyse(dir.path(), "damaged.mp4");
    assert!(m.decode_errors > 0, "{m:?}");
    assert!(
        !c.error_secs.is_empty(),
        "decode errors {} but no positions",
        m.decode_errors
    );
    // Within the clip, and the damage is in the middle of the file, not at its start.
    assert!(
        c.error_secs.iter().all(|&t| (0.0..=4.0).contains(&t)),
        "{:?}",
        c.error_secs
    );
    assert!(c.error_secs[0] > 0.4, "{:?}", c.error_secs);

    // A deep scan stores them, and the catalog gives them back.
    let project = dir.path().join("project");
    let out = common::run(&[
        "scan",
        "--deep",
        dir.path().to_str().unwrap(),
        "--project",
        project.to_str().unwrap(),
    ]);
    assert!(out.status.code().unwrap() <= 1, "{}", common::stderr(&out));
    let catalog = framecull::catalog::Catalog::open(&project).unwrap();
    let item = catalog
        .items()
        .unwrap()
        .into_iter()
        .find(|i| i.path == "damaged.mp4")
        .unwrap();
    let stored = catalog.curves(item.id).unwrap().unwrap();
    assert_eq!(stored.error_secs, c.error_secs);
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

/// `list` rows by path.
type Rows = std::collections::BTreeMap<String, serde_json::Value>;

/// `list` rows of a folder scanned `--deep` and, in another project, `--triage`.
fn deep_and_triage_rows(data: &Path) -> (Rows, Rows) {
    let rows_at = |level: &str| {
        let project = data.join(format!("project-{level}"));
        let out = common::run(&[
            "scan",
            data.to_str().unwrap(),
            level,
            "--project",
            project.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        common::list_jsonl(&project)
    };
    (rows_at("--deep"), rows_at("--triage"))
}

/// Bars generated with FFmpeg's `pad` around noisy footage: letterboxed 16:9 in 4:3,
/// pillarboxed 4:3 in 16:9, bars that are not black, bars on all four sides; and footage with
/// a flat area on one side only (a sky) or none, which has no bars. The deep pass and the
/// triage give each file the same content crop and flags.
#[test]
fn letterbox_and_pillarbox_bars_are_found_with_the_crop_that_removes_them() {
    let data = tempfile::tempdir().unwrap();
    let footage = |w: u32, h: u32| format!("testsrc2=size={w}x{h}:rate=25,noise=alls=12:allf=t");
    let files: [(&str, String); 8] = [
        (
            "letterbox.mp4",
            format!("{},pad=640:480:0:60:black", footage(640, 360)),
        ),
        (
            "pillarbox.mp4",
            format!("{},pad=640:360:80:0:black", footage(480, 360)),
        ),
        (
            "grey_bars.mp4",
            format!("{},pad=640:480:0:60:0x6080a0", footage(640, 360)),
        ),
        (
            "windowbox.mp4",
            format!("{},pad=640:480:64:48:black", footage(512, 384)),
        ),
        ("plain.mp4", footage(640, 360)),
        // Other containers and codecs: MPEG-TS (MPEG-2) under an odd name, AVI (MPEG-4 Part 2,
        // no per-frame timestamps).
        (
            "boxed ü #1.ts",
            format!("{},pad=640:480:0:60:black", footage(640, 360)),
        ),
        (
            "boxed.avi",
            format!("{},pad=640:360:80:0:black", footage(480, 360)),
        ),
        (
            "sky.mp4",
            format!(
                "color=c=0x87ceeb:size=640x120:rate=25[sky];{}[ground];[sky][ground]vstack",
                footage(640, 240)
            ),
        ),
    ];
    for (name, graph) in &files {
        let path = data.path().join(name);
        let out = path.to_str().unwrap();
        common::ffmpeg(&[
            "-f", "lavfi", "-i", graph, "-t", "2", "-pix_fmt", "yuv420p", out,
        ]);
    }
    let (deep, triage) = deep_and_triage_rows(data.path());
    // (file, the content's rectangle (x, y, w, h), letterbox, pillarbox).
    let expected: [(&str, Option<[u32; 4]>, bool, bool); 8] = [
        ("letterbox.mp4", Some([0, 60, 640, 360]), true, false),
        ("pillarbox.mp4", Some([80, 0, 480, 360]), false, true),
        ("grey_bars.mp4", Some([0, 60, 640, 360]), true, false),
        ("windowbox.mp4", Some([64, 48, 512, 384]), true, true),
        ("plain.mp4", None, false, false),
        ("sky.mp4", None, false, false),
        ("boxed ü #1.ts", Some([0, 60, 640, 360]), true, false),
        ("boxed.avi", Some([80, 0, 480, 360]), false, true),
    ];
    for (name, content, letterbox, pillarbox) in expected {
        let row = &deep[name];
        assert_eq!(row["analysis_level"], "deep", "{name}");
        let codes = common::flag_codes(row);
        assert_eq!(
            codes.contains(&"letterbox".into()),
            letterbox,
            "{name}: {codes:?}"
        );
        assert_eq!(
            codes.contains(&"pillarbox".into()),
            pillarbox,
            "{name}: {codes:?}"
        );
        let rect = |row: &serde_json::Value| {
            row["content_crop"].as_str().map(|c| {
                let v: Vec<u32> = c.split(':').map(|n| n.parse().unwrap()).collect();
                [v[2], v[3], v[0], v[1]]
            })
        };
        // The MP4s' triage decodes every frame (the deep pass's samples: the same crop);
        // the others' reads their keyframes, whose crop meets the same bounds.
        let every_frame = name.ends_with(".mp4");
        let mut rows = vec![row];
        if !every_frame {
            rows.push(&triage[name]);
        }
        for (row, crop) in rows.iter().map(|r| (*r, rect(r))) {
            match (content, crop) {
                (None, None) => {}
                (Some([x, y, w, h]), Some([cx, cy, cw, ch])) => {
                    // Inside the content (no bar left), losing at most a line of the analysis
                    // copy (2.5 source pixels here) and the rounding to even on each side.
                    let within = |bar: u32, cut: u32| cut >= bar && cut <= bar + 6;
                    assert!(within(x, cx) && within(y, cy), "{name}: {crop:?}");
                    assert!(within(640 - x - w, 640 - cx - cw), "{name}: {crop:?}");
                    let height = if name.starts_with("pillarbox") || name.ends_with(".avi") {
                        360
                    } else {
                        480
                    };
                    assert!(within(height - y - h, height - cy - ch), "{name}: {crop:?}");
                    assert!(cw % 2 == 0 && ch % 2 == 0 && cx % 2 == 0 && cy % 2 == 0);
                    let reason = &row["flags"].as_array().unwrap()[0]["reason"];
                    assert!(
                        reason
                            .as_str()
                            .unwrap()
                            .contains(&format!("crop={}", row["content_crop"].as_str().unwrap())),
                        "{name}: {reason}"
                    );
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        assert_eq!(triage[name]["analysis_level"], "triage", "{name}");
        if every_frame {
            assert_eq!(triage[name]["content_crop"], row["content_crop"], "{name}");
        }
        // (Duplicate flags may differ: a triage hashes keyframes.)
        let bars = |codes: Vec<String>| -> Vec<String> {
            codes.into_iter().filter(|c| c.ends_with("box")).collect()
        };
        assert_eq!(
            bars(common::flag_codes(&triage[name])),
            bars(codes),
            "{name}"
        );
    }
    // The filter finds them by flag.
    let project = data.path().join("project---deep");
    let named = |filter: &str| -> Vec<String> {
        common::list_jsonl_where(&project, Some(filter))
            .into_keys()
            .collect()
    };
    assert_eq!(
        named("flag:letterbox"),
        [
            "boxed ü #1.ts",
            "grey_bars.mp4",
            "letterbox.mp4",
            "windowbox.mp4"
        ]
    );
    assert_eq!(
        named("flag:pillarbox"),
        ["boxed.avi", "pillarbox.mp4", "windowbox.mp4"]
    );
}

/// What FFmpeg's `idet` tells of each frame of `path` alone: (tff, bff, progressive).
fn idet_counts(path: &Path) -> (u64, u64, u64) {
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-nostats", "-i"])
        .arg(path)
        .args(["-an", "-vf", "idet", "-f", "null", "-"])
        .output()
        .expect("the ffmpeg command line (packaging/deps.sh installs it)");
    let log = String::from_utf8_lossy(&out.stderr);
    let line = log
        .lines()
        .find(|l| l.contains("Single frame detection"))
        .unwrap_or_else(|| panic!("no idet summary for {path:?}: {log}"));
    let count = |key: &str| -> u64 {
        let rest = &line[line.find(key).unwrap() + key.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    (count("TFF:"), count("BFF:"), count("Progressive:"))
}

/// Interlaced PAL and NTSC pictures in both field orders (MPEG-2 in PS and TS under an odd
/// name, H.264 in MP4, MPEG-4 Part 2 in AVI, 10-bit ProRes), pictures marked with the wrong
/// order or as progressive, telecined film, and progressive pictures carried in a stream
/// marked interlaced: the `interlaced` flag and `field_order` follow the picture, not the
/// marks, and agree with FFmpeg's `idet` wherever one order holds in at least 80% of its
/// frames (it splits progressive motion between both orders: no flag there). A triage does
/// not test the fields.
#[test]
fn interlaced_pictures_are_flagged_with_the_field_order_the_picture_shows() {
    let data = tempfile::tempdir().unwrap();
    let pal = "testsrc2=size=720x576:rate=50";
    let ntsc = "testsrc2=size=720x480:rate=60000/1001";
    let interlaced = |source: &str, first: &str, marked: &str| {
        format!("{source},tinterlace=mode=interleave_{first},setfield={marked}")
    };
    let mpeg2 = |top: &'static str| -> Vec<&'static str> {
        vec![
            "-c:v",
            "mpeg2video",
            "-flags",
            "+ildct+ilme",
            "-top",
            top,
            "-b:v",
            "8M",
        ]
    };
    // (name, filter graph, encoder arguments, field order, the order the frames are marked).
    let files: Vec<(&str, String, Vec<&str>, &str, &str)> = vec![
        ("pal_tff.mpg", interlaced(pal, "top", "tff"), mpeg2("1"), "tff", "tff"),
        (
            "pal_bff.mp4",
            interlaced(pal, "bottom", "bff"),
            vec!["-c:v", "libx264", "-flags", "+ildct+ilme", "-x264-params", "bff=1"],
            "bff",
            "bff",
        ),
        ("ntsc tff ü #1.ts", interlaced(ntsc, "top", "tff"), mpeg2("1"), "tff", "tff"),
        (
            "ntsc_bff.avi",
            interlaced(ntsc, "bottom", "bff"),
            vec!["-c:v", "mpeg4", "-flags", "+ildct+ilme", "-top", "0", "-q:v", "3"],
            "bff",
            "bff",
        ),
        (
            "marked_wrong.mpg",
            interlaced(pal, "bottom", "tff"),
            mpeg2("1"),
            "bff",
            "tff",
        ),
        (
            "unmarked.mp4",
            interlaced(pal, "top", "prog"),
            vec!["-c:v", "libx264"],
            "tff",
            "progressive",
        ),
        (
            "prores_10bit.mov",
            interlaced(pal, "top", "tff"),
            vec!["-c:v", "prores_ks", "-flags", "+ildct", "-pix_fmt", "yuv422p10le"],
            "tff",
            "",
        ),
        (
            "telecine.mpg",
            "testsrc2=size=720x480:rate=24000/1001,telecine=first_field=top:pattern=23,setfield=tff"
                .into(),
            mpeg2("1"),
            "tff",
            "tff",
        ),
        (
            "progressive_marked_interlaced.mpg",
            "testsrc2=size=720x576:rate=25,setfield=tff".into(),
            mpeg2("1"),
            "progressive",
            "tff",
        ),
        (
            "progressive.mp4",
            "testsrc2=size=720x576:rate=25".into(),
            vec!["-c:v", "libx264"],
            "progressive",
            "progressive",
        ),
    ];
    for (name, graph, codec, ..) in &files {
        let out = data.path().join(name);
        let mut args = vec!["-f", "lavfi", "-i", graph, "-t", "3"];
        args.extend(codec);
        if !codec.contains(&"-pix_fmt") {
            args.extend(["-pix_fmt", "yuv420p"]);
        }
        args.push(out.to_str().unwrap());
        common::ffmpeg(&args);
    }
    let (deep, triage) = deep_and_triage_rows(data.path());
    for (name, _, _, order, marked) in &files {
        let row = &deep[*name];
        assert_eq!(row["field_order"], *order, "{name}: {row}");
        let flags = row["flags"].as_array().unwrap();
        let flag = flags.iter().find(|f| f["code"] == "interlaced");
        assert_eq!(flag.is_some(), *order != "progressive", "{name}: {flags:?}");
        if let Some(flag) = flag {
            let reason = flag["reason"].as_str().unwrap();
            let words = if *order == "tff" {
                "top field first"
            } else {
                "bottom field first"
            };
            assert!(reason.contains(words), "{name}: {reason}");
            assert_eq!(flag["severity"], "warning");
            // Telecine repeats a field in two frames of five; interlaced video none.
            let repeats = !reason.contains("; 0 with a repeated field");
            assert_eq!(repeats, name.starts_with("telecine"), "{name}: {reason}");
            // ProRes's encoder marks frames as this FFmpeg's version does: not checked.
            let marks = match *marked {
                "" => None,
                m if m == *order => Some("the frames are marked so"),
                "progressive" => Some("the frames are marked progressive"),
                _ => Some("so deinterlacing by the marks swaps the fields"),
            };
            if let Some(marks) = marks {
                assert!(reason.contains(marks), "{name}: {reason}");
            }
        }
        // FFmpeg's idet, where one order holds.
        let (tff, bff, progressive) = idet_counts(&data.path().join(name));
        let frames = tff + bff + progressive;
        let idet = if tff * 5 >= frames * 4 {
            "tff"
        } else if bff * 5 >= frames * 4 {
            "bff"
        } else {
            "progressive"
        };
        assert_eq!(
            idet, *order,
            "{name}: idet {tff} tff, {bff} bff, {progressive} progressive"
        );
        let row = &triage[*name];
        assert!(row["field_order"].is_null(), "{name}: {row}");
        assert!(!common::flag_codes(row).contains(&"interlaced".into()));
    }
}
