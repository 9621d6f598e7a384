//! `player`: the player pipeline on a generated 1080p H.264 clip: decode (2 threads), convert
//! to the display size, upload to a wgpu texture, frame after frame.

use std::path::{Path, PathBuf};
use std::time::Instant;

use framecull::media::synth::{self, Pattern};
use serde::Serialize;

use crate::util::{median, print};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, default_value = "/tmp/framecull-bench-player")]
    dir: PathBuf,
    #[arg(long, default_value_t = 300)]
    frames: u32,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let r = bench_player(&args.dir, args.frames, args.repeat.max(1))?;
    print(&r, args.json, || {
        format!(
            "player pipeline on {} frames of 1080p H.264 -> {}x{} RGBA, upload on {}: \
             {:.1} frames/s median (runs {:?} s); per frame: decode {:.2} ms, convert \
             {:.2} ms, upload {:.2} ms\n  the player's pictures (decode + convert, no upload): \
             {:.1} frames/s from a worker process, {:.1} frames/s in this one",
            r.frames,
            r.display.0,
            r.display.1,
            r.adapter,
            r.frames_per_sec,
            r.secs,
            r.decode_ms,
            r.convert_ms,
            r.upload_ms,
            r.pictures_in_worker_fps,
            r.pictures_here_fps,
        )
    })
}

#[derive(Serialize)]
struct PlayerBench {
    frames: u32,
    display: (usize, usize),
    adapter: String,
    secs: Vec<f64>,
    frames_per_sec: f64,
    decode_ms: f64,
    convert_ms: f64,
    upload_ms: f64,
    /// Frames per second of `Pictures` (what the player's thread asks for), median of the
    /// runs, decoded in a worker process and in this one.
    pictures_in_worker_fps: f64,
    pictures_here_fps: f64,
}

/// The upload of the player's frames: a wgpu device and its queue.
struct Upload {
    device: wgpu::Device,
    queue: wgpu::Queue,
}

impl Upload {
    /// Upload `image` into `texture` (made at the first frame's size), as the window does,
    /// and wait until it is done.
    fn upload(
        &self,
        image: &eframe::egui::ColorImage,
        texture: &mut Option<wgpu::Texture>,
    ) -> anyhow::Result<()> {
        let [w, h] = image.size;
        let size = wgpu::Extent3d {
            width: w as u32,
            height: h as u32,
            depth_or_array_layers: 1,
        };
        let tex = texture.get_or_insert_with(|| {
            self.device.create_texture(&wgpu::TextureDescriptor {
                label: Some("player"),
                size,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba8UnormSrgb,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            })
        });
        let bytes: &[u8] = bytemuck_pixels(&image.pixels);
        self.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: tex,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            bytes,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(4 * w as u32),
                rows_per_image: None,
            },
            size,
        );
        self.queue.submit([]);
        self.device.poll(wgpu::PollType::wait_indefinitely())?;
        Ok(())
    }
}

/// Decode, convert and upload every frame in order, as the player does while playing.
fn bench_player(dir: &Path, frames: u32, repeat: usize) -> anyhow::Result<PlayerBench> {
    use framecull::gui::player::Converter;
    use framecull::media::reader::{ReadTimes, VideoReader};
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("clip1080p-{frames}.mp4"));
    if !path.is_file() {
        let mut spec = synth::VideoSpec::new("libx264", 1920, 1080, 30, frames);
        spec.pattern = Pattern::MovingBox { speed: 6 };
        spec.noise = 6;
        spec.gop = 30;
        synth::write_video(&path, &spec)?;
    }
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .map_err(|e| anyhow::anyhow!("no wgpu adapter for the upload: {e}"))?;
    let info = adapter.get_info();
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))?;
    let upload_to = Upload { device, queue };
    let mut secs = Vec::new();
    let (mut decode, mut convert, mut upload) = (0.0, 0.0, 0.0);
    let mut display = (0, 0);
    for _ in 0..repeat {
        let started = Instant::now();
        let mut reader = VideoReader::open(&path, 2)?;
        let count = reader.frames().len();
        let mut converter = Converter::default();
        let mut texture: Option<wgpu::Texture> = None;
        let (mut d, mut c, mut u) = (0.0, 0.0, 0.0);
        for p in 0..count {
            // One request per frame, as the player's thread receives them.
            let t = Instant::now();
            let mut picture = None;
            reader.read(&[p], None, &mut ReadTimes::default(), &mut |_, pic| {
                picture = Some(pic)
            })?;
            d += t.elapsed().as_secs_f64();
            let picture = picture.ok_or_else(|| anyhow::anyhow!("frame {p} not decoded"))?;
            let t = Instant::now();
            let image = converter.display(picture, 0);
            c += t.elapsed().as_secs_f64();
            let t = Instant::now();
            display = (image.size[0], image.size[1]);
            upload_to.upload(&image, &mut texture)?;
            u += t.elapsed().as_secs_f64();
        }
        secs.push(started.elapsed().as_secs_f64());
        let n = count.max(1) as f64;
        (decode, convert, upload) = (1e3 * d / n, 1e3 * c / n, 1e3 * u / n);
    }
    let median_secs = median(secs.clone());
    // The player's own path, run alternately both ways.
    let (mut in_worker, mut here) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        in_worker.push(pictures_secs(&path, true)?);
        here.push(pictures_secs(&path, false)?);
    }
    Ok(PlayerBench {
        pictures_in_worker_fps: f64::from(frames) / median(in_worker),
        pictures_here_fps: f64::from(frames) / median(here),
        frames,
        display,
        adapter: format!("{} ({:?})", info.name, info.device_type),
        frames_per_sec: f64::from(frames) / median_secs,
        secs,
        decode_ms: decode,
        convert_ms: convert,
        upload_ms: upload,
    })
}

/// Seconds to open `path` and fetch every frame in order as the player's thread does.
fn pictures_secs(path: &Path, in_worker: bool) -> anyhow::Result<f64> {
    use framecull::gui::player::MAX_DISPLAY;
    use framecull::media::Source;
    use framecull::media::pictures::Pictures;
    let started = Instant::now();
    let source = Source::File(path.to_path_buf());
    let mut pictures = if in_worker {
        Pictures::open(&source, 2)
    } else {
        Pictures::open_here(&source, 2)
    }?;
    anyhow::ensure!(pictures.in_worker() == in_worker, "no worker process");
    for p in 0..pictures.timeline().pts.len() {
        let (w, h, rgb) = pictures.picture(p, 0, MAX_DISPLAY, None)?;
        std::hint::black_box(eframe::egui::ColorImage::from_rgb(
            [w as usize, h as usize],
            rgb,
        ));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The bytes of egui's RGBA pixels, as the renderer uploads them.
fn bytemuck_pixels(pixels: &[eframe::egui::Color32]) -> &[u8] {
    bytemuck::cast_slice(pixels)
}
