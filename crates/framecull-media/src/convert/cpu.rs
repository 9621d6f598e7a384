//! The CPU reference kernel: taps along each axis, footprints of the output pixels in the
//! coded frame, plane resampling in a fixed sum order, YUV -> RGB, normalisation and the
//! output encodings.

use half::f16;

use super::{DType, Filter, FrameJob, FrameParams, Layout, OutputSpec};
use crate::picture::{Frame, FrameFormat, YuvToRgb};

/// Taps of a 1-D resampling: for each output position, a range of source indices and weights.
struct Taps {
    start: Vec<u32>,
    len: Vec<u32>,
    weights: Vec<f32>,
    /// Offset of each position's weights in `weights`.
    offset: Vec<u32>,
}

impl Taps {
    /// Source interval `[a, b)` for each output position, on an axis of `n` samples.
    fn new(intervals: impl Iterator<Item = (f32, f32)>, n: u32, filter: Filter) -> Taps {
        let mut taps = Taps {
            start: Vec::new(),
            len: Vec::new(),
            weights: Vec::new(),
            offset: Vec::new(),
        };
        for (a, b) in intervals {
            taps.offset.push(taps.weights.len() as u32);
            let first = taps.weights.len();
            let start = axis_taps(a, b, n, filter, &mut |_, w| taps.weights.push(w));
            taps.start.push(start);
            taps.len.push((taps.weights.len() - first) as u32);
        }
        taps
    }
}

/// The reference 1-D sampling rule, shared with the shader. Calls `tap(i, w)` for source
/// samples `start, start+1, ...` in order and returns `start`.
///
/// Bilinear: at the interval's centre `c`, position `c - 0.5` clamped to `[0, n-1]`, taps
/// `floor` and `floor + 1` with weights `1 - f`, `f` (only `floor` at the last sample). Area: when the interval is
/// wider than one sample, each sample `i` weighs its overlap with `[a, b)` (clamped to
/// `[0, n)`), divided by the interval's clamped width; otherwise bilinear.
pub fn axis_taps(a: f32, b: f32, n: u32, filter: Filter, tap: &mut dyn FnMut(u32, f32)) -> u32 {
    let nf = n as f32;
    if filter == Filter::Area && b - a > 1.0 {
        let lo = a.clamp(0.0, nf);
        let hi = b.clamp(0.0, nf);
        if hi - lo > 0.0 {
            let first = lo.floor() as u32;
            let last = (hi.ceil() as u32).min(n);
            let width = hi - lo;
            for i in first..last {
                let i_f = i as f32;
                let w = (hi.min(i_f + 1.0) - lo.max(i_f)) / width;
                tap(i, w);
            }
            return first;
        }
    }
    let c = 0.5 * (a + b) - 0.5;
    let p = c.clamp(0.0, nf - 1.0);
    let i0 = p.floor();
    let f = p - i0;
    let i0 = i0 as u32;
    tap(i0, 1.0 - f);
    // At the last sample `f` is 0: one tap (taps are consecutive samples from `start`).
    if i0 + 1 < n {
        tap(i0 + 1, f);
    }
    i0
}

/// The coded-frame intervals of an output frame: for output column `ox` and row `oy`,
/// the coded x-interval is `col[ox]` (or `row[oy]` when rotated a quarter turn), and so on.
struct Footprints {
    /// Along output x, in coded pixels.
    along_x: Vec<(f32, f32)>,
    /// Along output y, in coded pixels.
    along_y: Vec<(f32, f32)>,
    /// Output x drives the coded x axis (0 or 2 quarter turns), else the coded y axis.
    x_is_x: bool,
}

/// Display intervals of output column `ox` (with the flip) and row `oy`, then mapped to coded
/// coordinates. Shared formula with the shader.
pub fn display_interval(
    o: u32,
    out_size: u32,
    crop_start: f32,
    crop_len: f32,
    flip: bool,
) -> (f32, f32) {
    let n = out_size as f32;
    let (mut u0, mut u1) = (o as f32 / n, (o + 1) as f32 / n);
    if flip {
        (u0, u1) = (1.0 - u1, 1.0 - u0);
    }
    (crop_start + u0 * crop_len, crop_start + u1 * crop_len)
}

fn footprints(frame: &Frame, params: &FrameParams, out: &OutputSpec) -> Footprints {
    let [cx, cy, cw, ch] = params.crop;
    let (w, h) = (frame.width as f32, frame.height as f32);
    let q = params.quarter_turns % 4;
    let xs: Vec<(f32, f32)> = (0..out.width)
        .map(|o| display_interval(o, out.width, cx, cw, params.flip))
        .collect();
    let ys: Vec<(f32, f32)> = (0..out.height)
        .map(|o| display_interval(o, out.height, cy, ch, false))
        .collect();
    // Display (dx, dy) -> coded (x, y):
    // q=0: (dx, dy); q=1: (dy, H - dx); q=2: (W - dx, H - dy); q=3: (W - dy, dx).
    let mirror =
        |v: &[(f32, f32)], size: f32| v.iter().map(|&(a, b)| (size - b, size - a)).collect();
    match q {
        0 => Footprints {
            along_x: xs,
            along_y: ys,
            x_is_x: true,
        },
        1 => Footprints {
            along_x: mirror(&xs, h),
            along_y: ys,
            x_is_x: false,
        },
        2 => Footprints {
            along_x: mirror(&xs, w),
            along_y: mirror(&ys, h),
            x_is_x: true,
        },
        _ => Footprints {
            along_x: xs,
            along_y: mirror(&ys, w),
            x_is_x: false,
        },
    }
}

/// One plane to sample: `data[y * stride + x * step + channel]`.
struct Plane<'a> {
    data: &'a [u8],
    stride: usize,
    step: usize,
    width: u32,
    height: u32,
}

/// Resample one plane to the output grid; `scale` maps coded luma coordinates to the plane's
/// (0.5 for chroma). Writes `out.width * out.height` values in 0..=255 units, row-major.
///
/// The sum order is part of the definition (the shader follows it, so both paths agree to
/// the bit): for each tap along the coded x axis, in order, the taps along the coded y axis
/// (whole rows of the plane) are summed first. That order also makes the first pass a
/// weighted sum of contiguous rows, which the compiler vectorises.
fn resample_plane(
    plane: &Plane,
    fp: &Footprints,
    scale: f32,
    filter: Filter,
    buf: &mut Vec<f32>,
    dst: &mut [f32],
) {
    fn s(v: &[(f32, f32)], scale: f32) -> impl Iterator<Item = (f32, f32)> + '_ {
        v.iter().map(move |&(a, b)| (a * scale, b * scale))
    }
    let (ow, oh) = (fp.along_x.len(), fp.along_y.len());
    // Taps along each output axis, on the coded axis that output axis drives.
    let (n_for_x, n_for_y) = if fp.x_is_x {
        (plane.width, plane.height)
    } else {
        (plane.height, plane.width)
    };
    let tx = Taps::new(s(&fp.along_x, scale), n_for_x, filter);
    let ty = Taps::new(s(&fp.along_y, scale), n_for_y, filter);
    // Coded rows come from `rows` taps, coded columns from `cols` taps. With 0 or 2 quarter
    // turns an output row is one set of coded rows; with 1 or 3, an output column is.
    let (rows, cols) = if fp.x_is_x { (&ty, &tx) } else { (&tx, &ty) };
    let lo = cols.start.iter().copied().min().unwrap_or(0) as usize;
    let hi = (0..cols.start.len())
        .map(|k| (cols.start[k] + cols.len[k]) as usize)
        .max()
        .unwrap_or(0);
    buf.clear();
    buf.resize(hi.max(lo), 0.0);
    let step = plane.step;
    for r in 0..rows.start.len() {
        // Pass 1: the weighted sum of this output line's coded rows, over the columns used.
        // `0 + w0 a + w1 b` in the reference's order is `w0 a + w1 b` exactly (the products
        // are never -0), so one or two rows are summed in one go.
        let line = &mut buf[lo..hi];
        let (first, count, offset) = (
            rows.start[r] as usize,
            rows.len[r] as usize,
            rows.offset[r] as usize,
        );
        let row = |j: usize| {
            let start = (first + j) * plane.stride + lo * step;
            &plane.data[start..start + (hi - lo - 1) * step + 1]
        };
        let weight = |j: usize| rows.weights[offset + j];
        if step == 1 {
            // Contiguous rows (YUV planes): loops the compiler vectorises.
            match count {
                1 => weighted_row(line, weight(0), row(0)),
                2 => weighted_rows(line, weight(0), row(0), weight(1), row(1)),
                _ => {
                    line.fill(0.0);
                    for j in 0..count {
                        add_weighted_row(line, weight(j), row(j));
                    }
                }
            }
        } else {
            line.fill(0.0);
            for j in 0..count {
                let w = weight(j);
                for (acc, &v) in line.iter_mut().zip(row(j).iter().step_by(step)) {
                    *acc += w * f32::from(v);
                }
            }
        }
        // Pass 2: the column taps of every output sample on this line.
        for c in 0..cols.start.len() {
            let (first, count, offset) = (
                cols.start[c] as usize,
                cols.len[c] as usize,
                cols.offset[c] as usize,
            );
            let mut acc = 0.0f32;
            for i in 0..count {
                acc += cols.weights[offset + i] * buf[first + i];
            }
            let (ox, oy) = if fp.x_is_x { (c, r) } else { (r, c) };
            dst[oy * ow + ox] = acc;
        }
    }
    debug_assert_eq!(dst.len(), ow * oh);
}

fn weighted_row(line: &mut [f32], w0: f32, a: &[u8]) {
    for (acc, &a) in line.iter_mut().zip(a) {
        *acc = w0 * f32::from(a);
    }
}

fn weighted_rows(line: &mut [f32], w0: f32, a: &[u8], w1: f32, b: &[u8]) {
    for ((acc, &a), &b) in line.iter_mut().zip(a).zip(b) {
        *acc = w0 * f32::from(a) + w1 * f32::from(b);
    }
}

fn add_weighted_row(line: &mut [f32], w: f32, a: &[u8]) {
    for (acc, &a) in line.iter_mut().zip(a) {
        *acc += w * f32::from(a);
    }
}

/// Scratch buffers reused across frames.
#[derive(Default)]
pub struct Scratch {
    planes: [Vec<f32>; 3],
    line: Vec<f32>,
    rgb: [Vec<f32>; 3],
}

/// RGB in [0, 1] for every output pixel of one frame: `rgb[c][y * width + x]`.
pub fn frame_rgb<'s>(
    job: &FrameJob,
    out: &OutputSpec,
    scratch: &'s mut Scratch,
) -> &'s [Vec<f32>; 3] {
    let frame = job.frame;
    let n = out.width as usize * out.height as usize;
    let fp = footprints(frame, &job.params, out);
    for p in scratch.planes.iter_mut().chain(scratch.rgb.iter_mut()) {
        p.clear();
        p.resize(n, 0.0);
    }
    let (w, h) = (frame.width, frame.height);
    match frame.format {
        FrameFormat::Yuv420 => {
            let (cw, ch) = (frame.chroma_width(), frame.chroma_height());
            let [(y, ys), (u, us), (v, vs)] = frame.yuv_planes();
            let plane = |data, stride, width, height| Plane {
                data,
                stride,
                step: 1,
                width,
                height,
            };
            let planes = [
                plane(y, ys, w, h),
                plane(u, us, cw, ch),
                plane(v, vs, cw, ch),
            ];
            for (k, plane) in planes.iter().enumerate() {
                let scale = if k == 0 { 1.0 } else { 0.5 };
                resample_plane(
                    plane,
                    &fp,
                    scale,
                    out.filter,
                    &mut scratch.line,
                    &mut scratch.planes[k],
                );
            }
            let [py, pu, pv] = &scratch.planes;
            let [r, g, b] = &mut scratch.rgb;
            let to_rgb = YuvToRgb::new(frame.matrix, frame.range);
            let out = r.iter_mut().zip(g.iter_mut()).zip(b.iter_mut());
            for (((r, g), b), ((y, u), v)) in out.zip(py.iter().zip(pu).zip(pv)) {
                [*r, *g, *b] = to_rgb.convert(*y, *u, *v);
            }
        }
        FrameFormat::Rgb => {
            for (c, dst) in scratch.rgb.iter_mut().enumerate() {
                let plane = Plane {
                    data: &frame.data[c..],
                    stride: 3 * w as usize,
                    step: 3,
                    width: w,
                    height: h,
                };
                resample_plane(&plane, &fp, 1.0, out.filter, &mut scratch.line, dst);
                for v in dst.iter_mut() {
                    *v = (*v / 255.0).clamp(0.0, 1.0);
                }
            }
        }
    }
    &scratch.rgb
}

/// The output value of one element from an RGB value in [0, 1]: normalised for float types,
/// `round(255 v)` for u8. Shared formula with the shader.
pub fn element_value(v: f32, channel: usize, out: &OutputSpec) -> f32 {
    match out.dtype {
        DType::U8 => (v * 255.0).round(),
        DType::F32 | DType::F16 => (v - out.mean[channel]) / out.std[channel],
    }
}

/// Write one frame's elements (in the layout's per-frame order: CHW or HWC) as bytes of the
/// output dtype into `dst` (exactly `frame_elements * dtype size` bytes). `None`: zeros.
pub fn write_frame(
    job: Option<&FrameJob>,
    out: &OutputSpec,
    scratch: &mut Scratch,
    dst: &mut [u8],
) {
    let Some(job) = job else {
        dst.fill(0);
        return;
    };
    let rgb = frame_rgb(job, out, scratch);
    let n = out.width as usize * out.height as usize;
    let size = out.dtype.size_bytes();
    match out.layout {
        // Channel planes: each channel's elements are contiguous.
        Layout::Bcthw => {
            for (c, plane) in rgb.iter().enumerate() {
                let values = plane.iter().map(|&v| element_value(v, c, out));
                encode(
                    values,
                    out.dtype,
                    &mut dst[c * n * size..(c + 1) * n * size],
                );
            }
        }
        Layout::Bthwc => {
            let [r, g, b] = rgb;
            let values = r.iter().zip(g).zip(b).flat_map(|((&r, &g), &b)| {
                [
                    element_value(r, 0, out),
                    element_value(g, 1, out),
                    element_value(b, 2, out),
                ]
            });
            encode(values, out.dtype, dst);
        }
    }
}

/// Element values as little-endian bytes of `dtype`.
fn encode(values: impl Iterator<Item = f32>, dtype: DType, dst: &mut [u8]) {
    match dtype {
        DType::F32 => {
            for (d, v) in dst.chunks_exact_mut(4).zip(values) {
                d.copy_from_slice(&v.to_le_bytes());
            }
        }
        DType::F16 => {
            for (d, v) in dst.chunks_exact_mut(2).zip(values) {
                d.copy_from_slice(&f16::from_f32(v).to_le_bytes());
            }
        }
        DType::U8 => {
            for (d, v) in dst.iter_mut().zip(values) {
                *d = v as u8;
            }
        }
    }
}

/// Decode the output bytes back to f32 values (for comparisons and checksums).
pub fn decode_elements(bytes: &[u8], dtype: DType) -> Vec<f32> {
    match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        DType::U8 => bytes.iter().map(|&b| f32::from(b)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::picture::{Matrix, Range, yuv_to_rgb};

    fn spec(w: u32, h: u32, filter: Filter, dtype: DType) -> OutputSpec {
        OutputSpec {
            width: w,
            height: h,
            layout: Layout::Bcthw,
            dtype,
            filter,
            mean: [0.0; 3],
            std: [1.0; 3],
        }
    }

    fn rgb_frame(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 3]) -> Frame {
        let mut data = Vec::new();
        for y in 0..h {
            for x in 0..w {
                data.extend_from_slice(&f(x, y));
            }
        }
        Frame {
            width: w,
            height: h,
            format: FrameFormat::Rgb,
            matrix: Matrix::Bt601,
            range: Range::Full,
            data,
            decoded: None,
            pts: 0,
            index: 0,
        }
    }

    #[test]
    fn grey_yuv_is_grey_rgb_in_both_ranges() {
        for (range, y, expect) in [
            (Range::Limited, 16.0, 0.0),
            (Range::Limited, 235.0, 1.0),
            (Range::Full, 255.0, 1.0),
        ] {
            for matrix in [Matrix::Bt601, Matrix::Bt709, Matrix::Bt2020] {
                let rgb = yuv_to_rgb(y, 128.0, 128.0, matrix, range);
                for c in rgb {
                    assert!((c - expect).abs() < 1e-6, "{range:?} {matrix:?} {rgb:?}");
                }
            }
        }
        // Pure red in BT.709 limited range: Y 63, U 102, V 240.
        let [r, g, b] = yuv_to_rgb(63.0, 102.0, 240.0, Matrix::Bt709, Range::Limited);
        assert!(r > 0.99 && g < 0.02 && b < 0.02, "{r} {g} {b}");
        // And in BT.2020: Y 16 + 219 Kr, U 128 - 112 Kr / (1 - Kb), V 240.
        let [r, g, b] = yuv_to_rgb(73.53, 96.72, 240.0, Matrix::Bt2020, Range::Limited);
        assert!(r > 0.99 && g < 0.01 && b < 0.01, "{r} {g} {b}");
        let [_, g, _] = yuv_to_rgb(73.53, 96.72, 240.0, Matrix::Bt709, Range::Limited);
        assert!(g > 0.03, "BT.709 reads BT.2020 red as another colour: {g}");
    }

    #[test]
    fn area_average_of_a_checkerboard_is_mid_grey() {
        let frame = rgb_frame(
            64,
            64,
            |x, y| if (x + y) % 2 == 0 { [255; 3] } else { [0; 3] },
        );
        let out = spec(8, 8, Filter::Area, DType::F32);
        let job = FrameJob {
            frame: &frame,
            params: FrameParams::full(&frame, 0),
        };
        let mut scratch = Scratch::default();
        let rgb = frame_rgb(&job, &out, &mut scratch);
        for v in &rgb[0] {
            assert!((v - 0.5).abs() < 1e-5, "{v}");
        }
    }

    #[test]
    fn rotation_and_flip_move_a_marked_corner() {
        // A white pixel block at the coded top-left corner.
        let frame = rgb_frame(8, 4, |x, y| if x < 2 && y < 2 { [255; 3] } else { [0; 3] });
        let out = spec(4, 8, Filter::Area, DType::F32);
        // 90 degrees clockwise: the top-left corner goes to the top-right.
        let job = FrameJob {
            frame: &frame,
            params: FrameParams::full(&frame, 1),
        };
        let mut scratch = Scratch::default();
        let rgb = frame_rgb(&job, &out, &mut scratch);
        assert!(rgb[0][3] > 0.99 && rgb[0][0] < 0.01, "{:?}", &rgb[0][..4]);
        // Flipped: back to the top-left.
        let mut params = FrameParams::full(&frame, 1);
        params.flip = true;
        let mut scratch2 = Scratch::default();
        let rgb = frame_rgb(
            &FrameJob {
                frame: &frame,
                params,
            },
            &out,
            &mut scratch2,
        );
        assert!(rgb[0][0] > 0.99 && rgb[0][3] < 0.01, "{:?}", &rgb[0][..4]);
    }

    #[test]
    fn layouts_hold_the_same_values() {
        let frame = rgb_frame(16, 8, |x, y| [(x * 16) as u8, (y * 30) as u8, 200]);
        let params = FrameParams::full(&frame, 0);
        let job = FrameJob {
            frame: &frame,
            params,
        };
        let mut a = spec(5, 3, Filter::Bilinear, DType::F32);
        a.mean = [0.485, 0.456, 0.406];
        a.std = [0.229, 0.224, 0.225];
        let b = OutputSpec {
            layout: Layout::Bthwc,
            ..a
        };
        let mut da = vec![0u8; a.frame_elements() * 4];
        let mut db = da.clone();
        write_frame(Some(&job), &a, &mut Scratch::default(), &mut da);
        write_frame(Some(&job), &b, &mut Scratch::default(), &mut db);
        let (va, vb) = (
            decode_elements(&da, DType::F32),
            decode_elements(&db, DType::F32),
        );
        for c in 0..3 {
            for i in 0..15 {
                assert_eq!(va[c * 15 + i], vb[i * 3 + c]);
            }
        }
        // Blue is 200/255 everywhere: normalised with ImageNet's statistics.
        let blue = (200.0 / 255.0 - 0.406) / 0.225;
        assert!((va[2 * 15] - blue).abs() < 1e-5);
    }
}
