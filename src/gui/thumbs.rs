//! Thumbnails: decoded off the UI thread by one worker, cached on disk in the project folder
//! (`thumbs/<fingerprint>.rgb`: width and height as u16 LE, then packed RGB), uploaded as
//! textures by the UI when they arrive.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};

use eframe::egui;

use crate::media::decode::{DecodeOptions, decode_frames};

/// Longest side of a thumbnail, pixels.
pub const THUMB_SIZE: u32 = 160;

pub enum Thumb {
    Pending,
    Ready(egui::TextureHandle),
    Failed(String),
}

struct Request {
    key: String,
    file: PathBuf,
    cache: PathBuf,
    orientation: u16,
}

type Done = (String, Result<(usize, usize, Vec<u8>), String>);

pub struct Thumbnails {
    tx: Option<Sender<Request>>,
    rx: Receiver<Done>,
    thumbs: HashMap<String, Thumb>,
    requested: HashSet<String>,
}

impl Thumbnails {
    pub fn new() -> Self {
        let (req_tx, req_rx) = channel::<Request>();
        let (done_tx, done_rx) = channel::<Done>();
        let spawned = std::thread::Builder::new()
            .name("framecull-thumbs".into())
            .spawn(move || {
                while let Ok(r) = req_rx.recv() {
                    let result = load_or_make(&r.file, &r.cache, r.orientation);
                    if done_tx.send((r.key, result)).is_err() {
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
        }
    }

    /// The thumbnail of a file, asking for it when it is not there yet.
    pub fn get(&mut self, key: &str, file: &Path, project: &Path, orientation: u16) -> &Thumb {
        if !self.requested.contains(key) {
            self.requested.insert(key.to_string());
            let request = Request {
                key: key.to_string(),
                file: file.to_path_buf(),
                cache: project
                    .join("thumbs")
                    .join(format!("{key}-{orientation}.rgb")),
                orientation,
            };
            if let Some(tx) = &self.tx {
                let _ = tx.send(request);
            }
        }
        self.thumbs.get(key).unwrap_or(&Thumb::Pending)
    }

    /// Upload what the worker finished; returns whether anything arrived.
    pub fn poll(&mut self, ctx: &egui::Context) -> bool {
        let mut any = false;
        while let Ok((key, result)) = self.rx.try_recv() {
            any = true;
            let thumb = match result {
                Ok((w, h, rgb)) => {
                    let image = egui::ColorImage::from_rgb([w, h], &rgb);
                    Thumb::Ready(ctx.load_texture(&key, image, egui::TextureOptions::LINEAR))
                }
                Err(e) => Thumb::Failed(e),
            };
            self.thumbs.insert(key, thumb);
        }
        any
    }

    pub fn waiting(&self) -> bool {
        self.requested.len() > self.thumbs.len()
    }
}

fn load_or_make(
    file: &Path,
    cache: &Path,
    orientation: u16,
) -> Result<(usize, usize, Vec<u8>), String> {
    if let Ok(bytes) = std::fs::read(cache)
        && bytes.len() > 4
    {
        let w = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        let h = u16::from_le_bytes([bytes[2], bytes[3]]) as usize;
        if bytes.len() == 4 + w * h * 3 {
            return Ok((w, h, bytes[4..].to_vec()));
        }
    }
    let options = DecodeOptions {
        max_width: THUMB_SIZE,
        max_height: THUMB_SIZE,
        deadline: Some(std::time::Instant::now() + std::time::Duration::from_secs(10)),
        ..DecodeOptions::default()
    };
    let mut picture = None;
    decode_frames(file, &options, 2, &mut |f| {
        picture = Some((f.width, f.height, f.rgb.to_vec()));
        false
    })
    .map_err(|e| e.to_string())?;
    let (w, h, rgb) = picture.ok_or("no frame decodes")?;
    let (w, h, rgb) = crate::analysis::image::orient(w, h, &rgb, 3, orientation);
    if let Some(dir) = cache.parent() {
        let _ = std::fs::create_dir_all(dir);
        let mut bytes = Vec::with_capacity(4 + rgb.len());
        bytes.extend_from_slice(&(w as u16).to_le_bytes());
        bytes.extend_from_slice(&(h as u16).to_le_bytes());
        bytes.extend_from_slice(&rgb);
        let tmp = cache.with_extension("tmp");
        if std::fs::write(&tmp, &bytes).is_ok() {
            let _ = std::fs::rename(&tmp, cache);
        }
    }
    Ok((w, h, rgb))
}
