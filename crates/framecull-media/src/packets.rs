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
    DecodeError, DecodeOptions, FrameState, declared_duration_secs, duration_stated, is_discarded,
    video_stream,
};
use crate::ffmpeg_log;
use crate::frames::{is_damaged, stream_frame_step};
use crate::source::Opened;
use framecull_model::{
    FrameView, PacketRecord, PacketScan, Ratio, SampledDecode, StreamChoice, TimeOrder,
};
use framecull_storage::CachedObject;

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

/// Keyframes decoded at least, beyond the budget where need be, spread over the file's
/// declared length: the picture measures and hashes sample the whole file (a long black
/// section, a near duplicate's moments), not its start where the budget is spent.
const SPREAD_KEYFRAMES: f64 = 8.0;
/// Keyframes decoded with the packet after them, spread over the file's declared length (the
/// first keyframes where it has none): motion is measured on these pairs and scaled to the
/// file by its packet sizes.
const MOTION_PAIRS: u64 = 6;
/// Beyond those, keyframes whose next packet is small enough to repeat its reference are
/// decoded with it, up to this many (cheap, and the evidence of a frozen picture).
const SMALL_PAIRS: u64 = 16;
/// Packets that lead a keyframe (shown before it: an open GOP's) passed on the way to its
/// pair, at most.
const PAIR_LEADING: u32 = 8;

/// Packets held, in a stream whose first keyframe has not come, to decode if none comes.
const HELD_BEFORE_KEY: usize = 300;

/// How a GOP is read by the sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Decoded whole, as its packets come.
    Whole,
    /// Its keyframe decoded alone; its packets held in case an anomaly shows.
    Key,
    /// Nothing decoded; its packets held in case an anomaly shows.
    Held,
}

/// Decodes what a triage samples, as the packets come, within a budget of `share` of the
/// bytes read: every keyframe while the budget lasts (damage to any keyframe shows, and a
/// stream that decodes to nothing) with the packet after it (its frame, shown after the
/// keyframe, measures motion against it), a whole GOP wherever the budget has room for one (the
/// predicted frames), and, beyond the budget, every GOP with a packet anomaly, the last GOP
/// of a file whose reading stopped on an error or whose container states no length, and the
/// packets of a stream with no keyframe at all (up to [`HELD_BEFORE_KEY`]).
struct Sampler<'k> {
    decoder: ff::decoder::Video,
    /// The object whose packets are read by its index (their bytes fetched when decoded).
    by_index: Option<CachedObject>,
    on_frame: &'k mut dyn FnMut(&FrameView, bool),
    frames: FrameState,
    share: f64,
    /// Packets and bytes seen.
    seen: u64,
    seen_bytes: u64,
    gops_seen: u64,
    /// The GOP being read: its packets held (modes `Key` and `Held`), and whether one had an
    /// anomaly.
    gop: Vec<(u64, ff::Packet)>,
    /// The number (from 1) of the packet being decoded, for messages.
    sending: u64,
    mode: Mode,
    anomaly: bool,
    /// The presentation time of the GOP's keyframe: frames before it are leading pictures
    /// that need the previous GOP, not damage.
    key_pts: Option<i64>,
    /// A keyframe has been seen (packets before the first belong to no decodable GOP).
    started: bool,
    /// Packets sent, those of them the demuxer does not mark to discard (before the start of
    /// an MP4 edit list: they give no frame by design), and frames out, since the decoder was
    /// last flushed.
    run_sent: u64,
    run_kept: u64,
    run_frames: u64,
    /// The keyframe of the GOP being decoded again was handed to `on_frame` already.
    key_handed: bool,
    /// A keyframe decoded alone waits for the packet after it (`pair_wanted`: to measure
    /// motion, whatever its size), past `pair_leading` packets that lead it.
    pair_pending: bool,
    pair_wanted: bool,
    pair_leading: u32,
    /// Pairs decoded for motion and for being small; the bytes decoded beyond the budget
    /// (the pairs' second packets, keyframes due by the spread only); and the time from which
    /// the next motion pair is due.
    pairs: u64,
    small_pairs: u64,
    beyond_bytes: u64,
    next_pair_secs: f64,
    /// Seconds between motion pairs: the declared length over [`MOTION_PAIRS`].
    pair_spacing: f64,
    /// The keyframe being decoded is due by the spread only (beyond the budget).
    key_beyond: bool,
    /// Seconds between the keyframes decoded whatever the budget (the declared length over
    /// [`SPREAD_KEYFRAMES`]; 0 without one), and the time the next is due.
    key_spacing: f64,
    next_key_secs: f64,
    /// The most bytes of a packet that may repeat its reference.
    small_packet: u64,
    /// The keyframe of the GOP held was decoded as a pair's second frame.
    key_in_pair: bool,
    /// The decoding run of a keyframe decoded alone goes on into the next keyframe (which
    /// follows it directly: an intra-only stream).
    run_open: bool,
    /// The frame output last in this decoding run was handed to `on_frame`.
    handed_last: bool,
    /// The size of the frame decoded last, and the order of this decoding run's frame times.
    last_size: Option<(u32, u32)>,
    run_order: TimeOrder,
    /// Seconds per time-base unit, and the frame rate that times a frame without a timestamp
    /// (by its index, as the deep pass does: only in a decode from the file's start).
    tb_secs: f64,
    fps: f64,
    /// Frames out of a decode that has run from the file's first packet without a flush;
    /// `None` once the decoder was flushed after the start.
    from_start: Option<u64>,
    out: SampledDecode,
}

impl<'k> Sampler<'k> {
    /// `declared_secs`: the stream's declared length, over which motion pairs are spread.
    fn new(
        stream: &ff::format::stream::Stream<'_>,
        share: f64,
        declared_secs: Option<f64>,
        by_index: Option<CachedObject>,
        on_frame: &'k mut dyn FnMut(&FrameView, bool),
    ) -> Option<Sampler<'k>> {
        let ctx = ff::codec::context::Context::from_parameters(stream.parameters()).ok()?;
        let decoder = ctx.decoder().video().ok()?;
        let small_packet = framecull_model::repeat_packet_bytes(decoder.width(), decoder.height());
        let rate =
            |r: ff::Rational| (r.numerator() > 0 && r.denominator() > 0).then(|| f64::from(r));
        let fps = rate(stream.avg_frame_rate())
            .or_else(|| rate(stream.rate()))
            .unwrap_or(25.0);
        Some(Sampler {
            decoder,
            by_index,
            on_frame,
            frames: FrameState::default(),
            share,
            seen: 0,
            seen_bytes: 0,
            gops_seen: 0,
            gop: Vec::new(),
            sending: 0,
            mode: Mode::Held,
            anomaly: false,
            key_pts: None,
            started: false,
            run_sent: 0,
            run_kept: 0,
            run_frames: 0,
            key_handed: false,
            pair_pending: false,
            pair_wanted: false,
            pair_leading: 0,
            pairs: 0,
            small_pairs: 0,
            beyond_bytes: 0,
            next_pair_secs: f64::NEG_INFINITY,
            pair_spacing: declared_secs.map_or(0.0, |d| d / MOTION_PAIRS as f64),
            small_packet,
            key_beyond: false,
            key_spacing: declared_secs.map_or(0.0, |d| d / SPREAD_KEYFRAMES),
            next_key_secs: f64::NEG_INFINITY,
            key_in_pair: false,
            run_open: false,
            handed_last: false,
            last_size: None,
            run_order: TimeOrder::default(),
            tb_secs: f64::from(stream.time_base()),
            fps,
            from_start: Some(0),
            out: SampledDecode::default(),
        })
    }

    fn push(&mut self, packet: ff::Packet, anomaly: bool) {
        let size = packet.size() as u64;
        self.seen += 1;
        self.sending = self.seen;
        self.seen_bytes += size;
        if self.pair_pending {
            self.pair(&packet, size);
        }
        if packet.is_key() {
            // Packets before the first keyframe belong to no GOP that decodes on its own.
            if !self.started {
                self.gop.clear();
            }
            let was_whole = self.mode == Mode::Whole;
            // What ends a GOP is told of its last packet; what starts one, of this.
            self.sending = self.seen - 1;
            if !was_whole {
                self.end_gop(false);
            }
            let mode = self.mode_of_next_gop(packet.pts());
            self.key_in_pair = false;
            if was_whole && mode == Mode::Whole {
                // Whole GOPs in a row decode as one stream, as in the deep pass: the frames
                // that lead this GOP have the previous one to refer to.
                self.out.gops += 1;
                self.anomaly = false;
                self.key_pts = None;
                self.sending = self.seen;
            } else {
                if was_whole {
                    self.end_gop(false);
                }
                self.sending = self.seen;
                let continued = std::mem::take(&mut self.run_open);
                if continued && mode != Mode::Key {
                    // The keyframe after one decoded alone, beyond the budget: the pair's
                    // second frame.
                    if mode == Mode::Held {
                        self.beyond_bytes += size;
                        self.key_in_pair = true;
                        self.send(&packet);
                    }
                    self.finish_decoding();
                }
                // A run continued from the keyframe before has no frames leading this one.
                self.key_pts = packet.pts().filter(|_| !continued || mode != Mode::Key);
                match mode {
                    Mode::Whole => self.start_decoding(),
                    Mode::Key => {
                        if !continued {
                            self.start_decoding();
                        }
                        if self.key_beyond {
                            self.beyond_bytes += size;
                        }
                        self.send(&packet);
                        // The run stays open for the packet after it (see `pair`).
                        self.pair_pending = true;
                        self.pair_leading = 0;
                        self.pair_wanted = self.pairs < MOTION_PAIRS
                            && packet
                                .pts()
                                .is_none_or(|p| (p as f64 * self.tb_secs) >= self.next_pair_secs);
                        self.out.keyframes += 1;
                    }
                    Mode::Held => {}
                }
            }
            self.started = true;
            self.mode = mode;
        }
        self.anomaly |= anomaly;
        if !self.started {
            if self.gop.len() < HELD_BEFORE_KEY {
                self.gop.push((self.seen, packet));
            }
            return;
        }
        if self.mode == Mode::Whole {
            self.send(&packet);
        } else {
            self.gop.push((self.seen, packet));
        }
    }

    /// How the GOP a keyframe (presented at `pts`) starts is read: whole where the budget
    /// has room for a GOP of the average size beyond what was decoded (never the first,
    /// unless everything is, or its keyframe has no presentation time, as in AVI, where the
    /// decoder makes the times and the first GOP shows how), else its keyframe while the
    /// budget lasts (always the first's) or where one is due by the spread of
    /// [`SPREAD_KEYFRAMES`], else held.
    fn mode_of_next_gop(&mut self, pts: Option<i64>) -> Mode {
        let budget = self.share * self.seen_bytes as f64;
        // What is decoded beyond the budget does not spend it.
        let spent = (self.out.bytes - self.beyond_bytes) as f64;
        let average_gop = self.seen_bytes as f64 / (self.gops_seen + 1) as f64;
        self.gops_seen += 1;
        if self.gops_seen == 1 && pts.is_none() {
            return Mode::Whole;
        }
        let at = pts.map(|p| p as f64 * self.tb_secs);
        let due = self.key_spacing > 0.0 && at.is_some_and(|t| t >= self.next_key_secs);
        let whole = self.share.is_infinite() || self.gops_seen > 1;
        let within = self.gops_seen == 1 || spent < budget;
        // A keyframe due by the spread only is decoded beyond the budget.
        self.key_beyond = !within && due;
        let mode = if whole && spent + average_gop <= budget {
            Mode::Whole
        } else if within || due {
            Mode::Key
        } else {
            Mode::Held
        };
        if let Some(t) = at.filter(|_| mode != Mode::Held) {
            self.next_key_secs = self.next_key_secs.max(t + self.key_spacing);
        }
        mode
    }

    /// The packet after a keyframe decoded alone (in decode order): decoded with it where a
    /// motion pair is due or it is small (see [`MOTION_PAIRS`], [`SMALL_PAIRS`]), after the
    /// packets leading the keyframe; a keyframe itself (an intra-only stream) continues the
    /// run, if its own GOP is sampled so (see `push`).
    fn pair(&mut self, packet: &ff::Packet, size: u64) {
        let leading = matches!((packet.pts(), self.key_pts), (Some(t), Some(k)) if t < k);
        if leading && !packet.is_key() && self.pair_leading < PAIR_LEADING {
            self.pair_leading += 1;
            self.beyond_bytes += size;
            self.send(packet);
            return;
        }
        self.pair_pending = false;
        let small = !packet.is_key() && size <= self.small_packet;
        let take = !leading && (self.pair_wanted || (small && self.small_pairs < SMALL_PAIRS));
        if !take {
            self.finish_decoding();
            return;
        }
        if self.pair_wanted {
            self.pairs += 1;
            let at = self.key_pts.map_or(0.0, |k| k as f64 * self.tb_secs);
            self.next_pair_secs = at + self.pair_spacing;
        } else {
            self.small_pairs += 1;
        }
        if packet.is_key() {
            self.run_open = true;
        } else {
            self.beyond_bytes += size;
            self.send(packet);
            self.finish_decoding();
        }
    }

    /// The GOP read so far ends: decode it whole if it had an anomaly (or it is the last of
    /// a file whose reading stopped on an error: `broken_end`) and was not decoded as it came.
    fn end_gop(&mut self, broken_end: bool) {
        if std::mem::take(&mut self.pair_pending) {
            self.finish_decoding();
        }
        let again = self.mode != Mode::Whole && self.started && (self.anomaly || broken_end);
        if (again || broken_end) && std::mem::take(&mut self.run_open) {
            self.finish_decoding();
        }
        if self.mode == Mode::Whole {
            self.finish_decoding();
            self.out.gops += 1;
        } else if again && !self.gop.is_empty() {
            self.start_decoding();
            self.key_handed = self.mode == Mode::Key || self.key_in_pair;
            for (number, packet) in std::mem::take(&mut self.gop) {
                self.sending = number;
                self.send(&packet);
            }
            self.finish_decoding();
            self.out.gops += 1;
        }
        self.gop.clear();
        self.mode = Mode::Held;
        self.anomaly = false;
    }

    fn start_decoding(&mut self) {
        if self.gops_seen > 1 || self.out.frames > 0 {
            self.from_start = None;
        }
        self.decoder.flush();
        self.handed_last = false;
        self.key_handed = false;
        self.run_sent = 0;
        self.run_kept = 0;
        self.run_frames = 0;
        self.fold_order();
    }

    /// Send the packet numbered `self.sending` (the one just read unless set otherwise).
    fn send(&mut self, packet: &ff::Packet) {
        self.run_sent += 1;
        self.run_kept += u64::from(!is_discarded(packet));
        self.out.bytes += packet.size() as u64;
        let fetched;
        let packet = match &self.by_index {
            Some(object) => match with_bytes(object, packet) {
                Ok(p) => {
                    fetched = p;
                    &fetched
                }
                Err(e) => {
                    self.error(format!("packet {}: cannot read: {e}", self.sending));
                    return;
                }
            },
            None => packet,
        };
        if let Err(e) = self.decoder.send_packet(packet) {
            self.error(format!("packet {}: {e}", self.sending));
        }
        self.drain();
    }

    /// Drain the decoder to its end; packets that gave no frame at all are an error (a
    /// stream that decodes to nothing, as the deep pass calls undecodable).
    fn finish_decoding(&mut self) {
        let _ = self.decoder.send_eof();
        self.drain();
        if self.run_kept > 0 && self.run_frames == 0 {
            let packets = framecull_model::count(self.run_sent, "packet");
            self.error(format!(
                "{packets} up to packet {} gave no frame",
                self.sending
            ));
        }
    }

    fn drain(&mut self) {
        let mut frame = ff::frame::Video::empty();
        loop {
            match self.decoder.receive_frame(&mut frame) {
                Ok(()) => {}
                Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => return,
                Err(ff::Error::Eof) => return,
                Err(e) => {
                    self.error(format!("packet {}: {e}", self.sending));
                    return;
                }
            }
            self.run_frames += 1;
            let leading = matches!((frame.timestamp(), self.key_pts), (Some(t), Some(k)) if t < k);
            // Frames leading the file's first GOP come out of the deep pass's decode too, in
            // the order counted here; those leading a GOP decoded after a flush do not.
            if leading && self.gops_seen > 1 {
                self.handed_last = false;
                continue;
            }
            let index = self.from_start;
            if let Some(n) = self.from_start.as_mut() {
                *n += 1;
            }
            let time = match (frame.timestamp(), index) {
                (Some(t), _) => Some(t as f64 * self.tb_secs),
                (None, Some(i)) => Some(i as f64 / self.fps),
                (None, None) => None,
            };
            if let Some(t) = time {
                self.run_order.push(t);
            }
            if leading {
                self.handed_last = false;
                continue;
            }
            self.out.frames += 1;
            let size = (frame.width(), frame.height());
            if self.last_size.is_some_and(|s| s != size) {
                self.out.size_changes += 1;
            }
            self.last_size = Some(size);
            let damaged = is_damaged(&frame);
            if damaged {
                let at = frame
                    .timestamp()
                    .map_or(String::new(), |t| format!(" (pts {t})"));
                self.error(format!("a frame decodes with errors{at}"));
            }
            if frame.is_key() && std::mem::take(&mut self.key_handed) {
                self.handed_last = false;
            } else {
                self.hand(&frame, damaged, time);
            }
        }
    }

    /// Hand the analysis copy of a frame decoded to `on_frame`.
    fn hand(&mut self, frame: &ff::frame::Video, corrupt: bool, time_secs: Option<f64>) {
        let size = DecodeOptions::default();
        let follows = std::mem::replace(&mut self.handed_last, false);
        match self.frames.convert(frame, size.max_width, size.max_height) {
            Ok(Some((width, height))) => {
                (self.on_frame)(
                    &FrameView {
                        index: self.out.frames - 1,
                        pts: frame.timestamp(),
                        time_secs,
                        coded_width: frame.width(),
                        coded_height: frame.height(),
                        corrupt,
                        key: frame.is_key(),
                        content_hash: 0,
                        planes: self.frames.planes(),
                        luma: self.frames.luma(),
                        width,
                        height,
                        coded_luma: None,
                        declared_fields: crate::frames::declared_fields(frame),
                    },
                    follows,
                );
                self.handed_last = true;
            }
            Ok(None) => {}
            Err(e) => self.error(format!("a frame: {e}")),
        }
    }

    fn error(&mut self, what: String) {
        self.out.errors += 1;
        if self.out.first_error.is_none() {
            let detail = ffmpeg_log::take_last_error().map_or(String::new(), |d| format!(": {d}"));
            self.out.first_error = Some(format!("{what}{detail}"));
        }
    }

    /// What the sample found; the GOP held is the file's last, decoded whole if its end is
    /// in doubt (`broken_end`). A stream without a keyframe has its first packets decoded.
    fn finish(mut self, broken_end: bool) -> SampledDecode {
        if !self.started {
            self.started = true;
            self.end_gop(true);
        } else {
            self.end_gop(broken_end);
        }
        if std::mem::take(&mut self.run_open) {
            self.finish_decoding();
        }
        self.fold_order();
        self.out
    }

    /// Add the decoding run's timestamp counts to the sample's, and start the next run's.
    fn fold_order(&mut self) {
        let run = std::mem::take(&mut self.run_order);
        self.out.pts_backwards += run.backwards;
        self.out.pts_repeats += run.repeats;
    }
}

/// `packet` (read by the index, zeros in place of its bytes) with its bytes from `object`.
fn with_bytes(
    object: &CachedObject,
    packet: &ff::Packet,
) -> Result<ff::Packet, framecull_storage::StorageError> {
    let mut filled = packet.clone();
    let (Ok(pos), Some(data)) = (u64::try_from(packet.position()), filled.data_mut()) else {
        return Ok(filled);
    };
    let bytes = object.bytes_at(pos, data.len())?;
    let n = bytes.len().min(data.len());
    data[..n].copy_from_slice(&bytes[..n]);
    Ok(filled)
}
