//! One lease operation ([`LeaseOp`]) and the one helper that sends it ([`send`]) for every
//! leasable resource: blobs, containers (`blob/lease.rs`), shares and files (`file/lease.rs`).

use crate::conditions::LeaseId;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::http::{Pipeline, Request, Response};
use crate::lease::{BreakPeriod, LeaseBroken, LeaseDuration, LeaseReleased, LeaseResult};

/// One lease operation, as the headers every leasable resource shares (`comp=lease`,
/// `x-ms-lease-action`, …). The service modules add their own path, `restype` and conditions;
/// [`send`] turns that base request into the lease request, sends it and reads the answer, for
/// blobs, containers, shares and files alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseOp<'a> {
    /// Acquire for `duration`, proposing `proposed`.
    Acquire {
        duration: LeaseDuration,
        proposed: &'a LeaseId,
    },
    /// Renew `id`.
    Renew(&'a LeaseId),
    /// Change `id` into `proposed`.
    Change {
        id: &'a LeaseId,
        proposed: &'a LeaseId,
    },
    /// Release `id`.
    Release(&'a LeaseId),
    /// Break, after `period` (None: the service default).
    Break(Option<BreakPeriod>),
}

impl LeaseOp<'_> {
    /// The `x-ms-lease-action` value.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            LeaseOp::Acquire { .. } => "acquire",
            LeaseOp::Renew(_) => "renew",
            LeaseOp::Change { .. } => "change",
            LeaseOp::Release(_) => "release",
            LeaseOp::Break(_) => "break",
        }
    }

    /// Adds `comp=lease` and the lease headers to `req`.
    pub(crate) fn apply(&self, req: Request) -> Request {
        let req = req
            .query("comp", "lease")
            .header("x-ms-lease-action", self.name());
        match self {
            LeaseOp::Acquire { duration, proposed } => req
                .header("x-ms-lease-duration", duration.header_value())
                .header("x-ms-proposed-lease-id", proposed.as_str()),
            LeaseOp::Renew(id) | LeaseOp::Release(id) => req.header("x-ms-lease-id", id.as_str()),
            LeaseOp::Change { id, proposed } => req
                .header("x-ms-lease-id", id.as_str())
                .header("x-ms-proposed-lease-id", proposed.as_str()),
            LeaseOp::Break(period) => req.header_opt(
                "x-ms-lease-break-period",
                period.map(|p| p.as_secs().to_string()),
            ),
        }
    }
}

/// The answer of a lease operation: [`LeaseResult`] (acquire, renew, change),
/// [`LeaseReleased`] or [`LeaseBroken`].
pub(crate) trait LeaseReply: Sized {
    /// Reads the answer to `op`.
    fn read(resp: &Response, op: &LeaseOp<'_>) -> Result<Self>;
}

impl LeaseReply for LeaseResult {
    fn read(resp: &Response, op: &LeaseOp<'_>) -> Result<LeaseResult> {
        let sent = match op {
            LeaseOp::Acquire { proposed, .. } | LeaseOp::Change { proposed, .. } => Some(*proposed),
            LeaseOp::Renew(id) => Some(*id),
            LeaseOp::Release(_) | LeaseOp::Break(_) => None,
        };
        LeaseResult::from_response(resp, sent)
    }
}

impl LeaseReply for LeaseReleased {
    fn read(resp: &Response, _: &LeaseOp<'_>) -> Result<LeaseReleased> {
        Ok(LeaseReleased::from_response(resp))
    }
}

impl LeaseReply for LeaseBroken {
    fn read(resp: &Response, _: &LeaseOp<'_>) -> Result<LeaseBroken> {
        LeaseBroken::from_response(resp)
    }
}

/// Sends `op` on the resource addressed by `base` (its `PUT` request with path, `restype` and
/// conditions) and reads the answer: the one body of every service's lease methods.
pub(crate) async fn send<R: LeaseReply>(
    pipeline: &Pipeline,
    base: Request,
    op: LeaseOp<'_>,
) -> Result<R> {
    let resp = pipeline.send(op.apply(base)).await?;
    R::read(&resp, &op)
}

/// The lease responses' headers (`x-ms-lease-id`, `x-ms-lease-time`), read into the lease
/// engine's values.
impl LeaseResult {
    /// Reads the result of an acquire/renew/change; `sent` is the id we sent or proposed, used
    /// when the service does not echo one (it always should).
    pub(crate) fn from_response(resp: &Response, sent: Option<&LeaseId>) -> Result<LeaseResult> {
        let lease_id = match (resp.headers.get("x-ms-lease-id"), sent) {
            (Some(id), _) => LeaseId::from_service(id.trim().to_string()),
            (None, Some(id)) => id.clone(),
            (None, None) => {
                return Err(Error::decode(
                    "lease response is missing the x-ms-lease-id header",
                ));
            }
        };
        Ok(LeaseResult {
            lease_id,
            etag: resp.headers.etag(),
            last_modified: resp.headers.last_modified(),
        })
    }
}

impl LeaseReleased {
    pub(crate) fn from_response(resp: &Response) -> LeaseReleased {
        LeaseReleased {
            etag: resp.headers.etag(),
            last_modified: resp.headers.last_modified(),
        }
    }
}

impl LeaseBroken {
    pub(crate) fn from_response(resp: &Response) -> Result<LeaseBroken> {
        let secs: u64 = resp.headers.parse("x-ms-lease-time")?.unwrap_or(0);
        Ok(LeaseBroken {
            remaining: Duration::from_secs(secs),
            etag: resp.headers.etag(),
            last_modified: resp.headers.last_modified(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_op_headers() {
        use crate::http::Method;
        let id = LeaseId::random();
        let p = LeaseId::random();
        let r = LeaseOp::Acquire {
            duration: LeaseDuration::Infinite,
            proposed: &p,
        }
        .apply(Request::new(Method::Put, "c/b"));
        assert_eq!(r.header_value("x-ms-lease-action"), Some("acquire"));
        assert_eq!(r.header_value("x-ms-lease-duration"), Some("-1"));
        assert_eq!(r.header_value("x-ms-proposed-lease-id"), Some(p.as_str()));
        assert_eq!(r.query_string(&[]), "comp=lease");
        let r = LeaseOp::Change {
            id: &id,
            proposed: &p,
        }
        .apply(Request::new(Method::Put, "c/b"));
        assert_eq!(r.header_value("x-ms-lease-id"), Some(id.as_str()));
        let r = LeaseOp::Break(None).apply(Request::new(Method::Put, "c/b"));
        assert_eq!(r.header_value("x-ms-lease-break-period"), None);
        let r =
            LeaseOp::Break(Some(BreakPeriod::immediate())).apply(Request::new(Method::Put, "c"));
        assert_eq!(r.header_value("x-ms-lease-break-period"), Some("0"));
    }
}
