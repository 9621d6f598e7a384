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
    // SAFETY: reading the global log level has no preconditions.
    if level > unsafe { ffi::av_log_get_level() } {
        return;
    }
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
        return;
    }
    // SAFETY: av_log_format_line2 always NUL-terminates within the buffer.
    let line = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
    let line = line.trim_end();
    if line.is_empty() {
        return;
    }
    if level <= ffi::AV_LOG_ERROR {
        tracing::debug!(target: "ffmpeg", "{line}");
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
fn strip_context(line: &str) -> &str {
    match (line.starts_with('['), line.find("] ")) {
        (true, Some(i)) => &line[i + 2..],
        _ => line,
    }
}
