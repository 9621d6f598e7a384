//! Reading windows: file checks, which frames a window takes (by frame index or by
//! timestamp), decoders kept open per worker, and the crop and flip drawn per window.

use std::ops::Range;

use rayon::prelude::*;

use super::plan::{ClipExtent, Rng, Sample, Timing};
use super::preprocess::OutputSpec;
use super::{ClipSource, Crop, SkipReason};
use framecull_manifest::ManifestRow;
use framecull_media::source::Source;
use framecull_model::{ClipBounds, Matrix, MediaKind, Ratio, StreamChoice};
use framecull_storage::{Root, StorageError};

mod readers;
pub(crate) use readers::{FramesRead, OPEN_DECODERS, Readers, WindowFrames, window_budget};

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

#[cfg(test)]
mod tests {
    use super::*;

    fn clip() -> ClipSource {
        ClipSource {
            clip_id: "0".into(),
            row: 0,
            path: std::path::PathBuf::new(),
            source: Source::File(std::path::PathBuf::new()),
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
