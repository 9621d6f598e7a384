//! The parent's side of [`super`]: [`Client`], one thread's worker of a [`Protocol`] under the
//! one restart rule every kind of worker follows, and [`Pool`], what holds a client lent to
//! threads that need one for part of their work only.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::{CallError, GREETING, Protocol, Reply, Spec, StartError, Worker};

/// Starts in a row that may fail before a client gives workers up.
pub const STARTS_IN_A_ROW: u32 = 3;

/// A request each new worker gets before any other, and whether its answer is the one hoped for.
type Setup<P> = (
    <P as Protocol>::Request,
    fn(&<P as Protocol>::Response) -> bool,
);

/// A worker process of protocol `P` for one thread (or for one user at a time, lent by a
/// [`Pool`]). The restart rule: a worker starts on first use, and again after any request that
/// failed (a crash, a hang, memory, an unreadable answer: each costs its request, not the
/// next); a start that failed for a passing reason (the new worker crashed or ran out of
/// memory before it was ready) is tried again at once. After [`STARTS_IN_A_ROW`] failed starts
/// in a row, or one that would fail again the same way ([`StartError::lasts`]: no such binary,
/// one of another build, a worker that hangs before it greets), the client gives workers up
/// with a warning: [`Client::ready`] is false from then on, and the caller does the work in
/// its own process.
///
/// A worker ends with the thread that started it (`PR_SET_PDEATHSIG`): a client must not
/// outlive that thread in use.
pub struct Client<P: Protocol> {
    /// `None`: no workers (never, or given up).
    spec: Option<Spec>,
    /// What each worker gets as its descriptor [`super::SHARED_FD`] (memory both map).
    shared: Option<OwnedFd>,
    setup: Option<Setup<P>>,
    worker: Option<Worker>,
    failed_starts: u32,
    started: u64,
}

impl<P: Protocol> Client<P> {
    /// Workers started as `spec` says; `None`: none, the work runs in this process.
    pub fn new(spec: Option<Spec>) -> Client<P> {
        Client {
            spec,
            shared: None,
            setup: None,
            worker: None,
            failed_starts: 0,
            started: 0,
        }
    }

    /// Workers that get `shared` too ([`super::SharedMemory::share`]).
    pub fn sharing(mut self, shared: OwnedFd) -> Client<P> {
        self.shared = Some(shared);
        self
    }

    /// `request` sent to each new worker before any other; a worker whose answer `accept`
    /// refuses counts as a failed start.
    pub fn with_setup(
        mut self,
        request: P::Request,
        accept: fn(&P::Response) -> bool,
    ) -> Client<P> {
        self.setup = Some((request, accept));
        self
    }

    /// Workers started so far: a new number means a new worker, which knows nothing of what
    /// the last one was told.
    pub fn started(&self) -> u64 {
        self.started
    }

    /// Whether a worker runs now.
    pub fn running(&self) -> bool {
        self.worker.is_some()
    }

    /// Whether a worker runs, starting one if none does (see the type's restart rule).
    pub fn ready(&mut self) -> bool {
        if self.worker.is_some() {
            return true;
        }
        while let Some(spec) = &self.spec {
            let shared = self.shared.as_ref().map(|fd| fd.as_fd());
            match start::<P>(spec, shared, self.setup.as_ref()) {
                Ok(worker) => {
                    self.worker = Some(worker);
                    self.started += 1;
                    self.failed_starts = 0;
                    return true;
                }
                Err(e) => {
                    self.failed_starts += 1;
                    if self.failed_starts < STARTS_IN_A_ROW && !e.lasts() {
                        tracing::warn!(
                            "cannot start a {} worker process ({e}); trying again",
                            P::NAME
                        );
                        continue;
                    }
                    tracing::warn!(
                        "no usable {} worker process ({}: {e}): FFmpeg runs in this process",
                        P::NAME,
                        spec.exe.display()
                    );
                    self.spec = None;
                }
            }
        }
        false
    }

    /// One request and its reply within `limit`, abandoned once `stop` is set. After any
    /// failure the worker is gone (a new one starts at the next [`Client::ready`]);
    /// [`CallError::NoWorker`] where none runs.
    pub fn request(
        &mut self,
        request: &P::Request,
        limit: Duration,
        stop: Option<&AtomicBool>,
    ) -> Result<Reply<P::Response>, CallError> {
        let worker = self.worker.as_mut().ok_or(CallError::NoWorker)?;
        let reply = worker.request(request, limit, stop);
        if reply.is_err() {
            self.worker = None;
        }
        reply
    }

    /// The running worker is of no more use (an answer that makes no sense): it is ended, and
    /// a new one starts at the next [`Client::ready`].
    pub fn lose(&mut self) {
        self.worker = None;
    }
}

/// Start a worker of `P`, greeted and set up.
fn start<P: Protocol>(
    spec: &Spec,
    shared: Option<std::os::fd::BorrowedFd<'_>>,
    setup: Option<&Setup<P>>,
) -> Result<Worker, StartError> {
    let mut worker = Worker::start::<P>(spec, shared)?;
    if let Some((request, accept)) = setup {
        let reply = worker.request::<_, P::Response>(request, GREETING, None)?;
        if !accept(&reply.answer) {
            let said = serde_json::to_string(&reply.answer).unwrap_or_default();
            return Err(StartError::Setup(said));
        }
    }
    Ok(worker)
}

/// What `make` makes (a [`Client`], or what holds one), lent to threads that need one for
/// part of their work only, such as a scan's probing threads, which may be more than the
/// cores while they wait on an object store: at most `max` are made (each client's worker
/// costs a process start, and CPU is what they need); the others wait for one.
pub struct Pool<T> {
    make: Box<dyn Fn() -> T + Send + Sync>,
    max: usize,
    /// Idle ones, and how many were made.
    state: Mutex<(Vec<T>, usize)>,
    freed: Condvar,
}

impl<T> Pool<T> {
    pub fn new(max: usize, make: impl Fn() -> T + Send + Sync + 'static) -> Pool<T> {
        Pool {
            make: Box::new(make),
            max: max.max(1),
            state: Mutex::new((Vec::new(), 0)),
            freed: Condvar::new(),
        }
    }

    /// Run `work` with one, waiting for one while `max` are lent.
    pub fn with<R>(&self, work: impl FnOnce(&mut T) -> R) -> R {
        let held = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(held) = state.0.pop() {
                    break Some(held);
                }
                if state.1 < self.max {
                    // Counted now, made outside the lock.
                    state.1 += 1;
                    break None;
                }
                state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
            }
        };
        let held = match held {
            Some(held) => held,
            None => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&self.make)) {
                Ok(made) => made,
                Err(panic) => {
                    // Not made after all: another may be.
                    let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                    state.1 -= 1;
                    self.freed.notify_one();
                    std::panic::resume_unwind(panic)
                }
            },
        };
        // Given back however `work` ends (a panic included).
        struct Lent<'a, T> {
            pool: &'a Pool<T>,
            held: Option<T>,
        }
        impl<T> Drop for Lent<'_, T> {
            fn drop(&mut self) {
                if let Some(held) = self.held.take() {
                    let mut state = self.pool.state.lock().unwrap_or_else(|p| p.into_inner());
                    state.0.push(held);
                    self.pool.freed.notify_one();
                }
            }
        }
        let mut lent = Lent {
            pool: self,
            held: Some(held),
        };
        match lent.held.as_mut() {
            Some(held) => work(held),
            None => unreachable!("a lent one is there until dropped"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolate::{Failure, Greeting};

    /// A protocol spoken by shell scripts.
    struct Echo;

    impl Protocol for Echo {
        const NAME: &'static str = "echo";
        const PROTOCOL: u32 = 1;
        type Request = String;
        type Response = String;
    }

    fn shell(script: &str) -> Option<Spec> {
        Some(Spec {
            exe: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            memory_bytes: None,
            memory_setting: "a test",
        })
    }

    /// Greets as `echo` 1 of this build (or as `greeting`), answers `ok` to each line, and
    /// crashes on one that says so.
    fn echo(greeting: Option<Greeting>) -> String {
        let greeting = serde_json::to_string(&greeting.unwrap_or_else(Greeting::of::<Echo>));
        format!(
            r#"echo '{}'; while read l; do case "$l" in *crash*) kill -SEGV $$;; *) echo '{{"answer":"ok"}}';; esac; done"#,
            greeting.unwrap()
        )
    }

    #[test]
    fn a_worker_starts_on_first_use_and_again_after_a_failure() {
        let mut client = Client::<Echo>::new(shell(&echo(None)));
        assert!(!client.running());
        assert_eq!(
            client.request(&"hi".into(), GREETING, None).unwrap_err(),
            CallError::NoWorker
        );
        assert!(client.ready());
        assert_eq!(client.started(), 1);
        let reply = client.request(&"hi".into(), GREETING, None).unwrap();
        assert_eq!(reply.answer, "ok");
        let crashed = client.request(&"crash".into(), GREETING, None);
        assert!(
            matches!(crashed, Err(CallError::Failed(Failure::Crashed { .. }))),
            "{crashed:?}"
        );
        assert!(!client.running());
        assert!(client.ready());
        assert_eq!(client.started(), 2);
        assert_eq!(
            client.request(&"hi".into(), GREETING, None).unwrap().answer,
            "ok"
        );
        client.lose();
        assert!(client.ready() && client.started() == 3);
    }

    #[test]
    fn workers_are_given_up_after_three_failed_starts_in_a_row() {
        let ours = Greeting::of::<Echo>();
        let other = |change: fn(&mut Greeting)| {
            let mut greeting = ours.clone();
            change(&mut greeting);
            echo(Some(greeting))
        };
        for (script, set_up) in [
            // No greeting; another build, protocol, service; a set-up refused.
            ("exit 0".to_string(), false),
            (other(|g| g.version = "0.0.1 (0123456789ab)".into()), false),
            (other(|g| g.protocol = 2), false),
            (other(|g| g.service = "scan".into()), false),
            (echo(None), true),
        ] {
            let mut client = Client::<Echo>::new(shell(&script));
            if set_up {
                client = client.with_setup("set up".into(), |answer| answer == "ready");
            }
            assert!(!client.ready(), "{script}");
            assert_eq!(client.started(), 0, "{script}");
            // Given up: no more starts.
            assert!(!client.ready());
        }
        // A stale worker is named with what it is and what this build is.
        let stale = Worker::start::<Echo>(
            &shell(&other(|g| g.version = "0.0.1 (0123456789ab)".into())).unwrap(),
            None,
        );
        let said = stale.err().unwrap().to_string();
        assert!(
            said.contains("/bin/sh is not this build's worker: it is framecull 0.0.1 (0123456789ab), echo worker protocol 1, this build framecull ")
                && said.contains(framecull_model::VERSION),
            "{said}"
        );
        // A start that failed for a passing reason is tried three times, one that would fail
        // again the same way once.
        let dir = tempfile::tempdir().unwrap();
        let tries = dir.path().join("starts");
        for (then, times) in [
            ("exit 0".to_string(), STARTS_IN_A_ROW),
            (other(|g| g.protocol = 9), 1),
        ] {
            let _ = std::fs::remove_file(&tries);
            let script = format!("echo x >> \"$0\"; {then}");
            let mut client = Client::<Echo>::new(Some(Spec {
                args: vec!["-c".into(), script, tries.display().to_string()],
                ..shell("").unwrap()
            }));
            assert!(!client.ready() && !client.ready());
            let counted = std::fs::read_to_string(&tries).unwrap_or_default();
            assert_eq!(counted.lines().count(), times as usize, "{then}");
        }
        let hung = StartError::Greeting(Failure::TimedOut { after: GREETING });
        assert!(hung.lasts());
        assert!(!StartError::Greeting(Failure::Crashed { signal: 11 }).lasts());
        let mut accepted =
            Client::<Echo>::new(shell(&echo(None))).with_setup("set up".into(), |a| a == "ok");
        assert!(accepted.ready());
        assert!(!Client::<Echo>::new(None).ready());
    }

    #[test]
    fn a_pool_makes_at_most_max_and_lends_them_again() {
        let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = made.clone();
        let pool = Pool::new(2, move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            0u32
        });
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..20 {
                        pool.with(|n| {
                            *n += 1;
                            std::thread::sleep(Duration::from_micros(200));
                        });
                    }
                });
            }
        });
        let made = made.load(std::sync::atomic::Ordering::SeqCst);
        assert!((1..=2).contains(&made), "{made}");
        let lent: u32 = pool.state.lock().unwrap().0.iter().sum();
        assert_eq!(lent, 160);
        // One given back after a panic is lent again.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.with(|_| panic!("work failed"))
        }));
        assert!(caught.is_err());
        assert_eq!(pool.state.lock().unwrap().0.len(), made);
        // A make that panics is not counted: the next one is made.
        let once = std::sync::atomic::AtomicBool::new(false);
        let pool = Pool::new(1, move || {
            assert!(
                once.swap(true, std::sync::atomic::Ordering::SeqCst),
                "first make"
            );
            7u32
        });
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.with(|n| *n)));
        assert!(caught.is_err());
        assert_eq!(pool.with(|n| *n), 7);
    }

    /// After a start that worked, failed starts count from zero again.
    #[test]
    fn failed_starts_count_from_the_last_start_that_worked() {
        let dir = tempfile::tempdir().unwrap();
        let tries = dir.path().join("starts");
        // Starts 1, 2, 4 and 5 exit at once; 3 and 6 greet and serve.
        let script = format!(
            "n=$(cat \"$0\" 2>/dev/null | wc -l); echo x >> \"$0\"; case $n in 0|1|3|4) exit 0;; esac; {}",
            echo(None)
        );
        let mut client = Client::<Echo>::new(Some(Spec {
            args: vec!["-c".into(), script, tries.display().to_string()],
            ..shell("").unwrap()
        }));
        assert!(client.ready() && client.started() == 1);
        assert!(client.request(&"crash".into(), GREETING, None).is_err());
        assert!(client.ready() && client.started() == 2);
        assert_eq!(
            client.request(&"hi".into(), GREETING, None).unwrap().answer,
            "ok"
        );
    }
}
