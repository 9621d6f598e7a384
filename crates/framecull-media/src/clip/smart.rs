//! Smart cut, the plan: which GOPs of a clip's source are copied packet for packet, and
//! which frames around them are encoded again ([`super::join`] writes the clip).
//!
//! A GOP is copied when decoding it needs nothing outside it and gives exactly its frames: it
//! starts at a random-access picture (H.264 IDR; HEVC IRAP), its packets up to the next one
//! are exactly the frames shown from its keyframe to the next's (no B-frame of it shows
//! before its keyframe or references the GOP before: open GOPs, and HEVC CRAs with leading
//! pictures, are encoded again), none is marked to be discarded, and those frames lie inside
//! the clip. A run of copied GOPs starts where a new coded sequence does (H.264 IDR; HEVC IDR
//! or BLA). Decoding it from its first packet then gives the very pictures a decode from the
//! start of the source gives.

use std::ops::Range;

use ff::ffi;
use ffmpeg_next as ff;

pub(super) use super::codec::Codec;
use super::{ClipError, encode_error};
use crate::frames::Identity;
pub(super) use crate::nal::Framing;
use crate::reader::VideoReader;
use crate::source::{Opened, Source};

/// One packet of the source's video stream, as the plan needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ScannedPacket {
    pub pts: i64,
    /// A GOP starts here: a random-access picture (H.264 IDR; HEVC IRAP).
    pub sync: bool,
    /// A copied run may start here: the picture starts a new coded sequence (H.264 IDR;
    /// HEVC IDR or BLA, not a CRA, whose counting goes on from the pictures before it).
    pub fresh: bool,
    /// The demuxer marks the packet to be decoded but not shown (an MP4 edit list).
    pub discard: bool,
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
/// to the first sync packet shown at or after the clip's end, or the first packet decoded
/// after it).
///
/// A GOP that lies inside the clip is copied whole. Of a GOP that starts inside the clip but
/// does not stand alone there (it runs past the clip's end, or its next GOP's leading
/// pictures show inside its span), the longest run of packets from its keyframe, in decode
/// order, that shows exactly its first frames is copied where it holds most of what the clip
/// shows of the GOP: every packet decoded before one of them is one of them, so they decode
/// alone to the very pictures of the source. Only the frames after that run, a few
/// B-frames' worth, are encoded again.
pub(super) fn plan(
    packets: &[ScannedPacket],
    frame_pts: &[i64],
    clip: Range<usize>,
    complete: bool,
) -> Vec<Segment> {
    let syncs: Vec<usize> = (0..packets.len()).filter(|&i| packets[i].sync).collect();
    let frame_of = |pts: i64| frame_pts.binary_search(&pts).ok();
    // Copyable GOPs, or their first frames: (frames, packets).
    let mut copies: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for (n, &first) in syncs.iter().enumerate() {
        let next = syncs.get(n + 1).copied();
        let end = next.unwrap_or(packets.len());
        let Some(a) = frame_of(packets[first].pts) else {
            continue;
        };
        if a < clip.start || a >= clip.end {
            continue;
        }
        let gop = &packets[first..end];
        let whole = whole_gop(gop, frame_pts, a, next.map(|k| packets[k].pts), complete)
            .filter(|b| *b <= clip.end);
        let (frames, run) = match whole {
            Some(b) => (a..b, first..end),
            None => {
                // What the clip holds of the GOP's span: worth a run of its own where the
                // run copies more of it than it leaves to encode.
                let span = next
                    .and_then(|k| frame_of(packets[k].pts))
                    .unwrap_or(frame_pts.len())
                    .min(clip.end);
                match shown_first(gop, frame_pts, a, clip.end) {
                    k if k > 0 && 2 * k > span.saturating_sub(a) => (a..a + k, first..first + k),
                    _ => continue,
                }
            }
        };
        match copies.last_mut() {
            Some((f, r)) if f.end == frames.start && r.end == run.start => {
                f.end = frames.end;
                r.end = run.end;
            }
            _ if packets[first].fresh => copies.push((frames, run)),
            _ => {}
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

/// The end (a display index) of the GOP `gop` (its packets, decode order) whose keyframe is
/// frame `a`, where it stands alone: read to its end (`next_pts`, the next GOP's keyframe,
/// or `complete`), and its packets exactly the frames shown from its keyframe to the next's,
/// none to be discarded.
fn whole_gop(
    gop: &[ScannedPacket],
    frame_pts: &[i64],
    a: usize,
    next_pts: Option<i64>,
    complete: bool,
) -> Option<usize> {
    let b = match next_pts {
        Some(pts) => frame_pts.binary_search(&pts).ok()?,
        None if complete => frame_pts.len(),
        None => return None,
    };
    if b <= a {
        return None;
    }
    // Pts are unique, so as many packets as frames, all within the GOP's display span, are
    // exactly its frames.
    let (lo, hi) = (frame_pts[a], frame_pts[b - 1]);
    (gop.len() == b - a && gop.iter().all(|p| p.pts >= lo && p.pts <= hi && !p.discard))
        .then_some(b)
}

/// How many of the GOP's packets (`gop`, decode order, its keyframe frame `a`), from its
/// first, show exactly frames `a..a + k` of the clip ending at frame `end`, at most: the
/// packets are taken until one shows outside `a..end` or is to be discarded, and the longest
/// of those runs whose frames leave no gap counts.
fn shown_first(gop: &[ScannedPacket], frame_pts: &[i64], a: usize, end: usize) -> usize {
    let mut best = 0;
    let mut last = a;
    for (i, p) in gop.iter().enumerate() {
        let Some(f) = frame_pts.binary_search(&p.pts).ok() else {
            break;
        };
        if f < a || f >= end || p.discard {
            break;
        }
        last = last.max(f);
        if last - a == i {
            best = i + 1;
        }
    }
    best
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
    /// The clip's codec: the source's where its encoder is here and its pictures are 8-bit
    /// 4:2:0, else H.264.
    pub codec: Codec,
    /// Why no packet is copied, when none is.
    pub why_encoded: Option<String>,
}

impl Plan {
    /// Every frame of `clip` encoded again, for the reason `why`.
    pub fn encode_all(clip: Range<usize>, why: impl Into<String>) -> Plan {
        Plan {
            segments: vec![Segment::Encode(clip.clone())],
            clip,
            copy: None,
            codec: Codec::Nal(crate::nal::Family::H264),
            why_encoded: Some(why.into()),
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
                _ => self.codec.encoder_delay(),
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
    let whole = |why: String| Ok(Plan::encode_all(clip.clone(), why));
    if reader.frames().identity != Identity::Pts {
        return whole(
            "its frames have no timestamps of their own (counted in decode order)".into(),
        );
    }
    let Some(stream) = reader.stream() else {
        return whole("no video stream to copy from".into());
    };
    let params = stream.parameters();
    let stream_index = stream.index();
    // SAFETY: plain fields of the codec parameters, valid while the reader's demuxer is open.
    let (width, height, format) = unsafe {
        let par = params.as_ptr();
        ((*par).width, (*par).height, (*par).format)
    };
    let extradata = crate::nal::extradata(&params);
    let yuv420 = [
        ffi::AVPixelFormat::AV_PIX_FMT_YUV420P as i32,
        ffi::AVPixelFormat::AV_PIX_FMT_YUVJ420P as i32,
    ];
    // The encoded parts must match the copied ones: 8-bit 4:2:0 at even sizes, in the
    // source's codec, with its encoder here.
    let Some(codec) = Codec::of(params.id()) else {
        return whole(format!(
            "{}: packets are copied from H.264, HEVC, VP9 and AV1 only",
            params.id().name()
        ));
    };
    if ff::encoder::find_by_name(codec.encoder()).is_none() {
        return whole(format!("no {} encoder here", codec.encoder()));
    }
    if !yuv420.contains(&format) {
        return whole(format!(
            "{}: packets are copied from 8-bit 4:2:0 only",
            pixel_format_name(format)
        ));
    }
    if width % 2 != 0 || height % 2 != 0 {
        return whole(format!("odd size {width}x{height}"));
    }
    let params = params.clone();
    let (framing, parameter_sets) = codec.setup(&extradata);
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
    let (packets, complete) = scan(&mut input, stream_index, seek, stop, framing, codec)?;
    let segments = plan(&packets, frame_pts, clip.clone(), complete);
    if !segments.iter().any(|s| matches!(s, Segment::Copy { .. })) {
        // Encoded whole, in the source's codec all the same.
        return Ok(Plan {
            codec,
            ..Plan::encode_all(clip, "no closed GOP lies inside the clip")
        });
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
        codec,
        why_encoded: None,
    })
}

/// FFmpeg's name of pixel format `format` (an `AVPixelFormat` as stored in codec parameters).
fn pixel_format_name(format: i32) -> String {
    if format < 0 {
        return "an unknown pixel format".into();
    }
    // SAFETY: `format` is a pixel format FFmpeg's demuxer stored (one of the enum's values);
    // av_get_pix_fmt_name returns null or a static string.
    unsafe {
        let name = ffi::av_get_pix_fmt_name(std::mem::transmute::<i32, ffi::AVPixelFormat>(format));
        if name.is_null() {
            format!("pixel format {format}")
        } else {
            std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned()
        }
    }
}

/// Read the stream's packets in decode order, from `seek` (else the start) until the first
/// sync packet shown at or after `stop`, or the first decoded after `stop` (included), or the
/// end (`true`).
fn scan(
    input: &mut ff::format::context::Input,
    stream: usize,
    seek: Option<i64>,
    stop: Option<i64>,
    framing: Framing,
    codec: Codec,
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
        let (sync, fresh) = codec
            .starts(packet.data().unwrap_or_default(), framing)
            .ok_or_else(|| ClipError::Encode {
                what: "copy",
                message: format!(
                    "the packet at {pts} is not what a {} stream holds",
                    codec.id().name()
                ),
            })?;
        let (sync, fresh) = (sync && packet.is_key(), fresh && packet.is_key());
        // SAFETY: a plain field of the packet just read.
        let discard =
            unsafe { (*ff::packet::Ref::as_ptr(&packet)).flags } & ffi::AV_PKT_FLAG_DISCARD != 0;
        // No packet after one decoded after the clip's end can end a GOP inside the clip.
        let past = stop.is_some_and(|s| packet.dts().unwrap_or(pts) > s);
        packets.push(ScannedPacket {
            pts,
            sync,
            fresh,
            discard,
        });
        if past || (sync && stop.is_some_and(|s| pts >= s)) {
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
