//! The player: a decode thread per open video that hands the UI the frames it asks for
//! (converted to display size, rotated), a clock that picks the frame to show at the video's
//! own rate, and the timeline under it (motion curve, cuts, clips, playhead).

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::Instant;

use eframe::egui::{self, Color32, ColorImage, Pos2, Rect, Sense, Stroke, TextureHandle, vec2};

use super::theme;
use crate::catalog::Catalog;
use crate::media::Source;
use crate::media::convert::{self, Scratch};
use crate::media::picture::Frame;
use crate::media::pictures::Pictures;
use crate::model::{Clip, Curves, Decision, FrameTimeline, ItemId, ReadAs};

/// Frames are shown at most this size (after rotation).
pub const MAX_DISPLAY: (u32, u32) = (960, 540);

enum Msg {
    Opened {
        timeline: FrameTimeline,
        curves: Option<Curves>,
    },
    Frame {
        index: usize,
        image: ColorImage,
    },
    Error(String),
}

/// One open video.
pub struct Player {
    pub item: ItemId,
    /// The file or object played.
    pub source: Source,
    pub timeline: Option<FrameTimeline>,
    pub curves: Option<Curves>,
    /// The frame the playhead is on (what the next shown frame will be).
    pub current: usize,
    /// The frame in the texture.
    /// Shared with the texture: no copy of the pixels per frame.
    shown: Option<(usize, Arc<ColorImage>)>,
    texture: Option<TextureHandle>,
    requested: Option<usize>,
    /// Playback speed (frames of video time per second of wall time); 0 is paused.
    pub speed: f64,
    clock: Option<(Instant, f64)>,
    pub mark_in: Option<usize>,
    pub error: Option<String>,
    /// Where the timeline was last drawn (screen points), for tests that drag on it.
    timeline_rect: std::cell::Cell<Option<Rect>>,
    tx: Sender<usize>,
    rx: Receiver<Msg>,
}

/// The video a player plays: its file, how it is read (the stream the scan chose, the
/// project's matrix guess), its catalog entry and its rotation.
#[derive(Clone)]
pub struct Video {
    pub source: Source,
    pub read: ReadAs,
    pub item: ItemId,
    pub quarter_turns: u8,
}

impl Player {
    pub fn open(ctx: &egui::Context, project: &Path, video: Video) -> Player {
        let (tx, requests) = channel();
        let (reply, rx) = channel();
        let (ctx2, project) = (ctx.clone(), project.to_path_buf());
        let (item, source) = (video.item, video.source.clone());
        let spawned = std::thread::Builder::new()
            .name("framecull-player".into())
            .spawn(move || decode_thread(&video, &project, &requests, &reply, &ctx2));
        if let Err(e) = spawned {
            tracing::error!("cannot start the player thread: {e}");
        }
        Player {
            item,
            source,
            timeline: None,
            curves: None,
            current: 0,
            shown: None,
            texture: None,
            requested: None,
            speed: 0.0,
            clock: None,
            mark_in: None,
            error: None,
            timeline_rect: std::cell::Cell::new(None),
            tx,
            rx,
        }
    }

    pub fn frames(&self) -> usize {
        self.timeline.as_ref().map_or(0, FrameTimeline::len)
    }

    /// The frame in the texture and its pixels (RGBA), once decoded.
    pub fn shown(&self) -> Option<(usize, &ColorImage)> {
        self.shown.as_ref().map(|(i, img)| (*i, img.as_ref()))
    }

    /// The shown frame is the one the playhead is on.
    pub fn is_settled(&self) -> bool {
        self.speed == 0.0 && self.shown.as_ref().is_some_and(|(i, _)| *i == self.current)
    }

    pub fn seek(&mut self, frame: usize) {
        let last = self.frames().saturating_sub(1);
        self.current = frame.min(last);
        if self.speed != 0.0 {
            self.start_clock();
        }
    }

    pub fn step(&mut self, delta: i64) {
        self.pause();
        let target = (self.current as i64 + delta).max(0) as usize;
        self.seek(target);
    }

    pub fn pause(&mut self) {
        self.speed = 0.0;
        self.clock = None;
    }

    pub fn play(&mut self, speed: f64) {
        self.speed = speed;
        self.start_clock();
    }

    /// J/K/L: L plays forward (again: faster), J backward (again: faster), K pauses.
    pub fn shuttle(&mut self, direction: i32) {
        let speed = match direction {
            0 => 0.0,
            d if (d > 0) == (self.speed > 0.0) && self.speed != 0.0 => {
                (self.speed * 2.0).clamp(-8.0, 8.0)
            }
            d => f64::from(d.signum()),
        };
        if speed == 0.0 {
            self.pause()
        } else {
            self.play(speed)
        }
    }

    fn start_clock(&mut self) {
        let secs = self
            .timeline
            .as_ref()
            .map_or(0.0, |t| t.secs(t.pts_at(self.current)));
        self.clock = Some((Instant::now(), secs));
    }

    /// Take decoded frames, advance the clock, ask for the frame to show.
    pub fn update(&mut self, ctx: &egui::Context) {
        loop {
            match self.rx.try_recv() {
                Ok(Msg::Opened { timeline, curves }) => {
                    self.timeline = Some(timeline);
                    self.curves = curves;
                    self.requested = None;
                }
                Ok(Msg::Frame { index, image }) => {
                    let image = Arc::new(image);
                    let options = egui::TextureOptions::LINEAR;
                    match &mut self.texture {
                        Some(t) => t.set(Arc::clone(&image), options),
                        None => {
                            self.texture =
                                Some(ctx.load_texture("player", Arc::clone(&image), options))
                        }
                    }
                    self.shown = Some((index, image));
                    if self.requested == Some(index) {
                        self.requested = None;
                    }
                }
                Ok(Msg::Error(e)) => {
                    self.error = Some(e);
                    self.requested = None;
                    self.pause();
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        let Some(timeline) = &self.timeline else {
            return;
        };
        if let Some((started, secs)) = self.clock {
            let t = secs + started.elapsed().as_secs_f64() * self.speed;
            let first = timeline.secs(timeline.pts_at(0));
            let target = timeline.frame_at_secs(t.max(first));
            let last = timeline.len().saturating_sub(1);
            self.current = target.min(last);
            let at_end = (self.speed > 0.0 && self.current == last)
                || (self.speed < 0.0 && self.current == 0);
            if at_end {
                self.pause();
            }
            ctx.request_repaint();
        }
        let have = self.shown.as_ref().map(|(i, _)| *i);
        if have != Some(self.current) && self.requested != Some(self.current) {
            // Ask only when the thread is free, so it never falls behind the clock.
            if (self.requested.is_none() || self.speed == 0.0) && self.tx.send(self.current).is_ok()
            {
                self.requested = Some(self.current);
            }
        }
    }

    /// The picture, fitted to the width available.
    pub fn picture_ui(&self, ui: &mut egui::Ui) {
        if let Some(e) = &self.error {
            ui.colored_label(theme::ERROR, e);
        }
        let Some(texture) = &self.texture else {
            ui.label(if self.timeline.is_some() {
                "decoding…"
            } else {
                "opening…"
            });
            return;
        };
        // Fit the width, and at most 45% of the window's height (room for the timeline).
        let size = texture.size_vec2().max(vec2(1.0, 1.0));
        let max_h = ui.ctx().content_rect().height() * 0.45;
        let scale = (ui.available_width() / size.x).min(max_h / size.y).min(2.0);
        ui.image((texture.id(), size * scale));
    }

    /// Screen position of frame `frame`'s start on the clip strip of the timeline (as last
    /// drawn).
    pub fn timeline_point(&self, frame: usize) -> Option<Pos2> {
        let (rect, t) = (self.timeline_rect.get()?, self.timeline.as_ref()?);
        let n = t.len();
        let t0 = t.secs(t.pts_at(0));
        let duration = (t.secs(t.pts_at(n)) - t0).max(1e-6);
        let x = rect.left() + ((t.secs(t.pts_at(frame)) - t0) / duration) as f32 * rect.width();
        Some(Pos2::new(x, rect.bottom() - 8.0))
    }

    /// "frame 120 / 300 · 4.000 s" of the playhead.
    pub fn position_text(&self) -> String {
        match &self.timeline {
            Some(t) if !t.is_empty() => format!(
                "frame {} / {} · {:.3} s{}",
                self.current,
                t.len(),
                t.secs(t.pts_at(self.current)) - t.secs(t.pts_at(0)),
                if self.speed != 0.0 {
                    format!(" · {:+}x", self.speed)
                } else {
                    String::new()
                }
            ),
            _ => "opening…".into(),
        }
    }
}

/// What the timeline reports back.
pub enum TimelineAction {
    Seek(usize),
    /// A clip's edge was dragged: the clip and its new frame range.
    Reshape {
        clip: Clip,
        start: usize,
        end: usize,
    },
}

/// The timeline: motion curve, scene cuts, clips, the in mark and the playhead. Click or drag
/// to seek; drag a clip's edge to move it.
pub fn timeline_ui(
    ui: &mut egui::Ui,
    player: &Player,
    clips: &[Clip],
    drag: &mut Option<(usize, bool)>,
) -> Option<TimelineAction> {
    let timeline = player.timeline.as_ref()?;
    if timeline.is_empty() {
        return None;
    }
    let n = timeline.len();
    let (rect, response) =
        ui.allocate_exact_size(vec2(ui.available_width(), 72.0), Sense::click_and_drag());
    player.timeline_rect.set(Some(rect));
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 3.0, theme::CARD_BG);
    let t0 = timeline.secs(timeline.pts_at(0));
    let duration = (timeline.secs(timeline.pts_at(n)) - t0).max(1e-6);
    let scale = TimelineScale {
        timeline,
        rect,
        t0,
        duration,
    };
    if let Some(curves) = &player.curves {
        paint_curves(&painter, &scale, curves);
    }
    let strip = Rect::from_min_max(Pos2::new(rect.left(), rect.bottom() - 16.0), rect.max);
    paint_clips(&painter, &scale, clips, strip);
    paint_marks(&painter, &scale, player);
    timeline_action(ui, &response, &scale, clips, strip, drag)
}

/// Where times and frames fall on the timeline drawn in `rect`: `duration` seconds from `t0`
/// across its width.
struct TimelineScale<'a> {
    timeline: &'a FrameTimeline,
    rect: Rect,
    t0: f64,
    duration: f64,
}

impl TimelineScale<'_> {
    /// Screen x of a time in seconds (clamped to the timeline's ends).
    fn x_of_secs(&self, s: f64) -> f32 {
        let rect = self.rect;
        rect.left() + ((s - self.t0) / self.duration).clamp(0.0, 1.0) as f32 * rect.width()
    }

    /// Screen x of frame `f`'s start.
    fn x_of_frame(&self, f: usize) -> f32 {
        self.x_of_secs(self.timeline.secs(self.timeline.pts_at(f)))
    }

    /// The frame at screen x.
    fn frame_of_x(&self, x: f32) -> usize {
        let rect = self.rect;
        let s =
            self.t0 + f64::from(((x - rect.left()) / rect.width()).clamp(0.0, 1.0)) * self.duration;
        self.timeline.frame_at_secs(s).min(self.timeline.len() - 1)
    }
}

/// The motion curve over the timeline's upper part, with red ticks at frames decoded with
/// errors and a line at each scene cut.
fn paint_curves(painter: &egui::Painter, scale: &TimelineScale, curves: &Curves) {
    let (rect, t0) = (scale.rect, scale.t0);
    let curve = Rect::from_min_max(rect.min, Pos2::new(rect.max.x, rect.max.y - 18.0));
    // Motion per 0.5 s bucket, scaled to the largest value.
    let peak = curves
        .motion
        .iter()
        .copied()
        .fold(0.0f32, f32::max)
        .max(1e-6);
    let points: Vec<Pos2> = curves
        .motion
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Pos2::new(
                scale.x_of_secs(t0 + (i as f64 + 0.5) * 0.5),
                curve.bottom() - m / peak * (curve.height() - 4.0),
            )
        })
        .collect();
    painter.add(egui::Shape::line(points, Stroke::new(1.5, theme::BAR)));
    // Frames decoded with errors: red ticks under the curve.
    for &e in &curves.error_secs {
        let x = scale.x_of_secs(t0 + e);
        painter.line_segment(
            [
                Pos2::new(x, curve.bottom() - 10.0),
                Pos2::new(x, curve.bottom()),
            ],
            Stroke::new(1.5, theme::ERROR),
        );
    }
    for cut in &curves.cuts {
        let x = scale.x_of_secs(t0 + cut.time_secs);
        painter.line_segment(
            [Pos2::new(x, curve.top()), Pos2::new(x, curve.bottom())],
            Stroke::new(1.0, theme::WARNING),
        );
    }
}

/// Each clip as a bar on the strip at the timeline's bottom, in its decision's colour.
fn paint_clips(painter: &egui::Painter, scale: &TimelineScale, clips: &[Clip], strip: Rect) {
    for clip in clips {
        let (s, e) = clip_frames(clip, scale.timeline);
        let r = Rect::from_min_max(
            Pos2::new(scale.x_of_frame(s), strip.top()),
            Pos2::new(scale.x_of_frame(e), strip.bottom()),
        );
        let color = match clip.decision {
            Decision::Accepted => theme::ACCEPTED,
            Decision::Rejected => theme::ERROR,
            Decision::Unreviewed => theme::ACCENT,
        };
        painter.rect_filled(r, 2.0, color.gamma_multiply(0.7));
    }
}

/// The in mark and the playhead, across the whole timeline.
fn paint_marks(painter: &egui::Painter, scale: &TimelineScale, player: &Player) {
    let rect = scale.rect;
    if let Some(m) = player.mark_in {
        let x = scale.x_of_frame(m);
        painter.line_segment(
            [Pos2::new(x, rect.top()), Pos2::new(x, rect.bottom())],
            Stroke::new(2.0, theme::ACCEPTED),
        );
    }
    let x = scale.x_of_frame(player.current);
    painter.line_segment(
        [Pos2::new(x, rect.top()), Pos2::new(x, rect.bottom())],
        Stroke::new(2.0, Color32::WHITE),
    );
}

/// What the pointer does on the timeline: drag a clip's edge on the `strip` (`drag` holds the
/// edge grabbed), else seek where it clicks or drags.
fn timeline_action(
    ui: &egui::Ui,
    response: &egui::Response,
    scale: &TimelineScale,
    clips: &[Clip],
    strip: Rect,
    drag: &mut Option<(usize, bool)>,
) -> Option<TimelineAction> {
    let timeline = scale.timeline;
    let n = timeline.len();
    // Dragging a clip edge (grabbed within 5 px), else seeking.
    // Where the press began: by the time a drag is recognised the pointer has moved on.
    if response.drag_started()
        && let Some(p) = ui
            .input(|i| i.pointer.press_origin())
            .or(response.interact_pointer_pos())
        && p.y >= strip.top() - 4.0
    {
        for (i, clip) in clips.iter().enumerate() {
            let (s, e) = clip_frames(clip, timeline);
            if (p.x - scale.x_of_frame(s)).abs() < 5.0 {
                *drag = Some((i, true));
            } else if (p.x - scale.x_of_frame(e)).abs() < 5.0 {
                *drag = Some((i, false));
            }
        }
    }
    let pointer = response.interact_pointer_pos();
    if let Some((i, is_start)) = *drag
        && let Some(clip) = clips.get(i)
    {
        if response.drag_stopped() {
            *drag = None;
            let (s, e) = clip_frames(clip, timeline);
            let f = pointer.map_or(if is_start { s } else { e }, |p| scale.frame_of_x(p.x));
            let (start, end) = if is_start {
                (f.min(e - 1), e)
            } else {
                (s, (f + 1).max(s + 1).min(n))
            };
            if (start, end) != (s, e) {
                return Some(TimelineAction::Reshape {
                    clip: clip.clone(),
                    start,
                    end,
                });
            }
        }
        return None;
    }
    if (response.clicked() || response.dragged())
        && let Some(p) = pointer
    {
        return Some(TimelineAction::Seek(scale.frame_of_x(p.x)));
    }
    None
}

/// A clip's frame range `[start, end)` on this timeline (from its timestamps).
pub fn clip_frames(clip: &Clip, timeline: &FrameTimeline) -> (usize, usize) {
    let s = timeline.pts.partition_point(|&p| p < clip.start_pts);
    let e = timeline
        .pts
        .partition_point(|&p| p < clip.end_pts)
        .max(s + 1);
    (s, e)
}

fn decode_thread(
    video: &Video,
    project: &Path,
    requests: &Receiver<usize>,
    reply: &Sender<Msg>,
    ctx: &egui::Context,
) {
    let send = |m: Msg| {
        let ok = reply.send(m).is_ok();
        ctx.request_repaint();
        ok
    };
    // Two decoder threads: playback of large frames on few cores. In a worker process: a
    // decoder that crashes or hangs on a broken file costs an error message, not the window.
    let &Video {
        ref source,
        read,
        item,
        quarter_turns,
    } = video;
    let mut pictures = match Pictures::open_as(source, 2, read) {
        Ok(p) => p,
        Err(e) => {
            send(Msg::Error(format!("cannot play: {e}")));
            return;
        }
    };
    let timeline = pictures.timeline().clone();
    if timeline.is_empty() {
        send(Msg::Error("no frames".into()));
        return;
    }
    let curves = Catalog::open(project)
        .ok()
        .and_then(|c| c.curves(item).ok().flatten());
    if !send(Msg::Opened {
        timeline: timeline.clone(),
        curves,
    }) {
        return;
    }
    while let Ok(mut index) = requests.recv() {
        // Only the latest request matters (seeking while dragging).
        while let Ok(i) = requests.try_recv() {
            index = i;
        }
        if index >= timeline.pts.len() {
            continue;
        }
        let msg = match pictures.picture(index, quarter_turns, MAX_DISPLAY, None) {
            Ok((w, h, rgb)) => Msg::Frame {
                index,
                image: ColorImage::from_rgb([w as usize, h as usize], rgb),
            },
            Err(e) => Msg::Error(e.to_string()),
        };
        if !send(msg) {
            return;
        }
    }
}

/// Decoded pictures to display images: rotated, fitted within a maximum size
/// ([`MAX_DISPLAY`] by default).
pub struct Converter {
    scratch: Scratch,
    rgb: Vec<u8>,
    max: (u32, u32),
}

impl Default for Converter {
    fn default() -> Self {
        Converter::with_max_size(MAX_DISPLAY)
    }
}

impl Converter {
    pub fn with_max_size(max: (u32, u32)) -> Self {
        Converter {
            scratch: Scratch::default(),
            rgb: Vec::new(),
            max,
        }
    }

    pub fn display(&mut self, frame: Frame, quarter_turns: u8) -> ColorImage {
        let (w, h) = convert::fit_rgb(
            &frame,
            quarter_turns,
            self.max,
            &mut self.scratch,
            &mut self.rgb,
        );
        ColorImage::from_rgb([w as usize, h as usize], &self.rgb)
    }
}
