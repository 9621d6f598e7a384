//! A clip's sound: the source's audio stream (the one FFmpeg would pick) over the clip's
//! span, decoded, cut to the sample at the clip's first and last instants on the
//! container's clock, and encoded as AAC (FFmpeg's own encoder) with its timestamps from the
//! clip's start, so that it plays in step with the clip's frames.

use std::ops::Range;

use ff::ChannelLayout;
use ff::ffi;
use ff::format::Sample;
use ff::format::sample::Type as SampleType;
use ffmpeg_next as ff;

use super::{ClipError, encode_error};
use crate::source::Source;

/// Bits a second for each channel of the encoded sound.
const BITS_PER_CHANNEL: usize = 96_000;

/// The encoded sound of a clip, ready to be muxed beside its frames.
pub(super) struct Sound {
    params: ff::codec::Parameters,
    /// One tick a sample.
    time_base: ff::Rational,
    /// In decode order, timestamps in `time_base` from the clip's start.
    packets: Vec<ff::Packet>,
}

impl Sound {
    /// The sound of `source` from `span.start` to `span.end` (seconds on the container's
    /// clock), or `None` where it has no audio stream.
    pub fn read(source: &Source, span: Range<f64>) -> Result<Option<Sound>, ClipError> {
        let mut input = source
            .open_streaming()
            .input(|| false)
            .map_err(encode_error("source"))?;
        let Some(stream) = input.streams().best(ff::media::Type::Audio) else {
            return Ok(None);
        };
        let index = stream.index();
        let tb = f64::from(stream.time_base());
        let mut opening = ff::codec::context::Context::from_parameters(stream.parameters())
            .map_err(encode_error("audio decoder"))?
            .decoder();
        // Its packets' time base, so that the decoder moves the timestamps of frames it trims
        // (an encoder's priming samples).
        opening.set_packet_time_base(stream.time_base());
        let mut decoder = opening.audio().map_err(encode_error("audio decoder"))?;
        // Half a second early: a decoder's first frames after a seek may lack what the
        // packets before them carried.
        let from = ((span.start - 0.5) / tb).floor() as i64;
        // SAFETY: `input` owns an open AVFormatContext; av_seek_frame only moves its read
        // position, on one of its streams.
        unsafe {
            ffi::av_seek_frame(
                input.as_mut_ptr(),
                index as i32,
                from,
                ffi::AVSEEK_FLAG_BACKWARD,
            );
        }
        let mut pcm: Option<Pcm> = None;
        let mut frame = ff::frame::Audio::empty();
        let mut eof = false;
        'read: loop {
            while decoder.receive_frame(&mut frame).is_ok() {
                let pcm = match &mut pcm {
                    Some(p) => p,
                    None => pcm.insert(Pcm::new(&frame, &span)?),
                };
                if !pcm.take(&frame, tb)? {
                    break 'read;
                }
            }
            if eof {
                break;
            }
            let mut packet = ff::Packet::empty();
            if packet.read(&mut input).is_err() {
                eof = true;
                let _ = decoder.send_eof();
                continue;
            }
            if packet.stream() == index {
                // A packet the decoder rejects leaves a gap, filled with silence below.
                let _ = decoder.send_packet(&packet);
            }
        }
        match pcm {
            Some(pcm) if pcm.samples() > 0 => pcm.finish().map(Some),
            _ => Ok(None),
        }
    }

    /// Add the sound's stream to `octx` (before its header), at index `stream`.
    pub fn add_stream(&self, octx: &mut ff::format::context::Output) -> Result<(), ClipError> {
        let codec = ff::encoder::find(ff::codec::Id::AAC);
        let mut ost = octx
            .add_stream(codec)
            .map_err(encode_error("sound stream"))?;
        ost.set_parameters(self.params.clone());
        ost.set_time_base(self.time_base);
        // SAFETY: the stream's parameters belong to the output context; the tag is left for
        // the muxer to choose.
        unsafe {
            (*(*ost.as_mut_ptr()).codecpar).codec_tag = 0;
        }
        Ok(())
    }
}

/// The sound's packets written so far into a clip's output, interleaved with its frames.
pub(super) struct SoundOut<'a> {
    sound: &'a Sound,
    stream: usize,
    next: usize,
}

impl<'a> SoundOut<'a> {
    /// The sound of `sound`, its stream at index `stream` of the output.
    pub fn new(sound: &'a Sound, stream: usize) -> SoundOut<'a> {
        SoundOut {
            sound,
            stream,
            next: 0,
        }
    }

    /// Write the packets that start before `secs` (from the clip's start); `None`: all.
    pub fn write_until(
        &mut self,
        octx: &mut ff::format::context::Output,
        secs: Option<f64>,
    ) -> Result<(), ClipError> {
        let ost_tb = octx
            .stream(self.stream)
            .map_or(self.sound.time_base, |s| s.time_base());
        let tb = f64::from(self.sound.time_base);
        while let Some(packet) = self.sound.packets.get(self.next) {
            let at = packet.dts().or(packet.pts()).unwrap_or(0) as f64 * tb;
            if secs.is_some_and(|s| at > s) {
                break;
            }
            let mut packet = packet.clone();
            packet.set_stream(self.stream);
            packet.rescale_ts(self.sound.time_base, ost_tb);
            packet
                .write_interleaved(octx)
                .map_err(encode_error("sound packet"))?;
            self.next += 1;
        }
        Ok(())
    }
}

/// The span's sound as it is decoded: its samples (as 32-bit float planes) encoded a
/// packet's worth at a time, so that a long clip holds its encoded sound, not its samples.
struct Pcm {
    span: Range<f64>,
    rate: u32,
    layout: ChannelLayout,
    /// Samples not yet encoded (fewer than a packet's).
    planes: Vec<Vec<f32>>,
    /// Samples taken so far, encoded or not.
    taken: usize,
    /// Samples of silence before the first one (the sound starts after the clip does).
    lead: usize,
    /// Where the next decoded frame starts, in seconds, when frames lack timestamps.
    next_at: Option<f64>,
    encoder: ff::encoder::Audio,
    /// Samples a packet holds.
    size: usize,
    time_base: ff::Rational,
    packets: Vec<ff::Packet>,
}

impl Pcm {
    /// Ready for the sound of `span`, laid out as `first` (the first decoded frame).
    fn new(first: &ff::frame::Audio, span: &Range<f64>) -> Result<Pcm, ClipError> {
        let channels = usize::from(first.channels());
        if channels == 0 || channels > 8 || first.rate() == 0 {
            return Err(ClipError::Encode {
                what: "sound",
                message: format!("{} channels at {} Hz: not encoded", channels, first.rate()),
            });
        }
        let layout = match first.channel_layout() {
            l if l.channels() == channels as i32 => l,
            _ => ChannelLayout::default(channels as i32),
        };
        let rate = first.rate();
        let codec = ff::encoder::find(ff::codec::Id::AAC).ok_or(ClipError::NoEncoder("aac"))?;
        let mut enc = ff::codec::context::Context::new_with_codec(codec)
            .encoder()
            .audio()
            .map_err(encode_error("sound encoder"))?;
        let time_base = ff::Rational::new(1, rate as i32);
        enc.set_rate(rate as i32);
        enc.set_channel_layout(layout);
        enc.set_channels(channels as i32);
        enc.set_format(Sample::F32(SampleType::Planar));
        enc.set_bit_rate(BITS_PER_CHANNEL * channels);
        enc.set_time_base(time_base);
        // The muxers here (MP4, QuickTime, Matroska) want the codec's set-up in the header.
        enc.set_flags(ff::codec::Flags::GLOBAL_HEADER);
        let encoder = enc.open_as(codec).map_err(encode_error("sound encoder"))?;
        let size = (encoder.frame_size() as usize).max(1);
        Ok(Pcm {
            span: span.clone(),
            rate,
            layout,
            planes: vec![Vec::new(); channels],
            taken: 0,
            lead: 0,
            next_at: None,
            encoder,
            size,
            time_base,
            packets: Vec::new(),
        })
    }

    fn samples(&self) -> usize {
        self.taken
    }

    /// Keep the samples of `frame` (timestamps in `tb` seconds) that fall in the span:
    /// `false` once a frame starts at or after its end.
    fn take(&mut self, frame: &ff::frame::Audio, tb: f64) -> Result<bool, ClipError> {
        if usize::from(frame.channels()) != self.planes.len() || frame.rate() != self.rate {
            return Err(ClipError::Encode {
                what: "sound",
                message: "the sound's channels or rate change".into(),
            });
        }
        let rate = f64::from(self.rate);
        let n = frame.samples();
        let at = frame
            .timestamp()
            .or(frame.pts())
            .map(|p| p as f64 * tb)
            .or(self.next_at)
            .unwrap_or(self.span.start);
        self.next_at = Some(at + n as f64 / rate);
        if at >= self.span.end {
            return Ok(false);
        }
        // The frame's samples from the span's start to its end.
        let first = ((self.span.start - at) * rate).round().max(0.0) as usize;
        let last = (((self.span.end - at) * rate).round().max(0.0) as usize).min(n);
        if first >= last {
            return Ok(true);
        }
        // Where the frame's first sample taken belongs, from the span's start.
        let due = (((at - self.span.start) * rate).round() + first as f64).max(0.0) as usize;
        if self.taken == 0 {
            self.lead = due;
            self.append(frame, first..last)?;
            return Ok(true);
        }
        // After the samples before: a gap (a packet the decoder rejected) is filled with
        // silence, an overlap cut; timestamps coarser than a sample (Matroska's
        // milliseconds) are read as continuous.
        let have = self.lead + self.taken;
        if due.abs_diff(have) <= self.rate as usize / 100 {
            self.append(frame, first..last)?;
            return Ok(true);
        }
        if due > have {
            for plane in &mut self.planes {
                plane.resize(plane.len() + (due - have), 0.0);
            }
            self.taken += due - have;
        }
        let skip = have.saturating_sub(due);
        if first + skip < last {
            self.append(frame, first + skip..last)?;
        }
        Ok(true)
    }

    /// Append samples `range` of `frame`, as floats, and encode every whole packet's worth.
    fn append(&mut self, frame: &ff::frame::Audio, range: Range<usize>) -> Result<(), ClipError> {
        let channels = self.planes.len();
        let (kind, planar) = match frame.format() {
            Sample::U8(t) => (Kind::U8, t == SampleType::Planar),
            Sample::I16(t) => (Kind::I16, t == SampleType::Planar),
            Sample::I32(t) => (Kind::I32, t == SampleType::Planar),
            Sample::F32(t) => (Kind::F32, t == SampleType::Planar),
            Sample::F64(t) => (Kind::F64, t == SampleType::Planar),
            other => {
                return Err(ClipError::Encode {
                    what: "sound",
                    message: format!("samples of {other:?}: not read"),
                });
            }
        };
        let width = kind.bytes();
        for (c, plane) in self.planes.iter_mut().enumerate() {
            let (data, stride, offset) = if planar {
                (frame.data(c), width, 0)
            } else {
                (frame.data(0), width * channels, width * c)
            };
            for i in range.clone() {
                let at = i * stride + offset;
                let bytes = data.get(at..at + width).ok_or_else(|| ClipError::Encode {
                    what: "sound",
                    message: "a frame shorter than its samples".into(),
                })?;
                plane.push(kind.value(bytes));
            }
        }
        self.taken += range.len();
        self.encode(false)
    }

    /// Encode the samples waiting, a packet's worth at a time; the rest too (a shorter last
    /// packet) when `all`.
    fn encode(&mut self, all: bool) -> Result<(), ClipError> {
        loop {
            let waiting = self.planes.first().map_or(0, Vec::len);
            let n = if waiting >= self.size {
                self.size
            } else if all && waiting > 0 {
                waiting
            } else {
                return Ok(());
            };
            let mut frame = ff::frame::Audio::new(Sample::F32(SampleType::Planar), n, self.layout);
            frame.set_rate(self.rate);
            // The first sample of these, from the clip's start.
            frame.set_pts(Some((self.lead + self.taken - waiting) as i64));
            for (c, plane) in self.planes.iter_mut().enumerate() {
                frame.plane_mut::<f32>(c)[..n].copy_from_slice(&plane[..n]);
                plane.drain(..n);
            }
            self.encoder
                .send_frame(&frame)
                .map_err(encode_error("sound encode"))?;
            self.drain();
        }
    }

    fn drain(&mut self) {
        let mut packet = ff::Packet::empty();
        while self.encoder.receive_packet(&mut packet).is_ok() {
            self.packets
                .push(std::mem::replace(&mut packet, ff::Packet::empty()));
        }
    }

    /// The sound encoded to its end.
    fn finish(mut self) -> Result<Sound, ClipError> {
        self.encode(true)?;
        self.encoder
            .send_eof()
            .map_err(encode_error("sound encode"))?;
        self.drain();
        Ok(Sound {
            params: ff::codec::Parameters::from(&self.encoder),
            time_base: self.time_base,
            packets: self.packets,
        })
    }
}

/// A sample's kind, as stored.
#[derive(Clone, Copy)]
enum Kind {
    U8,
    I16,
    I32,
    F32,
    F64,
}

impl Kind {
    fn bytes(self) -> usize {
        match self {
            Kind::U8 => 1,
            Kind::I16 => 2,
            Kind::I32 | Kind::F32 => 4,
            Kind::F64 => 8,
        }
    }

    /// The sample in `bytes` (native order), from -1 to 1.
    fn value(self, bytes: &[u8]) -> f32 {
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        match self {
            Kind::U8 => (f32::from(b[0]) - 128.0) / 128.0,
            Kind::I16 => f32::from(i16::from_ne_bytes([b[0], b[1]])) / 32768.0,
            Kind::I32 => i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as f32 / 2_147_483_648.0,
            Kind::F32 => f32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            Kind::F64 => f64::from_ne_bytes(b) as f32,
        }
    }
}
