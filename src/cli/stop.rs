//! Stopping a long command on a signal: Ctrl-C (SIGINT) at a terminal, and SIGTERM or SIGHUP,
//! which Slurm (a time limit, a preemption), Kubernetes (an eviction, a deleted pod) and Ray
//! send before they kill. Each sets one flag; the command stops taking new work, commits what
//! is done, ends its workers and returns. A second Ctrl-C exits at once, and so does a second
//! SIGTERM or SIGHUP a second or more after the first (sooner, it is the same stop delivered
//! twice); SQLite's journal keeps the catalog consistent. A stop by SIGTERM or SIGHUP is a [`Transient`] error (exit
//! 3): a scheduler retries the task instead of reading a signal death as a crash, and the
//! rerun resumes.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::transient::Transient;

/// The process's stop request, shared by every command and thread that asks.
#[derive(Clone)]
pub struct Stop {
    flag: Arc<AtomicBool>,
    /// The first signal received (0: none), and when.
    signal: Arc<AtomicI32>,
    first: Arc<OnceLock<Instant>>,
}

impl Stop {
    /// The stop request of this process, with the signal handlers installed on the first
    /// call. When they cannot be installed the command runs on, unstoppable but correct.
    pub fn on_signals() -> Stop {
        static STOP: OnceLock<Stop> = OnceLock::new();
        STOP.get_or_init(|| {
            let stop = Stop {
                flag: Arc::new(AtomicBool::new(false)),
                signal: Arc::new(AtomicI32::new(0)),
                first: Arc::new(OnceLock::new()),
            };
            match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
                Ok(mut signals) => {
                    let watcher = stop.clone();
                    std::thread::Builder::new()
                        .name("signals".into())
                        .spawn(move || {
                            for signal in signals.forever() {
                                watcher.received(signal);
                            }
                        })
                        .ok();
                }
                Err(e) => tracing::warn!("cannot handle signals: {e}"),
            }
            stop
        })
        .clone()
    }

    fn received(&self, signal: i32) {
        if self.flag.swap(true, Ordering::SeqCst) {
            let since = self
                .first
                .get()
                .map_or(Duration::MAX, |first| first.elapsed());
            if quits_at_once(signal, since) {
                std::process::exit(128 + signal);
            }
            return;
        }
        let _ = self.first.set(Instant::now());
        self.signal.store(signal, Ordering::SeqCst);
        let quit = if signal == SIGINT {
            " (Ctrl-C again to quit now)"
        } else {
            ""
        };
        eprintln!(
            "\n{}: stopping; what is done is kept, the files in flight are left to do{quit}",
            name(signal)
        );
    }

    /// The flag the library's long operations poll.
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.flag
    }

    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Whether the stop came from a scheduler or the system (SIGTERM, SIGHUP) rather than
    /// from someone at the terminal.
    pub fn by_scheduler(&self) -> bool {
        matches!(self.signal.load(Ordering::SeqCst), SIGTERM | SIGHUP)
    }

    /// The error a stopped command ends with: `message` and how to resume, transient (exit
    /// 3) when a scheduler sent the signal or `retried` (a shard, which a scheduler runs),
    /// else a plain error (exit 2) for a person who pressed Ctrl-C.
    pub fn error(&self, message: &str, retried: bool) -> anyhow::Error {
        let signal = self.signal.load(Ordering::SeqCst);
        let message = if signal == 0 {
            message.to_string()
        } else {
            format!("{message} ({})", name(signal))
        };
        if self.by_scheduler() || retried {
            Transient::new(message).into()
        } else {
            anyhow::anyhow!(message)
        }
    }
}

/// How long after the first stop signal a second SIGTERM or SIGHUP is someone insisting,
/// rather than the same stop delivered twice: Slurm signals every process of a job step and
/// its launcher script passes the signal on too, within milliseconds of each other.
const SAME_STOP: Duration = Duration::from_secs(1);

/// Whether a second `signal`, `since` the first, ends the process at once (SQLite's journal
/// keeps the catalog consistent): a second Ctrl-C always, as the default action would; a
/// second SIGTERM or SIGHUP unless it is the first one delivered twice.
fn quits_at_once(signal: i32, since: Duration) -> bool {
    signal == SIGINT || since >= SAME_STOP
}

fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// In a worker process: ignore SIGINT, SIGTERM and SIGHUP. Slurm signals every process of a
/// job step, so a worker would otherwise die under the file it is reading, and its parent
/// would record that file as crashing the decoder. The parent stops cleanly instead and ends
/// its workers (their pipe closes); a parent that is killed takes them along
/// (`PR_SET_PDEATHSIG`).
pub fn leave_to_the_parent() {
    // A handler that only sets a flag no one reads: the signal no longer ends the process.
    let unread = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&unread)) {
            tracing::warn!("cannot set aside signal {signal}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_signal_quits_unless_it_is_the_first_delivered_twice() {
        assert!(quits_at_once(SIGINT, Duration::ZERO));
        assert!(!quits_at_once(SIGTERM, Duration::from_millis(20)));
        assert!(!quits_at_once(SIGHUP, Duration::from_millis(999)));
        assert!(quits_at_once(SIGTERM, Duration::from_secs(1)));
        assert!(quits_at_once(SIGHUP, Duration::from_secs(5)));
    }
}
