//! Conversion of decoded frames into model input or display pictures: the reference
//! definition, run on the CPU. The loader's GPU path (`loader::gpu`, `preprocess.wgsl`)
//! implements the same formulas and is tested against this one; the loader and the window's
//! player both convert with it.
//!
//! For each output pixel: its footprint in the (cropped, flipped) display image is mapped to
//! the coded frame (rotation), the planes are sampled there (bilinear at the footprint's
//! centre, or the exact area average), the sample is converted YUV -> RGB (BT.601, BT.709 or
//! BT.2020, limited or full range), clamped to [0, 1] and normalised. Sampling happens in the
//! YUV planes, before conversion, so both paths touch each plane the same way. Chroma is
//! sampled as centred between luma samples, as FFmpeg's swscale converts.
//!
//! Here: the vocabulary (what to make of a frame: [`FrameParams`], [`OutputSpec`] and its
//! [`Filter`], [`Layout`] and [`DType`]); in `cpu`, the kernel ([`write_frame`]).

mod cpu;

use super::picture::Frame;
pub use cpu::{
    Scratch, axis_taps, decode_elements, display_interval, element_value, frame_rgb, write_frame,
};

/// `frame` as a picture to show: upright (`quarter_turns`), fitted within `max` (never
/// enlarged), packed RGB into `rgb`. Returns its width and height. The window's player, its
/// scrub strips and the loader's worker processes (which decode for them) all draw with this.
pub fn fit_rgb(
    frame: &Frame,
    quarter_turns: u8,
    max: (u32, u32),
    scratch: &mut Scratch,
    rgb: &mut Vec<u8>,
) -> (u32, u32) {
    let (dw, dh) = frame.display_size(quarter_turns);
    let scale = (f64::from(max.0) / f64::from(dw))
        .min(f64::from(max.1) / f64::from(dh))
        .min(1.0);
    let (w, h) = (
        ((f64::from(dw) * scale).round() as u32).max(1),
        ((f64::from(dh) * scale).round() as u32).max(1),
    );
    let out = OutputSpec::rgb8(w, h, Filter::Bilinear);
    rgb.resize(out.frame_elements(), 0);
    let params = FrameParams::full(frame, quarter_turns);
    write_frame(Some(&FrameJob { frame, params }), &out, scratch, rgb);
    (w, h)
}

/// How one output frame is cut from its source frame. Augmentations are drawn once per clip,
/// so every frame of a clip carries the same crop and flip.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FrameParams {
    /// Clockwise quarter turns from coded to display orientation (0..=3).
    pub quarter_turns: u8,
    /// Crop rectangle in display pixels: x, y, width, height (continuous coordinates, the
    /// display image spans [0, w) x [0, h)).
    pub crop: [f32; 4],
    /// Mirror left-right (after the crop).
    pub flip: bool,
}

impl FrameParams {
    /// The whole display image, no flip.
    pub fn full(frame: &Frame, quarter_turns: u8) -> Self {
        let (w, h) = frame.display_size(quarter_turns);
        FrameParams {
            quarter_turns,
            crop: [0.0, 0.0, w as f32, h as f32],
            flip: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Filter {
    Bilinear,
    /// Average over each output pixel's footprint (bilinear where it is under a pixel).
    Area,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// `[B, T, C, H, W]`
    Bcthw,
    /// `[B, T, H, W, C]`
    Bthwc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// Normalised, 4 bytes little-endian.
    F32,
    /// Normalised, IEEE half precision, 2 bytes little-endian.
    F16,
    /// `round(255 * rgb)`, not normalised.
    U8,
}

impl DType {
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 => 2,
            DType::U8 => 1,
        }
    }
}

/// The shape and encoding of the output.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OutputSpec {
    pub width: u32,
    pub height: u32,
    pub layout: Layout,
    pub dtype: DType,
    pub filter: Filter,
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

impl OutputSpec {
    /// Packed RGB8 pictures (`[H, W, C]` u8, not normalised): display copies, thumbnails,
    /// the frame cache.
    pub fn rgb8(width: u32, height: u32, filter: Filter) -> OutputSpec {
        OutputSpec {
            width,
            height,
            layout: Layout::Bthwc,
            dtype: DType::U8,
            filter,
            mean: [0.0; 3],
            std: [1.0; 3],
        }
    }

    /// Elements of one output frame (`3 * height * width`).
    pub fn frame_elements(&self) -> usize {
        3 * self.width as usize * self.height as usize
    }
}

/// One frame to preprocess: its pixels and how to cut them. `None` in a batch is padding,
/// written as zeros.
#[derive(Debug, Clone, Copy)]
pub struct FrameJob<'a> {
    pub frame: &'a Frame,
    pub params: FrameParams,
}
