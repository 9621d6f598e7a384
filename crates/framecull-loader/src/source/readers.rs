//! Decoders kept open per worker: a window's frames read (from the frame cache or by a
//! decode), and how each is cut.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{clip_range, content_in_display, draw_augmentation, window_positions};
use crate::cache::{CacheConfig, CacheError};
use crate::plan::{Sample, Timing};
use crate::preprocess::{Frame, FrameJob, FrameParams, OutputSpec, Scratch, write_frame};
use crate::{ClipSource, Crop, LoaderConfig, SkipReason};
use framecull_media::decode::DecodeError;
use framecull_media::reader::{ReadError, ReadTimes, VideoReader};
use framecull_model::{Ratio, ReadAs};

/// The frames of one window and how to cut each.
pub(crate) struct WindowFrames {
    /// The frames, each with its index in the file and its timestamp.
    pub frames: Vec<Frame>,
    pub params: Vec<FrameParams>,
    /// The timestamps' time base (the file's stream).
    pub time_base: Ratio,
}

/// Which frames a window read: each one's index in the file and timestamp, in slot order, and
/// the timestamps' time base.
pub(crate) type FramesRead = (Vec<(usize, i64)>, Ratio);

/// Why a window's frames could not be read (the message a skipped clip reports).
#[derive(Debug, thiserror::Error)]
enum WindowError {
    /// The file did not open as a video.
    #[error(transparent)]
    Open(#[from] DecodeError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("no frames within the clip's boundaries")]
    NoFrames,
    #[error("a frame was not decoded")]
    NotDecoded,
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// Decoders each worker keeps open.
pub(crate) const OPEN_DECODERS: usize = 4;

/// Open decoders of one worker, most recently used last, and the frame cache.
pub(crate) struct Readers {
    open: Vec<(PathBuf, VideoReader)>,
    capacity: usize,
    threads: usize,
    cache: Option<CacheConfig>,
    /// Clips found in (or written to) the cache, by clip id.
    known: std::collections::HashMap<String, crate::cache::CachedClip>,
    pub cache_hits: u64,
    pub cache_fills: u64,
    /// Why the frame cache could not be written, when it could not.
    pub cache_failure: Option<String>,
}

impl Readers {
    pub fn new(capacity: usize, threads: usize, cache: Option<CacheConfig>) -> Readers {
        Readers {
            open: Vec::new(),
            capacity: capacity.max(1),
            threads,
            cache,
            cache_hits: 0,
            cache_failure: None,
            cache_fills: 0,
            known: std::collections::HashMap::new(),
        }
    }

    fn get(&mut self, clip: &ClipSource) -> Result<&mut VideoReader, WindowError> {
        if let Some(i) = self.open.iter().position(|(p, _)| *p == clip.path) {
            let entry = self.open.remove(i);
            self.open.push(entry);
        } else {
            let read = ReadAs {
                stream: clip.stream,
                ..ReadAs::default()
            };
            let mut reader = VideoReader::open_as(&clip.source, self.threads, read)?;
            reader.set_matrix(clip.matrix);
            reader.set_zero_copy(true);
            if self.open.len() >= self.capacity {
                self.open.remove(0);
            }
            self.open.push((clip.path.clone(), reader));
        }
        let last = self.open.len() - 1;
        Ok(&mut self.open[last].1)
    }

    /// Hand picture buffers back to the decoder of `path` for its next frames.
    pub fn recycle(&mut self, path: &Path, buffers: impl Iterator<Item = Vec<u8>>) {
        if let Some((_, reader)) = self.open.iter_mut().find(|(p, _)| p == path) {
            reader.spare.extend(buffers);
            reader.spare.truncate(64);
        }
    }

    /// Forget a decoder whose state is unknown after an error.
    fn drop_reader(&mut self, path: &Path) {
        self.open.retain(|(p, _)| p != path);
    }

    /// The clip's decoder and the range of its frames within the clip's boundaries.
    fn clip_reader(
        &mut self,
        clip: &ClipSource,
    ) -> Result<(&mut VideoReader, Range<usize>), WindowError> {
        let reader = self.get(clip)?;
        if let Some(reference) = &clip.reference
            && !reader.has_reference()
            && !reader.set_reference(reference)
        {
            tracing::debug!(
                "{}: the frame table counts {} frames, the file has {}: seeks unchecked",
                clip.path.display(),
                reference.frames,
                reader.frames().len()
            );
        }
        let range = clip_range(reader.frame_pts(), reader.time_base(), clip);
        if range.is_empty() {
            return Err(WindowError::NoFrames);
        }
        Ok((reader, range))
    }

    /// Read the window's frames (file indices `wanted`) with `read`; when a decode from the
    /// start finds the file's real end before frames its packets promised, the window is
    /// planned again on the frames there are. Returns what `read` made and the time base.
    fn read_planned<T>(
        &mut self,
        clip: &ClipSource,
        sample: &Sample,
        timing: Timing,
        mut read: impl FnMut(&mut VideoReader, &[usize]) -> Result<T, ReadError>,
    ) -> Result<(T, Ratio), WindowError> {
        loop {
            let (reader, range) = self.clip_reader(clip)?;
            let promised = reader.frames().len();
            let time_base = reader.time_base();
            let clip_pts = &reader.frame_pts()[range.clone()];
            let wanted: Vec<usize> = window_positions(clip_pts, time_base, sample, timing)
                .into_iter()
                .map(|p| range.start + p)
                .collect();
            match read(reader, &wanted) {
                Ok(made) => return Ok((made, time_base)),
                Err(ReadError::Missing(_)) if reader.frames().len() < promised => continue,
                Err(e) => {
                    self.drop_reader(&clip.path);
                    return Err(e.into());
                }
            }
        }
    }

    /// The window's frames as decoded, with the clip's rotation and mirror still to apply.
    fn decode_window(
        &mut self,
        clip: &ClipSource,
        sample: &Sample,
        timing: Timing,
        deadline: Instant,
        times: &mut ReadTimes,
    ) -> Result<(Vec<Frame>, Ratio), WindowError> {
        let (pictures, time_base) = self.read_planned(clip, sample, timing, |reader, wanted| {
            let mut pictures: Vec<Option<Frame>> = vec![None; wanted.len()];
            reader.read(wanted, Some(deadline), times, &mut |i, p| {
                pictures[i] = Some(p)
            })?;
            Ok(pictures)
        })?;
        let frames = pictures
            .into_iter()
            .map(|p| p.ok_or(WindowError::NotDecoded))
            .collect::<Result<_, _>>()?;
        Ok((frames, time_base))
    }

    /// The window's frames from the cache (filled with the whole clip on a miss), already
    /// rotated and mirrored.
    fn cached_window(
        &mut self,
        cache: &CacheConfig,
        clip: &ClipSource,
        sample: &Sample,
        timing: Timing,
        deadline: Instant,
        times: &mut ReadTimes,
    ) -> Result<(Vec<Frame>, Ratio), WindowError> {
        // Headers of cached clips are read once per worker.
        if self.known.contains_key(&clip.clip_id) {
            self.cache_hits += 1;
        } else if let Some(c) = cache.open(clip) {
            self.cache_hits += 1;
            self.known.insert(clip.clip_id.clone(), c);
        } else {
            let filled = loop {
                let (reader, range) = self.clip_reader(clip)?;
                let promised = reader.frames().len();
                let filled = cache.fill(clip, reader, range, deadline, times);
                // A file that ends before the frames its packets promised: fill again with
                // the frames there are.
                if filled.is_ok() || reader.frames().len() == promised {
                    break filled;
                }
            };
            if let Err(e) = &filled {
                self.drop_reader(&clip.path);
                // A cache that cannot be written (a full disk, a file-size limit) is not the
                // clip's fault: the run stops with it rather than skip clip after clip.
                if e.is_write_failure() {
                    self.cache_failure = Some(e.to_string());
                }
            }
            self.cache_fills += 1;
            self.known.insert(clip.clip_id.clone(), filled?);
        }
        let cached = &self.known[&clip.clip_id];
        let wanted = window_positions(&cached.pts, cached.time_base, sample, timing);
        Ok((cache.read(cached, &wanted)?, cached.time_base))
    }

    /// Positions of the clip's keyframes (seek points), counted from its first frame, once
    /// its file is open here.
    pub fn clip_keyframes(&self, clip: &ClipSource) -> Option<Vec<f64>> {
        let (_, reader) = self.open.iter().find(|(p, _)| *p == clip.path)?;
        let range = clip_range(reader.frame_pts(), reader.time_base(), clip);
        Some(
            reader
                .frames()
                .seek_points
                .iter()
                .filter(|s| range.contains(&s.frame))
                .map(|s| (s.frame - range.start) as f64)
                .collect(),
        )
    }

    /// Read one window's frames and draw its augmentation.
    pub fn read_window(
        &mut self,
        clip: &ClipSource,
        sample: &Sample,
        config: &LoaderConfig,
        times: &mut ReadTimes,
    ) -> Result<WindowFrames, (SkipReason, String)> {
        let timing = config.sampling.timing;
        let deadline = Instant::now() + window_budget(clip, config);
        let (frames, mut cut) = match self.cache.clone() {
            Some(cache) => {
                let frames = self.cached_window(&cache, clip, sample, timing, deadline, times);
                (frames, Cut::new(sample, config, clip, true))
            }
            None => {
                let frames = self.decode_window(clip, sample, timing, deadline, times);
                let cut = Cut::new(sample, config, clip, false);
                (frames, cut)
            }
        };
        let (frames, time_base) = frames.map_err(|e| (SkipReason::Corrupt, e.to_string()))?;
        if frames.is_empty() {
            return Err((SkipReason::Corrupt, WindowError::NoFrames.to_string()));
        }
        let params = frames.iter().map(|frame| cut.params(frame)).collect();
        Ok(WindowFrames {
            frames,
            params,
            time_base,
        })
    }

    /// Read one window and hand each frame, with how to cut it, to `each` as it is decoded
    /// (slot by slot, in order), instead of keeping the window's frames: a worker then holds
    /// one decoded frame rather than a window of them. Returns each frame's index in the file
    /// and timestamp, and the time base.
    pub fn read_window_each(
        &mut self,
        clip: &ClipSource,
        sample: &Sample,
        config: &LoaderConfig,
        times: &mut ReadTimes,
        each: &mut dyn FnMut(usize, &Frame, FrameParams),
    ) -> Result<FramesRead, (SkipReason, String)> {
        let corrupt = |e: WindowError| (SkipReason::Corrupt, e.to_string());
        if self.cache.is_some() {
            let window = self.read_window(clip, sample, config, times)?;
            for (slot, (frame, &params)) in window.frames.iter().zip(&window.params).enumerate() {
                each(slot, frame, params);
            }
            let frames = window.frames.iter().map(|f| (f.index, f.pts)).collect();
            self.recycle(&clip.path, window.frames.into_iter().map(|f| f.data));
            return Ok((frames, window.time_base));
        }
        let deadline = Instant::now() + window_budget(clip, config);
        let timing = config.sampling.timing;
        let (frames, time_base) = self
            .read_planned(clip, sample, timing, |reader, wanted| {
                // Slots handed out by an attempt that is planned again are written again; the
                // caller zeroes those past the window's end.
                let mut cut = Cut::new(sample, config, clip, false);
                let mut frames: Vec<Option<(usize, i64)>> = vec![None; wanted.len()];
                reader.read_recycling(wanted, Some(deadline), times, &mut |slot, frame| {
                    frames[slot] = Some((frame.index, frame.pts));
                    each(slot, &frame, cut.params(&frame));
                    Some(frame.data)
                })?;
                Ok(frames)
            })
            .map_err(corrupt)?;
        if frames.is_empty() {
            return Err(corrupt(WindowError::NoFrames));
        }
        let frames = frames
            .into_iter()
            .map(|f| f.ok_or(WindowError::NotDecoded))
            .collect::<Result<_, _>>()
            .map_err(corrupt)?;
        Ok((frames, time_base))
    }
}

impl Readers {
    /// Read one window into `bytes` (its batch's frame slots, `frame_bytes` each), each frame
    /// preprocessed as it is decoded (a worker holds one decoded frame, not a window of them:
    /// a 4K window is 16 x 12 MB); padding slots are zeroed. Returns which frames the window
    /// holds and the seconds spent preprocessing.
    pub fn read_window_into(
        &mut self,
        clip: &ClipSource,
        sample: &Sample,
        config: &LoaderConfig,
        times: &mut ReadTimes,
        scratch: &mut Scratch,
        bytes: &mut [u8],
    ) -> Result<(FramesRead, f64), (SkipReason, String)> {
        let out = config.output;
        let frame_bytes = out.frame_elements() * out.dtype.size_bytes();
        let slots = bytes.len() / frame_bytes.max(1);
        let mut preprocess_secs = 0.0;
        let (frames, time_base) =
            self.read_window_each(clip, sample, config, times, &mut |slot, frame, params| {
                if slot < slots {
                    let started = Instant::now();
                    let dst = &mut bytes[slot * frame_bytes..(slot + 1) * frame_bytes];
                    write_frame(Some(&FrameJob { frame, params }), &out, scratch, dst);
                    preprocess_secs += started.elapsed().as_secs_f64();
                }
            })?;
        // Padding slots must read as zeros.
        bytes[frames.len().min(slots) * frame_bytes..].fill(0);
        Ok(((frames, time_base), preprocess_secs))
    }
}

/// How a window's frames are cut: the crop and flip drawn once per window (from its first
/// frame's display size), with the clip's rotation and mirror.
struct Cut {
    seed: u64,
    crop: Crop,
    hflip: f32,
    output: OutputSpec,
    quarter_turns: u8,
    mirror: bool,
    /// The picture's content in the display picture, mirrored where it is (fractions).
    content: Option<[f64; 4]>,
    augmentation: Option<([f32; 4], bool)>,
}

impl Cut {
    /// `turned`: the frames come display side up already (from the frame cache).
    fn new(sample: &Sample, config: &LoaderConfig, clip: &ClipSource, turned: bool) -> Cut {
        Cut {
            seed: sample.aug_seed,
            crop: config.crop,
            hflip: config.hflip,
            output: config.output,
            quarter_turns: if turned { 0 } else { clip.quarter_turns },
            mirror: clip.mirror && !turned,
            content: clip
                .content
                .map(|c| content_in_display(c, clip.quarter_turns, clip.mirror)),
            augmentation: None,
        }
    }

    /// The next frame's parameters (frames in slot order).
    fn params(&mut self, frame: &Frame) -> FrameParams {
        let display = frame.display_size(self.quarter_turns);
        let (rect, flip) = *self.augmentation.get_or_insert_with(|| {
            draw_augmentation(
                self.seed,
                self.crop,
                self.hflip,
                display,
                self.content,
                &self.output,
            )
        });
        let [mut x, y, w, h] = rect;
        let mut flip = flip;
        if self.mirror {
            // Crop the mirrored picture: the same region of the unmirrored one, flipped.
            x = 1.0 - x - w;
            flip = !flip;
        }
        let (dw, dh) = (display.0 as f32, display.1 as f32);
        FrameParams {
            quarter_turns: self.quarter_turns,
            crop: [x * dw, y * dh, w * dw, h * dh],
            flip,
        }
    }
}

/// How long reading one window of `clip` may take: `window_budget_secs`, or in proportion to
/// the clip when a frame-cache miss decodes all of it. The reader's deadline, and (plus a
/// grace) the limit a worker process gets.
pub(crate) fn window_budget(clip: &ClipSource, config: &LoaderConfig) -> Duration {
    let budget = Duration::from_secs_f64(config.window_budget_secs.max(0.001));
    if config.cache.is_some() {
        budget * (1 + clip_len_hint(clip) / 64)
    } else {
        budget
    }
}

/// Frames the clip is expected to hold (for time budgets).
fn clip_len_hint(clip: &ClipSource) -> u32 {
    ((clip.end_secs - clip.start_secs).max(0.0) * 60.0).min(1e6) as u32
}
