//! Retry schedules: exponential backoff with jitter.
//!
//! The schedule is a few lines of arithmetic (each delay the previous one times the multiplier,
//! capped at the maximum) with jitter from `rand`'s thread-local generator. The same types drive
//! transient retries in the pipeline and the conflict retries of [`crate::update::update`].

use std::time::Duration;

use tokio::time::Instant;

/// How random the delays are.
///
/// ```
/// use std::time::Duration;
/// use azstore::http::{Jitter, RetryPolicy};
/// // ±20 % around each delay of the schedule.
/// let policy = RetryPolicy::default().jitter(Jitter::Proportional(0.2)).initial_delay(Duration::from_millis(100));
/// # let _ = policy;
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jitter {
    /// No randomness (deterministic schedules, e.g. in tests).
    None,
    /// Each delay is uniformly random in `[d * (1 - f), d * (1 + f)]`.
    Proportional(f64),
    /// Each delay is uniformly random in `[0, d]` ("full jitter"): the best spread for many
    /// clients contending for the same resource.
    Full,
}

/// When and how often to try again.
///
/// ```
/// use std::time::Duration;
/// use azstore::http::RetryPolicy;
/// let p = RetryPolicy::default().max_retries(5).initial_delay(Duration::from_millis(50));
/// let mut b = p.schedule();
/// let mut n = 0;
/// while let Some(d) = b.next_delay() {
///     assert!(d <= Duration::from_secs(30));
///     n += 1;
/// }
/// assert_eq!(n, 5);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use]
pub struct RetryPolicy {
    max_retries: u32,
    initial_delay: Duration,
    max_delay: Duration,
    multiplier: f64,
    jitter: Jitter,
    max_elapsed: Option<Duration>,
}

impl Default for RetryPolicy {
    /// 3 retries, 200 ms doubling to at most 10 s, full jitter, no elapsed-time limit.
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(10),
            multiplier: 2.0,
            jitter: Jitter::Full,
            max_elapsed: None,
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    ///
    /// ```
    /// use azstore::http::{ClientOptions, RetryPolicy};
    /// assert_eq!(RetryPolicy::none().retries(), 0);
    /// let one_attempt_only = ClientOptions::default().retry(RetryPolicy::none());
    /// # let _ = one_attempt_only;
    /// ```
    pub fn none() -> RetryPolicy {
        RetryPolicy::default().max_retries(0)
    }

    /// At most `n` retries (so `n + 1` attempts); default 3.
    ///
    /// ```
    /// let policy = azstore::http::RetryPolicy::default().max_retries(5);
    /// assert_eq!(policy.retries(), 5);
    /// ```
    pub fn max_retries(mut self, v: u32) -> Self {
        self.max_retries = v;
        self
    }

    /// The first delay (before jitter); default 200 ms. Each later delay is
    /// [`multiplier`](Self::multiplier) times the one before, up to the max delay.
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = azstore::http::RetryPolicy::default().initial_delay(Duration::from_millis(50));
    /// # let _ = policy;
    /// ```
    pub fn initial_delay(mut self, v: Duration) -> Self {
        self.initial_delay = v;
        self
    }

    /// The largest delay (before jitter). It also caps a server's `Retry-After`: a service
    /// asking for an hour does not hold a call for an hour (the pipeline's total time budget
    /// still bounds the call as a whole). Default 10 s.
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = azstore::http::RetryPolicy::default().max_delay(Duration::from_secs(2));
    /// # let _ = policy;
    /// ```
    pub fn max_delay(mut self, v: Duration) -> Self {
        self.max_delay = v;
        self
    }

    /// Growth factor between delays (at least 1; default 2).
    ///
    /// ```
    /// let policy = azstore::http::RetryPolicy::default().multiplier(1.5);
    /// # let _ = policy;
    /// ```
    pub fn multiplier(mut self, m: f64) -> RetryPolicy {
        self.multiplier = if m.is_finite() && m >= 1.0 { m } else { 1.0 };
        self
    }

    /// Randomness of the delays (default [`Jitter::Full`]: uniform in `[0, d]`, the best
    /// spread for many clients retrying at once).
    ///
    /// ```
    /// use azstore::http::{Jitter, RetryPolicy};
    /// let deterministic = RetryPolicy::default().jitter(Jitter::None); // e.g. in tests
    /// # let _ = deterministic;
    /// ```
    pub fn jitter(mut self, v: Jitter) -> Self {
        self.jitter = v;
        self
    }

    /// Stop retrying once this much time has passed since the schedule started (default
    /// `None`: only the number of retries and the client's total time budget limit it).
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = azstore::http::RetryPolicy::default().max_elapsed(Some(Duration::from_secs(20)));
    /// # let _ = policy;
    /// ```
    pub fn max_elapsed(mut self, v: Option<Duration>) -> Self {
        self.max_elapsed = v;
        self
    }

    /// The configured number of retries.
    ///
    /// ```
    /// assert_eq!(azstore::http::RetryPolicy::default().retries(), 3);
    /// ```
    pub fn retries(&self) -> u32 {
        self.max_retries
    }

    /// A fresh schedule of delays.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::http::{Jitter, RetryPolicy};
    /// let policy = RetryPolicy::default().jitter(Jitter::None).max_retries(2);
    /// let mut delays = policy.schedule();
    /// assert_eq!(delays.next_delay(), Some(Duration::from_millis(200)));
    /// assert_eq!(delays.next_delay(), Some(Duration::from_millis(400)));
    /// assert_eq!(delays.next_delay(), None);
    /// ```
    pub fn schedule(&self) -> Backoff {
        Backoff {
            next_base: self.initial_delay.min(self.max_delay),
            policy: self.clone(),
            retries: 0,
            started: Instant::now(),
        }
    }
}

/// One running schedule: call [`Backoff::next_delay`] after each failure.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::http::RetryPolicy;
/// // The same schedule the pipeline uses, for a loop of your own.
/// let mut backoff = RetryPolicy::default().schedule();
/// loop {
///     match blob.get_properties().await {
///         Err(e) if e.is_retryable() => match backoff.next_delay() {
///             Some(d) => tokio::time::sleep(d).await,
///             None => return Err(e),
///         },
///         other => break other.map(drop),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Backoff {
    /// The next delay before jitter.
    next_base: Duration,
    policy: RetryPolicy,
    retries: u32,
    started: Instant,
}

impl Backoff {
    /// The delay before the next attempt, or `None` when the policy says stop.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::http::{Jitter, RetryPolicy};
    /// let mut b = RetryPolicy::default().jitter(Jitter::None).max_retries(1).schedule();
    /// assert_eq!(b.next_delay(), Some(Duration::from_millis(200)));
    /// assert_eq!(b.next_delay(), None);
    /// ```
    pub fn next_delay(&mut self) -> Option<Duration> {
        if self.retries >= self.policy.max_retries {
            return None;
        }
        let base = self.next_base;
        let delay = match self.policy.jitter {
            Jitter::None => base,
            Jitter::Full => base.mul_f64(rand::random::<f64>()),
            Jitter::Proportional(f) => {
                let f = if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) };
                base.mul_f64(1.0 - f + 2.0 * f * rand::random::<f64>())
            }
        };
        if let Some(max) = self.policy.max_elapsed {
            if self.started.elapsed() + delay > max {
                return None;
            }
        }
        self.retries += 1;
        // `multiplier` is finite and at least 1 (see `RetryPolicy::multiplier`); the product is
        // computed in seconds so a huge multiplier saturates at the cap instead of panicking.
        let grown = base.as_secs_f64() * self.policy.multiplier;
        self.next_base = if grown >= self.policy.max_delay.as_secs_f64() {
            self.policy.max_delay
        } else {
            Duration::from_secs_f64(grown)
        };
        Some(delay)
    }

    /// The delay before the next attempt when the service asked for `retry_after`: the
    /// schedule's delay, raised to the requested one but never above the policy's max delay.
    /// `None` when the policy says stop.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::http::{Jitter, RetryPolicy};
    /// let mut b = RetryPolicy::default().jitter(Jitter::None).schedule();
    /// // The service asked for 2 s (Retry-After): more than the schedule's 200 ms.
    /// assert_eq!(b.next_delay_after(Some(Duration::from_secs(2))), Some(Duration::from_secs(2)));
    /// ```
    pub fn next_delay_after(&mut self, retry_after: Option<Duration>) -> Option<Duration> {
        let delay = self.next_delay()?;
        Some(match retry_after {
            Some(ra) => delay.max(ra.min(self.policy.max_delay)),
            None => delay,
        })
    }

    /// How many delays were handed out so far.
    ///
    /// ```
    /// let mut b = azstore::http::RetryPolicy::default().schedule();
    /// b.next_delay();
    /// assert_eq!(b.retries(), 1);
    /// ```
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// Time since the schedule started.
    ///
    /// ```
    /// let b = azstore::http::RetryPolicy::default().schedule();
    /// assert!(b.elapsed() < std::time::Duration::from_secs(60));
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_exponential_schedule() {
        let p = RetryPolicy::default()
            .jitter(Jitter::None)
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_millis(350))
            .max_retries(4);
        let mut b = p.schedule();
        let got: Vec<_> = std::iter::from_fn(|| b.next_delay()).collect();
        assert_eq!(
            got,
            [100, 200, 350, 350].map(Duration::from_millis).to_vec()
        );
    }

    #[test]
    fn growth_follows_the_multiplier_and_saturates_at_the_cap() {
        let delays = |p: RetryPolicy| {
            let mut b = p.jitter(Jitter::None).max_retries(5).schedule();
            std::iter::from_fn(|| b.next_delay())
                .map(|d| d.as_millis())
                .collect::<Vec<_>>()
        };
        let base = RetryPolicy::default()
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(1));
        assert_eq!(
            delays(base.clone().multiplier(1.5)),
            [100, 150, 225, 337, 506]
        );
        assert_eq!(delays(base.clone().multiplier(1.0)), [100; 5]);
        // A huge multiplier reaches the cap instead of overflowing `Duration`.
        assert_eq!(
            delays(base.clone().multiplier(1e300)),
            [100, 1000, 1000, 1000, 1000]
        );
        // A first delay above the cap is capped too.
        assert_eq!(
            delays(base.initial_delay(Duration::from_secs(5))),
            [1000; 5]
        );
    }

    #[test]
    fn full_jitter_stays_below_base_and_elapsed_limit_stops() {
        let p = RetryPolicy::default()
            .max_retries(50)
            .initial_delay(Duration::from_millis(10));
        let mut b = p.schedule();
        assert!(b.next_delay().unwrap() <= Duration::from_millis(10));
        let p = RetryPolicy::default()
            .jitter(Jitter::None)
            .max_elapsed(Some(Duration::from_millis(1)))
            .initial_delay(Duration::from_millis(5));
        assert_eq!(p.schedule().next_delay(), None);
        assert_eq!(RetryPolicy::none().schedule().next_delay(), None);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_max_delay() {
        let p = RetryPolicy::default()
            .jitter(Jitter::None)
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(10));
        let mut b = p.schedule();
        let hour = Some(Duration::from_secs(3600));
        assert_eq!(b.next_delay_after(hour), Some(Duration::from_secs(10)));
        assert_eq!(
            b.next_delay_after(Some(Duration::from_secs(1))),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            b.next_delay_after(Some(Duration::ZERO)),
            Some(Duration::from_millis(400)),
            "a short Retry-After never shortens the schedule"
        );
        assert_eq!(b.next_delay_after(hour), None, "3 retries by default");
    }

    /// The elapsed-time limit runs on tokio's clock: with time paused, sleeping the delays
    /// reaches it without waiting.
    #[tokio::test(start_paused = true)]
    async fn elapsed_limit_follows_paused_time() {
        let real = std::time::Instant::now();
        let p = RetryPolicy::default()
            .jitter(Jitter::None)
            .max_retries(100)
            .initial_delay(Duration::from_secs(1))
            .max_delay(Duration::from_secs(4))
            .max_elapsed(Some(Duration::from_secs(10)));
        let mut b = p.schedule();
        let mut delays = Vec::new();
        while let Some(d) = b.next_delay() {
            delays.push(d.as_secs());
            tokio::time::sleep(d).await;
        }
        // 1 + 2 + 4 = 7 s passed; another 4 s would end after the 10 s limit.
        assert_eq!(delays, [1, 2, 4]);
        assert_eq!(b.elapsed(), Duration::from_secs(7));
        assert!(
            real.elapsed() < Duration::from_secs(5),
            "{:?}",
            real.elapsed()
        );
    }
}
