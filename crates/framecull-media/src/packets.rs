//! Every packet of a video stream, read in one pass: the container's index and the packets'
//! timestamps, sizes and flags, for a triage; and, in the same pass, a few GOPs decoded where
//! damage hides: the first, the last, those with a packet anomaly (a corrupt mark, a run of
//! zero bytes, a decode time going back) and a spread sample of `sample_share` of the packets.

use std::time::Instant;

use ffmpeg_next as ff;

use crate::decode::{DecodeError, declared_duration_secs, video_stream};
use crate::ffmpeg_log;
use crate::frames::{is_damaged, stream_frame_step};
use crate::source::Opened;
use framecull_model::{PacketRecord, PacketScan, Ratio, SampledDecode, StreamChoice};

/// Zero bytes in a row that compressed video data does not hold (a zeroed or unwritten
/// range): H.264 and HEVC forbid three, and entropy-coded data of other codecs has no reason
/// to hold so many.
const ZERO_RUN: usize = 64;

/// Read every packet of the video stream `stream` of `source` until its end, a read error or
/// `deadline`, decoding the GOPs described above (none with `sample_share` below 0).
pub fn scan_packets(
    source: &Opened,
    stream: StreamChoice,
    deadline: Instant,
    sample_share: f64,
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
        .then(|| Sampler::new(&chosen, sample_share))
        .flatten();
    loop {
        if Instant::now() > deadline {
            scan.timed_out = true;
            break;
        }
        let mut packet = ff::Packet::empty();
        match packet.read(&mut input) {
            Ok(()) if packet.stream() == index => {
                let zeros = packet.data().is_some_and(has_zero_run);
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
        scan.sample = s.finish(!scan.timed_out);
    }
    Ok(scan)
}

/// Whether `data` holds [`ZERO_RUN`] zero bytes in a row.
fn has_zero_run(data: &[u8]) -> bool {
    let mut run = 0;
    for &b in data {
        if b == 0 {
            run += 1;
            if run >= ZERO_RUN {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// Decodes the GOPs a triage samples, as their packets come.
struct Sampler {
    decoder: ff::decoder::Video,
    share: f64,
    /// Packets seen, and packets sent to the decoder.
    seen: u64,
    sent: u64,
    /// The GOP being read: decoded as it comes (`live`), or held until its end, when it is
    /// decoded if it had an anomaly, or if it is the last.
    gop: Vec<ff::Packet>,
    live: bool,
    anomaly: bool,
    /// The presentation time of the GOP's keyframe: frames before it are leading pictures
    /// that need the previous GOP, not damage.
    key_pts: Option<i64>,
    /// A keyframe has been seen (packets before the first belong to no decodable GOP).
    started: bool,
    out: SampledDecode,
}

impl Sampler {
    fn new(stream: &ff::format::stream::Stream<'_>, share: f64) -> Option<Sampler> {
        let ctx = ff::codec::context::Context::from_parameters(stream.parameters()).ok()?;
        let decoder = ctx.decoder().video().ok()?;
        Some(Sampler {
            decoder,
            share,
            seen: 0,
            sent: 0,
            gop: Vec::new(),
            live: false,
            anomaly: false,
            key_pts: None,
            started: false,
            out: SampledDecode::default(),
        })
    }

    fn push(&mut self, packet: ff::Packet, anomaly: bool) {
        if packet.is_key() {
            self.end_gop(false);
            self.started = true;
            self.key_pts = packet.pts();
            // The first GOP, and then one whenever the decoded share falls behind.
            self.live = self.out.gops == 0 || (self.sent as f64) < self.share * self.seen as f64;
            if self.live {
                self.start_decoding();
            }
        }
        self.seen += 1;
        self.anomaly |= anomaly;
        if !self.started {
            return;
        }
        if self.live {
            self.send(&packet);
        } else {
            self.gop.push(packet);
        }
    }

    /// The GOP read so far ends: decode it if it had an anomaly (or it is the file's last,
    /// `last`) and was not decoded as it came.
    fn end_gop(&mut self, last: bool) {
        if self.live {
            self.finish_decoding();
        } else if self.started && (self.anomaly || last) && !self.gop.is_empty() {
            self.start_decoding();
            for packet in std::mem::take(&mut self.gop) {
                self.send(&packet);
            }
            self.finish_decoding();
        }
        self.gop.clear();
        self.live = false;
        self.anomaly = false;
    }

    fn start_decoding(&mut self) {
        self.decoder.flush();
        self.out.gops += 1;
    }

    fn send(&mut self, packet: &ff::Packet) {
        self.sent += 1;
        if let Err(e) = self.decoder.send_packet(packet) {
            self.error(format!("packet {}: {e}", self.seen));
        }
        self.drain();
    }

    fn finish_decoding(&mut self) {
        let _ = self.decoder.send_eof();
        self.drain();
    }

    fn drain(&mut self) {
        let mut frame = ff::frame::Video::empty();
        loop {
            match self.decoder.receive_frame(&mut frame) {
                Ok(()) => {}
                Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => return,
                Err(ff::Error::Eof) => return,
                Err(e) => {
                    self.error(format!("packet {}: {e}", self.seen));
                    return;
                }
            }
            let leading = matches!((frame.timestamp(), self.key_pts), (Some(t), Some(k)) if t < k);
            if leading {
                continue;
            }
            self.out.frames += 1;
            if is_damaged(&frame) {
                let at = frame
                    .timestamp()
                    .map_or(String::new(), |t| format!(" (pts {t})"));
                self.error(format!("a frame decodes with errors{at}"));
            }
        }
    }

    fn error(&mut self, what: String) {
        self.out.errors += 1;
        if self.out.first_error.is_none() {
            let detail = ffmpeg_log::take_last_error().map_or(String::new(), |d| format!(": {d}"));
            self.out.first_error = Some(format!("{what}{detail}"));
        }
    }

    /// What the sample found; the last GOP is decoded if it was not (`whole`: the file was
    /// read to its end, so the GOP held is the last).
    fn finish(mut self, whole: bool) -> SampledDecode {
        self.end_gop(whole);
        self.out
    }
}
