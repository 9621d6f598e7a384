//! Perceptual hashes: a 64-bit DCT hash of a grey image (as imagehash's `phash`), and
//! distances that ignore flips and 90-degree rotations.

use super::image::Gray;

const N: usize = 32;

/// 64-bit perceptual hash: resize to 32x32, 2-D DCT, the 8x8 lowest frequencies compared
/// with their median.
pub fn phash(gray: &Gray) -> u64 {
    let small = gray.resize_area(N, N);
    hash_of_32(&small.data)
}

fn dct_matrix() -> &'static [[f64; N]; 8] {
    static M: std::sync::OnceLock<[[f64; N]; 8]> = std::sync::OnceLock::new();
    M.get_or_init(|| {
        let mut m = [[0.0; N]; 8];
        for (u, row) in m.iter_mut().enumerate() {
            for (x, v) in row.iter_mut().enumerate() {
                *v = (std::f64::consts::PI * (2 * x + 1) as f64 * u as f64 / (2 * N) as f64).cos();
            }
        }
        m
    })
}

fn hash_of_32(px: &[u8]) -> u64 {
    let m = dct_matrix();
    // Rows first: tmp[y][u] = sum_x px[y][x] * m[u][x]
    let mut tmp = [[0.0f64; 8]; N];
    for (y, t) in tmp.iter_mut().enumerate() {
        let row = &px[y * N..(y + 1) * N];
        for (u, out) in t.iter_mut().enumerate() {
            *out = row.iter().zip(&m[u]).map(|(&p, &c)| f64::from(p) * c).sum();
        }
    }
    let mut coeffs = [0.0f64; 64];
    for v in 0..8 {
        for u in 0..8 {
            coeffs[v * 8 + u] = (0..N).map(|y| tmp[y][u] * m[v][y]).sum();
        }
    }
    let mut sorted = coeffs;
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[31] + sorted[32]) / 2.0;
    coeffs.iter().enumerate().fold(
        0u64,
        |h, (i, &c)| if c > median { h | (1 << (63 - i)) } else { h },
    )
}

/// Hashes of the 8 flips and 90-degree rotations of the image, the first being the image
/// as given.
pub fn dihedral_hashes(gray: &Gray) -> [u64; 8] {
    let small = gray.resize_area(N, N);
    let mut out = [0u64; 8];
    for (i, o) in (1u16..=8).enumerate() {
        out[i] = hash_of_32(&small.oriented(o).data);
    }
    out
}

pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Smallest distance between `a` and any flip or rotation of the image behind `b_variants`.
pub fn dihedral_distance(a: u64, b_variants: &[u64; 8]) -> u32 {
    b_variants
        .iter()
        .map(|&b| hamming(a, b))
        .min()
        .unwrap_or(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(w: usize, h: usize, f: impl Fn(usize, usize) -> u8) -> Gray {
        let mut data = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                data.push(f(x, y));
            }
        }
        Gray {
            width: w,
            height: h,
            data,
        }
    }

    #[test]
    fn similar_images_hash_close_and_different_ones_far() {
        let a = pattern(200, 150, |x, y| ((x * 3 + y * 5) % 256) as u8);
        let brighter = pattern(200, 150, |x, y| {
            (((x * 3 + y * 5) % 256) as u8).saturating_add(10)
        });
        let b = pattern(
            200,
            150,
            |x, y| if (x / 20 + y / 20) % 2 == 0 { 30 } else { 220 },
        );
        assert!(hamming(phash(&a), phash(&brighter)) <= 4);
        assert!(hamming(phash(&a), phash(&b)) > 16);
    }

    #[test]
    fn rotation_is_seen_through_dihedral_variants() {
        let a = pattern(160, 120, |x, y| ((x * x / 50 + y * 2) % 256) as u8);
        let rotated = a.oriented(6);
        assert!(hamming(phash(&a), phash(&rotated)) > 10);
        assert!(dihedral_distance(phash(&rotated), &dihedral_hashes(&a)) <= 2);
    }
}
