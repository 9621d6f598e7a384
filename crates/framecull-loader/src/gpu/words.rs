//! What the shader reads, word by word: a frame's `FrameInfo` and the batch's `Globals`
//! (laid out as in `preprocess.wgsl`), the bytes a frame takes in the input buffer, and the
//! checks that keep frames and outputs within the shader's `u32` arithmetic.

use super::GpuError;
use crate::preprocess::{DType, Filter, Frame, FrameFormat, FrameJob, Layout, OutputSpec, Range};

/// Bytes of one `FrameInfo` in the shader (20 four-byte fields).
pub(super) const FRAME_INFO_BYTES: u64 = 80;
/// Bytes of `Globals` in the shader.
pub(super) const GLOBALS_BYTES: u64 = 80;

/// `3 * width * height`, checked to fit the shader's `u32` arithmetic.
pub(super) fn check_output(out: &OutputSpec) -> Result<u32, GpuError> {
    if out.width == 0 || out.height == 0 {
        return Err(GpuError::BadOutput(format!(
            "empty output size {}x{}",
            out.width, out.height
        )));
    }
    u32::try_from(out.frame_elements())
        .ok()
        .filter(|&e| e <= u32::MAX / 4)
        .ok_or_else(|| {
            GpuError::BadOutput(format!(
                "output size {}x{} is too large",
                out.width, out.height
            ))
        })
}

pub(super) fn check_frame(index: usize, job: &FrameJob<'_>) -> Result<(), GpuError> {
    let frame = job.frame;
    if frame.width == 0 || frame.height == 0 {
        return Err(GpuError::BadFrame {
            index,
            reason: format!("empty frame {}x{}", frame.width, frame.height),
        });
    }
    if !job.params.crop.iter().all(|v| v.is_finite()) {
        return Err(GpuError::BadFrame {
            index,
            reason: format!("crop {:?} is not finite", job.params.crop),
        });
    }
    let expected = expected_len(job);
    if !frame.is_complete() {
        return Err(GpuError::BadFrame {
            index,
            reason: format!(
                "{} bytes of data, {expected} expected for {}x{} {:?}",
                frame.data.len(),
                frame.width,
                frame.height,
                frame.format
            ),
        });
    }
    Ok(())
}

/// Bytes of a frame's pixel data.
pub(super) fn expected_len(job: &FrameJob<'_>) -> usize {
    let frame = job.frame;
    Frame::expected_len(frame.width, frame.height, frame.format)
}

/// Bytes a frame takes in the input buffer: its data rounded up to a word.
pub(super) fn padded_len(job: &FrameJob<'_>) -> u64 {
    (expected_len(job) as u64).div_ceil(4) * 4
}

/// Append a frame's `FrameInfo` (see the shader) to `words`; `offset` is the byte offset of
/// its data in the chunk's input.
pub(super) fn frame_info(job: Option<&FrameJob<'_>>, offset: u32, words: &mut Vec<u32>) {
    let Some(job) = job else {
        // Padding: only `kind` matters.
        words.extend_from_slice(&[0, 0, 0, 2]);
        words.resize(words.len() + (FRAME_INFO_BYTES / 4) as usize - 4, 0);
        return;
    };
    let frame = job.frame;
    let params = &job.params;
    let kind = match frame.format {
        FrameFormat::Yuv420 => 0,
        FrameFormat::Rgb => 1,
    };
    // `yuv_to_rgb`'s constants, with its expressions, so both sides round alike.
    let (y_offset, y_div, c_div) = match frame.range {
        Range::Limited => (16.0f32, 219.0f32, 224.0f32),
        Range::Full => (0.0, 255.0, 255.0),
    };
    let (kr, kb) = frame.matrix.coefficients();
    let kg = 1.0 - kr - kb;
    let r_cr = 2.0 * (1.0 - kr);
    let g_cb = 2.0 * kb * (1.0 - kb) / kg;
    let g_cr = 2.0 * kr * (1.0 - kr) / kg;
    let b_cb = 2.0 * (1.0 - kb);
    let [cx, cy, cw, ch] = params.crop;
    words.extend_from_slice(&[
        offset,
        frame.width,
        frame.height,
        kind,
        u32::from(params.quarter_turns % 4),
        u32::from(params.flip),
    ]);
    words.extend(
        [
            cx, cy, cw, ch, y_offset, y_div, c_div, r_cr, g_cb, g_cr, b_cb,
        ]
        .map(f32::to_bits),
    );
    words.extend_from_slice(&[0, 0, 0]);
}

/// The shader's `Globals`.
pub(super) fn globals_words(
    out: &OutputSpec,
    frame_elements: u32,
    word_base: u32,
    word_count: u32,
    element_count: u32,
) -> Vec<u32> {
    let layout = match out.layout {
        Layout::Bcthw => 0,
        Layout::Bthwc => 1,
    };
    let dtype = match out.dtype {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::U8 => 2,
    };
    let filter = match out.filter {
        Filter::Bilinear => 0,
        Filter::Area => 1,
    };
    let mut words = vec![
        out.width,
        out.height,
        layout,
        dtype,
        filter,
        frame_elements,
        word_base,
        word_count,
        element_count,
        0,
        0,
        0,
    ];
    words.extend([out.mean[0], out.mean[1], out.mean[2], 0.0].map(f32::to_bits));
    words.extend([out.std[0], out.std[1], out.std[2], 1.0].map(f32::to_bits));
    words
}

/// Words as the little-endian bytes a buffer holds.
pub(super) fn u32_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
