//! [`ClientOptions`]: the time limits, retries and transport shared by the clients built
//! from them.

use std::time::Duration;

use crate::http::retry::RetryPolicy;
use crate::http::transport::TransportOptions;

/// Options shared by every client built from them: time limits and retries.
///
/// # Timeouts, retries and failure
/// * Every call ends within [`total_timeout`](Self::total_timeout) (default 60 s): all its
///   attempts and the waits between them. Each attempt ends within
///   [`timeout`](Self::timeout) (default 30 s), or sooner when the budget ends first.
/// * Retried (re-signed each time, delays from [`RetryPolicy`], default 3 retries from 200 ms
///   doubling to 10 s with full jitter): 408, 429, 500, 502, 503, 504; a connection that
///   could not be established; a timeout or dropped connection only for a request whose
///   [`Intent`](crate::http::Intent) is a read or an idempotent write. A `Retry-After`
///   raises a delay, never above the policy's max delay.
/// * Never retried: 304, 409, 412 and every other answer; a conditional write or a
///   non-idempotent request whose response was lost; input that cannot be sent (a header
///   with CR, LF or NUL, an empty ETag), which is
///   [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before anything is sent.
/// * An error's [`RequestSent`](crate::RequestSent) tells whether the request may have been
///   applied: `Maybe` means the response was lost and a write may have happened — find out
///   before repeating it ([`update`](crate::update::update) does so by itself).
///
/// ```
/// use std::time::Duration;
/// use azstore::http::ClientOptions;
/// let fail_fast = ClientOptions::default()
///     .timeout(Duration::from_secs(2))
///     .total_timeout(Duration::from_secs(5));
/// assert_eq!(fail_fast.total_timeout, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct ClientOptions {
    /// Transient-failure retries.
    pub retry: RetryPolicy,
    /// Time allowed per attempt until the response body is read (for streamed downloads:
    /// until the headers arrive, and then between two chunks of the body). Default 30 s.
    pub timeout: Duration,
    /// The total time budget of one call: every attempt and every wait between attempts end
    /// within it (for streamed downloads: until the headers arrive). Default 60 s;
    /// `Duration::MAX` for none.
    pub total_timeout: Duration,
    /// How long an idle pooled connection is kept. Keep it below the server's keep-alive
    /// timeout (Azurite and Node: 5 s) so a request is never written to a connection the
    /// server is closing at that moment — a failure that looks ambiguous (`RequestSent::Maybe`)
    /// and so cannot be retried for non-idempotent writes. Default 4 s.
    pub pool_idle_timeout: Duration,
    /// TLS roots, proxy, connect timeout or a client of your own; the bearer-over-HTTP rule.
    pub transport: TransportOptions,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(60),
            pool_idle_timeout: Duration::from_secs(4),
            transport: TransportOptions::default(),
        }
    }
}

impl ClientOptions {
    /// Replaces the retry policy (default [`RetryPolicy::default()`]: 3 retries from
    /// 200 ms doubling to 10 s, full jitter).
    ///
    /// ```
    /// use azstore::http::{ClientOptions, RetryPolicy};
    /// // A batch job that may wait out a longer outage: 8 retries.
    /// let options = ClientOptions::default().retry(RetryPolicy::default().max_retries(8));
    /// # let _ = options;
    /// ```
    pub fn retry(mut self, v: RetryPolicy) -> Self {
        self.retry = v;
        self
    }

    /// Replaces the per-attempt timeout (default 30 s): how long one attempt may take
    /// until its response body is read (for streamed downloads: until the headers, then
    /// between two chunks).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::http::ClientOptions::default().timeout(Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    pub fn timeout(mut self, v: Duration) -> Self {
        self.timeout = v;
        self
    }

    /// Replaces the total time budget of a call: all attempts and the waits between them
    /// (default 60 s; `Duration::MAX` for none).
    ///
    /// ```
    /// use std::time::Duration;
    /// // An interactive request: answer or fail within 3 s, retries included.
    /// let options = azstore::http::ClientOptions::default().total_timeout(Duration::from_secs(3));
    /// # let _ = options;
    /// ```
    pub fn total_timeout(mut self, v: Duration) -> Self {
        self.total_timeout = v;
        self
    }

    /// Replaces how long an idle pooled connection is kept (default 4 s). Keep it below
    /// the server's keep-alive timeout (Azurite: 5 s) so that no request goes out on a
    /// connection the server is closing.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::http::ClientOptions::default().pool_idle_timeout(Duration::from_secs(2));
    /// # let _ = options;
    /// ```
    pub fn pool_idle_timeout(mut self, v: Duration) -> Self {
        self.pool_idle_timeout = v;
        self
    }

    /// Replaces the transport options (TLS roots, proxy, connect timeout, own client);
    /// default [`TransportOptions::default()`]: the bundled Mozilla roots and the proxy of
    /// `HTTPS_PROXY` and the other standard variables.
    ///
    /// ```
    /// use azstore::http::{ClientOptions, TransportOptions};
    /// let options = ClientOptions::default().transport(TransportOptions::default());
    /// # let _ = options;
    /// ```
    pub fn transport(mut self, v: TransportOptions) -> Self {
        self.transport = v;
        self
    }
}
