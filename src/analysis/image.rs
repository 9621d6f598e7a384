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
        if self.width.is_multiple_of(w) && self.height.is_multiple_of(h) {
            return self.resize_box(self.width / w, self.height / h);
        }
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

    /// Average `fx` x `fy` blocks (integer factors).
    fn resize_box(&self, fx: usize, fy: usize) -> Gray {
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

/// OpenCV's fixed-point tables for 8-bit RGB to HSV (`hsv_shift` = 12): results are
/// bit-identical to `cv2.cvtColor(.., COLOR_RGB2HSV)`.
const HSV_SHIFT: u32 = 12;

fn hsv_tables() -> &'static ([i32; 256], [i32; 256]) {
    static TABLES: std::sync::OnceLock<([i32; 256], [i32; 256])> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let mut sdiv = [0i32; 256];
        let mut hdiv = [0i32; 256];
        for i in 1..256 {
            sdiv[i] = ((255u32 << HSV_SHIFT) as f64 / i as f64).round() as i32;
            hdiv[i] = ((180u32 << HSV_SHIFT) as f64 / (6.0 * i as f64)).round() as i32;
        }
        (sdiv, hdiv)
    })
}

impl Hsv {
    pub fn from_rgb(rgb: &[u8]) -> Hsv {
        let n = rgb.len() / 3;
        let (sdiv, hdiv) = hsv_tables();
        let round = 1 << (HSV_SHIFT - 1);
        let mut out = Hsv {
            h: vec![0; n],
            s: vec![0; n],
            v: vec![0; n],
        };
        let pixels = rgb
            .chunks_exact(3)
            .zip(out.h.iter_mut().zip(out.s.iter_mut().zip(out.v.iter_mut())));
        for (p, (ho, (so, vo))) in pixels {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            let v = r.max(g).max(b);
            let diff = v - r.min(g).min(b);
            let s = (diff * sdiv[v as usize] + round) >> HSV_SHIFT;
            let h = if v == r {
                g - b
            } else if v == g {
                b - r + 2 * diff
            } else {
                r - g + 4 * diff
            };
            let h = (h * hdiv[diff as usize] + round) >> HSV_SHIFT;
            *ho = (h + if h < 0 { 180 } else { 0 }) as u8;
            *so = s as u8;
            *vo = v as u8;
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
            // u32 partial sums over chunks vectorise well and cannot overflow (4096 x 255).
            let sum: u64 = a
                .chunks(4096)
                .zip(b.chunks(4096))
                .map(|(x, y)| {
                    u64::from(
                        x.iter()
                            .zip(y)
                            .map(|(&p, &q)| u32::from(p.abs_diff(q)))
                            .sum::<u32>(),
                    )
                })
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
