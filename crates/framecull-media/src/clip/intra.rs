//! Clips of intra-only sources (Motion JPEG, ProRes, DNxHD, FFV1, PNG and the other codecs
//! whose every frame stands alone): each frame's packet copied as it is, none encoded, into a
//! container that takes the codec: MP4, else QuickTime, else Matroska.

use std::ops::Range;
use std::path::Path;

use ff::ffi;
use ffmpeg_next as ff;

use super::audio::{Sound, SoundOut};
use super::smart::seek_to;
use super::{ClipError, Described, encode_error, frame_duration, keep_stream_description};
use crate::frames::Identity;
use crate::reader::VideoReader;
use crate::source::Source;

/// A container for a copy of `codec`'s packets: its muxer's name and the file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Container {
    pub muxer: &'static str,
    pub extension: &'static str,
}

impl Container {
    /// MP4: the container every clip file is, unless its packets are copied from a codec MP4
    /// does not hold.
    pub const MP4: Container = Container {
        muxer: "mp4",
        extension: "mp4",
    };

    /// The first of MP4, QuickTime and Matroska whose muxer holds `codec`.
    fn holding(codec: ff::codec::Id) -> Option<Container> {
        [
            Container::MP4,
            Container {
                muxer: "mov",
                extension: "mov",
            },
            Container {
                muxer: "matroska",
                extension: "mkv",
            },
        ]
        .into_iter()
        .find(|c| {
            let Ok(name) = std::ffi::CString::new(c.muxer) else {
                return false;
            };
            // Matroska holds the codecs it has no name for in its Video for Windows mode,
            // which it counts as unofficial.
            let compliance = if c.muxer == "matroska" {
                ffi::FF_COMPLIANCE_UNOFFICIAL
            } else {
                ffi::FF_COMPLIANCE_NORMAL
            };
            // SAFETY: av_guess_format returns a static muxer description or null;
            // avformat_query_codec only reads it.
            unsafe {
                let format =
                    ffi::av_guess_format(name.as_ptr(), std::ptr::null(), std::ptr::null());
                !format.is_null()
                    && ffi::avformat_query_codec(format, codec.into(), compliance) == 1
            }
        })
    }
}

/// Where the frames of `reader`'s video are copied whole, the container their clips go in:
/// an intra-only codec (every frame a keyframe of its own, by FFmpeg's description of the
/// codec) whose frames are known by their timestamps, in a container that holds it.
pub(super) fn copies_whole(reader: &VideoReader) -> Option<Container> {
    if reader.frames().identity != Identity::Pts {
        return None;
    }
    let codec = reader.stream()?.parameters().id();
    // SAFETY: avcodec_descriptor_get returns a static description or null.
    let intra = unsafe {
        let descriptor = ffi::avcodec_descriptor_get(codec.into());
        !descriptor.is_null() && (*descriptor).props & ffi::AV_CODEC_PROP_INTRA_ONLY != 0
    };
    if !intra {
        return None;
    }
    Container::holding(codec)
}

/// Copy the packets of frames `clip` of `reader`'s video, read again from `source`, to `part`
/// in `container`: the frames copied. Each packet must be one of the clip's frames, in order
/// (one packet a frame, shown when decoded): anything else is an error, and the clip is
/// encoded instead.
pub(super) fn write(
    reader: &VideoReader,
    source: &Source,
    clip: Range<usize>,
    described: &Described,
    sound: Option<&Sound>,
    part: &Path,
    container: Container,
) -> Result<u64, ClipError> {
    let stream = reader
        .stream()
        .ok_or_else(|| mismatch("no video stream".into()))?;
    let index = stream.index();
    let params = stream.parameters();
    let tb = stream.time_base();
    // SAFETY: plain fields of the source stream's codec parameters.
    let (width, height, format) = unsafe {
        let par = params.as_ptr();
        ((*par).width, (*par).height, (*par).format)
    };
    let frame_pts = reader.frame_pts();
    let wanted = &frame_pts[clip.clone()];
    let (Some(&first), Some(&last)) = (wanted.first(), wanted.last()) else {
        return Err(ClipError::NoFrames {
            frames: frame_pts.len(),
        });
    };
    let mut input = source
        .open_streaming()
        .input(|| false)
        .map_err(encode_error("source"))?;
    seek_to(&mut input, index, first);
    let mut octx = open_output(part, container, &params, tb, described)?;
    let mut sound = match sound {
        Some(sound) => {
            sound.add_stream(&mut octx)?;
            Some(SoundOut::new(sound, 1))
        }
        None => None,
    };
    let mut mux = ff::Dictionary::new();
    if container.muxer != "matroska" {
        mux.set("movflags", "faststart");
    }
    octx.write_header_with(mux)
        .map_err(encode_error("header"))?;
    let ost_tb = octx.stream(0).map_or(tb, |s| s.time_base());
    let copied = CopiedStream {
        index,
        params: &params,
        tb,
        ost_tb,
    };
    let (written, first_hash) = copy_packets(
        &mut input,
        &mut octx,
        &mut sound,
        &copied,
        frame_pts,
        &clip,
        (first, last),
    )?;
    if written != wanted.len() {
        return Err(mismatch(format!(
            "{written} packets for the clip's {} frames",
            wanted.len()
        )));
    }
    if let Some(sound) = &mut sound {
        sound.write_until(&mut octx, None)?;
    }
    octx.write_trailer().map_err(encode_error("trailer"))?;
    drop(octx);
    check(part, wanted.len(), (width, height, format), first_hash)?;
    Ok(written as u64)
}

/// The error of a copy whose packets are not the clip's frames.
fn mismatch(message: String) -> ClipError {
    ClipError::Encode {
        what: "copy",
        message,
    }
}

/// The output `part` in `container`, its one stream (as yet) taking the packets of the
/// source stream of parameters `params` and time base `tb`, described as `described` says.
fn open_output(
    part: &Path,
    container: Container,
    params: &ff::codec::Parameters,
    tb: ff::Rational,
    described: &Described,
) -> Result<ff::format::context::Output, ClipError> {
    let mut octx =
        ff::format::output_as(&part, container.muxer).map_err(encode_error("output container"))?;
    let mut ost = octx
        .add_stream(ff::encoder::find(params.id()))
        .map_err(encode_error("stream"))?;
    ost.set_parameters(params.clone());
    ost.set_time_base(tb);
    keep_stream_description(&mut ost, described);
    // SAFETY: the stream's codec parameters belong to the output context, whose header is
    // not written yet; the muxer's tag table is static. The source's tag is kept where this
    // container gives it the same codec (some decoders read the layout from it: Ut Video's
    // `ULY0` is 4:2:0, `ULRA` RGBA), else left for the muxer to choose.
    unsafe {
        let par = (*ost.as_mut_ptr()).codecpar;
        let tags = (*octx.format().as_ptr()).codec_tag;
        let same =
            !tags.is_null() && ffi::av_codec_get_id(tags, (*par).codec_tag) == (*par).codec_id;
        if !same {
            (*par).codec_tag = 0;
        }
    }
    Ok(octx)
}

/// The source stream whose packets [`copy_packets`] copies, and the time base of the output
/// stream (0) they go to.
struct CopiedStream<'a> {
    index: usize,
    params: &'a ff::codec::Parameters,
    tb: ff::Rational,
    ost_tb: ff::Rational,
}

/// Copy the packets of frames `clip` (shown at `first` to `last`) from `input` to `octx`,
/// the sound written up to each: the packets copied, and the content hash of the first
/// one's frame. Each packet must be the next of the clip's frames.
fn copy_packets(
    input: &mut ff::format::context::Input,
    octx: &mut ff::format::context::Output,
    sound: &mut Option<SoundOut<'_>>,
    stream: &CopiedStream<'_>,
    frame_pts: &[i64],
    clip: &Range<usize>,
    (first, last): (i64, i64),
) -> Result<(usize, Option<u64>), ClipError> {
    let (index, tb) = (stream.index, stream.tb);
    let wanted = &frame_pts[clip.clone()];
    let mut written = 0usize;
    // The first frame as the source's own decoder shows it (one packet: every frame stands
    // alone), which the clip file's first frame must equal.
    let mut first_hash = None;
    loop {
        let mut packet = ff::Packet::empty();
        if packet.read(input).is_err() {
            break;
        }
        if packet.stream() != index {
            continue;
        }
        let pts = packet
            .pts()
            .ok_or_else(|| mismatch("a packet without a timestamp".into()))?;
        if pts < first {
            continue;
        }
        if pts > last {
            break;
        }
        // SAFETY: a plain field of the packet just read.
        let discard =
            unsafe { (*ff::packet::Ref::as_ptr(&packet)).flags } & ffi::AV_PKT_FLAG_DISCARD != 0;
        if discard || wanted.get(written) != Some(&pts) {
            return Err(mismatch(format!(
                "the packet at {pts} is not frame {} of the clip",
                clip.start + written
            )));
        }
        if let Some(sound) = sound {
            sound.write_until(octx, Some((pts - first) as f64 * f64::from(tb)))?;
        }
        let mut out = ff::Packet::copy(packet.data().unwrap_or_default());
        out.set_stream(0);
        out.set_pts(Some(pts - first));
        out.set_dts(Some(pts - first));
        out.set_duration(frame_duration(frame_pts, clip.start + written));
        out.set_flags(ff::packet::Flags::KEY);
        out.rescale_ts(tb, stream.ost_tb);
        out.write_interleaved(octx)
            .map_err(encode_error("packet"))?;
        if written == 0 {
            first_hash = Some(decode_one(stream.params, &packet)?);
        }
        written += 1;
    }
    Ok((written, first_hash))
}

/// The content hash ([`crate::frames::content_hash`]) of the frame `packet` decodes to, with
/// a decoder of the source stream's parameters `params`.
fn decode_one(params: &ff::codec::Parameters, packet: &ff::Packet) -> Result<u64, ClipError> {
    let mut decoder = ff::codec::context::Context::from_parameters(params.clone())
        .and_then(|c| c.decoder().video())
        .map_err(encode_error("check decoder"))?;
    decoder
        .send_packet(packet)
        .map_err(encode_error("check decode"))?;
    decoder.send_eof().map_err(encode_error("check decode"))?;
    let mut frame = ff::frame::Video::empty();
    decoder
        .receive_frame(&mut frame)
        .map_err(encode_error("check decode"))?;
    Ok(crate::frames::content_hash(&frame))
}

/// Decode the clip file `part` whole: `frames` frames, each of the source's size and pixel
/// format (as far as its parameters say), none with an error, the first the picture
/// `first_hash` says (as the source's decoder shows it: a container may make a decoder read
/// the same packets otherwise, as an AVI's Motion JPEG fields). The packets are the source's; what the container says of them
/// (a tag, a header) could still make a decoder read them otherwise.
fn check(
    part: &Path,
    frames: usize,
    (width, height, format): (i32, i32, i32),
    first_hash: Option<u64>,
) -> Result<(), ClipError> {
    let failed = |message: String| ClipError::Encode {
        what: "check",
        message,
    };
    let mut input = ff::format::input(&part).map_err(encode_error("check"))?;
    let stream = input
        .streams()
        .best(ff::media::Type::Video)
        .ok_or_else(|| failed("no video stream in the clip file".into()))?;
    let index = stream.index();
    let mut decoder = ff::codec::context::Context::from_parameters(stream.parameters())
        .and_then(|c| c.decoder().video())
        .map_err(encode_error("check decoder"))?;
    let mut seen = 0usize;
    let mut frame = ff::frame::Video::empty();
    let mut receive =
        |decoder: &mut ff::decoder::Video, seen: &mut usize| -> Result<(), ClipError> {
            while decoder.receive_frame(&mut frame).is_ok() {
                // SAFETY: a plain field of the frame just decoded.
                let got = unsafe { (*frame.as_ptr()).format };
                // What the source's parameters leave unknown (0, or no format) is not compared.
                let differs = |a: i32, b: i32| b > 0 && a != b;
                if crate::frames::is_damaged(&frame)
                    || differs(frame.width() as i32, width)
                    || differs(frame.height() as i32, height)
                    || (format >= 0 && got != format)
                    || (*seen == 0
                        && first_hash.is_some_and(|h| crate::frames::content_hash(&frame) != h))
                {
                    return Err(failed(format!(
                        "frame {seen} of the clip file does not decode as the source's"
                    )));
                }
                *seen += 1;
            }
            Ok(())
        };
    for (s, packet) in input.packets() {
        if s.index() == index {
            decoder
                .send_packet(&packet)
                .map_err(encode_error("check decode"))?;
            receive(&mut decoder, &mut seen)?;
        }
    }
    decoder.send_eof().map_err(encode_error("check decode"))?;
    receive(&mut decoder, &mut seen)?;
    if seen != frames {
        return Err(failed(format!(
            "the clip file decodes to {seen} frames, not {frames}"
        )));
    }
    Ok(())
}
