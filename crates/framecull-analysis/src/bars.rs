//! Letterbox and pillarbox bars: rows (columns) at a picture's edges that are one flat colour in
//! every sampled frame, the same colour from the first frame to the last, on both sides of the
//! picture. What is left is the content, as a crop of the coded picture.
//!
//! Measured on the analysis copy (at most 256 pixels a side), so a bar's edge is known to one
//! of its lines; the crop takes that line too (rounded inward), so no bar is left in it, at
//! the cost of at most a line of the copy of content (1/144 of a 1080p picture's height).
//! A flat area on one side only (a clear sky, a wall) is not a bar, nor is a picture that is
//! flat throughout (a black video is `black`).

use framecull_model::Crop;

/// Largest spread (max - min, 0-255) of each of R, G and B along a line, and of a line's mean
/// colour from frame to frame, for the line to be a bar: a bar's compression noise is a few
/// levels; content of any texture is more.
const FLAT_SPREAD: u8 = 12;
/// Smallest bar, as a share of the picture's height (letterbox) or width (pillarbox), on each
/// side: a line or two of edge noise is not a bar.
const MIN_BAR_SHARE: f64 = 0.02;

/// Least share of the content's first line (beside a bar) whose pixels leave the bar's colour
/// in some frame: a picture's edge is busy along its length, where a small subject on a flat
/// background (a title, a shape in the middle of black) touches its bounding box at a few
/// pixels only.
const MIN_EDGE_ACTIVITY: f64 = 0.6;

/// Largest spread along a line next to a bar, for it to be part of the bar when its mean
/// colour is the bar's: the bar's edge carries the coding noise (ringing) of the content beside
/// it.
const EDGE_SPREAD: u8 = 3 * FLAT_SPREAD;

/// What the frames so far say of one line (a row or a column) of the analysis copy.
#[derive(Debug, Clone, Copy)]
struct Line {
    /// The largest spread (max - min) of R, G or B along it in a frame so far.
    spread: u8,
    /// The lowest and highest of its mean colour over the frames so far.
    lo: [u8; 3],
    hi: [u8; 3],
}

impl Line {
    const NEW: Line = Line {
        spread: 0,
        lo: [u8::MAX; 3],
        hi: [0; 3],
    };

    /// A frame's line in plane `c`: its lowest, highest and mean value.
    fn push(&mut self, c: usize, lo: u8, hi: u8, mean: u8) {
        self.spread = self.spread.max(hi.saturating_sub(lo));
        self.lo[c] = self.lo[c].min(mean);
        self.hi[c] = self.hi[c].max(mean);
    }

    /// Flat in every frame, in one colour throughout.
    fn is_bar(&self) -> bool {
        self.spread <= FLAT_SPREAD
            && (0..3).all(|c| self.hi[c].saturating_sub(self.lo[c]) <= FLAT_SPREAD)
    }

    /// The edge of a bar of colour `bar`: nearly flat, its mean that colour in every frame.
    fn is_edge_of(&self, bar: [u8; 3]) -> bool {
        self.spread <= EDGE_SPREAD
            && (0..3).all(|c| {
                bar[c].abs_diff(self.lo[c]) <= FLAT_SPREAD
                    && bar[c].abs_diff(self.hi[c]) <= FLAT_SPREAD
            })
    }

    fn colour(&self) -> [u8; 3] {
        [0, 1, 2].map(|c| ((u16::from(self.lo[c]) + u16::from(self.hi[c])) / 2) as u8)
    }
}

/// Bars seen over the frames of a video, on its analysis copy.
#[derive(Debug, Clone, Default)]
pub struct Bars {
    /// The analysis copy's size; frames of another size (a resolution change) stop the
    /// measure.
    size: Option<(usize, usize)>,
    rows: Vec<Line>,
    columns: Vec<Line>,
    /// Each pixel's lowest and highest R, G and B over the frames so far, a plane each.
    lo: [Vec<u8>; 3],
    hi: [Vec<u8>; 3],
    /// A frame's columns' lowest, highest and summed values (one plane at a time).
    column_lo: Vec<u8>,
    column_hi: Vec<u8>,
    column_sum: Vec<u32>,
    off: bool,
}

impl Bars {
    /// A sampled frame's R, G and B planes, `width * height` each.
    pub fn push(&mut self, planes: [&[u8]; 3], width: usize, height: usize) {
        if self.off || width == 0 || height == 0 || planes.iter().any(|p| p.len() < width * height)
        {
            self.off = true;
            return;
        }
        match self.size {
            None => {
                self.size = Some((width, height));
                self.rows = vec![Line::NEW; height];
                self.columns = vec![Line::NEW; width];
                self.lo = [(); 3].map(|_| vec![u8::MAX; width * height]);
                self.hi = [(); 3].map(|_| vec![0; width * height]);
            }
            Some(size) if size != (width, height) => {
                self.off = true;
                return;
            }
            Some(_) => {}
        }
        // Row by row, so that every loop runs over contiguous bytes (and vectorises).
        let n = width * height;
        let (w, h) = (width as u32, height as u32);
        for (c, plane) in planes.into_iter().enumerate() {
            let plane = &plane[..n];
            for (lo, &v) in self.lo[c].iter_mut().zip(plane) {
                *lo = (*lo).min(v);
            }
            for (hi, &v) in self.hi[c].iter_mut().zip(plane) {
                *hi = (*hi).max(v);
            }
            self.column_lo.clear();
            self.column_lo.resize(width, u8::MAX);
            self.column_hi.clear();
            self.column_hi.resize(width, 0);
            self.column_sum.clear();
            self.column_sum.resize(width, 0);
            for (row, line) in plane.chunks_exact(width).zip(&mut self.rows) {
                let lo = row.iter().fold(u8::MAX, |a, &v| a.min(v));
                let hi = row.iter().fold(0, |a, &v| a.max(v));
                let sum: u32 = row.iter().map(|&v| u32::from(v)).sum();
                line.push(c, lo, hi, (sum / w) as u8);
                for (m, &v) in self.column_lo.iter_mut().zip(row) {
                    *m = (*m).min(v);
                }
                for (m, &v) in self.column_hi.iter_mut().zip(row) {
                    *m = (*m).max(v);
                }
                for (m, &v) in self.column_sum.iter_mut().zip(row) {
                    *m += u32::from(v);
                }
            }
            let columns = self
                .column_lo
                .iter()
                .zip(&self.column_hi)
                .zip(&self.column_sum);
            for (line, ((&lo, &hi), &sum)) in self.columns.iter_mut().zip(columns) {
                line.push(c, lo, hi, (sum / h) as u8);
            }
        }
    }

    /// The share of the pixels at `at` (indices into the copy) that leave colour `bar` in
    /// some frame.
    fn activity(&self, bar: [u8; 3], at: impl Iterator<Item = usize>) -> f64 {
        let (mut active, mut n) = (0usize, 0usize);
        for i in at {
            n += 1;
            active += usize::from((0..3).any(|c| {
                bar[c].abs_diff(self.lo[c][i]) > FLAT_SPREAD
                    || bar[c].abs_diff(self.hi[c][i]) > FLAT_SPREAD
            }));
        }
        if n == 0 {
            0.0
        } else {
            active as f64 / n as f64
        }
    }

    /// The content of a `coded_width` x `coded_height` picture without its bars, when it has
    /// bars on both sides of either axis; `None` when it has none (or no frame was pushed, or
    /// its size changed).
    pub fn content(&self, coded_width: u32, coded_height: u32) -> Option<Crop> {
        let (w, h) = self.size.filter(|_| !self.off)?;
        let (mut top, mut bottom) = edges(&self.rows);
        let (mut left, mut right) = edges(&self.columns);
        // The content's first lines inside each bar must be busy along the content.
        let bar = if top > 0 {
            self.rows[0].colour()
        } else {
            self.columns[0].colour()
        };
        // (The first line may blend the bar with the content.)
        let busy = |a: f64, b: f64| a.max(b) >= MIN_EDGE_ACTIVITY;
        // An axis whose bars fail is given up, and the other is looked at again over the
        // content that leaves.
        loop {
            let row = |y: usize| self.activity(bar, (left..w - right).map(|x| y * w + x));
            let column = |x: usize| self.activity(bar, (top..h - bottom).map(|y| y * w + x));
            let rows_busy = top == 0
                || (busy(row(top), row(top + 1)) && busy(row(h - 1 - bottom), row(h - 2 - bottom)));
            let columns_busy = left == 0
                || (busy(column(left), column(left + 1))
                    && busy(column(w - 1 - right), column(w - 2 - right)));
            if rows_busy && columns_busy {
                break;
            }
            if !rows_busy {
                (top, bottom) = (0, 0);
            }
            if !columns_busy {
                (left, right) = (0, 0);
            }
        }
        if top + bottom == 0 && left + right == 0 {
            return None;
        }
        // Source pixels from the copy's lines, one more line taken on each barred side;
        // offsets and sizes even (chroma subsampling).
        let cut = |lines: usize, copy: usize, coded: u32| -> u32 {
            let lines = if lines > 0 { lines + 1 } else { 0 };
            let px = (lines as u64 * u64::from(coded)).div_ceil(copy as u64) as u32;
            px.next_multiple_of(2)
        };
        let (y0, y1) = (cut(top, h, coded_height), cut(bottom, h, coded_height));
        let (x0, x1) = (cut(left, w, coded_width), cut(right, w, coded_width));
        // Even sizes across bars; an axis without bars keeps its size, odd or not.
        let even = |size: u32, bars: usize| if bars > 0 { size & !1 } else { size };
        let width = even(coded_width.checked_sub(x0 + x1)?, left);
        let height = even(coded_height.checked_sub(y0 + y1)?, top);
        (width > 0 && height > 0).then_some(Crop {
            x: x0,
            y: y0,
            width,
            height,
        })
    }
}

/// Bar lines at the start and at the end of `lines`, when both sides have a bar of at least
/// [`MIN_BAR_SHARE`] of the lines in one colour and content lies between; else (0, 0). A bar
/// takes the nearly flat lines of its colour beside it (its edge).
fn edges(lines: &[Line]) -> (usize, usize) {
    let n = lines.len();
    let flat = |lines: &mut dyn Iterator<Item = &Line>| lines.take_while(|l| l.is_bar()).count();
    let (start, end) = (flat(&mut lines.iter()), flat(&mut lines.iter().rev()));
    let least = ((n as f64 * MIN_BAR_SHARE).ceil() as usize).max(1);
    if start < least || end < least || start + end >= n {
        return (0, 0);
    }
    let (a, b) = (lines[0].colour(), lines[n - 1].colour());
    if (0..3).any(|c| a[c].abs_diff(b[c]) > FLAT_SPREAD) {
        return (0, 0);
    }
    let start = start
        + lines[start..]
            .iter()
            .take_while(|l| l.is_edge_of(a))
            .count();
    let end = end
        + lines[..n - end]
            .iter()
            .rev()
            .take_while(|l| l.is_edge_of(b))
            .count();
    if start + end >= n {
        (0, 0)
    } else {
        (start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `w` x `h` frame of noise-free texture inside bars of `colour`, `top` rows and `left`
    /// columns on each side.
    fn frame(w: usize, h: usize, top: usize, left: usize, colour: u8, seed: u8) -> Vec<u8> {
        (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if y < top || y >= h - top || x < left || x >= w - left {
                    colour
                } else {
                    ((x * 37 + y * 11) as u8).wrapping_mul(seed | 1)
                }
            })
            .collect()
    }

    fn content_of(frames: &[Vec<u8>], w: usize, h: usize, coded: (u32, u32)) -> Option<Crop> {
        let mut bars = Bars::default();
        for f in frames {
            bars.push([f, f, f], w, h);
        }
        bars.content(coded.0, coded.1)
    }

    #[test]
    fn bars_on_both_sides_give_the_content_rounded_inward() {
        // 16:9 in 4:3: 640x480 coded, 256x192 copy, 24 bar rows of 192 on each side.
        let frames: Vec<Vec<u8>> = (1..4).map(|s| frame(256, 192, 24, 0, 16, s)).collect();
        let crop = content_of(&frames, 256, 192, (640, 480)).unwrap();
        assert_eq!((crop.x, crop.width), (0, 640));
        // 25 lines of 192 at 2.5 px each: 62.5, rounded up and to even.
        assert_eq!((crop.y, crop.height), (64, 352));
        // An odd width without bars keeps its size (no pillarbox read into it).
        let crop = content_of(&frames, 256, 192, (853, 480)).unwrap();
        assert_eq!((crop.x, crop.width, crop.y), (0, 853, 64));
        // Pillarbox, grey bars.
        let frames: Vec<Vec<u8>> = (1..4).map(|s| frame(256, 144, 0, 32, 128, s)).collect();
        let crop = content_of(&frames, 256, 144, (1920, 1080)).unwrap();
        assert_eq!((crop.y, crop.height), (0, 1080));
        assert_eq!((crop.x, crop.width), (248, 1424));
    }

    #[test]
    fn a_flat_area_on_one_side_a_flat_picture_and_bars_that_change_are_not_bars() {
        // Sky: flat rows at the top only.
        let mut sky = frame(256, 144, 20, 0, 200, 3);
        let n = sky.len();
        sky[n - 20 * 256..].copy_from_slice(&frame(256, 20, 0, 0, 0, 5)[..]);
        assert_eq!(content_of(&[sky], 256, 144, (1280, 720)), None);
        // A flat picture.
        assert_eq!(
            content_of(&[vec![0; 256 * 144]], 256, 144, (1280, 720)),
            None
        );
        // Bars whose colour changes from frame to frame (a fade in the picture's edge).
        let frames = [frame(256, 144, 20, 0, 16, 3), frame(256, 144, 20, 0, 90, 3)];
        assert_eq!(content_of(&frames, 256, 144, (1280, 720)), None);
        // Top and bottom of two colours.
        let mut two = frame(256, 144, 20, 0, 16, 3);
        two[..20 * 256].fill(235);
        assert_eq!(content_of(&[two], 256, 144, (1280, 720)), None);
        // A small subject on black (a title, a shape): flat all round, but not bars.
        let subject: Vec<u8> = (0..256 * 144usize)
            .map(|i| {
                let (x, y) = (i % 256, i / 256);
                let dx = (x as i32 - 128).abs();
                let dy = (y as i32 - 72).abs();
                if dx * 2 + dy < 40 {
                    (x * 37 + y * 11) as u8 | 64
                } else {
                    0
                }
            })
            .collect();
        assert_eq!(content_of(&[subject], 256, 144, (1280, 720)), None);
        // Bars of one line.
        assert_eq!(
            content_of(&[frame(256, 144, 1, 0, 16, 3)], 256, 144, (1280, 720)),
            None
        );
    }
}
