//! Pictures for the window, decoded in `framecull worker pictures` processes
//! ([`PicturesService`]) and handed over through shared memory: a file's first picture fitted
//! in a box (thumbnails, [`FirstPictures`]) and any frame of an open video, upright and fitted
//! (the player and scrub strips, [`Pictures`]). A decoder that crashes or hangs costs an error
//! message where the picture would be, not the window. Where no worker can start, they are
//! decoded in this process.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::convert::{Scratch, fit_rgb};
use crate::decode::DecodeError;
use crate::isolate::{
    CallError, Client, Failure, Protocol, Reply, Service, SharedMemory, SourceWire, Spec, Stores,
    absorb, hard_limit, worker_exe,
};
use crate::picture::Frame;
use crate::reader::{ReadError, ReadTimes, VideoReader};
use crate::source::{Opened, Source};
use framecull_model::{Ratio, ReadAs};
use framecull_storage::StorageError;

#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request {
    /// The first picture of `source` fitted within `max_side`, as packed RGB, into the shared
    /// memory ([`crate::decode::first_picture`]).
    First {
        source: SourceWire,
        max_side: u32,
        budget_secs: f64,
    },
    /// Open `source` for [`Pictures`] (in place of the one open before).
    Open {
        source: SourceWire,
        threads: usize,
        read: ReadAs,
    },
    /// Frame `index` of the open file, as [`fit_rgb`] makes it, into the shared memory.
    Picture {
        index: usize,
        quarter_turns: u8,
        max: (u32, u32),
        budget_secs: Option<f64>,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Response {
    Opened {
        pts: Vec<i64>,
        time_base: Ratio,
    },
    /// A picture of `width` x `height` pixels, packed RGB, in the shared memory.
    Picture {
        width: u32,
        height: u32,
    },
    /// A picture that could not be read (the worker goes on).
    NoPicture(String),
    Failed(String),
}

/// The pictures worker as its parent knows it.
pub(crate) struct PicturesProtocol;

impl Protocol for PicturesProtocol {
    const NAME: &'static str = "pictures";
    const PROTOCOL: u32 = 1;
    type Request = Request;
    type Response = Response;
}

/// The service's name: `framecull worker pictures` runs [`serve`].
pub const SERVICE: &str = PicturesProtocol::NAME;

/// The address space of a pictures worker: as the scan's and the loader's workers.
const MEMORY_BYTES: u64 = 4096 << 20;

/// How a pictures worker starts, when a `framecull` binary is there to run.
fn spec() -> Option<Spec> {
    Some(Spec {
        exe: worker_exe()?,
        args: vec!["worker".into(), SERVICE.into()],
        memory_bytes: Some(MEMORY_BYTES),
        memory_setting: "the pictures worker's 4 GiB",
    })
}

/// The `framecull worker pictures` process: greet, then answer requests from stdin until it
/// closes. The shared memory is the one its parent passed ([`SharedMemory::inherited`]).
pub fn serve() -> std::io::Result<()> {
    crate::init();
    crate::isolate::serve(&mut PicturesService {
        memory: SharedMemory::inherited()?,
        picture_reader: None,
        scratch: Scratch::default(),
        rgb: Vec::new(),
    })
}

/// The worker's side: the open file and the memory it shares with its parent.
struct PicturesService {
    memory: SharedMemory,
    picture_reader: Option<VideoReader>,
    scratch: Scratch,
    rgb: Vec<u8>,
}

impl Service for PicturesService {
    type Protocol = PicturesProtocol;

    fn answer(&mut self, request: Request, stores: &mut Stores) -> Response {
        match request {
            Request::First {
                source,
                max_side,
                budget_secs,
            } => self.first(source, max_side, budget_secs, stores),
            Request::Open {
                source,
                threads,
                read,
            } => self.open(source, threads, read, stores),
            Request::Picture {
                index,
                quarter_turns,
                max,
                budget_secs,
            } => self.picture(index, quarter_turns, max, budget_secs),
        }
    }

    fn unreadable(reason: String) -> Response {
        Response::Failed(reason)
    }
}

impl PicturesService {
    /// The first picture of `source`, into the shared memory.
    fn first(
        &mut self,
        source: SourceWire,
        max_side: u32,
        budget_secs: f64,
        stores: &mut Stores,
    ) -> Response {
        crate::isolate::inject_fault(&source.name());
        let source = match source.into_opened(stores) {
            Ok(source) => source,
            Err(e) => return Response::NoPicture(e.to_string()),
        };
        let deadline = Instant::now() + Duration::from_secs_f64(budget_secs);
        let picture = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::decode::first_picture(&source, max_side, deadline)
        }));
        let (width, height, rgb) = match picture {
            Ok(Ok(picture)) => picture,
            Ok(Err(e)) => return Response::NoPicture(e.to_string()),
            Err(_) => {
                return Response::NoPicture(
                    "internal error while decoding this file (a bug: please report it)".into(),
                );
            }
        };
        self.share(&rgb, width as u32, height as u32)
    }

    /// `rgb` into the shared memory, as a picture of `width` x `height`.
    fn share(&mut self, rgb: &[u8], width: u32, height: u32) -> Response {
        match self.memory.reserve(rgb.len()) {
            Ok(()) => {
                self.memory.bytes_mut()[..rgb.len()].copy_from_slice(rgb);
                Response::Picture { width, height }
            }
            Err(e) => Response::NoPicture(format!("cannot grow the shared memory: {e}")),
        }
    }

    /// Open `source` for the player, in place of the file open before.
    fn open(
        &mut self,
        source: SourceWire,
        threads: usize,
        read: ReadAs,
        stores: &mut Stores,
    ) -> Response {
        crate::isolate::inject_fault(&source.name());
        self.picture_reader = None;
        let opened = source
            .into_source(stores)
            .map_err(PictureError::from)
            .and_then(|s| Ok(VideoReader::open_as(&s, threads, read)?));
        match opened {
            Ok(reader) => {
                let opened = Response::Opened {
                    pts: reader.frame_pts().to_vec(),
                    time_base: reader.time_base(),
                };
                self.picture_reader = Some(reader);
                opened
            }
            Err(e) => Response::NoPicture(e.to_string()),
        }
    }

    /// Frame `index` of the open file, fitted into `max` and turned, into the shared memory.
    fn picture(
        &mut self,
        index: usize,
        quarter_turns: u8,
        max: (u32, u32),
        budget_secs: Option<f64>,
    ) -> Response {
        let Some(reader) = self.picture_reader.as_mut() else {
            return Response::Failed("a picture before a file was opened".into());
        };
        let deadline = budget_secs.map(|s| std::time::Instant::now() + Duration::from_secs_f64(s));
        let frame = match read_picture(reader, index, deadline) {
            Ok(frame) => frame,
            Err(e) => return Response::NoPicture(e.to_string()),
        };
        let (width, height) = fit_rgb(&frame, quarter_turns, max, &mut self.scratch, &mut self.rgb);
        let rgb = std::mem::take(&mut self.rgb);
        let shared = self.share(&rgb, width, height);
        self.rgb = rgb;
        shared
    }
}

/// Frame `index` of `reader`'s file.
fn read_picture(
    reader: &mut VideoReader,
    index: usize,
    deadline: Option<std::time::Instant>,
) -> Result<Frame, PictureError> {
    let mut picture = None;
    reader
        .read(
            &[index],
            deadline,
            &mut ReadTimes::default(),
            &mut |_, p| picture = Some(p),
        )
        .map_err(|source| PictureError::Read { index, source })?;
    picture.ok_or(PictureError::NotDecoded(index))
}

/// Why a picture could not be read (through a worker or here).
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    /// It crashed, hung, ran out of memory or exited.
    #[error(transparent)]
    Gone(#[from] Failure),
    /// The request could not be sent, or the answer read.
    #[error(transparent)]
    Call(CallError),
    #[error("shared memory: {0}")]
    Memory(std::io::Error),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Open(#[from] DecodeError),
    #[error("{}", read_text(*.index, .source))]
    Read { index: usize, source: ReadError },
    #[error("frame {index}: {failure}")]
    Crashed { index: usize, failure: Failure },
    #[error("frame {0} was not decoded")]
    NotDecoded(usize),
    /// The worker's reason, as it sent it.
    #[error("{0}")]
    Failed(String),
    #[error("nothing is open")]
    NotOpen,
    #[error("no worker process could start to decode in")]
    NoWorker,
    #[error("the worker's picture is out of reach")]
    OutOfReach,
    #[error("the worker's answer is unreadable")]
    Unreadable,
}

/// A read's error, with the frame where its own words do not name it.
fn read_text(index: usize, e: &ReadError) -> String {
    match e {
        ReadError::Missing(_) | ReadError::Corrupt { .. } => e.to_string(),
        _ => format!("frame {index}: {e}"),
    }
}

/// Frames of one video as pictures to show (the window's player and scrub strips): decoded in
/// a `framecull worker pictures` process when one can start (a file or an object), so that a
/// decoder that crashes or hangs on it costs an error message, not the window; else here.
pub struct Pictures {
    source: Source,
    threads: usize,
    read: ReadAs,
    timeline: framecull_model::FrameTimeline,
    remote: Option<PictureWorker>,
    here: Option<VideoReader>,
    scratch: Scratch,
    rgb: Vec<u8>,
}

/// The player's worker ([`Client`]) and the file it opened, in which of its starts.
struct PictureWorker {
    client: Client<PicturesProtocol>,
    memory: SharedMemory,
    opened_by: Option<u64>,
}

impl PictureWorker {
    fn new(spec: Spec) -> Result<PictureWorker, PictureError> {
        let memory = SharedMemory::new().map_err(PictureError::Memory)?;
        Ok(PictureWorker {
            client: Client::new(Some(spec)).sharing(memory.share().map_err(PictureError::Memory)?),
            memory,
            opened_by: None,
        })
    }

    /// Whether the running worker has the file open.
    fn is_open(&self) -> bool {
        self.client.running() && self.opened_by == Some(self.client.started())
    }

    /// Open `source` in the worker (started if none runs): the video's frame timestamps and
    /// time base.
    fn open(
        &mut self,
        source: &Source,
        threads: usize,
        read: ReadAs,
    ) -> Result<(Vec<i64>, Ratio), Opening> {
        self.opened_by = None;
        if !self.client.ready() {
            return Err(Opening::NoWorker);
        }
        let request = Request::Open {
            source: SourceWire::of(source),
            threads,
            read,
        };
        match answer_of(self.client.request(&request, OPEN_LIMIT, None), source) {
            Ok(Response::Opened { pts, time_base }) => {
                self.opened_by = Some(self.client.started());
                Ok((pts, time_base))
            }
            Ok(Response::NoPicture(e)) => Err(Opening::Failed(PictureError::Failed(e))),
            Ok(Response::Failed(e)) => {
                // It could not read the request: of no more use.
                self.client.lose();
                Err(Opening::Failed(PictureError::Failed(e)))
            }
            Ok(_) => {
                self.client.lose();
                Err(Opening::Failed(PictureError::Unreadable))
            }
            Err(CallError::Failed(failure)) => Err(Opening::Failed(failure.into())),
            Err(e) => Err(Opening::Failed(PictureError::Call(e))),
        }
    }
}

/// A worker's answer, its storage reports taken in by `source`'s store.
fn answer_of(
    reply: Result<Reply<Response>, CallError>,
    source: &Source,
) -> Result<Response, CallError> {
    let reply = reply?;
    absorb(source.store(), &reply.storage);
    Ok(reply.answer)
}

/// Why a worker could not open a file: no worker can start (then the file is opened here),
/// or the file's own failure (a crash included).
enum Opening {
    NoWorker,
    Failed(PictureError),
}

/// Opening a video reads its packets' table: a large file on slow storage takes a while.
const OPEN_LIMIT: Duration = Duration::from_secs(120);

/// One picture without a budget of its own: a seek and a decode from a keyframe (with one,
/// [`hard_limit`] of it, at most 30 s more).
const PICTURE_LIMIT: Duration = Duration::from_secs(30);

impl Pictures {
    /// Open `source` (`threads` decoder threads): in a worker process when a `framecull`
    /// binary is there to run.
    pub fn open(source: &Source, threads: usize) -> Result<Pictures, PictureError> {
        Pictures::open_as(source, threads, ReadAs::default())
    }

    /// [`Pictures::open`], reading as `read` says: the stream the catalog recorded, and the
    /// project's matrix guess.
    pub fn open_as(
        source: &Source,
        threads: usize,
        read: ReadAs,
    ) -> Result<Pictures, PictureError> {
        Pictures::open_where(source, threads, read, true)
    }

    /// [`Pictures::open`], decoding in this process.
    pub fn open_here(source: &Source, threads: usize) -> Result<Pictures, PictureError> {
        Pictures::open_where(source, threads, ReadAs::default(), false)
    }

    /// Whether the pictures come from a worker process.
    pub fn in_worker(&self) -> bool {
        self.remote.is_some()
    }

    fn open_where(
        source: &Source,
        threads: usize,
        read: ReadAs,
        isolate: bool,
    ) -> Result<Pictures, PictureError> {
        let spec = if isolate { spec() } else { None };
        let mut pictures = Pictures {
            source: source.clone(),
            threads,
            read,
            timeline: framecull_model::FrameTimeline {
                pts: Vec::new(),
                time_base: Ratio { num: 1, den: 1 },
            },
            remote: None,
            here: None,
            scratch: Scratch::default(),
            rgb: Vec::new(),
        };
        if let Some(spec) = spec {
            let mut remote = PictureWorker::new(spec)?;
            match remote.open(source, threads, read) {
                Ok((pts, time_base)) => {
                    pictures.timeline = framecull_model::FrameTimeline { pts, time_base };
                    pictures.remote = Some(remote);
                    return Ok(pictures);
                }
                Err(Opening::Failed(e)) => return Err(e),
                Err(Opening::NoWorker) => {}
            }
        }
        pictures.decode_here()?;
        Ok(pictures)
    }

    /// Decode in this process (no worker could start when the file was opened).
    fn decode_here(&mut self) -> Result<(), PictureError> {
        let reader = VideoReader::open_as(&self.source, self.threads, self.read)?;
        self.timeline = framecull_model::FrameTimeline {
            pts: reader.frame_pts().to_vec(),
            time_base: reader.time_base(),
        };
        self.remote = None;
        self.here = Some(reader);
        Ok(())
    }

    /// The video's frames (presentation timestamps, in display order).
    pub fn timeline(&self) -> &framecull_model::FrameTimeline {
        &self.timeline
    }

    /// Frame `index`, upright and fitted within `max`: width, height and packed RGB. A
    /// worker that crashed or hung is replaced (the file opened again) for the next one.
    pub fn picture(
        &mut self,
        index: usize,
        quarter_turns: u8,
        max: (u32, u32),
        budget: Option<Duration>,
    ) -> Result<(u32, u32, &[u8]), PictureError> {
        if let Some(remote) = self.remote.as_mut()
            && !remote.is_open()
        {
            // A worker ended on this file: the file is opened again in a new one, never in
            // this process (where the same crash would end the window).
            match remote.open(&self.source, self.threads, self.read) {
                Ok(_) => {}
                Err(Opening::Failed(e)) => return Err(e),
                Err(Opening::NoWorker) => return Err(PictureError::NoWorker),
            }
        }
        if let Some(reader) = self.here.as_mut() {
            let frame = read_picture(reader, index, budget.map(|b| std::time::Instant::now() + b))?;
            let (w, h) = fit_rgb(&frame, quarter_turns, max, &mut self.scratch, &mut self.rgb);
            return Ok((w, h, &self.rgb));
        }
        let Some(remote) = self.remote.as_mut() else {
            return Err(PictureError::NotOpen);
        };
        let request = Request::Picture {
            index,
            quarter_turns,
            max,
            budget_secs: budget.map(|b| b.as_secs_f64()),
        };
        let limit = budget.map_or(PICTURE_LIMIT, hard_limit);
        match answer_of(remote.client.request(&request, limit, None), &self.source) {
            Err(CallError::Failed(failure)) => Err(PictureError::Crashed { index, failure }),
            Ok(Response::Picture { width, height }) => {
                let len = width as usize * height as usize * 3;
                if remote.memory.reserve(len).is_err() {
                    remote.client.lose();
                    return Err(PictureError::OutOfReach);
                }
                Ok((width, height, &remote.memory.bytes()[..len]))
            }
            Ok(Response::NoPicture(e)) => Err(PictureError::Failed(e)),
            Ok(_) | Err(CallError::Encode(_) | CallError::Unreadable(_) | CallError::NoWorker) => {
                remote.client.lose();
                Err(PictureError::Unreadable)
            }
        }
    }
}

/// First pictures of files (thumbnails), each decoded in a pictures worker when one can start
/// ([`Client`]'s restart rule), else here.
pub struct FirstPictures {
    client: Client<PicturesProtocol>,
    memory: Option<SharedMemory>,
}

impl Default for FirstPictures {
    fn default() -> Self {
        FirstPictures::new()
    }
}

impl FirstPictures {
    pub fn new() -> FirstPictures {
        let memory = SharedMemory::new().ok();
        let shared = memory.as_ref().and_then(|m| m.share().ok());
        let client = match shared {
            Some(fd) => Client::new(spec()).sharing(fd),
            None => Client::new(None),
        };
        FirstPictures { client, memory }
    }

    /// The first picture of `opened` fitted within `max_side`: width, height, packed RGB.
    pub fn first(
        &mut self,
        opened: &Opened,
        max_side: u32,
        budget: Duration,
    ) -> Result<(usize, usize, Vec<u8>), PictureError> {
        let memory = match self.memory.as_mut() {
            Some(memory) if self.client.ready() => memory,
            _ => {
                let deadline = Instant::now() + budget;
                return Ok(crate::decode::first_picture(opened, max_side, deadline)?);
            }
        };
        let request = Request::First {
            source: SourceWire::of_opened(opened),
            max_side,
            budget_secs: budget.as_secs_f64(),
        };
        let reply = self.client.request(&request, hard_limit(budget), None);
        match reply.map(|r| {
            absorb(opened.store(), &r.storage);
            r.answer
        }) {
            Ok(Response::Picture { width, height }) => {
                let len = width as usize * height as usize * 3;
                if memory.reserve(len).is_err() {
                    self.client.lose();
                    return Err(PictureError::OutOfReach);
                }
                Ok((
                    width as usize,
                    height as usize,
                    memory.bytes()[..len].to_vec(),
                ))
            }
            Ok(Response::NoPicture(e)) => Err(PictureError::Failed(e)),
            Ok(_) => {
                self.client.lose();
                Err(PictureError::Unreadable)
            }
            Err(CallError::Failed(failure)) => Err(PictureError::Gone(failure)),
            Err(e) => Err(PictureError::Call(e)),
        }
    }
}
