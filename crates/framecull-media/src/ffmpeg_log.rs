//! FFmpeg's own log, routed into `tracing`; the last error on each thread is kept so a
//! failure can be reported with FFmpeg's explanation ("moov atom not found").

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Once;

use ffmpeg_next::ffi;

thread_local! {
    static LAST_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
    static ERROR_LINES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The error lines of one decoder, whichever thread logs them: FFmpeg's frame threads log
/// on threads of their own, where the per-thread count does not see them. A codec context
/// whose `opaque` points at a live sink ([`Sink::attach`]) counts its lines there, not on the
/// thread.
pub struct Sink {
    lines: std::sync::atomic::AtomicU64,
    first: std::sync::Mutex<Option<String>>,
    /// Every line the context logs, at any level, where kept ([`Sink::keeping_lines`]).
    kept: Option<std::sync::Mutex<Vec<String>>>,
}

/// How many live sinks keep every line: while none does, lines under the log level are
/// dropped before anything else is looked at.
static KEEPING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The addresses of the sinks alive: a context's `opaque` is taken for a sink only when it is
/// one of them (other code in the process, a Python package's FFmpeg binding, may put
/// anything there).
static SINKS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

impl Drop for Sink {
    fn drop(&mut self) {
        let me = std::ptr::from_ref(self) as usize;
        SINKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&s| s != me);
        if self.kept.is_some() {
            KEEPING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl Sink {
    pub fn new() -> Box<Sink> {
        Sink::made(None)
    }

    /// A sink that also keeps every line its context logs, whatever the log level (an
    /// encoder's per-frame statistics, logged at the debug level), for [`Sink::take_lines`].
    pub fn keeping_lines() -> Box<Sink> {
        KEEPING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Sink::made(Some(std::sync::Mutex::new(Vec::new())))
    }

    fn made(kept: Option<std::sync::Mutex<Vec<String>>>) -> Box<Sink> {
        let sink = Box::new(Sink {
            lines: std::sync::atomic::AtomicU64::new(0),
            first: std::sync::Mutex::new(None),
            kept,
        });
        SINKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(std::ptr::from_ref(&*sink) as usize);
        sink
    }

    /// The lines kept since the last call (none unless [`Sink::keeping_lines`]).
    pub fn take_lines(&self) -> Vec<String> {
        self.kept
            .as_ref()
            .map(|k| std::mem::take(&mut *k.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default()
    }

    /// Have the codec context `ctx` log its errors into this sink (frame threads copy the
    /// context, `opaque` with it).
    ///
    /// # Safety
    /// `ctx` is a valid codec context whose `opaque` nothing else uses, and the sink outlives
    /// it and every thread it starts.
    pub unsafe fn attach(&self, ctx: *mut ffi::AVCodecContext) {
        // SAFETY: the caller's promise: a valid context, `opaque` free.
        unsafe { (*ctx).opaque = std::ptr::from_ref(self).cast_mut().cast() };
    }

    /// Error-level lines logged through it.
    pub fn lines(&self) -> u64 {
        self.lines.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The first of them, without FFmpeg's `[context @ address]` prefix.
    pub fn first(&self) -> Option<String> {
        self.first.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn record(&self, message: &str) {
        self.lines.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.first
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(|| message.to_string());
    }
}

/// Record `message` in the sink of the codec context `avcl` logs for, if it has one attached;
/// whether it had.
///
/// # Safety
/// `avcl` is null or the context object FFmpeg passed to its log callback.
unsafe fn record_in_sink(avcl: *mut c_void, message: &str) -> bool {
    // SAFETY: the caller's promise.
    unsafe { with_sink(avcl, |sink| sink.record(message)) }.is_some()
}

/// Run `f` on the sink of the codec context `avcl` logs for, if it has one attached.
///
/// # Safety
/// `avcl` is null or the context object FFmpeg passed to its log callback.
unsafe fn with_sink<T>(avcl: *mut c_void, f: impl FnOnce(&Sink) -> T) -> Option<T> {
    if avcl.is_null() {
        return None;
    }
    // SAFETY: every object FFmpeg logs for starts with a pointer to its AVClass, and a codec
    // context's `opaque` is read as an address only.
    let opaque = unsafe {
        let class = *avcl.cast::<*const ffi::AVClass>();
        if class != ffi::avcodec_get_class() {
            return None;
        }
        (*avcl.cast::<ffi::AVCodecContext>()).opaque as usize
    };
    let sinks = SINKS.lock().unwrap_or_else(|p| p.into_inner());
    if opaque == 0 || !sinks.contains(&opaque) {
        return None;
    }
    // SAFETY: a live sink's address (it leaves the list before it is freed, which waits for
    // this lock).
    let sink = unsafe { &*(opaque as *const Sink) };
    Some(f(sink))
}

/// Format one line FFmpeg logs (`avcl`, `level`, `fmt`, `args` as its callback got them).
///
/// # Safety
/// The arguments are those FFmpeg passed to its log callback, for this call.
unsafe fn format_line(
    avcl: *mut c_void,
    level: c_int,
    fmt: *const c_char,
    args: *mut ffi::__va_list_tag,
) -> Option<String> {
    let mut buf = [0 as c_char; 1024];
    let mut print_prefix: c_int = 1;
    // SAFETY: `buf` is a valid writable buffer of the size passed; `avcl`, `fmt` and `args`
    // come straight from FFmpeg's av_log call and are valid for this call.
    let written = unsafe {
        ffi::av_log_format_line2(
            avcl,
            level,
            fmt,
            args,
            buf.as_mut_ptr(),
            buf.len() as c_int,
            &mut print_prefix,
        )
    };
    if written < 0 {
        return None;
    }
    // SAFETY: av_log_format_line2 always NUL-terminates within the buffer.
    let line = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
    let line = line.trim_end();
    (!line.is_empty()).then(|| line.to_string())
}

/// Initialise FFmpeg once per process and install the log callback.
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if let Err(e) = ffmpeg_next::init() {
            tracing::error!("FFmpeg failed to initialise: {e}");
        }
        // SAFETY: `log_callback` matches the signature FFmpeg expects and only reads its
        // arguments through `av_log_format_line2`; setting the callback is thread-safe.
        unsafe {
            ffi::av_log_set_level(ffi::AV_LOG_WARNING);
            ffi::av_log_set_callback(Some(log_callback));
        }
    });
}

/// Take (and clear) the last error FFmpeg logged on this thread.
pub fn take_last_error() -> Option<String> {
    LAST_ERROR.with(|e| e.borrow_mut().take())
}

/// Forget earlier errors on this thread before starting a new operation.
pub fn clear_last_error() {
    LAST_ERROR.with(|e| *e.borrow_mut() = None);
    ERROR_LINES.with(|n| n.set(0));
}

/// Error-level lines FFmpeg logged on this thread since [`clear_last_error`].
pub fn error_lines() -> u64 {
    ERROR_LINES.with(std::cell::Cell::get)
}

unsafe extern "C" fn log_callback(
    avcl: *mut c_void,
    level: c_int,
    fmt: *const c_char,
    args: *mut ffi::__va_list_tag,
) {
    // A line other than an error, of a context whose sink keeps every line: kept there,
    // whatever the log level.
    if level > ffi::AV_LOG_ERROR && KEEPING.load(std::sync::atomic::Ordering::Relaxed) > 0 {
        // SAFETY: `avcl` is the object FFmpeg passed for this line, and the rest its
        // arguments for this call (formatted once, here, where kept).
        let kept = unsafe {
            with_sink(avcl, |sink| {
                let Some(kept) = &sink.kept else {
                    return false;
                };
                if let Some(line) = format_line(avcl, level, fmt, args) {
                    kept.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                }
                true
            })
        };
        if kept == Some(true) {
            return;
        }
    }
    // SAFETY: reading the global log level has no preconditions.
    if level > unsafe { ffi::av_log_get_level() } {
        return;
    }
    // SAFETY: the arguments FFmpeg passed for this call.
    let Some(line) = (unsafe { format_line(avcl, level, fmt, args) }) else {
        return;
    };
    let line = line.as_str();
    if level <= ffi::AV_LOG_ERROR {
        tracing::debug!(target: "ffmpeg", "{line}");
        // SAFETY: `avcl` is the object FFmpeg passed for this line.
        if unsafe { record_in_sink(avcl, strip_context(line)) } {
            return;
        }
        ERROR_LINES.with(|n| n.set(n.get() + 1));
        let message = strip_context(line).to_string();
        LAST_ERROR.with(|e| {
            let mut e = e.borrow_mut();
            if e.is_none() {
                *e = Some(message);
            }
        });
    } else {
        tracing::trace!(target: "ffmpeg", "{line}");
    }
}

/// `[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55...] moov atom not found` -> `moov atom not found`.
pub fn strip_context(line: &str) -> &str {
    match (line.starts_with('['), line.find("] ")) {
        (true, Some(i)) => &line[i + 2..],
        _ => line,
    }
}
