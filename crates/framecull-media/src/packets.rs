//! Every packet of a video stream, read in one pass: the container's index and the packets'
//! timestamps, sizes and flags, for a triage; and, in the same pass, what is decoded where
//! damage hides, within a budget of `sample_share` of the bytes: the keyframes (each with the
//! frame decoded after it, a pair that shows motion), whole GOPs where the budget has room,
//! and beyond it every GOP with a packet anomaly (a corrupt mark, a run of zero bytes, a
//! decode time going back) and a last GOP cut short by a read error.
//!
//! An object in a store whose container indexes every packet (MP4, MOV) is not read whole:
//! the demuxer reads on over the index, which gives each packet's time, size and flags,
//! while only the bytes of the packets decoded are fetched.

use std::time::Instant;

use ffmpeg_next as ff;

use crate::decode::{
    DecodeError, declared_duration_secs, duration_stated, is_discarded, video_stream,
};
use crate::ffmpeg_log;
use crate::frames::stream_frame_step;
use crate::source::Opened;
use framecull_model::{FrameView, PacketRecord, PacketScan, Ratio, StreamChoice};
use framecull_storage::CachedObject;

mod sampler;
use sampler::Sampler;

/// Zero bytes in a row that compressed video data does not hold (a zeroed or unwritten
/// range): H.264 and HEVC forbid three, and entropy-coded data of other codecs has no reason
/// to hold so many.
const ZERO_RUN: usize = 64;

/// A file this small (in bytes) has every GOP decoded: reading it costs about what decoding
/// it does, and its damage may hide in any frame.
pub const DECODE_WHOLE_BELOW: u64 = 256 << 10;

/// Read every packet of the video stream `stream` of `source` (of `file_bytes`) until its
/// end, a read error or `deadline`, decoding what is described above (nothing with
/// `sample_share` below 0; everything in a file under [`DECODE_WHOLE_BELOW`]), and calling
/// `on_frame` with the analysis copy of each frame decoded (as the deep pass's
/// `decode_frames` makes it, but for its `content_hash`, not computed: 0) and whether it
/// `follows` the frame handed before it (the one shown before it, in the same decoding run).
///
/// One function: one read loop, run for every packet, that updates the index's keyframe
/// marks, the scan's records and the sampler (which holds `on_frame`) set up above it.
pub fn scan_packets(
    source: &Opened,
    stream: StreamChoice,
    deadline: Instant,
    sample_share: f64,
    file_bytes: u64,
    on_frame: &mut dyn FnMut(&FrameView, bool),
) -> Result<PacketScan, DecodeError> {
    ffmpeg_log::init();
    ffmpeg_log::clear_last_error();
    let mut input = source
        .input(move || Instant::now() > deadline)
        .map_err(|e| {
            if e == ff::Error::Exit {
                return DecodeError::TimedOut;
            }
            DecodeError::Open(match ffmpeg_log::take_last_error() {
                Some(d) => format!("{e} ({d})"),
                None => e.to_string(),
            })
        })?;
    let chosen = video_stream(&input, stream).ok_or(DecodeError::NoVideo)?;
    let index = chosen.index();
    let mut marks = match source {
        Opened::Object(_) => index_marks(&input, index),
        _ => None,
    };
    let by_index = match source {
        Opened::Object(object) if marks.is_some() => Some(object.clone()),
        _ => None,
    };
    if let Some(object) = &by_index {
        read_only_by_index(&mut input, index, object);
    }
    let chosen = input.stream(index).ok_or(DecodeError::NoVideo)?;
    let tb = chosen.time_base();
    let time_base = Ratio::new(tb.numerator(), tb.denominator());
    let mut scan = PacketScan {
        time_base,
        frame_step: time_base.map_or(1, |t| stream_frame_step(&chosen, t)),
        declared_frames: (chosen.frames() > 0).then_some(chosen.frames()),
        declared_duration_secs: declared_duration_secs(&input, &chosen),
        ..PacketScan::default()
    };
    // No decoder (a codec this FFmpeg lacks): the packets alone.
    let mut sampler = (sample_share >= 0.0)
        .then(|| {
            let share = if file_bytes < DECODE_WHOLE_BELOW {
                f64::INFINITY
            } else {
                sample_share
            };
            Sampler::new(
                &chosen,
                share,
                scan.declared_duration_secs,
                by_index.clone(),
                on_frame,
            )
        })
        .flatten();
    // A file cut short shows against a stated length; without one, in its last GOP only.
    let unstated_end = !duration_stated(&input);
    loop {
        if Instant::now() > deadline {
            scan.timed_out = true;
            break;
        }
        let mut packet = ff::Packet::empty();
        match packet.read(&mut input) {
            Ok(()) if packet.stream() == index => {
                if let Some(marks) = marks.as_mut() {
                    // What a parser said of the zeros in place of the bytes is no error.
                    ffmpeg_log::clear_last_error();
                    if let Some(key) = marks.key_at(packet.position()) {
                        let mut flags = packet.flags();
                        flags.set(ff::packet::Flags::KEY, key);
                        packet.set_flags(flags);
                    }
                }
                // Read by the index, the packet's bytes are not fetched (zeros in their place).
                let zeros = by_index.is_none() && packet.data().is_some_and(has_zero_run);
                scan.discarded_packets += u64::from(is_discarded(&packet));
                if zeros {
                    scan.first_zero_run.get_or_insert(scan.packets.len() as u64);
                    scan.zero_runs += 1;
                }
                let record = PacketRecord {
                    pts: packet.pts(),
                    dts: packet.dts(),
                    duration: packet.duration(),
                    size: u32::try_from(packet.size()).unwrap_or(u32::MAX),
                    key: packet.is_key(),
                    corrupt: packet.is_corrupt(),
                };
                let backwards = matches!(
                    (scan.packets.last().and_then(|p| p.dts), record.dts),
                    (Some(a), Some(b)) if b < a
                );
                if let Some(s) = sampler.as_mut() {
                    s.push(packet, record.corrupt || zeros || backwards);
                }
                scan.packets.push(record);
            }
            Ok(()) => {}
            Err(ff::Error::Eof) => break,
            Err(ff::Error::Exit) => {
                scan.timed_out = true;
                break;
            }
            Err(e) => {
                scan.read_error = Some(match ffmpeg_log::take_last_error() {
                    Some(d) => format!("{e} ({d})"),
                    None => e.to_string(),
                });
                break;
            }
        }
    }
    if let Some(s) = sampler {
        scan.sample = s.finish(scan.read_error.is_some() || unstated_end);
    }
    Ok(scan)
}

/// The keyframe marks of a stream's index, in its order. A packet read by the index has no
/// bytes for a parser to tell a keyframe by (FFmpeg parses H.264 and HEVC in MP4 for it); the
/// index (an MP4's sync samples) tells instead.
struct IndexMarks {
    /// Each packet's place in the file, and whether it is a keyframe.
    entries: Vec<(i64, bool)>,
    next: usize,
}

impl IndexMarks {
    /// Whether the packet at `pos` (the next in the index, or a few after) is a keyframe.
    fn key_at(&mut self, pos: isize) -> Option<bool> {
        let pos = pos as i64;
        let mut ahead = self.entries.get(self.next..)?.iter().take(64);
        let found = ahead.position(|&(p, _)| p == pos)?;
        self.next += found + 1;
        Some(self.entries[self.next - 1].1)
    }
}

/// The index of stream `index`, if the container of `input` is one whose index gives the
/// place, size, time and flags of every packet (MP4, MOV: the sample tables), the index holds
/// as many packets as the stream states (not a fragmented file, whose index grows as it is
/// read), and it marks keyframes (a file without sync samples has every packet marked: its
/// keyframes are told by parsing, unless its codec is intra-only).
fn index_marks(input: &ff::format::context::Input, index: usize) -> Option<IndexMarks> {
    if !input.format().name().split(',').any(|n| n == "mov") {
        return None;
    }
    let stream = input.stream(index)?;
    // SAFETY: the stream pointer is valid while `input` is; the entries read are copied
    // before anything else touches the stream.
    let entries: Vec<(i64, bool)> = unsafe {
        let st = stream.as_ptr() as *mut ff::ffi::AVStream;
        let n = ff::ffi::avformat_index_get_entries_count(st);
        (0..n)
            .filter_map(|i| ff::ffi::avformat_index_get_entry(st, i).as_ref())
            .map(|e| (e.pos, e.flags() & ff::ffi::AVINDEX_KEYFRAME != 0))
            .collect()
    };
    // SAFETY: the descriptor FFmpeg returns is static, or null.
    let intra_only = unsafe {
        ff::ffi::avcodec_descriptor_get(stream.parameters().id().into())
            .as_ref()
            .is_some_and(|d| d.props & ff::ffi::AV_CODEC_PROP_INTRA_ONLY != 0)
    };
    let marked = intra_only || entries.iter().any(|&(_, key)| !key);
    (stream.frames() > 0 && entries.len() as i64 == stream.frames() && marked)
        .then_some(IndexMarks { entries, next: 0 })
}

/// Read the packets of `input` by its index from here on: other streams are skipped, and the
/// bytes of `object` not fetched yet read as zeros, with no request (the sampler fetches the
/// packets it decodes).
fn read_only_by_index(input: &mut ff::format::context::Input, index: usize, object: &CachedObject) {
    // SAFETY: `streams` holds `nb_streams` valid stream pointers while `input` is open; the
    // demuxer skips the packets of a stream marked to discard all.
    unsafe {
        let ctx = input.as_mut_ptr();
        for i in 0..(*ctx).nb_streams as usize {
            if i != index {
                (**(*ctx).streams.add(i)).discard = ff::ffi::AVDiscard::AVDISCARD_ALL;
            }
        }
    }
    object.placeholders();
}

/// Whether `data` holds [`ZERO_RUN`] zero bytes in a row. Such a run holds a whole chunk of
/// half its length at a multiple of that length: only chunks are looked at, and where one is
/// all zeros, the run around it (a check of every byte cost the triage a third of its time).
fn has_zero_run(data: &[u8]) -> bool {
    const CHUNK: usize = ZERO_RUN / 2;
    data.chunks_exact(CHUNK).enumerate().any(|(i, chunk)| {
        if chunk.iter().any(|&b| b != 0) {
            return false;
        }
        let start = i * CHUNK;
        let before = data[..start].iter().rev().take_while(|&&b| b == 0).count();
        let after = data[start..].iter().take_while(|&&b| b == 0).count();
        before + after >= ZERO_RUN
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte checked: what `has_zero_run` must answer.
    fn zero_run_byte_by_byte(data: &[u8]) -> bool {
        let mut run = 0;
        data.iter().any(|&b| {
            run = if b == 0 { run + 1 } else { 0 };
            run >= ZERO_RUN
        })
    }

    #[test]
    fn zero_runs_are_found_wherever_they_start_and_only_when_long_enough() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let mut found = 0;
        for case in 0..4000 {
            let len = next() % 600;
            let mut data: Vec<u8> = (0..len).map(|_| (next() % 255 + 1) as u8).collect();
            // Runs of zeros around the length that counts, at any offset.
            for _ in 0..(case % 3) {
                let run = ZERO_RUN - 3 + next() % 7;
                if len > run {
                    let at = next() % (len - run + 1);
                    data[at..at + run].fill(0);
                }
            }
            let expected = zero_run_byte_by_byte(&data);
            found += usize::from(expected);
            assert_eq!(has_zero_run(&data), expected, "case {case}: {data:?}");
        }
        assert!(found > 500, "{found} of the cases hold a run");
    }
}
