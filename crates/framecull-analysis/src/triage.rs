//! A video's triage: its integrity measured from its packets alone ([`PacketScan`]), as
//! [`Metrics`] of the triage level, so that the flags read the same fields with the same
//! rules as after the deep pass: `truncated`, `frame_count_mismatch`, `repeat_frames`,
//! `timestamps`, `vfr`, `decode_errors` (errors in the keyframes and GOPs decoded, and a read error before
//! the end, as the deep pass counts it), `undecodable` (no packet at all) and `timed_out`; and
//! `suspect`, what may be damage without proof (packets the demuxer marks corrupt or holding
//! runs of zero bytes, whose GOPs decoded clean; holes in the timestamps). Its picture,
//! motion and frozen measures are estimates from the frames it decodes ([`Sampled`]).

use std::collections::HashMap;

use super::bars::Bars;
use super::image::{Gray, percentile, sum_abs_diff};
use super::motion::{MotionMeter, STATIC_BELOW, motion_gray};
use super::phash::phash;
use super::quality;
use super::video::{FLAT_STD, FROZEN_DIFF, SAMPLE_EVERY_SECS, Timing, is_black};
use framecull_model::{
    AnalysisLevel, Curves, FrameView, Metrics, PACKET_HEADER_BYTES, PacketRecord, PacketScan,
    blocks16, repeat_packet_bytes,
};

/// The picture and motion measures of the frames a triage decodes: the deep pass's measures
/// of a frame a second (brightness, sharpness, entropy, colourfulness, black frames,
/// perceptual hashes for near duplicates), estimated from the keyframes; its motion, from the
/// frames decoded in a row (each keyframe with the frame after it, and whole GOPs).
#[derive(Debug, Default)]
pub struct Sampled {
    fps: f64,
    /// Each keyframe measured: its presentation time (seconds), its picture measures and
    /// whether it is black.
    samples: Vec<(Option<f64>, quality::Quality, bool)>,
    hashes: Vec<u64>,
    /// Bars of the keyframes.
    bars: Bars,
    gray: Gray,
    previous: Option<Gray>,
    meter: MotionMeter,
    /// Each frame measured against its predecessor: its presentation time, its motion and
    /// whether it repeats the predecessor (frozen).
    motion: Vec<Step>,
    coded: Option<(u32, u32)>,
    /// Frames pushed, and, while each followed the one before from the first (a decode from
    /// the file's start in one run), what the deep pass measures of them.
    pushed: u64,
    from_start: Option<FromStart>,
}

/// The deep pass's picture measures of a decode from the file's start: a frame a second
/// measured and hashed, and every frame counted, black or not. Where the triage decodes every
/// frame (a small file), these are its picture measures, exactly the deep pass's.
#[derive(Debug, Default)]
struct FromStart {
    next_sample: f64,
    latest: f64,
    samples: Vec<quality::Quality>,
    hashes: Vec<u64>,
    bars: Bars,
    frames: u64,
    black: u64,
}

impl Sampled {
    /// `fps_hint`: the probe's frame rate, which times frames without a timestamp.
    pub fn new(fps_hint: Option<f64>) -> Self {
        Sampled {
            fps: fps_hint
                .filter(|f| f.is_finite() && *f > 0.0)
                .unwrap_or(25.0),
            from_start: Some(FromStart {
                next_sample: f64::NEG_INFINITY,
                latest: f64::NEG_INFINITY,
                ..FromStart::default()
            }),
            ..Sampled::default()
        }
    }

    /// A frame decoded; `follows`: the frame pushed before it is the one shown before it.
    pub fn push(&mut self, f: &FrameView, follows: bool) {
        match f.luma {
            Some(luma) => self.gray.set(luma, f.width, f.height),
            None => self.gray.set_from_planes(f.planes, f.width, f.height),
        }
        self.coded.get_or_insert((f.coded_width, f.coded_height));
        let small = motion_gray(&self.gray);
        let black = is_black(&small);
        let fps = if self.fps > 0.0 { self.fps } else { 25.0 };
        let time = f.time_secs.unwrap_or(f.index as f64 / fps);
        self.pushed += 1;
        if self.pushed > 1 && !follows {
            self.from_start = None;
        }
        // The deep pass's sample of a frame a second, on a clock that never goes back.
        let due = self.from_start.as_mut().is_some_and(|run| {
            run.latest = run.latest.max(time);
            run.frames += 1;
            run.black += u64::from(black);
            run.latest >= run.next_sample
        });
        if f.key || due {
            let picture = quality::measure(f.planes, f.width, f.height);
            let hash = (self.gray.std_dev() >= FLAT_STD).then(|| phash(&self.gray));
            if let Some(run) = self.from_start.as_mut().filter(|_| due) {
                run.next_sample = run.latest + SAMPLE_EVERY_SECS;
                run.samples.push(picture);
                run.hashes.extend(hash);
                run.bars.push(f.planes, f.width, f.height);
            }
            if f.key {
                self.samples.push((f.time_secs, picture, black));
                self.hashes.extend(hash);
                self.bars.push(f.planes, f.width, f.height);
            }
        }
        if !follows {
            self.meter = MotionMeter::default();
        }
        if let Some(motion) = self.meter.push(&small, time) {
            let frozen = self.previous.as_ref().is_some_and(|p| {
                p.data.len() == self.gray.data.len()
                    && (sum_abs_diff(&p.data, &self.gray.data) as f64)
                        < FROZEN_DIFF * self.gray.data.len() as f64
            });
            self.motion.push(Step {
                pts: f.pts,
                motion,
                frozen,
            });
        }
        let previous = self.previous.replace(std::mem::take(&mut self.gray));
        self.gray = previous.unwrap_or_default();
    }

    /// The curves a triage of `scan` keeps: the keyframes' hashes, which group near-duplicate
    /// videos as the deep pass's hashes of a frame a second do (those, where every frame was
    /// decoded).
    pub fn curves(&self, scan: &PacketScan) -> Curves {
        Curves {
            frame_hashes: match self.every_frame(scan) {
                Some(run) => run.hashes.clone(),
                None => self.hashes.clone(),
            },
            ..Curves::default()
        }
    }

    /// The decode from the start, if it was given every packet of `scan` (in one run: each
    /// frame followed the one before).
    fn every_frame(&self, scan: &PacketScan) -> Option<&FromStart> {
        let bytes: u64 = scan.packets.iter().map(|p| u64::from(p.size)).sum();
        self.from_start
            .as_ref()
            .filter(|run| scan.sample.bytes >= bytes && !run.samples.is_empty())
    }

    /// Fill `m`'s picture measures with the keyframes' means, each weighted by the time it
    /// stands for (none without a keyframe), its motion with the frames' in a row, and its
    /// frozen share with the packets'.
    fn fill(&self, m: &mut Metrics, scan: &PacketScan) {
        if let Some(run) = self.every_frame(scan) {
            let equal: Vec<_> = run.samples.iter().map(|q| (q, 1.0)).collect();
            set_picture_means(m, &equal);
            m.black_share = Some(run.black as f64 / run.frames as f64);
            m.phash = run.hashes.first().copied();
        } else {
            self.fill_from_keyframes(m, scan);
        }
        let bars = self.every_frame(scan).map_or(&self.bars, |run| &run.bars);
        // In the first frame's pixels: none where the size changes.
        m.content_crop = self
            .coded
            .and_then(|(w, h)| bars.content(w, h))
            .filter(|_| m.resolution_changes == 0);
        self.fill_motion(m, scan);
    }

    /// The picture measures as the keyframes' means, each weighted by the time it stands for.
    fn fill_from_keyframes(&self, m: &mut Metrics, scan: &PacketScan) {
        let weights = keyframe_weights(scan, &self.samples);
        let total: f64 = weights.iter().sum();
        if total > 0.0 {
            let weighted: Vec<_> = self
                .samples
                .iter()
                .zip(&weights)
                .map(|((_, q, _), w)| (q, *w))
                .collect();
            set_picture_means(m, &weighted);
            let black: f64 = self
                .samples
                .iter()
                .zip(&weights)
                .filter(|((_, _, black), _)| *black)
                .map(|(_, w)| w)
                .sum();
            m.black_share = Some(black / total);
            m.phash = self.hashes.first().copied();
        }
    }

    /// Motion from the frames measured in a row, and the frozen share.
    fn fill_motion(&self, m: &mut Metrics, scan: &PacketScan) {
        if !self.motion.is_empty() {
            let scale = motion_scale(scan, &self.motion);
            let values: Vec<f64> = self.motion.iter().map(|s| s.motion * scale).collect();
            m.motion_mean = Some(values.iter().sum::<f64>() / values.len() as f64);
            m.motion_p95 = percentile(&values, 95.0);
            m.static_share = Some(
                values.iter().filter(|&&v| v < STATIC_BELOW).count() as f64 / values.len() as f64,
            );
        }
        if let Some((w, h)) = self.coded {
            m.frozen_share = frozen_share(scan, &self.motion, w, h);
        }
    }
}

/// `m`'s picture measures: the means of those of `samples`, each with its weight (their sum
/// above 0).
fn set_picture_means(m: &mut Metrics, samples: &[(&quality::Quality, f64)]) {
    let total: f64 = samples.iter().map(|(_, w)| w).sum();
    let mean = |f: &dyn Fn(&quality::Quality) -> f64| {
        Some(samples.iter().map(|(q, w)| f(q) * w).sum::<f64>() / total)
    };
    m.brightness = mean(&|q| q.brightness);
    m.brightness_p5 = mean(&|q| q.brightness_p5);
    m.brightness_p95 = mean(&|q| q.brightness_p95);
    m.sharpness = mean(&|q| q.sharpness);
    m.entropy = mean(&|q| q.entropy);
    m.colorfulness = mean(&|q| q.colorfulness);
}

/// The time each keyframe measured stands for, as the deep pass's frames a second do: from
/// it to the next keyframe measured (the first from the stream's start, the last to its
/// end), so that keyframes decoded at uneven spacing (the budget's, the spread's) each count
/// for the stretch of the file they sample; equal weights where a keyframe or the packets
/// have no time.
fn keyframe_weights(
    scan: &PacketScan,
    samples: &[(Option<f64>, quality::Quality, bool)],
) -> Vec<f64> {
    let secs = |t: i64| scan.time_base.map(|tb| t as f64 * tb.as_f64());
    let (start, end) = scan
        .packets
        .iter()
        .filter_map(|p| Some((secs(p.pts?)?, secs(p.duration)?)))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (t, d)| {
            (lo.min(t), hi.max(t + d))
        });
    let times: Option<Vec<f64>> = samples.iter().map(|(t, ..)| *t).collect();
    let equal = vec![1.0; samples.len()];
    let Some(times) = times.filter(|_| start.is_finite() && end > start) else {
        return equal;
    };
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|&a, &b| times[a].total_cmp(&times[b]));
    let mut weights = vec![0.0; times.len()];
    for (k, &i) in order.iter().enumerate() {
        let from = if k == 0 { start } else { times[i] };
        let until = order.get(k + 1).map_or(end, |&j| times[j]);
        weights[i] = (until - from).max(0.0);
    }
    if weights.iter().sum::<f64>() > 0.0 {
        weights
    } else {
        equal
    }
}

/// A frame measured against the one shown before it.
#[derive(Debug, Clone, Copy)]
struct Step {
    pts: Option<i64>,
    motion: f64,
    frozen: bool,
}

/// The share of frames that repeat the one before, estimated: only a packet small enough
/// ([`repeat_packet_bytes`]) can (a frozen camera compresses to almost nothing), and of the
/// frames measured whose packet is that small, the share that does (a low bit rate makes
/// small packets of pictures that change); without such a frame measured, the share of
/// packets of at most a 32nd of a byte a block (and headers). Exact where every frame was
/// measured, and in an intra-only stream (by its frames measured).
fn frozen_share(scan: &PacketScan, steps: &[Step], width: u32, height: u32) -> Option<f64> {
    let n = scan.packets.len();
    if n < 2 || steps.is_empty() {
        return None;
    }
    let under = |p: &PacketRecord, bytes: u64| !p.key && u64::from(p.size) <= bytes;
    let small = |p: &PacketRecord| under(p, repeat_packet_bytes(width, height));
    let tiny = PACKET_HEADER_BYTES + blocks16(width, height) / 32;
    let small_pts: std::collections::HashSet<i64> = scan
        .packets
        .iter()
        .filter(|p| small(p))
        .filter_map(|p| p.pts)
        .collect();
    let measured: Vec<&Step> = steps
        .iter()
        .filter(|s| s.pts.is_some_and(|t| small_pts.contains(&t)))
        .collect();
    let share = |of: &[&Step]| of.iter().filter(|s| s.frozen).count() as f64 / of.len() as f64;
    let predicted = scan.packets.iter().any(|p| !p.key);
    let shown = n - (scan.discarded_packets as usize).min(n);
    Some(if steps.len() + 1 >= shown || !predicted {
        // Every frame measured, or an intra-only stream, whose sizes tell nothing.
        share(&steps.iter().collect::<Vec<_>>())
    } else if measured.is_empty() {
        scan.packets.iter().filter(|p| under(p, tiny)).count() as f64 / (n - 1) as f64
    } else {
        let small_share = scan.packets.iter().filter(|p| small(p)).count() as f64 / (n - 1) as f64;
        (small_share * share(&measured)).min(1.0)
    })
}

/// How much the frames measured in a row under-or over-represent the file's motion: the
/// mean size of its forward-predicted packets (a frame predicted from the past, the one a
/// keyframe's pair is) against that of those measured. Within one file, more change costs
/// more bytes; 1 where the frames measured have no packet known.
fn motion_scale(scan: &PacketScan, steps: &[Step]) -> f64 {
    let mut latest = i64::MIN;
    let mut forward: HashMap<i64, u32> = HashMap::new();
    for p in &scan.packets {
        if let Some(pts) = p.pts {
            if !p.key && pts > latest {
                forward.insert(pts, p.size);
            }
            latest = latest.max(pts);
        }
    }
    let mean = |sizes: &mut dyn Iterator<Item = u32>| {
        let (sum, n) = sizes.fold((0u64, 0u64), |(s, n), x| (s + u64::from(x), n + 1));
        (n > 0 && sum > 0).then(|| sum as f64 / n as f64)
    };
    let measured = mean(&mut steps.iter().filter_map(|s| forward.get(&s.pts?).copied()));
    match (mean(&mut forward.values().copied()), measured) {
        (Some(all), Some(measured)) => (all / measured).clamp(0.1, 10.0),
        _ => 1.0,
    }
}

/// The triage of one video from its packets and the keyframes decoded. `fps_hint`: the
/// probe's frame rate, for streams whose packets carry no timestamps.
pub fn measure(scan: &PacketScan, sampled: &Sampled, fps_hint: Option<f64>) -> Metrics {
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
    // Packets an edit list discards are counted by the header and shown never.
    let shown = n - scan.discarded_packets.min(n);
    let timing = Timing::of(
        seconds.first().copied().zip(seconds.last().copied()),
        shown,
        &intervals,
        fps,
        scan.declared_duration_secs,
        scan.declared_frames
            .map(|d| d - scan.discarded_packets as i64),
    );
    let sample = &scan.sample;
    let first_error = match (&sample.first_error, &scan.read_error) {
        (Some(e), _) => Some(format!("in the frames decoded, {e}")),
        (None, Some(e)) => Some(format!("reading stopped after {n} packets: {e}")),
        (None, None) => None,
    };
    let vfr = if from_order { None } else { timing.vfr() };
    let suspect = suspicion(scan, &seconds, &intervals);
    let mut m = Metrics {
        level: AnalysisLevel::Triage,
        decoded_frames: shown,
        discarded_frames: scan.discarded_packets,
        decode_errors: sample.errors + u64::from(scan.read_error.is_some()),
        first_error,
        undecodable: (n == 0 && !scan.timed_out).then(|| match &scan.read_error {
            Some(e) => format!("no packet of the video stream could be read: {e}"),
            None => "the video stream has no packet".to_string(),
        }),
        timed_out: scan.timed_out,
        decoded_duration_secs: timing.decoded_duration,
        pts_backwards: pts_backwards.max(sample.pts_backwards),
        pts_repeats: pts_repeats.max(sample.pts_repeats),
        vfr,
        suspect,
        interval_cv: if from_order { None } else { timing.interval_cv },
        truncated: timing.truncated && !scan.timed_out,
        repeat_frames: timing.repeat_frames,
        resolution_changes: sample.size_changes,
        ..Metrics::default()
    };
    sampled.fill(&mut m, scan);
    m
}

/// A jump in the timestamps this many times the median frame interval (and at least a
/// quarter of a second) may be frames lost: a dropped GOP, a cut splice.
const GAP_INTERVALS: f64 = 5.0;

/// Intervals within this share of the median make a stream regular: one whose holes stand
/// out.
const REGULAR: f64 = 0.1;

/// What the packets show that may be damage the GOPs decoded did not prove: packets the
/// demuxer marks corrupt, or holding runs of zero bytes (a zeroed range), when the decoded
/// GOPs had no error; holes in the timestamps of a stream whose frames are otherwise evenly
/// spaced.
fn suspicion(scan: &PacketScan, seconds: &[f64], intervals: &[f64]) -> Option<String> {
    let mut seen = Vec::new();
    let unproven = scan.sample.errors == 0;
    let corrupt = scan.packets.iter().filter(|p| p.corrupt).count() as u64;
    if let Some(first) = scan
        .packets
        .iter()
        .position(|p| p.corrupt)
        .filter(|_| unproven)
    {
        seen.push(format!(
            "{} marked corrupt by the demuxer (first: packet {})",
            framecull_model::count(corrupt, "packet"),
            first + 1
        ));
    }
    if let Some(first) = scan.first_zero_run.filter(|_| unproven) {
        seen.push(format!(
            "{} with long runs of zero bytes (first: packet {}), a zeroed or unwritten range",
            framecull_model::count(scan.zero_runs, "packet"),
            first + 1
        ));
    }
    if intervals.len() >= 4 {
        let mut sorted = intervals.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let near = |i: &f64| (i - median).abs() <= REGULAR * median;
        let regular = intervals.iter().filter(|i| near(i)).count() as f64
            >= (1.0 - REGULAR) * intervals.len() as f64;
        let gap = (GAP_INTERVALS * median).max(0.25);
        let jumps: Vec<usize> = (0..intervals.len())
            .filter(|&i| regular && intervals[i] > gap)
            .collect();
        if let Some(&widest) = jumps
            .iter()
            .max_by(|&&a, &&b| intervals[a].total_cmp(&intervals[b]))
        {
            seen.push(format!(
                "the timestamps jump {} (widest: {:.2} s at {:.2} s), frames may be missing",
                framecull_model::count(jumps.len() as u64, "time"),
                intervals[widest],
                seconds[widest] - seconds[0]
            ));
        }
    }
    (!seen.is_empty()).then(|| seen.join("; "))
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
    fn each_keyframe_stands_for_the_stretch_to_the_next_one_measured() {
        // 100 frames of 25 fps: 0 to 4 s; keyframes measured at 1.0, 0.0 and 3.0 s.
        let s = scan(100, 4.0);
        let at = |t: f64| (Some(t), quality::Quality::default(), false);
        let w = keyframe_weights(&s, &[at(1.0), at(0.0), at(3.0)]);
        let want = [2.0, 1.0, 1.0];
        assert!(
            w.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9),
            "{w:?}"
        );
        // A keyframe without a time: equal weights.
        let w = keyframe_weights(&s, &[at(1.0), (None, quality::Quality::default(), true)]);
        assert_eq!(w, vec![1.0, 1.0]);
    }

    #[test]
    fn a_hole_in_evenly_spaced_timestamps_is_a_doubt() {
        let mut s = scan(100, 4.0);
        // GOP-sized hole: frames 48 to 59 gone.
        s.packets
            .retain(|p| !(48 * 512..60 * 512).contains(&p.pts.unwrap()));
        let m = measure(&s, &Sampled::default(), Some(25.0));
        let why = m.suspect.unwrap();
        assert!(
            why.contains("the timestamps jump 1 time (widest: 0.52 s at 1.88 s)"),
            "{why}"
        );
        assert_eq!(
            measure(&scan(100, 4.0), &Sampled::default(), Some(25.0)).suspect,
            None
        );
    }

    #[test]
    fn a_whole_stream_is_clean_and_a_cut_one_is_truncated() {
        let m = measure(&scan(100, 4.0), &Sampled::default(), Some(25.0));
        assert_eq!(m.level, AnalysisLevel::Triage);
        assert_eq!(m.decoded_frames, 100);
        assert!(!m.truncated && m.pts_backwards == 0 && m.pts_repeats == 0);
        assert!(
            (m.decoded_duration_secs.unwrap() - 4.0).abs() < 1e-9,
            "{m:?}"
        );
        assert_eq!(m.vfr, Some(false));
        let m = measure(&scan(40, 4.0), &Sampled::default(), Some(25.0));
        assert!(m.truncated, "{m:?}");
    }

    #[test]
    fn timestamps_that_go_back_or_repeat_and_corrupt_packets_are_counted() {
        let mut s = scan(100, 4.0);
        s.packets[50].dts = Some(0);
        s.packets[60].pts = s.packets[61].pts;
        s.packets[70].corrupt = true;
        s.read_error = Some("Invalid data found when processing input".into());
        let m = measure(&s, &Sampled::default(), Some(25.0));
        assert_eq!(m.pts_backwards, 1);
        assert_eq!(m.pts_repeats, 1);
        // A read error counts as the deep pass counts it; a corrupt mark is a doubt.
        assert_eq!(m.decode_errors, 1);
        assert!(
            m.first_error
                .as_deref()
                .unwrap()
                .starts_with("reading stopped after 100 packets"),
            "{m:?}"
        );
        assert!(
            m.suspect
                .as_deref()
                .unwrap()
                .contains("1 packet marked corrupt by the demuxer (first: packet 71)"),
            "{m:?}"
        );
        // Errors in the GOPs decoded are the proof: no doubt left about the corrupt mark.
        s.sample.errors = 3;
        s.sample.first_error = Some("a frame decodes with errors".into());
        let m = measure(&s, &Sampled::default(), Some(25.0));
        assert_eq!(m.decode_errors, 4);
        assert_eq!(m.suspect, None);
        let empty = measure(&PacketScan::default(), &Sampled::default(), None);
        assert!(empty.undecodable.is_some());
    }
}
