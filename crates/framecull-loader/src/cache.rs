//! An optional on-disk cache of decoded clips for later epochs: the first time a clip is read,
//! all its frames are decoded once, rotated, shrunk (short side `short_side`, area filter) and
//! written as packed RGB to one file; later windows of that clip read only their frames from
//! it, with no demuxing or decoding.
//!
//! Batches come from the cached frames whether the cache was cold or warm, so a run's output
//! does not depend on what an earlier run left behind.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::ClipSource;
use super::preprocess::{
    self, Filter, Frame, FrameFormat, FrameJob, FrameParams, Matrix, OutputSpec, Range, Scratch,
};
use framecull_media::reader::{ReadError, ReadTimes, VideoReader};
use framecull_model::Ratio;

/// Version 2: frames identified by their index in the file (version 1 by timestamp).
const MAGIC: &[u8] = b"framecull-frames-2\n";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheConfig {
    pub dir: PathBuf,
    /// Frames are stored with this short side (never enlarged).
    pub short_side: u32,
}

#[derive(Serialize, Deserialize)]
struct Header {
    width: u32,
    height: u32,
    time_base: String,
    /// Index in the file of the first stored frame; the clip's frames follow in order.
    first_frame: usize,
    /// Timestamps of the stored frames, ascending: the clip's frames.
    pts: Vec<i64>,
}

/// Why a clip could not be cached or read from the cache.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheError {
    #[error("cannot create the cache folder {}: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Written, but not readable back as a complete cache file.
    #[error("the cache file {} is unreadable", .0.display())]
    Unreadable(PathBuf),
    #[error(transparent)]
    Decode(#[from] ReadError),
    #[error("decoded {written} of the clip's {wanted} frames")]
    Incomplete { written: usize, wanted: usize },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("frame {0} of the clip is not in the cache")]
    NotCached(usize),
}

impl CacheError {
    /// The cache's folder or file could not be written (not the clip's fault).
    pub(crate) fn is_write_failure(&self) -> bool {
        matches!(
            self,
            CacheError::CreateDir { .. } | CacheError::Write { .. }
        )
    }
}

/// A clip in the cache.
pub(crate) struct CachedClip {
    path: PathBuf,
    width: u32,
    height: u32,
    pub time_base: Ratio,
    pub first_frame: usize,
    pub pts: Vec<i64>,
    data_offset: u64,
}

impl CacheConfig {
    fn file(&self, clip: &ClipSource) -> PathBuf {
        self.dir
            .join(format!("{}-{}.frames", clip.clip_id, self.short_side))
    }

    /// The clip's cached frames, when a complete cache file exists.
    pub(crate) fn open(&self, clip: &ClipSource) -> Option<CachedClip> {
        let path = self.file(clip);
        let mut file = File::open(&path).ok()?;
        let mut magic = vec![0u8; MAGIC.len()];
        file.read_exact(&mut magic).ok()?;
        if magic != MAGIC {
            return None;
        }
        let mut len = [0u8; 8];
        file.read_exact(&mut len).ok()?;
        let len = u64::from_le_bytes(len);
        let mut json = vec![0u8; usize::try_from(len).ok()?];
        file.read_exact(&mut json).ok()?;
        let header: Header = serde_json::from_slice(&json).ok()?;
        let data_offset = (MAGIC.len() + 8) as u64 + len;
        let frame = 3 * u64::from(header.width) * u64::from(header.height);
        let size = file.metadata().ok()?.len();
        if size != data_offset + frame * header.pts.len() as u64 {
            return None;
        }
        Some(CachedClip {
            path,
            width: header.width,
            height: header.height,
            time_base: Ratio::parse(&header.time_base)?,
            first_frame: header.first_frame,
            pts: header.pts,
            data_offset,
        })
    }

    /// Decode all of the clip's frames (file frames `frames`), shrink them and write the cache file
    /// (under a temporary name, then renamed: a killed run leaves no partial file).
    pub(crate) fn fill(
        &self,
        clip: &ClipSource,
        reader: &mut VideoReader,
        frames: std::ops::Range<usize>,
        deadline: Instant,
        times: &mut ReadTimes,
    ) -> Result<CachedClip, CacheError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| CacheError::CreateDir {
            dir: self.dir.clone(),
            source,
        })?;
        let path = self.file(clip);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let result = self.write(clip, reader, frames, deadline, times, &tmp);
        match result {
            Ok(()) => {
                std::fs::rename(&tmp, &path).map_err(|source| CacheError::Write {
                    path: path.clone(),
                    source,
                })?;
                self.open(clip).ok_or(CacheError::Unreadable(path))
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    fn write(
        &self,
        clip: &ClipSource,
        reader: &mut VideoReader,
        frames: std::ops::Range<usize>,
        deadline: Instant,
        times: &mut ReadTimes,
        tmp: &Path,
    ) -> Result<(), CacheError> {
        let io = |source: std::io::Error| CacheError::Write {
            path: tmp.to_path_buf(),
            source,
        };
        let mut out = BufWriter::new(File::create(tmp).map_err(io)?);
        let mut size: Option<(u32, u32)> = None;
        let mut scratch = Scratch::default();
        let mut failure: Option<CacheError> = None;
        let mut bytes = Vec::new();
        let mut written = 0usize;
        let header_pts = reader.frame_pts()[frames.clone()].to_vec();
        let first_frame = frames.start;
        let wanted: Vec<usize> = frames.collect();
        let time_base = reader.time_base();
        reader
            .read(&wanted, Some(deadline), times, &mut |_, frame| {
                if failure.is_some() {
                    return;
                }
                let (dw, dh) = frame.display_size(clip.quarter_turns);
                let (w, h) = *size.get_or_insert_with(|| shrink(dw, dh, self.short_side));
                let spec = OutputSpec::rgb8(w, h, Filter::Area);
                let params = FrameParams {
                    quarter_turns: clip.quarter_turns,
                    crop: [0.0, 0.0, dw as f32, dh as f32],
                    flip: clip.mirror,
                };
                if written == 0 {
                    let header = Header {
                        width: w,
                        height: h,
                        time_base: time_base.to_text(),
                        first_frame,
                        pts: header_pts.clone(),
                    };
                    let json = serde_json::to_vec(&header).unwrap_or_default();
                    let head = [MAGIC, &(json.len() as u64).to_le_bytes(), &json].concat();
                    if let Err(e) = out.write_all(&head) {
                        failure = Some(io(e));
                        return;
                    }
                }
                bytes.resize(spec.frame_elements(), 0);
                preprocess::write_frame(
                    Some(&FrameJob {
                        frame: &frame,
                        params,
                    }),
                    &spec,
                    &mut scratch,
                    &mut bytes,
                );
                if let Err(e) = out.write_all(&bytes) {
                    failure = Some(io(e));
                }
                written += 1;
            })
            .map_err(CacheError::Decode)?;
        if let Some(e) = failure {
            return Err(e);
        }
        if written != wanted.len() {
            return Err(CacheError::Incomplete {
                written,
                wanted: wanted.len(),
            });
        }
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)
    }

    /// The cached frames at `wanted` (positions among the clip's frames), as RGB frames
    /// already rotated and mirrored.
    pub(crate) fn read(
        &self,
        clip: &CachedClip,
        wanted: &[usize],
    ) -> Result<Vec<Frame>, CacheError> {
        let unreadable = |source: std::io::Error| CacheError::Read {
            path: clip.path.clone(),
            source,
        };
        let mut file = File::open(&clip.path).map_err(unreadable)?;
        let frame_bytes = 3 * clip.width as usize * clip.height as usize;
        let mut frames = Vec::with_capacity(wanted.len());
        for &index in wanted {
            let &pts = clip.pts.get(index).ok_or(CacheError::NotCached(index))?;
            let mut data = vec![0u8; frame_bytes];
            file.seek(SeekFrom::Start(
                clip.data_offset + (index * frame_bytes) as u64,
            ))
            .and_then(|_| file.read_exact(&mut data))
            .map_err(unreadable)?;
            frames.push(Frame {
                width: clip.width,
                height: clip.height,
                format: FrameFormat::Rgb,
                matrix: Matrix::Bt709,
                range: Range::Full,
                data,
                decoded: None,
                pts,
                index: clip.first_frame + index,
            });
        }
        Ok(frames)
    }
}

/// Size with short side `short` (never enlarged), aspect kept.
fn shrink(w: u32, h: u32, short: u32) -> (u32, u32) {
    let scale = (f64::from(short) / f64::from(w.min(h))).min(1.0);
    let side = |v: u32| ((f64::from(v) * scale).round() as u32).max(1);
    (side(w), side(h))
}
