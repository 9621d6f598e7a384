//! Integrity flags at both levels: generated damage, damage in the packets, each damage class.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use framecull::media::synth::{ImageKind, VideoSpec};

use super::scan;
use crate::common::{self, ffmpeg};

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
