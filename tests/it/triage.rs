//! The triage level: a video's index and packets read, nothing decoded. Its rows say so, it
//! flags what the deep pass flags wherever the packets show it, and a later triage never makes
//! a deep analysis shallower.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::ffmpeg;
use framecull::media::synth::{ImageKind, VideoSpec};

/// The integrity flags both levels can raise from what they read.
const SHARED: [&str; 6] = [
    "unreadable",
    "undecodable",
    "truncated",
    "frame_count_mismatch",
    "timestamps",
    "repeat_frames",
];

/// Generated damage beside clean files: an MP4 with its index in front cut at 60% (the
/// index promises frames the file no longer holds), an MKV whose packet 50 repeats the
/// previous packet's presentation time, noise named `.mp4`, an empty `.mkv`, and clean H.264, VP9,
/// MPEG-TS, an elementary H.264 stream (no timestamps), MPEG-4 with B-frames in AVI and MPEG-2
/// in a program stream (presentation times the decoder makes), an MKV with an odd name and a
/// picture.
fn damaged(data: &Path) {
    let mut whole = VideoSpec::new("libx264", 160, 96, 25, 100);
    whole.faststart = true;
    let whole = common::video(data, "whole.mp4", &whole);
    let bytes = std::fs::read(&whole).unwrap();
    std::fs::write(data.join("truncated.mp4"), &bytes[..bytes.len() * 3 / 5]).unwrap();
    // B-frames, so that the muxer keeps a presentation time repeated out of order (it would
    // move a repeated decode time).
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x96:rate=25",
        "-frames:v",
        "100",
        "-c:v",
        "libx264",
        "-bf",
        "2",
        "-bsf:v",
        "setts=pts=if(eq(N\\,50)\\,PREV_INPTS\\,PTS)",
        data.join("timestamps.mkv").to_str().unwrap(),
    ]);
    common::video(
        data,
        "vp9.webm",
        &VideoSpec::new("libvpx-vp9", 128, 72, 25, 50),
    );
    ffmpeg(&[
        "-i",
        whole.to_str().unwrap(),
        "-c",
        "copy",
        data.join("whole.ts").to_str().unwrap(),
    ]);
    // No timestamps at all (an elementary stream), and an odd name.
    ffmpeg(&[
        "-i",
        whole.to_str().unwrap(),
        "-c",
        "copy",
        data.join("elementary.h264").to_str().unwrap(),
    ]);
    ffmpeg(&[
        "-i",
        whole.to_str().unwrap(),
        "-c",
        "copy",
        data.join("odd name – ü #1.mkv").to_str().unwrap(),
    ]);
    // Containers without presentation times, where the decoder makes them: MPEG-4 with
    // B-frames in AVI, and MPEG-2 in a program stream; small (decoded whole) and, with grain,
    // large (sampled).
    for (name, codec, source) in [
        ("bframes.avi", "mpeg4", "testsrc2=size=160x96:rate=25"),
        ("program.mpg", "mpeg2video", "testsrc2=size=160x96:rate=25"),
        (
            "bframes_large.avi",
            "mpeg4",
            "testsrc2=size=320x180:rate=25,noise=alls=8:allf=t",
        ),
        (
            "program_large.mpg",
            "mpeg2video",
            "testsrc2=size=320x180:rate=25,noise=alls=8:allf=t",
        ),
    ] {
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            source,
            "-frames:v",
            "250",
            "-c:v",
            codec,
            "-bf",
            "2",
            "-q:v",
            "4",
            data.join(name).to_str().unwrap(),
        ]);
    }
    for large in ["bframes_large.avi", "program_large.mpg"] {
        let bytes = std::fs::metadata(data.join(large)).unwrap().len();
        assert!(
            bytes > framecull::media::packets::DECODE_WHOLE_BELOW,
            "{large}"
        );
    }
    std::fs::write(data.join("noise.mp4"), [0x5au8; 4096]).unwrap();
    std::fs::write(data.join("empty.mkv"), b"").unwrap();
    common::image(data, "still.png", ImageKind::Png, 64, 48, None);
}

fn scan(data: &Path, project: &Path, level: &str) -> std::process::Output {
    let out = common::run(&[
        "scan",
        data.to_str().unwrap(),
        "--project",
        project.to_str().unwrap(),
        level,
    ]);
    assert!(
        out.status.code().unwrap() <= 1,
        "scan {level}: {}",
        common::stderr(&out)
    );
    out
}

fn shared_flags(rows: &BTreeMap<String, serde_json::Value>) -> BTreeMap<String, BTreeSet<String>> {
    rows.iter()
        .map(|(path, row)| {
            let codes = common::flag_codes(row)
                .into_iter()
                .filter(|c| SHARED.contains(&c.as_str()))
                .collect();
            (path.clone(), codes)
        })
        .collect()
}

/// A triage and a deep pass of the same files agree on every integrity flag both can raise,
/// and the damage generated is found by both.
#[test]
fn triage_and_deep_rows_agree_on_the_integrity_flags_they_share() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    damaged(&data);
    let (triaged, deep) = (tmp.path().join("triaged"), tmp.path().join("deep"));
    scan(&data, &triaged, "--triage");
    scan(&data, &deep, "--deep");
    let (t, d) = (common::list_jsonl(&triaged), common::list_jsonl(&deep));
    assert_eq!(shared_flags(&t), shared_flags(&d));
    let flagged = |rows: &BTreeMap<String, serde_json::Value>, path: &str, code: &str| {
        common::flag_codes(&rows[path]).contains(&code.to_string())
    };
    for rows in [&t, &d] {
        assert!(flagged(rows, "truncated.mp4", "truncated"));
        assert!(flagged(rows, "timestamps.mkv", "timestamps"));
        assert!(flagged(rows, "noise.mp4", "unreadable"));
        for clean in [
            "whole.mp4",
            "whole.ts",
            "vp9.webm",
            "still.png",
            "elementary.h264",
            "odd name – ü #1.mkv",
        ] {
            assert_eq!(shared_flags(rows)[clean], BTreeSet::new(), "{clean}");
        }
    }
    // The triage's flags say what they read.
    let truncated = t["truncated.mp4"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "truncated")
        .unwrap();
    assert_eq!(truncated["source"], "triage");
    assert!(
        truncated["reason"]
            .as_str()
            .unwrap()
            .contains("of the declared 4.00 s are in the packets"),
        "{truncated}"
    );
}

/// Every row names its level: videos `triage` after a triage, pictures `deep` (their triage
/// is their analysis), other files none; the deep pass deepens the triaged videos, and a
/// triage after it leaves them deep.
#[test]
fn each_row_names_its_level_and_a_triage_never_makes_a_file_shallower() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    common::video(&data, "a.mp4", &VideoSpec::new("libx264", 128, 72, 25, 50));
    common::video(
        &data,
        "b.webm",
        &VideoSpec::new("libvpx-vp9", 128, 72, 25, 30),
    );
    common::image(&data, "c.jpg", ImageKind::Jpeg, 64, 48, None);
    let project = tmp.path().join("project");
    let p = project.to_str().unwrap();
    let levels = || -> BTreeMap<String, String> {
        common::list_jsonl(&project)
            .into_iter()
            .map(|(path, row)| (path, row["analysis_level"].as_str().unwrap().to_string()))
            .collect()
    };
    let out = common::run(&["scan", data.to_str().unwrap(), "--project", p]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(levels().values().all(|l| l == "none"), "{:?}", levels());

    let out = common::run(&["analyze", "--triage", "--project", p]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let want = |v: &str| {
        BTreeMap::from([
            ("a.mp4".to_string(), v.to_string()),
            ("b.webm".to_string(), v.to_string()),
            ("c.jpg".to_string(), "deep".to_string()),
        ])
    };
    assert_eq!(levels(), want("triage"));
    let rows = common::list_jsonl(&project);
    assert_eq!(rows["a.mp4"]["decoded_frames"], serde_json::Value::Null);
    // The figures a triage estimates say so; a picture's (analysed deeply) do not.
    assert_eq!(
        rows["a.mp4"]["estimated"],
        serde_json::json!([
            "motion_mean",
            "motion_p95",
            "brightness",
            "sharpness",
            "phash"
        ])
    );
    assert_eq!(rows["c.jpg"]["estimated"], serde_json::json!([]));
    // The filter, the statistics and the manifest carry the level.
    let triaged = common::list_jsonl_where(&project, Some("level:triage"));
    assert_eq!(
        triaged.keys().collect::<Vec<_>>(),
        ["a.mp4", "b.webm"],
        "level:triage"
    );
    let out = common::run(&["stats", "--json", "--project", p]);
    let stats: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let by_level: BTreeMap<String, u64> = stats["by_analysis_level"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap().to_string(),
                g["files"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by_level,
        BTreeMap::from([("deep".to_string(), 1), ("triage".to_string(), 2)])
    );
    let out = common::run(&[
        "export",
        "--name",
        "t",
        "--format",
        "jsonl",
        "--include",
        "unreviewed",
        "--project",
        p,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let manifest = std::fs::read_to_string(project.join("manifests/t/v0001.jsonl")).unwrap();
    let levels_in_manifest: BTreeSet<(String, String)> = manifest
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let level = v["analysis_level"].as_str().unwrap().to_string();
            (v["path"].as_str().unwrap().to_string(), level)
        })
        .collect();
    assert_eq!(
        levels_in_manifest,
        BTreeSet::from([
            ("a.mp4".to_string(), "triage".to_string()),
            ("b.webm".to_string(), "triage".to_string()),
            ("c.jpg".to_string(), "deep".to_string()),
        ])
    );
    // Nothing decoded, nothing to split at: a triage is not the analysis the clips need.
    let out = common::run(&["clips", "split-at-cuts", "--project", p]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));

    let out = common::run(&["analyze", "--triage", "--project", p]);
    assert!(
        common::stderr(&out).contains("0 files analysed, 3 up to date"),
        "{}",
        common::stderr(&out)
    );
    let out = common::run(&["analyze", "--project", p]);
    assert!(
        common::stderr(&out).contains("2 files analysed, 1 up to date"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(levels(), want("deep"));
    let rows = common::list_jsonl(&project);
    assert_eq!(rows["a.mp4"]["decoded_frames"], 50);
    assert_eq!(rows["a.mp4"]["estimated"], serde_json::json!([]));
    let out = common::run(&["analyze", "--triage", "--project", p]);
    assert!(
        common::stderr(&out).contains("0 files analysed, 3 up to date"),
        "{}",
        common::stderr(&out)
    );
    assert_eq!(levels(), want("deep"));
}

/// Packets of a file as ffprobe lists them: (byte position, size, keyframe).
fn packets(path: &Path) -> Vec<(usize, usize, bool)> {
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .args(["packet=pos,size,flags", "-of", "json"])
        .arg(path)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let number = |k: &str| p[k].as_str().unwrap().parse::<usize>().unwrap();
            let key = p["flags"].as_str().unwrap().starts_with('K');
            (number("pos"), number("size"), key)
        })
        .collect()
}

/// `base` with `edit` applied to its bytes, written as `name` in `dir`.
fn damaged_copy(base: &Path, dir: &Path, name: &str, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(base).unwrap();
    edit(&mut bytes);
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// Flip 20 bits in the last three quarters of packet `(pos, size)` (xorshift, the same every
/// run).
fn flip_bits(bytes: &mut [u8], (pos, size): (usize, usize)) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..20 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let at = pos + size / 4 + (state as usize) % (size - size / 4);
        bytes[at] ^= 1 << (state >> 60 & 7);
    }
}

/// Damage inside packets: bit flips in the first GOP's and in the last GOP's keyframe are
/// found by decoding those GOPs (decode_errors, as the deep pass says); a zeroed range in a
/// middle packet, and a GOP cut out of an MPEG-TS file (a corrupt mark and a hole in the
/// timestamps), are doubts (`suspect`), and `analyze --where 'level:triage and
/// flag:suspect'` deepens those files alone.
#[test]
fn damage_in_the_gops_decoded_is_found_and_doubts_are_deepened_by_filter() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, work) = (tmp.path().join("data"), tmp.path().join("work"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let base = work.join("base.mp4");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=25",
        "-frames:v",
        "250",
        "-c:v",
        "libx264",
        "-g",
        "25",
        "-bf",
        "2",
        "-pix_fmt",
        "yuv420p",
        base.to_str().unwrap(),
    ]);
    let ts = work.join("base.ts");
    ffmpeg(&[
        "-i",
        base.to_str().unwrap(),
        "-c",
        "copy",
        ts.to_str().unwrap(),
    ]);
    let mp4 = packets(&base);
    let keys: Vec<usize> = (0..mp4.len()).filter(|&i| mp4[i].2).collect();
    assert_eq!(keys.len(), 10);
    let at = |i: usize| (mp4[i].0, mp4[i].1);
    std::fs::copy(&base, data.join("clean.mp4")).unwrap();
    damaged_copy(&base, &data, "first_gop.mp4", |b| flip_bits(b, at(keys[0])));
    damaged_copy(&base, &data, "last_gop.mp4", |b| flip_bits(b, at(keys[9])));
    damaged_copy(&base, &data, "zeroed.mp4", |b| {
        let (pos, size) = at(keys[5] + 6);
        b[pos + size / 3..pos + size / 3 + 200].fill(0);
    });
    let in_ts = packets(&ts);
    let ts_keys: Vec<usize> = (0..in_ts.len()).filter(|&i| in_ts[i].2).collect();
    damaged_copy(&ts, &data, "dropped_gop.ts", |b| {
        b.drain(in_ts[ts_keys[5]].0..in_ts[ts_keys[6]].0);
    });

    let (triaged, deep) = (tmp.path().join("triaged"), tmp.path().join("deep"));
    scan(&data, &triaged, "--triage");
    scan(&data, &deep, "--deep");
    let (t, d) = (common::list_jsonl(&triaged), common::list_jsonl(&deep));
    assert_eq!(shared_flags(&t), shared_flags(&d));
    let codes = |rows: &BTreeMap<String, serde_json::Value>, path: &str| -> BTreeSet<String> {
        common::flag_codes(&rows[path])
            .into_iter()
            .filter(|c| c != "duplicate_near" && c != "vfr")
            .collect()
    };
    let set = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    for path in ["first_gop.mp4", "last_gop.mp4"] {
        assert_eq!(codes(&d, path), set(&["decode_errors"]), "deep: {path}");
        assert_eq!(codes(&t, path), set(&["decode_errors"]), "triage: {path}");
    }
    assert_eq!(codes(&t, "clean.mp4"), set(&[]));
    assert_eq!(codes(&t, "zeroed.mp4"), set(&["suspect"]));
    assert_eq!(codes(&t, "dropped_gop.ts"), set(&["suspect"]));
    let reason = |path: &str| t[path]["flags"].to_string();
    assert!(
        reason("zeroed.mp4").contains("runs of zero bytes"),
        "{}",
        reason("zeroed.mp4")
    );
    assert!(
        reason("dropped_gop.ts").contains("the timestamps jump 1 time"),
        "{}",
        reason("dropped_gop.ts")
    );

    let p = triaged.to_str().unwrap();
    let out = common::run(&[
        "analyze",
        "--project",
        p,
        "--where",
        "level:triage and flag:suspect",
    ]);
    assert!(
        common::stderr(&out).contains("2 files analysed, 0 up to date, 3 left out by the filter"),
        "{}",
        common::stderr(&out)
    );
    let levels: BTreeMap<String, String> = common::list_jsonl(&triaged)
        .into_iter()
        .map(|(path, row)| (path, row["analysis_level"].as_str().unwrap().to_string()))
        .collect();
    let deep_now: Vec<&String> = levels
        .iter()
        .filter(|(_, l)| *l == "deep")
        .map(|(p, _)| p)
        .collect();
    assert_eq!(deep_now, ["dropped_gop.ts", "zeroed.mp4"]);
}

/// One x264 encode of `testsrc2` at `size` (with grain when `noise`), 25 fps, `frames`
/// frames, a keyframe every `gop` and B-frames, into `path` (`extra`: more options).
fn encode(path: &Path, size: &str, frames: u32, gop: u32, noise: bool, extra: &[&str]) {
    let filter = if noise {
        format!("testsrc2=size={size}:rate=25,noise=alls=12:allf=t")
    } else {
        format!("testsrc2=size={size}:rate=25")
    };
    let (frames, gop) = (frames.to_string(), gop.to_string());
    let mut args = vec![
        "-f",
        "lavfi",
        "-i",
        &filter,
        "-frames:v",
        &frames,
        "-c:v",
        "libx264",
    ];
    args.extend(["-g", &gop, "-keyint_min", &gop, "-sc_threshold", "0"]);
    args.extend(extra);
    args.extend(["-bf", "2", "-pix_fmt", "yuv420p", path.to_str().unwrap()]);
    ffmpeg(&args);
}

/// The recall rule, per damage class (`media::synth::damage`), on 20 s clips of ten GOPs with
/// one GOP in ten damaged: every file the deep pass gives an integrity flag gets one, or
/// `suspect`, from the triage. Bits flipped in a predicted frame hide from any sample: in a
/// large file they are found only where the GOP is decoded (not asserted), in a small one
/// (decoded whole) always. A stream whose index marks every packet a keyframe (as some AVI
/// writers do), and an MP4 cut without re-encoding (an edit list after its first keyframe),
/// get no integrity flag from either level.
#[test]
fn each_damage_class_at_one_gop_in_ten_is_found_by_the_triage() {
    use framecull::media::synth::damage::{self, Damage};
    let tmp = tempfile::tempdir().unwrap();
    let (data, work) = (tmp.path().join("data"), tmp.path().join("work"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    // Grain, so that a GOP costs what it does on camera footage, and 2 s GOPs: the keyframes
    // are under the 5% of the bytes a triage decodes, so it decodes each.
    let fast = ["-preset", "ultrafast"];
    let mp4 = work.join("base.mp4");
    encode(
        &mp4,
        "320x180",
        500,
        50,
        true,
        &[&fast[..], &["-movflags", "+faststart"]].concat(),
    );
    let ts = work.join("base.ts");
    encode(&ts, "320x180", 500, 50, true, &fast);
    let small = work.join("small.mp4");
    encode(&small, "192x108", 250, 25, false, &[]);
    assert!(std::fs::metadata(&mp4).unwrap().len() > framecull::media::packets::DECODE_WHOLE_BELOW);
    assert!(
        std::fs::metadata(&small).unwrap().len() < framecull::media::packets::DECODE_WHOLE_BELOW
    );
    let avi = work.join("plain.avi");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x180:rate=25,noise=alls=12:allf=t",
        "-frames:v",
        "500",
        "-c:v",
        "mpeg4",
        "-g",
        "50",
        "-q:v",
        "4",
        avi.to_str().unwrap(),
    ]);
    framecull::media::synth::remux_every_packet_key(&avi, &data.join("every_packet_key.avi"))
        .unwrap();
    std::fs::copy(&mp4, data.join("clean.mp4")).unwrap();
    // Cut without re-encoding: its edit list starts after the first keyframe, whose packet
    // the demuxer marks to discard (it gives no frame, by design).
    ffmpeg(&[
        "-ss",
        "3.3",
        "-i",
        mp4.to_str().unwrap(),
        "-c",
        "copy",
        data.join("trimmed.mp4").to_str().unwrap(),
    ]);

    let mut cases: Vec<(String, Damage)> = Vec::new();
    for class in Damage::ALL {
        for base in [&mp4, &ts] {
            if !class.applies_to(base) {
                continue;
            }
            // Ten GOPs (MPEG-TS: eleven, its parser marks one more keyframe).
            let gops = damage::gops(base).unwrap().len();
            assert!((10..=11).contains(&gops), "{}: {gops}", base.display());
            let name = format!(
                "{}.{}",
                class.name(),
                base.extension().unwrap().to_str().unwrap()
            );
            damage::write_damaged(base, &data.join(&name), class, &damage::pick(10, 1, 3)).unwrap();
            cases.push((name, class));
        }
    }
    let three = damage::pick(10, 3, 5);
    damage::write_damaged(
        &small,
        &data.join("small_predicted_flips.mp4"),
        Damage::PredictedFlips,
        &three,
    )
    .unwrap();

    let (triaged, deep) = (tmp.path().join("triaged"), tmp.path().join("deep"));
    scan(&data, &triaged, "--triage");
    scan(&data, &deep, "--deep");
    let (t, d) = (common::list_jsonl(&triaged), common::list_jsonl(&deep));
    let integrity = |rows: &BTreeMap<String, serde_json::Value>, path: &str| {
        common::flag_codes(&rows[path])
            .into_iter()
            .any(|c| framecull::analysis::flags::is_integrity(&c))
    };
    let found = |path: &str| {
        integrity(&t, path) || common::flag_codes(&t[path]).contains(&"suspect".to_string())
    };
    let mut flagged_by_deep = Vec::new();
    for (name, class) in &cases {
        if !integrity(&d, name) {
            continue;
        }
        flagged_by_deep.push(name.clone());
        if *class != Damage::PredictedFlips {
            assert!(
                found(name),
                "{name}: deep {:?}, triage {:?}",
                common::flag_codes(&d[name]),
                common::flag_codes(&t[name])
            );
        }
    }
    // The damage is real: the deep pass sees each class that breaks a decode or a reading.
    for must in [
        "keyframe_bit_flips.mp4",
        "keyframe_bit_flips.ts",
        "truncated_mid_gop.mp4",
        "truncated_mid_gop.ts",
        "moved_index.mp4",
        "missing_index.mp4",
        "rewritten_timestamps.mp4",
    ] {
        assert!(flagged_by_deep.contains(&must.to_string()), "deep: {must}");
    }
    // Damage the packets show is found whatever the deep pass makes of it (its decoder
    // conceals a zeroed range; a GOP cut out of MPEG-TS is a jump in time to it).
    for seen in [
        "zeroed_ranges.mp4",
        "zeroed_ranges.ts",
        "dropped_gops.mp4",
        "dropped_gops.ts",
    ] {
        assert!(
            found(seen),
            "triage: {seen}: {:?}",
            common::flag_codes(&t[seen])
        );
    }
    assert!(integrity(&d, "small_predicted_flips.mp4"));
    assert!(integrity(&t, "small_predicted_flips.mp4"));
    for clean in ["clean.mp4", "trimmed.mp4", "every_packet_key.avi"] {
        assert!(!integrity(&d, clean), "deep: {clean}");
        assert!(
            !integrity(&t, clean),
            "triage: {clean}: {:?}",
            common::flag_codes(&t[clean])
        );
    }
}

/// The picture flags a triage reads from the keyframes it decodes (`black`, `dark`,
/// `overexposed`, `grayscale`, `low_information`) agree with the deep pass's, whose measures sample a frame a second; the
/// brightness it estimates is within 5 levels of the deep pass's.
#[test]
fn picture_flags_from_the_keyframes_agree_with_the_deep_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    for (name, filter) in [
        (
            "black.mp4",
            "color=black:size=320x180:rate=25,noise=alls=3:allf=t",
        ),
        (
            "dark.mp4",
            "testsrc2=size=320x180:rate=25,format=rgb24,lutrgb=r=val*0.17:g=val*0.17:b=val*0.17,\
             noise=alls=4:allf=t",
        ),
        (
            "overexposed.mp4",
            "testsrc2=size=320x180:rate=25,format=rgb24,\
             lutrgb=r=255-(255-val)*0.08:g=255-(255-val)*0.08:b=255-(255-val)*0.08,\
             noise=alls=4:allf=t",
        ),
        (
            "normal.mp4",
            "testsrc2=size=320x180:rate=25,noise=alls=10:allf=t",
        ),
        (
            "grayscale.mp4",
            "testsrc2=size=320x180:rate=25,format=gray,noise=alls=10:allf=t",
        ),
        (
            "flat.mp4",
            "color=0x505050:size=320x180:rate=25,noise=alls=1:allf=t",
        ),
    ] {
        clip(&data.join(name), filter, "libx264");
    }
    let (_, _, t, d) = both_levels(tmp.path(), &data);
    let picture = |rows: &BTreeMap<String, serde_json::Value>, path: &str| -> BTreeSet<String> {
        common::flag_codes(&rows[path])
            .into_iter()
            .filter(|c| {
                [
                    "black",
                    "dark",
                    "overexposed",
                    "grayscale",
                    "low_information",
                ]
                .contains(&c.as_str())
            })
            .collect()
    };
    let set = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let want = [
        (
            "black.mp4",
            set(&["black", "dark", "grayscale", "low_information"]),
        ),
        ("dark.mp4", set(&["dark"])),
        ("overexposed.mp4", set(&["overexposed"])),
        ("normal.mp4", set(&[])),
        ("grayscale.mp4", set(&["grayscale"])),
        ("flat.mp4", set(&["grayscale", "low_information"])),
    ];
    for (path, codes) in want {
        assert_eq!(picture(&d, path), codes, "deep: {path}");
        assert_eq!(picture(&t, path), codes, "triage: {path}");
        let (tb, db) = (
            t[path]["brightness"].as_f64().unwrap(),
            d[path]["brightness"].as_f64().unwrap(),
        );
        assert!((tb - db).abs() < 5.0, "{path}: triage {tb}, deep {db}");
    }
}

/// A small video, which the triage decodes whole, has the deep pass's picture measures
/// exactly (a frame a second, not the keyframes): a fade from black, whose keyframes alone
/// would weigh its dark start otherwise, in MP4 and in AVI (no timestamps).
#[test]
fn a_video_decoded_whole_has_the_deep_pass_picture_measures() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    for (name, codec) in [("fade.mp4", "libx264"), ("fade.avi", "mpeg4")] {
        let path = data.join(name);
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=160x96:rate=25,fade=in:st=0:d=3,noise=alls=6:allf=t",
            "-t",
            "5",
            "-g",
            "40",
            "-c:v",
            codec,
            "-pix_fmt",
            "yuv420p",
            path.to_str().unwrap(),
        ]);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(
            size < framecull::media::packets::DECODE_WHOLE_BELOW,
            "{name}: {size} bytes"
        );
    }
    let (_, _, t, d) = both_levels(tmp.path(), &data);
    for path in ["fade.mp4", "fade.avi"] {
        assert_eq!(t[path]["analysis_level"], "triage");
        for field in ["brightness", "sharpness", "phash"] {
            assert!(!d[path][field].is_null(), "{path}: {field}");
            assert_eq!(t[path][field], d[path][field], "{path}: {field}");
        }
        assert_eq!(
            common::flag_codes(&t[path]),
            common::flag_codes(&d[path]),
            "{path}"
        );
    }
}

/// Frozen, static and moving footage, each also as a section of a longer clip: the triage's
/// `frozen` flags agree with the deep pass's; its motion (from the frames it decodes in a row:
/// each keyframe with the one after it) ranks the clips as the deep pass's does, on the same
/// scale; a still camera is static to both.
#[test]
fn frozen_static_and_moving_footage_from_the_frames_decoded_in_a_row() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let moving = "testsrc2=size=320x180:rate=25,noise=alls=12:allf=t";
    let still = "smptebars=size=320x180:rate=25,noise=alls=12:allf=t";
    let fast = "testsrc2=size=320x180:rate=25,scroll=h=0.01:v=0.005,noise=alls=12:allf=t";
    for (name, filter, codec) in [
        // 6 s of motion, then the last frame held for 14 s (70% frozen).
        (
            "frozen.mp4",
            format!("{moving},trim=duration=6,tpad=stop_mode=clone:stop_duration=14"),
            "libx264",
        ),
        (
            "frozen_hevc.mkv",
            format!("{moving},trim=duration=6,tpad=stop_mode=clone:stop_duration=14"),
            "libx265",
        ),
        // Held for 4 s of 20: frozen in part, not flagged.
        (
            "frozen_part.mp4",
            format!("{moving},trim=duration=16,tpad=stop_mode=clone:stop_duration=4"),
            "libx264",
        ),
        ("still.mp4", still.to_string(), "libx264"),
        ("moving.mp4", moving.to_string(), "libx264"),
        ("fast.mp4", fast.to_string(), "libx264"),
        // A pan that starts after 10 s of still camera.
        (
            "still_then_fast.mp4",
            format!(
                "{still},trim=duration=10[a];{fast},trim=duration=10,setpts=PTS-STARTPTS[b];\
                 [a][b]concat=n=2:v=1"
            ),
            "libx264",
        ),
    ] {
        clip(&data.join(name), &filter, codec);
    }
    let (triaged, deep, t, d) = both_levels(tmp.path(), &data);
    // The shares the list does not carry, from the catalog.
    let shares = |project: &Path| -> BTreeMap<String, (f64, f64)> {
        let db = rusqlite::Connection::open(project.join("catalog.db")).unwrap();
        let mut q = db
            .prepare(
                "SELECT i.path, m.static_share, m.frozen_share FROM metrics m \
                 JOIN items i ON i.id = m.item_id",
            )
            .unwrap();
        q.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let (st, sd) = (shares(&triaged), shares(&deep));
    let frozen = |rows: &BTreeMap<String, serde_json::Value>, path: &str| {
        common::flag_codes(&rows[path])
            .iter()
            .any(|c| c == "frozen")
    };
    let f = |rows: &BTreeMap<String, serde_json::Value>, path: &str, key: &str| {
        rows[path][key]
            .as_f64()
            .unwrap_or_else(|| panic!("{path}: no {key} in {}", rows[path]))
    };
    let mut report = String::new();
    for path in t.keys() {
        report += &format!(
            "{path}: motion triage {:.3} deep {:.3}, static {:.2} {:.2}, frozen {:.2} {:.2}\n",
            f(&t, path, "motion_mean"),
            f(&d, path, "motion_mean"),
            st[path].0,
            sd[path].0,
            st[path].1,
            sd[path].1,
        );
    }
    for path in t.keys() {
        let want = ["frozen.mp4", "frozen_hevc.mkv"].contains(&path.as_str());
        assert_eq!(frozen(&d, path), want, "deep {path}\n{report}");
        assert_eq!(frozen(&t, path), want, "triage {path}\n{report}");
    }
    // The same order, and within a factor of two where there is motion.
    let order = |rows: &BTreeMap<String, serde_json::Value>| {
        let mut paths: Vec<&String> = rows.keys().collect();
        paths.sort_by(|a, b| f(rows, a, "motion_mean").total_cmp(&f(rows, b, "motion_mean")));
        paths.into_iter().cloned().collect::<Vec<_>>()
    };
    let ranks = |rows| {
        let o = order(rows);
        ["still.mp4", "moving.mp4", "fast.mp4"].map(|p| o.iter().position(|q| q == p).unwrap())
    };
    let (rt, rd) = (ranks(&t), ranks(&d));
    assert!(
        rt[0] < rt[1] && rt[1] < rt[2],
        "triage order {rt:?}\n{report}"
    );
    assert!(
        rd[0] < rd[1] && rd[1] < rd[2],
        "deep order {rd:?}\n{report}"
    );
    for path in ["moving.mp4", "fast.mp4", "frozen_part.mp4"] {
        let (a, b) = (f(&t, path, "motion_mean"), f(&d, path, "motion_mean"));
        assert!(a < 2.0 * b && b < 2.0 * a, "{path}\n{report}");
    }
    assert!(
        st["still.mp4"].0 > 0.9 && sd["still.mp4"].0 > 0.9,
        "{report}"
    );
    assert!(st["fast.mp4"].0 < 0.1 && sd["fast.mp4"].0 < 0.1, "{report}");
    eprintln!("{report}");
}

/// A 20 s clip of the lavfi `filter` with 2 s GOPs, by `codec`.
fn clip(path: &Path, filter: &str, codec: &str) {
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        filter,
        "-t",
        "20",
        "-g",
        "50",
        "-c:v",
        codec,
        "-pix_fmt",
        "yuv420p",
        path.to_str().unwrap(),
    ]);
}

type Rows = BTreeMap<String, serde_json::Value>;

/// `data` triaged and analysed deeply into projects under `dir`: the projects and their rows.
fn both_levels(dir: &Path, data: &Path) -> (std::path::PathBuf, std::path::PathBuf, Rows, Rows) {
    let (triaged, deep) = (dir.join("triaged"), dir.join("deep"));
    scan(data, &triaged, "--triage");
    scan(data, &deep, "--deep");
    let (t, d) = (common::list_jsonl(&triaged), common::list_jsonl(&deep));
    (triaged, deep, t, d)
}
