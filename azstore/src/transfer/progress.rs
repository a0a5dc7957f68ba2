//! Progress of a transfer: bytes done out of the total, reported to a callback or a `watch`
//! channel.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// How far one transfer has come.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::DownloadOptions;
/// use azstore::transfer::{Progress, TransferProgress};
/// let progress = Progress::callback(|p: TransferProgress| {
///     if let Some(f) = p.fraction() {
///         eprint!("\r{:5.1} %", f * 100.0);
///     }
/// });
/// blob.download_to_file("/tmp/big.bin", &DownloadOptions::default().progress(progress)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TransferProgress {
    /// Bytes done: downloaded and stored (written to the file or buffer, or handed to the
    /// stream), or uploaded and acknowledged by the service.
    pub bytes: u64,
    /// Size of the whole transfer, when known: always for downloads and for uploads from bytes
    /// or a file; `None` for a reader or stream of unknown length until it has ended.
    pub total: Option<u64>,
}

impl TransferProgress {
    /// `bytes / total` in `0.0..=1.0`, when the total is known (`1.0` for an empty transfer).
    ///
    /// ```
    /// use azstore::transfer::TransferProgress;
    /// let mut p = TransferProgress::default();
    /// assert_eq!(p.fraction(), None); // total unknown
    /// p.total = Some(200);
    /// p.bytes = 50;
    /// assert_eq!(p.fraction(), Some(0.25));
    /// ```
    pub fn fraction(&self) -> Option<f64> {
        self.total.map(|t| {
            if t == 0 {
                1.0
            } else {
                self.bytes as f64 / t as f64
            }
        })
    }
}

/// Where a transfer reports its progress: a callback, or the sending half of a `watch`
/// channel. Cheap to clone; put it into the options of a transfer.
///
/// Reports arrive once per completed range or block (not per network packet), in order, with
/// `bytes` never decreasing — except that a download restarted by
/// [`OnChange::Restart`](crate::blob::OnChange::Restart) starts over from 0.
///
/// ```
/// use azstore::transfer::Progress;
/// let (progress, mut rx) = Progress::channel();
/// // pass `progress` in DownloadOptions / UploadOptions / TransferOptions, then e.g.
/// // while rx.changed().await.is_ok() { let p = *rx.borrow(); ... }
/// # let _ = (progress, rx.borrow().bytes);
/// let logged = Progress::callback(|p| eprintln!("{} of {:?} bytes", p.bytes, p.total));
/// # let _ = logged;
/// ```
#[derive(Clone)]
pub struct Progress {
    sink: Arc<dyn Fn(TransferProgress) + Send + Sync>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress { .. }")
    }
}

impl Progress {
    /// Calls `f` with every report. It runs on the transfer's tasks while a lock is held:
    /// keep it quick (update a counter or a progress bar, send to a channel).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use azstore::transfer::Progress;
    /// let done = Arc::new(AtomicU64::new(0));
    /// let seen = done.clone();
    /// let progress = Progress::callback(move |p| seen.store(p.bytes, Ordering::Relaxed));
    /// # let _ = progress;
    /// ```
    pub fn callback(f: impl Fn(TransferProgress) + Send + Sync + 'static) -> Progress {
        Progress { sink: Arc::new(f) }
    }

    /// A `watch` channel: the receiver always holds the latest report.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::TransferOptions;
    /// use azstore::transfer::Progress;
    /// let (progress, mut rx) = Progress::channel();
    /// tokio::spawn(async move {
    ///     while rx.changed().await.is_ok() {
    ///         let p = *rx.borrow();
    ///         println!("{} of {:?} bytes", p.bytes, p.total);
    ///     }
    /// });
    /// file.download_to_file("/tmp/copy.bin", &TransferOptions::default().progress(progress)).await?;
    /// # Ok(()) }
    /// ```
    pub fn channel() -> (Progress, watch::Receiver<TransferProgress>) {
        let (tx, rx) = watch::channel(TransferProgress::default());
        let progress = Progress::callback(move |p| {
            tx.send_replace(p);
        });
        (progress, rx)
    }
}

/// The counter one transfer updates; reports to the caller's [`Progress`], if any.
#[derive(Debug)]
pub(crate) struct Tracker {
    sink: Option<Progress>,
    state: Mutex<TransferProgress>,
}

impl Tracker {
    pub(crate) fn new(sink: Option<&Progress>) -> Arc<Tracker> {
        Arc::new(Tracker {
            sink: sink.cloned(),
            state: Mutex::new(TransferProgress::default()),
        })
    }

    fn update(&self, f: impl FnOnce(&mut TransferProgress)) {
        if let Some(sink) = &self.sink {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut state);
            (sink.sink)(*state);
        }
    }

    /// (Re)starts at 0 bytes of `total`.
    pub(crate) fn start(&self, total: Option<u64>) {
        self.update(|s| *s = TransferProgress { bytes: 0, total });
    }

    /// `n` more bytes are done.
    pub(crate) fn add(&self, n: u64) {
        self.update(|s| s.bytes += n);
    }

    /// The total became known (a reader or stream ended).
    pub(crate) fn finish(&self, total: u64) {
        self.update(|s| s.total = Some(total));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn channel_sees_monotonic_reports() {
        let (p, rx) = Progress::channel();
        let t = Tracker::new(Some(&p));
        t.start(Some(10));
        t.add(4);
        t.add(6);
        assert_eq!(
            *rx.borrow(),
            TransferProgress {
                bytes: 10,
                total: Some(10)
            }
        );
        assert_eq!(rx.borrow().fraction(), Some(1.0));
        let unknown = Tracker::new(Some(&p));
        unknown.start(None);
        unknown.add(3);
        assert_eq!(rx.borrow().fraction(), None);
        unknown.finish(3);
        assert_eq!(rx.borrow().total, Some(3));
        // Without a sink nothing is reported (and nothing is locked).
        Tracker::new(None).add(1);
    }
}
