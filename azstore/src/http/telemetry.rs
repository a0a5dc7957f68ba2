//! The pipeline's spans and call metrics: one operation span per call ([`Call`]), one HTTP
//! client span per attempt.

use tracing::Span;
use tracing::field::Empty;

use crate::error::{Error, ErrorKind};
use crate::http::edge::{Edge, Labels};
use crate::http::request::Request;

/// The operation's name: the request's own, else the one the backend's edge gives it.
pub(crate) fn operation_name(edge: &dyn Edge, req: &Request) -> String {
    match req.operation {
        Some(op) => op.to_string(),
        None => edge.operation_name(req),
    }
}

/// `error.type`: the service's error code, else the status, else the error kind.
pub(crate) fn error_type(e: &Error) -> String {
    if let Some(code) = e.error_code() {
        return code.to_string();
    }
    if let Some(status) = e.status() {
        return status.to_string();
    }
    match e.kind() {
        ErrorKind::Timeout => "timeout".to_string(),
        ErrorKind::Transport => "transport".to_string(),
        other => format!("{other:?}"),
    }
}

/// One call through the pipeline: its operation span, and (with the `metrics` feature) its
/// start and the labels of its metrics.
pub(crate) struct Call {
    span: Span,
    labels: Labels,
    #[cfg(feature = "metrics")]
    started: tokio::time::Instant,
    #[cfg(feature = "metrics")]
    service: &'static str,
    #[cfg(feature = "metrics")]
    operation: String,
}

impl Call {
    /// Opens the operation span of `req` (nothing is computed when no subscriber listens).
    pub(crate) fn start(edge: &dyn Edge, req: &Request) -> Call {
        let labels = edge.labels();
        let span = tracing::info_span!(
            "azstore.operation",
            otel.name = %format_args!(
                "azstore.{}.{}",
                labels.service,
                operation_name(edge, req)
            ),
            az.namespace = labels.namespace,
            azstore.operation = %operation_name(edge, req),
            http.request.resend_count = Empty,
            error.type = Empty,
        );
        Call {
            span,
            labels,
            #[cfg(feature = "metrics")]
            started: tokio::time::Instant::now(),
            #[cfg(feature = "metrics")]
            service: labels.service,
            #[cfg(feature = "metrics")]
            operation: operation_name(edge, req),
        }
    }

    /// The operation span.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// The HTTP client span of attempt number `attempt` (1 for the first).
    pub(crate) fn attempt_span(
        &self,
        attempt: u32,
        req: &Request,
        client_request_id: &str,
        origin: &reqwest::Url,
        full_path: impl FnOnce() -> String,
    ) -> Span {
        tracing::info_span!(
            parent: &self.span,
            "azstore.attempt",
            otel.name = req.method.as_str(),
            otel.kind = "client",
            az.namespace = self.labels.namespace,
            az.client_request_id = client_request_id,
            az.service_request.id = Empty,
            http.request.method = req.method.as_str(),
            http.request.resend_count = attempt.saturating_sub(1),
            http.response.status_code = Empty,
            server.address = origin.host_str().unwrap_or_default(),
            server.port = origin.port_or_known_default().unwrap_or_default(),
            url.full = %url_full(origin, &full_path(), req),
            error.type = Empty,
        )
    }

    /// Records a response on the attempt span.
    pub(crate) fn answered(span: &Span, status: u16, request_id: Option<&str>) {
        if span.is_disabled() {
            return;
        }
        span.record("http.response.status_code", status);
        if let Some(id) = request_id {
            span.record("az.service_request.id", id);
        }
    }

    /// Records a failed attempt on its span.
    pub(crate) fn failed(span: &Span, e: &Error) {
        if span.is_disabled() {
            return;
        }
        if let Some(status) = e.status() {
            span.record("http.response.status_code", status);
        }
        if let Some(id) = e.request_id() {
            span.record("az.service_request.id", id);
        }
        span.record("error.type", error_type(e).as_str());
    }

    /// Ends the call after `attempts` attempts with `result`.
    pub(crate) fn end<T>(self, attempts: u32, result: &crate::error::Result<T>) {
        if !self.span.is_disabled() {
            if attempts > 1 {
                self.span
                    .record("http.request.resend_count", attempts.saturating_sub(1));
            }
            if let Err(e) = result {
                self.span.record("error.type", error_type(e).as_str());
            }
        }
        #[cfg(feature = "metrics")]
        {
            use crate::telemetry::names::{CALL_ATTEMPTS, CALL_DURATION};
            let elapsed = crate::telemetry::secs(self.started.elapsed());
            let service = self.service;
            match result {
                Ok(_) => {
                    metrics::histogram!(CALL_DURATION, "azstore.service" => service,
                        "azstore.operation" => self.operation.clone())
                    .record(elapsed);
                }
                Err(e) => {
                    metrics::histogram!(CALL_DURATION, "azstore.service" => service,
                        "azstore.operation" => self.operation.clone(), "error.type" => error_type(e))
                    .record(elapsed);
                }
            }
            metrics::histogram!(CALL_ATTEMPTS, "azstore.service" => service,
                "azstore.operation" => self.operation)
            .record(f64::from(attempts));
        }
        #[cfg(not(feature = "metrics"))]
        let _ = attempts;
    }
}

/// `url.full`: origin, path and the request's own query (never the query a SAS credential
/// adds), with any `sig=` value that a caller put in the query redacted.
fn url_full(origin: &reqwest::Url, full_path: &str, req: &Request) -> String {
    let mut url = origin.as_str().trim_end_matches('/').to_string();
    url.push_str(full_path);
    let query = req.query_string(&[]);
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query);
    }
    crate::redact::redact(&url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;

    #[test]
    fn url_full_redacts_a_signature_in_the_query() {
        let origin = reqwest::Url::parse("https://acct.blob.core.windows.net").unwrap();
        let r = Request::new(Method::Get, "c/b").query("sig", "SECRET");
        let url = url_full(&origin, "/c/b", &r);
        assert_eq!(url, "https://acct.blob.core.windows.net/c/b?sig=<redacted>");
        // A SAS URL inside a query value arrives percent-encoded: redacted all the same.
        let r = Request::new(Method::Get, "c/b").query("src", "https://y/b?sv=1&sig=SECRET&se=2");
        let url = url_full(&origin, "/c/b", &r);
        assert!(!url.contains("SECRET"), "{url}");
        assert!(url.contains("%26sig%3D<redacted>%26se%3D2"), "{url}");
    }
}
