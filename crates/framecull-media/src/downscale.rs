//! The analysis copy of 8-bit planar YUV frames without swscale: each plane is averaged over
//! boxes (every source pixel counts once, in exactly one output pixel), then the small planes
//! are converted to planar RGB with BT.601 coefficients, as swscale's default conversion does.
//!
//! swscale's area filter spends most of its time filtering every source row horizontally with
//! fractional weights; summing rows first (a vectorised add over whole rows) and then the
//! columns of each box costs a fraction of that for the same averaging. Box edges are rounded
//! to whole source pixels, so a box is at most one pixel wider than the exact area.
//!
//! Where boxes are of two widths and their sums fit 16 bits (boxes of up to 257 pixels: an
//! analysis copy of 256 x 144 from up to 4K), the columns of each box are not summed box by
//! box: the sums of every run of `w` and of `w + 1` neighbouring columns are vector adds over
//! the whole row, and each box picks the run that starts at its left edge and is as wide as it
//! is. Box by box, the columns of a 640 x 360 frame's boxes took longer than summing its rows
//! (docs/PERFORMANCE.md). Rows are summed one after the other, each read in order: summing 32
//! columns at a time down a band in registers was faster on frames in the first caches and
//! slower on the decoder's frames, which mostly are not.

/// Averages one plane of `src_w` x `src_h` into `dst_w` x `dst_h` boxes.
#[derive(Debug, Clone)]
pub struct BoxPlane {
    src_w: usize,
    dst_w: usize,
    /// Box edges along x and y: box `i` covers `[edges[i], edges[i + 1])`.
    x_edges: Vec<usize>,
    y_edges: Vec<usize>,
    /// The narrowest box; the others are at most one pixel wider (taller): edges are an
    /// arithmetic sequence rounded.
    min_w: usize,
    min_h: usize,
    /// `2^24 / area` for the four box shapes, `[extra row][extra column]`.
    inv_area: [[u32; 2]; 2],
    /// Column sums of the current band of rows, then [`PAD`] zeros.
    acc: Vec<u16>,
    /// Where boxes are of two widths and every box sum fits 16 bits: the sums of each run of
    /// columns as wide as the narrow boxes, then [`PAD`] zeros, then of each run one column
    /// wider (see the module's documentation). Empty otherwise.
    runs: Vec<u16>,
    /// Each box's sum in `runs`: its left edge, in the second half when it is wide (empty
    /// where `runs` is).
    picks: Vec<u32>,
    /// The boxes' sums of the current band (empty where `runs` is).
    sums: Vec<u16>,
    /// `2^24 / area` of each box of a band of `min_h` and of `min_h + 1` rows (empty where
    /// `runs` is).
    inv_of_box: [Vec<u32>; 2],
}

/// Tallest box the `u16` column sums can hold (257 x 255 < 65,536).
const MAX_BOX_ROWS: usize = 257;
/// Largest box area for which `sum * 2^24 / area` (plus rounding) stays below 2^32.
const MAX_BOX_AREA: usize = 65_000;
/// Largest box area whose sums fit 16 bits (257 x 255 < 65,536).
const MAX_U16_AREA: usize = 257;
/// Zeros after the column sums, so that runs starting at any column can be read in whole
/// vectors of 16.
const PAD: usize = 32;

/// Means of `K`-wide boxes of `acc`, all of area `2^24 / inv`.
#[inline(always)]
fn sum_exact<const K: usize>(acc: &[u16], inv: u32, out: &mut [u8]) {
    for (o, cols) in out.iter_mut().zip(acc.chunks_exact(K)) {
        *o = box_mean(cols.iter().map(|&a| u32::from(a)).sum(), inv);
    }
}

/// The mean of a box from its sum and `2^24 / area`; `sum <= 255 x area <= 255 x 65,000`
/// keeps the product below 2^32 and the mean at most 255.
#[inline(always)]
fn box_mean(sum: u32, inv_area: u32) -> u8 {
    ((sum * inv_area + (1 << 23)) >> 24) as u8
}

impl BoxPlane {
    /// `None` when the output is larger than the source along an axis, or a box would be too
    /// tall for the column sums or too large for the fixed-point mean.
    pub fn new(src_w: usize, src_h: usize, dst_w: usize, dst_h: usize) -> Option<BoxPlane> {
        if dst_w == 0 || dst_h == 0 || dst_w > src_w || dst_h > src_h {
            return None;
        }
        let (max_w, max_h) = (src_w.div_ceil(dst_w), src_h.div_ceil(dst_h));
        if max_h > MAX_BOX_ROWS || max_w * max_h > MAX_BOX_AREA {
            return None;
        }
        let edges = |src: usize, dst: usize| -> Vec<usize> {
            (0..=dst).map(|i| (i * src + dst / 2) / dst).collect()
        };
        let (min_w, min_h) = (src_w / dst_w, src_h / dst_h);
        let inv = |w: usize, h: usize| {
            let area = (w * h) as u32;
            ((1 << 24) + area / 2) / area
        };
        let x_edges = edges(src_w, dst_w);
        let inv_area = [0, 1].map(|dy| [0, 1].map(|dx| inv(min_w + dx, min_h + dy)));
        let widths = || x_edges.windows(2).map(|e| e[1] - e[0] - min_w);
        // Runs are read from `acc` up to `min_w` columns past its end: within `PAD`.
        let in_u16 = (min_w + 1) * (min_h + 1) <= MAX_U16_AREA && min_w < 16;
        let two_widths = src_w != min_w * dst_w;
        let half = src_w + PAD;
        // What the runs need, made only where they are used.
        let by_runs = in_u16 && two_widths;
        let (runs, picks, sums, inv_of_box) = if by_runs {
            (
                vec![0; 2 * half],
                x_edges
                    .windows(2)
                    .zip(widths())
                    .map(|(e, wide)| (e[0] + wide * half) as u32)
                    .collect(),
                vec![0; dst_w],
                [0, 1].map(|dy| widths().map(|wide| inv_area[dy][wide]).collect()),
            )
        } else {
            Default::default()
        };
        Some(BoxPlane {
            src_w,
            dst_w,
            y_edges: edges(src_h, dst_h),
            min_w,
            min_h,
            inv_area,
            acc: vec![0; half],
            runs,
            picks,
            sums,
            inv_of_box,
            x_edges,
        })
    }

    /// Average `src` (rows `stride` bytes apart) into `out` (`dst_w` x `dst_h`, packed).
    /// Inlined into [`YuvBox::run`]'s AVX2 and portable versions.
    #[inline(always)]
    pub fn run(&mut self, src: &[u8], stride: usize, out: &mut [u8]) {
        for (oy, out_row) in out.chunks_exact_mut(self.dst_w).enumerate() {
            let (y0, y1) = (self.y_edges[oy], self.y_edges[oy + 1]);
            self.sum_rows(src, stride, y0..y1);
            let tall = y1 - y0 - self.min_h;
            if self.src_w == self.min_w * self.dst_w {
                // Every box is equally wide: with the width known at compile time, the sums
                // vectorise (as interleaved loads).
                let (acc, inv) = (&self.acc[..self.src_w], self.inv_area[tall][0]);
                match self.min_w {
                    1 => sum_exact::<1>(acc, inv, out_row),
                    2 => sum_exact::<2>(acc, inv, out_row),
                    3 => sum_exact::<3>(acc, inv, out_row),
                    4 => sum_exact::<4>(acc, inv, out_row),
                    5 => sum_exact::<5>(acc, inv, out_row),
                    6 => sum_exact::<6>(acc, inv, out_row),
                    7 => sum_exact::<7>(acc, inv, out_row),
                    8 => sum_exact::<8>(acc, inv, out_row),
                    _ => self.sum_boxes_in_turn(tall, out_row),
                }
                continue;
            }
            if self.runs.is_empty() {
                self.sum_boxes_in_turn(tall, out_row);
                continue;
            }
            match self.min_w {
                1 => self.sum_runs::<1>(),
                2 => self.sum_runs::<2>(),
                3 => self.sum_runs::<3>(),
                4 => self.sum_runs::<4>(),
                5 => self.sum_runs::<5>(),
                6 => self.sum_runs::<6>(),
                7 => self.sum_runs::<7>(),
                8 => self.sum_runs::<8>(),
                w => self.sum_runs_of(w),
            }
            for (sum, &at) in self.sums.iter_mut().zip(&self.picks) {
                *sum = self.runs[at as usize];
            }
            let pairs = self.sums.iter().zip(&self.inv_of_box[tall]);
            for (o, (&sum, &inv)) in out_row.iter_mut().zip(pairs) {
                *o = box_mean(u32::from(sum), inv);
            }
        }
    }

    /// The column sums of rows `rows` into `acc`, row after row (each row read in order: the
    /// frame is mostly beyond the first caches).
    #[inline(always)]
    fn sum_rows(&mut self, src: &[u8], stride: usize, rows: std::ops::Range<usize>) {
        let w = self.src_w;
        let acc = &mut self.acc[..w];
        for (i, y) in rows.enumerate() {
            let row = &src[y * stride..y * stride + w];
            if i == 0 {
                for (a, &s) in acc.iter_mut().zip(row) {
                    *a = u16::from(s);
                }
            } else {
                for (a, &s) in acc.iter_mut().zip(row) {
                    *a += u16::from(s);
                }
            }
        }
    }

    /// `runs`: the sums of each `K` and `K + 1` neighbouring column sums (16-bit: within a
    /// box of at most [`MAX_U16_AREA`] pixels; runs over the padding are never picked).
    #[inline(always)]
    fn sum_runs<const K: usize>(&mut self) {
        let half = self.src_w + PAD;
        let (narrow, wide) = self.runs.split_at_mut(half);
        let starts = self.src_w.div_ceil(16) * 16;
        let outs = narrow[..starts].iter_mut().zip(wide[..starts].iter_mut());
        for (j, (n, w)) in outs.enumerate() {
            let acc: &[u16; 16] = self.acc[j..j + 16].try_into().expect("padded");
            let s = acc[..K].iter().fold(0u16, |s, &a| s.wrapping_add(a));
            *n = s;
            *w = s.wrapping_add(acc[K]);
        }
    }

    /// [`BoxPlane::sum_runs`] for boxes of any width under 16, one pass per column.
    #[inline(always)]
    fn sum_runs_of(&mut self, k: usize) {
        let half = self.src_w + PAD;
        let (narrow, wide) = self.runs.split_at_mut(half);
        let n = self.src_w;
        narrow[..n].fill(0);
        for t in 0..k {
            for (s, &a) in narrow[..n].iter_mut().zip(&self.acc[t..]) {
                *s = s.wrapping_add(a);
            }
        }
        for ((w, &s), &a) in wide[..n].iter_mut().zip(&narrow[..n]).zip(&self.acc[k..]) {
            *w = s.wrapping_add(a);
        }
    }

    /// Each box's columns summed in turn (32 bits), for boxes whose sums do not fit 16.
    fn sum_boxes_in_turn(&self, tall: usize, out_row: &mut [u8]) {
        let inv_area = &self.inv_area[tall];
        for (o, e) in out_row.iter_mut().zip(self.x_edges.windows(2)) {
            let cols = &self.acc[e[0]..e[1]];
            let sum: u32 = cols.iter().map(|&a| u32::from(a)).sum();
            *o = box_mean(sum, inv_area[cols.len() - self.min_w]);
        }
    }
}

/// Box-averages planar 8-bit YUV (4:2:0, 4:2:2 or 4:4:4) to planar RGB. Chroma keeps its
/// subsampling at the small size (a 4:2:0 frame gets one chroma sample per 2x2 output
/// pixels), which quarters the chroma work and adds no detail the source did not have.
#[derive(Debug, Clone)]
pub struct YuvBox {
    luma: BoxPlane,
    chroma: BoxPlane,
    shift: (u32, u32),
    width: usize,
    height: usize,
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
    /// `y` in full range.
    gray: Vec<u8>,
    /// One row of chroma at full width.
    u_row: Vec<u8>,
    v_row: Vec<u8>,
}

impl YuvBox {
    /// `chroma_shift` is (log2 horizontal, log2 vertical) chroma subsampling. `None` where
    /// the small size is not a multiple of the subsampling or [`BoxPlane::new`] refuses a
    /// plane.
    pub fn new(
        src_w: usize,
        src_h: usize,
        chroma_shift: (u32, u32),
        dst_w: usize,
        dst_h: usize,
    ) -> Option<YuvBox> {
        let (sx, sy) = chroma_shift;
        if sx > 1 || sy > 1 || !dst_w.is_multiple_of(1 << sx) || !dst_h.is_multiple_of(1 << sy) {
            return None;
        }
        let (cw, ch) = (src_w.div_ceil(1 << sx), src_h.div_ceil(1 << sy));
        let (dcw, dch) = (dst_w >> sx, dst_h >> sy);
        Some(YuvBox {
            luma: BoxPlane::new(src_w, src_h, dst_w, dst_h)?,
            chroma: BoxPlane::new(cw, ch, dcw, dch)?,
            shift: chroma_shift,
            width: dst_w,
            height: dst_h,
            y: vec![0; dst_w * dst_h],
            u: vec![0; dcw * dch],
            v: vec![0; dcw * dch],
            gray: vec![0; dst_w * dst_h],
            u_row: vec![0; dst_w],
            v_row: vec![0; dst_w],
        })
    }

    /// Average the three planes (`(data, stride)` each) and write the R, G and B planes
    /// (`dst_w * dst_h` bytes each) into `rgb`.
    pub fn run(&mut self, planes: [(&[u8], usize); 3], full_range: bool, rgb: &mut [Vec<u8>; 3]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { self.run_avx2(planes, full_range, rgb) };
        }
        self.run_any(planes, full_range, rgb);
    }

    /// [`YuvBox::run`] compiled for AVX2 (the row sums and the conversion take twice the
    /// pixels per instruction).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn run_avx2(&mut self, planes: [(&[u8], usize); 3], full_range: bool, rgb: &mut [Vec<u8>; 3]) {
        self.run_any(planes, full_range, rgb);
    }

    #[inline(always)]
    fn run_any(&mut self, planes: [(&[u8], usize); 3], full_range: bool, rgb: &mut [Vec<u8>; 3]) {
        self.luma.run(planes[0].0, planes[0].1, &mut self.y);
        self.chroma.run(planes[1].0, planes[1].1, &mut self.u);
        self.chroma.run(planes[2].0, planes[2].1, &mut self.v);
        let m = Bt601::new(full_range);
        for (l, &y) in self.gray.iter_mut().zip(&self.y) {
            *l = m.full_luma(y);
        }
        let (w, (sx, sy)) = (self.width, self.shift);
        let chroma_w = w >> sx;
        let (u_row, v_row) = (&mut self.u_row, &mut self.v_row);
        let [r_out, g_out, b_out] = rgb;
        for plane in [&mut *r_out, &mut *g_out, &mut *b_out] {
            plane.resize(w * self.height, 0);
        }
        let rows = r_out
            .chunks_exact_mut(w)
            .zip(g_out.chunks_exact_mut(w))
            .zip(b_out.chunks_exact_mut(w))
            .zip(self.y.chunks_exact(w));
        for (row, (((r, g), b), luma)) in rows.enumerate() {
            if row & ((1 << sy) - 1) == 0 {
                let c = (row >> sy) * chroma_w;
                let (u, v) = (&self.u[c..c + chroma_w], &self.v[c..c + chroma_w]);
                if sx == 0 {
                    u_row.copy_from_slice(u);
                    v_row.copy_from_slice(v);
                } else {
                    for ((uo, vo), (&u, &v)) in u_row
                        .chunks_exact_mut(2)
                        .zip(v_row.chunks_exact_mut(2))
                        .zip(u.iter().zip(v))
                    {
                        uo.fill(u);
                        vo.fill(v);
                    }
                }
            }
            let pixels = r
                .iter_mut()
                .zip(g.iter_mut())
                .zip(b.iter_mut())
                .zip(luma.iter().zip(u_row.iter()).zip(v_row.iter()));
            for (((r, g), b), ((&y, &u), &v)) in pixels {
                [*r, *g, *b] = m.rgb(y, u, v);
            }
        }
    }

    /// Full-range luma of the last frame [`YuvBox::run`] converted.
    pub fn luma(&self) -> &[u8] {
        &self.gray
    }
}

/// BT.601 YUV to RGB in 16.16 fixed point.
struct Bt601 {
    y_offset: i32,
    y_gain: i32,
    rv: i32,
    gu: i32,
    gv: i32,
    bu: i32,
}

impl Bt601 {
    fn new(full_range: bool) -> Self {
        let fixed = |f: f64| (f * 65536.0).round() as i32;
        // Chroma gains for Kr = 0.299, Kb = 0.114; limited range stretches Y by 255/219 and
        // chroma by 255/224.
        let (y_offset, y_gain, c) = if full_range {
            (0, 1.0, 1.0)
        } else {
            (16, 255.0 / 219.0, 255.0 / 224.0)
        };
        Bt601 {
            y_offset,
            y_gain: fixed(y_gain),
            rv: fixed(1.402 * c),
            gu: fixed(0.344_136 * c),
            gv: fixed(0.714_136 * c),
            bu: fixed(1.772 * c),
        }
    }

    #[inline(always)]
    fn full_luma(&self, y: u8) -> u8 {
        (((i32::from(y) - self.y_offset) * self.y_gain + (1 << 15)) >> 16).clamp(0, 255) as u8
    }

    #[inline(always)]
    fn rgb(&self, y: u8, u: u8, v: u8) -> [u8; 3] {
        let y = (i32::from(y) - self.y_offset) * self.y_gain + (1 << 15);
        let (u, v) = (i32::from(u) - 128, i32::from(v) - 128);
        let clamp = |x: i32| (x >> 16).clamp(0, 255) as u8;
        [
            clamp(y + self.rv * v),
            clamp(y - self.gu * u - self.gv * v),
            clamp(y + self.bu * u),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_average_every_source_pixel_once() {
        // 10 x 4 -> 4 x 2: boxes 3,2,3,2 wide (edges 0,3,5,8,10), 2 rows tall.
        let src: Vec<u8> = (0..40).map(|i| (i * 6) as u8).collect();
        let mut p = BoxPlane::new(10, 4, 4, 2).expect("shrink");
        let mut out = [0u8; 8];
        p.run(&src, 10, &mut out);
        let mean = |xs: std::ops::Range<usize>, ys: std::ops::Range<usize>| {
            let (mut s, mut n) = (0.0, 0.0);
            for y in ys {
                for x in xs.clone() {
                    s += f64::from(src[y * 10 + x]);
                    n += 1.0;
                }
            }
            (s / n).round() as u8
        };
        let edges = [0, 3, 5, 8, 10];
        for oy in 0..2 {
            for ox in 0..4 {
                let want = mean(edges[ox]..edges[ox + 1], oy * 2..oy * 2 + 2);
                assert_eq!(out[oy * 4 + ox], want, "box ({ox}, {oy})");
            }
        }
    }

    /// Every box's mean computed alone: its pixels summed, divided by its own area (the same
    /// fixed-point rounding).
    fn reference(
        src: &[u8],
        stride: usize,
        (w, h): (usize, usize),
        (dw, dh): (usize, usize),
    ) -> Vec<u8> {
        let edges = |n: usize, d: usize| (0..=d).map(|i| (i * n + d / 2) / d).collect::<Vec<_>>();
        let (xs, ys) = (edges(w, dw), edges(h, dh));
        let mut out = Vec::new();
        for y in ys.windows(2) {
            for x in xs.windows(2) {
                let sum: u32 = (y[0]..y[1])
                    .flat_map(|r| &src[r * stride + x[0]..r * stride + x[1]])
                    .map(|&p| u32::from(p))
                    .sum();
                let area = ((x[1] - x[0]) * (y[1] - y[0])) as u32;
                out.push(box_mean(sum, ((1 << 24) + area / 2) / area));
            }
        }
        out
    }

    #[test]
    fn every_box_is_its_own_mean_at_any_size() {
        // Sizes where the boxes are equally wide, where they are of two widths (16-bit sums
        // of runs of columns), one column wide, wider than 8, and too large for 16-bit sums;
        // rows narrower and wider than a group of columns; padded strides.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut noise = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        };
        let sizes = [
            ((1280, 720), (256, 144)),
            ((1920, 1080), (256, 144)),
            ((640, 360), (256, 144)),
            ((426, 240), (256, 144)),
            ((768, 576), (256, 192)),
            ((1280, 544), (256, 108)),
            ((3840, 2160), (256, 144)),
            ((33, 17), (32, 16)),
            ((31, 9), (7, 4)),
            ((100, 30), (9, 3)),
            ((500, 40), (20, 2)),
            ((2000, 8), (40, 1)),
            ((2010, 300), (40, 2)),
            ((64, 64), (64, 64)),
        ];
        for ((w, h), (dw, dh)) in sizes {
            for pad in [0, 13] {
                let stride = w + pad;
                let src: Vec<u8> = (0..stride * h).map(|_| noise()).collect();
                let mut p = BoxPlane::new(w, h, dw, dh).expect("shrink");
                let mut out = vec![0u8; dw * dh];
                p.run(&src, stride, &mut out);
                assert_eq!(
                    out,
                    reference(&src, stride, (w, h), (dw, dh)),
                    "{w}x{h} -> {dw}x{dh}"
                );
                // The same plane again: nothing is left over from the frame before.
                let flat = vec![200u8; stride * h];
                p.run(&flat, stride, &mut out);
                assert!(out.iter().all(|&v| v == 200), "{w}x{h} -> {dw}x{dh} flat");
            }
        }
    }

    #[test]
    fn strided_rows_and_refusals() {
        // Stride padding is ignored.
        let mut src = vec![255u8; 8 * 2];
        for row in src.chunks_mut(8) {
            row[..4].fill(100);
        }
        let mut p = BoxPlane::new(4, 2, 2, 1).expect("shrink");
        let mut out = [0u8; 2];
        p.run(&src, 8, &mut out);
        assert_eq!(out, [100, 100]);
        assert!(BoxPlane::new(2, 2, 4, 2).is_none(), "no upscaling");
        assert!(
            BoxPlane::new(4, 600, 2, 2).is_none(),
            "box taller than the sums hold"
        );
    }

    #[test]
    fn colours_convert_like_bt601() {
        let limited = Bt601::new(false);
        assert_eq!(limited.rgb(16, 128, 128), [0, 0, 0]);
        assert_eq!(limited.rgb(235, 128, 128), [255, 255, 255]);
        // Limited-range red (81, 90, 240).
        let [r, g, b] = limited.rgb(81, 90, 240);
        assert!(r >= 253 && g <= 2 && b <= 2, "{r} {g} {b}");
        let full = Bt601::new(true);
        assert_eq!(full.rgb(0, 128, 128), [0, 0, 0]);
        assert_eq!(full.rgb(128, 128, 128), [128, 128, 128]);
    }

    #[test]
    fn yuv420_frame_to_rgb() {
        // 8 x 4 grey frame with a limited-range white left half.
        let mut y = vec![16u8; 32];
        for row in y.chunks_mut(8) {
            row[..4].fill(235);
        }
        let (u, v) = (vec![128u8; 8], vec![128u8; 8]);
        let mut s = YuvBox::new(8, 4, (1, 1), 4, 2).expect("shrink");
        let mut rgb = [Vec::new(), Vec::new(), Vec::new()];
        s.run([(&y, 8), (&u, 4), (&v, 4)], false, &mut rgb);
        for plane in &rgb {
            assert_eq!(plane, &[255, 255, 0, 0, 255, 255, 0, 0]);
        }
        assert_eq!(s.luma(), &[255, 255, 0, 0, 255, 255, 0, 0]);
    }
}
