//! Still pictures: quality and the upright grey copy, and structural checks of the
//! file's bytes that catch truncation decoders conceal.

use super::image::Gray;
use super::quality::{self, Quality};

/// Quality of a decoded picture (R, G and B planes) and its upright grey copy (EXIF
/// orientation applied), which the hashes are taken from.
pub fn analyse_picture(
    planes: [&[u8]; 3],
    width: usize,
    height: usize,
    orientation: Option<u16>,
) -> (Quality, Gray) {
    let q = quality::measure(planes, width, height);
    let upright = Gray::from_planes(planes, width, height).oriented(orientation.unwrap_or(1));
    (q, upright)
}

/// A structural problem in an image file's bytes, in words; `None` when it is complete.
/// Checks JPEG (segments to the end-of-image marker), PNG (chunks with CRCs to IEND), GIF
/// (blocks to the trailer), WebP (RIFF size) and BMP (declared size).
pub fn structure_error(bytes: &[u8]) -> Option<String> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        jpeg(bytes)
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        png(bytes)
    } else if bytes.starts_with(b"GIF8") {
        gif(bytes)
    } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        let declared = u32::from_le_bytes(bytes[4..8].try_into().ok()?) as usize + 8;
        (bytes.len() < declared).then(|| {
            format!(
                "WebP file is truncated: {} of {declared} bytes",
                bytes.len()
            )
        })
    } else if bytes.starts_with(b"BM") && bytes.len() >= 14 {
        let declared = u32::from_le_bytes(bytes[2..6].try_into().ok()?) as usize;
        (declared > bytes.len() && declared < 1 << 31)
            .then(|| format!("BMP file is truncated: {} of {declared} bytes", bytes.len()))
    } else {
        None
    }
}

fn jpeg(b: &[u8]) -> Option<String> {
    let mut pos = 2;
    // Marker segments up to each start of scan, then entropy-coded data to the next marker.
    loop {
        // Skip fill bytes.
        while b.get(pos) == Some(&0xFF) && b.get(pos + 1) == Some(&0xFF) {
            pos += 1;
        }
        let (Some(&0xFF), Some(&marker)) = (b.get(pos), b.get(pos + 1)) else {
            // A damaged segment length: resynchronise at the next marker, as decoders do.
            match next_marker(b, pos) {
                Some(p) => {
                    pos = p;
                    continue;
                }
                None => {
                    return Some(format!(
                        "JPEG is truncated or damaged: no marker after byte {pos} of {}",
                        b.len()
                    ));
                }
            }
        };
        pos += 2;
        match marker {
            0xD9 => return None,
            0xD0..=0xD7 | 0x01 => continue,
            _ => {}
        }
        let Some(len) = b
            .get(pos..pos + 2)
            .map(|l| u16::from_be_bytes([l[0], l[1]]) as usize)
        else {
            return Some("JPEG is truncated inside a segment header".into());
        };
        pos += len;
        if pos > b.len() {
            return Some(format!(
                "JPEG is truncated: a segment runs past the end ({} bytes)",
                b.len()
            ));
        }
        if marker == 0xDA {
            // Entropy-coded data: ends at a marker that is not a stuffed 0x00 or a restart.
            loop {
                let Some(off) = b[pos..].iter().position(|&x| x == 0xFF) else {
                    return Some(
                        "JPEG is truncated: image data ends without an end-of-image marker".into(),
                    );
                };
                pos += off;
                match b.get(pos + 1) {
                    None => {
                        return Some(
                            "JPEG is truncated: image data ends without an end-of-image marker"
                                .into(),
                        );
                    }
                    Some(0x00) | Some(0xD0..=0xD7) | Some(0xFF) => {
                        pos += if b[pos + 1] == 0xFF { 1 } else { 2 }
                    }
                    Some(_) => break,
                }
            }
        }
    }
}

/// Position of the next segment marker (0xFF then 0xC0-0xFE) at or after `from`.
fn next_marker(b: &[u8], from: usize) -> Option<usize> {
    (from..b.len().saturating_sub(1)).find(|&p| b[p] == 0xFF && (0xC0..=0xFE).contains(&b[p + 1]))
}

fn png(b: &[u8]) -> Option<String> {
    let mut pos = 8;
    loop {
        let Some(head) = b.get(pos..pos + 8) else {
            return Some("PNG is truncated: it ends before the IEND chunk".into());
        };
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = &head[4..8];
        let Some(body) = b.get(pos + 4..pos + 8 + len) else {
            return Some(format!(
                "PNG is truncated: chunk {} runs past the end",
                String::from_utf8_lossy(kind)
            ));
        };
        let Some(crc) = b.get(pos + 8 + len..pos + 12 + len) else {
            return Some("PNG is truncated: a chunk's checksum is missing".into());
        };
        if crc32(body) != u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]) {
            return Some(format!(
                "PNG chunk {} at byte {pos} fails its checksum (damaged data)",
                String::from_utf8_lossy(kind)
            ));
        }
        if kind == b"IEND" {
            return None;
        }
        pos += 12 + len;
    }
}

fn gif(b: &[u8]) -> Option<String> {
    let truncated = || Some("GIF is truncated: it ends before the trailer".to_string());
    let flags = *b.get(10)?;
    let mut pos = 13;
    if flags & 0x80 != 0 {
        pos += 3 * (1usize << ((flags & 0x07) + 1));
    }
    let skip_sub_blocks = |mut p: usize| -> Option<usize> {
        loop {
            let len = *b.get(p)? as usize;
            p += 1 + len;
            if len == 0 {
                return Some(p);
            }
        }
    };
    loop {
        match b.get(pos) {
            Some(0x3B) => return None,
            Some(0x2C) => {
                let Some(&f) = b.get(pos + 9) else {
                    return truncated();
                };
                pos += 10;
                if f & 0x80 != 0 {
                    pos += 3 * (1usize << ((f & 0x07) + 1));
                }
                match skip_sub_blocks(pos + 1) {
                    Some(p) => pos = p,
                    None => return truncated(),
                }
            }
            Some(0x21) => match skip_sub_blocks(pos + 2) {
                Some(p) => pos = p,
                None => return truncated(),
            },
            Some(x) => {
                return Some(format!(
                    "GIF is damaged: unexpected block 0x{x:02X} at byte {pos}"
                ));
            }
            None => return truncated(),
        }
    }
}

fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    !data.iter().fold(!0u32, |c, &x| {
        table[((c ^ u32::from(x)) & 0xFF) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_png_reference() {
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn a_minimal_jpeg_stream_is_complete_and_its_prefix_is_not() {
        // SOI, APP0 (len 4), SOS (len 3 + 1 byte), data with a stuffed FF00, EOI.
        let jpg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 1, 2, 0xFF, 0xDA, 0, 3, 9, 0x12, 0xFF, 0x00, 0x34, 0xFF,
            0xD9,
        ];
        assert_eq!(structure_error(&jpg), None);
        assert!(structure_error(&jpg[..16]).is_some());
    }
}
