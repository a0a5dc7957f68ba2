//! Leases: pessimistic concurrency for blobs, containers, shares and files.
//!
//! A lease gives one holder exclusive write (and delete) access. Durations are 15–60 seconds or
//! infinite; [`LeaseDuration`] and [`BreakPeriod`] cannot hold any other value, so a bad
//! duration is refused before a request is sent.

use std::time::Duration;

use crate::error::{Error, Result};

/// How long a lease lasts: 15–60 seconds, or infinite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseDuration {
    /// Expires this many seconds (15–60) after acquire or the last renew.
    Fixed(u8),
    /// Never expires; must be released or broken.
    Infinite,
}

impl LeaseDuration {
    /// A fixed duration; `InvalidInput` outside 15–60 s.
    ///
    /// ```
    /// use azstore::lease::LeaseDuration;
    /// assert!(LeaseDuration::seconds(30).is_ok());
    /// assert!(LeaseDuration::seconds(10).is_err());
    /// ```
    pub fn seconds(secs: u64) -> Result<LeaseDuration> {
        if (15..=60).contains(&secs) {
            Ok(LeaseDuration::Fixed(secs as u8))
        } else {
            Err(Error::invalid_input(format!(
                "lease duration must be 15-60 seconds or infinite (got {secs} s)"
            )))
        }
    }

    /// The `x-ms-lease-duration` header value (`-1` for infinite).
    pub fn header_value(self) -> String {
        match self {
            LeaseDuration::Fixed(s) => s.to_string(),
            LeaseDuration::Infinite => "-1".to_string(),
        }
    }

    /// The duration, or `None` when infinite.
    pub fn as_duration(self) -> Option<Duration> {
        match self {
            LeaseDuration::Fixed(s) => Some(Duration::from_secs(s.into())),
            LeaseDuration::Infinite => None,
        }
    }
}

/// How long a break waits before the lease ends: 0–60 seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BreakPeriod(u8);

impl BreakPeriod {
    /// A break period; `InvalidInput` above 60 s.
    pub fn seconds(secs: u64) -> Result<BreakPeriod> {
        if secs <= 60 {
            Ok(BreakPeriod(secs as u8))
        } else {
            Err(Error::invalid_input(format!(
                "break period must be 0-60 seconds (got {secs} s)"
            )))
        }
    }

    /// Break at once.
    pub fn immediate() -> BreakPeriod {
        BreakPeriod(0)
    }

    /// The seconds.
    pub fn as_secs(self) -> u8 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert!(LeaseDuration::seconds(14).is_err());
        assert!(LeaseDuration::seconds(61).is_err());
        assert_eq!(LeaseDuration::seconds(15).unwrap().header_value(), "15");
        assert_eq!(LeaseDuration::Infinite.header_value(), "-1");
        assert!(BreakPeriod::seconds(61).is_err());
        assert_eq!(BreakPeriod::seconds(60).unwrap().as_secs(), 60);
    }
}
