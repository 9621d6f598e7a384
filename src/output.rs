//! What the command-line programs (`framecull`, `framecull-bench`) write: reports to stdout,
//! logs to stderr.

/// Write text to stdout, ending with a newline; a closed pipe is not an error.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let r = out.write_all(text.as_bytes()).and_then(|()| {
        if text.ends_with('\n') {
            Ok(())
        } else {
            out.write_all(b"\n")
        }
    });
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Log to stderr with this filter (e.g. `info`, `framecull=debug`), else FRAMECULL_LOG, else
/// `warn`. A second call does nothing.
pub fn init_logging(filter: Option<&str>) {
    let filter = filter
        .map(str::to_string)
        .or_else(|| std::env::var("FRAMECULL_LOG").ok())
        .unwrap_or_else(|| "warn".to_string());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}
