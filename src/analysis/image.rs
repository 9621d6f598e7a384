//! Small grey images and the pixel operations the analyses share.

/// An 8-bit single-channel image, row-major, no padding.
#[derive(Debug, Clone, PartialEq)]
pub struct Gray {
    pub width: usize,
    pub height: usize,
    pub data: Vec<u8>,
}

impl Gray {
    /// Luma (BT.601 weights) of packed RGB24.
    pub fn from_rgb(rgb: &[u8], width: usize, height: usize) -> Gray {
        let data = rgb
            .chunks_exact(3)
            .take(width * height)
            .map(|p| {
                ((77 * u32::from(p[0]) + 150 * u32::from(p[1]) + 29 * u32::from(p[2]) + 128) >> 8)
                    as u8
            })
            .collect();
        Gray {
            width,
            height,
            data,
        }
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
        let sx = self.width as f64 / w as f64;
        let sy = self.height as f64 / h as f64;
        let mut data = Vec::with_capacity(w * h);
        for oy in 0..h {
            let (y0, y1) = (oy as f64 * sy, (oy + 1) as f64 * sy);
            for ox in 0..w {
                let (x0, x1) = (ox as f64 * sx, (ox + 1) as f64 * sx);
                let mut sum = 0.0;
                let mut area = 0.0;
                let mut y = y0.floor() as usize;
                while (y as f64) < y1 && y < self.height {
                    let wy = (y1.min(y as f64 + 1.0) - y0.max(y as f64)).max(0.0);
                    let mut x = x0.floor() as usize;
                    while (x as f64) < x1 && x < self.width {
                        let wx = (x1.min(x as f64 + 1.0) - x0.max(x as f64)).max(0.0);
                        sum += f64::from(self.data[y * self.width + x]) * wx * wy;
                        area += wx * wy;
                        x += 1;
                    }
                    y += 1;
                }
                data.push(if area > 0.0 {
                    (sum / area).round() as u8
                } else {
                    0
                });
            }
        }
        Gray {
            width: w,
            height: h,
            data,
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
        let (w, h) = (self.width, self.height);
        let transposed = matches!(orientation, 5..=8);
        let (ow, oh) = if transposed { (h, w) } else { (w, h) };
        let mut data = vec![0u8; w * h];
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
                data[y * ow + x] = self.data[sy * w + sx];
            }
        }
        Gray {
            width: ow,
            height: oh,
            data,
        }
    }
}

/// OpenCV-compatible 8-bit HSV planes (H in 0..180, S and V in 0..=255).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hsv {
    pub h: Vec<u8>,
    pub s: Vec<u8>,
    pub v: Vec<u8>,
}

impl Hsv {
    pub fn from_rgb(rgb: &[u8]) -> Hsv {
        let n = rgb.len() / 3;
        let mut out = Hsv {
            h: Vec::with_capacity(n),
            s: Vec::with_capacity(n),
            v: Vec::with_capacity(n),
        };
        for p in rgb.chunks_exact(3) {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            let v = r.max(g).max(b);
            let min = r.min(g).min(b);
            let delta = v - min;
            let s = if v == 0 { 0 } else { (255 * delta + v / 2) / v };
            let h = if delta == 0 {
                0.0
            } else if v == r {
                60.0 * f64::from(g - b) / f64::from(delta)
            } else if v == g {
                120.0 + 60.0 * f64::from(b - r) / f64::from(delta)
            } else {
                240.0 + 60.0 * f64::from(r - g) / f64::from(delta)
            };
            let h = if h < 0.0 { h + 360.0 } else { h };
            out.h.push(((h / 2.0).round() as u32 % 180) as u8);
            out.s.push(s as u8);
            out.v.push(v as u8);
        }
        out
    }

    /// PySceneDetect's ContentDetector score: the mean absolute change of hue, saturation
    /// and value, averaged over the three.
    pub fn content_distance(&self, other: &Hsv) -> f64 {
        let mean_abs = |a: &[u8], b: &[u8]| -> f64 {
            if a.is_empty() || a.len() != b.len() {
                return 0.0;
            }
            let sum: u64 = a
                .iter()
                .zip(b)
                .map(|(&x, &y)| u64::from(x.abs_diff(y)))
                .sum();
            sum as f64 / a.len() as f64
        };
        (mean_abs(&self.h, &other.h) + mean_abs(&self.s, &other.s) + mean_abs(&self.v, &other.v))
            / 3.0
    }
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
mod tests {
    use super::*;

    #[test]
    fn hsv_matches_opencv_conventions() {
        let hsv = Hsv::from_rgb(&[255, 0, 0, 0, 255, 0, 0, 0, 255, 128, 128, 128]);
        assert_eq!(hsv.h, vec![0, 60, 120, 0]);
        assert_eq!(hsv.s, vec![255, 255, 255, 0]);
        assert_eq!(hsv.v, vec![255, 255, 255, 128]);
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
