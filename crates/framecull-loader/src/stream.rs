//! An epoch read on a thread that owns the loader, for front ends that cannot hold a borrow
//! of the loader between calls (the Python package): batches arrive over a channel, already
//! in host memory, and the loader comes back when the stream is finished.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use super::plan::PlannedBatch;
use super::{Batch, BatchData, Epoch, Loader, LoaderError, Stats};

/// Which of an epoch's batches a consumer takes: those whose index in the plan leaves
/// `index` when divided by `count`. Consumers with the shares `0..count` together take every
/// batch once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub index: usize,
    pub count: usize,
}

impl Share {
    pub const ALL: Share = Share { index: 0, count: 1 };

    pub fn takes(self, batch: usize) -> bool {
        batch % self.count.max(1) == self.index
    }
}

/// One batch as the stream delivers it, with the loader's statistics after it.
pub type Delivered = (Result<Batch, LoaderError>, Stats);

/// A running epoch. Drop it or call [`EpochStream::finish`] to stop it early.
pub struct EpochStream {
    rx: Option<Receiver<Delivered>>,
    thread: Option<JoinHandle<Loader>>,
    batches: usize,
}

/// What waiting for the next batch gave.
pub enum Next {
    Batch(Box<Delivered>),
    /// Nothing yet: ask again (a caller can check for interrupts meanwhile).
    Pending,
    /// The epoch is over.
    End,
}

impl Loader {
    /// Read `share` of `epoch` on a thread of its own that owns the loader, leaving out the
    /// share's first `skip` batches (an epoch resumed where a preempted run stopped). GPU
    /// batches are read back to host memory there.
    pub fn stream(
        mut self,
        epoch: u64,
        share: Share,
        skip: usize,
    ) -> Result<EpochStream, LoaderError> {
        // Planned once: the count here, the batches on the thread.
        let mut planned = self.plan_share(epoch, share);
        planned.drain(..skip.min(planned.len()));
        let batches = planned.len();
        // One batch waits in the channel while the consumer holds the previous one.
        let (tx, rx) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("loader-stream".into())
            .spawn(move || {
                run(&mut self, planned, &tx);
                self
            })
            .map_err(|e| LoaderError::Config(format!("cannot start the loader's thread: {e}")))?;
        Ok(EpochStream {
            rx: Some(rx),
            thread: Some(thread),
            batches,
        })
    }
}

fn run(loader: &mut Loader, planned: Vec<(usize, PlannedBatch)>, tx: &SyncSender<Delivered>) {
    let mut epoch = Epoch::start(loader, planned);
    while let Some(batch) = epoch.next() {
        let batch = batch.and_then(|mut batch| {
            if matches!(batch.data, BatchData::Gpu(_)) {
                batch.data = BatchData::Host(epoch.to_host(&batch)?);
            }
            Ok(batch)
        });
        if tx.send((batch, epoch.stats().clone())).is_err() {
            return;
        }
    }
}

impl EpochStream {
    /// Batches this epoch delivers (a failed window only shortens its batch).
    pub fn len(&self) -> usize {
        self.batches
    }

    pub fn is_empty(&self) -> bool {
        self.batches == 0
    }

    /// The next batch, waiting at most `timeout`.
    pub fn next_timeout(&mut self, timeout: Duration) -> Next {
        let Some(rx) = &self.rx else {
            return Next::End;
        };
        match rx.recv_timeout(timeout) {
            Ok(delivered) => Next::Batch(Box::new(delivered)),
            Err(RecvTimeoutError::Timeout) => Next::Pending,
            Err(RecvTimeoutError::Disconnected) => Next::End,
        }
    }

    /// Stop reading (the batch being assembled is finished first) and give the loader back.
    pub fn finish(mut self) -> Result<Loader, LoaderError> {
        self.rx = None;
        self.thread
            .take()
            .ok_or_else(|| LoaderError::Config("the stream was finished".into()))?
            .join()
            .map_err(|_| LoaderError::Config("the loader's thread panicked".into()))
    }
}

impl Drop for EpochStream {
    fn drop(&mut self) {
        self.rx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_split_an_epoch_without_overlap() {
        let count = 3;
        for batch in 0..20 {
            let takers = (0..count)
                .filter(|&index| Share { index, count }.takes(batch))
                .count();
            assert_eq!(takers, 1, "batch {batch}");
        }
        assert!((0..20).all(|b| Share::ALL.takes(b)));
    }
}
