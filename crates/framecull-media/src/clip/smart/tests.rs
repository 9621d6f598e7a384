use super::*;
use crate::nal::{Family, nal_units};

fn packets(list: &[(i64, bool)]) -> Vec<ScannedPacket> {
    list.iter()
        .map(|&(pts, sync)| ScannedPacket {
            pts,
            sync,
            fresh: sync,
            discard: false,
        })
        .collect()
}

#[test]
fn closed_gops_inside_the_clip_are_copied_and_the_ends_encoded() {
    // Three GOPs of four frames, B-frames reordered inside each: I P B B.
    let gop = |k: i64| [(k, true), (k + 3, false), (k + 1, false), (k + 2, false)];
    let list: Vec<(i64, bool)> = (0..3).flat_map(|g| gop(g * 4)).collect();
    let frame_pts: Vec<i64> = (0..12).collect();
    let scanned = packets(&list);
    // The last GOP runs past the clip's end: its keyframe alone shows a gap-free start of
    // it, one of the three frames the clip has of it, too few for a run.
    assert_eq!(
        plan(&scanned, &frame_pts, 2..11, true),
        vec![
            Segment::Encode(2..4),
            Segment::Copy {
                frames: 4..8,
                packets: 4..8
            },
            Segment::Encode(8..11),
        ]
    );
    // A clip of whole GOPs is copied whole, in one run.
    assert_eq!(
        plan(&scanned, &frame_pts, 0..12, true),
        vec![Segment::Copy {
            frames: 0..12,
            packets: 0..12
        }]
    );
    // The last GOP not read to its end is copied as far as its packets show the first
    // frames of it without a gap: here all of them.
    assert_eq!(
        plan(&scanned, &frame_pts, 4..12, false),
        vec![Segment::Copy {
            frames: 4..12,
            packets: 4..12
        }]
    );
    assert_eq!(
        plan(&scanned[..11], &frame_pts, 4..12, false),
        vec![
            Segment::Copy {
                frames: 4..8,
                packets: 4..8
            },
            Segment::Encode(8..12),
        ]
    );
    // A clip inside one GOP is encoded.
    assert_eq!(
        plan(&scanned, &frame_pts, 5..7, true),
        vec![Segment::Encode(5..7)]
    );
}

#[test]
fn an_open_gop_is_encoded() {
    // The second GOP's B-frames (shown at 3 and 4) come after its keyframe (5) in decode
    // order but show before it: they reference the GOP before.
    let list = [
        (0, true),
        (2, false),
        (1, false),
        (5, true),
        (3, false),
        (4, false),
        (7, false),
        (6, false),
        (8, true),
        (9, false),
    ];
    let frame_pts: Vec<i64> = (0..10).collect();
    let scanned = packets(&list);
    // The first GOP's display span (0 to 5) holds frames of the second's packets: neither
    // stands alone. The first's own frames (0 to 2) decode alone from its packets and are
    // copied; of the second's frames in the clip (5 to 7) only its keyframe would: one of
    // three is not worth a run of its own.
    assert_eq!(
        plan(&scanned, &frame_pts, 0..10, true),
        vec![
            Segment::Copy {
                frames: 0..3,
                packets: 0..3
            },
            Segment::Encode(3..8),
            Segment::Copy {
                frames: 8..10,
                packets: 8..10
            },
        ]
    );
}

#[test]
fn a_gop_past_the_clips_end_is_copied_up_to_its_first_gap() {
    // One GOP with a B-pyramid, decode order I0 P8 B4 b2 b1 b3 b6 b5 b7, then the next
    // GOP at 9.
    let list = [
        (0, true),
        (8, false),
        (4, false),
        (2, false),
        (1, false),
        (3, false),
        (6, false),
        (5, false),
        (7, false),
        (9, true),
    ];
    let frame_pts: Vec<i64> = (0..10).collect();
    let scanned = packets(&list);
    let first_frames = |end: usize| {
        plan(&scanned, &frame_pts, 0..end, true)
            .into_iter()
            .find_map(|s| match s {
                Segment::Copy { frames, packets } => {
                    assert_eq!(frames, packets, "one packet a frame, from the keyframe");
                    Some(frames.end)
                }
                Segment::Encode(_) => None,
            })
    };
    // P8 shows past the clip's end: the packets before it (the keyframe) alone show a gap-free
    // start, too little of the clip's frames to be worth a run.
    assert_eq!(first_frames(8), None);
    assert_eq!(first_frames(3), None);
    assert_eq!(first_frames(1), Some(1));
    // The whole GOP: its nine packets show frames 0 to 8.
    assert_eq!(first_frames(9), Some(9));
    assert_eq!(first_frames(10), Some(10));
    // Two mini-GOPs of B-frames in one GOP (I0 P4 B2 b1 b3 P8 B6 b5 b7): a clip to frame 7
    // copies I0 to b3, frames 0 to 4, and encodes 5 and 6, which need P8.
    let list = [0, 4, 2, 1, 3, 8, 6, 5, 7, 9].map(|p| (p, p % 9 == 0));
    assert_eq!(
        plan(&packets(&list), &frame_pts, 0..7, true),
        vec![
            Segment::Copy {
                frames: 0..5,
                packets: 0..5
            },
            Segment::Encode(5..7),
        ]
    );
    // Every run that is copied shows, in decode order, no frame before one it needs.
    for end in 1..=10 {
        for segment in plan(&scanned, &frame_pts, 0..end, true) {
            if let Segment::Copy { frames, packets } = segment {
                let mut shown: Vec<i64> = scanned[packets].iter().map(|p| p.pts).collect();
                shown.sort_unstable();
                assert_eq!(shown, frame_pts[frames].to_vec());
            }
        }
    }
}

#[test]
fn reorder_delay_counts_places_ahead() {
    assert_eq!(reorder_delay(&[0, 1, 2, 3]), 0);
    assert_eq!(reorder_delay(&[0, 3, 1, 2]), 1);
    assert_eq!(reorder_delay(&[0, 4, 2, 1, 3]), 2);
}

#[test]
fn nal_units_of_both_framings() {
    let length = [0, 0, 0, 2, 0x65, 1, 0, 0, 0, 1, 0x41];
    assert_eq!(
        nal_units(&length, Framing::Length(4)),
        Some(vec![&[0x65, 1][..], &[0x41][..]])
    );
    let annex = [0, 0, 0, 1, 0x67, 5, 0, 0, 1, 0x68, 0, 0, 0, 1, 0x65, 7];
    assert_eq!(
        nal_units(&annex, Framing::StartCodes),
        Some(vec![&[0x67, 5][..], &[0x68][..], &[0x65, 7][..]])
    );
    let avcc = [1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 2, 0x67, 9, 1, 0, 1, 0x68];
    assert_eq!(
        Family::H264.setup(&avcc),
        (Framing::Length(4), vec![vec![0x67, 9], vec![0x68]])
    );
    // Units that do not make up the packet: a length past its end, bytes before the first
    // start code.
    assert_eq!(nal_units(&[0, 0, 0, 5, 0x65, 1], Framing::Length(4)), None);
    assert_eq!(nal_units(&[7, 0, 0, 1, 0x65], Framing::StartCodes), None);
}

#[test]
fn a_run_starts_at_a_new_sequence_and_skips_discarded_packets() {
    let frame_pts: Vec<i64> = (0..12).collect();
    let mut scanned = packets(&(0..12).map(|p| (p, p % 4 == 0)).collect::<Vec<_>>());
    // The second GOP starts at a picture that goes on from the sequence before (an HEVC
    // CRA): it may extend a run, not start one.
    scanned[4].fresh = false;
    assert_eq!(
        plan(&scanned, &frame_pts, 0..12, true),
        vec![Segment::Copy {
            frames: 0..12,
            packets: 0..12
        }]
    );
    assert_eq!(
        plan(&scanned, &frame_pts, 2..12, true),
        vec![
            Segment::Encode(2..8),
            Segment::Copy {
                frames: 8..12,
                packets: 8..12
            }
        ]
    );
    // A packet to be discarded (an edit list) keeps its GOP from being copied.
    scanned[9].discard = true;
    assert_eq!(
        plan(&scanned, &frame_pts, 4..12, true),
        vec![Segment::Encode(4..12)]
    );
}

#[test]
fn hevc_parameter_sets_and_sync_units() {
    // An hvcC record: 21 bytes of profile and format, the length size (4), then two arrays
    // (VPS: one unit; SPS and PPS: one each in an array of two).
    let mut hvcc = vec![1u8];
    hvcc.extend([0; 20]);
    hvcc.push(0xfc | 3);
    hvcc.push(2);
    hvcc.extend([0x20, 0, 1, 0, 2, 0x40, 1]);
    hvcc.extend([0x21, 0, 2, 0, 2, 0x42, 1, 0, 2, 0x44, 1]);
    assert_eq!(
        Family::Hevc.setup(&hvcc),
        (
            Framing::Length(4),
            vec![vec![0x40, 1], vec![0x42, 1], vec![0x44, 1]]
        )
    );
    // Types from the unit's first byte: IDR_W_RADL (19), CRA (21) start a GOP; TRAIL_R (1)
    // does not; VPS (32) is a parameter set.
    assert!(Family::Hevc.is_sync(&[19 << 1, 1]));
    assert!(Family::Hevc.is_sync(&[21 << 1, 1]));
    assert!(!Family::Hevc.is_sync(&[1 << 1, 1]));
    assert!(Family::Hevc.is_parameter_set(&[32 << 1, 1]));
    // A picture nothing refers to: non-IDR slices with nal_ref_idc 0, with a delimiter and
    // SEI; not with a parameter set, a referenced slice, or in HEVC.
    assert!(Family::H264.unreferenced(&[&[0x09, 0x10], &[0x06, 5], &[0x01, 0x9a]]));
    assert!(!Family::H264.unreferenced(&[&[0x41, 0x9a]]));
    assert!(!Family::H264.unreferenced(&[&[0x68, 1], &[0x01, 0x9a]]));
    assert!(!Family::H264.unreferenced(&[&[0x06, 5]]));
    assert!(!Family::Hevc.unreferenced(&[&[0, 1]]));
    assert!(Family::H264.is_sync(&[0x65]));
    assert!(!Family::H264.is_sync(&[0x41]));
}
