//! Smart cut: a clip whose middle holds whole closed GOPs of its source copies their packets
//! as they are, and encodes again only the frames at its two ends (and any GOP in between that
//! cannot stand alone).
//!
//! A GOP is copied when decoding it needs nothing outside it and gives exactly its frames: it
//! starts at an instantaneous decoder refresh (H.264 IDR), its packets up to the next one are
//! exactly the frames shown from its keyframe to the next's (no B-frame of it shows before its
//! keyframe or references the GOP before: open GOPs are encoded again), and those frames lie
//! inside the clip. Decoding it from its first packet then gives the very pictures a decode
//! from the start of the source gives.
//!
//! The parts are joined in one H.264 stream of Annex B packets whose parameter sets lead each
//! part's first keyframe (the source's for a copied run, libx264's for an encoded one), muxed
//! as `avc3` (parameter sets in the stream) in an MP4. Timestamps run from zero; decode
//! timestamps are set again for the whole clip (each frame's, the presentation time `delay`
//! frames earlier), so that parts with different frame reordering join.

use std::ops::Range;

use ff::ffi;
use ffmpeg_next as ff;

use super::{ClipError, encode_error};
use crate::frames::Identity;
use crate::reader::VideoReader;
use crate::source::{Opened, Source};

/// One packet of the source's video stream, as the plan needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ScannedPacket {
    pub pts: i64,
    /// Decoding can start here with nothing before it (an H.264 IDR).
    pub sync: bool,
}

/// A part of a clip, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Segment {
    /// Frames (display indices) decoded and encoded again.
    Encode(Range<usize>),
    /// Frames whose packets (indices into the scan, decode order) are copied.
    Copy {
        frames: Range<usize>,
        packets: Range<usize>,
    },
}

/// The parts of clip `clip` (frames, display order) of a source whose frames show at
/// `frame_pts` (ascending, unique: one per packet), given the packets scanned in decode order
/// (from a keyframe at or before the clip's start; `complete`: to the end of the stream, else
/// to the first sync packet shown at or after the clip's end).
pub(super) fn plan(
    packets: &[ScannedPacket],
    frame_pts: &[i64],
    clip: Range<usize>,
    complete: bool,
) -> Vec<Segment> {
    let syncs: Vec<usize> = (0..packets.len()).filter(|&i| packets[i].sync).collect();
    let frame_of = |pts: i64| frame_pts.binary_search(&pts).ok();
    // Copyable GOPs: (frames, packets).
    let mut copies: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for (n, &first) in syncs.iter().enumerate() {
        let next = syncs.get(n + 1).copied();
        if next.is_none() && !complete {
            break; // the GOP was not read to its end
        }
        let end = next.unwrap_or(packets.len());
        let Some(a) = frame_of(packets[first].pts) else {
            continue;
        };
        let b = match next {
            Some(k) => match frame_of(packets[k].pts) {
                Some(b) => b,
                None => continue,
            },
            None => frame_pts.len(),
        };
        if a < clip.start || b > clip.end || b <= a {
            continue;
        }
        let gop = &packets[first..end];
        // Pts are unique, so as many packets as frames, all within the GOP's display span,
        // are exactly its frames.
        let (lo, hi) = (frame_pts[a], frame_pts[b - 1]);
        if gop.len() != b - a || gop.iter().any(|p| p.pts < lo || p.pts > hi) {
            continue;
        }
        match copies.last_mut() {
            Some((frames, run)) if frames.end == a && run.end == first => {
                frames.end = b;
                run.end = end;
            }
            _ => copies.push((a..b, first..end)),
        }
    }
    let mut segments = Vec::new();
    let mut at = clip.start;
    for (frames, run) in copies {
        if at < frames.start {
            segments.push(Segment::Encode(at..frames.start));
        }
        at = frames.end;
        segments.push(Segment::Copy {
            frames,
            packets: run,
        });
    }
    if at < clip.end {
        segments.push(Segment::Encode(at..clip.end));
    }
    segments
}

/// How many places the packets of a run (timestamps in decode order) come before their place
/// in display order, at most: the delay their decode timestamps need.
pub(super) fn reorder_delay(pts: &[i64]) -> usize {
    let mut sorted = pts.to_vec();
    sorted.sort_unstable();
    pts.iter()
        .enumerate()
        .map(|(i, p)| i.saturating_sub(sorted.partition_point(|q| q < p)))
        .max()
        .unwrap_or(0)
}

/// How a stream's packets frame their NAL units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// Each unit after its length, in this many bytes (MP4's `avcC`).
    Length(usize),
    /// Each unit after a start code (Annex B: MPEG-TS, raw streams).
    StartCodes,
}

/// The NAL units of `data`.
pub(super) fn nal_units(data: &[u8], framing: Framing) -> Vec<&[u8]> {
    let mut units = Vec::new();
    match framing {
        Framing::Length(n) => {
            let mut at = 0;
            while at + n <= data.len() {
                let len = data[at..at + n]
                    .iter()
                    .fold(0usize, |acc, &b| (acc << 8) | b as usize);
                at += n;
                let Some(unit) = data.get(at..at + len) else {
                    break;
                };
                units.push(unit);
                at += len;
            }
        }
        Framing::StartCodes => {
            let starts: Vec<usize> = (0..data.len().saturating_sub(2))
                .filter(|&i| data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1)
                .map(|i| i + 3)
                .collect();
            for (n, &start) in starts.iter().enumerate() {
                let end = starts.get(n + 1).map_or(data.len(), |&s| s - 3);
                // Zeros before the next start code (its fourth byte, trailing zeros) are not
                // part of the unit.
                let mut unit = &data[start..end.max(start)];
                while let [rest @ .., 0] = unit {
                    unit = rest;
                }
                if !unit.is_empty() {
                    units.push(unit);
                }
            }
        }
    }
    units
}

/// The codecs whose GOPs are copied: the NAL unit types that matter, how the parameter sets
/// are recorded, and the encoder that writes the parts around the copied runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    H264,
    Hevc,
}

impl Family {
    pub fn of(id: ff::codec::Id) -> Option<Family> {
        match id {
            ff::codec::Id::H264 => Some(Family::H264),
            ff::codec::Id::HEVC => Some(Family::Hevc),
            _ => None,
        }
    }

    /// A NAL unit's type.
    pub fn nal_type(self, unit: &[u8]) -> u8 {
        match self {
            Family::H264 => unit.first().map_or(0, |b| b & 0x1f),
            Family::Hevc => unit.first().map_or(0, |b| (b >> 1) & 0x3f),
        }
    }

    /// A unit decoding can start at with nothing before it: an H.264 IDR; an HEVC IRAP (IDR,
    /// CRA or BLA: a CRA's leading pictures, which refer to the GOP before, come after it in
    /// decode order and show before it, so its GOP fails the plan's frame test and is
    /// encoded).
    fn is_sync(self, unit: &[u8]) -> bool {
        let t = self.nal_type(unit);
        match self {
            Family::H264 => t == 5,
            Family::Hevc => (16..=21).contains(&t),
        }
    }

    /// A parameter set (H.264 SPS, PPS; HEVC VPS, SPS, PPS).
    pub fn is_parameter_set(self, unit: &[u8]) -> bool {
        let t = self.nal_type(unit);
        match self {
            Family::H264 => matches!(t, 7 | 8),
            Family::Hevc => matches!(t, 32..=34),
        }
    }

    /// The encoder of the parts around copied runs.
    pub fn encoder(self) -> &'static str {
        match self {
            Family::H264 => "libx264",
            Family::Hevc => "libx265",
        }
    }

    pub fn id(self) -> ff::codec::Id {
        match self {
            Family::H264 => ff::codec::Id::H264,
            Family::Hevc => ff::codec::Id::HEVC,
        }
    }

    /// The MP4 sample entry: with parameter sets in the stream (they change between parts),
    /// or only in the header.
    pub fn tag(self, in_stream: bool) -> &'static [u8; 4] {
        match (self, in_stream) {
            (Family::H264, true) => b"avc3",
            (Family::H264, false) => b"avc1",
            (Family::Hevc, true) => b"hev1",
            (Family::Hevc, false) => b"hvc1",
        }
    }

    /// The framing of a stream's packets and its parameter sets, from its extradata: an
    /// `avcC` or `hvcC` record, or Annex B units.
    pub fn setup(self, extradata: &[u8]) -> (Framing, Vec<Vec<u8>>) {
        if extradata.first() != Some(&1) {
            let sets = nal_units(extradata, Framing::StartCodes)
                .into_iter()
                .filter(|u| self.is_parameter_set(u))
                .map(<[u8]>::to_vec)
                .collect();
            return (Framing::StartCodes, sets);
        }
        let mut sets = Vec::new();
        let mut unit = |at: &mut usize| -> Option<()> {
            let len = extradata.get(*at..*at + 2)?;
            let len = u16::from_be_bytes([len[0], len[1]]) as usize;
            sets.push(extradata.get(*at + 2..*at + 2 + len)?.to_vec());
            *at += 2 + len;
            Some(())
        };
        match self {
            Family::H264 => {
                let length = extradata.get(4).map_or(4, |b| (b & 3) as usize + 1);
                let mut at = 5;
                // SPS count (low five bits), then the PPS count (a byte) after them.
                for mask in [0x1f, 0xff] {
                    let Some(&count) = extradata.get(at) else {
                        break;
                    };
                    at += 1;
                    for _ in 0..(count & mask) {
                        if unit(&mut at).is_none() {
                            break;
                        }
                    }
                }
                (Framing::Length(length), sets)
            }
            Family::Hevc => {
                let length = extradata.get(21).map_or(4, |b| (b & 3) as usize + 1);
                let arrays = extradata.get(22).copied().unwrap_or(0);
                let mut at = 23;
                for _ in 0..arrays {
                    // The unit type (a byte), then a count of units (two).
                    let Some(count) = extradata.get(at + 1..at + 3) else {
                        break;
                    };
                    let count = u16::from_be_bytes([count[0], count[1]]);
                    at += 3;
                    for _ in 0..count {
                        if unit(&mut at).is_none() {
                            break;
                        }
                    }
                }
                (Framing::Length(length), sets)
            }
        }
    }
}

/// `units` in Annex B form.
pub(super) fn annex_b<'a>(units: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for unit in units {
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(unit);
    }
    out
}

/// Where a clip's copied packets come from.
pub(super) struct CopySource {
    pub opened: Opened,
    pub stream_index: usize,
    /// Where reading starts (the scan's start): packets are counted from there.
    pub seek: Option<i64>,
    pub framing: Framing,
    /// The source's parameter sets, for a copied run whose first packet has none.
    pub parameter_sets: Vec<Vec<u8>>,
    /// The packets scanned, decode order.
    pub packets: Vec<ScannedPacket>,
    /// The source stream's parameters (size, format, colour), for the clip's header.
    pub params: ff::codec::Parameters,
}

/// How a clip is written: its parts in order, and where the copied ones come from.
pub(super) struct Plan {
    pub clip: Range<usize>,
    pub segments: Vec<Segment>,
    pub copy: Option<CopySource>,
    /// The clip's codec: the source's where packets are copied, else H.264.
    pub family: Family,
}

impl Plan {
    /// Every frame of `clip` encoded again.
    pub fn encode_all(clip: Range<usize>) -> Plan {
        Plan {
            segments: vec![Segment::Encode(clip.clone())],
            clip,
            copy: None,
            family: Family::H264,
        }
    }

    /// Some packets are copied.
    pub fn copies(&self) -> bool {
        self.copy.is_some()
    }

    /// The delay the clip's decode timestamps need: the copied runs' reordering, and the
    /// encoder's.
    pub fn delay(&self) -> usize {
        let mut delay = 0;
        for segment in &self.segments {
            delay = delay.max(match (segment, &self.copy) {
                (Segment::Copy { packets: run, .. }, Some(copy)) => {
                    let pts: Vec<i64> = copy.packets[run.clone()].iter().map(|p| p.pts).collect();
                    reorder_delay(&pts)
                }
                // libx264's and libx265's B-frames with a pyramid: two, and one to spare.
                _ => 3,
            });
        }
        delay
    }
}

/// The plan for clip `clip` (frames, display order) of `reader`'s video: a smart cut where a
/// GOP of it can be copied, else every frame encoded again.
pub(super) fn plan_clip(
    reader: &VideoReader,
    source: &Source,
    clip: Range<usize>,
) -> Result<Plan, ClipError> {
    let whole = || Ok(Plan::encode_all(clip.clone()));
    if reader.frames().identity != Identity::Pts || clip.is_empty() {
        return whole();
    }
    let Some(stream) = reader.stream() else {
        return whole();
    };
    let params = stream.parameters();
    let stream_index = stream.index();
    // SAFETY: the codec parameters are valid while the reader's demuxer is open; the
    // extradata is copied here.
    let (width, height, format, extradata) = unsafe {
        let par = params.as_ptr();
        let extradata = if (*par).extradata.is_null() || (*par).extradata_size <= 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts((*par).extradata, (*par).extradata_size as usize).to_vec()
        };
        ((*par).width, (*par).height, (*par).format, extradata)
    };
    let yuv420 = [
        ffi::AVPixelFormat::AV_PIX_FMT_YUV420P as i32,
        ffi::AVPixelFormat::AV_PIX_FMT_YUVJ420P as i32,
    ];
    // The encoded parts must match the copied ones: 8-bit 4:2:0 at even sizes, in the
    // source's codec, with its encoder here.
    let Some(family) = Family::of(params.id()) else {
        return whole();
    };
    if ff::encoder::find_by_name(family.encoder()).is_none()
        || !yuv420.contains(&format)
        || width % 2 != 0
        || height % 2 != 0
    {
        return whole();
    }
    let params = params.clone();
    let (framing, parameter_sets) = family.setup(&extradata);
    let frame_pts = reader.frame_pts();
    // Read from the keyframe at or before the clip's start.
    let seek = reader
        .frames()
        .seek_points
        .iter()
        .rev()
        .find(|p| p.frame <= clip.start)
        .map(|p| p.target);
    let opened = source.open_streaming();
    let mut input = opened.input(|| false).map_err(encode_error("source"))?;
    let stop = frame_pts.get(clip.end).copied();
    let (packets, complete) = scan(&mut input, stream_index, seek, stop, framing, family)?;
    let segments = plan(&packets, frame_pts, clip.clone(), complete);
    if !segments.iter().any(|s| matches!(s, Segment::Copy { .. })) {
        return whole();
    }
    Ok(Plan {
        clip,
        segments,
        copy: Some(CopySource {
            opened,
            stream_index,
            seek,
            framing,
            parameter_sets,
            packets,
            params,
        }),
        family,
    })
}

/// Read the stream's packets in decode order, from `seek` (else the start) until the first
/// sync packet shown at or after `stop` (included) or the end (`true`).
fn scan(
    input: &mut ff::format::context::Input,
    stream: usize,
    seek: Option<i64>,
    stop: Option<i64>,
    framing: Framing,
    family: Family,
) -> Result<(Vec<ScannedPacket>, bool), ClipError> {
    if let Some(target) = seek {
        seek_to(input, stream, target);
    }
    let mut packets = Vec::new();
    loop {
        let mut packet = ff::Packet::empty();
        if packet.read(input).is_err() {
            return Ok((packets, true));
        }
        if packet.stream() != stream {
            continue;
        }
        let Some(pts) = packet.pts() else {
            return Err(ClipError::Encode {
                what: "copy",
                message: "a packet without a timestamp".into(),
            });
        };
        let sync = packet.is_key()
            && nal_units(packet.data().unwrap_or_default(), framing)
                .iter()
                .any(|u| family.is_sync(u));
        packets.push(ScannedPacket { pts, sync });
        if sync && stop.is_some_and(|s| pts >= s) {
            return Ok((packets, false));
        }
    }
}

pub(super) fn seek_to(input: &mut ff::format::context::Input, stream: usize, target: i64) {
    // SAFETY: `input` owns an open AVFormatContext; av_seek_frame only moves its read
    // position. The stream index is one of its streams.
    unsafe {
        ffi::av_seek_frame(
            input.as_mut_ptr(),
            stream as i32,
            target,
            ffi::AVSEEK_FLAG_BACKWARD,
        );
    }
}

#[cfg(test)]
mod tests;
