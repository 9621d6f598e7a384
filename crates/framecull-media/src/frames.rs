//! Which frames a video has and how a decoded frame is recognised, from one pass over its
//! packets (no decoding): the timestamps of every frame in display order, whether those
//! timestamps identify decoded frames, and where a seek may start.
//!
//! Frame `i` of a video is the `i`-th frame a decode from the start shows. Where every
//! packet carries its own presentation timestamp, and no two share one, a decoded frame is
//! recognised by its timestamp wherever decoding started ([`Identity::Pts`]). Where packets
//! lack them (AVI with B-frames, raw MPEG-2 or H.264 elementary streams) a frame's position
//! is known only by counting from the start ([`Identity::Ordinal`]); its timestamp is a best
//! effort: the packets' decode timestamps, sorted, else frame counts at the stream's rate.

use ffmpeg_next as ff;

use framecull_model::{FieldOrder, Plane, Ratio};

/// How a decoded frame is matched to its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// By its presentation timestamp: the rank of `frame.pts` among [`FrameIndex::pts`].
    Pts,
    /// By counting frames from the start of the file; seeks cannot be checked.
    Ordinal,
}

/// A keyframe packet where a seek may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeekPoint {
    /// Display index of the keyframe.
    pub frame: usize,
    /// Timestamp to seek to (the packet's decode timestamp, else its pts), stream time base.
    pub target: i64,
    /// The keyframe packet's byte position in the file (-1 when the demuxer gives none):
    /// packets before it that a seek lands on are skipped, not decoded.
    pub pos: i64,
}

/// The frames of one video stream, as its packets describe them.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameIndex {
    /// Timestamp of each frame in display order, ascending and unique, in the stream's time
    /// base. Frame `i` is shown from `pts[i]` until `pts[i + 1]`.
    pub pts: Vec<i64>,
    pub identity: Identity,
    /// Keyframes, ascending by frame; empty for [`Identity::Ordinal`].
    pub seek_points: Vec<SeekPoint>,
}

/// What the index needs of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketInfo {
    pub pts: Option<i64>,
    pub dts: Option<i64>,
    pub key: bool,
    /// Byte position in the file, -1 when unknown.
    pub pos: i64,
}

impl FrameIndex {
    /// Read every packet of stream `stream` to the end of `input` and index its frames.
    /// `frame_step` is one frame's duration in the stream's time base (from its frame rate),
    /// for streams whose packets carry no timestamps at all.
    pub fn read(
        input: &mut ff::format::context::Input,
        stream: usize,
        frame_step: i64,
    ) -> FrameIndex {
        let mut packets = Vec::new();
        loop {
            let mut packet = ff::Packet::empty();
            match packet.read(input) {
                Ok(()) if packet.stream() == stream => packets.push(PacketInfo {
                    pts: packet.pts(),
                    dts: packet.dts(),
                    key: packet.is_key(),
                    pos: packet.position() as i64,
                }),
                Ok(()) => {}
                Err(_) => break,
            }
        }
        FrameIndex::from_packets(&packets, frame_step)
    }

    /// The index of packets given in file (decode) order.
    pub fn from_packets(packets: &[PacketInfo], frame_step: i64) -> FrameIndex {
        let mut pts: Vec<i64> = packets.iter().filter_map(|p| p.pts).collect();
        pts.sort_unstable();
        let unique = pts.windows(2).all(|w| w[0] < w[1]);
        if pts.len() == packets.len() && unique {
            let seek_points = packets
                .iter()
                .filter(|p| p.key)
                .filter_map(|p| {
                    let at = p.pts?;
                    let frame = pts.binary_search(&at).ok()?;
                    let target = p.dts.map_or(at, |d| d.min(at));
                    let pos = p.pos;
                    Some((frame, SeekPoint { frame, target, pos }))
                })
                .collect::<std::collections::BTreeMap<usize, SeekPoint>>()
                .into_values()
                .collect();
            return FrameIndex {
                pts,
                identity: Identity::Pts,
                seek_points,
            };
        }
        // Best-effort timestamps: each packet's pts, else dts, sorted; frame counts at the
        // stream's rate where packets carry neither (or repeat them).
        let mut best: Vec<i64> = packets.iter().filter_map(|p| p.pts.or(p.dts)).collect();
        best.sort_unstable();
        best.dedup();
        if best.len() != packets.len() {
            let step = frame_step.max(1);
            let start = best.first().copied().unwrap_or(0);
            best = (0..packets.len() as i64)
                .map(|i| start + i * step)
                .collect();
        }
        FrameIndex {
            pts: best,
            identity: Identity::Ordinal,
            seek_points: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.pts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pts.is_empty()
    }

    /// The frame whose timestamp is `pts` ([`Identity::Pts`] only).
    pub fn frame_of_pts(&self, pts: i64) -> Option<usize> {
        match self.identity {
            Identity::Pts => self.pts.binary_search(&pts).ok(),
            Identity::Ordinal => None,
        }
    }
}

/// The decoder flagged the frame corrupt or counted errors in it.
pub fn is_damaged(frame: &ff::frame::Video) -> bool {
    // SAFETY: `frame` holds a decoded AVFrame; decode_error_flags is a plain field.
    let error_flags = unsafe { (*frame.as_ptr()).decode_error_flags };
    frame.is_corrupt() || error_flags != 0
}

/// A decoded picture's luma plane at its coded size, where it is a plane of its own with a
/// byte or two (little-endian) a sample: planar and semi-planar YUV of 8 to 16 bits, grey.
/// `None` for RGB, palettes, packed YUV, floats and hardware frames.
pub fn luma_plane(frame: &ff::frame::Video) -> Option<Plane<'_>> {
    use ff::ffi;
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    if w == 0 || h == 0 || frame.planes() == 0 {
        return None;
    }
    let pix: ffi::AVPixelFormat = frame.format().into();
    // SAFETY: av_pix_fmt_desc_get returns a static descriptor or null.
    let desc = unsafe { ffi::av_pix_fmt_desc_get(pix) };
    if desc.is_null() {
        return None;
    }
    // SAFETY: a non-null descriptor is valid for the program's lifetime.
    let (flags, comp) = unsafe { ((*desc).flags, (*desc).comp[0]) };
    let refused = ffi::AV_PIX_FMT_FLAG_RGB
        | ffi::AV_PIX_FMT_FLAG_PAL
        | ffi::AV_PIX_FMT_FLAG_BITSTREAM
        | ffi::AV_PIX_FMT_FLAG_HWACCEL
        | ffi::AV_PIX_FMT_FLAG_BAYER
        | ffi::AV_PIX_FMT_FLAG_FLOAT
        | ffi::AV_PIX_FMT_FLAG_BE;
    if flags & refused as u64 != 0 || comp.plane != 0 || comp.offset != 0 {
        return None;
    }
    let (sample_bytes, shift) = match (comp.step, comp.depth) {
        (1, 8) => (1, 0),
        (2, 9..=16) => (2, comp.shift as u32 + comp.depth as u32 - 8),
        _ => return None,
    };
    // SAFETY: reading a plain field of the decoded AVFrame `frame` holds. A negative line
    // size (a picture stored bottom up) is not read: `data` would not be its rows.
    let linesize = unsafe { (*frame.as_ptr()).linesize[0] };
    if linesize <= 0 {
        return None;
    }
    let stride = frame.stride(0);
    let data = frame.data(0);
    (stride >= w * sample_bytes && data.len() >= stride * (h - 1) + w * sample_bytes).then_some(
        Plane {
            data,
            stride,
            width: w,
            height: h,
            sample_bytes,
            shift,
        },
    )
}

/// The field order the decoder marks a frame with.
pub fn declared_fields(frame: &ff::frame::Video) -> FieldOrder {
    match (frame.is_interlaced(), frame.is_top_first()) {
        (false, _) => FieldOrder::Progressive,
        (true, true) => FieldOrder::Tff,
        (true, false) => FieldOrder::Bff,
    }
}

/// A decoded picture's content hash: xxh3-64 over every fourth row of each plane's visible
/// bytes (and the frame's size and format). Damage and a wrong picture after a seek differ in
/// whole blocks of rows, so the sample sees them; hashing a quarter keeps it cheap for 4K.
pub fn content_hash(frame: &ff::frame::Video) -> u64 {
    use ff::ffi;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let (w, h, format) = (frame.width(), frame.height(), frame.format());
    hasher.update(&w.to_le_bytes());
    hasher.update(&h.to_le_bytes());
    let pix: ffi::AVPixelFormat = format.into();
    hasher.update(&(pix as i32).to_le_bytes());
    let mut linesizes = [0i32; 4];
    // SAFETY: av_image_fill_linesizes writes four ints; av_pix_fmt_desc_get returns a
    // static descriptor or null.
    let (filled, desc) = unsafe {
        (
            ffi::av_image_fill_linesizes(linesizes.as_mut_ptr(), pix, w as i32),
            ffi::av_pix_fmt_desc_get(pix),
        )
    };
    if filled < 0 || desc.is_null() {
        return hasher.digest();
    }
    // SAFETY: a non-null descriptor is valid for the program's lifetime.
    let chroma_shift = unsafe { (*desc).log2_chroma_h };
    for (plane, &row_bytes) in linesizes.iter().enumerate() {
        if row_bytes <= 0 || plane >= frame.planes() {
            continue;
        }
        // Chroma planes of planar YUV are subsampled vertically; others are full height.
        let rows = if (plane == 1 || plane == 2) && frame.planes() >= 3 {
            (h as usize).div_ceil(1 << chroma_shift)
        } else {
            h as usize
        };
        let stride = frame.stride(plane);
        let data = frame.data(plane);
        for row in (0..rows).step_by(4) {
            let start = row * stride;
            if let Some(bytes) = data.get(start..start + row_bytes as usize) {
                hasher.update(bytes);
            }
        }
    }
    hasher.digest()
}

/// One frame's duration in `time_base` units at the stream's average (else real base) rate.
pub fn stream_frame_step(stream: &ff::format::stream::Stream<'_>, time_base: Ratio) -> i64 {
    let rate = match stream.avg_frame_rate() {
        r if r.numerator() > 0 => r,
        _ => stream.rate(),
    };
    frame_step(rate, time_base)
}

/// One frame's duration in `time_base` units at `rate` frames per second (1 when unknown).
pub fn frame_step(rate: ff::Rational, time_base: Ratio) -> i64 {
    let (num, den) = (i64::from(rate.numerator()), i64::from(rate.denominator()));
    if num <= 0 || den <= 0 {
        return 1;
    }
    // (1 / rate) / time_base = den * tb.den / (num * tb.num)
    let step = (den * i64::from(time_base.den)) as f64 / (num * i64::from(time_base.num)) as f64;
    (step.round() as i64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The luma plane of frames of each kind of format: 8-bit planar and semi-planar, 10-bit
    /// in the low bits (yuv420p10le) and the high bits (p010le), 16-bit grey; none for RGB,
    /// packed YUV and big-endian samples.
    #[test]
    fn luma_planes_read_as_their_top_eight_bits() {
        use ff::format::Pixel;
        crate::init();
        let (w, h) = (6u32, 4u32);
        let cases: [(Pixel, Option<u16>); 8] = [
            (Pixel::YUV420P, Some(0xab)),
            (Pixel::NV12, Some(0xab)),
            (Pixel::GRAY8, Some(0xab)),
            (Pixel::YUV420P10LE, Some(0x2ad)),
            (Pixel::P010LE, Some(0xab40)),
            (Pixel::GRAY16LE, Some(0xabcd)),
            (Pixel::RGB24, None),
            (Pixel::YUYV422, None),
        ];
        for (format, sample) in cases {
            let mut frame = ff::frame::Video::new(format, w, h);
            let bytes = match sample {
                Some(s) if format == Pixel::YUV420P || format == Pixel::NV12 => vec![s as u8],
                Some(s) if format == Pixel::GRAY8 => vec![s as u8],
                Some(s) => s.to_le_bytes().to_vec(),
                None => vec![0xab],
            };
            let stride = frame.stride(0);
            for row in frame.data_mut(0).chunks_mut(stride) {
                for (i, b) in row.iter_mut().enumerate() {
                    *b = bytes[i % bytes.len()];
                }
            }
            let plane = luma_plane(&frame);
            assert_eq!(plane.is_some(), sample.is_some(), "{format:?}");
            if let Some(plane) = plane {
                assert_eq!((plane.width, plane.height), (6, 4), "{format:?}");
                let mut row = vec![0u8; 6];
                plane.row_into(3, &mut row);
                assert_eq!(row, vec![0xab; 6], "{format:?}");
            }
        }
        let frame = ff::frame::Video::new(Pixel::YUV420P10BE, w, h);
        assert!(luma_plane(&frame).is_none());
    }

    fn p(pts: Option<i64>, dts: Option<i64>, key: bool) -> PacketInfo {
        PacketInfo {
            pts,
            dts,
            key,
            pos: -1,
        }
    }

    #[test]
    fn packets_with_their_own_timestamps_identify_frames_by_pts() {
        // I P B B with reordering: decode order 0, 3, 1, 2; a second keyframe at 4.
        let packets = [
            p(Some(0), Some(-1), true),
            p(Some(3), Some(0), false),
            p(Some(1), Some(1), false),
            p(Some(2), Some(2), false),
            p(Some(4), Some(3), true),
        ];
        let index = FrameIndex::from_packets(&packets, 1);
        assert_eq!(index.identity, Identity::Pts);
        assert_eq!(index.pts, vec![0, 1, 2, 3, 4]);
        assert_eq!(
            index.seek_points,
            vec![
                SeekPoint {
                    frame: 0,
                    target: -1,
                    pos: -1
                },
                SeekPoint {
                    frame: 4,
                    target: 3,
                    pos: -1
                }
            ]
        );
        assert_eq!(index.frame_of_pts(3), Some(3));
        assert_eq!(index.frame_of_pts(7), None);
    }

    #[test]
    fn packets_without_pts_are_counted_from_the_start() {
        // AVI with B-frames: only B packets carry a pts; the decode timestamps are the
        // best-effort times, and nothing can be seeked to.
        let packets = [
            p(None, Some(0), true),
            p(None, Some(1), false),
            p(Some(2), Some(2), false),
            p(Some(3), Some(3), false),
        ];
        let index = FrameIndex::from_packets(&packets, 1);
        assert_eq!(index.identity, Identity::Ordinal);
        assert_eq!(index.pts, vec![0, 1, 2, 3]);
        assert!(index.seek_points.is_empty());
        assert_eq!(index.frame_of_pts(2), None);
    }

    #[test]
    fn streams_without_any_timestamp_get_frame_counts_at_their_rate() {
        let packets = [
            p(None, None, true),
            p(None, None, false),
            p(None, None, false),
        ];
        let index = FrameIndex::from_packets(&packets, 40);
        assert_eq!(index.identity, Identity::Ordinal);
        assert_eq!(index.pts, vec![0, 40, 80]);
    }

    #[test]
    fn repeated_timestamps_are_not_identities() {
        let packets = [p(Some(0), None, true), p(Some(0), None, false)];
        let index = FrameIndex::from_packets(&packets, 10);
        assert_eq!(index.identity, Identity::Ordinal);
        assert_eq!(index.pts, vec![0, 10]);
    }

    #[test]
    fn frame_steps_follow_the_rate() {
        let tb = Ratio {
            num: 1,
            den: 90_000,
        };
        assert_eq!(frame_step(ff::Rational::new(25, 1), tb), 3600);
        assert_eq!(frame_step(ff::Rational::new(30000, 1001), tb), 3003);
        assert_eq!(frame_step(ff::Rational::new(0, 1), tb), 1);
    }
}
