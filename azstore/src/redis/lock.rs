//! [`RedisLock`]: the lock engine ([`Lock`]) on a Redis key — the Redis backend's
//! [`LockTarget`].

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::lease::{BREAKING, RedisLease, restart_lease, set_lease};
use super::{Idempotent, RedisClient, validate_key};
use crate::conditions::LeaseId;
use crate::error::{Error, ErrorKind, Result};
use crate::lease::{BreakPeriod, Leasable, LeaseBroken};
use crate::lock::{
    Attempt, Held, Lock, LockClaim, LockOptions, LockOwner, LockStatus, LockTarget, Probe,
    StatusMany, parse_rfc3339, status_each,
};

/// KEYS: lease, fence, owner. ARGV: id, ms (0: infinite), host, pid, label, acquired_at.
/// Takes the lease with `SET NX PX`; on success sets the fence key to
/// `max(previous + 1, TIME in ms)` in the same script (the fencing formula of
/// [`next_fencing_token`](crate::lock::next_fencing_token), with the server's clock), so the
/// token and the lease are one atomic step, and records the owner. Returns the fencing token,
/// 0 when someone else holds the lock, -1 when the lock is ours but the fence key was lost.
/// Repeating it with the holder's own id restarts the lease time and returns the same token
/// (an acquire whose reply was lost can be repeated).
const ACQUIRE: &str = concat!(
    "if redis.replicate_commands then redis.replicate_commands() end\n",
    set_lease!(),
    "if not ok then\n",
    "  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n",
    restart_lease!(),
    "  return tonumber(redis.call('GET', KEYS[2])) or -1\n",
    "end\n",
    "local now = redis.call('TIME')\n",
    "local clock = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)\n",
    "local prev = tonumber(redis.call('GET', KEYS[2]))\n",
    "local token = clock\n",
    "if prev and prev + 1 > token then token = prev + 1 end\n",
    "redis.call('SET', KEYS[2], string.format('%d', token))\n",
    "redis.call('DEL', KEYS[3])\n",
    "redis.call('HSET', KEYS[3], 'host', ARGV[3], 'pid', ARGV[4], 'acquired_at', ARGV[6], 'fencing_token', string.format('%d', token))\n",
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

/// How many locks [`RedisLockTarget::status_many`] reads in one pipelined round trip (four
/// commands each).
pub const BULK_STATUS_KEYS: usize = 2_000;

/// One lock's status as read: the lease key's value and `PTTL`, the fence key, the owner hash.
type RawStatus = (Option<String>, i64, Option<String>, HashMap<String, String>);

fn status_from_raw(
    holder: Option<String>,
    ttl: i64,
    fence: Option<String>,
    owner: &HashMap<String, String>,
) -> LockStatus {
    let owner_rec = owner.get("host").map(|host| {
        LockOwner::new(
            host.clone(),
            owner.get("pid").and_then(|p| p.parse().ok()),
            owner.get("label").cloned(),
            owner.get("acquired_at").and_then(|t| parse_rfc3339(t)),
        )
    });
    LockStatus::new(
        holder.is_some() || fence.is_some(),
        holder.is_some(),
        holder.as_deref() == Some(BREAKING),
        fence.and_then(|f| f.parse().ok()),
        owner_rec,
        (ttl >= 0 && holder.is_some()).then(|| Duration::from_millis(ttl as u64)),
    )
}

/// A distributed lock on a Redis key, with a fencing token: the lock engine over
/// [`RedisLockTarget`]. Cheap to clone. Everything but construction is [`Lock`]'s.
///
/// Holding the lock means holding a [`RedisLease`] on `key`, renewed by a
/// [`LeaseGuard`](crate::lease::LeaseGuard). The acquire script sets the companion key
/// `{key}:fence` to `max(previous + 1, the server's TIME in ms)` in the same step as the
/// `SET NX PX` that takes the lease, so every holder gets a larger **fencing token** than all
/// holders before it, even after keys expired, were deleted or the lock was broken. The holder
/// is recorded in the hash `{key}:owner`. In a clustered cache the three keys share a hash
/// slot (a key with its own `{tag}` keeps it).
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
pub type RedisLock = Lock<RedisLockTarget>;

/// The Redis backend of the lock engine: the lease key, `{key}:fence` (the fencing token) and
/// `{key}:owner` (the holder). It has no probe cheaper than the acquire script. Use it through
/// [`RedisLock`].
#[derive(Debug, Clone)]
pub struct RedisLockTarget {
    lease: RedisLease,
    fence_key: String,
    owner_key: String,
}

impl RedisLockTarget {
    /// The target for `key`, whose leases last `duration` (validated here; nothing is sent).
    ///
    /// ```no_run
    /// # fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::lease::LeaseDuration;
    /// let target = azstore::redis::RedisLockTarget::new(redis, "locks:report", LeaseDuration::seconds(30)?)?;
    /// assert_eq!(target.fence_key(), "{locks:report}:fence");
    /// # Ok(()) }
    /// ```
    pub fn new(
        client: RedisClient,
        key: &str,
        duration: crate::lease::LeaseDuration,
    ) -> Result<RedisLockTarget> {
        validate_key(key)?;
        let fence_key = companion(key, "fence")?;
        let owner_key = companion(key, "owner")?;
        let lease = RedisLease::new(client, key)?.with_duration(duration);
        Ok(RedisLockTarget {
            lease,
            fence_key,
            owner_key,
        })
    }

    /// The key holding the fencing token.
    ///
    /// ```no_run
    /// # fn demo(target: azstore::redis::RedisLockTarget) {
    /// println!("{}", target.fence_key());
    /// # }
    /// ```
    pub fn fence_key(&self) -> &str {
        &self.fence_key
    }

    /// The lease on the lock key.
    ///
    /// ```no_run
    /// # fn demo(target: azstore::redis::RedisLockTarget) {
    /// println!("{}", target.lease().key());
    /// # }
    /// ```
    pub fn lease(&self) -> &RedisLease {
        &self.lease
    }
}

impl LockTarget for RedisLockTarget {
    type Lease = RedisLease;

    fn identity(&self) -> String {
        let cfg = self.lease.client().config();
        format!(
            "redis://{}/{}/{}",
            cfg.endpoint(),
            cfg.database,
            self.lease.key()
        )
    }

    async fn try_lock(&self, claim: &LockClaim) -> Result<Attempt<RedisLease>> {
        let px = claim
            .duration
            .as_duration()
            .map_or(0, |d| d.as_millis() as u64);
        let keys = [
            self.lease.key().to_string(),
            self.fence_key.clone(),
            self.owner_key.clone(),
        ];
        let args = [
            claim.proposed.as_str().to_string(),
            px.to_string(),
            claim.owner.host.clone(),
            claim.owner.pid.map(|p| p.to_string()).unwrap_or_default(),
            claim.owner.label.clone().unwrap_or_default(),
            claim.owner.acquired_at_rfc3339(),
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
            0 => Ok(Attempt::Busy),
            t if t > 0 => Ok(Attempt::Acquired {
                lease: self.lease.clone().with_duration(claim.duration),
                fencing_token: t as u64,
                sent_at,
            }),
            _ => {
                let _ = self.lease.lease_release(&claim.proposed).await;
                Err(Error::new(
                    ErrorKind::Service,
                    format!(
                        "Redis lock {}: the fence key {} disappeared while the lock was held",
                        self.lease.key(),
                        self.fence_key
                    ),
                ))
            }
        }
    }

    async fn probe(&self) -> Result<Probe> {
        Ok(Probe::Unknown)
    }

    async fn status(&self) -> Result<LockStatus> {
        let keys = (
            self.lease.key().to_string(),
            self.fence_key.clone(),
            self.owner_key.clone(),
        );
        let (holder, ttl, fence, owner): RawStatus = self
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
        Ok(status_from_raw(holder, ttl, fence, &owner))
    }

    /// The same four reads per lock as [`status`](LockTarget::status), pipelined: one round
    /// trip per [`BULK_STATUS_KEYS`] locks (per server) instead of one per lock.
    async fn status_many(targets: &[&Self]) -> Result<StatusMany> {
        let Some(first) = targets.first() else {
            return Ok(StatusMany::default());
        };
        let server = |t: &RedisLockTarget| {
            let cfg = t.lease.client().config();
            format!("{}/{}", cfg.endpoint(), cfg.database)
        };
        let here = server(first);
        if targets.iter().any(|t| server(t) != here) {
            return status_each(targets).await;
        }
        let client = first.lease.client();
        let mut statuses = Vec::with_capacity(targets.len());
        let mut requests = 0u64;
        for chunk in targets.chunks(BULK_STATUS_KEYS) {
            let keys: Vec<[String; 3]> = chunk
                .iter()
                .map(|t| {
                    [
                        t.lease.key().to_string(),
                        t.fence_key.clone(),
                        t.owner_key.clone(),
                    ]
                })
                .collect();
            requests += 1;
            let raw: Vec<RawStatus> = client
                .run("lock status (bulk)", Idempotent::Yes, move |mut con| {
                    let keys = keys.clone();
                    async move {
                        let mut pipe = ::redis::pipe();
                        for [lease, fence, owner] in &keys {
                            pipe.cmd("GET")
                                .arg(lease)
                                .cmd("PTTL")
                                .arg(lease)
                                .cmd("GET")
                                .arg(fence)
                                .cmd("HGETALL")
                                .arg(owner);
                        }
                        let flat: Vec<::redis::Value> = pipe.query_async(&mut con).await?;
                        flat.chunks(4)
                            .map(|four| {
                                Ok((
                                    ::redis::from_redis_value(&four[0])?,
                                    ::redis::from_redis_value(&four[1])?,
                                    ::redis::from_redis_value(&four[2])?,
                                    ::redis::from_redis_value(&four[3])?,
                                ))
                            })
                            .collect::<::redis::RedisResult<Vec<RawStatus>>>()
                    }
                })
                .await?;
            if raw.len() != chunk.len() {
                return Err(Error::new(
                    ErrorKind::Service,
                    format!(
                        "Redis answered a bulk lock status of {} locks with {} replies",
                        chunk.len(),
                        raw.len()
                    ),
                ));
            }
            statuses
                .extend(raw.into_iter().map(|(holder, ttl, fence, owner)| {
                    status_from_raw(holder, ttl, fence, &owner)
                }));
        }
        Ok(StatusMany::new(statuses, requests))
    }

    async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.lease.lease_break(period).await
    }

    async fn abandon(&self, proposed: &LeaseId) {
        let _ = self.lease.lease_release(proposed).await;
    }
}

impl Lock<RedisLockTarget> {
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
        let target = RedisLockTarget::new(client, key, options.duration)?;
        Lock::from_target(target, options)
    }

    /// The lease key.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::redis::RedisLock) {
    /// println!("lock key {}, fencing token in {}", lock.key(), lock.fence_key());
    /// # }
    /// ```
    pub fn key(&self) -> &str {
        self.target().lease.key()
    }

    /// The key holding the fencing token.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::redis::RedisLock) {
    /// assert_ne!(lock.fence_key(), lock.key());
    /// # }
    /// ```
    pub fn fence_key(&self) -> &str {
        &self.target().fence_key
    }

    /// The lease (e.g. to read its holder).
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::redis::RedisLock) -> azstore::Result<()> {
    /// println!("held by {:?}", lock.lease().holder().await?);
    /// # Ok(()) }
    /// ```
    pub fn lease(&self) -> &RedisLease {
        &self.target().lease
    }
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

/// Makes [`RedisLock`]s on one Redis for a [`ShardGroup`](crate::leader::ShardGroup): the
/// lock named `group/shards/7` is that key (with its `{…}:fence` and `{…}:owner` companions).
///
/// ```no_run
/// # fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
/// use azstore::leader::{ShardGroup, ShardOptions};
/// use azstore::redis::RedisLocks;
/// let locks = RedisLocks::new(redis, azstore::lock::LockOptions::default());
/// let group = ShardGroup::with_count(locks, "ingest", 32, ShardOptions::default())?;
/// # let _ = group; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisLocks {
    client: RedisClient,
    options: LockOptions,
}

impl RedisLocks {
    /// Locks on `client` with `options` (the label is replaced by each worker's id).
    ///
    /// ```no_run
    /// # fn demo(redis: azstore::redis::RedisClient) {
    /// let locks = azstore::redis::RedisLocks::new(redis, azstore::lock::LockOptions::default());
    /// # let _ = locks;
    /// # }
    /// ```
    pub fn new(client: RedisClient, options: LockOptions) -> RedisLocks {
        RedisLocks { client, options }
    }
}

impl crate::leader::LockFactory for RedisLocks {
    type Lock = RedisLock;

    fn make(&self, name: &str, label: &str) -> Result<RedisLock> {
        RedisLock::with_options(self.client.clone(), name, self.options.clone().label(label))
    }
}

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
