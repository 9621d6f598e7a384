//! Unit tests of the reader's plan of attempts and its frame checks.

use super::*;
use std::collections::BTreeSet;

fn by_pts(keyframes: &[usize]) -> FrameIndex {
    FrameIndex {
        pts: (0..100).collect(),
        identity: Identity::Pts,
        seek_points: keyframes
            .iter()
            .map(|&frame| SeekPoint {
                frame,
                target: frame as i64,
                pos: -1,
            })
            .collect(),
    }
}

fn seen(index: usize, key: bool, damaged: bool) -> Seen {
    Seen {
        index: Some(index),
        key,
        damaged,
    }
}

const AFTER_SEEK: Attempt = Attempt {
    trusted: false,
    from_start: false,
};
const FROM_START: Attempt = Attempt {
    trusted: true,
    from_start: true,
};

#[test]
fn plan_goes_on_when_shortly_before_the_window() {
    let frames = by_pts(&[0, 30, 60]);
    let none = BTreeSet::new();
    assert_eq!(
        start_plan(&frames, Some(40), &none, None, 50),
        vec![Start::Continue, Start::Seek(1), Start::Beginning]
    );
    // A keyframe right before the window: seeking there decodes less than going on.
    assert_eq!(
        start_plan(&frames, Some(40), &none, None, 62),
        vec![Start::Seek(2), Start::Seek(1), Start::Beginning]
    );
    // Too far ahead: seek instead; behind the window: never go on.
    assert!(!start_plan(&frames, Some(0), &none, None, 70).contains(&Start::Continue));
    assert!(!start_plan(&frames, Some(55), &none, None, 50).contains(&Start::Continue));
}

#[test]
fn plan_tries_earlier_seek_points_then_the_start() {
    let frames = by_pts(&[0, 10, 20, 30, 40, 50]);
    let mut refused = BTreeSet::new();
    assert_eq!(
        start_plan(&frames, None, &refused, None, 45),
        vec![
            Start::Seek(4),
            Start::Seek(3),
            Start::Seek(2),
            Start::Beginning
        ]
    );
    // A seek point that gave unclean frames is not tried again.
    refused.insert(4);
    assert_eq!(
        start_plan(&frames, None, &refused, None, 45)[0],
        Start::Seek(3)
    );
    // Within the first GOP: from the start (exact, and cheaper than a seek).
    assert_eq!(
        start_plan(&frames, None, &refused, None, 5),
        vec![Start::Beginning]
    );
}

#[test]
fn with_a_reference_only_its_clean_keyframes_are_seek_points() {
    let frames = by_pts(&[0, 10, 20, 30, 40]);
    let none = BTreeSet::new();
    // The deep pass saw 20 and 40 decode as clean keyframes, not 10 and 30.
    let reference: std::collections::HashMap<usize, u64> = [(0, 1), (20, 2), (40, 3)].into();
    assert_eq!(
        start_plan(&frames, None, &none, Some(&reference), 45),
        vec![Start::Seek(4), Start::Seek(2), Start::Beginning]
    );
}

#[test]
fn frames_counted_from_the_start_are_never_seeked() {
    let frames = FrameIndex {
        pts: (0..100).collect(),
        identity: Identity::Ordinal,
        seek_points: Vec::new(),
    };
    let none = BTreeSet::new();
    assert_eq!(
        start_plan(&frames, None, &none, None, 80),
        vec![Start::Beginning]
    );
    // Any distance ahead is reached by decoding on.
    assert_eq!(
        start_plan(&frames, Some(3), &none, None, 90),
        vec![Start::Continue, Start::Beginning]
    );
}

#[test]
fn after_a_seek_frames_count_from_a_clean_keyframe() {
    let mut a = AFTER_SEEK;
    // Leading pictures of an open GOP, before the keyframe: skipped.
    assert_eq!(a.judge(seen(28, false, false), None, 31), Check::Skip);
    // A keyframe that decodes with errors is no start either.
    assert_eq!(a.judge(seen(29, true, true), None, 31), Check::Skip);
    assert_eq!(a.judge(seen(30, true, false), None, 31), Check::Take(30));
    assert!(a.trusted);
    assert_eq!(
        a.judge(seen(31, false, false), Some(30), 31),
        Check::Take(31)
    );
}

#[test]
fn a_seek_that_lands_past_the_window_or_on_no_keyframe_is_doubted() {
    let mut a = AFTER_SEEK;
    assert_eq!(a.judge(seen(35, true, false), None, 31), Check::Doubt);
    // Inter frames only (an index that called them keyframes) until past the window.
    let mut a = AFTER_SEEK;
    assert_eq!(a.judge(seen(30, false, false), None, 31), Check::Skip);
    assert_eq!(a.judge(seen(31, false, false), None, 31), Check::Skip);
    assert_eq!(a.judge(seen(32, false, false), None, 31), Check::Doubt);
    // A frame that cannot be recognised is skipped before trust, doubted after it.
    let unknown = Seen {
        index: None,
        key: true,
        damaged: false,
    };
    assert_eq!(AFTER_SEEK.clone().judge(unknown, None, 3), Check::Skip);
    let mut trusted = Attempt {
        trusted: true,
        from_start: false,
    };
    assert_eq!(trusted.judge(unknown, Some(2), 3), Check::Doubt);
}

#[test]
fn damage_or_a_gap_after_a_seek_is_doubted_but_fails_from_the_start() {
    let mut a = Attempt {
        trusted: true,
        from_start: false,
    };
    assert_eq!(a.judge(seen(12, false, true), Some(11), 14), Check::Doubt);
    assert_eq!(a.judge(seen(15, false, false), Some(13), 14), Check::Doubt);
    let mut a = FROM_START;
    // Damage before the window: the reference decode has it too; go on.
    assert_eq!(
        a.judge(seen(12, false, true), Some(11), 14),
        Check::Take(12)
    );
    assert_eq!(
        a.judge(seen(14, false, true), Some(13), 14),
        Check::Corrupt(14)
    );
    assert_eq!(
        a.judge(seen(15, false, false), Some(13), 14),
        Check::Missing
    );
}

#[test]
fn frames_going_back_are_doubted_after_a_seek_and_skipped_from_the_start() {
    let mut a = Attempt {
        trusted: true,
        from_start: false,
    };
    assert_eq!(a.judge(seen(9, false, false), Some(10), 12), Check::Doubt);
    let mut a = FROM_START;
    assert_eq!(a.judge(seen(9, false, false), Some(10), 12), Check::Skip);
}
