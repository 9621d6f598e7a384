//! Picture flags and measures, frozen footage and motion from the frames a triage decodes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::scan;
use crate::common::{self, ffmpeg};

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
