//! Picture quality measures on a small grey copy: brightness, sharpness, information.

use super::image::Gray;

/// Long side of the grey copy quality is measured on: fixed, so sharpness compares across
/// resolutions.
pub const QUALITY_SIDE: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Quality {
    /// Mean luma, 0-255.
    pub brightness: f64,
    pub brightness_p5: f64,
    pub brightness_p95: f64,
    /// Variance of the 4-neighbour Laplacian on the grey copy (higher is sharper).
    pub sharpness: f64,
    /// Shannon entropy of the luma histogram, bits (0-8; low means little information).
    pub entropy: f64,
    /// Mean absolute difference between colour channels, 0-255 (near 0: greyscale).
    pub colorfulness: f64,
}

impl Quality {
    pub fn is_grayscale(&self) -> bool {
        self.colorfulness < 2.0
    }
}

/// Measure a picture given as R, G and B planes (any size; it is reduced to
/// [`QUALITY_SIDE`]).
pub fn measure(planes: [&[u8]; 3], width: usize, height: usize) -> Quality {
    let gray = Gray::from_planes(planes, width, height).fit_long_side(QUALITY_SIDE);
    let [r, g, b] = planes;
    let n = r.len().min(g.len()).min(b.len());
    let colorfulness = if n == 0 {
        0.0
    } else {
        let sum: u64 = r
            .iter()
            .zip(g)
            .zip(b)
            .map(|((&r, &g), &b)| {
                u64::from(r.abs_diff(g)) + u64::from(g.abs_diff(b)) + u64::from(r.abs_diff(b))
            })
            .sum();
        sum as f64 / (3.0 * n as f64)
    };
    let hist = histogram(&gray);
    Quality {
        brightness: gray.mean(),
        brightness_p5: hist_percentile(&hist, gray.data.len(), 5.0),
        brightness_p95: hist_percentile(&hist, gray.data.len(), 95.0),
        sharpness: laplacian_variance(&gray),
        entropy: entropy(&gray),
        colorfulness,
    }
}

pub fn laplacian_variance(g: &Gray) -> f64 {
    let (w, h) = (g.width, g.height);
    if w < 3 || h < 3 {
        return 0.0;
    }
    let px = |x: usize, y: usize| f64::from(g.data[y * w + x]);
    let mut sum = 0.0;
    let mut sum_sq = 0.0;
    let mut n = 0.0;
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let l = px(x - 1, y) + px(x + 1, y) + px(x, y - 1) + px(x, y + 1) - 4.0 * px(x, y);
            sum += l;
            sum_sq += l * l;
            n += 1.0;
        }
    }
    let mean = sum / n;
    sum_sq / n - mean * mean
}

fn histogram(g: &Gray) -> [u64; 256] {
    let mut hist = [0u64; 256];
    for &v in &g.data {
        hist[v as usize] += 1;
    }
    hist
}

/// Percentile of 8-bit values from their histogram (nearest rank).
fn hist_percentile(hist: &[u64; 256], n: usize, p: f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let rank = ((p / 100.0) * (n - 1) as f64).round() as u64;
    let mut seen = 0;
    for (v, &c) in hist.iter().enumerate() {
        seen += c;
        if seen > rank {
            return v as f64;
        }
    }
    255.0
}

pub fn entropy(g: &Gray) -> f64 {
    let hist = histogram(g);
    let n = g.data.len() as f64;
    if n == 0.0 {
        return 0.0;
    }
    hist.iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Measure the picture whose pixel (x, y) is `f(x, y)`.
    fn measure_of(w: usize, h: usize, f: impl Fn(usize, usize) -> [u8; 3]) -> Quality {
        let mut planes = [Vec::new(), Vec::new(), Vec::new()];
        for y in 0..h {
            for x in 0..w {
                for (plane, v) in planes.iter_mut().zip(f(x, y)) {
                    plane.push(v);
                }
            }
        }
        let [r, g, b] = &planes;
        measure([r, g, b], w, h)
    }

    #[test]
    fn flat_grey_has_no_sharpness_entropy_or_colour() {
        let q = measure_of(64, 64, |_, _| [90, 90, 90]);
        assert!((q.brightness - 90.0).abs() < 1.0);
        assert_eq!(q.sharpness, 0.0);
        assert_eq!(q.entropy, 0.0);
        assert!(q.is_grayscale());
    }

    #[test]
    fn detail_is_sharper_than_a_blur() {
        let sharp = measure_of(128, 128, |x, y| {
            if (x / 2 + y / 2) % 2 == 0 {
                [0, 0, 0]
            } else {
                [255, 255, 255]
            }
        });
        let soft = measure_of(128, 128, |x, _| {
            let v = (x * 2) as u8;
            [v, v, v]
        });
        assert!(
            sharp.sharpness > 100.0 * soft.sharpness.max(1.0),
            "{} vs {}",
            sharp.sharpness,
            soft.sharpness
        );
        assert!(sharp.entropy > 0.9);
        let colour = measure_of(32, 32, |_, _| [200, 40, 40]);
        assert!(!colour.is_grayscale());
    }
}
