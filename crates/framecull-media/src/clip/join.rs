//! Writing a clip from its plan: the encoded parts (libx264 or libx265, a fresh encoder each,
//! at one rate factor) and the copied runs joined in one stream of Annex B packets whose
//! parameter sets lead each part's first keyframe, in decode order, into an MP4 (`avc3` or
//! `hev1`: parameter sets in the stream). Timestamps run from zero; decode timestamps are set again for the
//! whole clip (each frame's, the presentation time `delay` frames earlier), so that parts
//! with different frame reordering join.

use std::ops::Range;
use std::path::Path;

use ff::ffi;
use ffmpeg_next as ff;

use super::audio::{Sound, SoundOut};
use super::smart::{Codec, CopySource, Plan, Segment, seek_to};
use super::{
    ClipError, Described, Encoder, each_picture, encode_error, frame_duration,
    keep_stream_description,
};
use crate::reader::VideoReader;

/// What a clip's writing did: frames encoded again and frames copied.
pub(super) struct Cut {
    pub reencoded: u64,
    pub copied: u64,
}

/// Write the clip `plan` describes, of `reader`'s video, with `sound`, to `part`, encoded
/// parts at rate factor `crf`.
pub(super) fn write(
    reader: &mut VideoReader,
    plan: &Plan,
    described: &Described,
    sound: Option<&Sound>,
    part: &Path,
    crf: u32,
) -> Result<Cut, ClipError> {
    let tb = reader.time_base();
    let time_base = ff::Rational::new(tb.num, tb.den);
    let frame_pts = reader.frame_pts().to_vec();
    let clip = plan.clip.clone();
    let first_pts = frame_pts[clip.start];
    let mut joiner = Joiner {
        octx: ff::format::output_as(&part, "mp4").map_err(encode_error("output container"))?,
        params: plan.copy.as_ref().map(|c| c.params.clone()),
        codec: plan.codec,
        tag: plan.codec.tag(plan.copies()),
        described,
        header: false,
        shown: frame_pts[clip.clone()]
            .iter()
            .map(|p| p - first_pts)
            .collect(),
        durations: clip
            .clone()
            .map(|i| frame_duration(&frame_pts, i))
            .collect(),
        delay: plan.delay(),
        written: 0,
        first_pts,
        time_base,
        ost_tb: time_base,
        sound,
        sound_out: None,
    };
    // The copied packets: read from where the scan started, counted as it counted them.
    let mut input = match &plan.copy {
        Some(copy) => {
            let mut input = copy
                .opened
                .input(|| false)
                .map_err(encode_error("source"))?;
            if let Some(target) = copy.seek {
                seek_to(&mut input, copy.stream_index, target);
            }
            Some((input, copy))
        }
        None => None,
    };
    let mut read = 0usize;
    let mut cut = Cut {
        reencoded: 0,
        copied: 0,
    };
    for segment in &plan.segments {
        match (segment, input.as_mut()) {
            (Segment::Encode(frames), _) => {
                cut.reencoded += encode_part(
                    reader,
                    frames.clone(),
                    &frame_pts,
                    described,
                    crf,
                    &mut joiner,
                )?;
            }
            (Segment::Copy { frames, packets }, Some((input, copy))) => {
                copy_run(input, copy, packets.clone(), &mut read, &mut joiner)?;
                cut.copied += frames.len() as u64;
            }
            (Segment::Copy { .. }, None) => {
                return Err(ClipError::Encode {
                    what: "copy",
                    message: "a copied part without a source".into(),
                });
            }
        }
    }
    joiner.finish()?;
    Ok(cut)
}

/// Decode frames `frames` and encode them again at rate factor `crf` as a part of the clip:
/// the frames encoded. A change of picture size starts a new encoder (its own keyframe and
/// parameter sets).
fn encode_part(
    reader: &mut VideoReader,
    frames: Range<usize>,
    frame_pts: &[i64],
    described: &Described,
    crf: u32,
    joiner: &mut Joiner<'_>,
) -> Result<u64, ClipError> {
    let mut encoder: Option<Encoder> = None;
    let mut sent = 0u64;
    let time_base = joiner.time_base;
    each_picture(reader, frames, &mut |picture| {
        if let Some(e) = encoder
            .as_mut()
            .filter(|e| e.size != (picture.width, picture.height))
        {
            flush(e, joiner)?;
            encoder = None;
        }
        let e = match encoder.as_mut() {
            Some(e) => e,
            None => encoder.insert(Encoder::open(
                picture,
                time_base,
                described,
                joiner.codec,
                crf,
            )?),
        };
        if joiner.params.is_none() {
            joiner.params = Some(ff::codec::Parameters::from(&e.encoder));
        }
        e.send(picture, frame_pts[picture.index] - joiner.first_pts)?;
        sent += 1;
        while let Some(packet) = e.receive()? {
            joiner.write_encoded(&packet)?;
        }
        Ok(())
    })?;
    let Some(mut encoder) = encoder else {
        return Err(ClipError::NoFrames {
            frames: frame_pts.len(),
        });
    };
    flush(&mut encoder, joiner)?;
    Ok(sent)
}

/// Drain `encoder` into the clip.
fn flush(encoder: &mut Encoder, joiner: &mut Joiner<'_>) -> Result<(), ClipError> {
    encoder.send_eof()?;
    while let Some(packet) = encoder.receive()? {
        joiner.write_encoded(&packet)?;
    }
    encoder.checked()
}

/// Copy the packets `run` (indices into the scan) of `copy`, read on from `input` (at scan
/// packet `read`), into the clip.
fn copy_run(
    input: &mut ff::format::context::Input,
    copy: &CopySource,
    run: Range<usize>,
    read: &mut usize,
    joiner: &mut Joiner<'_>,
) -> Result<(), ClipError> {
    let codec = joiner.codec;
    let failed = |message: String| ClipError::Encode {
        what: "copy",
        message,
    };
    while *read < run.end {
        let mut packet = ff::Packet::empty();
        if packet.read(input).is_err() {
            return Err(failed("the source ended before the packets to copy".into()));
        }
        if packet.stream() != copy.stream_index {
            continue;
        }
        let at = *read;
        *read += 1;
        if at < run.start {
            continue;
        }
        let expected = copy.packets[at].pts;
        if packet.pts() != Some(expected) {
            return Err(failed(format!(
                "packet {at} shows at {:?}, not {expected} as it did",
                packet.pts()
            )));
        }
        // The run's first packet gets what it needs of the source's header (an encoded part
        // before it brought other parameter sets, or another sequence header).
        let lead = if at == run.start {
            copy.parameter_sets.as_slice()
        } else {
            &[]
        };
        let bytes = codec
            .copied(packet.data().unwrap_or_default(), copy.framing, lead)
            .ok_or_else(|| failed(format!("packet {at} is not what its stream holds")))?;
        // Sync samples where a GOP starts, whatever the demuxer marked.
        let key = copy.packets[at].sync;
        joiner.write(bytes, expected - joiner.first_pts, key)?;
    }
    Ok(())
}

/// The clip's MP4, written packet by packet in decode order.
struct Joiner<'a> {
    octx: ff::format::context::Output,
    /// The stream's parameters (size, format, colour) for the header: the source's where
    /// packets are copied, else the first encoder's.
    params: Option<ff::codec::Parameters>,
    codec: Codec,
    /// The sample entry: `avc3` or `hev1` (parameter sets in the stream, which change
    /// between parts) where packets are copied, else `avc1`.
    tag: &'static [u8; 4],
    described: &'a Described,
    header: bool,
    /// Every frame's presentation time from the clip's start, ascending, and how long it
    /// shows.
    shown: Vec<i64>,
    durations: Vec<i64>,
    delay: usize,
    written: usize,
    /// The clip's first frame's time in the source.
    first_pts: i64,
    /// The source's time base (every timestamp here), and the output stream's.
    time_base: ff::Rational,
    ost_tb: ff::Rational,
    /// The clip's sound, and its packets written so far, once the header has its stream.
    sound: Option<&'a Sound>,
    sound_out: Option<SoundOut<'a>>,
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
        if let Some(sound) = &mut self.sound_out {
            sound.write_until(&mut self.octx, Some(dts as f64 * f64::from(self.time_base)))?;
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

    /// The header, with what the first packet holds of the stream's header as its extradata
    /// ([`Codec::header`]): H.264 and HEVC parameter sets (Annex B), which the muxer writes
    /// as the `avcC` or `hvcC` record, storing every packet's units, parameter sets included,
    /// length-prefixed; AV1's sequence header, written as `av1C` (where the first packet has
    /// none, the source's record stays).
    fn write_header(&mut self, first: &[u8]) -> Result<(), ClipError> {
        let sets = self.codec.header(first);
        let codec = ff::encoder::find(self.codec.id());
        let mut ost = self
            .octx
            .add_stream(codec)
            .map_err(encode_error("stream"))?;
        if let Some(params) = &self.params {
            ost.set_parameters(params.clone());
        }
        ost.set_time_base(self.time_base);
        keep_stream_description(&mut ost, self.described);
        let video = ost.index();
        // SAFETY: the stream's codec parameters are owned by the output context, whose header
        // is not written yet; the extradata is allocated with FFmpeg's padding and filled.
        unsafe {
            let par = (*ost.as_mut_ptr()).codecpar;
            (*par).codec_tag = u32::from_le_bytes(*self.tag);
            if let Some(sets) = sets {
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
            }
        }
        if let Some(sound) = self.sound {
            sound.add_stream(&mut self.octx)?;
            self.sound_out = Some(SoundOut::new(sound, video + 1));
        }
        let mut mux = ff::Dictionary::new();
        mux.set("movflags", "faststart");
        self.octx
            .write_header_with(mux)
            .map_err(encode_error("header"))?;
        self.ost_tb = self
            .octx
            .stream(video)
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
        if let Some(sound) = &mut self.sound_out {
            sound.write_until(&mut self.octx, None)?;
        }
        self.octx.write_trailer().map_err(encode_error("trailer"))
    }
}
