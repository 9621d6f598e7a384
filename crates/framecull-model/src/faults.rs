//! Fault injection, for tests: a switch every build has, off unless the environment sets it.
//!
//! With `FRAMECULL_FAULT_INJECTION=1`, a worker process misbehaves on files named
//! `framecull-fault-crash*`, `-hang*` and `-alloc*` (`media::isolate::inject_fault`), and a
//! WebDataset shard write waits `FRAMECULL_FAULT_SLOW_SHARD_MS` before each sample, so that the
//! tests crash, hang, exhaust and stop the very binary that ships (a build of its own for the
//! tests would be a second build to make and not the one users run). Unset, nothing changes.

use std::sync::OnceLock;

/// The environment variable that switches fault injection on (`1`).
pub const FAULTS_ENV: &str = "FRAMECULL_FAULT_INJECTION";

/// Whether this process injects faults: [`FAULTS_ENV`] was `1` when it started.
pub fn faults_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(FAULTS_ENV).is_some_and(|v| v == "1"))
}
