//! Fault injection, for tests: a switch every build has, off unless the environment sets it.
//!
//! With `FRAMECULL_FAULT_INJECTION=1`, a worker process misbehaves on files named
//! `framecull-fault-crash*`, `-hang*` and `-alloc*` (`media::isolate::inject_fault`), a
//! WebDataset shard write waits [`SLOW_SHARD_ENV`] milliseconds before each sample and the deep
//! pass [`SLOW_ANALYSIS_ENV`] before each file, so that the tests crash, hang, exhaust and stop
//! the very binary that ships (a build of its own for the tests would be a second build to make
//! and not the one users run) in the middle of its work on a machine of any speed. Unset,
//! nothing changes.

use std::sync::OnceLock;

/// The environment variable that switches fault injection on (`1`).
pub const FAULTS_ENV: &str = "FRAMECULL_FAULT_INJECTION";

/// Whether this process injects faults: [`FAULTS_ENV`] was `1` when it started.
pub fn faults_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(FAULTS_ENV).is_some_and(|v| v == "1"))
}

/// Milliseconds a WebDataset shard write waits before each sample, with faults on.
pub const SLOW_SHARD_ENV: &str = "FRAMECULL_FAULT_SLOW_SHARD_MS";
/// Milliseconds the deep pass waits before each file it analyses, with faults on.
pub const SLOW_ANALYSIS_ENV: &str = "FRAMECULL_FAULT_SLOW_ANALYSIS_MS";

/// With faults on, wait the milliseconds the environment variable `setting` names (one of
/// the `SLOW_*` settings above); otherwise nothing.
pub fn slow_down(setting: &str) {
    if !faults_on() {
        return;
    }
    if let Some(ms) = std::env::var(setting).ok().and_then(|v| v.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}
