//! Reading windows: file checks, which frames a window takes (by frame index or by
//! timestamp), decoders kept open per worker, and the crop and flip drawn per window.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::cache::{CacheConfig, CacheError};
use super::plan::{ClipExtent, Rng, Sample, Timing};
use super::preprocess::{Frame, FrameJob, FrameParams, OutputSpec, Scratch, write_frame};
use super::{ClipSource, Crop, LoaderConfig, SkipReason};
use framecull_manifest::ManifestRow;
use framecull_media::decode::DecodeError;
use framecull_media::reader::{ReadError, ReadTimes, VideoReader};
use framecull_media::source::Source;
use framecull_model::{ClipBounds, Matrix, MediaKind, Ratio, ReadAs, StreamChoice};
use framecull_storage::{Root, StorageError};

/// A row's check: the file to read, or why its clips are skipped.
pub(crate) type Check = Result<Checked, (SkipReason, String)>;

/// What the check of one file found: where to read it, and an image's EXIF orientation.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub source: Source,
    pub orientation: u16,
}

/// Check every row's file: present, and (when asked) with the fingerprint the manifest holds.
/// Each file is read once, however many clips it has: a local file's metadata (and sampled
/// bytes for its fingerprint), an object's HEAD (its size, and its ETag or version for the
/// fingerprint, as the scan computed it from the listing); an image's first bytes, for its
/// EXIF orientation. The checks run on a thread pool made for this call, not rayon's global
/// one: a process forked after opening a loader (Python's `multiprocessing`) has no global
/// pool threads, and would wait for them forever. An object store that cannot be reached, or
/// refuses the key, is an error for the whole load, not a skip per file.
pub(crate) fn check_files<'a>(
    rows: &[&'a ManifestRow],
    root: &Root,
    verify: bool,
) -> Result<Vec<Check>, StorageError> {
    let mut paths: Vec<(&str, bool)> = rows
        .iter()
        .map(|r| (r.path.as_str(), r.kind == MediaKind::Image))
        .collect();
    paths.sort_unstable();
    paths.dedup_by(|a, b| a.0 == b.0);
    // The file to read and its fingerprint now (an empty string when not asked for).
    let check = |(rel, is_image): (&'a str, bool)| {
        let result = find(root, rel, verify).map(|(source, now)| {
            let orientation = if is_image {
                framecull_media::exif_orientation_in(&source.open()).unwrap_or(1)
            } else {
                1
            };
            (
                Checked {
                    source,
                    orientation,
                },
                now,
            )
        });
        (rel, result)
    };
    // Requests to a store wait on the network, not on a core.
    let threads = match root {
        Root::Local(_) => std::thread::available_parallelism().map_or(2, usize::from),
        Root::Remote(_) => 16,
    };
    type Found = Result<(Checked, String), (SkipReason, String)>;
    let found: std::collections::HashMap<&str, Found> =
        match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            Ok(pool) => pool.install(|| paths.par_iter().map(|&p| check(p)).collect()),
            Err(_) => paths.iter().map(|&p| check(p)).collect(),
        };
    if let Some(failure) = root.as_remote().and_then(|r| r.failure()) {
        return Err(failure);
    }
    Ok(rows
        .iter()
        .map(|row| match &found[row.path.as_str()] {
            Err(e) => Err(e.clone()),
            Ok((_, now)) if verify && *now != row.file_fingerprint => Err((
                SkipReason::Changed,
                format!(
                    "the file changed since the manifest was written (fingerprint {now}, manifest {})",
                    row.file_fingerprint
                ),
            )),
            Ok((checked, _)) => Ok(checked.clone()),
        })
        .collect())
}

/// The file at `rel` of `root`, if it is there, and its fingerprint when `verify` asks.
pub(crate) fn find(
    root: &Root,
    rel: &str,
    verify: bool,
) -> Result<(Source, String), (SkipReason, String)> {
    match root {
        Root::Local(dir) => {
            let path = framecull_model::local_path(dir, rel);
            let unreadable =
                |e: std::io::Error| (SkipReason::Missing, format!("cannot read the file: {e}"));
            let meta = std::fs::metadata(&path).map_err(unreadable)?;
            if !meta.is_file() {
                return Err((SkipReason::Missing, "not a file".to_string()));
            }
            let now = if verify {
                framecull_media::fingerprint::fingerprint(&path, meta.len()).map_err(unreadable)?
            } else {
                String::new()
            };
            Ok((Source::File(path), now))
        }
        Root::Remote(remote) => {
            let head = remote.head(rel).map_err(|e| {
                let reason = match e {
                    StorageError::NotFound { .. } => SkipReason::Missing,
                    _ => SkipReason::Corrupt,
                };
                (reason, e.to_string())
            })?;
            let now = if verify {
                framecull_media::fingerprint::of_listing(
                    head.size_bytes,
                    head.e_tag.as_deref(),
                    head.version.as_deref(),
                )
                .unwrap_or_default()
            } else {
                String::new()
            };
            Ok((Source::in_root(root, rel, head.size_bytes), now))
        }
    }
}

pub(crate) fn clip_source(
    row: &ManifestRow,
    row_index: usize,
    checked: Checked,
) -> (ClipSource, ClipExtent) {
    let is_image = row.kind == MediaKind::Image;
    let (quarter_turns, mirror) = if is_image {
        framecull_model::orientation_turns(checked.orientation)
    } else {
        let deg = row.rotation_deg.unwrap_or(0).rem_euclid(360);
        (((deg + 45) / 90 % 4) as u8, false)
    };
    let duration_secs = (row.end_secs - row.start_secs).max(0.0);
    let frames = match (row.start_frame, row.end_frame) {
        (Some(a), Some(b)) if b > a => (b - a) as u32,
        _ => ((duration_secs * row.fps.unwrap_or(30.0)).round() as u32).max(1),
    };
    let key = u64::from_str_radix(&row.clip_id, 16)
        .unwrap_or_else(|_| xxhash_rust::xxh3::xxh3_64(row.clip_id.as_bytes()));
    (
        ClipSource {
            clip_id: row.clip_id.clone(),
            row: row_index,
            path: checked.source.location(),
            source: checked.source,
            is_image,
            quarter_turns,
            mirror,
            start_pts: row.start_pts,
            end_pts: row.end_pts,
            start_secs: row.start_secs,
            end_secs: row.end_secs,
            frames: match (row.start_frame, row.end_frame) {
                (Some(a), Some(b)) if a >= 0 && b > a => Some((a as usize, b as usize)),
                _ => None,
            },
            time_base: row.time_base.as_deref().and_then(Ratio::parse),
            reference: None,
            stream: StreamChoice::recorded(row.stream_index.and_then(|i| u32::try_from(i).ok())),
            matrix: row.color_matrix.as_deref().and_then(Matrix::parse),
            content: content_fractions(row).filter(|_| !is_image),
        },
        ClipExtent {
            frames,
            duration_secs,
            is_image,
            key,
        },
    )
}

/// The clip's frames: a range of frame indices of the file (whose timestamps are `all`), by
/// [`ClipBounds::range_in`].
pub(crate) fn clip_range(all: &[i64], time_base: Ratio, clip: &ClipSource) -> Range<usize> {
    ClipBounds {
        is_image: clip.is_image,
        start_pts: clip.start_pts,
        end_pts: clip.end_pts,
        time_base: clip.time_base,
        start_secs: clip.start_secs,
        end_secs: clip.end_secs,
        frames: clip.frames,
    }
    .range_in(all, time_base)
}

/// Positions among the clip's frames (timestamps `frames`) that a window takes, ascending,
/// repeats allowed (a frame shown at two sampled times). Only frames that exist: a stride
/// window planned past the clip's end (from an overstated frame count) is moved back to end
/// at the last frame, and what still does not fit is left to padding; a timed window takes
/// no frame after the clip's last one has ended.
pub(crate) fn window_positions(
    frames: &[i64],
    time_base: Ratio,
    sample: &Sample,
    timing: Timing,
) -> Vec<usize> {
    let n = frames.len();
    if n == 0 {
        return Vec::new();
    }
    match timing {
        Timing::Stride(stride) => {
            let stride = stride.max(1) as usize;
            let len = sample.len as usize;
            let span = len.saturating_sub(1) * stride + 1;
            let start = (sample.start.max(0.0) as usize).min(n.saturating_sub(span));
            (0..len)
                .map(|k| start + k * stride)
                .take_while(|&i| i < n)
                .collect()
        }
        Timing::Fps(fps) => {
            let tb = time_base.as_f64();
            let t0 = frames[0] as f64 * tb;
            // The last frame is shown for as long as the one before it.
            let step = if n > 1 {
                frames[n - 1] - frames[n - 2]
            } else {
                (1.0 / fps / tb).round().max(1.0) as i64
            };
            let end = (frames[n - 1] + step) as f64 * tb;
            (0..sample.len)
                .map(|k| t0 + sample.start + f64::from(k) / fps)
                .take_while(|&t| t < end - 1e-9)
                .map(|t| {
                    // The frame on screen at time t: the last one that starts at or before it.
                    let shown = frames.partition_point(|&p| p as f64 * tb <= t + 1e-9);
                    shown.saturating_sub(1)
                })
                .collect()
        }
    }
}

/// A row's `content_crop` as fractions of its coded picture (`width` x `height`): x, y,
/// width, height; `None` without one, or one that does not fit the picture.
fn content_fractions(row: &ManifestRow) -> Option<[f64; 4]> {
    let c = framecull_model::Crop::parse(row.content_crop.as_deref()?)?;
    let (w, h) = (row.width? as f64, row.height? as f64);
    let fits =
        f64::from(c.x) + f64::from(c.width) <= w && f64::from(c.y) + f64::from(c.height) <= h;
    fits.then(|| {
        [
            f64::from(c.x) / w,
            f64::from(c.y) / h,
            f64::from(c.width) / w,
            f64::from(c.height) / h,
        ]
    })
}

/// `content` (fractions of the coded picture) as fractions of the display picture, turned
/// `quarter_turns` clockwise as the frames are (`convert::cpu`: display (dx, dy) is coded
/// (dy, H - dx) at one turn) and mirrored after when `mirror`.
fn content_in_display(content: [f64; 4], quarter_turns: u8, mirror: bool) -> [f64; 4] {
    let [x, y, w, h] = content;
    let [x, y, w, h] = match quarter_turns % 4 {
        0 => [x, y, w, h],
        1 => [1.0 - y - h, x, h, w],
        2 => [1.0 - x - w, 1.0 - y - h, w, h],
        _ => [y, 1.0 - x - w, h, w],
    };
    let x = if mirror { 1.0 - x - w } else { x };
    [x, y, w, h].map(|v| v.clamp(0.0, 1.0))
}

/// Crop (as fractions of the display size) and flip for one window; `content`: the
/// picture's content in the same fractions, which [`Crop::Content`] crops within.
fn draw_augmentation(
    seed: u64,
    crop: Crop,
    hflip: f32,
    display: (u32, u32),
    content: Option<[f64; 4]>,
    out: &OutputSpec,
) -> ([f32; 4], bool) {
    let mut rng = Rng::new(&[seed]);
    let (w, h) = (f64::from(display.0), f64::from(display.1));
    // The largest rectangle of `aspect` centred in `[x, y, rw, rh]` (fractions).
    let center_in = |[x, y, rw, rh]: [f64; 4], aspect: f64| {
        let [x, y, cw, ch] = if rw * w / (rh * h) > aspect {
            let cw = rh * h * aspect / w;
            [x + (rw - cw) / 2.0, y, cw, rh]
        } else {
            let ch = rw * w / aspect / h;
            [x, y + (rh - ch) / 2.0, rw, ch]
        };
        [x as f32, y as f32, cw as f32, ch as f32]
    };
    let center = |aspect: f64| center_in([0.0, 0.0, 1.0, 1.0], aspect);
    let out_aspect = f64::from(out.width) / f64::from(out.height);
    let rect = match crop {
        Crop::Full => [0.0, 0.0, 1.0, 1.0],
        Crop::Center => center(out_aspect),
        Crop::Content => center_in(content.unwrap_or([0.0, 0.0, 1.0, 1.0]), out_aspect),
        Crop::RandomResized { scale, ratio } => {
            let area = w * h;
            let (lr0, lr1) = (f64::from(ratio[0]).ln(), f64::from(ratio[1]).ln());
            let mut found = None;
            for _ in 0..10 {
                let target =
                    area * (f64::from(scale[0]) + rng.next_f64() * f64::from(scale[1] - scale[0]));
                let aspect = (lr0 + rng.next_f64() * (lr1 - lr0)).exp();
                let cw = (target * aspect).sqrt();
                let ch = (target / aspect).sqrt();
                if cw <= w && ch <= h {
                    let x = rng.next_f64() * (w - cw);
                    let y = rng.next_f64() * (h - ch);
                    found = Some([
                        (x / w) as f32,
                        (y / h) as f32,
                        (cw / w) as f32,
                        (ch / h) as f32,
                    ]);
                    break;
                }
            }
            found.unwrap_or_else(|| center((w / h).clamp(f64::from(ratio[0]), f64::from(ratio[1]))))
        }
    };
    let flip = hflip > 0.0 && rng.next_f64() < f64::from(hflip);
    (rect, flip)
}

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
    known: std::collections::HashMap<String, super::cache::CachedClip>,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn clip() -> ClipSource {
        ClipSource {
            clip_id: "0".into(),
            row: 0,
            path: PathBuf::new(),
            source: Source::File(PathBuf::new()),
            is_image: false,
            quarter_turns: 0,
            mirror: false,
            start_pts: None,
            end_pts: None,
            start_secs: 0.0,
            end_secs: 10.0,
            frames: None,
            time_base: None,
            reference: None,
            stream: StreamChoice::Best,
            matrix: None,
            content: None,
        }
    }

    fn sample(start: f64, len: u32) -> Sample {
        Sample {
            clip: 0,
            start,
            len,
            aug_seed: 0,
        }
    }

    #[test]
    fn fps_sampling_follows_timestamps_not_indices() {
        // Variable frame rate: frames at 0, 0.1, 0.3, 0.4, 0.6, 0.7 s.
        let tb = Ratio { num: 1, den: 10 };
        let frames = [0, 1, 3, 4, 6, 7];
        // 5 fps: times 0, 0.2, 0.4, 0.6 -> frames shown then: 0, 1, 3, 4.
        assert_eq!(
            window_positions(&frames, tb, &sample(0.0, 4), Timing::Fps(5.0)),
            vec![0, 1, 3, 4]
        );
        // 10 fps from 0.5 s: frames shown at 0.5, 0.6, 0.7 and 0.75; the last frame is shown
        // for as long as the one before it (until 0.8 s), so 0.8 and later take no frame.
        assert_eq!(
            window_positions(&frames, tb, &sample(0.5, 5), Timing::Fps(10.0)),
            vec![3, 4, 5]
        );
        assert_eq!(
            window_positions(&frames, tb, &sample(0.5, 6), Timing::Fps(20.0)),
            vec![3, 3, 4, 4, 5, 5]
        );
    }

    #[test]
    fn stride_windows_take_only_frames_that_exist() {
        let tb = Ratio { num: 1, den: 10 };
        let frames = [0, 1, 3, 4, 6, 7];
        assert_eq!(
            window_positions(&frames, tb, &sample(0.0, 3), Timing::Stride(2)),
            vec![0, 2, 4]
        );
        // Planned past the end (the header promised more frames): moved back to end at the
        // last frame, never a repeated last frame.
        assert_eq!(
            window_positions(&frames, tb, &sample(4.0, 3), Timing::Stride(1)),
            vec![3, 4, 5]
        );
        // Longer than the clip: the frames there are, the rest is padding.
        assert_eq!(
            window_positions(&frames, tb, &sample(0.0, 4), Timing::Stride(2)),
            vec![0, 2, 4]
        );
        assert!(window_positions(&[], tb, &sample(0.0, 4), Timing::Stride(1)).is_empty());
    }

    #[test]
    fn clip_ranges_are_half_open() {
        let tb = Ratio { num: 1, den: 10 };
        let all = [0, 1, 3, 4, 6, 7];
        let mut c = clip();
        c.start_pts = Some(3);
        c.end_pts = Some(6);
        assert_eq!(clip_range(&all, tb, &c), 2..4);
        c.start_pts = None;
        c.start_secs = 0.1;
        c.end_secs = 0.6;
        assert_eq!(clip_range(&all, tb, &c), 1..4);
    }

    #[test]
    fn whole_file_rows_keep_their_last_frame() {
        // A container duration that ends where the last frame starts (0.7 s), and frame
        // bounds that say all six frames.
        let tb = Ratio { num: 1, den: 10 };
        let all = [0, 1, 3, 4, 6, 7];
        let mut c = clip();
        c.start_pts = Some(0);
        c.end_pts = Some(7);
        c.frames = Some((0, 6));
        assert_eq!(clip_range(&all, tb, &c), 0..6);
        // A frame count that overstates (fps x duration) is clamped to the frames there are.
        c.frames = Some((0, 9));
        assert_eq!(clip_range(&all, tb, &c), 0..6);
        // A clip marked on frames 2..4 is exactly those.
        c.start_pts = Some(3);
        c.end_pts = Some(6);
        c.frames = Some((2, 4));
        assert_eq!(clip_range(&all, tb, &c), 2..4);
    }

    /// The content rectangle turned to the display picture lands, through the converter's
    /// display-to-coded mapping (`convert::cpu`), on the coded rectangle it came from.
    #[test]
    fn the_content_rectangle_turns_with_the_picture() {
        let (cw, ch) = (640.0, 480.0);
        let coded = [0.1, 0.2, 0.5, 0.6];
        let corners = |[x, y, w, h]: [f64; 4]| {
            let mut c = vec![(x, y), (x + w, y), (x, y + h), (x + w, y + h)];
            c.iter_mut()
                .for_each(|p| *p = ((p.0 * 1e6).round(), (p.1 * 1e6).round()));
            c.sort_by(|a, b| a.partial_cmp(b).unwrap());
            c
        };
        for q in 0..4u8 {
            let [x, y, w, h] = content_in_display(coded, q, false);
            let (dw, dh) = if q % 2 == 1 { (ch, cw) } else { (cw, ch) };
            // Display (dx, dy) -> coded (x, y), in pixels, then fractions of the coded size.
            let to_coded = |(dx, dy): (f64, f64)| {
                let (dx, dy) = (dx * dw, dy * dh);
                let (x, y) = match q {
                    0 => (dx, dy),
                    1 => (dy, ch - dx),
                    2 => (cw - dx, ch - dy),
                    _ => (cw - dy, dx),
                };
                (x / cw, y / ch)
            };
            let mapped: Vec<(f64, f64)> = [(x, y), (x + w, y), (x, y + h), (x + w, y + h)]
                .into_iter()
                .map(to_coded)
                .collect();
            let xs = mapped.iter().map(|p| p.0);
            let ys = mapped.iter().map(|p| p.1);
            let (x0, x1) = (xs.clone().fold(1.0, f64::min), xs.fold(0.0, f64::max));
            let (y0, y1) = (ys.clone().fold(1.0, f64::min), ys.fold(0.0, f64::max));
            assert_eq!(
                corners([x0, y0, x1 - x0, y1 - y0]),
                corners(coded),
                "{q} turns"
            );
        }
        let [x, _, w, _] = content_in_display(coded, 0, true);
        assert!((x - 0.4).abs() < 1e-12 && (w - 0.5).abs() < 1e-12);
        // The centred square inside the content of a 640x480 display picture.
        let out = OutputSpec::rgb8(10, 10, super::super::Filter::Bilinear);
        let content = Some([0.0, 0.125, 1.0, 0.75]);
        let (rect, _) = draw_augmentation(1, Crop::Content, 0.0, (640, 480), content, &out);
        let px = [
            rect[0] * 640.0,
            rect[1] * 480.0,
            rect[2] * 640.0,
            rect[3] * 480.0,
        ];
        assert_eq!(px.map(f32::round), [140.0, 60.0, 360.0, 360.0]);
    }

    #[test]
    fn center_crop_has_the_output_aspect() {
        let out = OutputSpec {
            width: 100,
            height: 100,
            layout: super::super::Layout::Bcthw,
            dtype: super::super::DType::F32,
            filter: super::super::Filter::Bilinear,
            mean: [0.0; 3],
            std: [1.0; 3],
        };
        let (rect, flip) = draw_augmentation(1, Crop::Center, 0.0, (200, 100), None, &out);
        assert_eq!(rect, [0.25, 0.0, 0.5, 1.0]);
        assert!(!flip);
    }
}
