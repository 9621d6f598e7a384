//! Letterbox and pillarbox bars and interlaced fields, at both analysis levels.

use std::path::Path;

use crate::common;

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
