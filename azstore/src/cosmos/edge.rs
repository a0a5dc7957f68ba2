//! Azure Cosmos DB's edge on the wire: every attempt carries `x-ms-date` (which the master
//! key signature covers) and `x-ms-version`, is authorized by the account's key or an Entra ID
//! token, and a refusal reads from the JSON body (`{"code": …, "message": …}`); a 429 asks
//! for its delay in `x-ms-retry-after-ms`; the service's id of a request is its activity id.

use std::any::Any;
use std::time::Duration;

use crate::cosmos::COSMOS_API_VERSION;
use crate::cosmos::auth::{CosmosAuth, authorize, sign};
use crate::error::Error;
use crate::http::Headers;
use crate::http::edge::{Authorization, Authorizing, Edge, Labels, Unsigned, refusal, stamp};

/// The edge of one Cosmos DB account.
pub(crate) struct CosmosEdge(pub(crate) CosmosAuth);

impl std::fmt::Debug for CosmosEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let auth = match self.0 {
            CosmosAuth::Key(_) => "key",
            CosmosAuth::Token(_) => "token",
        };
        write!(f, "CosmosEdge({auth}: <redacted>)")
    }
}

impl Edge for CosmosEdge {
    fn labels(&self) -> Labels {
        Labels {
            namespace: "Microsoft.DocumentDB",
            service: "cosmos",
        }
    }

    fn stamp(&self, headers: &mut Vec<(String, String)>, client_request_id: &str) {
        stamp(headers, "x-ms-date", crate::time_fmt::http_date_now());
        stamp(headers, "x-ms-version", COSMOS_API_VERSION);
        stamp(headers, "x-ms-client-request-id", client_request_id);
    }

    fn authorize<'a>(&'a self, req: Unsigned<'a>) -> Authorizing<'a> {
        match &self.0 {
            CosmosAuth::Key(key) => Authorizing::Ready(sign(key, &req).map(Authorization::Header)),
            CosmosAuth::Token(_) => Authorizing::Later(Box::pin(async move {
                authorize(&self.0, &req).await.map(Authorization::Header)
            })),
        }
    }

    fn refusal(&self, status: u16, headers: &Headers, body: &[u8]) -> Error {
        let (code, message) = parse_error_body(body);
        refusal(status, code, message, self.request_id(headers))
    }

    /// `x-ms-retry-after-ms` (milliseconds), else the standard forms.
    fn retry_after(&self, headers: &Headers) -> Option<Duration> {
        match headers
            .get("x-ms-retry-after-ms")
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            Some(ms) => Some(Duration::from_millis(ms)),
            None => crate::http::checks::retry_after(headers),
        }
    }

    fn request_id<'h>(&self, headers: &'h Headers) -> Option<&'h str> {
        headers
            .get("x-ms-activity-id")
            .or_else(|| headers.get("x-ms-request-id"))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Extracts (code, message) from a Cosmos DB error body: `{"code":"PreconditionFailed",
/// "message":"…"}`. An empty code or message is none. Never panics, whatever the body holds.
fn parse_error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (None, None);
    };
    let text = |k: &str| {
        v.get(k)
            .and_then(|c| c.as_str())
            .filter(|c| !c.is_empty())
            .map(str::to_string)
    };
    (text("code"), text("message"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_and_retry_delays() {
        let (c, m) = parse_error_body(
            br#"{"code":"PreconditionFailed","message":"Operation cannot be performed"}"#,
        );
        assert_eq!(c.as_deref(), Some("PreconditionFailed"));
        assert_eq!(m.as_deref(), Some("Operation cannot be performed"));
        assert_eq!(parse_error_body(br#"{"message":""}"#), (None, None));
        for junk in [&b""[..], b"<html>", b"\xff", b"[1,2]", b"{\"code\":7}"] {
            assert_eq!(parse_error_body(junk), (None, None));
        }
        let edge = CosmosEdge(CosmosAuth::Key(
            crate::cosmos::CosmosKey::new(crate::cosmos::EMULATOR_KEY).unwrap(),
        ));
        let h = Headers::from_pairs(vec![("x-ms-retry-after-ms".into(), "250".into())]);
        assert_eq!(edge.retry_after(&h), Some(Duration::from_millis(250)));
        let e = edge.refusal(412, &h, br#"{"code":"PreconditionFailed"}"#);
        assert_eq!(e.status(), Some(412));
        assert_eq!(e.message(), "precondition failed");
        assert!(!format!("{edge:?}").contains("C2y6"));
    }
}
