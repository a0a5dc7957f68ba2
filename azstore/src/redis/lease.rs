//! [`RedisLease`]: a lease on a Redis key, for [`LeaseGuard`](crate::lease::LeaseGuard).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{Idempotent, RedisClient, validate_key};
use crate::conditions::LeaseId;
use crate::error::{Error, ErrorKind, Result};
use crate::lease::{BreakPeriod, Leasable, LeaseBroken, LeaseDuration, LeaseReleased, LeaseResult};

/// The Lua that takes the lease key KEYS[1] for the id ARGV[1] with `SET NX` (`PX ARGV[2]`
/// unless ARGV[2] is 0: infinite); `ok` says whether it was free. Shared by the lease's and
/// the lock's acquire scripts.
macro_rules! set_lease {
    () => {
        "local ok
if ARGV[2] == '0' then
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX')
else
  ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
end
"
    };
}

/// The Lua that restarts the time of a lease key already ours (a repeated acquire).
macro_rules! restart_lease {
    () => {
        "  if ARGV[2] == '0' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
    };
}

pub(super) use {restart_lease, set_lease};

/// Acquire: `SET key id NX PX ms` (no `PX` when ARGV[2] is 0: infinite). Acquiring again with
/// the id that holds the lease succeeds and restarts its time, as a repeated Azure acquire with
/// the same proposed id does — so an acquire whose reply was lost can be repeated safely.
/// Returns 1 when acquired, 0 when someone else holds the key.
const ACQUIRE: &str = concat!(
    set_lease!(),
    "if ok then return 1 end\n",
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n",
    restart_lease!(),
    "  return 1\n",
    "end\n",
    "return 0\n",
);

/// Renew (ARGV[2] = ms), change (ARGV[2] = new id) and release share one shape: act only
/// when the key holds our id. Returns 1 when done, 0 when the key is absent, -1 when another
/// id holds it.
const RENEW: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if cur ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
";

const CHANGE: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if cur ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
";

const RELEASE: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if cur ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
return 1
";

/// Break. ARGV[1]: the break period in ms, or -1 for Azure's default (the rest of a fixed
/// lease; at once for an infinite one); ARGV[2]: the marker that replaces the holder's id
/// while the lease is breaking, so that the holder can no longer renew it and nobody can
/// acquire it until it ends. Returns the remaining ms, or -2 when there is no lease.
const BREAK: &str = r"
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return -2 end
local period = tonumber(ARGV[1])
if period == -1 then
  if ttl == -1 then period = 0 else period = ttl end
end
if ttl ~= -1 and ttl < period then period = ttl end
if period <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', period)
return period
";

/// The value of a breaking lease's key.
pub(super) const BREAKING: &str = "azstore:breaking";

/// A lease on a Redis key: the key holds the lease id and expires with the lease. It plugs
/// into [`LeaseGuard`](crate::lease::LeaseGuard) like a blob does — auto-renew, and loss
/// signalled before the key can expire.
///
/// | lease operation | Redis |
/// |---|---|
/// | acquire | `SET key id NX PX ms` (a script: re-acquiring with the holder's own id succeeds) |
/// | renew | script: `PEXPIRE key ms` only if `GET key` is our id |
/// | change | script: `SET key new KEEPTTL` only if `GET key` is our id |
/// | release | script: `DEL key` only if `GET key` is our id |
/// | break | `DEL key`, or (with a break period) replace the id by a marker that expires after the period: the holder's renew is refused at once, nobody acquires until it ends |
///
/// Refusals carry Azure's lease codes: `LeaseAlreadyPresent` (acquire),
/// `LeaseIdMismatchWithLeaseOperation` (another id holds it),
/// `LeaseNotPresentWithLeaseOperation` (the key is gone: expired, released or broken).
///
/// Redis does not remember a lease's duration the way Azure does: renewing needs it. It is
/// recorded by [`lease_acquire`](Leasable::lease_acquire) (shared by clones), so a
/// guard renews through the value that acquired; to renew a lease acquired elsewhere, set it
/// with [`with_duration`](Self::with_duration).
///
/// ```no_run
/// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
/// use azstore::lease::{LeaseDuration, LeaseGuard};
/// let guard = LeaseGuard::acquire(redis.lease("jobs/nightly")?, LeaseDuration::seconds(15)?).await?;
/// tokio::select! {
///     loss = guard.lost() => eprintln!("stopping: {loss}"),
///     _ = async { /* long work */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisLease {
    client: RedisClient,
    key: String,
    /// The lease duration in ms, recorded at acquire (0: unknown; `u64::MAX`: infinite).
    duration_ms: Arc<AtomicU64>,
}

const INFINITE: u64 = u64::MAX;

fn duration_ms(d: LeaseDuration) -> u64 {
    match d.as_duration() {
        Some(d) => d.as_millis() as u64,
        None => INFINITE,
    }
}

impl RedisLease {
    /// A lease on `key` (validated here; nothing is sent).
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// let lease = azstore::redis::RedisLease::new(redis, "leader:billing")?;
    /// # let _ = lease; Ok(()) }
    /// ```
    pub fn new(client: RedisClient, key: &str) -> Result<RedisLease> {
        validate_key(key)?;
        Ok(RedisLease {
            client,
            key: key.to_string(),
            duration_ms: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Records the duration to renew with (for a lease acquired by another `RedisLease`).
    ///
    /// ```no_run
    /// # fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::lease::LeaseDuration;
    /// let lease = redis.lease("leader:billing")?.with_duration(LeaseDuration::seconds(30)?);
    /// # let _ = lease; Ok(()) }
    /// ```
    #[must_use]
    pub fn with_duration(self, duration: LeaseDuration) -> RedisLease {
        self.duration_ms
            .store(duration_ms(duration), Ordering::SeqCst);
        self
    }

    /// The key.
    ///
    /// ```no_run
    /// # fn demo(lease: azstore::redis::RedisLease) {
    /// println!("{}", lease.key());
    /// # }
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The client.
    ///
    /// ```no_run
    /// # async fn demo(lease: azstore::redis::RedisLease) -> azstore::Result<()> {
    /// lease.client().ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn client(&self) -> &RedisClient {
        &self.client
    }

    /// The id holding the lease now, if any (`GET key`).
    ///
    /// ```no_run
    /// # async fn demo(lease: azstore::redis::RedisLease) -> azstore::Result<()> {
    /// match lease.holder().await? {
    ///     Some(id) => println!("held by {id}"),
    ///     None => println!("free"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn holder(&self) -> Result<Option<LeaseId>> {
        let key = self.key.clone();
        let raw: Option<String> = self
            .client
            .run("GET", Idempotent::Yes, move |mut con| {
                let key = key.clone();
                async move { ::redis::cmd("GET").arg(key).query_async(&mut con).await }
            })
            .await?;
        Ok(raw.map(LeaseId::from_service))
    }

    /// The time left on the lease: `None` when there is none, `Some(None)` when infinite.
    ///
    /// ```no_run
    /// # async fn demo(lease: azstore::redis::RedisLease) -> azstore::Result<()> {
    /// if let Some(Some(left)) = lease.remaining().await? {
    ///     println!("expires in {left:?} unless renewed");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn remaining(&self) -> Result<Option<Option<Duration>>> {
        let key = self.key.clone();
        let ttl: i64 = self
            .client
            .run("PTTL", Idempotent::Yes, move |mut con| {
                let key = key.clone();
                async move { ::redis::cmd("PTTL").arg(key).query_async(&mut con).await }
            })
            .await?;
        Ok(match ttl {
            -2 => None,
            -1 => Some(None),
            ms => Some(Some(Duration::from_millis(ms.max(0) as u64))),
        })
    }

    /// Runs one of the compare-and-act scripts; maps 0 / -1 to lease errors.
    /// Runs the Lua `src` on this key with `args`; its integer answer.
    async fn eval(
        &self,
        what: &'static str,
        src: &'static str,
        idem: Idempotent,
        args: Vec<String>,
    ) -> Result<i64> {
        let key = self.key.clone();
        self.client
            .run(what, idem, move |mut con| {
                let (key, args) = (key.clone(), args.clone());
                async move {
                    ::redis::cmd("EVAL")
                        .arg(src)
                        .arg(1)
                        .arg(key)
                        .arg(args)
                        .query_async(&mut con)
                        .await
                }
            })
            .await
    }

    /// Runs a renew/change/release script: 1 done, 0 no lease, else another id holds it.
    async fn script(
        &self,
        what: &'static str,
        src: &'static str,
        idem: Idempotent,
        args: Vec<String>,
    ) -> Result<()> {
        let answer = self.eval(what, src, idem, args).await?;
        match answer {
            1 => Ok(()),
            0 => Err(lease_error(
                ErrorKind::LeaseLost,
                format!(
                    "{what} refused: there is no lease on Redis key {}",
                    self.key
                ),
            )),
            _ => Err(lease_error(
                ErrorKind::LeaseLost,
                format!(
                    "{what} refused: another lease id holds Redis key {}",
                    self.key
                ),
            )),
        }
    }
}

pub(super) fn lease_error(kind: ErrorKind, message: String) -> Error {
    Error::new(kind, message)
}

// Every lease capability (the default): fixed durations, renewals and break periods, like a
// blob's.
impl Leasable for RedisLease {
    fn lease_target(&self) -> String {
        format!("redis key {}", self.key)
    }

    async fn lease_acquire(
        &self,
        duration: LeaseDuration,
        proposed: &LeaseId,
    ) -> Result<LeaseResult> {
        let ms = duration_ms(duration);
        self.duration_ms.store(ms, Ordering::SeqCst);
        let px = if ms == INFINITE { 0 } else { ms };
        let args = vec![proposed.as_str().to_string(), px.to_string()];
        let acquired = self
            .eval("acquire lease", ACQUIRE, Idempotent::Yes, args)
            .await?;
        if acquired == 1 {
            Ok(LeaseResult::new(proposed.clone(), None))
        } else {
            Err(lease_error(
                ErrorKind::LeaseHeld,
                format!("Redis key {} is leased by someone else", self.key),
            ))
        }
    }

    async fn lease_renew(&self, id: &LeaseId) -> Result<LeaseResult> {
        let ms = self.duration_ms.load(Ordering::SeqCst);
        if ms == 0 {
            return Err(Error::invalid_input(
                "renewing a Redis lease needs its duration: acquire through this RedisLease or set with_duration",
            ));
        }
        if ms != INFINITE {
            self.script(
                "renew",
                RENEW,
                Idempotent::Yes,
                vec![id.as_str().to_string(), ms.to_string()],
            )
            .await?;
        }
        Ok(LeaseResult::new(id.clone(), None))
    }

    async fn lease_change(&self, id: &LeaseId, proposed: &LeaseId) -> Result<LeaseResult> {
        self.script(
            "change",
            CHANGE,
            Idempotent::No,
            vec![id.as_str().to_string(), proposed.as_str().to_string()],
        )
        .await?;
        Ok(LeaseResult::new(proposed.clone(), None))
    }

    async fn lease_release(&self, id: &LeaseId) -> Result<LeaseReleased> {
        self.script(
            "release",
            RELEASE,
            Idempotent::No,
            vec![id.as_str().to_string()],
        )
        .await?;
        Ok(LeaseReleased::new(None))
    }

    async fn lease_break(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        let period_ms = period.map_or(-1, |p| i64::from(p.as_secs()) * 1000);
        let args = vec![period_ms.to_string(), BREAKING.to_string()];
        let remaining = self
            .eval("break lease", BREAK, Idempotent::Yes, args)
            .await?;
        if remaining < 0 {
            return Err(lease_error(
                ErrorKind::LeaseLost,
                format!("break refused: there is no lease on Redis key {}", self.key),
            ));
        }
        Ok(LeaseBroken::new(
            Duration::from_millis(remaining as u64),
            None,
        ))
    }
}
