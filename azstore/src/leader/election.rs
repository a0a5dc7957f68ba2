//! [`Election`]: one leader among campaigners on one lock; [`Leadership`], [`Leader`].

use std::fmt;
use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::backends::{Campaign, Seen, check_timing};
use crate::error::{Error, Result};
use crate::lease::{Leasable, LeaseLoss};
pub(crate) use crate::lock::Liveness;
use crate::lock::{Held, LockOwner};

/// Who leads, as followers see it: the leader's identity and its epoch.
///
/// ```no_run
/// # async fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) -> azstore::Result<()> {
/// if let Some(leader) = election.leader().await? {
///     println!("{} leads in epoch {}", leader.identity, leader.epoch);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// The leader's identity: its lock label, else `host:pid`.
    pub identity: String,
    /// The leader's epoch (its fencing token).
    pub epoch: u64,
}

impl fmt::Display for Leader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (epoch {})", self.identity, self.epoch)
    }
}

/// The identity of a lock owner: its label, else `host:pid`.
pub(crate) fn identity_of(owner: &LockOwner) -> String {
    match &owner.label {
        Some(l) => l.clone(),
        None => format!("{}:{}", owner.host, owner.pid.unwrap_or(0)),
    }
}

/// This process's identity for a lock labelled `label`.
pub(crate) fn own_identity(label: Option<&str>) -> String {
    match label {
        Some(l) => l.to_string(),
        None => format!("{}:{}", crate::lock::hostname(), std::process::id()),
    }
}

impl Liveness {
    pub(crate) fn alive(&mut self, seen: &Seen, lease: Duration) -> bool {
        self.alive_parts(seen.held, seen.version.as_deref(), lease)
    }
}

/// Options of an [`Election`]. The lease duration, renew interval and safety margin are the
/// lock's ([`LockOptions`](crate::lock::LockOptions)); [`Election::new`] checks them.
///
/// ```
/// use std::time::Duration;
/// let options = azstore::leader::ElectionOptions::default().observe_every(Duration::from_millis(500));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct ElectionOptions {
    pub(crate) observe_every: Duration,
}

impl Default for ElectionOptions {
    /// Observers read the lock's status once a second.
    fn default() -> Self {
        ElectionOptions {
            observe_every: Duration::from_secs(1),
        }
    }
}

impl ElectionOptions {
    /// How often [`Election::observe`] reads the lock's status (default 1 s; positive and
    /// shorter than the lease). One read per interval per observer.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::leader::ElectionOptions::default().observe_every(Duration::from_secs(2));
    /// # let _ = options;
    /// ```
    pub fn observe_every(mut self, v: Duration) -> Self {
        self.observe_every = v;
        self
    }
}

/// An election on one lock: [`campaign`](Self::campaign) to lead,
/// [`observe`](Self::observe) to follow. Cheap to clone.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::lease::LeaseDuration;
/// use azstore::leader::{Election, ElectionOptions};
/// use azstore::lock::{LockOptions};
/// use azstore::blob::{BlobLock};
///
/// let options = LockOptions::default().duration(LeaseDuration::seconds(15)?).label("replica-1");
/// let election = Election::new(
///     BlobLock::with_options(container, "primary", options)?,
///     ElectionOptions::default(),
/// )?;
/// let leadership = election.campaign().await?;
/// println!("leading in epoch {}", leadership.epoch());
/// tokio::select! {
///     loss = leadership.lost() => eprintln!("lost the leadership: {loss}"),
///     _ = async { /* act as the primary, passing leadership.epoch() with every write */ } => {}
/// }
/// leadership.resign().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election<C: Campaign> {
    lock: C,
    options: ElectionOptions,
    identity: String,
    lease: Duration,
}

impl<C: Campaign> Election<C> {
    /// An election on `lock`. Checked here, before any request: the lock's lease must be
    /// fixed (15–60 s), its renew schedule must allow two renewals before the loss is
    /// reported, its safety margin must be at least 1 s, and the observe interval positive
    /// and shorter than the lease. The errors name the option to change.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
    /// let election = azstore::leader::Election::new(lock, azstore::leader::ElectionOptions::default())?;
    /// println!("campaigning as {}", election.identity());
    /// # Ok(()) }
    /// ```
    pub fn new(lock: C, options: ElectionOptions) -> Result<Election<C>> {
        let lease = check_timing(&lock.timing()?)?;
        if options.observe_every.is_zero() || options.observe_every >= lease {
            return Err(Error::invalid_input(format!(
                "the observe interval {:?} must be positive and shorter than the lease {lease:?}: \
                 set ElectionOptions::observe_every",
                options.observe_every
            )));
        }
        let identity = own_identity(lock.label());
        Ok(Election {
            lock,
            options,
            identity,
            lease,
        })
    }

    /// This campaigner's identity: the lock's label, else `host:pid`.
    ///
    /// ```no_run
    /// # fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) {
    /// println!("I am {}", election.identity());
    /// # }
    /// ```
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The lock campaigned on.
    ///
    /// ```no_run
    /// # fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) {
    /// println!("{}", election.lock().blob().url());
    /// # }
    /// ```
    pub fn lock(&self) -> &C {
        &self.lock
    }

    /// Waits until this campaigner leads. Transient failures are ridden out (retried after
    /// a second); other errors are returned. The previous leader's resignation hands over at
    /// once (a local campaigner is woken; others poll within the lock's poll interval); a
    /// crashed leader is replaced once its lease ends.
    ///
    /// ```no_run
    /// # async fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) -> azstore::Result<()> {
    /// loop {
    ///     let leadership = election.campaign().await?;
    ///     let loss = leadership.lost().await; // lead until the lease can no longer be vouched for
    ///     eprintln!("lost the leadership ({loss}); campaigning again");
    /// }
    /// # }
    /// ```
    pub async fn campaign(&self) -> Result<Leadership<C::Lease>> {
        loop {
            if let Some(l) = self.campaign_within(Duration::from_secs(3600)).await? {
                return Ok(l);
            }
        }
    }

    /// Like [`campaign`](Self::campaign), giving up after `wait` (`None` then).
    ///
    /// ```no_run
    /// # async fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// match election.campaign_within(Duration::from_secs(5)).await? {
    ///     Some(leadership) => leadership.resign().await?,
    ///     None => println!("someone else leads"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn campaign_within(&self, wait: Duration) -> Result<Option<Leadership<C::Lease>>> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lock.campaign_within(left).await {
                Ok(Some(held)) => {
                    return Ok(Some(Leadership {
                        held,
                        identity: self.identity.clone(),
                    }));
                }
                Ok(None) => return Ok(None),
                Err(e) if e.is_retryable() => {
                    tracing::debug!(error = %e, "transient failure while campaigning");
                    if Instant::now() + Duration::from_secs(1) >= deadline {
                        return Err(e);
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The current leader, from one status read (`None`: nobody leads). On Cosmos DB one read
    /// cannot tell a crashed leader from a live one; [`observe`](Self::observe) can.
    ///
    /// ```no_run
    /// # async fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) -> azstore::Result<()> {
    /// match election.leader().await? {
    ///     Some(l) => println!("leader: {l}"),
    ///     None => println!("no leader"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn leader(&self) -> Result<Option<Leader>> {
        let seen = self.lock.campaign_status().await?;
        Ok(leader_of(&seen, true))
    }

    /// Follows the leadership without campaigning: a background task reads the lock's status
    /// every [`ElectionOptions::observe_every`] and publishes each change of leader (identity
    /// and epoch; `None` while nobody leads). A Cosmos DB leader that stopped renewing shows
    /// as gone once its record is unchanged for a lease duration. The task stops when every
    /// receiver is dropped; read failures keep the last value.
    ///
    /// ```no_run
    /// # async fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) {
    /// let mut leaders = election.observe();
    /// while leaders.changed().await.is_ok() {
    ///     match &*leaders.borrow() {
    ///         Some(l) => println!("now led by {l}"),
    ///         None => println!("no leader"),
    ///     }
    /// }
    /// # }
    /// ```
    pub fn observe(&self) -> watch::Receiver<Option<Leader>> {
        let (tx, rx) = watch::channel(None);
        let lock = self.lock.clone();
        let every = self.options.observe_every;
        let lease = self.lease;
        tokio::spawn(async move {
            let mut live = Liveness::default();
            loop {
                match lock.campaign_status().await {
                    Ok(seen) => {
                        let alive = live.alive(&seen, lease);
                        let now = leader_of(&seen, alive);
                        tx.send_if_modified(|cur| {
                            let changed = *cur != now;
                            *cur = now;
                            changed
                        });
                    }
                    Err(e) => tracing::debug!(error = %e, "observing a leader: status read failed"),
                }
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = tx.closed() => return,
                }
            }
        });
        rx
    }
}

fn leader_of(seen: &Seen, alive: bool) -> Option<Leader> {
    if !(seen.held && alive) {
        return None;
    }
    Some(Leader {
        identity: seen
            .owner
            .as_ref()
            .map_or_else(|| "unknown".to_string(), identity_of),
        epoch: seen.epoch.unwrap_or(0),
    })
}

/// Being the leader: the held lock (renewed in the background) with its epoch. Resign with
/// [`resign`](Self::resign); dropping it resigns in the background.
///
/// ```no_run
/// # async fn demo(election: azstore::leader::Election<azstore::blob::BlobLock>) -> azstore::Result<()> {
/// let leadership = election.campaign().await?;
/// for step in 0..10 {
///     leadership.check()?; // stop at once when the leadership can no longer be vouched for
///     println!("step {step} as leader of epoch {}", leadership.epoch());
/// }
/// leadership.resign().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a Leadership resigns it"]
pub struct Leadership<T: Leasable> {
    held: Held<T>,
    identity: String,
}

impl<T: Leasable> fmt::Debug for Leadership<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("identity", &self.identity)
            .field("epoch", &self.epoch())
            .finish()
    }
}

impl<T: Leasable> Leadership<T> {
    /// The epoch: the lock's fencing token, larger than every earlier leader's. Pass it with
    /// every write and have the resource refuse an epoch smaller than the largest it has seen:
    /// that, not the lease, is what stops a paused old leader.
    ///
    /// ```no_run
    /// # fn demo(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) {
    /// println!("epoch {}", leadership.epoch());
    /// # }
    /// ```
    pub fn epoch(&self) -> u64 {
        self.held.fencing_token()
    }

    /// The leader's identity (this campaigner's).
    ///
    /// ```no_run
    /// # fn demo(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) {
    /// println!("{} leads", leadership.identity());
    /// # }
    /// ```
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Completes when the leadership is (possibly) lost, before the lease can expire (by the
    /// lock's safety margin).
    ///
    /// ```no_run
    /// # async fn demo(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) {
    /// let loss = leadership.lost();
    /// tokio::spawn(async move { eprintln!("stepping down: {}", loss.await) });
    /// # }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LeaseLoss> + Send + 'static {
        self.held.lost()
    }

    /// True while the leadership is certainly held (see [`Held::is_held`]).
    ///
    /// ```no_run
    /// # fn demo(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) {
    /// if !leadership.is_leader() { eprintln!("no longer leader"); }
    /// # }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.held.is_held()
    }

    /// `Ok(())` while leading, else an error with `lease_lost() == true`.
    ///
    /// ```no_run
    /// # fn demo(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// leadership.check()?;
    /// # Ok(()) }
    /// ```
    pub fn check(&self) -> Result<()> {
        self.held.check()
    }

    /// The held lock.
    ///
    /// ```no_run
    /// # fn demo(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) {
    /// println!("lease {}", leadership.held().lease_id());
    /// # }
    /// ```
    pub fn held(&self) -> &Held<T> {
        &self.held
    }

    /// Hands the leadership over at once: releases the lock, so the next campaigner takes
    /// over within its poll interval instead of waiting out the lease.
    ///
    /// ```no_run
    /// # async fn demo(leadership: azstore::leader::Leadership<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// leadership.resign().await?; // e.g. on SIGTERM
    /// # Ok(()) }
    /// ```
    pub async fn resign(self) -> Result<()> {
        self.held.release().await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(held: bool, version: Option<&str>) -> Seen {
        Seen {
            held,
            epoch: Some(7),
            owner: None,
            version: version.map(str::to_string),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_record_unchanged_for_a_lease_counts_as_gone() {
        let lease = Duration::from_secs(15);
        let mut live = Liveness::default();
        assert!(live.alive(&seen(true, Some("e1")), lease));
        tokio::time::advance(Duration::from_secs(14)).await;
        assert!(live.alive(&seen(true, Some("e1")), lease));
        // A renewal changes the version: the holder is alive, the count restarts.
        assert!(live.alive(&seen(true, Some("e2")), lease));
        tokio::time::advance(Duration::from_secs(14)).await;
        assert!(live.alive(&seen(true, Some("e2")), lease));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!live.alive(&seen(true, Some("e2")), lease));
        // Without versions (Blob, Redis) the backend's word is final.
        let mut plain = Liveness::default();
        assert!(plain.alive(&seen(true, None), lease));
        tokio::time::advance(Duration::from_secs(600)).await;
        assert!(plain.alive(&seen(true, None), lease));
        assert!(!plain.alive(&seen(false, None), lease));
    }

    #[test]
    fn leaders_are_named_by_label_or_host_and_pid() {
        let owner = LockOwner {
            host: "h".into(),
            pid: Some(9),
            label: None,
            acquired_at: None,
        };
        assert_eq!(identity_of(&owner), "h:9");
        let s = Seen {
            owner: Some(LockOwner {
                label: Some("primary-a".into()),
                ..owner
            }),
            ..seen(true, None)
        };
        assert_eq!(
            leader_of(&s, true),
            Some(Leader {
                identity: "primary-a".into(),
                epoch: 7
            })
        );
        assert_eq!(leader_of(&s, false), None);
        assert_eq!(leader_of(&seen(false, None), true), None);
    }
}
