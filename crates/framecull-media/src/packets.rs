//! Every packet of a video stream, read without decoding: the container's index and the
//! packets' timestamps, sizes and flags, for a triage.

use std::time::Instant;

use ffmpeg_next as ff;

use crate::decode::{DecodeError, declared_duration_secs, video_stream};
use crate::ffmpeg_log;
use crate::frames::stream_frame_step;
use crate::source::Opened;
use framecull_model::{PacketRecord, PacketScan, Ratio, StreamChoice};

/// Read every packet of the video stream `stream` of `source` until its end, a read error or
/// `deadline`. Nothing is decoded; the demuxer still reads the whole file.
pub fn scan_packets(
    source: &Opened,
    stream: StreamChoice,
    deadline: Instant,
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
    loop {
        if Instant::now() > deadline {
            scan.timed_out = true;
            break;
        }
        let mut packet = ff::Packet::empty();
        match packet.read(&mut input) {
            Ok(()) if packet.stream() == index => scan.packets.push(PacketRecord {
                pts: packet.pts(),
                dts: packet.dts(),
                duration: packet.duration(),
                size: u32::try_from(packet.size()).unwrap_or(u32::MAX),
                key: packet.is_key(),
                corrupt: packet.is_corrupt(),
            }),
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
    Ok(scan)
}
