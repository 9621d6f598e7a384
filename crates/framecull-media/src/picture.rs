//! A decoded frame as the conversions read it (size, format, matrix, range, and its planes,
//! packed or still in the decoder's buffers), and its colours: the YUV -> RGB formula of
//! BT.601, BT.709 and BT.2020 (non-constant luminance), limited or full range. The one type
//! of a decoded frame: the reader's, the clip writer's, the loader's and the player's.

use ffmpeg_next as ff;
use ffmpeg_next::ffi;

/// A decoded frame, tightly packed.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Coded size (before rotation).
    pub width: u32,
    pub height: u32,
    pub format: FrameFormat,
    pub matrix: Matrix,
    pub range: Range,
    /// `Yuv420`: the Y plane (`width * height`), then U and V (`chroma_width * chroma_height`
    /// each). `Rgb`: `width * height * 3` bytes, R G B per pixel. Empty when `decoded` holds
    /// the picture.
    pub data: Vec<u8>,
    /// `Yuv420` only: the planes still in the decoder's buffers, instead of `data`.
    pub decoded: Option<std::sync::Arc<DecodedPlanes>>,
    /// Presentation timestamp, in the stream's time base (0 for images).
    pub pts: i64,
    /// Index of the frame in its file, in display order (0 for images).
    pub index: usize,
}

/// A decoded 8-bit 4:2:0 picture left in the decoder's buffers: a reference to the frame,
/// no copy (a 4K frame is 12 MB; a resize to training size reads a fraction of its rows).
pub struct DecodedPlanes {
    frame: ff::frame::Video,
}

impl DecodedPlanes {
    /// A new reference to `frame`'s buffers.
    pub(crate) fn reference(frame: &ff::frame::Video) -> Option<DecodedPlanes> {
        let mut copy = ff::frame::Video::empty();
        // SAFETY: both pointers are valid AVFrames; av_frame_ref adds references to the
        // source's buffers (and copies its properties) into the empty destination.
        let rc = unsafe { ffi::av_frame_ref(copy.as_mut_ptr(), frame.as_ptr()) };
        (rc >= 0).then_some(DecodedPlanes { frame: copy })
    }

    /// Plane `i` (0 Y, 1 U, 2 V) and its row stride in bytes.
    pub fn plane(&self, i: usize) -> (&[u8], usize) {
        (self.frame.data(i), self.frame.stride(i))
    }
}

impl std::fmt::Debug for DecodedPlanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DecodedPlanes({}x{})",
            self.frame.width(),
            self.frame.height()
        )
    }
}

impl PartialEq for DecodedPlanes {
    fn eq(&self, other: &Self) -> bool {
        let (w, h) = (self.frame.width() as usize, self.frame.height() as usize);
        if (w, h) != (other.frame.width() as usize, other.frame.height() as usize) {
            return false;
        }
        (0..3).all(|i| {
            let (cw, ch) = if i == 0 {
                (w, h)
            } else {
                (w.div_ceil(2), h.div_ceil(2))
            };
            let ((a, sa), (b, sb)) = (self.plane(i), other.plane(i));
            (0..ch).all(|r| a[r * sa..r * sa + cw] == b[r * sb..r * sb + cw])
        })
    }
}

impl Frame {
    pub fn chroma_width(&self) -> u32 {
        self.width.div_ceil(2)
    }
    pub fn chroma_height(&self) -> u32 {
        self.height.div_ceil(2)
    }
    /// The Y, U and V planes of a `Yuv420` frame, each with its row stride in bytes.
    pub fn yuv_planes(&self) -> [(&[u8], usize); 3] {
        if let Some(d) = &self.decoded {
            return [d.plane(0), d.plane(1), d.plane(2)];
        }
        let (w, cw) = (self.width as usize, self.chroma_width() as usize);
        let luma = w * self.height as usize;
        let chroma = cw * self.chroma_height() as usize;
        [
            (&self.data[..luma], w),
            (&self.data[luma..luma + chroma], cw),
            (&self.data[luma + chroma..luma + 2 * chroma], cw),
        ]
    }

    /// Whether the frame holds the bytes its size and format need.
    pub fn is_complete(&self) -> bool {
        self.decoded.is_some() && self.format == FrameFormat::Yuv420
            || self.data.len() >= Frame::expected_len(self.width, self.height, self.format)
    }

    /// Write the picture tightly packed (the layout of `data`) into `out`, which holds
    /// [`Frame::expected_len`] bytes.
    pub fn write_packed(&self, out: &mut [u8]) {
        if self.decoded.is_none() || self.format != FrameFormat::Yuv420 {
            let n = out.len().min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            return;
        }
        let (w, h) = (self.width as usize, self.height as usize);
        let (cw, ch) = (self.chroma_width() as usize, self.chroma_height() as usize);
        let mut at = 0;
        for (k, (plane, stride)) in self.yuv_planes().into_iter().enumerate() {
            let (row, rows) = if k == 0 { (w, h) } else { (cw, ch) };
            for r in 0..rows {
                out[at..at + row].copy_from_slice(&plane[r * stride..r * stride + row]);
                at += row;
            }
        }
    }

    /// Bytes `data` must hold for this size and format.
    pub fn expected_len(width: u32, height: u32, format: FrameFormat) -> usize {
        let (w, h) = (width as usize, height as usize);
        match format {
            FrameFormat::Yuv420 => w * h + 2 * w.div_ceil(2) * h.div_ceil(2),
            FrameFormat::Rgb => w * h * 3,
        }
    }
    /// Display size, after rotating by `quarter_turns` clockwise.
    pub fn display_size(&self, quarter_turns: u8) -> (u32, u32) {
        if quarter_turns % 2 == 1 {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FrameFormat {
    Yuv420,
    Rgb,
}

pub use framecull_model::Matrix;

/// Sample range (ignored for RGB frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Range {
    /// Y in 16..=235, U and V in 16..=240.
    Limited,
    /// 0..=255.
    Full,
}

/// YUV (0..=255 units) -> RGB in [0, 1], clamped. Shared formula with the shader.
pub fn yuv_to_rgb(y: f32, u: f32, v: f32, matrix: Matrix, range: Range) -> [f32; 3] {
    YuvToRgb::new(matrix, range).convert(y, u, v)
}

/// [`yuv_to_rgb`] with its constants worked out once (the same values, bit for bit: each
/// constant is the parenthesised sub-expression the formula evaluates first).
#[derive(Debug, Clone, Copy)]
pub struct YuvToRgb {
    full: bool,
    r_cr: f32,
    g_cb: f32,
    g_cr: f32,
    b_cb: f32,
}

impl YuvToRgb {
    pub fn new(matrix: Matrix, range: Range) -> Self {
        let (kr, kb) = matrix.coefficients();
        let kg = 1.0 - kr - kb;
        YuvToRgb {
            full: range == Range::Full,
            r_cr: 2.0 * (1.0 - kr),
            g_cb: 2.0 * kb * (1.0 - kb) / kg,
            g_cr: 2.0 * kr * (1.0 - kr) / kg,
            b_cb: 2.0 * (1.0 - kb),
        }
    }

    #[inline]
    pub fn convert(&self, y: f32, u: f32, v: f32) -> [f32; 3] {
        let (l, cb, cr) = if self.full {
            (y / 255.0, (u - 128.0) / 255.0, (v - 128.0) / 255.0)
        } else {
            ((y - 16.0) / 219.0, (u - 128.0) / 224.0, (v - 128.0) / 224.0)
        };
        let r = l + self.r_cr * cr;
        let g = l - self.g_cb * cb - self.g_cr * cr;
        let b = l + self.b_cb * cb;
        [r.clamp(0.0, 1.0), g.clamp(0.0, 1.0), b.clamp(0.0, 1.0)]
    }
}
