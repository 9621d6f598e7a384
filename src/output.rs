//! What the command-line programs (`framecull`, `framecull-bench`) write: reports to stdout,
//! logs to stderr; and an error's text as every front end shows it.

/// An error and its causes on one line, each cause once: a cause whose text is already in the
/// line (an error that displays its source) is not repeated.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

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

/// Write `bytes` to `path` atomically: a temporary file beside it, synced, then renamed over
/// it, so a reader sees the old file or the whole new one.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", path.display()),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_that_displays_its_source_reads_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("{0}")]
        struct Wrapper(#[from] std::io::Error);
        let inner = std::io::Error::other("cannot reach the store");
        let e = anyhow::Error::from(Wrapper(inner)).context("scan of s3://b/p");
        assert_eq!(
            super::error_text(&e),
            "scan of s3://b/p: cannot reach the store"
        );
        // `{:#}` repeats it: what the window showed.
        assert_eq!(
            format!("{e:#}"),
            "scan of s3://b/p: cannot reach the store: cannot reach the store"
        );
    }
}
