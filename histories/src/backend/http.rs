//! Faults on HTTP traffic: testkit's fault proxy in front of a real server, used by the HTTP
//! backends and by the campaign for the fenced resources, the effects and the queue.

use azstore::{Service, StorageAccount};
use futures_util::future::BoxFuture;
use testkit::fault::{Fault, FaultProxy, Rule};

use super::Faults;
use crate::rng::Rng;

/// A fault proxy and the methods whose requests its faults aim at (`""`: any request).
pub struct HttpFaults {
    /// The proxy.
    pub proxy: FaultProxy,
    methods: &'static [&'static str],
}

impl HttpFaults {
    /// A proxy in front of `account`'s `service`.
    pub async fn start(
        account: &StorageAccount,
        service: Service,
        methods: &'static [&'static str],
    ) -> HttpFaults {
        HttpFaults {
            proxy: FaultProxy::start(account, service).await,
            methods,
        }
    }

    /// A proxy in front of `hostport`.
    pub async fn to_host(hostport: &str, methods: &'static [&'static str]) -> HttpFaults {
        HttpFaults {
            proxy: FaultProxy::to_host(hostport).await,
            methods,
        }
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.proxy.port()
    }
}

impl Faults for HttpFaults {
    fn inject<'a>(&'a self, rng: &'a mut Rng) -> BoxFuture<'a, String> {
        let fault = random_fault(rng);
        let method = self.methods[rng.below(self.methods.len() as u64) as usize];
        let times = rng.between(1, 2) as usize;
        let mut rule = Rule::new(fault.clone()).times(times);
        if !method.is_empty() {
            rule = rule.method(method);
        }
        self.proxy.inject(rule);
        let on = if method.is_empty() { "any" } else { method };
        Box::pin(async move { format!("http: {fault:?} x{times} on {on}") })
    }

    fn clear(&self) {
        self.proxy.clear();
    }
}

/// One fault of the proxy's repertoire at random: resets before and after forwarding, a lost
/// response, no answer, stalled headers or body, a cut body, 500, 503 with `Retry-After`.
pub fn random_fault(rng: &mut Rng) -> Fault {
    match rng.below(10) {
        0 => Fault::ResetBeforeForward,
        1 => Fault::ResetAfterForward,
        2 => Fault::LoseResponse,
        3 => Fault::NeverAnswer,
        4 => Fault::StallHeaders,
        5 => Fault::StallBody {
            after: rng.below(16) as usize,
        },
        6 => Fault::TruncateBody {
            after: rng.below(16) as usize,
        },
        7 => Fault::status(500, "InternalError"),
        8 => Fault::busy_retry_after("1"),
        _ => Fault::status(503, "ServerBusy"),
    }
}
