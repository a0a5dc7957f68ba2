//! [`Clock`]: the clock lease deadlines are measured on.
//!
//! A lease on the service runs out in *real* time: if the machine sleeps (a laptop lid, a VM
//! snapshot, a suspended container host), the lease keeps running down on the server while the
//! process is not running. A guard that measured its deadline on a clock that stops during
//! suspend would, after the wake-up, believe it still had time left. So the guards measure
//! deadlines on a clock that keeps counting through suspend where the operating system offers
//! one:
//!
//! * Linux (and Android): `CLOCK_BOOTTIME` — monotonic, counts suspend, system-wide (readings
//!   taken by different processes on one machine are comparable).
//! * elsewhere: [`std::time::Instant`] (monotonic; whether it counts suspend depends on the
//!   platform: it does on Windows, not on macOS).
//!
//! Scheduling (when to renew next) stays on tokio's clock; only the question "may the lease
//! have expired?" is asked of this one.
//!
//! [`ManualClock`] is a clock that only moves when told to, for deterministic tests of
//! "the deadline passed while the renew task did not run".

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The clock a guard measures its loss deadline on. Cheap to clone.
///
/// Readings ([`now`](Self::now)) are the time since an unspecified origin that is fixed for the
/// life of the clock (for [`Clock::system`] on Linux: the boot, so readings of different
/// processes on one machine can be compared).
///
/// ```
/// use azstore::clock::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let a = Clock::system().now();
/// assert!(Clock::system().now() >= a);
///
/// let manual = ManualClock::new();
/// let clock = manual.clock();
/// let t0 = clock.now();
/// manual.advance(Duration::from_secs(40));
/// assert_eq!(clock.now() - t0, Duration::from_secs(40));
/// ```
#[derive(Clone, Default)]
pub struct Clock(Source);

#[derive(Clone, Default)]
enum Source {
    #[default]
    System,
    Manual(Arc<AtomicU64>),
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::System => f.write_str(SYSTEM_NAME),
            Source::Manual(n) => write!(f, "ManualClock({:?})", nanos(n.load(Ordering::Acquire))),
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const SYSTEM_NAME: &str = "Clock(CLOCK_BOOTTIME)";
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const SYSTEM_NAME: &str = "Clock(Instant)";

impl PartialEq for Clock {
    /// Two clocks are equal when they are the same source (the system clock, or the same
    /// [`ManualClock`]).
    fn eq(&self, other: &Clock) -> bool {
        match (&self.0, &other.0) {
            (Source::System, Source::System) => true,
            (Source::Manual(a), Source::Manual(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Clock {}

impl Clock {
    /// The system clock that counts through suspend where the OS offers one (see the
    /// [module docs](self)). This is the default.
    ///
    /// ```
    /// use azstore::clock::Clock;
    /// assert_eq!(Clock::system(), Clock::default());
    /// ```
    pub fn system() -> Clock {
        Clock(Source::System)
    }

    /// The current reading: the time since the clock's origin.
    ///
    /// ```
    /// let clock = azstore::clock::Clock::system();
    /// let started = clock.now();
    /// // ... work ...
    /// let took = clock.now() - started; // counts a system suspend in between, on Linux
    /// # let _ = took;
    /// ```
    pub fn now(&self) -> Duration {
        match &self.0 {
            Source::System => system_now(),
            Source::Manual(n) => nanos(n.load(Ordering::Acquire)),
        }
    }

    /// Whether this is a [`ManualClock`]'s clock.
    ///
    /// ```
    /// use azstore::clock::{Clock, ManualClock};
    /// assert!(ManualClock::new().clock().is_manual());
    /// assert!(!Clock::system().is_manual());
    /// ```
    pub fn is_manual(&self) -> bool {
        matches!(self.0, Source::Manual(_))
    }
}

fn nanos(n: u64) -> Duration {
    Duration::from_nanos(n)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn system_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes to it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    if rc != 0 {
        // CLOCK_BOOTTIME exists since Linux 2.6.39; never expected to fail.
        return fallback_now();
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn system_now() -> Duration {
    fallback_now()
}

#[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
fn fallback_now() -> Duration {
    use std::sync::OnceLock;
    use std::time::Instant;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed()
}

/// A clock that moves only when [`advance`](Self::advance)d: for tests that need "the
/// deadline passed while the renew task did not run" to happen on purpose. Pass
/// [`clock()`](Self::clock) to the guard's options.
///
/// ```
/// use azstore::clock::ManualClock;
/// use azstore::lease::GuardOptions;
///
/// let manual = ManualClock::new();
/// let options = GuardOptions::default().clock(manual.clock());
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock reading zero.
    ///
    /// ```
    /// use std::time::Duration;
    /// let manual = azstore::clock::ManualClock::new();
    /// assert_eq!(manual.clock().now(), Duration::ZERO);
    /// ```
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Moves the clock forward by `by` (saturating). Every [`Clock`] made by
    /// [`clock`](Self::clock) sees the move at once, from any thread.
    ///
    /// ```
    /// use std::time::Duration;
    /// let manual = azstore::clock::ManualClock::new();
    /// let clock = manual.clock();
    /// manual.advance(Duration::from_secs(20)); // "the process was paused for 20 s"
    /// assert_eq!(clock.now(), Duration::from_secs(20));
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(by))
            });
    }

    /// The [`Clock`] to hand to a guard.
    ///
    /// ```
    /// use azstore::clock::ManualClock;
    /// use azstore::lease::GuardOptions;
    /// let manual = ManualClock::new();
    /// let options = GuardOptions::default().clock(manual.clock());
    /// # let _ = options;
    /// ```
    pub fn clock(&self) -> Clock {
        Clock(Source::Manual(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_monotonic() {
        let c = Clock::system();
        let mut last = c.now();
        for _ in 0..1000 {
            let n = c.now();
            assert!(n >= last);
            last = n;
        }
        assert!(!c.is_manual());
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn system_clock_counts_at_least_as_much_as_the_monotonic_clock() {
        // CLOCK_BOOTTIME = CLOCK_MONOTONIC + time suspended: never behind over an interval.
        let c = Clock::system();
        let (b0, m0) = (c.now(), std::time::Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (b1, m1) = (c.now(), std::time::Instant::now());
        assert!(b1 - b0 + Duration::from_millis(1) >= m1 - m0);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let m = ManualClock::new();
        let c = m.clock();
        assert!(c.is_manual());
        assert_eq!(c.now(), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(c.now(), Duration::ZERO);
        m.advance(Duration::from_millis(1500));
        assert_eq!(c.now(), Duration::from_millis(1500));
        m.advance(Duration::MAX);
        assert_eq!(c.now(), Duration::from_nanos(u64::MAX));
        assert!(format!("{c:?}").contains("Manual"));
    }
}
