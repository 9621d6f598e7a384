//! A child process that does FFmpeg work on behalf of this one, so that a decoder that
//! crashes, loops or allocates without end takes down only the child. The child speaks one
//! line of JSON per request and per answer on its stdin and stdout: what a kind of worker is
//! called, speaks and does is its [`Protocol`] and [`Service`] (`scan::worker`,
//! `loader::isolate`), and every worker process runs the one loop [`serve`].
//!
//! Limits: an address-space cap (`RLIMIT_AS`) set in the child before it runs, no core
//! files, and a wall-clock limit per request enforced here (the child is killed). The child
//! is killed when this process ends (`PR_SET_PDEATHSIG`, which follows the thread that
//! started the child: every worker is started by one thread that lives as long as the
//! process), so a killed run leaves no worker behind, and a worker outlives the thread that
//! first used it (a scan's probing threads end; the analysis after it goes on with their
//! workers).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memmap2::MmapMut;
use serde::{Deserialize, Serialize};

mod client;
mod service;
mod wire;
pub use client::{Client, Pool, STARTS_IN_A_ROW};
pub use service::{Protocol, RequestOf, ResponseOf, Service, serve};
pub use wire::{
    Fetched, Reply, RootWire, SourceWire, StorageReport, Stores, absorb, path_from_wire,
    path_to_wire,
};

/// Lines of the child's stderr kept to explain its end.
const STDERR_TAIL: usize = 20;
/// How often [`Worker::call_until`] looks at its stop flag.
pub const STOP_POLL: Duration = Duration::from_millis(100);

/// Why a worker could not be started for use.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot start the worker process: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("the worker process did not greet: {0}")]
    Greeting(#[from] Failure),
    #[error(transparent)]
    Stale(Box<Stale>),
    #[error("unexpected greeting {0:?}")]
    Unexpected(String),
    /// The request each new worker gets first failed ([`Client::with_setup`]).
    #[error("the worker process's set-up failed: {0}")]
    SetupFailed(#[from] CallError),
    #[error("the worker process refused its set-up: {0}")]
    Setup(String),
}

impl StartError {
    /// Whether starting again would fail the same way (no such binary or not one to run,
    /// another build, a worker that hangs or refuses its set-up), so that a [`Client`] gives
    /// workers up at once; not a start the system refused for want of a process or memory.
    pub fn lasts(&self) -> bool {
        match self {
            StartError::Spawn(e) => matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            ),
            StartError::Stale(_) | StartError::Unexpected(_) | StartError::Setup(_) => true,
            StartError::Greeting(failure) => matches!(failure, Failure::TimedOut { .. }),
            StartError::SetupFailed(_) => false,
        }
    }
}

/// A worker that greeted as another build, protocol or service would.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is not this build's worker: it is {theirs}, this build {ours} (a stale binary? \
     FRAMECULL_WORKER_EXE names the one to run)",
    exe.display()
)]
pub struct Stale {
    pub exe: PathBuf,
    pub theirs: Greeting,
    pub ours: Greeting,
}

/// Why a request got no answer. The child is gone after any of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error("decoder crashed: signal {signal} ({name})", name = signal_name(*.signal))]
    Crashed { signal: i32 },
    #[error("timed out after {} s", .after.as_secs_f64().round())]
    TimedOut { after: Duration },
    #[error("over the {} memory limit ({setting})", human_mib(*.limit_bytes))]
    OutOfMemory {
        limit_bytes: u64,
        setting: &'static str,
    },
    #[error("the worker process exited with status {code}{}", tail_suffix(.stderr))]
    Exited { code: i32, stderr: String },
    #[error("cannot talk to the worker process: {0}")]
    Io(String),
    /// The caller asked to stop ([`Worker::call_until`]); the work was abandoned.
    #[error("stopped before the worker answered")]
    Stopped,
}

fn tail_suffix(stderr: &str) -> String {
    match stderr.lines().last() {
        Some(line) if !line.trim().is_empty() => format!(": {}", line.trim()),
        _ => String::new(),
    }
}

fn human_mib(bytes: u64) -> String {
    let mib = bytes as f64 / f64::from(1 << 20);
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

/// The usual name of a fatal signal.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        _ => "signal",
    }
}

/// The descriptor number a worker finds what [`Worker::spawn_sharing`] shares with it under.
pub const SHARED_FD: i32 = 3;

/// How a worker is started and bounded.
#[derive(Debug, Clone)]
pub struct Spec {
    pub exe: PathBuf,
    pub args: Vec<String>,
    /// Address space of the child (`RLIMIT_AS`); `None`: unlimited.
    pub memory_bytes: Option<u64>,
    /// Where a user sets that limit, for the message of a worker that went past it.
    pub memory_setting: &'static str,
}

/// A running worker process.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
    /// The stderr reader: it ends when the child does, with the last lines.
    stderr: Option<JoinHandle<VecDeque<String>>>,
    memory_bytes: Option<u64>,
    memory_setting: &'static str,
}

/// How long a new worker may take to greet, or to answer a set-up.
pub const GREETING: Duration = Duration::from_secs(20);

/// What a worker says first: which service it runs, the protocol it speaks and the build it is
/// (`framecull_model::VERSION`). A worker that says otherwise than this build would is not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Greeting {
    pub service: String,
    pub protocol: u32,
    pub version: String,
}

impl Greeting {
    /// This build's greeting of `P`.
    pub fn of<P: Protocol>() -> Greeting {
        Greeting {
            service: P::NAME.into(),
            protocol: P::PROTOCOL,
            version: framecull_model::VERSION.into(),
        }
    }
}

impl std::fmt::Display for Greeting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "framecull {}, {} worker protocol {}",
            self.version, self.service, self.protocol
        )
    }
}

/// What the thread that starts workers is asked: a command, and where its child goes.
type SpawnJob = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);

/// Start `command` on the one thread that starts every worker and lives as long as this
/// process: a worker ends with the thread that started it (`PR_SET_PDEATHSIG`), so started on
/// a thread that ends, it would die under the next thread to use it. Started here when that
/// thread cannot be made. A process forked from this one (Python's `multiprocessing`) has the
/// parent's memory but not its threads: the thread is found by process id, and a forked child
/// starts its own.
fn spawn(mut command: Command) -> std::io::Result<Child> {
    static SPAWNER: Mutex<Option<(u32, std::sync::mpsc::Sender<SpawnJob>)>> = Mutex::new(None);
    let pid = std::process::id();
    let jobs = {
        let mut spawner = SPAWNER.lock().unwrap_or_else(|p| p.into_inner());
        if spawner.as_ref().is_none_or(|(of, _)| *of != pid) {
            *spawner = start_spawner().map(|jobs| (pid, jobs));
        }
        spawner.as_ref().map(|(_, jobs)| jobs.clone())
    };
    let Some(jobs) = jobs else {
        return command.spawn();
    };
    let (done, started) = channel();
    if let Err(std::sync::mpsc::SendError((mut command, _))) = jobs.send((command, done)) {
        return command.spawn();
    }
    started
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the worker starter thread ended")))
}

/// The thread [`spawn`] hands its commands to; `None` when it cannot be made.
fn start_spawner() -> Option<std::sync::mpsc::Sender<SpawnJob>> {
    let (jobs, todo) = channel::<SpawnJob>();
    std::thread::Builder::new()
        .name("framecull-spawner".into())
        .spawn(move || {
            for (mut command, done) in todo {
                let _ = done.send(command.spawn());
            }
        })
        .ok()
        .map(|_| jobs)
}

impl Worker {
    /// Start a worker (sharing `shared`, see [`Worker::spawn_sharing`]) and check that it
    /// greets as this build's `P` ([`Greeting`]): one of another build, another protocol or
    /// another service is not used.
    pub fn start<P: Protocol>(
        spec: &Spec,
        shared: Option<BorrowedFd<'_>>,
    ) -> Result<Worker, StartError> {
        let mut worker = Worker::spawn_sharing(spec, shared)?;
        let line = worker.receive(GREETING)?;
        let Ok(theirs) = serde_json::from_str::<Greeting>(&line) else {
            return Err(StartError::Unexpected(line));
        };
        let ours = Greeting::of::<P>();
        if theirs != ours {
            return Err(StartError::Stale(Box::new(Stale {
                exe: spec.exe.clone(),
                theirs,
                ours,
            })));
        }
        tracing::debug!(
            "started a {} worker, process {}",
            P::NAME,
            worker.child.id()
        );
        Ok(worker)
    }

    /// Start a worker, which also gets `shared` (memory both map, say) as its descriptor
    /// [`SHARED_FD`]. Its stderr is logged at debug level, the last lines kept.
    pub fn spawn_sharing(spec: &Spec, shared: Option<BorrowedFd<'_>>) -> std::io::Result<Worker> {
        let shared = shared.map(|fd| fd.as_raw_fd());
        let mut command = Command::new(&spec.exe);
        command
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Out of the terminal's process group: Ctrl-C stops the run, which lets the
            // files in flight finish, rather than killing the workers under them.
            .process_group(0);
        if FAULTS_IN_WORKERS.load(Ordering::SeqCst) {
            command.env(framecull_model::FAULTS_ENV, "1");
        }
        let memory = spec.memory_bytes;
        // SAFETY: between fork and exec only async-signal-safe calls are made (prctl,
        // setrlimit, fcntl, dup2).
        unsafe {
            command.pre_exec(move || {
                // Ends with the thread that started it (see `spawn`), even if this process
                // is killed.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                if let Some(fd) = shared {
                    // A descriptor made by dup2 is inherited; one already in place loses its
                    // close-on-exec flag.
                    let kept = if fd == SHARED_FD {
                        libc::fcntl(fd, libc::F_SETFD, 0)
                    } else {
                        libc::dup2(fd, SHARED_FD)
                    };
                    if kept < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(bytes) = memory {
                    let cap = libc::rlimit {
                        rlim_cur: bytes as libc::rlim_t,
                        rlim_max: bytes as libc::rlim_t,
                    };
                    if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut child = spawn(command)?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let stderr_pipe = child
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("no stderr"))?;
        let (tx, lines) = channel();
        std::thread::Builder::new()
            .name("framecull-worker-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let end = line.is_err();
                    if tx.send(line).is_err() || end {
                        break;
                    }
                }
            })?;
        let stderr = std::thread::Builder::new()
            .name("framecull-worker-err".into())
            .spawn(move || {
                let mut tail = VecDeque::with_capacity(STDERR_TAIL);
                for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                    tracing::debug!(target: "framecull::worker", "{line}");
                    if tail.len() == STDERR_TAIL {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
                tail
            })?;
        Ok(Worker {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
            memory_bytes: memory,
            memory_setting: spec.memory_setting,
        })
    }

    /// Send one request line and wait up to `timeout` for the answer line. On a failure the
    /// child has ended (or is killed here) and this worker must not be used again.
    pub fn call(&mut self, request: &str, timeout: Duration) -> Result<String, Failure> {
        self.send(request)?;
        self.receive(timeout)
    }

    /// One request as JSON and its [`Reply`], within `timeout` (abandoned once `stop` is
    /// set, as [`Worker::call_until`]). After a [`CallError::Failed`] this worker must not be
    /// used again; after [`CallError::Unreadable`] it should not be.
    pub fn request<Q: Serialize, A: serde::de::DeserializeOwned>(
        &mut self,
        request: &Q,
        timeout: Duration,
        stop: Option<&AtomicBool>,
    ) -> Result<Reply<A>, CallError> {
        let line = serde_json::to_string(request).map_err(|e| CallError::Encode(e.to_string()))?;
        let answer = match stop {
            Some(stop) => self.call_until(&line, timeout, stop),
            None => self.call(&line, timeout),
        }?;
        serde_json::from_str(&answer).map_err(|e| CallError::Unreadable(e.to_string()))
    }

    /// [`Worker::call`], abandoning the request when `stop` is set: the child is killed at
    /// once (within [`STOP_POLL`]) and the answer is [`Failure::Stopped`]. A long command
    /// stopped by a signal does not wait for the file in flight.
    pub fn call_until(
        &mut self,
        request: &str,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<String, Failure> {
        self.send(request)?;
        let deadline = Instant::now() + timeout;
        loop {
            if stop.load(Ordering::SeqCst) {
                self.kill();
                return Err(Failure::Stopped);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.kill();
                return Err(Failure::TimedOut { after: timeout });
            }
            if let Some(line) = self.next_line(left.min(STOP_POLL))? {
                return Ok(line);
            }
        }
    }

    fn send(&mut self, request: &str) -> Result<(), Failure> {
        assert!(!request.contains('\n'), "a request is one line");
        let sent = self
            .stdin
            .write_all(request.as_bytes())
            .and_then(|()| self.stdin.write_all(b"\n"))
            .and_then(|()| self.stdin.flush());
        sent.map_err(|_| self.ended())
    }

    /// Wait up to `timeout` for the next line the child writes (its greeting, say).
    pub fn receive(&mut self, timeout: Duration) -> Result<String, Failure> {
        match self.next_line(timeout)? {
            Some(line) => Ok(line),
            None => {
                self.kill();
                Err(Failure::TimedOut { after: timeout })
            }
        }
    }

    /// The next line, or `None` when none came within `timeout` (the child runs on).
    fn next_line(&mut self, timeout: Duration) -> Result<Option<String>, Failure> {
        match self.lines.recv_timeout(timeout) {
            Ok(Ok(line)) => Ok(Some(line)),
            Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => Err(self.ended()),
            Err(RecvTimeoutError::Timeout) => Ok(None),
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Why the child ended (waiting for it).
    fn ended(&mut self) -> Failure {
        let status = match self.child.wait() {
            Ok(s) => s,
            Err(e) => return Failure::Io(e.to_string()),
        };
        // The child is gone, so its stderr is at its end: the reader returns the last lines.
        let stderr = self
            .stderr
            .take()
            .and_then(|reader| reader.join().ok())
            .map(|tail| Vec::from(tail).join("\n"))
            .unwrap_or_default();
        // Rust's allocator reports an allocation the address-space cap refused, then aborts.
        let refused = stderr.contains("memory allocation of") || stderr.contains("out of memory");
        match (status.signal(), status.code(), self.memory_bytes) {
            (_, _, Some(limit_bytes)) if refused => Failure::OutOfMemory {
                limit_bytes,
                setting: self.memory_setting,
            },
            (Some(signal), _, _) => Failure::Crashed { signal },
            (None, Some(code), _) => Failure::Exited { code, stderr },
            (None, None, _) => Failure::Io("the worker process ended".into()),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Memory shared with a worker: a `memfd` both map, grown by either side when a window
/// needs more. Only one side touches it at a time: the worker while it answers a request,
/// this process after the answer.
pub struct SharedMemory {
    file: File,
    map: MmapMut,
}

impl SharedMemory {
    /// A new, empty shared memory, to pass to a worker with [`Worker::spawn_sharing`].
    pub fn new() -> std::io::Result<SharedMemory> {
        // SAFETY: a valid C string; the descriptor returned (when not -1) is ours to own.
        let fd = unsafe { libc::memfd_create(c"framecull-window".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened here and is owned by nothing else.
        SharedMemory::of(unsafe { File::from_raw_fd(fd) })
    }

    /// In a worker: the memory its parent shared ([`SHARED_FD`]).
    pub fn inherited() -> std::io::Result<SharedMemory> {
        // SAFETY: the parent put the shared memory at this descriptor
        // (`Worker::spawn_sharing`); nothing else in this process owns it.
        SharedMemory::of(unsafe { File::from_raw_fd(SHARED_FD) })
    }

    /// A descriptor of its own to share, for a [`Client`] that starts workers with it.
    pub fn share(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        Ok(self.file.try_clone()?.into())
    }

    /// The mapped bytes (at least what was last reserved).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    fn of(file: File) -> std::io::Result<SharedMemory> {
        if file.metadata()?.len() == 0 {
            file.set_len(1 << 20)?;
        }
        // SAFETY: the file is a memfd only this process and its worker map, and they take
        // turns (see the type's comment); a worker killed mid-write leaves bytes nobody reads.
        let map = unsafe { MmapMut::map_mut(&file)? };
        Ok(SharedMemory { file, map })
    }

    /// At least `len` bytes mapped: the file grown (with room to spare) when shorter, and
    /// mapped again when the other side grew it.
    pub fn reserve(&mut self, len: usize) -> std::io::Result<()> {
        if self.map.len() >= len {
            return Ok(());
        }
        let have = self.file.metadata()?.len();
        if have < len as u64 {
            self.file
                .set_len((len as u64).next_multiple_of(1 << 20) + (len as u64) / 4)?;
        }
        // SAFETY: as in `of`.
        self.map = unsafe { MmapMut::map_mut(&self.file)? };
        Ok(())
    }
}

/// In a worker that decodes on its main thread: keep freed memory for the next request rather
/// than give it back to the kernel at once. glibc trims the main heap as soon as 128 KiB at its
/// top are free, and a decoder frees and allocates megabytes per window: each window then
/// faulted its pages in again (a loader worker spent a third more time in the kernel than the
/// same decode on a thread of the loader's process, and read shuffled windows 5-10% slower).
pub fn keep_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets the allocator's thresholds; it takes the allocator's lock.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}

/// The executable a program that embeds the library names as its worker when
/// `FRAMECULL_WORKER_EXE` is not set: the Python package, whose wheel carries `framecull`.
static EMBEDDED_WORKER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Names `exe` as the worker executable of this process when `FRAMECULL_WORKER_EXE` is not
/// set. The first call counts; false when an earlier call named another.
pub fn set_worker_exe(exe: PathBuf) -> bool {
    EMBEDDED_WORKER_EXE.get_or_init(|| exe.clone()) == &exe
}

/// The `framecull` executable that serves as a worker: `FRAMECULL_WORKER_EXE` when set (empty:
/// none, work stays in this process), else the one named by [`set_worker_exe`], else this
/// process's own executable when it is `framecull`, else a `framecull` beside it or one
/// folder up (a test or benchmark binary in a Cargo target folder).
pub fn worker_exe() -> Option<PathBuf> {
    if let Some(exe) = std::env::var_os("FRAMECULL_WORKER_EXE") {
        return (!exe.is_empty()).then(|| PathBuf::from(exe));
    }
    if let Some(exe) = EMBEDDED_WORKER_EXE.get() {
        return Some(exe.clone());
    }
    let own = std::env::current_exe().ok()?;
    if own.file_stem().is_some_and(|s| s == "framecull") {
        return Some(own);
    }
    // Replaced on disk since it started (an upgrade): its own image, not the new build,
    // which would greet as another version.
    if own.file_name().is_some_and(|s| s == "framecull (deleted)") {
        return Some(PathBuf::from("/proc/self/exe"));
    }
    let dir = own.parent()?;
    [dir.join("framecull"), dir.parent()?.join("framecull")]
        .into_iter()
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether the workers this process starts inject faults ([`inject_faults_in_workers`]).
static FAULTS_IN_WORKERS: AtomicBool = AtomicBool::new(false);

/// Test support: the workers this process starts from now on inject faults
/// ([`framecull_model::FAULTS_ENV`] in their environment), while this process does not (a
/// test that reads a `framecull-fault-*` file through a worker, in the test's own process).
pub fn inject_faults_in_workers() {
    FAULTS_IN_WORKERS.store(true, Ordering::SeqCst);
}

/// Test support, where fault injection is on ([`framecull_model::faults_on`]): misbehave on
/// a file whose name starts with `framecull-fault-crash` (SIGSEGV), `framecull-fault-hang`
/// (loop for ever) or `framecull-fault-alloc` (allocate until refused), as a broken decoder
/// would. Otherwise nothing.
pub fn inject_fault(path: &str) {
    if !framecull_model::faults_on() {
        return;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let named = |fault: &str| name.starts_with(&format!("framecull-fault-{fault}"));
    if named("crash") {
        // SAFETY: not safe at all, on purpose: a write through a null pointer, as a broken
        // decoder makes; the process ends with SIGSEGV.
        unsafe {
            std::ptr::null_mut::<u8>().write_volatile(1);
        }
    }
    if named("hang") {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    if named("alloc") {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![1u8; 256 << 20]);
            std::hint::black_box(&hoard);
        }
    }
}

/// How long a worker gets for a unit of work whose own time budget is `budget` (the decode
/// stops itself there) before it is taken for hung and killed: the budget, plus the time to
/// finish and answer (the budget again, within 2 to 30 s).
pub fn hard_limit(budget: Duration) -> Duration {
    budget + budget.clamp(Duration::from_secs(2), Duration::from_secs(30))
}

/// Why a [`Worker::request`] has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The request cannot be written (a bug).
    #[error("cannot send the request to the worker: {0}")]
    Encode(String),
    /// The worker crashed, hung, ran out of memory or exited, or the call was stopped.
    #[error(transparent)]
    Failed(#[from] Failure),
    /// Its answer is not one of the protocol's.
    #[error("the worker's answer is unreadable: {0}")]
    Unreadable(String),
    /// No worker runs ([`Client::ready`] first).
    #[error("no worker process")]
    NoWorker,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    /// A worker's measures cross the pipe bit for bit (serde_json's `float_roundtrip`):
    /// without it, 7600000 us as 7600000 x 1e-6 read back one bit off, and a file analysed in
    /// a worker differed from one analysed here in its last bits.
    #[test]
    fn floats_cross_the_pipe_bit_for_bit() {
        let mut x = 1.0f64;
        for v in [
            7600000.0f64 * 1e-6,
            119.541_498_161_764_71,
            1.001,
            13.146_466_666_666_669,
        ] {
            let back: f64 = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{v}");
        }
        for _ in 0..10_000 {
            x = (x * 1.000_001_3 + 0.1).fract() * 1000.0;
            let back: f64 = serde_json::from_str(&serde_json::to_string(&x).unwrap()).unwrap();
            assert_eq!(back.to_bits(), x.to_bits(), "{x}");
        }
    }

    #[test]
    fn a_budget_gets_itself_again_within_2_to_30_s_and_a_path_crosses_byte_for_byte() {
        for (budget, limit) in [(0, 2), (1, 3), (10, 20), (60, 90)] {
            assert_eq!(
                hard_limit(Duration::from_secs(budget)),
                Duration::from_secs(limit)
            );
        }
        let odd = PathBuf::from(std::ffi::OsString::from_vec(b"a\xffb\nc.mp4".to_vec()));
        assert_eq!(path_from_wire(path_to_wire(&odd)), odd);
    }
}
