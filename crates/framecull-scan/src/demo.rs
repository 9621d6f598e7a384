//! The demo dataset: generated from `assets/demo.json` with FFmpeg's encoders, so it needs no
//! download and is the same on every machine.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Deserialize;

use framecull_media::synth::{self, ImageKind, Pattern, SynthError, VideoSpec};

const RECIPE: &str = include_str!("../../../assets/demo.json");
/// Written last; its presence means the folder holds a complete demo dataset.
const MARKER: &str = ".framecull-demo-v2";

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("demo recipe is invalid: {0}")]
    Recipe(#[from] serde_json::Error),
    #[error(transparent)]
    Synth(#[from] SynthError),
    #[error(transparent)]
    Settings(#[from] framecull_catalog::ConfigError),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

#[derive(Deserialize)]
struct Recipe {
    videos: Vec<VideoEntry>,
    images: Vec<ImageEntry>,
    copies: Vec<CopyEntry>,
    broken: Vec<BrokenEntry>,
}

#[derive(Deserialize)]
struct VideoEntry {
    path: String,
    codec: String,
    size: [u32; 2],
    fps: [i32; 2],
    frames: u32,
    pattern: String,
    #[serde(default)]
    speed: u32,
    rotation: Option<i32>,
    #[serde(default)]
    vfr: bool,
}

#[derive(Deserialize)]
struct ImageEntry {
    path: String,
    format: String,
    size: [u32; 2],
    pattern: String,
    index: u32,
    exif_orientation: Option<u16>,
}

#[derive(Deserialize)]
struct CopyEntry {
    from: String,
    to: String,
}

#[derive(Deserialize)]
struct BrokenEntry {
    path: String,
    from: Option<String>,
    keep: Option<f64>,
    bytes: Option<String>,
}

fn pattern(name: &str, speed: u32) -> Pattern {
    match name {
        "box" => Pattern::MovingBox { speed },
        "pan" => Pattern::Pan { speed },
        "counter" => Pattern::Counter,
        // Four shots of 45 frames: hard cuts for the timeline.
        "shots" => Pattern::Shots { len: 45 },
        // Still, then a burst of motion in the middle third.
        "burst" => Pattern::Burst {
            start: 60,
            end: 110,
            speed,
        },
        _ => Pattern::Static,
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DemoError + '_ {
    move |source| DemoError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn ensure_parent(path: &Path) -> Result<(), DemoError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    Ok(())
}

/// Whether `dir` already holds a complete demo dataset.
pub fn is_complete(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// Generate the demo dataset into `dir`. Returns the number of files written.
pub fn generate(dir: &Path) -> Result<usize, DemoError> {
    let recipe: Recipe = serde_json::from_str(RECIPE)?;
    recipe.videos.par_iter().try_for_each(|v| {
        let path = dir.join(&v.path);
        ensure_parent(&path)?;
        let mut spec = VideoSpec::new(&v.codec, v.size[0], v.size[1], v.fps[0], v.frames);
        spec.fps = (v.fps[0], v.fps[1]);
        spec.pattern = pattern(&v.pattern, v.speed);
        spec.rotation_deg = v.rotation;
        spec.vfr = v.vfr;
        synth::write_video(&path, &spec).map_err(DemoError::from)
    })?;
    recipe.images.par_iter().try_for_each(|i| {
        let path = dir.join(&i.path);
        ensure_parent(&path)?;
        let kind = if i.format == "png" {
            ImageKind::Png
        } else {
            ImageKind::Jpeg
        };
        synth::write_image(
            &path,
            kind,
            i.size[0],
            i.size[1],
            pattern(&i.pattern, 5),
            i.index,
            i.exif_orientation,
        )
        .map_err(DemoError::from)
    })?;
    for c in &recipe.copies {
        let to = dir.join(&c.to);
        ensure_parent(&to)?;
        std::fs::copy(dir.join(&c.from), &to).map_err(io_err(&to))?;
    }
    for b in &recipe.broken {
        let path = dir.join(&b.path);
        ensure_parent(&path)?;
        let bytes = match (&b.from, &b.bytes) {
            (Some(from), _) => {
                let src = dir.join(from);
                let all = std::fs::read(&src).map_err(io_err(&src))?;
                let keep = ((all.len() as f64) * b.keep.unwrap_or(0.5)) as usize;
                all[..keep.min(all.len())].to_vec()
            }
            (None, Some(text)) => text.as_bytes().to_vec(),
            (None, None) => Vec::new(),
        };
        std::fs::write(&path, bytes).map_err(io_err(&path))?;
    }
    // A curation rule of the kind a team sets, so that the demo shows rule flags and their
    // thresholds: clips under a second are too short to train on.
    framecull_catalog::Project::of_dataset(dir).save_setting(
        "rules.min_duration_secs",
        Some(1.0),
        false,
    )?;
    let count =
        recipe.videos.len() + recipe.images.len() + recipe.copies.len() + recipe.broken.len();
    let marker = dir.join(MARKER);
    std::fs::write(&marker, count.to_string()).map_err(io_err(&marker))?;
    Ok(count)
}

/// Default folder of the demo dataset: `$XDG_CACHE_HOME/framecull/demo` or
/// `~/.cache/framecull/demo`.
pub fn default_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("framecull").join("demo")
}
