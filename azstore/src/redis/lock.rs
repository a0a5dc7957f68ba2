//! [`RedisLock`]: a distributed lock on a Redis key, with a fencing token — the shape of
//! [`BlobLock`](crate::lock::BlobLock).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::lease::{BREAKING, RedisLease, restart_lease, set_lease};
use super::{Idempotent, RedisClient, validate_key};
use crate::conditions::LeaseId;
use crate::error::{Error, ErrorKind, Result};
use crate::lease::{BreakPeriod, Leasable, LeaseBroken, LeaseGuard};
use crate::lock::{Held, LockOptions, LockOwner, poll_until_acquired};

/// KEYS: lease, fence, owner. ARGV: id, ms (0: infinite), host, pid, label, acquired_at.
/// Takes the lease with `SET NX PX`; on success `INCR`s the fence key in the same script, so
/// the token and the lease are one atomic step, and records the owner. Returns the fencing
/// token, 0 when someone else holds the lock, -1 when the lock is ours but the fence key was
/// lost. Repeating it with the holder's own id restarts the lease time and returns the same
/// token (an acquire whose reply was lost can be repeated).
const ACQUIRE: &str = concat!(
    set_lease!(),
    "if not ok then\n",
    "  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n",
    restart_lease!(),
    "  return tonumber(redis.call('GET', KEYS[2])) or -1\n",
    "end\n",
    "local token = redis.call('INCR', KEYS[2])\n",
    "redis.call('DEL', KEYS[3])\n",
    "redis.call('HSET', KEYS[3], 'host', ARGV[3], 'pid', ARGV[4], 'acquired_at', ARGV[6], 'fencing_token', token)\n",
    "if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], 'label', ARGV[5]) end\n",
    "return token\n",
);

/// The name of a key that lives in the same Redis Cluster slot as `key`, so that one script
/// may touch both: `key` with a hash tag (`{…}`) keeps it; a key without braces becomes the
/// tag itself (`{key}:suffix` hashes exactly like `key`).
fn companion(key: &str, suffix: &str) -> Result<String> {
    if let Some(open) = key.find('{') {
        if key[open + 1..].find('}').is_some_and(|close| close > 0) {
            return Ok(format!("{key}:{suffix}"));
        }
    } else if !key.contains('}') {
        return Ok(format!("{{{key}}}:{suffix}"));
    }
    Err(Error::invalid_input(
        "a Redis lock key with braces must contain a non-empty hash tag such as {name}",
    ))
}

/// A distributed lock on a Redis key, with a fencing token. Cheap to clone.
///
/// Holding the lock means holding a [`RedisLease`] on `key`, renewed by a
/// [`LeaseGuard`]. Every acquisition increments the companion key `{key}:fence`
/// (`INCR`, in the same script as the `SET NX PX` that takes the lease), so every holder
/// gets a larger **fencing token** than all holders before it, even after keys expired or
/// the lock was broken. The holder is recorded in the hash `{key}:owner`. In a clustered
/// cache the three keys share a hash slot (a key with its own `{tag}` keeps it).
///
/// ```no_run
/// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
/// use std::time::Duration;
///
/// let lock = redis.lock("locks/nightly")?;
/// let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? else {
///     println!("busy: {:?}", lock.status().await?.owner);
///     return Ok(());
/// };
/// let token = held.fencing_token();
/// tokio::select! {
///     loss = held.lost() => eprintln!("lock lost, stopping: {loss}"),
///     _ = async { /* the critical section, passing `token` along */ } => {}
/// }
/// held.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisLock {
    lease: RedisLease,
    fence_key: String,
    owner_key: String,
    options: LockOptions,
}

impl RedisLock {
    /// A lock on `key` with default [`LockOptions`] (validated here; nothing is sent).
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// let lock = azstore::redis::RedisLock::new(redis, "locks:report")?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn new(client: RedisClient, key: &str) -> Result<RedisLock> {
        RedisLock::with_options(client, key, LockOptions::default())
    }

    /// A lock with custom options (validated here, before any request).
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::lease::LeaseDuration;
    /// use azstore::lock::LockOptions;
    /// use azstore::redis::RedisLock;
    /// let options = LockOptions::default().duration(LeaseDuration::seconds(15)?).label("reporter");
    /// let lock = RedisLock::with_options(redis, "locks:report", options)?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn with_options(client: RedisClient, key: &str, options: LockOptions) -> Result<RedisLock> {
        validate_key(key)?;
        options.validate()?;
        let fence_key = companion(key, "fence")?;
        let owner_key = companion(key, "owner")?;
        let lease = RedisLease::new(client, key)?.with_duration(options.duration);
        Ok(RedisLock {
            lease,
            fence_key,
            owner_key,
            options,
        })
    }

    /// The lease key.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::redis::RedisLock) {
    /// println!("lock key {}, fencing counter in {}", lock.key(), lock.fence_key());
    /// # }
    /// ```
    pub fn key(&self) -> &str {
        self.lease.key()
    }

    /// The key holding the fencing counter.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::redis::RedisLock) {
    /// assert_ne!(lock.fence_key(), lock.key());
    /// # }
    /// ```
    pub fn fence_key(&self) -> &str {
        &self.fence_key
    }

    /// The options.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::redis::RedisLock) {
    /// println!("{:?}", lock.options());
    /// # }
    /// ```
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// The lease (e.g. to break it by hand).
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::redis::RedisLock) -> azstore::Result<()> {
    /// println!("held by {:?}", lock.lease().holder().await?);
    /// # Ok(()) }
    /// ```
    pub fn lease(&self) -> &RedisLease {
        &self.lease
    }

    /// One attempt: the held lock, or `None` when someone else holds it (or it is breaking).
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::redis::RedisLock) -> azstore::Result<()> {
    /// if let Some(held) = lock.try_acquire().await? {
    ///     println!("token {}", held.fencing_token());
    ///     held.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<HeldRedisLock>> {
        self.try_acquire_as(&LeaseId::random()).await
    }

    async fn try_acquire_as(&self, proposed: &LeaseId) -> Result<Option<HeldRedisLock>> {
        let duration = self.options.duration;
        let px = duration.as_duration().map_or(0, |d| d.as_millis() as u64);
        let keys = [
            self.lease.key().to_string(),
            self.fence_key.clone(),
            self.owner_key.clone(),
        ];
        let args = [
            proposed.as_str().to_string(),
            px.to_string(),
            crate::lock::hostname(),
            std::process::id().to_string(),
            self.options.label.clone().unwrap_or_default(),
            OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
        ];
        let sent_at = Instant::now();
        let token: i64 = self
            .lease
            .client()
            .run("acquire lock", Idempotent::Yes, move |mut con| {
                let (keys, args) = (keys.clone(), args.clone());
                async move {
                    ::redis::cmd("EVAL")
                        .arg(ACQUIRE)
                        .arg(3)
                        .arg(&keys[..])
                        .arg(&args[..])
                        .query_async(&mut con)
                        .await
                }
            })
            .await?;
        match token {
            0 => Ok(None),
            t if t > 0 => {
                let guard = LeaseGuard::adopt(
                    self.lease.clone(),
                    proposed.clone(),
                    duration,
                    sent_at,
                    self.options.guard.clone(),
                )?;
                let wake = self.options.local_wakeup.then(|| self.wakeup());
                Ok(Some(Held::new(guard, t as u64, wake)))
            }
            _ => {
                let _ = self.lease.lease_release(proposed).await;
                Err(Error::new(
                    ErrorKind::Service,
                    format!(
                        "Redis lock {}: the fence key {} disappeared while the lock was held",
                        self.key(),
                        self.fence_key
                    ),
                ))
            }
        }
    }

    fn wakeup(&self) -> Arc<Notify> {
        let cfg = self.lease.client().config();
        crate::lock::wakeup_for(format!(
            "redis://{}/{}/{}",
            cfg.endpoint(),
            cfg.database,
            self.key()
        ))
    }

    /// Waits at most `wait` for the lock; `None` when it could not be had in time. `wait` is
    /// how long to wait, not the lease duration (that is [`LockOptions::duration`]).
    ///
    /// Waiters retry the acquire script after a jittered, backing-off sleep
    /// ([`LockOptions::poll_interval`]); a release by a holder in this process wakes a local
    /// waiter at once. One id is proposed across the attempts of one wait, so a repeated
    /// attempt whose first reply was lost does not lock itself out.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::redis::RedisLock) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// match lock.acquire_within(Duration::from_secs(10)).await? {
    ///     Some(held) => held.release().await.map(drop)?,
    ///     None => println!("still held by someone else after 10 s"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_within(&self, wait: Duration) -> Result<Option<HeldRedisLock>> {
        let proposed = LeaseId::random();
        let wake = self.options.local_wakeup.then(|| self.wakeup());
        poll_until_acquired(wait, &self.options, wake, "redis", || {
            self.try_acquire_as(&proposed)
        })
        .await
    }

    /// Who holds (or last held) the lock, the time left and the fencing token.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::redis::RedisLock) -> azstore::Result<()> {
    /// let s = lock.status().await?;
    /// println!("locked: {}, {:?} left, owner {:?}", s.locked, s.remaining, s.owner);
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<RedisLockStatus> {
        let keys = (
            self.lease.key().to_string(),
            self.fence_key.clone(),
            self.owner_key.clone(),
        );
        type Raw = (Option<String>, i64, Option<String>, HashMap<String, String>);
        let (holder, ttl, fence, owner): Raw = self
            .lease
            .client()
            .run("lock status", Idempotent::Yes, move |mut con| {
                let keys = keys.clone();
                async move {
                    ::redis::pipe()
                        .cmd("GET")
                        .arg(&keys.0)
                        .cmd("PTTL")
                        .arg(&keys.0)
                        .cmd("GET")
                        .arg(&keys.1)
                        .cmd("HGETALL")
                        .arg(&keys.2)
                        .query_async(&mut con)
                        .await
                }
            })
            .await?;
        let owner = owner.get("host").map(|host| LockOwner {
            host: host.clone(),
            pid: owner.get("pid").and_then(|p| p.parse().ok()),
            label: owner.get("label").cloned(),
            acquired_at: owner.get("acquired_at").and_then(|t| {
                OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
            }),
        });
        Ok(RedisLockStatus {
            locked: holder.is_some(),
            breaking: holder.as_deref() == Some(BREAKING),
            remaining: (ttl >= 0).then(|| Duration::from_millis(ttl as u64)),
            fencing_token: fence.and_then(|f| f.parse().ok()),
            owner,
        })
    }

    /// Breaks the lock (administrative): at once, or after `period`; `None` lets a fixed
    /// lease run out (and breaks an infinite one at once). The holder's guard reports the
    /// loss at its next renew; nobody can acquire until the break ends.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::redis::RedisLock) -> azstore::Result<()> {
    /// let broken = lock.break_lock(None).await?;
    /// println!("free in {:?}", broken.remaining);
    /// # Ok(()) }
    /// ```
    pub async fn break_lock(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.lease.lease_break(period).await
    }
}

/// What [`RedisLock::status`] reports.
///
/// ```no_run
/// # async fn demo(lock: azstore::redis::RedisLock) -> azstore::Result<()> {
/// let s = lock.status().await?;
/// if s.locked {
///     println!("held by {:?} for another {:?} (token {:?})", s.owner, s.remaining, s.fencing_token);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisLockStatus {
    /// Whether someone holds the lock now (or it is breaking).
    pub locked: bool,
    /// Whether the lock is being broken.
    pub breaking: bool,
    /// Time left on the lease (`None` when unlocked or infinite).
    pub remaining: Option<Duration>,
    /// The fencing token of the latest acquisition.
    pub fencing_token: Option<u64>,
    /// The latest holder (who may have released it since: see `locked`).
    pub owner: Option<LockOwner>,
}

/// A held [`RedisLock`]: the renewed lease plus the fencing token of this acquisition.
/// Release it with [`release`](Held::release); dropping it releases in the background.
///
/// ```no_run
/// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::redis::HeldRedisLock;
/// let held: Option<HeldRedisLock> = redis.lock("locks:nightly")?.acquire_within(Duration::from_secs(5)).await?;
/// if let Some(held) = held {
///     println!("token {}", held.fencing_token());
///     held.release().await?;
/// }
/// # Ok(()) }
/// ```
pub type HeldRedisLock = Held<RedisLease>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companion_keys_share_the_slot() {
        assert_eq!(companion("locks/a", "fence").unwrap(), "{locks/a}:fence");
        assert_eq!(
            companion("{app}:lock", "fence").unwrap(),
            "{app}:lock:fence"
        );
        assert!(companion("a{}b", "fence").is_err());
        assert!(companion("a}b", "fence").is_err());
        assert!(companion("a{b", "fence").is_err());
    }
}
