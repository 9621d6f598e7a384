//! A video's frames: the small decoded view analysis reads, the frame table of the deep
//! pass and the seek references exported from it, and the timeline that makes clip
//! boundaries frame-exact.

use serde::{Deserialize, Serialize};

use super::{Clip, ClipOrigin, Decision, FieldOrder, ItemId, Ratio};

/// One decoded frame, scaled down to a small planar RGB copy; valid during a callback.
#[derive(Debug)]
pub struct FrameView<'a> {
    /// 0-based index in presentation (output) order.
    pub index: u64,
    /// Best-effort presentation timestamp in the stream's time base.
    pub pts: Option<i64>,
    /// `pts` in seconds.
    pub time_secs: Option<f64>,
    /// Size of the decoded frame before scaling.
    pub coded_width: u32,
    pub coded_height: u32,
    /// The decoder concealed errors in this frame.
    pub corrupt: bool,
    /// The decoder marked it a keyframe.
    pub key: bool,
    /// `framecull_media::frames::content_hash` of the decoded picture (before
    /// scaling); 0 in the frames a triage samples, which no frame table keeps.
    pub content_hash: u64,
    /// The R, G and B planes, `width * height` bytes each.
    pub planes: [&'a [u8]; 3],
    /// Full-range BT.601 luma of the same pixels (`width * height` bytes), when the decoder
    /// had it at hand; else derive it from `rgb`.
    pub luma: Option<&'a [u8]>,
    pub width: usize,
    pub height: usize,
    /// The decoded picture's luma at its coded size, as the decoder holds it, where it is a
    /// plane of its own (planar and semi-planar YUV, grey): what measures that need every
    /// line read (interlacing). `None` in the frames a triage samples.
    pub coded_luma: Option<Plane<'a>>,
    /// The field order the decoder marks the frame with.
    pub declared_fields: FieldOrder,
}

/// One plane of a decoded picture at its coded size, rows `stride` bytes apart.
#[derive(Debug, Clone, Copy)]
pub struct Plane<'a> {
    pub data: &'a [u8],
    pub stride: usize,
    pub width: usize,
    pub height: usize,
    /// Bytes a sample takes: 1, or 2 (little-endian) for samples of 9 to 16 bits.
    pub sample_bytes: usize,
    /// Right shift that leaves a 2-byte sample's top 8 bits.
    pub shift: u32,
}

impl Plane<'_> {
    /// Row `y` as 8-bit samples, into `out` (`width` bytes).
    pub fn row_into(&self, y: usize, out: &mut [u8]) {
        let start = y * self.stride;
        match self.sample_bytes {
            1 => out.copy_from_slice(&self.data[start..start + self.width]),
            _ => {
                let row = &self.data[start..start + 2 * self.width];
                for (o, s) in out.iter_mut().zip(row.chunks_exact(2)) {
                    *o = (u16::from_le_bytes([s[0], s[1]]) >> self.shift) as u8;
                }
            }
        }
    }
}

impl FrameView<'_> {
    /// The picture as packed RGB24.
    pub fn rgb24(&self) -> Vec<u8> {
        let [r, g, b] = self.planes;
        let mut rgb = Vec::with_capacity(self.width * self.height * 3);
        for ((&r, &g), &b) in r.iter().zip(g).zip(b).take(self.width * self.height) {
            rgb.extend_from_slice(&[r, g, b]);
        }
        rgb
    }
}

/// A video's frames as one decode from the start shows them (the deep pass): the ground
/// truth the loader checks its seeks against. Frame `i` is the `i`-th frame decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameTable {
    pub frames: Vec<FrameRecord>,
}

/// One packet of a video stream as the demuxer hands it out, in file (decode) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketRecord {
    pub pts: Option<i64>,
    pub dts: Option<i64>,
    /// In the stream's time base; 0 when unknown.
    pub duration: i64,
    pub size: u32,
    pub key: bool,
    /// The demuxer marks it corrupt (`AV_PKT_FLAG_CORRUPT`).
    pub corrupt: bool,
}

/// Bytes of headers in a packet that codes nothing else.
pub const PACKET_HEADER_BYTES: u64 = 64;

/// The 16x16 blocks of a `width` x `height` frame.
pub fn blocks16(width: u32, height: u32) -> u64 {
    u64::from(width.div_ceil(16)) * u64::from(height.div_ceil(16))
}

/// The most bytes a predicted frame's packet takes that repeats its reference (a frozen
/// picture): each block coded as skipped costs a bit or less (H.264 and HEVC far less, MPEG-4
/// part 2 one bit a macroblock), so a sixth of a byte a block, plus headers. A low bit rate
/// makes packets this small of pictures that change, too.
pub fn repeat_packet_bytes(width: u32, height: u32) -> u64 {
    PACKET_HEADER_BYTES + blocks16(width, height) / 6
}

/// Every packet of a file's video stream, read without decoding: what a triage measures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PacketScan {
    pub time_base: Option<Ratio>,
    /// One frame's duration in the time base (from the frame rate; 1 when unknown).
    pub frame_step: i64,
    pub declared_frames: Option<i64>,
    pub declared_duration_secs: Option<f64>,
    pub packets: Vec<PacketRecord>,
    /// Why reading stopped before the end, in FFmpeg's words.
    pub read_error: Option<String>,
    /// The time budget ran out first.
    pub timed_out: bool,
    /// Packets whose data holds a long run of zero bytes (a zeroed or unwritten range), and
    /// the first of them (its index).
    pub zero_runs: u64,
    /// Packets the demuxer marks to discard (before the start of an MP4 edit list).
    #[serde(default)]
    pub discarded_packets: u64,
    pub first_zero_run: Option<u64>,
    /// What decoding a few GOPs found: the first and the last, those with a packet anomaly
    /// and a spread sample.
    pub sample: SampledDecode,
}

/// Frame times in output order against the latest time before them: how often one goes
/// back or repeats (the `timestamps` flag's counts), read the same by the deep pass and a
/// triage's decoding.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeOrder {
    /// The latest time so far: a clock that never goes back.
    pub latest: Option<f64>,
    pub backwards: u64,
    pub repeats: u64,
}

impl TimeOrder {
    /// Count time `t` (seconds); the step forward from the latest time, where it is one.
    pub fn push(&mut self, t: f64) -> Option<f64> {
        let step = match self.latest {
            Some(latest) if t < latest => {
                self.backwards += 1;
                None
            }
            Some(latest) if t == latest => {
                self.repeats += 1;
                None
            }
            Some(latest) => Some(t - latest),
            None => None,
        };
        self.latest = Some(self.latest.map_or(t, |l| l.max(t)));
        step
    }
}

/// What a triage decoded (whole GOPs, and keyframes alone), and the errors in them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SampledDecode {
    /// GOPs decoded whole.
    pub gops: u32,
    /// Keyframes decoded alone (the rest of their GOP not).
    pub keyframes: u32,
    pub frames: u64,
    /// Bytes of the packets decoded.
    pub bytes: u64,
    /// Frames decoded at another size than the frame decoded before them: a lower bound of
    /// the stream's size changes.
    pub size_changes: u64,
    /// Frames decoded whose timestamp goes back from, or repeats, the latest before them in
    /// the same GOP (what a decoder makes of timestamps the packets may not carry).
    pub pts_backwards: u64,
    pub pts_repeats: u64,
    /// Failed decoder calls plus frames decoded with concealed errors.
    pub errors: u64,
    pub first_error: Option<String>,
}

/// One frame of a [`FrameTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameRecord {
    /// Best-effort presentation timestamp in the stream's time base.
    pub pts: Option<i64>,
    /// The decoder marked it a keyframe and it decoded without errors: a point a seek can
    /// start from, if the frame decoded after the seek has this content.
    pub clean_key: bool,
    /// It decoded with errors.
    pub damaged: bool,
    /// `framecull_media::frames::content_hash` of the decoded picture.
    pub hash: u64,
}

/// Where a seek into a video may start and what the frame there must look like: the clean
/// keyframes of its [`FrameTable`], exported beside a manifest (`vNNNN.frames.jsonl`, one per
/// file) for the loader to check its seeks against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeekReference {
    pub path: String,
    pub file_fingerprint: String,
    /// Frames a decode from the start shows.
    pub frames: u64,
    /// `[index, content hash]` of each clean keyframe, ascending.
    pub keyframes: Vec<(u64, u64)>,
}

impl FrameTable {
    /// The clean keyframes, as a [`SeekReference`].
    pub fn seek_reference(&self, path: &str, file_fingerprint: &str) -> SeekReference {
        SeekReference {
            path: path.to_string(),
            file_fingerprint: file_fingerprint.to_string(),
            frames: self.frames.len() as u64,
            keyframes: self
                .frames
                .iter()
                .enumerate()
                .filter(|(_, f)| f.clean_key)
                .map(|(i, f)| (i as u64, f.hash))
                .collect(),
        }
    }

    /// Bytes per frame in [`to_bytes`](Self::to_bytes).
    const RECORD_BYTES: usize = 17;

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Compact little-endian records: pts (`i64::MIN` for none), hash, flags.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.frames.len() * Self::RECORD_BYTES);
        for f in &self.frames {
            out.extend_from_slice(&f.pts.unwrap_or(i64::MIN).to_le_bytes());
            out.extend_from_slice(&f.hash.to_le_bytes());
            out.push(u8::from(f.clean_key) | (u8::from(f.damaged) << 1));
        }
        out
    }

    /// The table of [`to_bytes`](Self::to_bytes); `None` for bytes of another length.
    pub fn from_bytes(bytes: &[u8]) -> Option<FrameTable> {
        if !bytes.len().is_multiple_of(Self::RECORD_BYTES) {
            return None;
        }
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            w
        };
        let frames = bytes
            .chunks_exact(Self::RECORD_BYTES)
            .map(|r| {
                let pts = i64::from_le_bytes(word(&r[0..8]));
                FrameRecord {
                    pts: (pts != i64::MIN).then_some(pts),
                    hash: u64::from_le_bytes(word(&r[8..16])),
                    clean_key: r[16] & 1 != 0,
                    damaged: r[16] & 2 != 0,
                }
            })
            .collect();
        Some(FrameTable { frames })
    }
}

/// Why a frame spec (`f120`, or seconds) names no frame of a [`FrameTimeline`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameSpecError {
    #[error("{spec:?} is not a frame like f120")]
    NotAFrame { spec: String },
    /// A frame index past the end of the last frame.
    #[error("frame {frame} is past the last frame ({frames})")]
    PastTheEnd { frame: usize, frames: usize },
    #[error("{spec:?} is neither seconds nor a frame like f120")]
    NotAFrameOrSeconds { spec: String },
    /// A start in seconds at or after the end of the last frame.
    #[error("{secs} s is past the end of the video ({end_secs} s)")]
    SecondsPastTheEnd { secs: f64, end_secs: f64 },
}

/// A video's frame timestamps, for frame-exact boundaries: frame `i` is shown from `pts[i]`
/// until `pts[i + 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameTimeline {
    pub pts: Vec<i64>,
    pub time_base: Ratio,
}

impl FrameTimeline {
    pub fn secs(&self, pts: i64) -> f64 {
        pts as f64 * self.time_base.as_f64()
    }

    /// Timestamp where frame `i` starts; `i == len` is the end of the last frame.
    pub fn pts_at(&self, i: usize) -> i64 {
        match self.pts.get(i) {
            Some(p) => *p,
            None => {
                let n = self.pts.len();
                let last = self.pts[n - 1];
                let step = if n > 1 { last - self.pts[n - 2] } else { 1 };
                last + step.max(1)
            }
        }
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.pts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pts.is_empty()
    }

    /// The frame shown at `t` seconds (the last one starting at or before it; 0 before the
    /// first).
    pub fn frame_at_secs(&self, t: f64) -> usize {
        let eps = 1e-9;
        self.pts
            .partition_point(|&p| self.secs(p) <= t + eps)
            .saturating_sub(1)
    }

    /// The first frame starting at or after `t` seconds (`len` past the last): the exclusive
    /// end of a span that ends at `t`.
    pub fn end_frame_at_secs(&self, t: f64) -> usize {
        let eps = 1e-9;
        self.pts.partition_point(|&p| self.secs(p) < t - eps)
    }

    /// Frames `[start, end)` of the span from `a` to `b` seconds: from the frame shown at `a`
    /// to the first frame at or after `b`.
    pub fn frames_between_secs(&self, a: f64, b: f64) -> (usize, usize) {
        (self.frame_at_secs(a), self.end_frame_at_secs(b))
    }

    /// Frame index for `f120` or seconds. A start is the frame shown at that time (an error
    /// at or past the end of the last frame); an end is the first frame at or after it
    /// (exclusive bound; the end of the video when past it).
    pub fn index_at(&self, spec: &str, end: bool) -> Result<usize, FrameSpecError> {
        if let Some(f) = spec.strip_prefix('f') {
            let i: usize =
                f.trim_start_matches(':')
                    .parse()
                    .map_err(|_| FrameSpecError::NotAFrame {
                        spec: spec.to_string(),
                    })?;
            if i > self.pts.len() {
                return Err(FrameSpecError::PastTheEnd {
                    frame: i,
                    frames: self.pts.len(),
                });
            }
            return Ok(i);
        }
        let t: f64 = spec
            .parse()
            .map_err(|_| FrameSpecError::NotAFrameOrSeconds {
                spec: spec.to_string(),
            })?;
        let end_secs = self.secs(self.pts_at(self.pts.len()));
        if !end && !self.pts.is_empty() && t >= end_secs {
            return Err(FrameSpecError::SecondsPastTheEnd { secs: t, end_secs });
        }
        Ok(if end {
            self.end_frame_at_secs(t)
        } else {
            self.frame_at_secs(t)
        })
    }

    pub fn clip(
        &self,
        item: ItemId,
        s: usize,
        e: usize,
        label: Option<String>,
        origin: ClipOrigin,
    ) -> Clip {
        let (sp, ep) = (self.pts_at(s), self.pts_at(e));
        Clip {
            id: 0,
            item_id: item,
            start_pts: sp,
            end_pts: ep,
            time_base: self.time_base,
            start_secs: self.secs(sp),
            end_secs: self.secs(ep),
            start_frame: Some(s as i64),
            end_frame: Some(e as i64),
            label,
            origin,
            decision: Decision::Unreviewed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TimeOrder;

    #[test]
    fn times_going_back_or_repeating_are_counted_against_the_latest() {
        let mut order = TimeOrder::default();
        let steps: Vec<Option<f64>> = [0.0, 1.0, 1.0, 0.5, 2.0]
            .into_iter()
            .map(|t| order.push(t))
            .collect();
        assert_eq!(steps, [None, Some(1.0), None, None, Some(1.0)]);
        assert_eq!((order.backwards, order.repeats), (1, 1));
        assert_eq!(order.latest, Some(2.0));
    }
}

/// Where a clip lies in its file, as a manifest row records it: its timestamps (in
/// `time_base`, the file's where `None`), its seconds, and its frame indices where known.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClipBounds {
    pub is_image: bool,
    pub start_pts: Option<i64>,
    pub end_pts: Option<i64>,
    pub time_base: Option<Ratio>,
    pub start_secs: f64,
    pub end_secs: f64,
    /// Frame indices `[start, end)`.
    pub frames: Option<(usize, usize)>,
}

impl ClipBounds {
    /// The clip's frames: a range of frame indices of the file whose timestamps (in
    /// `time_base`) are `all`.
    ///
    /// A frame belongs to the clip when its index is in `[start_frame, end_frame)` or its
    /// timestamp in `[start_pts, end_pts)` (else in `[start_secs, end_secs)`): the two agree on
    /// clips marked on the same frames, and together they keep a whole-file row's first and
    /// last frames when its seconds were rounded or its duration is the container's, which
    /// may end where the last frame starts.
    pub fn range_in(&self, all: &[i64], time_base: Ratio) -> std::ops::Range<usize> {
        if self.is_image {
            return 0..all.len().min(1);
        }
        let by_time = if let (Some(a), Some(b)) = (self.start_pts, self.end_pts)
            && self.time_base.is_none_or(|tb| tb == time_base)
        {
            all.partition_point(|&p| p < a)..all.partition_point(|&p| p < b)
        } else {
            let tb = time_base.as_f64();
            let eps = 1e-6;
            let lo = all.partition_point(|&p| (p as f64 * tb) < self.start_secs - eps);
            let hi = all.partition_point(|&p| (p as f64 * tb) < self.end_secs - eps);
            lo..hi
        };
        let by_index = match self.frames {
            Some((a, b)) => a.min(all.len())..b.min(all.len()),
            None => return by_time,
        };
        if by_index.is_empty() {
            return by_time;
        }
        if by_time.is_empty() || by_time.start > by_index.end || by_index.start > by_time.end {
            return by_index;
        }
        by_time.start.min(by_index.start)..by_time.end.max(by_index.end)
    }
}
