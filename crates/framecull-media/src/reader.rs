//! Random access to the frames of a video (or a picture) at full resolution, for the loader:
//! an open demuxer and decoder kept between requests, a seek to the keyframe before each
//! request, and only the frames asked for converted and handed out.

mod convert;
mod seek;

use std::path::Path;
use std::time::Instant;

use ff::ffi;
use ff::format::Pixel;
use ff::software::scaling;
use ffmpeg_next as ff;

use crate::decode::{DecodeError, video_stream};
use crate::ffmpeg_log;
use crate::frames::{FrameIndex, Identity, SeekPoint, content_hash, is_damaged, stream_frame_step};
use crate::nal::{Family, Framing, nal_units};
use crate::picture::{Frame, Matrix};
use crate::source::{Opened, Source};
use framecull_model::{MatrixGuess, ReadAs};
use framecull_model::{Ratio, SeekReference};
use seek::{Attempt, Check, Seen, Start, start_plan};

/// Time spent per stage of a request, in seconds.
#[derive(Debug, Default, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct ReadTimes {
    /// Demuxing: reading packets from the file.
    pub read_secs: f64,
    /// Decoding packets to frames.
    pub decode_secs: f64,
    /// Copying or converting the wanted frames to packed pictures.
    pub convert_secs: f64,
    /// Frames decoded, including those decoded only to reach the wanted ones.
    pub frames_decoded: u64,
    /// Packets on the way to the wanted frames left undecoded: pictures nothing refers to.
    #[serde(default)]
    pub frames_skipped: u64,
    pub seeks: u64,
}

impl ReadTimes {
    pub fn add(&mut self, other: &ReadTimes) {
        self.read_secs += other.read_secs;
        self.decode_secs += other.decode_secs;
        self.convert_secs += other.convert_secs;
        self.frames_decoded += other.frames_decoded;
        self.frames_skipped += other.frames_skipped;
        self.seeks += other.seeks;
    }
}

/// Frame indices for a message: runs as `a to b`, at most a few of them.
fn frame_list(frames: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &f in frames {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == f => *end = f,
            _ => runs.push((f, f)),
        }
    }
    let shown: Vec<String> = runs
        .iter()
        .take(4)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a} to {b}")
            }
        })
        .collect();
    let more = if runs.len() > 4 { ", ..." } else { "" };
    let noun = if frames.len() == 1 { "frame" } else { "frames" };
    format!(
        "{noun} {}{more} ({} in all)",
        shown.join(", "),
        frames.len()
    )
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Open(#[from] DecodeError),
    #[error("{} could not be decoded", frame_list(.0))]
    Missing(Vec<usize>),
    #[error("frame {frame} decodes with errors")]
    Corrupt { frame: usize },
    #[error("the time budget ran out")]
    TimedOut,
    #[error("cannot convert {format} {width}x{height}: {message}")]
    Convert {
        format: String,
        width: u32,
        height: u32,
        message: String,
    },
}

/// An open video (or picture) file.
pub struct VideoReader {
    /// The file's path or the object's URL, for messages.
    path: std::path::PathBuf,
    opened: Opened,
    input: ff::format::context::Input,
    decoder: ff::decoder::Video,
    /// Decoder threads.
    threads: usize,
    stream_index: usize,
    time_base: Ratio,
    frames: FrameIndex,
    /// The last frame the decoder put out, when it is known and every frame up to it was
    /// checked: the decoder can go on from there without a seek.
    position: Option<usize>,
    /// Frames put out since the file was (re)opened at its start; `None` after a seek.
    ordinal: Option<usize>,
    /// After a seek: the byte position of the keyframe packet sought; packets before it
    /// (where a demuxer lands early) are skipped rather than decoded.
    skip_before: Option<i64>,
    /// Seek points (indices into `frames.seek_points`) that did not give clean frames.
    refused: std::collections::BTreeSet<usize>,
    /// Content hashes of the clean keyframes a decode from the start showed, by frame index
    /// (the deep pass's frame table): a seek lands only on one of them, with that content.
    reference: Option<std::collections::HashMap<usize, u64>>,
    scaler: Option<(scaling::Context, Pixel, u32, u32, Pixel)>,
    converted: Option<ff::frame::Video>,
    /// Buffers of pictures the caller is done with, reused for the next ones (large frames
    /// would otherwise cost fresh pages every time).
    pub spare: Vec<Vec<u8>>,
    /// Hand 8-bit 4:2:0 pictures out as references to the decoder's buffers.
    zero_copy: bool,
    /// The matrix of pictures that declare none.
    matrix_guess: MatrixGuess,
    /// The matrix of every picture, whatever it declares ([`VideoReader::set_matrix`]).
    matrix: Option<Matrix>,
    /// How an H.264 stream's packets frame their NAL units: its pictures that nothing refers
    /// to are not decoded where they show before the frames wanted ([`Family::unreferenced`]).
    unreferenced: Option<Framing>,
}

/// How one attempt ended.
enum Outcome {
    /// Every wanted frame was handed out.
    Done,
    /// The frames reached cannot be trusted (no clean keyframe before the first wanted
    /// frame, a damaged or missing frame): start earlier.
    Doubt,
}

impl VideoReader {
    /// Open the file at `path` and index its frames (one pass over the packets, no decoding).
    pub fn open(path: &Path, threads: usize) -> Result<VideoReader, DecodeError> {
        VideoReader::open_source(&Source::from(path), threads)
    }

    /// Open a file or an object and index its frames. An object is read through ranged
    /// requests (FFmpeg over [`Opened::input`]); everything after the open is the same for
    /// both.
    pub fn open_source(source: &Source, threads: usize) -> Result<VideoReader, DecodeError> {
        VideoReader::open_as(source, threads, ReadAs::default())
    }

    /// [`VideoReader::open_source`], reading the stream `read.stream` and converting pictures
    /// that declare no matrix by `read.color_matrix_guess`.
    pub fn open_as(
        source: &Source,
        threads: usize,
        read: ReadAs,
    ) -> Result<VideoReader, DecodeError> {
        ffmpeg_log::init();
        ffmpeg_log::clear_last_error();
        // One cache of fetched ranges for every open of this source: reopening at the start
        // (below, and after a failed seek) finds the header already fetched.
        let opened = source.open_streaming();
        let mut input = open_input(&opened)?;
        let stream = video_stream(&input, read.stream).ok_or(DecodeError::NoVideo)?;
        let stream_index = stream.index();
        let tb = stream.time_base();
        let time_base = Ratio::new(tb.numerator(), tb.denominator())
            .ok_or_else(|| DecodeError::Setup("the stream has no time base".into()))?;
        let step = stream_frame_step(&stream, time_base);
        let decoder = open_decoder(&stream, threads)?;
        // Without an `avcC` record (MPEG-TS, raw streams) packets carry start codes.
        let unreferenced =
            (stream.parameters().id() == ff::codec::Id::H264).then(|| match crate::nal::extradata(
                &stream.parameters(),
            ) {
                e if e.is_empty() => Framing::StartCodes,
                e => Family::H264.setup(&e).0,
            });
        let frames = FrameIndex::read(&mut input, stream_index, step);
        // Open again rather than seek back: picture demuxers cannot seek.
        let input = open_input(&opened)?;
        Ok(VideoReader {
            path: source.location(),
            opened,
            input,
            decoder,
            threads,
            stream_index,
            time_base,
            frames,
            position: None,
            ordinal: Some(0),
            skip_before: None,
            refused: std::collections::BTreeSet::new(),
            reference: None,
            scaler: None,
            converted: None,
            spare: Vec::new(),
            zero_copy: false,
            matrix_guess: read.color_matrix_guess,
            matrix: None,
            unreferenced,
        })
    }

    /// Convert every picture with `matrix` (the one a manifest recorded its clip read with),
    /// or, with `None`, with the one it declares, else the guess.
    pub fn set_matrix(&mut self, matrix: Option<Matrix>) {
        self.matrix = matrix;
    }

    pub fn time_base(&self) -> Ratio {
        self.time_base
    }

    /// The video stream read, as the open demuxer describes it.
    pub fn stream(&self) -> Option<ff::format::stream::Stream<'_>> {
        self.input.stream(self.stream_index)
    }

    /// Whether the file has an audio stream beside the video.
    pub fn has_audio(&self) -> bool {
        self.input.streams().best(ff::media::Type::Audio).is_some()
    }

    /// The file's frames: timestamps in display order, and how they are recognised.
    pub fn frames(&self) -> &FrameIndex {
        &self.frames
    }

    /// Timestamps of every frame, ascending. Frame `i` is shown from `pts[i]` until
    /// `pts[i + 1]`.
    pub fn frame_pts(&self) -> &[i64] {
        &self.frames.pts
    }

    /// Check seeks against a decode from the start: the frame count and the clean keyframes'
    /// content hashes the deep pass recorded. Refused (and `false`) when the frame counts
    /// differ: the file is not the one the reference describes, or decodes differently here.
    pub fn set_reference(&mut self, reference: &SeekReference) -> bool {
        if reference.frames != self.frames.len() as u64 {
            return false;
        }
        self.reference = Some(
            reference
                .keyframes
                .iter()
                .map(|&(i, h)| (i as usize, h))
                .collect(),
        );
        true
    }

    /// Hand 8-bit 4:2:0 pictures out as references to the decoder's buffers
    /// ([`Frame::decoded`]) instead of copies.
    pub fn set_zero_copy(&mut self, on: bool) {
        self.zero_copy = on;
    }

    pub fn has_reference(&self) -> bool {
        self.reference.is_some()
    }

    /// Open the file again at its start, with a new decoder: a flushed one keeps state in
    /// some codecs (WMV8's X8 intra pictures decode differently after other frames).
    fn restart(&mut self) -> Result<(), DecodeError> {
        self.position = None;
        self.input = open_input(&self.opened)?;
        let stream = self
            .input
            .stream(self.stream_index)
            .ok_or(DecodeError::NoVideo)?;
        self.decoder = open_decoder(&stream, self.threads)?;
        self.ordinal = Some(0);
        self.skip_before = None;
        Ok(())
    }

    /// A decode from the start ran dry after `count` frames, each the next in order: the
    /// file ends there, whatever its packets promised (a truncated file, VP8's hidden
    /// alt-ref packets, a header's frame count). Frames from `count` on are forgotten, so
    /// windows planned past the real end can be moved back ([`VideoReader::frames`] shrinks).
    fn end_at(&mut self, count: usize) {
        if count == 0 || count >= self.frames.len() {
            return;
        }
        tracing::debug!(
            "{}: {} frames decode, the packets promised {}",
            self.path.display(),
            count,
            self.frames.len()
        );
        self.frames.pts.truncate(count);
        self.frames.seek_points.retain(|s| s.frame < count);
    }

    /// Seek to the keyframe of seek point `point` and reset the decoder.
    fn seek(&mut self, point: usize) -> bool {
        self.decoder.flush();
        self.position = None;
        self.ordinal = None;
        let SeekPoint { target, pos, .. } = self.frames.seek_points[point];
        self.skip_before = (pos >= 0).then_some(pos);
        // SAFETY: `input` owns an open AVFormatContext; av_seek_frame only moves its read
        // position. The stream index is one of its streams.
        let rc = unsafe {
            ffi::av_seek_frame(
                self.input.as_mut_ptr(),
                self.stream_index as i32,
                target,
                ffi::AVSEEK_FLAG_BACKWARD,
            )
        };
        rc >= 0
    }

    /// Decode frames `wanted` (indices in display order, ascending, repeats allowed) and hand
    /// each to `on_frame` with its position in `wanted`, once.
    ///
    /// Every frame handed out is the frame a decode from the start shows at that index:
    /// after a seek, frames count only from a keyframe that decodes cleanly at or before the
    /// first wanted one, with every later frame present and undamaged; on any doubt the
    /// reader starts again from an earlier seek point, and last from the start of the file.
    /// A wanted frame that decodes with errors even from the start fails the request
    /// ([`ReadError::Corrupt`]); one that never comes out fails it as [`ReadError::Missing`].
    pub fn read(
        &mut self,
        wanted: &[usize],
        deadline: Option<Instant>,
        times: &mut ReadTimes,
        on_frame: &mut dyn FnMut(usize, Frame),
    ) -> Result<(), ReadError> {
        self.read_recycling(wanted, deadline, times, &mut |i, picture| {
            on_frame(i, picture);
            None
        })
    }

    /// [`read`](Self::read), where `on_frame` may hand the picture's buffer back when done
    /// with it: the next picture is converted into it (one buffer in use rather than one per
    /// frame; a 4K frame is 12 MB of fresh pages otherwise).
    pub fn read_recycling(
        &mut self,
        wanted: &[usize],
        deadline: Option<Instant>,
        times: &mut ReadTimes,
        on_frame: &mut dyn FnMut(usize, Frame) -> Option<Vec<u8>>,
    ) -> Result<(), ReadError> {
        let Some(&first) = wanted.first() else {
            return Ok(());
        };
        let beyond: Vec<usize> = wanted
            .iter()
            .copied()
            .filter(|&i| i >= self.frames.len())
            .collect();
        if !beyond.is_empty() {
            return Err(ReadError::Missing(beyond));
        }
        // Wanted frames handed out so far: a retry does not hand them out again.
        let mut handed = 0;
        let plan = start_plan(
            &self.frames,
            self.position,
            &self.refused,
            self.reference.as_ref(),
            first,
        );
        for start in plan {
            let trusted = match start {
                Start::Continue => true,
                Start::Seek(point) => {
                    times.seeks += 1;
                    if !self.seek(point) {
                        self.refused.insert(point);
                        continue;
                    }
                    false
                }
                Start::Beginning => {
                    times.seeks += 1;
                    self.restart()?;
                    true
                }
            };
            let attempt = Attempt {
                trusted,
                from_start: start == Start::Beginning,
            };
            match self.decode_until(wanted, attempt, &mut handed, deadline, times, on_frame)? {
                Outcome::Done => return Ok(()),
                Outcome::Doubt => {
                    self.position = None;
                    if let Start::Seek(point) = start {
                        self.refused.insert(point);
                    }
                }
            }
        }
        // The last attempt decodes from the start, which never ends in doubt.
        Err(ReadError::Missing(wanted[handed..].to_vec()))
    }

    /// Receive frames from the decoder and feed it packets until every frame of `wanted` from
    /// `*handed` on is handed to `on_frame` (`Done`), or what comes out shows `attempt` cannot
    /// be trusted (`Doubt`).
    ///
    /// One function: a single receive-and-feed loop, run for every frame and packet, whose
    /// state (the decoder and its frame, the next frame wanted, the count from the start, the
    /// packet left undecoded, the end of input) every step reads and changes.
    fn decode_until(
        &mut self,
        wanted: &[usize],
        mut attempt: Attempt,
        handed: &mut usize,
        deadline: Option<Instant>,
        times: &mut ReadTimes,
        on_frame: &mut dyn FnMut(usize, Frame) -> Option<Vec<u8>>,
    ) -> Result<Outcome, ReadError> {
        let mut frame = ff::frame::Video::empty();
        let mut eof = false;
        // Index in `wanted` of the next frame to reach.
        let mut next = 0;
        // From the start: how many frames came out, while they are frames 0, 1, 2, ... in
        // order (the file's real frame count when the decoder then runs dry).
        let mut prefix = attempt.from_start.then_some(0usize);
        // The packet before was left undecoded ([`VideoReader::unneeded`]).
        let mut skipped = false;
        loop {
            if deadline.is_some_and(|d| Instant::now() > d) {
                self.position = None;
                return Err(ReadError::TimedOut);
            }
            // Receive what the decoder has, then feed it.
            loop {
                let t = Instant::now();
                let received = self.decoder.receive_frame(&mut frame);
                times.decode_secs += t.elapsed().as_secs_f64();
                match received {
                    Ok(()) => {}
                    Err(ff::Error::Eof) => {
                        self.position = None;
                        if let Some(count) = prefix {
                            self.end_at(count);
                        }
                        return if attempt.from_start {
                            Err(ReadError::Missing(wanted[next..].to_vec()))
                        } else {
                            Ok(Outcome::Doubt)
                        };
                    }
                    Err(_) => break,
                }
                times.frames_decoded += 1;
                let ordinal = self.ordinal;
                self.ordinal = ordinal.map(|n| n + 1);
                let index = match self.frames.identity {
                    Identity::Pts => frame.pts().and_then(|p| self.frames.frame_of_pts(p)),
                    Identity::Ordinal => ordinal,
                };
                prefix = prefix.filter(|&k| index == Some(k)).map(|k| k + 1);
                let mut key = frame.is_key();
                if key
                    && !attempt.trusted
                    && let (Some(reference), Some(i)) = (&self.reference, index)
                {
                    // A keyframe counts only where a decode from the start showed one, with
                    // this very content.
                    key = reference.get(&i) == Some(&content_hash(&frame));
                }
                let seen = Seen {
                    index,
                    key,
                    damaged: is_damaged(&frame),
                };
                let index = match attempt.judge(seen, self.position, wanted[next]) {
                    Check::Skip => continue,
                    Check::Doubt => return Ok(Outcome::Doubt),
                    Check::Missing => {
                        self.position = None;
                        return Err(ReadError::Missing(wanted[next..].to_vec()));
                    }
                    Check::Corrupt(index) => {
                        self.position = None;
                        return Err(ReadError::Corrupt { frame: index });
                    }
                    Check::Take(index) => index,
                };
                self.position = Some(index);
                while next < wanted.len() && wanted[next] == index {
                    if next >= *handed {
                        let t = Instant::now();
                        let picture = self.convert(&frame, index)?;
                        times.convert_secs += t.elapsed().as_secs_f64();
                        if let Some(buffer) = on_frame(next, picture) {
                            self.spare.push(buffer);
                        }
                        *handed = next + 1;
                    }
                    next += 1;
                }
                if next == wanted.len() {
                    return Ok(Outcome::Done);
                }
            }
            if eof {
                continue;
            }
            let t = Instant::now();
            let mut packet = ff::Packet::empty();
            let read = packet.read(&mut self.input);
            times.read_secs += t.elapsed().as_secs_f64();
            match read {
                Ok(()) => {
                    if packet.stream() != self.stream_index {
                        continue;
                    }
                    if let Some(pos) = self.skip_before {
                        let at = packet.position() as i64;
                        if at >= 0 && at < pos {
                            // Landed before the keyframe sought: not needed.
                            continue;
                        }
                        self.skip_before = None;
                    }
                    if self.unneeded(&packet, wanted[next], attempt, skipped) {
                        skipped = true;
                        times.frames_skipped += 1;
                        continue;
                    }
                    skipped = false;
                    let t = Instant::now();
                    // A packet the decoder rejects is skipped; missing frames are reported.
                    let _ = self.decoder.send_packet(&packet);
                    times.decode_secs += t.elapsed().as_secs_f64();
                }
                Err(_) => {
                    eof = true;
                    let _ = self.decoder.send_eof();
                }
            }
        }
    }

    /// Whether `packet` holds a picture that nothing refers to and that shows before frame
    /// `want` (the next wanted, which every frame still to hand out follows): decoding it
    /// would give a frame no one is handed and no other frame needs, as on the way from a
    /// keyframe to a window. A packet without a timestamp right after one left undecoded
    /// (`after_skip`: an interlaced picture's second field, which MPEG-TS carries apart) goes
    /// with it. Not in a decode from the start, which counts every frame.
    fn unneeded(
        &self,
        packet: &ff::Packet,
        want: usize,
        attempt: Attempt,
        after_skip: bool,
    ) -> bool {
        let Some(framing) = self.unreferenced else {
            return false;
        };
        if attempt.from_start || self.frames.identity != Identity::Pts {
            return false;
        }
        let shows_before = match (packet.pts(), self.frames.pts.get(want)) {
            (Some(pts), Some(&until)) => pts < until,
            (None, _) => after_skip,
            _ => false,
        };
        shows_before
            && nal_units(packet.data().unwrap_or_default(), framing)
                .is_some_and(|units| Family::H264.unreferenced(&units))
    }
}

/// A decoder for `stream`, with frame threading over `threads` threads.
fn open_decoder(
    stream: &ff::format::stream::Stream<'_>,
    threads: usize,
) -> Result<ff::decoder::Video, DecodeError> {
    let codec_name = stream.parameters().id().name().to_string();
    let mut ctx = ff::codec::context::Context::from_parameters(stream.parameters())
        .map_err(|e| DecodeError::Setup(e.to_string()))?;
    ctx.set_threading(ff::codec::threading::Config {
        kind: ff::codec::threading::Type::Frame,
        count: threads.max(1),
        ..Default::default()
    });
    ctx.decoder().video().map_err(|e| match e {
        ff::Error::DecoderNotFound => DecodeError::NoDecoder(codec_name),
        other => DecodeError::Setup(other.to_string()),
    })
}

/// Open a file for demuxing, with FFmpeg's own reason when it fails.
fn open_input(opened: &Opened) -> Result<ff::format::context::Input, DecodeError> {
    opened.input(|| false).map_err(|e| {
        let detail = ffmpeg_log::take_last_error();
        DecodeError::Open(match detail {
            Some(d) => format!("{e} ({d})"),
            None => e.to_string(),
        })
    })
}

#[cfg(test)]
mod tests;
