//! A video's triage: its integrity measured from its packets alone ([`PacketScan`]), as
//! [`Metrics`] of the triage level, so that the flags read the same fields with the same
//! rules as after the deep pass: `truncated`, `frame_count_mismatch`, `repeat_frames`,
//! `timestamps`, `vfr`, `decode_errors` (packets the demuxer marks corrupt, a read error),
//! `undecodable` (no packet at all) and `timed_out`.

use super::video::Timing;
use framecull_model::{AnalysisLevel, Metrics, PacketScan};

/// The triage of one video from its packets. `fps_hint`: the probe's frame rate, for streams
/// whose packets carry no timestamps.
pub fn measure(scan: &PacketScan, fps_hint: Option<f64>) -> Metrics {
    let fps = fps_hint.filter(|f| *f > 0.0).unwrap_or(25.0);
    let packets = &scan.packets;
    let n = packets.len() as u64;
    let secs = |t: i64| match scan.time_base {
        Some(tb) => t as f64 * tb.as_f64(),
        None => t as f64 / scan.frame_step.max(1) as f64 / fps,
    };
    // Presentation times: the packets' pts, else their dts (AVI, elementary streams), else
    // their order at the frame rate.
    let stamped = |get: fn(&framecull_model::PacketRecord) -> Option<i64>| {
        packets.iter().filter_map(get).collect::<Vec<i64>>()
    };
    let (mut times, from_order) = match stamped(|p| p.pts) {
        pts if pts.len() == packets.len() && !pts.is_empty() => (pts, false),
        _ => match stamped(|p| p.dts) {
            dts if dts.len() == packets.len() && !dts.is_empty() => (dts, false),
            _ => (
                (0..n as i64).map(|i| i * scan.frame_step.max(1)).collect(),
                true,
            ),
        },
    };
    // Decode order: timestamps must rise (dts), and no two packets show at one time (pts).
    let dts: Vec<i64> = packets.iter().filter_map(|p| p.dts).collect();
    let pts_backwards = dts.windows(2).filter(|w| w[1] < w[0]).count() as u64;
    times.sort_unstable();
    let pts_repeats = if from_order {
        0
    } else {
        times.windows(2).filter(|w| w[1] == w[0]).count() as u64
    };
    times.dedup();
    let seconds: Vec<f64> = times.iter().map(|&t| secs(t)).collect();
    let intervals: Vec<f64> = seconds.windows(2).map(|w| w[1] - w[0]).collect();
    let timing = Timing::of(
        seconds.first().copied().zip(seconds.last().copied()),
        n,
        &intervals,
        fps,
        scan.declared_duration_secs,
        scan.declared_frames,
    );
    let corrupt = packets.iter().filter(|p| p.corrupt).count() as u64;
    let first_corrupt = packets.iter().position(|p| p.corrupt);
    let first_error = match (first_corrupt, &scan.read_error) {
        (Some(i), _) => Some(format!(
            "packet {} of {n} marked corrupt by the demuxer",
            i + 1
        )),
        (None, Some(e)) => Some(format!("reading stopped after {n} packets: {e}")),
        (None, None) => None,
    };
    Metrics {
        level: AnalysisLevel::Triage,
        decoded_frames: n,
        decode_errors: corrupt + u64::from(scan.read_error.is_some()),
        first_error,
        undecodable: (n == 0 && !scan.timed_out).then(|| match &scan.read_error {
            Some(e) => format!("no packet of the video stream could be read: {e}"),
            None => "the video stream has no packet".to_string(),
        }),
        timed_out: scan.timed_out,
        decoded_duration_secs: timing.decoded_duration,
        pts_backwards,
        pts_repeats,
        vfr: if from_order { None } else { timing.vfr() },
        interval_cv: if from_order { None } else { timing.interval_cv },
        truncated: timing.truncated && !scan.timed_out,
        repeat_frames: timing.repeat_frames,
        ..Metrics::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framecull_model::{PacketRecord, Ratio};

    /// `n` packets of a 25 fps stream in a 1/12800 time base, B-frames reordered (decode order
    /// I P B B P B B ...), declaring `declared` seconds.
    fn scan(n: i64, declared: f64) -> PacketScan {
        let step = 512;
        let mut order: Vec<i64> = Vec::new();
        let mut i = 0;
        while i < n {
            order.push(i);
            if i + 3 <= n {
                order.extend([i + 3, i + 1, i + 2].into_iter().filter(|&k| k < n));
            }
            i += 4;
        }
        order.truncate(n as usize);
        PacketScan {
            time_base: Ratio::new(1, 12800),
            frame_step: step,
            declared_frames: Some(n),
            declared_duration_secs: Some(declared),
            packets: order
                .iter()
                .enumerate()
                .map(|(d, &k)| PacketRecord {
                    pts: Some(k * step),
                    dts: Some(d as i64 * step - step),
                    duration: step,
                    size: 1000,
                    key: k % 12 == 0,
                    corrupt: false,
                })
                .collect(),
            ..PacketScan::default()
        }
    }

    #[test]
    fn a_whole_stream_is_clean_and_a_cut_one_is_truncated() {
        let m = measure(&scan(100, 4.0), Some(25.0));
        assert_eq!(m.level, AnalysisLevel::Triage);
        assert_eq!(m.decoded_frames, 100);
        assert!(!m.truncated && m.pts_backwards == 0 && m.pts_repeats == 0);
        assert!(
            (m.decoded_duration_secs.unwrap() - 4.0).abs() < 1e-9,
            "{m:?}"
        );
        assert_eq!(m.vfr, Some(false));
        let m = measure(&scan(40, 4.0), Some(25.0));
        assert!(m.truncated, "{m:?}");
    }

    #[test]
    fn timestamps_that_go_back_or_repeat_and_corrupt_packets_are_counted() {
        let mut s = scan(100, 4.0);
        s.packets[50].dts = Some(0);
        s.packets[60].pts = s.packets[61].pts;
        s.packets[70].corrupt = true;
        s.read_error = Some("Invalid data found when processing input".into());
        let m = measure(&s, Some(25.0));
        assert_eq!(m.pts_backwards, 1);
        assert_eq!(m.pts_repeats, 1);
        assert_eq!(m.decode_errors, 2);
        assert_eq!(
            m.first_error.as_deref(),
            Some("packet 71 of 100 marked corrupt by the demuxer")
        );
        let empty = measure(&PacketScan::default(), None);
        assert!(empty.undecodable.is_some());
    }
}
