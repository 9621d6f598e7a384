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
use std::path::Path;

use ff::ffi;
use ffmpeg_next as ff;

use super::{
    ClipError, Described, Encoder, each_picture, encode_error, frame_duration,
    keep_stream_description,
};
use crate::frames::Identity;
use crate::reader::VideoReader;
use crate::source::Source;

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

/// An H.264 NAL unit's type.
fn nal_type(unit: &[u8]) -> u8 {
    unit.first().map_or(0, |b| b & 0x1f)
}

const IDR: u8 = 5;
const SPS: u8 = 7;
const PPS: u8 = 8;

/// `units` in Annex B form.
fn annex_b<'a>(units: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for unit in units {
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(unit);
    }
    out
}

/// The framing of an H.264 stream's packets and its parameter sets (SPS and PPS units), from
/// its extradata: an `avcC` record or Annex B units.
pub(super) fn h264_setup(extradata: &[u8]) -> (Framing, Vec<Vec<u8>>) {
    if extradata.first() != Some(&1) {
        let sets = nal_units(extradata, Framing::StartCodes)
            .into_iter()
            .filter(|u| matches!(nal_type(u), SPS | PPS))
            .map(<[u8]>::to_vec)
            .collect();
        return (Framing::StartCodes, sets);
    }
    let length = extradata.get(4).map_or(4, |b| (b & 3) as usize + 1);
    let mut sets = Vec::new();
    let mut at = 5;
    // SPS count (low five bits), then the PPS count (a byte) after them.
    for mask in [0x1f, 0xff] {
        let Some(&count) = extradata.get(at) else {
            break;
        };
        at += 1;
        for _ in 0..(count & mask) {
            let Some(len) = extradata.get(at..at + 2) else {
                break;
            };
            let len = u16::from_be_bytes([len[0], len[1]]) as usize;
            let Some(unit) = extradata.get(at + 2..at + 2 + len) else {
                break;
            };
            sets.push(unit.to_vec());
            at += 2 + len;
        }
    }
    (Framing::Length(length), sets)
}

/// What the smart cut did: frames encoded again and frames copied.
pub(super) struct Cut {
    pub reencoded: u64,
    pub copied: u64,
}

/// Write clip `clip` (frames, display order) of `reader`'s video to `part` by smart cut, or
/// `Ok(None)` where no GOP of it can be copied (the caller encodes it whole).
pub(super) fn write(
    reader: &mut VideoReader,
    source: &Source,
    clip: Range<usize>,
    described: &Described,
    part: &Path,
) -> Result<Option<Cut>, ClipError> {
    if reader.frames().identity != Identity::Pts || clip.is_empty() {
        return Ok(None);
    }
    let Some(stream) = reader.stream() else {
        return Ok(None);
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
    // The encoded parts must match the copied ones: 8-bit 4:2:0 at even sizes (libx264's).
    if params.id() != ff::codec::Id::H264
        || !yuv420.contains(&format)
        || width % 2 != 0
        || height % 2 != 0
    {
        return Ok(None);
    }
    let params = params.clone();
    let (framing, parameter_sets) = h264_setup(&extradata);
    let tb = reader.time_base();
    let time_base = ff::Rational::new(tb.num, tb.den);
    let frame_pts = reader.frame_pts().to_vec();
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
    let (packets, complete) = scan(&mut input, stream_index, seek, stop, framing)?;
    let segments = plan(&packets, &frame_pts, clip.clone(), complete);
    if !segments.iter().any(|s| matches!(s, Segment::Copy { .. })) {
        return Ok(None);
    }
    // The decode timestamps' delay: the copied runs' reordering, and libx264's (B-frames
    // with a pyramid: two).
    let mut delay = 0;
    for segment in &segments {
        delay = delay.max(match segment {
            Segment::Copy { packets: run, .. } => {
                let pts: Vec<i64> = packets[run.clone()].iter().map(|p| p.pts).collect();
                reorder_delay(&pts)
            }
            Segment::Encode(_) => 2,
        });
    }
    let first_pts = frame_pts[clip.start];
    let durations: Vec<i64> = clip
        .clone()
        .map(|i| frame_duration(&frame_pts, i))
        .collect();
    let mut joiner = Joiner {
        octx: ff::format::output_as(&part, "mp4").map_err(encode_error("output container"))?,
        params,
        described,
        header: false,
        shown: frame_pts[clip.clone()]
            .iter()
            .map(|p| p - first_pts)
            .collect(),
        durations,
        delay,
        written: 0,
        time_base,
        ost_tb: time_base,
    };
    // The copied packets: read again from the same place, counted as the scan counted them.
    if let Some(target) = seek {
        seek_to(&mut input, stream_index, target);
    } else {
        input = opened.input(|| false).map_err(encode_error("source"))?;
    }
    let mut read = 0usize;
    let mut cut = Cut {
        reencoded: 0,
        copied: 0,
    };
    for segment in &segments {
        match segment {
            Segment::Encode(frames) => {
                cut.reencoded += encode_part(
                    reader,
                    frames.clone(),
                    first_pts,
                    &frame_pts,
                    described,
                    &mut joiner,
                )?;
            }
            Segment::Copy {
                frames,
                packets: run,
            } => {
                while read < run.end {
                    let mut packet = ff::Packet::empty();
                    if packet.read(&mut input).is_err() {
                        return Err(ClipError::Encode {
                            what: "copy",
                            message: "the source ended before the packets to copy".into(),
                        });
                    }
                    if packet.stream() != stream_index {
                        continue;
                    }
                    let at = read;
                    read += 1;
                    if at < run.start {
                        continue;
                    }
                    let expected = packets[at].pts;
                    if packet.pts() != Some(expected) {
                        return Err(ClipError::Encode {
                            what: "copy",
                            message: format!(
                                "packet {at} shows at {:?}, not {expected} as it did",
                                packet.pts()
                            ),
                        });
                    }
                    let data = packet.data().unwrap_or_default();
                    let units = nal_units(data, framing);
                    // The run's first packet gets the source's parameter sets where it has
                    // none of its own (an encoded part before it brought other ones).
                    let lead = at == run.start && !units.iter().any(|u| nal_type(u) == SPS);
                    let bytes = annex_b(
                        parameter_sets
                            .iter()
                            .map(Vec::as_slice)
                            .filter(|_| lead)
                            .chain(units),
                    );
                    joiner.write(bytes, expected - first_pts, packet.is_key())?;
                }
                cut.copied += frames.len() as u64;
            }
        }
    }
    joiner.finish()?;
    Ok(Some(cut))
}

/// Read the stream's packets in decode order, from `seek` (else the start) until the first
/// sync packet shown at or after `stop` (included) or the end (`true`).
fn scan(
    input: &mut ff::format::context::Input,
    stream: usize,
    seek: Option<i64>,
    stop: Option<i64>,
    framing: Framing,
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
                .any(|u| nal_type(u) == IDR);
        packets.push(ScannedPacket { pts, sync });
        if sync && stop.is_some_and(|s| pts >= s) {
            return Ok((packets, false));
        }
    }
}

fn seek_to(input: &mut ff::format::context::Input, stream: usize, target: i64) {
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

/// Decode frames `frames` and encode them again as a part of the clip: the frames encoded.
fn encode_part(
    reader: &mut VideoReader,
    frames: Range<usize>,
    first_pts: i64,
    frame_pts: &[i64],
    described: &Described,
    joiner: &mut Joiner<'_>,
) -> Result<u64, ClipError> {
    let mut encoder: Option<Encoder> = None;
    let mut sent = 0u64;
    let time_base = joiner.time_base;
    each_picture(reader, frames, &mut |picture| {
        let e = match encoder.as_mut() {
            Some(e) => e,
            None => encoder.insert(Encoder::open(picture, time_base, described, false)?),
        };
        e.send(picture, frame_pts[picture.index] - first_pts)?;
        sent += 1;
        while let Some(packet) = e.receive() {
            joiner.write_encoded(&packet)?;
        }
        Ok(())
    })?;
    let Some(mut encoder) = encoder else {
        return Err(ClipError::NoFrames {
            frames: frame_pts.len(),
        });
    };
    encoder.send_eof()?;
    while let Some(packet) = encoder.receive() {
        joiner.write_encoded(&packet)?;
    }
    Ok(sent)
}

/// The clip's MP4, written packet by packet in decode order.
struct Joiner<'a> {
    octx: ff::format::context::Output,
    /// The source stream's parameters (size, format, colour), for the header.
    params: ff::codec::Parameters,
    described: &'a Described,
    header: bool,
    /// Every frame's presentation time from the clip's start, ascending, and how long it
    /// shows.
    shown: Vec<i64>,
    durations: Vec<i64>,
    delay: usize,
    written: usize,
    /// The source's time base (every timestamp here), and the output stream's.
    time_base: ff::Rational,
    ost_tb: ff::Rational,
}

impl Joiner<'_> {
    fn write_encoded(&mut self, packet: &ff::Packet) -> Result<(), ClipError> {
        let pts = packet.pts().ok_or_else(|| ClipError::Encode {
            what: "packet",
            message: "the encoder gave a packet without a timestamp".into(),
        })?;
        self.write(
            packet.data().unwrap_or_default().to_vec(),
            pts,
            packet.is_key(),
        )
    }

    /// Write the Annex B packet shown at `pts` (from the clip's start), the next in decode
    /// order.
    fn write(&mut self, data: Vec<u8>, pts: i64, key: bool) -> Result<(), ClipError> {
        let mismatch = |message: String| ClipError::Encode {
            what: "join",
            message,
        };
        let rank = self
            .shown
            .binary_search(&pts)
            .map_err(|_| mismatch(format!("a packet shown at {pts}, not a frame of the clip")))?;
        let n = self.written;
        let step = match self.shown.as_slice() {
            [a, b, ..] => b - a,
            _ => 1,
        };
        let dts = match n.checked_sub(self.delay) {
            Some(i) => *self.shown.get(i).ok_or_else(|| {
                mismatch(format!(
                    "more packets than the clip's {} frames",
                    self.shown.len()
                ))
            })?,
            None => self.shown[0] - (self.delay - n) as i64 * step,
        };
        if dts > pts {
            return Err(mismatch(format!(
                "packet {n} is decoded more than {} frames before it shows",
                self.delay
            )));
        }
        if !self.header {
            self.write_header(&data)?;
        }
        let mut packet = ff::Packet::copy(&data);
        packet.set_stream(0);
        packet.set_pts(Some(pts));
        packet.set_dts(Some(dts));
        packet.set_duration(self.durations[rank]);
        if key {
            packet.set_flags(ff::packet::Flags::KEY);
        }
        packet.rescale_ts(self.time_base, self.ost_tb);
        packet
            .write_interleaved(&mut self.octx)
            .map_err(encode_error("packet"))?;
        self.written += 1;
        Ok(())
    }

    /// The header, with the parameter sets that lead the first packet (Annex B) as the
    /// stream's extradata: the muxer writes them as the `avcC` record and stores every
    /// packet's units, parameter sets included, length-prefixed.
    fn write_header(&mut self, first: &[u8]) -> Result<(), ClipError> {
        let sets = annex_b(
            nal_units(first, Framing::StartCodes)
                .into_iter()
                .filter(|u| matches!(nal_type(u), SPS | PPS)),
        );
        let codec = ff::encoder::find(ff::codec::Id::H264);
        let mut ost = self
            .octx
            .add_stream(codec)
            .map_err(encode_error("stream"))?;
        ost.set_parameters(self.params.clone());
        ost.set_time_base(self.time_base);
        keep_stream_description(&mut ost, self.described);
        // SAFETY: the stream's codec parameters are owned by the output context, whose header
        // is not written yet; the extradata is allocated with FFmpeg's padding and filled.
        unsafe {
            let par = (*ost.as_mut_ptr()).codecpar;
            ffi::av_freep(std::ptr::addr_of_mut!((*par).extradata).cast());
            let padded = sets.len() + ffi::AV_INPUT_BUFFER_PADDING_SIZE as usize;
            let data = ffi::av_mallocz(padded).cast::<u8>();
            if data.is_null() {
                return Err(ClipError::Encode {
                    what: "header",
                    message: "out of memory".into(),
                });
            }
            std::ptr::copy_nonoverlapping(sets.as_ptr(), data, sets.len());
            (*par).extradata = data;
            (*par).extradata_size = sets.len() as i32;
            // Parameter sets in the stream, not only in the header.
            (*par).codec_tag = u32::from_le_bytes(*b"avc3");
        }
        let mut mux = ff::Dictionary::new();
        mux.set("movflags", "faststart");
        self.octx
            .write_header_with(mux)
            .map_err(encode_error("header"))?;
        self.ost_tb = self
            .octx
            .stream(0)
            .map_or(self.time_base, |s| s.time_base());
        self.header = true;
        Ok(())
    }

    /// Close the file, every frame of the clip written.
    fn finish(mut self) -> Result<(), ClipError> {
        if self.written != self.shown.len() {
            return Err(ClipError::Encode {
                what: "join",
                message: format!(
                    "{} packets for the clip's {} frames",
                    self.written,
                    self.shown.len()
                ),
            });
        }
        self.octx.write_trailer().map_err(encode_error("trailer"))
    }
}

#[cfg(test)]
mod tests;
