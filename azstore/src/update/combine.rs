//! In-process combining: concurrent updates of one resource within one process share one
//! read and one conditional write.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::{Decision, Outcome, UpdatePolicy, Versioned, update};
use crate::error::{Error, ErrorKind, Result};

type Job<T> = Box<dyn FnMut(Option<&T>) -> Decision<T> + Send>;

struct Queued<T> {
    decide: Job<T>,
    reply: oneshot::Sender<Result<Outcome<T>>>,
}

struct Queue<T> {
    jobs: Vec<Queued<T>>,
    /// Whether a task is draining the queue.
    running: bool,
}

struct Inner<R: Versioned> {
    resource: R,
    policy: UpdatePolicy,
    queue: Mutex<Queue<R::Value>>,
}

/// Combines concurrent [`update`]s of one resource made *within one process*: while one
/// read + conditional write is in flight, new updates queue up; the next round reads once,
/// applies every queued closure in arrival order (each sees the previous one's result) and
/// writes once. Under in-process contention this replaces N conflicting round trips by one.
///
/// Each closure keeps the semantics of [`update`]: it may run several times and must be free
/// of side effects. A closure that aborts fails only its own call (its change is left out);
/// the others still commit. Every caller's [`Outcome`] reports the combined write (its
/// `value` is the value after all closures of the round, `attempts`/`conflicts` those of the
/// round). Writers in *other* processes are handled as by [`update`]: conflicts are retried.
///
/// Clones share the queue. The rounds run on a spawned tokio task, so a caller that stops
/// waiting does not stall the others.
///
/// ```no_run
/// use azstore::update::{Combiner, Decision, UpdatePolicy};
/// use azstore::blob::{BlobJson};
/// # async fn run(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let counter = Combiner::new(BlobJson::<u64>::new(blob), UpdatePolicy::default());
/// let tasks: Vec<_> = (0..100)
///     .map(|_| {
///         let c = counter.clone();
///         tokio::spawn(async move {
///             c.update(|n| Decision::Write(n.copied().unwrap_or(0) + 1)).await
///         })
///     })
///     .collect();
/// for t in tasks {
///     t.await.expect("task")?;
/// }
/// # Ok(()) }
/// ```
pub struct Combiner<R: Versioned> {
    inner: Arc<Inner<R>>,
}

impl<R: Versioned> Clone for Combiner<R> {
    fn clone(&self) -> Self {
        Combiner {
            inner: self.inner.clone(),
        }
    }
}

impl<R: Versioned> std::fmt::Debug for Combiner<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Combiner").finish_non_exhaustive()
    }
}

impl<R> Combiner<R>
where
    R: Versioned + 'static,
    R::Value: Clone + 'static,
{
    /// Combines updates of `resource` made through this value (and its clones), each round
    /// retried under `policy`. Needs a tokio runtime (the rounds run on a spawned task).
    ///
    /// ```no_run
    /// use azstore::update::{Combiner, UpdatePolicy};
    /// use azstore::blob::{BlobJson};
    /// # async fn demo(blob: azstore::blob::BlobClient) {
    /// let hits = Combiner::new(BlobJson::<u64>::new(blob), UpdatePolicy::default());
    /// # let _ = hits; }
    /// ```
    pub fn new(resource: R, policy: UpdatePolicy) -> Combiner<R> {
        Combiner {
            inner: Arc::new(Inner {
                resource,
                policy,
                queue: Mutex::new(Queue {
                    jobs: Vec::new(),
                    running: false,
                }),
            }),
        }
    }

    /// The resource.
    ///
    /// ```no_run
    /// use azstore::update::{Combiner};
    /// use azstore::blob::{BlobJson};
    /// # fn demo(hits: Combiner<BlobJson<u64>>) {
    /// println!("combining updates of {}", hits.resource().blob().name());
    /// # }
    /// ```
    pub fn resource(&self) -> &R {
        &self.inner.resource
    }

    /// Like [`update`], combined with the other updates in flight on this combiner.
    ///
    /// ```no_run
    /// use azstore::update::{Combiner, Decision};
    /// use azstore::blob::{BlobJson};
    /// # async fn demo(hits: Combiner<BlobJson<u64>>) -> azstore::Result<()> {
    /// let outcome = hits.update(|n| Decision::Write(n.copied().unwrap_or(0) + 1)).await?;
    /// println!("{:?} after this round", outcome.value);
    /// # Ok(()) }
    /// ```
    pub async fn update<F>(&self, decide: F) -> Result<Outcome<R::Value>>
    where
        F: FnMut(Option<&R::Value>) -> Decision<R::Value> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut q = self.inner.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.jobs.push(Queued {
                decide: Box::new(decide),
                reply,
            });
            !std::mem::replace(&mut q.running, true)
        };
        if start {
            tokio::spawn(drain(self.inner.clone()));
        }
        answer
            .await
            .map_err(|_| Error::new(ErrorKind::Service, "the combining task ended unexpectedly"))?
    }
}

async fn drain<R>(inner: Arc<Inner<R>>)
where
    R: Versioned + 'static,
    R::Value: Clone + 'static,
{
    loop {
        let jobs = {
            let mut q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
            if q.jobs.is_empty() {
                q.running = false;
                return;
            }
            std::mem::take(&mut q.jobs)
        };
        round(&inner, jobs).await;
    }
}

/// One read-apply-all-write round (with `update`'s retries) for a batch of jobs.
async fn round<R>(inner: &Inner<R>, mut jobs: Vec<Queued<R::Value>>)
where
    R: Versioned,
    R::Value: Clone,
{
    let mut results: Vec<Option<Error>> = Vec::with_capacity(jobs.len());
    let outcome = update(&inner.resource, &inner.policy, |current| {
        results.clear();
        // `None`: nothing changed yet; `Some(v)`: the value after the closures so far.
        let mut next: Option<Option<R::Value>> = None;
        for job in jobs.iter_mut() {
            let view = match &next {
                None => current,
                Some(v) => v.as_ref(),
            };
            match (job.decide)(view) {
                Decision::Write(v) => {
                    next = Some(Some(v));
                    results.push(None);
                }
                Decision::Delete => {
                    next = Some(None);
                    results.push(None);
                }
                Decision::NoChange => results.push(None),
                Decision::Abort(e) => results.push(Some(e)),
            }
        }
        match next {
            None => Decision::NoChange,
            Some(Some(v)) => Decision::Write(v),
            Some(None) => Decision::Delete,
        }
    })
    .await;
    for (job, aborted) in jobs
        .into_iter()
        .zip(results.into_iter().chain(std::iter::repeat_with(|| None)))
    {
        let answer = match (&outcome, aborted) {
            (_, Some(e)) => Err(e),
            (Ok(o), None) => Ok(o.clone()),
            (Err(e), None) => Err(e.duplicate()),
        };
        let _ = job.reply.send(answer);
    }
}
