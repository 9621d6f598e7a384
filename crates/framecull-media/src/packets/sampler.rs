//! What a triage decodes of a stream as its packets come, within a budget of a share of the
//! bytes read: keyframes and their pairs, whole GOPs where the budget has room, and beyond it
//! the GOPs where damage shows.

use ffmpeg_next as ff;

use crate::decode::{DecodeOptions, FrameState, is_discarded};
use crate::ffmpeg_log;
use crate::frames::is_damaged;
use framecull_model::{FrameView, SampledDecode, TimeOrder};
use framecull_storage::CachedObject;

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
pub(super) struct Sampler<'k> {
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
    pub(super) fn new(
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

    pub(super) fn push(&mut self, packet: ff::Packet, anomaly: bool) {
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
    pub(super) fn finish(mut self, broken_end: bool) -> SampledDecode {
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
