//! Thumbnails: decoded off the UI thread by one worker, cached on disk in the project folder
//! (`thumbs/<fingerprint>.rgb`: width and height as u16 LE, then packed RGB), uploaded as
//! textures by the UI when they arrive. Videos also get a scrub strip on first hover:
//! [`SCRUB_FRAMES`] frames spread over the video (`thumbs/<fingerprint>-scrub.rgb`: count,
//! width and height as u16 LE, then the frames).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};

use eframe::egui;

use crate::media::Source;
use crate::media::pictures::FirstPictures;

/// Longest side of a thumbnail, pixels.
pub const THUMB_SIZE: u32 = 160;

/// Frames of a video's scrub strip.
pub const SCRUB_FRAMES: usize = 8;

pub enum Thumb {
    Pending,
    Ready(egui::TextureHandle),
    Failed(String),
}

struct Request {
    key: String,
    file: Source,
    cache: PathBuf,
    orientation: u16,
    /// A scrub strip, not the thumbnail.
    scrub: bool,
}

/// Frames of one request: size, then each frame's packed RGB.
type Frames = (usize, usize, Vec<Vec<u8>>);
type Done = (String, bool, anyhow::Result<Frames>);

pub struct Thumbnails {
    tx: Option<Sender<Request>>,
    rx: Receiver<Done>,
    thumbs: HashMap<String, Thumb>,
    requested: HashSet<String>,
    scrubs: HashMap<String, Vec<egui::TextureHandle>>,
    scrub_requested: HashSet<String>,
}

impl Thumbnails {
    pub fn new() -> Self {
        let (req_tx, req_rx) = channel::<Request>();
        let (done_tx, done_rx) = channel::<Done>();
        let spawned = std::thread::Builder::new()
            .name("framecull-thumbs".into())
            .spawn(move || {
                let mut first = FirstPictures::new();
                while let Ok(r) = req_rx.recv() {
                    let result = if r.scrub {
                        load_or_make_scrub(&r.file, &r.cache, r.orientation)
                    } else {
                        load_or_make(&mut first, &r.file, &r.cache, r.orientation)
                            .map(|(w, h, rgb)| (w, h, vec![rgb]))
                    };
                    if done_tx.send((r.key, r.scrub, result)).is_err() {
                        break;
                    }
                }
            });
        let tx = match spawned {
            Ok(_) => Some(req_tx),
            Err(e) => {
                tracing::error!("cannot start the thumbnail thread: {e}");
                None
            }
        };
        Thumbnails {
            tx,
            rx: done_rx,
            thumbs: HashMap::new(),
            requested: HashSet::new(),
            scrubs: HashMap::new(),
            scrub_requested: HashSet::new(),
        }
    }

    /// The thumbnail of a file, asking for it when it is not there yet.
    pub fn get(&mut self, key: &str, file: &Source, project: &Path, orientation: u16) -> &Thumb {
        if !self.requested.contains(key) {
            self.requested.insert(key.to_string());
            let request = Request {
                key: key.to_string(),
                file: file.clone(),
                cache: project
                    .join("thumbs")
                    .join(format!("{key}-{orientation}.rgb")),
                orientation,
                scrub: false,
            };
            if let Some(tx) = &self.tx {
                let _ = tx.send(request);
            }
        }
        self.thumbs.get(key).unwrap_or(&Thumb::Pending)
    }

    /// A video's scrub frames, asking for them when they are not there yet (empty until
    /// they arrive, and for videos that cannot be read).
    pub fn scrub(
        &mut self,
        key: &str,
        file: &Source,
        project: &Path,
        orientation: u16,
    ) -> &[egui::TextureHandle] {
        if !self.scrub_requested.contains(key) {
            self.scrub_requested.insert(key.to_string());
            let request = Request {
                key: key.to_string(),
                file: file.clone(),
                cache: project
                    .join("thumbs")
                    .join(format!("{key}-{orientation}-scrub.rgb")),
                orientation,
                scrub: true,
            };
            if let Some(tx) = &self.tx {
                let _ = tx.send(request);
            }
        }
        self.scrubs.get(key).map_or(&[], Vec::as_slice)
    }

    /// Upload what the worker finished; returns whether anything arrived.
    pub fn poll(&mut self, ctx: &egui::Context) -> bool {
        let mut any = false;
        while let Ok((key, scrub, result)) = self.rx.try_recv() {
            any = true;
            if scrub {
                let textures = result
                    .map(|(w, h, frames)| {
                        frames
                            .iter()
                            .enumerate()
                            .map(|(i, rgb)| {
                                let image = egui::ColorImage::from_rgb([w, h], rgb);
                                ctx.load_texture(
                                    format!("{key}-scrub-{i}"),
                                    image,
                                    egui::TextureOptions::LINEAR,
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                self.scrubs.insert(key, textures);
                continue;
            }
            let thumb = match result {
                Ok((w, h, frames)) if !frames.is_empty() => {
                    let image = egui::ColorImage::from_rgb([w, h], &frames[0]);
                    Thumb::Ready(ctx.load_texture(&key, image, egui::TextureOptions::LINEAR))
                }
                Ok(_) => Thumb::Failed("no frame decodes".into()),
                Err(e) => Thumb::Failed(crate::output::error_text(&e)),
            };
            self.thumbs.insert(key, thumb);
        }
        any
    }

    pub fn failures(&self) -> Vec<String> {
        let mut failures: Vec<String> = self
            .thumbs
            .values()
            .filter_map(|t| match t {
                Thumb::Failed(why) => Some(why.clone()),
                _ => None,
            })
            .collect();
        failures.sort();
        failures
    }

    pub fn waiting(&self) -> bool {
        self.requested.len() > self.thumbs.len() || self.scrub_requested.len() > self.scrubs.len()
    }
}

fn load_or_make(
    first: &mut FirstPictures,
    file: &Source,
    cache: &Path,
    orientation: u16,
) -> anyhow::Result<(usize, usize, Vec<u8>)> {
    if let Ok(bytes) = std::fs::read(cache)
        && bytes.len() > 4
    {
        let w = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        let h = u16::from_le_bytes([bytes[2], bytes[3]]) as usize;
        if bytes.len() == 4 + w * h * 3 {
            return Ok((w, h, bytes[4..].to_vec()));
        }
    }
    // In a worker process: a decoder that crashes or hangs on a broken file costs its
    // thumbnail ("cannot decode", the reason on hover), not the window.
    let (w, h, rgb) = first.first(&file.open(), THUMB_SIZE, std::time::Duration::from_secs(10))?;
    let (w, h, rgb) = crate::analysis::image::orient(w, h, &rgb, 3, orientation);
    if let Some(dir) = cache.parent() {
        let _ = std::fs::create_dir_all(dir);
        let mut bytes = Vec::with_capacity(4 + rgb.len());
        bytes.extend_from_slice(&(w as u16).to_le_bytes());
        bytes.extend_from_slice(&(h as u16).to_le_bytes());
        bytes.extend_from_slice(&rgb);
        store(cache, &bytes);
    }
    Ok((w, h, rgb))
}

/// [`SCRUB_FRAMES`] frames spread evenly over a video, each upright and fitted within
/// [`THUMB_SIZE`]; from the disk cache when it is there.
fn load_or_make_scrub(file: &Source, cache: &Path, orientation: u16) -> anyhow::Result<Frames> {
    use crate::media::pictures::Pictures;
    if let Ok(bytes) = std::fs::read(cache)
        && bytes.len() > 6
    {
        let field = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
        let (n, w, h) = (field(0), field(2), field(4));
        if n > 0 && bytes.len() == 6 + n * w * h * 3 {
            let frames = bytes[6..]
                .chunks_exact(w * h * 3)
                .map(<[u8]>::to_vec)
                .collect();
            return Ok((w, h, frames));
        }
    }
    let (quarter_turns, _) = crate::model::orientation_turns(orientation);
    // In a worker process, as the player decodes.
    let mut pictures = Pictures::open(file, 1)?;
    let count = pictures.timeline().pts.len();
    if count == 0 {
        anyhow::bail!("no frames");
    }
    let mut frames = Vec::new();
    let mut size = (0, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for k in 0..SCRUB_FRAMES {
        let at = (k * 2 + 1) * count / (2 * SCRUB_FRAMES);
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (w, h, rgb) =
            pictures.picture(at, quarter_turns, (THUMB_SIZE, THUMB_SIZE), Some(left))?;
        size = (w as usize, h as usize);
        frames.push(rgb.to_vec());
    }
    if let Some(dir) = cache.parent() {
        let _ = std::fs::create_dir_all(dir);
        let mut bytes = Vec::new();
        for v in [frames.len(), size.0, size.1] {
            bytes.extend_from_slice(&(v as u16).to_le_bytes());
        }
        for f in &frames {
            bytes.extend_from_slice(f);
        }
        store(cache, &bytes);
    }
    Ok((size.0, size.1, frames))
}

/// Keep a thumbnail for the next time (a temporary file, renamed). One that cannot be
/// written (a full disk, a read-only project) is shown all the same, made again next time,
/// and said once in the log; no partial file stays.
fn store(cache: &Path, bytes: &[u8]) {
    static SAID: std::sync::Once = std::sync::Once::new();
    let tmp = cache.with_extension("tmp");
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, cache));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        SAID.call_once(|| {
            tracing::warn!(
                "thumbnails are not kept: cannot write {}: {e}",
                tmp.display()
            );
        });
    }
}
