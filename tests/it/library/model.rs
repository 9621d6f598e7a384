//! The shared model types: ratios, frame timelines, names, edits, frame tables and sizes.

use framecull::model::{
    ClipOrigin, Decision, Edit, FlagSource, FrameRecord, FrameTable, FrameTimeline, ItemStatus,
    MediaKind, Ratio, Severity, human_bytes,
};

#[test]
fn ratios_round_trip_through_text_and_refuse_zero_terms() {
    for (num, den) in [(1, 12800), (30000, 1001), (-1, 2), (1, 1)] {
        let r = Ratio::new(num, den).unwrap();
        assert_eq!(r.to_text(), format!("{num}/{den}"));
        assert_eq!(Ratio::parse(&r.to_text()), Some(r));
    }
    assert_eq!(Ratio::parse(" 30000 / 1001 "), Ratio::new(30000, 1001));
    assert_eq!(Ratio::new(1, 4).unwrap().as_f64(), 0.25);
    assert_eq!(Ratio::new(1, 0), None);
    assert_eq!(Ratio::new(0, 1), None);
    for bad in [
        "1/0", "25/0", "0/1", "", "25", "1/", "/2", "a/b", "1.5/2", "1/2/3", "1:2",
    ] {
        assert_eq!(Ratio::parse(bad), None, "{bad:?}");
    }
}

/// Frames start at 0, 0.04, 0.08, 0.12 and 0.2 s; the last one lasts 0.08 s.
fn timeline() -> FrameTimeline {
    FrameTimeline {
        pts: vec![0, 512, 1024, 1536, 2560],
        time_base: Ratio::new(1, 12800).unwrap(),
    }
}

#[test]
fn frame_indices_come_from_frames_or_seconds() {
    let t = timeline();
    let start = |s: &str| t.index_at(s, false).map_err(|e| e.to_string());
    let end = |s: &str| t.index_at(s, true).map_err(|e| e.to_string());
    assert_eq!(start("f0"), Ok(0));
    assert_eq!(start("f3"), Ok(3));
    assert_eq!(start("f:3"), Ok(3));
    // The end of the last frame is a valid (exclusive) end.
    assert_eq!(end("f5"), Ok(5));
    assert_eq!(
        end("f6"),
        Err("frame 6 is past the last frame (5)".to_string())
    );
    assert_eq!(
        start("f6"),
        Err("frame 6 is past the last frame (5)".to_string())
    );
    assert_eq!(
        start("fx"),
        Err(r#""fx" is not a frame like f120"#.to_string())
    );
    assert!(start("f-1").is_err());
    assert_eq!(
        start("abc"),
        Err(r#""abc" is neither seconds nor a frame like f120"#.to_string())
    );
    // Seconds: a start is the frame shown then, an end the first frame at or after it.
    assert_eq!((start("0.05"), end("0.05")), (Ok(1), Ok(2)));
    assert_eq!((start("0.08"), end("0.08")), (Ok(2), Ok(2)));
    assert_eq!((start("0.19"), end("0.19")), (Ok(3), Ok(4)));
    assert_eq!((start("0"), start("-1")), (Ok(0), Ok(0)));
    assert_eq!(end("0.2"), Ok(4));
    assert_eq!(end("100"), Ok(5));

    assert_eq!(t.pts_at(5), 2560 + 1024);
    let clip = t.clip(7, 1, 5, Some("run".into()), ClipOrigin::Cuts);
    assert_eq!((clip.item_id, clip.start_pts, clip.end_pts), (7, 512, 3584));
    assert_eq!((clip.start_frame, clip.end_frame), (Some(1), Some(5)));
    assert!(
        (clip.start_secs - 0.04).abs() < 1e-12,
        "{}",
        clip.start_secs
    );
    assert!((clip.end_secs - 0.28).abs() < 1e-12, "{}", clip.end_secs);
    assert_eq!(
        (clip.origin, clip.decision),
        (ClipOrigin::Cuts, Decision::Unreviewed)
    );
}

#[test]
fn a_start_past_the_end_in_seconds_is_an_error() {
    let t = timeline();
    // The last frame ends at 0.28 s.
    assert!(t.index_at("0.3", false).is_err());
    assert!(t.index_at("100", false).is_err());
}

/// `as_str`, `parse` and serde agree on each value's name, and nothing else parses.
fn names_agree<T>(named: &[(T, &str)], as_str: fn(T) -> &'static str, parse: fn(&str) -> Option<T>)
where
    T: Copy + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    for &(v, name) in named {
        assert_eq!(as_str(v), name);
        assert_eq!(parse(name), Some(v));
        assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{name}\""));
        assert_eq!(
            serde_json::from_str::<T>(&format!("\"{name}\"")).unwrap(),
            v
        );
        let shouted = name.to_uppercase();
        assert_eq!(parse(&shouted), None, "{shouted}");
        assert!(serde_json::from_str::<T>(&format!("\"{shouted}\"")).is_err());
    }
    assert_eq!(parse(""), None);
}

/// `names!(Type: Variant = "name", ...)`: every variant of `Type` with its name.
macro_rules! names {
    ($t:ident: $($v:ident = $name:literal),+) => {
        names_agree(&[$(($t::$v, $name)),+], $t::as_str, $t::parse)
    };
}

#[test]
fn names_round_trip() {
    names!(Decision: Unreviewed = "unreviewed", Accepted = "accepted", Rejected = "rejected");
    names!(ClipOrigin: Manual = "manual", Cuts = "cuts", Auto = "auto");
    names!(MediaKind: Image = "image", Video = "video", Other = "other");
    names!(ItemStatus: Ok = "ok", Error = "error", Unsupported = "unsupported",
        Missing = "missing");
    names!(Severity: Error = "error", Warning = "warning", Info = "info");
    names!(FlagSource: Probe = "probe", Decode = "decode", Rule = "rule",
        Statistics = "statistics", Duplicates = "duplicates");
    assert_eq!(ClipOrigin::Cuts.to_string(), "cuts");
    assert_eq!(
        (ClipOrigin::default(), Decision::default()),
        (ClipOrigin::Manual, Decision::Unreviewed)
    );
}

#[test]
fn an_edit_undone_twice_is_the_edit() {
    let clip = timeline().clip(1, 0, 2, None, ClipOrigin::Manual);
    let edits = [
        Edit::Decision {
            item: 1,
            before: Decision::Unreviewed,
            after: Decision::Rejected,
        },
        Edit::Tags {
            item: 1,
            before: vec![],
            after: vec!["night".into()],
        },
        Edit::Note {
            item: 1,
            before: Some("a".into()),
            after: None,
        },
        Edit::AddClip { clip: clip.clone() },
    ];
    for e in &edits {
        assert_ne!(&e.inverse(), e);
        assert_eq!(&e.inverse().inverse(), e);
    }
    assert_eq!(edits[3].inverse(), Edit::RemoveClip { clip: clip.clone() });
    assert_eq!(
        serde_json::to_value(&edits[0]).unwrap(),
        serde_json::json!({"edit": "decision", "item": 1, "before": "unreviewed", "after": "rejected"})
    );
}

#[test]
fn frame_tables_round_trip_through_bytes() {
    let table = FrameTable {
        frames: vec![
            FrameRecord {
                pts: Some(0),
                clean_key: true,
                damaged: false,
                hash: u64::MAX,
            },
            FrameRecord {
                pts: None,
                clean_key: false,
                damaged: true,
                hash: 1,
            },
            FrameRecord {
                pts: Some(-512),
                clean_key: true,
                damaged: false,
                hash: 0,
            },
        ],
    };
    let bytes = table.to_bytes();
    assert_eq!(FrameTable::from_bytes(&bytes), Some(table.clone()));
    assert_eq!(FrameTable::from_bytes(&bytes[1..]), None);
    assert_eq!(FrameTable::from_bytes(&[]), Some(FrameTable::default()));
    let reference = table.seek_reference("v.mp4", "fp");
    assert_eq!(reference.frames, 3);
    assert_eq!(reference.keyframes, [(0, u64::MAX), (2, 0)]);
}

#[test]
fn sizes_for_people() {
    assert_eq!(human_bytes(0), "0 B");
    assert_eq!(human_bytes(1023), "1023 B");
    assert_eq!(human_bytes(1024), "1.0 KiB");
    assert_eq!(human_bytes(1536 * 1024), "1.5 MiB");
    // TiB is the largest unit.
    assert_eq!(human_bytes(u64::MAX), "16777216.0 TiB");
}
