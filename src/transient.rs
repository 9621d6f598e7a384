//! Errors worth retrying as they are: the cause may pass on its own (a database busy, a
//! storage or network error). The command line exits with status 3 for them, so a scheduler
//! retries the task instead of failing it.

use std::error::Error;
use std::io::ErrorKind;

/// An error the caller should retry unchanged (exit status 3).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Transient {
    pub message: String,
}

impl Transient {
    pub fn new(message: impl Into<String>) -> Self {
        Transient {
            message: message.into(),
        }
    }
}

/// Whether `err` or any error in its source chain is transient: a [`Transient`], SQLite busy,
/// locked or I/O failure, or an I/O error that may pass (time-outs, interrupted or reset
/// connections, stale network file handles, EIO).
pub fn is_transient(err: &(dyn Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if cause_is_transient(e) {
            return true;
        }
        next = e.source();
    }
    false
}

fn cause_is_transient(e: &(dyn Error + 'static)) -> bool {
    if e.is::<Transient>() {
        return true;
    }
    if let Some(storage) = e.downcast_ref::<crate::storage::StorageError>() {
        return storage.is_transient();
    }
    if let Some(rusqlite::Error::SqliteFailure(f, _)) = e.downcast_ref::<rusqlite::Error>() {
        return matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseBusy
                | rusqlite::ErrorCode::DatabaseLocked
                | rusqlite::ErrorCode::SystemIoFailure
        );
    }
    e.downcast_ref::<std::io::Error>()
        .is_some_and(io_is_transient)
}

/// EIO: a storage error (on network file systems usually a passing one).
const EIO: i32 = 5;

fn io_is_transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::TimedOut
            | ErrorKind::Interrupted
            | ErrorKind::WouldBlock
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::ConnectionRefused
            | ErrorKind::NotConnected
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::NetworkDown
            | ErrorKind::ResourceBusy
            | ErrorKind::StaleNetworkFileHandle
    ) || (cfg!(unix) && e.raw_os_error() == Some(EIO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("wrapped")]
    struct Wrapped(#[source] std::io::Error);

    #[test]
    fn classified_through_the_source_chain() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        assert!(is_transient(&busy));
        let stale = Wrapped(std::io::Error::from(ErrorKind::StaleNetworkFileHandle));
        assert!(is_transient(&stale));
        assert!(is_transient(&Wrapped(std::io::Error::from_raw_os_error(
            EIO
        ))));
        assert!(!is_transient(&Wrapped(std::io::Error::from(
            ErrorKind::NotFound
        ))));
        assert!(!is_transient(&Wrapped(std::io::Error::from(
            ErrorKind::PermissionDenied
        ))));
        assert!(is_transient(&Transient::new("try again")));
    }
}
