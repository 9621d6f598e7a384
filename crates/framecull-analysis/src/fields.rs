//! Interlacing: whether a video's two fields (its even and odd lines) come from different
//! instants, and which comes first, measured as FFmpeg's `idet` filter measures a frame alone
//! (on the luma only, where `idet` adds the chroma planes), on runs of consecutive frames read
//! at their decoded size (the analysis copy's lines mix both fields).
//!
//! A frame is tested against the frames before and after it. Its lines of one parity are
//! replaced by the previous frame's and those of the other parity by the next frame's, and the
//! result is compared with the frame's own lines around them (the sum of `|above + below -
//! 2 * line|`, as `idet` sums it): in a picture whose top field comes first, the previous
//! frame's bottom field and the next frame's top field sit half a frame from the fields they
//! join, the other pairing a frame and a half, so one pairing fits and the other does not. In
//! a progressive picture in motion both pairings fit equally badly, and worse than the
//! frame's own lines. `idet` calls a frame combed when one pairing is 4% worse than the other;
//! progressive pictures in motion then split between both orders at random (a generated 25p
//! test pattern, 3 s: 31 tff, 26 bff, 18 progressive by `idet`), so a frame here is combed when
//! one pairing is 30% worse, and a video is interlaced when one order holds across its
//! frames.

use crate::simd::wide;
use framecull_model::{FieldOrder, Metrics, Plane};

/// Consecutive frames read at each test: each frame but the first and last is tested.
pub const RUN: usize = 5;
/// One pairing of fields this much worse than the other (percent): the frame is combed
/// (`idet`: 104).
const COMBED_PERCENT: u64 = 130;
/// Neither combed, and the bottom-first pairing this much worse than the frame's own lines
/// (percent): the frame is progressive (as `idet` tests it).
const PROGRESSIVE_PERCENT: u64 = 150;
/// One field's change from the previous frame this much larger than the other's (percent):
/// the other field repeats the previous frame's (as `idet`)...
const REPEAT_PERCENT: u64 = 300;
/// ...where the field that changed moved by at least this mean (levels a sample, in
/// hundredths), so a still frame's noise is no repeat.
const REPEAT_MIN_CHANGE: u64 = 50;
/// A video is interlaced when at least this many frames are combed in one order (or,
/// progressive, this many frames progressive)...
const MIN_COMBED: u64 = 3;
/// ...at least this share of the frames that told (in percent; static frames tell nothing)...
const MIN_COMBED_PERCENT: u64 = 25;
/// ...and the other order shows in at most a quarter as many.
const OTHER_ORDER_AT_MOST: u64 = 4;

/// What one frame showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Combed(FieldOrder),
    Progressive,
    Undetermined,
}

/// Lines of a frame kept for the test, 8 bits a sample, at the decoded size.
struct Lines {
    data: Vec<u8>,
    declared: FieldOrder,
}

/// Interlacing tests of a video's frames.
#[derive(Default)]
pub struct Fields {
    /// The last frames of the current run, up to three, oldest first.
    window: Vec<Lines>,
    /// Buffers to reuse.
    spare: Vec<Vec<u8>>,
    size: (usize, usize),
    /// Frames the current run still reads.
    left: usize,
    tested: u64,
    tff: u64,
    bff: u64,
    progressive: u64,
    repeated: u64,
    declared: [u64; 3],
}

impl Fields {
    /// Start a run of [`RUN`] consecutive frames at the next frame pushed; a run still going
    /// (samples closer than a run: under 5 frames a second) goes on for as many more.
    pub fn start_run(&mut self) {
        if self.left == 0 {
            self.spare.extend(self.window.drain(..).map(|l| l.data));
        }
        self.left = RUN;
    }

    /// The next frame in presentation order: read while a run lasts. A frame without a luma
    /// plane ends the run.
    pub fn push(&mut self, luma: Option<Plane<'_>>, declared: FieldOrder) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let Some(plane) = luma.filter(|p| p.height >= 8 && p.width >= 2) else {
            self.left = 0;
            return;
        };
        let size = (plane.width, plane.height);
        if size != self.size {
            self.size = size;
            self.spare.clear();
            self.window.clear();
        }
        let mut data = self.spare.pop().unwrap_or_default();
        data.resize(plane.width * plane.height, 0);
        for (y, row) in data.chunks_exact_mut(plane.width).enumerate() {
            plane.row_into(y, row);
        }
        self.window.push(Lines { data, declared });
        if let [prev, cur, next] = &self.window[..] {
            let shown = test(prev, cur, next, size);
            self.count(shown, cur.declared);
            let oldest = self.window.remove(0);
            self.spare.push(oldest.data);
        }
    }

    fn count(&mut self, (shown, repeated): (Shown, bool), declared: FieldOrder) {
        self.tested += 1;
        self.repeated += u64::from(repeated);
        match shown {
            Shown::Combed(FieldOrder::Tff) => self.tff += 1,
            Shown::Combed(FieldOrder::Bff) => self.bff += 1,
            Shown::Combed(FieldOrder::Progressive) => {}
            Shown::Progressive => self.progressive += 1,
            Shown::Undetermined => {}
        }
        self.declared[FieldOrder::ALL
            .iter()
            .position(|o| *o == declared)
            .unwrap_or(0)] += 1;
    }

    /// The field order the tests show: interlaced when one order holds across the frames
    /// (see the constants), progressive when at least [`MIN_COMBED`] frames are progressive
    /// and no fewer than the combed ones, none where too few frames told.
    fn verdict(&self) -> Option<FieldOrder> {
        let told = self.tff + self.bff + self.progressive;
        let (combed, other, order) = if self.tff >= self.bff {
            (self.tff, self.bff, FieldOrder::Tff)
        } else {
            (self.bff, self.tff, FieldOrder::Bff)
        };
        if combed >= MIN_COMBED
            && combed * 100 >= MIN_COMBED_PERCENT * told
            && other * OTHER_ORDER_AT_MOST <= combed
        {
            Some(order)
        } else if self.progressive >= MIN_COMBED && self.progressive >= self.tff + self.bff {
            Some(FieldOrder::Progressive)
        } else {
            None
        }
    }

    /// The tests' counts, verdict and the order the frames declare, into `m`.
    pub fn fill(&self, m: &mut Metrics) {
        m.field_order = self.verdict();
        // The most frames; of equal counts, the first of `FieldOrder::ALL`.
        let most = (0..3).max_by_key(|&i| (self.declared[i], 3 - i));
        m.declared_field_order = most.filter(|_| self.tested > 0).map(|i| FieldOrder::ALL[i]);
        m.fields_tested = self.tested;
        m.tff_frames = self.tff;
        m.bff_frames = self.bff;
        m.progressive_frames = self.progressive;
        m.repeated_fields = self.repeated;
    }
}

/// Samples summed in 16-bit lanes before they are widened: 64 x 510 fits.
const CHUNK: usize = 64;

/// For line `here` of a frame between `above` and `below`: `sum |above + below - 2 x line|`
/// with the previous frame's line, the next frame's and its own in its place, and `sum |here
/// - prev|`, in one pass over the five lines.
#[inline(always)]
fn line_sums(above: &[u8], here: &[u8], below: &[u8], prev: &[u8], next: &[u8]) -> [u64; 4] {
    let mut sums = [0u64; 4];
    let chunks = above
        .chunks(CHUNK)
        .zip(here.chunks(CHUNK))
        .zip(below.chunks(CHUNK))
        .zip(prev.chunks(CHUNK))
        .zip(next.chunks(CHUNK));
    for ((((above, here), below), prev), next) in chunks {
        let mut part = [0u16; 4];
        let samples = above.iter().zip(here).zip(below).zip(prev).zip(next);
        for ((((&a, &h), &b), &p), &n) in samples {
            let around = i16::from(a) + i16::from(b);
            part[0] += (around - 2 * i16::from(p)).unsigned_abs();
            part[1] += (around - 2 * i16::from(n)).unsigned_abs();
            part[2] += (around - 2 * i16::from(h)).unsigned_abs();
            part[3] += u16::from(h.abs_diff(p));
        }
        for (sum, part) in sums.iter_mut().zip(part) {
            *sum += u64::from(part);
        }
    }
    sums
}

/// What `cur` shows between `prev` and `next`, and whether one of its fields repeats
/// `prev`'s.
fn test(prev: &Lines, cur: &Lines, next: &Lines, size: (usize, usize)) -> (Shown, bool) {
    wide!(test_any(prev, cur, next, size))
}

#[inline(always)]
fn test_any(prev: &Lines, cur: &Lines, next: &Lines, (w, h): (usize, usize)) -> (Shown, bool) {
    #[inline(always)]
    fn line(l: &Lines, w: usize, y: usize) -> &[u8] {
        &l.data[y * w..(y + 1) * w]
    }
    // Pairings by the parity of the lines taken from the previous frame; changes by field.
    let mut alpha = [0u64; 2];
    let mut delta = 0u64;
    let mut gamma = [0u64; 2];
    for y in 2..h - 2 {
        let [with_prev, with_next, own, change] = line_sums(
            line(cur, w, y - 1),
            line(cur, w, y),
            line(cur, w, y + 1),
            line(prev, w, y),
            line(next, w, y),
        );
        let parity = y & 1;
        alpha[parity] += with_prev;
        alpha[parity ^ 1] += with_next;
        delta += own;
        gamma[parity ^ 1] += change;
    }
    // With the top field first, the previous frame's even lines sit a frame and a half from
    // the current odd ones, and the next frame's odd lines as far from the even ones.
    let shown = if alpha[0] * 100 > COMBED_PERCENT * alpha[1] {
        Shown::Combed(FieldOrder::Tff)
    } else if alpha[1] * 100 > COMBED_PERCENT * alpha[0] {
        Shown::Combed(FieldOrder::Bff)
    } else if alpha[1] * 100 > PROGRESSIVE_PERCENT * delta {
        Shown::Progressive
    } else {
        Shown::Undetermined
    };
    // A field's samples: half the lines tested.
    let field_samples = ((h - 4) / 2 * w) as u64;
    let moved = gamma[0].max(gamma[1]) * 100 >= REPEAT_MIN_CHANGE * field_samples;
    let repeated = moved
        && (gamma[0] * 100 > REPEAT_PERCENT * gamma[1]
            || gamma[1] * 100 > REPEAT_PERCENT * gamma[0]);
    (shown, repeated)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A picture of vertical stripes moving right 3 pixels an instant, each line showing the
    /// instant `time_of_line(y)`.
    fn stripes(w: usize, h: usize, time_of_line: impl Fn(usize) -> usize) -> Vec<u8> {
        let mut data = vec![0; w * h];
        for (y, row) in data.chunks_exact_mut(w).enumerate() {
            let t = time_of_line(y);
            for (x, v) in row.iter_mut().enumerate() {
                *v = if ((x + 3 * t) / 8).is_multiple_of(2) {
                    200
                } else {
                    30
                };
            }
        }
        data
    }

    /// The fields of 8-bit frames `w` x `h` marked `declared`, a run started at every frame
    /// `every` apart.
    fn measured_every(
        frames: &[Vec<u8>],
        (w, h): (usize, usize),
        every: usize,
        declared: FieldOrder,
    ) -> Metrics {
        let mut fields = Fields::default();
        for (i, f) in frames.iter().enumerate() {
            if i % every == 0 {
                fields.start_run();
            }
            let plane = Plane {
                data: f,
                stride: w,
                width: w,
                height: h,
                sample_bytes: 1,
                shift: 0,
            };
            fields.push(Some(plane), declared);
        }
        let mut m = Metrics::default();
        fields.fill(&mut m);
        m
    }

    /// Runs as the deep pass starts them at one sample a second of 5 frames or more.
    fn measured(frames: &[Vec<u8>], w: usize, h: usize) -> Metrics {
        measured_every(frames, (w, h), RUN, FieldOrder::Progressive)
    }

    #[test]
    fn the_wide_test_gives_what_the_plain_loop_gives() {
        let (w, h) = (203, 61);
        let lines = |seed| Lines {
            data: crate::image::tests::noise(w * h, seed),
            declared: FieldOrder::Progressive,
        };
        for seed in 0..4 {
            let (prev, cur, next) = (lines(seed), lines(seed + 10), lines(seed + 20));
            assert_eq!(
                test(&prev, &cur, &next, (w, h)),
                test_any(&prev, &cur, &next, (w, h))
            );
        }
        let stripes = Lines {
            data: stripes(w, h, |y| y % 2),
            declared: FieldOrder::Tff,
        };
        assert_eq!(
            test(&stripes, &stripes, &stripes, (w, h)),
            test_any(&stripes, &stripes, &stripes, (w, h))
        );
    }
    #[test]
    fn each_field_order_is_told_apart_from_progressive_motion_and_stills() {
        let (w, h) = (64, 48);
        // Top field first: the even lines of frame n show instant 2n, the odd lines 2n + 1.
        let tff: Vec<_> = (0..20)
            .map(|n| stripes(w, h, |y| 2 * n + (y & 1)))
            .collect();
        let m = measured(&tff, w, h);
        assert_eq!(m.field_order, Some(FieldOrder::Tff), "{m:?}");
        assert_eq!(m.fields_tested, 12);
        assert_eq!(m.declared_field_order, Some(FieldOrder::Progressive));

        let bff: Vec<_> = (0..20)
            .map(|n| stripes(w, h, |y| 2 * n + 1 - (y & 1)))
            .collect();
        let m = measured(&bff, w, h);
        assert_eq!(m.field_order, Some(FieldOrder::Bff), "{m:?}");

        let progressive: Vec<_> = (0..20).map(|n| stripes(w, h, |_| 2 * n)).collect();
        let m = measured(&progressive, w, h);
        assert_eq!(m.field_order, Some(FieldOrder::Progressive), "{m:?}");
        assert_eq!(m.tff_frames + m.bff_frames, 0);

        // A still picture tells nothing, combed or not.
        let still = vec![stripes(w, h, |y| y & 1); 10];
        let m = measured(&still, w, h);
        assert_eq!(m.field_order, None, "{m:?}");
        assert_eq!(m.fields_tested, 6);
    }

    #[test]
    fn a_verdict_needs_three_frames_that_agree() {
        let verdict = |tff, bff, progressive| {
            Fields {
                tff,
                bff,
                progressive,
                tested: tff + bff + progressive,
                ..Fields::default()
            }
            .verdict()
        };
        use FieldOrder::{Bff, Progressive, Tff};
        assert_eq!(verdict(0, 0, 2), None);
        assert_eq!(verdict(2, 0, 2), None);
        assert_eq!(verdict(0, 0, 3), Some(Progressive));
        assert_eq!(verdict(3, 0, 9), Some(Tff));
        assert_eq!(verdict(3, 0, 10), Some(Progressive));
        assert_eq!(verdict(0, 8, 0), Some(Bff));
        assert_eq!(verdict(8, 2, 0), Some(Tff));
        assert_eq!(verdict(8, 3, 0), None);
        assert_eq!(verdict(5, 5, 5), None);
    }

    /// Samples closer than a run (a video under 5 frames a second) test every frame, the
    /// runs joined.
    #[test]
    fn runs_that_overlap_join() {
        let (w, h) = (64, 48);
        let frames: Vec<_> = (0..12)
            .map(|n| stripes(w, h, |y| 2 * n + (y & 1)))
            .collect();
        let m = measured_every(&frames, (w, h), 2, FieldOrder::Tff);
        assert_eq!(m.fields_tested, 10);
        assert_eq!(m.tff_frames, 10);
        assert_eq!(m.declared_field_order, Some(FieldOrder::Tff));
        assert_eq!(m.repeated_fields, 0);
    }

    /// The 16-bit chunked sums equal plain sums, at the extremes of the range too.
    #[test]
    fn line_sums_equal_the_plain_sums() {
        let w = 1000;
        let pattern = |k: usize| -> Vec<u8> {
            (0..w)
                .map(|x| match (x * k) % 7 {
                    0 => 0,
                    1 => 255,
                    _ => ((x * 37 + k * 11) % 256) as u8,
                })
                .collect()
        };
        let (a, h, b, p, n) = (pattern(1), pattern(2), pattern(3), pattern(4), pattern(5));
        let curvature = |m: &[u8]| -> u64 {
            (0..w)
                .map(|x| (i64::from(a[x]) + i64::from(b[x]) - 2 * i64::from(m[x])).unsigned_abs())
                .sum()
        };
        let change: u64 = (0..w).map(|x| u64::from(h[x].abs_diff(p[x]))).sum();
        assert_eq!(
            line_sums(&a, &h, &b, &p, &n),
            [curvature(&p), curvature(&n), curvature(&h), change]
        );
        let (zero, full) = (vec![0u8; w], vec![255u8; w]);
        assert_eq!(
            line_sums(&full, &zero, &full, &zero, &zero),
            [510 * w as u64, 510 * w as u64, 510 * w as u64, 0]
        );
    }

    #[test]
    fn high_bit_depth_lines_read_as_their_top_eight_bits() {
        // 10-bit samples 0x3ff and 0x200 in little-endian pairs.
        let data = [0xff, 0x03, 0x00, 0x02];
        let plane = Plane {
            data: &data,
            stride: 4,
            width: 2,
            height: 1,
            sample_bytes: 2,
            shift: 2,
        };
        let mut row = [0u8; 2];
        plane.row_into(0, &mut row);
        assert_eq!(row, [0xff, 0x80]);
    }
}
