//! Small grey images and the pixel operations the analyses share.

use crate::simd::wide;

/// An 8-bit single-channel image, row-major, no padding.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gray {
    pub width: usize,
    pub height: usize,
    pub data: Vec<u8>,
}

/// For each of `dst` output cells over `src` input cells: the first input cell it covers and
/// the covered fraction of each input cell from there.
fn area_taps(src: usize, dst: usize) -> Vec<(usize, Vec<f64>)> {
    let scale = src as f64 / dst as f64;
    (0..dst)
        .map(|o| {
            let (a, b) = (o as f64 * scale, (o + 1) as f64 * scale);
            let first = a.floor() as usize;
            let weights = (first..src)
                .take_while(|&i| (i as f64) < b)
                .map(|i| (b.min(i as f64 + 1.0) - a.max(i as f64)).max(0.0))
                .collect();
            (first, weights)
        })
        .collect()
}

/// BT.601 luma of one RGB pixel.
fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((77 * u32::from(r) + 150 * u32::from(g) + 29 * u32::from(b) + 128) >> 8) as u8
}

impl Gray {
    /// Luma (BT.601 weights) of R, G and B planes.
    pub fn from_planes(planes: [&[u8]; 3], width: usize, height: usize) -> Gray {
        let mut g = Gray::default();
        g.set_from_planes(planes, width, height);
        g
    }

    /// Become the luma of R, G and B planes, reusing this buffer.
    pub fn set_from_planes(&mut self, [r, g, b]: [&[u8]; 3], width: usize, height: usize) {
        self.data.clear();
        self.data.extend(
            r.iter()
                .zip(g)
                .zip(b)
                .take(width * height)
                .map(|((&r, &g), &b)| luma(r, g, b)),
        );
        (self.width, self.height) = (width, height);
    }

    /// Become a copy of `luma` (`width * height` bytes), reusing this buffer.
    pub fn set(&mut self, luma: &[u8], width: usize, height: usize) {
        self.data.clear();
        self.data.extend_from_slice(&luma[..width * height]);
        (self.width, self.height) = (width, height);
    }

    pub fn mean(&self) -> f64 {
        if self.data.is_empty() {
            return 0.0;
        }
        self.data.iter().map(|&v| u64::from(v)).sum::<u64>() as f64 / self.data.len() as f64
    }

    pub fn std_dev(&self) -> f64 {
        if self.data.is_empty() {
            return 0.0;
        }
        let mean = self.mean();
        let var = self
            .data
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / self.data.len() as f64;
        var.sqrt()
    }

    /// Area-average resize to `w` x `h` (each output pixel averages the input pixels it
    /// covers, with fractional edges weighted).
    pub fn resize_area(&self, w: usize, h: usize) -> Gray {
        let (w, h) = (w.max(1), h.max(1));
        if self.width.is_multiple_of(w) && self.height.is_multiple_of(h) {
            return self.resize_box(self.width / w, self.height / h);
        }
        // Separable: each output column (row) takes the input columns (rows) it covers, with
        // the covered fraction as weight; rows are filtered first, then combined.
        let xs = area_taps(self.width, w);
        let ys = area_taps(self.height, h);
        let mut rows = vec![0f64; self.height * w];
        for (src, out) in self
            .data
            .chunks_exact(self.width)
            .zip(rows.chunks_exact_mut(w))
        {
            for (o, (start, weights)) in out.iter_mut().zip(&xs) {
                *o = weights
                    .iter()
                    .zip(&src[*start..])
                    .map(|(wt, &v)| wt * f64::from(v))
                    .sum();
            }
        }
        let area = (self.width as f64 / w as f64) * (self.height as f64 / h as f64);
        let mut data = Vec::with_capacity(w * h);
        let mut line = vec![0f64; w];
        for (start, weights) in &ys {
            line.fill(0.0);
            for (wt, row) in weights.iter().zip(rows.chunks_exact(w).skip(*start)) {
                for (l, &v) in line.iter_mut().zip(row) {
                    *l += wt * v;
                }
            }
            data.extend(line.iter().map(|&sum| (sum / area).round() as u8));
        }
        Gray {
            width: w,
            height: h,
            data,
        }
    }

    /// Average `fx` x `fy` blocks (integer factors). The motion copy of every frame takes 4 x 4
    /// blocks: with the factors known at compile time, the sums vectorise and the divisions
    /// are shifts.
    fn resize_box(&self, fx: usize, fy: usize) -> Gray {
        if (fx, fy) == (4, 4) {
            return wide!(self.resize_box_any::<4, 4>(4, 4));
        }
        self.resize_box_any::<0, 0>(fx, fy)
    }

    /// [`Gray::resize_box`], with factors `FX` x `FY` when they are not 0, else `fx` x `fy`.
    #[inline(always)]
    fn resize_box_any<const FX: usize, const FY: usize>(&self, fx: usize, fy: usize) -> Gray {
        let fx = if FX == 0 { fx } else { FX };
        let fy = if FY == 0 { fy } else { FY };
        let (w, h) = (self.width / fx, self.height / fy);
        let mut sums = vec![0u32; w * h];
        for y in 0..h * fy {
            let row = &self.data[y * self.width..y * self.width + w * fx];
            let out = &mut sums[(y / fy) * w..(y / fy + 1) * w];
            for (o, chunk) in out.iter_mut().zip(row.chunks_exact(fx)) {
                *o += chunk.iter().map(|&v| u32::from(v)).sum::<u32>();
            }
        }
        let n = (fx * fy) as u32;
        Gray {
            width: w,
            height: h,
            data: sums.into_iter().map(|s| ((s + n / 2) / n) as u8).collect(),
        }
    }

    /// Resize so the longer side is `side` pixels (never upscales).
    pub fn fit_long_side(&self, side: usize) -> Gray {
        let long = self.width.max(self.height);
        if long <= side {
            return self.clone();
        }
        let scale = side as f64 / long as f64;
        self.resize_area(
            ((self.width as f64 * scale).round() as usize).max(1),
            ((self.height as f64 * scale).round() as usize).max(1),
        )
    }

    /// Apply an EXIF orientation (1-8) so the image is upright.
    pub fn oriented(&self, orientation: u16) -> Gray {
        let (width, height, data) = orient(self.width, self.height, &self.data, 1, orientation);
        Gray {
            width,
            height,
            data,
        }
    }
}

/// Apply an EXIF orientation (1-8) to an image of `channels` interleaved bytes per pixel:
/// returns the upright width, height and pixels.
pub fn orient(
    w: usize,
    h: usize,
    pixels: &[u8],
    channels: usize,
    orientation: u16,
) -> (usize, usize, Vec<u8>) {
    let (ow, oh) = if matches!(orientation, 5..=8) {
        (h, w)
    } else {
        (w, h)
    };
    let mut out = vec![0u8; w * h * channels];
    for y in 0..oh {
        for x in 0..ow {
            // Source coordinates for output (x, y), per the EXIF definitions.
            let (sx, sy) = match orientation {
                2 => (w - 1 - x, y),
                3 => (w - 1 - x, h - 1 - y),
                4 => (x, h - 1 - y),
                5 => (y, x),
                6 => (y, h - 1 - x),
                7 => (w - 1 - y, h - 1 - x),
                8 => (w - 1 - y, x),
                _ => (x, y),
            };
            let (d, s) = ((y * ow + x) * channels, (sy * w + sx) * channels);
            out[d..d + channels].copy_from_slice(&pixels[s..s + channels]);
        }
    }
    (ow, oh, out)
}

/// OpenCV-compatible 8-bit HSV planes (H in 0..180, S and V in 0..=255).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hsv {
    pub h: Vec<u8>,
    pub s: Vec<u8>,
    pub v: Vec<u8>,
}

/// Nearest integer of `x` in +-2^21, halves rounded up as OpenCV's fixed point does, by
/// the float's bits: adding 1.5 x 2^23 leaves the integer in the low mantissa bits (rounded
/// to even; the 1/1024 nudge sends exact halves up), a conversion that vectorises (`as i32`
/// does not, for its saturation).
fn round_half_up(x: f32) -> i32 {
    const MAGIC: f32 = 12_582_912.0;
    (x + 1.0 / 1024.0 + MAGIC).to_bits() as i32 - MAGIC.to_bits() as i32
}

impl Hsv {
    /// Convert R, G and B planes (of equal length) into these planes, reusing their buffers.
    /// Written so the compiler vectorises it (the quotients in `f32`); a value can differ
    /// from OpenCV's fixed-point tables by one level where the exact quotient is within
    /// their rounding error of a half.
    pub fn set_from_planes(&mut self, planes: [&[u8]; 3]) {
        wide!(self.set_from_planes_any(planes));
    }

    #[inline(always)]
    fn set_from_planes_any(&mut self, [r, g, b]: [&[u8]; 3]) {
        let n = r.len().min(g.len()).min(b.len());
        for plane in [&mut self.h, &mut self.s, &mut self.v] {
            plane.resize(n, 0);
        }
        let pixels = r.iter().zip(g).zip(b).zip(
            self.h
                .iter_mut()
                .zip(self.s.iter_mut())
                .zip(self.v.iter_mut()),
        );
        for (((&r, &g), &b), ((ho, so), vo)) in pixels {
            let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
            let max = if r > g { r } else { g };
            let max = if max > b { max } else { b };
            let min = if r < g { r } else { g };
            let min = if min < b { min } else { b };
            let diff = max - min;
            let sector = if max == r {
                g - b
            } else if max == g {
                b - r + 2 * diff
            } else {
                r - g + 4 * diff
            };
            // Both quotients are 0 where their numerator is (black, grey).
            let sat = (diff * 255) as f32 / (if max > 1 { max } else { 1 }) as f32;
            let hue = (sector * 30) as f32 / (if diff > 1 { diff } else { 1 }) as f32;
            let hue = round_half_up(hue);
            *ho = (hue + if hue < 0 { 180 } else { 0 }) as u8;
            *so = round_half_up(sat) as u8;
            *vo = max as u8;
        }
    }

    /// PySceneDetect's ContentDetector score: the mean absolute change of hue, saturation
    /// and value, averaged over the three.
    pub fn content_distance(&self, other: &Hsv) -> f64 {
        let mean_abs = |a: &[u8], b: &[u8]| -> f64 {
            if a.is_empty() || a.len() != b.len() {
                return 0.0;
            }
            sum_abs_diff(a, b) as f64 / a.len() as f64
        };
        (mean_abs(&self.h, &other.h) + mean_abs(&self.s, &other.s) + mean_abs(&self.v, &other.v))
            / 3.0
    }
}

/// Sum of absolute differences of two equally long byte slices (extra bytes of the longer
/// one are ignored).
pub fn sum_abs_diff(a: &[u8], b: &[u8]) -> u64 {
    wide!(sum_abs_diff_any(a, b))
}

#[inline(always)]
fn sum_abs_diff_any(a: &[u8], b: &[u8]) -> u64 {
    // u32 partial sums over chunks vectorise well and cannot overflow (4096 x 255).
    a.chunks(4096)
        .zip(b.chunks(4096))
        .map(|(x, y)| {
            let part: u32 = x
                .iter()
                .zip(y)
                .map(|(&p, &q)| u32::from(p.abs_diff(q)))
                .sum();
            u64::from(part)
        })
        .sum()
}

/// Percentile (0..=100) of a non-empty slice of values, by linear interpolation.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = (p / 100.0).clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (rank - lo as f64))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn hsv_matches_opencv_conventions() {
        let mut hsv = Hsv::default();
        hsv.set_from_planes([&[255, 0, 0, 128], &[0, 255, 0, 128], &[0, 0, 255, 128]]);
        assert_eq!(hsv.h, vec![0, 60, 120, 0]);
        assert_eq!(hsv.s, vec![255, 255, 255, 0]);
        assert_eq!(hsv.v, vec![255, 255, 255, 128]);
    }

    /// OpenCV's 8-bit RGB to HSV (`cvtColor`, fixed-point tables with `hsv_shift` = 12).
    fn opencv_hsv(r: i32, g: i32, b: i32) -> [i32; 3] {
        let v = r.max(g).max(b);
        let diff = v - r.min(g).min(b);
        let table = |num: f64, i: i32| {
            if i == 0 {
                0
            } else {
                (num * 4096.0 / f64::from(i)).round() as i32
            }
        };
        let s = (diff * table(255.0, v) + 2048) >> 12;
        let h = if v == r {
            g - b
        } else if v == g {
            b - r + 2 * diff
        } else {
            r - g + 4 * diff
        };
        let h = (h * table(30.0, diff) + 2048) >> 12;
        [if h < 0 { h + 180 } else { h }, s, v]
    }

    #[test]
    fn hsv_is_within_one_level_of_opencv() {
        let levels: Vec<u8> = (0..=255).step_by(5).collect();
        let (mut r, mut g, mut b) = (Vec::new(), Vec::new(), Vec::new());
        for &x in &levels {
            for &y in &levels {
                for &z in &levels {
                    r.push(x);
                    g.push(y);
                    b.push(z);
                }
            }
        }
        let mut hsv = Hsv::default();
        hsv.set_from_planes([&r, &g, &b]);
        let mut exact = 0;
        for i in 0..r.len() {
            let want = opencv_hsv(i32::from(r[i]), i32::from(g[i]), i32::from(b[i]));
            let got = [hsv.h[i], hsv.s[i], hsv.v[i]].map(i32::from);
            for c in 0..3 {
                // Hue wraps: 0 and 179 are one level apart.
                let d = (got[c] - want[c]).abs();
                let d = if c == 0 { d.min(180 - d) } else { d };
                assert!(
                    d <= 1,
                    "rgb {:?}: {got:?} against {want:?}",
                    (r[i], g[i], b[i])
                );
            }
            exact += usize::from(got == want);
        }
        assert!(exact * 100 >= r.len() * 95, "{exact} of {} exact", r.len());
    }

    /// Bytes of a simple generator (no dependency), for comparing two copies of a loop.
    pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn the_wide_copies_give_what_the_plain_loops_give() {
        // Every level of each channel against pseudo-random others, and an odd length (a
        // tail the vector loop leaves).
        let n = 256 * 97 + 13;
        let r: Vec<u8> = (0..n).map(|i| (i % 256) as u8).collect();
        let (g, b) = (noise(n, 1), noise(n, 2));
        let (mut wide, mut plain) = (Hsv::default(), Hsv::default());
        wide.set_from_planes([&r, &g, &b]);
        plain.set_from_planes_any([&r, &g, &b]);
        assert_eq!(wide, plain);
        for len in [0, 1, 31, 4096, 4097, n] {
            assert_eq!(
                sum_abs_diff(&g[..len], &b[..len]),
                sum_abs_diff_any(&g[..len], &b[..len])
            );
        }
    }

    #[test]
    fn area_resize_averages() {
        let g = Gray {
            width: 4,
            height: 2,
            data: vec![0, 100, 200, 200, 0, 100, 200, 200],
        };
        assert_eq!(g.resize_area(2, 1).data, vec![50, 200]);
    }

    #[test]
    fn block_means_at_the_motion_copy_sizes() {
        // 4 x 4 blocks (the motion copy of 16:9, 4:3 and 2.37:1 analysis copies) and other
        // whole factors: each output is its block's mean, halves rounded up.
        for (w, h, fx, fy) in [
            (256, 144, 4, 4),
            (256, 192, 4, 4),
            (256, 108, 4, 4),
            (12, 9, 3, 3),
            (10, 4, 5, 2),
        ] {
            let g = Gray {
                width: w,
                height: h,
                data: noise(w * h, (w * h) as u64),
            };
            let (ow, oh) = (w / fx, h / fy);
            let want: Vec<u8> = (0..ow * oh)
                .map(|i| {
                    let (x, y) = (i % ow * fx, i / ow * fy);
                    let sum: u32 = (y..y + fy)
                        .flat_map(|r| &g.data[r * w + x..r * w + x + fx])
                        .map(|&v| u32::from(v))
                        .sum();
                    let n = (fx * fy) as u32;
                    ((sum + n / 2) / n) as u8
                })
                .collect();
            assert_eq!(g.resize_area(ow, oh).data, want, "{w}x{h} by {fx}x{fy}");
        }
    }

    #[test]
    fn fractional_area_resize_weights_partly_covered_pixels() {
        // 5 x 3 to 2 x 2: each output covers 2.5 columns and 1.5 rows.
        let g = Gray {
            width: 5,
            height: 3,
            data: (0..15).map(|v| v * 10).collect(),
        };
        let at = |x: usize, y: usize| f64::from(g.data[y * 5 + x]);
        let cell = |xs: [(usize, f64); 3], ys: [(usize, f64); 2]| {
            let mut sum = 0.0;
            for (y, wy) in ys {
                for (x, wx) in xs {
                    sum += at(x, y) * wx * wy;
                }
            }
            (sum / 3.75).round() as u8
        };
        let (left, right) = (
            [(0, 1.0), (1, 1.0), (2, 0.5)],
            [(2, 0.5), (3, 1.0), (4, 1.0)],
        );
        let (top, bottom) = ([(0, 1.0), (1, 0.5)], [(1, 0.5), (2, 1.0)]);
        let want = vec![
            cell(left, top),
            cell(right, top),
            cell(left, bottom),
            cell(right, bottom),
        ];
        assert_eq!(g.resize_area(2, 2).data, want);
    }

    #[test]
    fn orientation_6_rotates_clockwise() {
        // 2x1 image [a b] shown rotated 90 degrees clockwise becomes a column [a; b].
        let g = Gray {
            width: 2,
            height: 1,
            data: vec![1, 2],
        };
        let o = g.oriented(6);
        assert_eq!((o.width, o.height), (1, 2));
        assert_eq!(o.data, vec![1, 2]);
        let o = g.oriented(8);
        assert_eq!(o.data, vec![2, 1]);
    }
}
