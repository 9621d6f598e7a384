//! Preprocessing of decoded frames into model input: YUV -> RGB, resize, crop, flip,
//! normalise, layout. The reference definition and its CPU kernel live below the loader, in
//! [`framecull_media::convert`] (the vocabulary and the kernel) and [`framecull_media::picture`]
//! (the decoded frame and its colours), where the window's player converts with them too;
//! they are re-exported here, where the loader's API names them. The GPU path
//! ([`super::gpu`], `preprocess.wgsl`) implements the same formulas.

pub use framecull_media::convert::{
    DType, Filter, FrameJob, FrameParams, Layout, OutputSpec, Scratch, axis_taps, decode_elements,
    display_interval, element_value, frame_rgb, write_frame,
};
pub use framecull_media::picture::{Frame, FrameFormat, Matrix, Range, YuvToRgb, yuv_to_rgb};
