//! A decoded frame copied into the reader's packed picture: 8-bit 4:2:0 as it is (or
//! referenced), deeper or other layouts converted to 4:2:0, RGB-like formats to RGB.

use ff::ffi;
use ff::format::Pixel;
use ff::software::scaling;
use ffmpeg_next as ff;

use super::{ReadError, VideoReader};
use crate::picture::{DecodedPlanes, Frame, FrameFormat, Matrix, Range};

impl VideoReader {
    /// Copy a decoded frame into a packed picture, converting formats other than 8-bit
    /// YUV 4:2:0 (to 4:2:0, or to RGB for RGB, grey and palette pictures).
    ///
    /// One function: it runs for every frame handed out, and its two paths (4:2:0 copied or
    /// rounded, other layouts through swscale) share the size, format, matrix and range read
    /// at its top and the recycled buffer they fill.
    pub(super) fn convert(
        &mut self,
        frame: &ff::frame::Video,
        index: usize,
    ) -> Result<Frame, ReadError> {
        let pts = self.frames.pts[index];
        let (w, h, format) = (frame.width(), frame.height(), frame.format());
        let full_range = matches!(format, Pixel::YUVJ420P | Pixel::YUVJ422P | Pixel::YUVJ444P)
            || frame.color_range() == ff::color::Range::JPEG;
        let matrix = self
            .matrix
            .unwrap_or_else(|| Matrix::of_stream(frame.color_space().name(), h, self.matrix_guess));
        // 4:2:0 at 8 bits is copied (or, with zero copy, referenced); at 10 and 12 bits
        // (HEVC, VP9, AV1) rounded to 8 bits here, plane by plane: faster than swscale, and
        // exact (no dithering).
        let dropped_bits = match format {
            Pixel::YUV420P | Pixel::YUVJ420P => Some(0),
            Pixel::YUV420P10LE => Some(2),
            Pixel::YUV420P12LE => Some(4),
            _ => None,
        };
        if let Some(shift) = dropped_bits {
            let referenced = (shift == 0 && self.zero_copy)
                .then(|| DecodedPlanes::reference(frame))
                .flatten();
            let mut data = self.spare.pop().unwrap_or_default();
            data.clear();
            if referenced.is_none() {
                let (cw, ch) = (w.div_ceil(2) as usize, h.div_ceil(2) as usize);
                data.reserve(w as usize * h as usize + 2 * cw * ch);
                for (plane, width, rows) in [(0, w as usize, h as usize), (1, cw, ch), (2, cw, ch)]
                {
                    append_plane(frame, plane, width, rows, shift, &mut data);
                }
            }
            return Ok(Frame {
                width: w,
                height: h,
                format: FrameFormat::Yuv420,
                matrix,
                range: if full_range {
                    Range::Full
                } else {
                    Range::Limited
                },
                data,
                pts,
                index,
                decoded: referenced.map(std::sync::Arc::new),
            });
        }
        let to_rgb = is_rgb_like(format);
        let target = if to_rgb { Pixel::RGB24 } else { Pixel::YUV420P };
        let rebuild = !matches!(&self.scaler, Some((_, f, sw, sh, t)) if *f == format && *sw == w && *sh == h && *t == target);
        if rebuild {
            let ctx = scaling::Context::get(format, w, h, target, w, h, scaling::Flags::BILINEAR)
                .map_err(|e| ReadError::Convert {
                format: format!("{format:?}"),
                width: w,
                height: h,
                message: e.to_string(),
            })?;
            self.scaler = Some((ctx, format, w, h, target));
            self.converted = None;
        }
        let Some((scaler, ..)) = self.scaler.as_mut() else {
            unreachable!("the scaler was just built");
        };
        let out = self
            .converted
            .get_or_insert_with(|| ff::frame::Video::new(target, w, h));
        scaler.run(frame, out).map_err(|e| ReadError::Convert {
            format: format!("{format:?}"),
            width: w,
            height: h,
            message: e.to_string(),
        })?;
        let mut data = self.spare.pop().unwrap_or_default();
        data.clear();
        if to_rgb {
            append_plane(out, 0, 3 * w as usize, h as usize, 0, &mut data);
        } else {
            let (cw, ch) = (w.div_ceil(2) as usize, h.div_ceil(2) as usize);
            for (plane, width, rows) in [(0, w as usize, h as usize), (1, cw, ch), (2, cw, ch)] {
                append_plane(out, plane, width, rows, 0, &mut data);
            }
        }
        // swscale writes limited-range YUV (its default) from any input.
        Ok(Frame {
            width: w,
            height: h,
            format: if to_rgb {
                FrameFormat::Rgb
            } else {
                FrameFormat::Yuv420
            },
            matrix,
            range: if to_rgb { Range::Full } else { Range::Limited },
            data,
            pts,
            index,
            decoded: None,
        })
    }
}

fn is_rgb_like(format: Pixel) -> bool {
    // SAFETY: av_pix_fmt_desc_get returns a pointer to a static descriptor or null.
    let desc = unsafe { ffi::av_pix_fmt_desc_get(format.into()) };
    if desc.is_null() {
        return true;
    }
    // SAFETY: non-null descriptors are valid for the program's lifetime.
    let (flags, components) = unsafe { ((*desc).flags, (*desc).nb_components) };
    let rgb = flags & (ffi::AV_PIX_FMT_FLAG_RGB as u64) != 0;
    let pal = flags & (ffi::AV_PIX_FMT_FLAG_PAL as u64) != 0;
    rgb || pal || components < 3
}

/// Append `rows` rows of plane `plane`, `width` samples each: bytes as they are
/// (`shift == 0`), or little-endian 16-bit samples rounded to 8 bits (`shift` bits dropped).
fn append_plane(
    frame: &ff::frame::Video,
    plane: usize,
    width: usize,
    rows: usize,
    shift: u32,
    out: &mut Vec<u8>,
) {
    let stride = frame.stride(plane);
    let data = frame.data(plane);
    let sample_bytes = if shift == 0 { 1 } else { 2 };
    for row in 0..rows {
        let line = &data[row * stride..row * stride + sample_bytes * width];
        if shift == 0 {
            out.extend_from_slice(line);
        } else {
            let half = 1u16 << (shift - 1);
            out.extend(line.chunks_exact(2).map(|s| {
                let v = u16::from_le_bytes([s[0], s[1]]);
                (v.saturating_add(half) >> shift).min(255) as u8
            }));
        }
    }
}
