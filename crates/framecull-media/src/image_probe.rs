//! Image metadata from headers: size, EXIF orientation and frame count, without decoding pixels.

use std::io::Cursor;
use std::path::Path;

use crate::sniff::ImageFormat;
use crate::source::{Opened, Source};
use framecull_model::{MediaInfo, MediaKind, Probe};

/// Bytes read up front; enough for the headers of nearly every image, EXIF included.
const HEAD_LEN: u64 = 128 * 1024;

/// Larger sides than this (over a million pixels) come from damaged headers.
const MAX_SIDE: u32 = 1 << 20;

/// Why an image's headers give no usable metadata (the probe's error reason).
#[derive(Debug, thiserror::Error)]
pub enum ImageProbeError {
    #[error("cannot open: {0}")]
    Open(#[source] std::io::Error),
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    #[error("SGI header is truncated")]
    SgiTruncated,
    #[error("image width out of range")]
    WidthOutOfRange,
    #[error("image height out of range")]
    HeightOutOfRange,
    #[error("{} header is not readable (unknown variant or damaged header)", .0.name().to_uppercase())]
    Unreadable(ImageFormat),
    #[error("{} header is damaged or the file ends before the image size", .0.name().to_uppercase())]
    TruncatedHeader(ImageFormat),
    #[error("cannot read image header: {0}")]
    Header(#[source] std::io::Error),
    #[error("image header gives a size of {width}x{height}")]
    ZeroSize { width: u32, height: u32 },
    #[error("image header gives an implausible size of {width}x{height} (damaged header)")]
    ImplausibleSize { width: u32, height: u32 },
}

/// Probe an image whose format the signature already told.
pub fn probe_image(source: &Opened, format: ImageFormat) -> Probe {
    match probe_image_inner(source, format) {
        Ok(info) => Probe::ok(MediaKind::Image, info),
        Err(reason) => Probe::failed(
            MediaKind::Image,
            framecull_model::ItemStatus::Error,
            reason.to_string(),
        ),
    }
}

fn read_prefix(source: &Opened, limit: u64) -> Result<(Vec<u8>, u64), ImageProbeError> {
    let len = source.size_bytes().map_err(ImageProbeError::Open)?;
    let buf = source.read_prefix(limit).map_err(ImageProbeError::Read)?;
    Ok((buf, len))
}

fn probe_image_inner(source: &Opened, format: ImageFormat) -> Result<MediaInfo, ImageProbeError> {
    let (buf, file_len) = read_prefix(source, HEAD_LEN)?;
    header_info(format, buf, file_len, &mut || {
        Ok(read_prefix(source, u64::MAX)?.0)
    })
}

/// What [`probe_image`] reads from the header of an image held in memory (`bytes` is the
/// whole file); why not when the header is not readable.
pub fn image_header(format: ImageFormat, bytes: &[u8]) -> Result<MediaInfo, ImageProbeError> {
    let head = bytes[..bytes.len().min(HEAD_LEN as usize)].to_vec();
    header_info(format, head, bytes.len() as u64, &mut || Ok(bytes.to_vec()))
}

/// The header's information from `buf` (the file's first bytes, of `file_len`), reading the
/// whole file with `read_all` when the header needs more.
fn header_info(
    format: ImageFormat,
    mut buf: Vec<u8>,
    file_len: u64,
    read_all: &mut dyn FnMut() -> Result<Vec<u8>, ImageProbeError>,
) -> Result<MediaInfo, ImageProbeError> {
    // Formats whose frame count needs the whole file, and headers that sit past the prefix.
    let needs_all = matches!(format, ImageFormat::Gif)
        || (format == ImageFormat::Webp && webp_is_animated(&buf));
    let (width, height) = match dimensions(format, &buf) {
        Ok(d) if !needs_all => d,
        _ if (buf.len() as u64) < file_len => {
            buf = read_all()?;
            dimensions(format, &buf)?
        }
        other => other?,
    };
    if width == 0 || height == 0 {
        return Err(ImageProbeError::ZeroSize { width, height });
    }
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(ImageProbeError::ImplausibleSize { width, height });
    }
    let frames = match format {
        ImageFormat::Gif => gif_frame_count(&buf),
        ImageFormat::Png => apng_frame_count(&buf),
        ImageFormat::Webp => webp_frame_count(&buf),
        ImageFormat::Jpeg => mpo_image_count(&buf),
        _ => None,
    }
    .unwrap_or(1);
    let exif_orientation = match format {
        ImageFormat::Jpeg
        | ImageFormat::Tiff
        | ImageFormat::Heif
        | ImageFormat::Avif
        | ImageFormat::Png => exif_orientation(&buf),
        ImageFormat::Webp => exif_orientation(&buf).or_else(|| webp_exif_orientation(&buf)),
        _ => None,
    };
    let name = if format == ImageFormat::Jpeg && frames > 1 {
        "mpo"
    } else {
        format.name()
    };
    Ok(MediaInfo {
        container: Some(name.to_string()),
        codec: Some(name.to_string()),
        width: Some(width),
        height: Some(height),
        frame_count: Some(i64::from(frames)),
        exif_orientation,
        ..MediaInfo::default()
    })
}

fn dimensions(format: ImageFormat, buf: &[u8]) -> Result<(u32, u32), ImageProbeError> {
    if format == ImageFormat::Sgi {
        // SGI: magic, storage, bpc, dimension (u16 BE each), then xsize, ysize.
        let w = buf.get(6..8).ok_or(ImageProbeError::SgiTruncated)?;
        let h = buf.get(8..10).ok_or(ImageProbeError::SgiTruncated)?;
        return Ok((
            u32::from(u16::from_be_bytes([w[0], w[1]])),
            u32::from(u16::from_be_bytes([h[0], h[1]])),
        ));
    }
    match imagesize::blob_size(buf) {
        Ok(size) => Ok((
            u32::try_from(size.width).map_err(|_| ImageProbeError::WidthOutOfRange)?,
            u32::try_from(size.height).map_err(|_| ImageProbeError::HeightOutOfRange)?,
        )),
        Err(imagesize::ImageError::NotSupported) => Err(ImageProbeError::Unreadable(format)),
        Err(imagesize::ImageError::CorruptedImage) => Err(ImageProbeError::TruncatedHeader(format)),
        Err(imagesize::ImageError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(ImageProbeError::TruncatedHeader(format))
        }
        Err(imagesize::ImageError::IoError(e)) => Err(ImageProbeError::Header(e)),
    }
}

/// EXIF orientation of an image file, read from its first bytes.
pub fn exif_orientation_of(path: &Path) -> Option<u16> {
    exif_orientation_in(&Source::from(path).open())
}

/// EXIF orientation of an opened image, read from its first bytes.
pub fn exif_orientation_in(source: &Opened) -> Option<u16> {
    let (buf, _) = read_prefix(source, HEAD_LEN).ok()?;
    exif_orientation(&buf).or_else(|| webp_exif_orientation(&buf))
}

/// Raw EXIF orientation tag, if the file carries EXIF and the tag.
fn exif_orientation(buf: &[u8]) -> Option<u16> {
    let exif = exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(buf))
        .or_else(|e| e.distill_partial_result(|_| {}))
        .ok()?;
    let field = exif.get_field(exif::Tag::Orientation, exif::In::PRIMARY)?;
    field.value.get_uint(0).and_then(|v| u16::try_from(v).ok())
}

/// WebP `EXIF` chunks written with a JPEG-style `Exif\0\0` prefix (Pillow, some cameras),
/// which strict readers reject.
fn webp_exif_orientation(buf: &[u8]) -> Option<u16> {
    let mut pos = 12;
    while pos + 8 <= buf.len() {
        let len = u32::from_le_bytes(buf[pos + 4..pos + 8].try_into().ok()?) as usize;
        if &buf[pos..pos + 4] == b"EXIF" {
            let data = buf.get(pos + 8..pos + 8 + len)?;
            let tiff = data.strip_prefix(b"Exif\0\0").unwrap_or(data);
            let exif = exif::Reader::new().read_raw(tiff.to_vec()).ok()?;
            let field = exif.get_field(exif::Tag::Orientation, exif::In::PRIMARY)?;
            return field.value.get_uint(0).and_then(|v| u16::try_from(v).ok());
        }
        pos = pos.checked_add(8 + len + (len & 1))?;
    }
    None
}

/// Number of images in a GIF, counted by walking its blocks (no LZW decoding).
fn gif_frame_count(buf: &[u8]) -> Option<u32> {
    let mut pos = 13;
    let flags = *buf.get(10)?;
    if flags & 0x80 != 0 {
        pos += 3 * (1usize << ((flags & 0x07) + 1));
    }
    let mut frames = 0u32;
    let skip_sub_blocks = |mut p: usize| -> Option<usize> {
        loop {
            let len = *buf.get(p)? as usize;
            p += 1;
            if len == 0 {
                return Some(p);
            }
            p += len;
        }
    };
    loop {
        match buf.get(pos) {
            Some(0x2C) => {
                frames += 1;
                let flags = *buf.get(pos + 9)?;
                pos += 10;
                if flags & 0x80 != 0 {
                    pos += 3 * (1usize << ((flags & 0x07) + 1));
                }
                pos += 1; // LZW minimum code size
                match skip_sub_blocks(pos) {
                    Some(p) => pos = p,
                    None => break,
                }
            }
            Some(0x21) => match skip_sub_blocks(pos + 2) {
                Some(p) => pos = p,
                None => break,
            },
            _ => break, // 0x3B trailer, or a truncated file
        }
    }
    (frames > 0).then_some(frames)
}

/// Frame count of an animated PNG (`acTL` before the first `IDAT`).
fn apng_frame_count(buf: &[u8]) -> Option<u32> {
    let mut pos = 8;
    while pos + 8 <= buf.len() {
        let len = u32::from_be_bytes(buf[pos..pos + 4].try_into().ok()?) as usize;
        let kind = &buf[pos + 4..pos + 8];
        if kind == b"acTL" {
            // Its frame count, where the chunk holds one: an `acTL` shorter than its 8 bytes,
            // or one that counts no frame (the spec forbids 0), says nothing.
            if len < 8 {
                return None;
            }
            let data = buf.get(pos + 8..pos + 12)?;
            return Some(u32::from_be_bytes(data.try_into().ok()?)).filter(|&n| n > 0);
        }
        if kind == b"IDAT" {
            return None;
        }
        pos = pos.checked_add(12 + len)?;
    }
    None
}

fn webp_is_animated(buf: &[u8]) -> bool {
    buf.get(12..16) == Some(b"VP8X") && buf.get(20).is_some_and(|f| f & 0x02 != 0)
}

/// Frame count of an animated WebP (`ANMF` chunks).
fn webp_frame_count(buf: &[u8]) -> Option<u32> {
    if !webp_is_animated(buf) {
        return None;
    }
    let mut pos = 12;
    let mut frames = 0;
    while pos + 8 <= buf.len() {
        let len = u32::from_le_bytes(buf[pos + 4..pos + 8].try_into().ok()?) as usize;
        if &buf[pos..pos + 4] == b"ANMF" {
            frames += 1;
        }
        pos = pos.checked_add(8 + len + (len & 1))?;
    }
    (frames > 0).then_some(frames)
}

/// Number of images in a JPEG with a Multi-Picture Format index (MPO), from APP2 `MPF`.
fn mpo_image_count(buf: &[u8]) -> Option<u32> {
    let mut pos = 2;
    while pos + 4 <= buf.len() {
        if buf[pos] != 0xFF {
            return None;
        }
        let marker = buf[pos + 1];
        if marker == 0xDA || marker == 0xD9 {
            return None; // start of scan: no MPF before the image data
        }
        let len = u16::from_be_bytes([buf[pos + 2], buf[pos + 3]]) as usize;
        let body = buf.get(pos + 4..pos + 2 + len)?;
        if marker == 0xE2 && body.starts_with(b"MPF\0") {
            return mpf_number_of_images(&body[4..]);
        }
        pos += 2 + len;
    }
    None
}

/// Reads tag 0xB001 (NumberOfImages) from an MPF TIFF-style index.
fn mpf_number_of_images(tiff: &[u8]) -> Option<u32> {
    let le = match tiff.get(0..2)? {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let u16_at = |p: usize| -> Option<u16> {
        let b: [u8; 2] = tiff.get(p..p + 2)?.try_into().ok()?;
        Some(if le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    };
    let u32_at = |p: usize| -> Option<u32> {
        let b: [u8; 4] = tiff.get(p..p + 4)?.try_into().ok()?;
        Some(if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let ifd = u32_at(4)? as usize;
    let entries = u16_at(ifd)? as usize;
    (0..entries).find_map(|i| {
        let e = ifd + 2 + i * 12;
        (u16_at(e)? == 0xB001).then(|| u32_at(e + 8)).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gif_frames_are_counted_without_decoding() {
        // Header, logical screen descriptor (no global table), two 1x1 images, trailer.
        let mut gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00".to_vec();
        for _ in 0..2 {
            gif.extend_from_slice(&[0x21, 0xF9, 4, 0, 0, 0, 0, 0]); // graphic control extension
            gif.extend_from_slice(&[0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x4C, 0x01, 0]);
        }
        gif.push(0x3B);
        assert_eq!(gif_frame_count(&gif), Some(2));
        assert_eq!(gif_frame_count(&gif[..20]), None);
    }
}
