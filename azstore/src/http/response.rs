//! Responses: header access, success check, and error-body parsing that never panics.

use std::collections::BTreeMap;

use bytes::Bytes;
use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::{Error, ErrorCode, Result};

/// Response headers (names are case-insensitive; ask with lower-case names). Values that
/// are not UTF-8 are treated as absent.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::http::{Method, Request};
/// let path = format!("{}/{}", blob.container_name(), blob.name());
/// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
/// println!("{:?} {:?}", resp.headers.etag(), resp.headers.get("content-type"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Headers(http::HeaderMap);

fn utf8(v: &http::HeaderValue) -> Option<&str> {
    std::str::from_utf8(v.as_bytes()).ok()
}

impl Headers {
    /// Headers from name/value pairs; pairs that are not valid HTTP headers are dropped.
    pub(crate) fn from_pairs(pairs: Vec<(String, String)>) -> Headers {
        let mut map = http::HeaderMap::with_capacity(pairs.len());
        for (k, v) in pairs {
            if let (Ok(k), Ok(v)) = (
                http::HeaderName::from_bytes(k.as_bytes()),
                http::HeaderValue::from_str(&v),
            ) {
                map.append(k, v);
            }
        }
        Headers(map)
    }

    pub(crate) fn from_map(map: http::HeaderMap) -> Headers {
        Headers(map)
    }

    /// The first value of `name` (lower-case).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.get("x-ms-blob-type"));
    /// # Ok(()) }
    /// ```
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(utf8)
    }

    /// The value of `name`, or a decode error saying it is missing.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// let kind = resp.headers.require("x-ms-blob-type")?;
    /// # let _ = kind;
    /// # Ok(()) }
    /// ```
    pub fn require(&self, name: &str) -> Result<&str> {
        self.get(name)
            .ok_or_else(|| Error::decode(format!("response is missing the {name} header")))
    }

    /// Parses `name` with `FromStr`, `None` when absent, an error when malformed.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// let size: Option<u64> = resp.headers.parse("content-length")?;
    /// # let _ = size;
    /// # Ok(()) }
    /// ```
    pub fn parse<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| Error::decode(format!("response header {name} is malformed"))),
        }
    }

    /// `ETag` (a blank one counts as absent).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.etag());
    /// # Ok(()) }
    /// ```
    pub fn etag(&self) -> Option<ETag> {
        self.get("etag")
            .filter(|v| !v.trim().is_empty())
            .map(ETag::new)
    }

    /// `ETag`, required (a blank one is a decode error).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// let etag = resp.headers.require_etag()?;
    /// # let _ = etag;
    /// # Ok(()) }
    /// ```
    pub fn require_etag(&self) -> Result<ETag> {
        self.etag()
            .ok_or_else(|| Error::decode("response is missing the etag header"))
    }

    /// `Last-Modified`.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.last_modified());
    /// # Ok(()) }
    /// ```
    pub fn last_modified(&self) -> Option<OffsetDateTime> {
        self.get("last-modified")
            .and_then(crate::time_fmt::parse_http_date)
    }

    /// An RFC 1123 date header.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.date("x-ms-creation-time"));
    /// # Ok(()) }
    /// ```
    pub fn date(&self, name: &str) -> Option<OffsetDateTime> {
        self.get(name).and_then(crate::time_fmt::parse_http_date)
    }

    /// `x-ms-request-id`.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("request {:?}", resp.headers.request_id());
    /// # Ok(()) }
    /// ```
    pub fn request_id(&self) -> Option<&str> {
        self.get("x-ms-request-id")
    }

    /// All `x-ms-meta-*` headers, keyed by the name after the prefix.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.metadata());
    /// # Ok(()) }
    /// ```
    pub fn metadata(&self) -> BTreeMap<String, String> {
        self.iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("x-ms-meta-")
                    .map(|n| (n.to_string(), v.to_string()))
            })
            .collect()
    }

    /// Iterates all headers with UTF-8 values.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// for (name, value) in resp.headers.iter() {
    ///     println!("{name}: {value}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .filter_map(|(k, v)| utf8(v).map(|v| (k.as_str(), v)))
    }
}

/// A successful (2xx) response with its body read.
///
/// ```no_run
/// # async fn demo(queues: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
/// use azstore::http::{Method, Request};
/// // Get Queue Service Stats: an operation azstore does not wrap.
/// let req = Request::new(Method::Get, "").query("restype", "service").query("comp", "stats");
/// let resp = queues.pipeline().send(req).await?;
/// println!("{} {}", resp.status, String::from_utf8_lossy(&resp.body));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Headers.
    pub headers: Headers,
    /// Body.
    pub body: Bytes,
}

/// Builds the error for a non-success response. Never panics, whatever the body holds.
pub(crate) fn error_from_parts(status: u16, headers: &Headers, body: &[u8]) -> Error {
    let header_code = headers.get("x-ms-error-code").map(str::to_string);
    let (body_code, body_message) = parse_error_body(body);
    let code = header_code.or(body_code).map(|c| ErrorCode::parse(&c));
    let message = body_message
        .map(|m| crate::redact::redact(&m))
        .unwrap_or_else(|| default_message(status).to_string());
    Error::from_response(
        status,
        code,
        message,
        headers.request_id().map(str::to_string),
    )
}

/// A 401/403 of a storage account says what to check for the credential azstore sent with
/// it: azstore signs or authorizes the request itself, so the request's form is not the
/// cause. Other answers pass unchanged.
pub(crate) fn with_auth_hint(
    e: Error,
    credential: &crate::credential::Credential,
    account: &str,
) -> Error {
    use crate::credential::Credential;
    if !matches!(e.status(), Some(401 | 403)) {
        return e;
    }
    let code = e
        .error_code()
        .map(|c| c.as_str().to_string())
        .unwrap_or_default();
    let hint = match credential {
        Credential::SharedKey(_) if code == "KeyBasedAuthenticationNotPermitted" => format!(
            "account {account} does not allow Shared Key access: use Microsoft Entra ID \
             (azstore's `identity` feature) or a user delegation SAS"
        ),
        Credential::SharedKey(_) => format!(
            "azstore signed this request with a Shared Key for account `{account}`: check the \
             account name and its key (Azure portal: Storage account > Access keys; a \
             regenerated key replaces the old one), and that the account accepts requests \
             from this network"
        ),
        Credential::Sas(_) => "the request carried a SAS: check its expiry (se) and start \
             (st), its permissions (sp), its services and resource types or resource, and \
             its allowed IP range (sip)"
            .to_string(),
        Credential::Bearer(_) => format!(
            "the request carried a Microsoft Entra ID token: check the identity's role \
             assignment on account `{account}` (a data role such as Storage Blob Data \
             Contributor; a new assignment takes a few minutes to apply)"
        ),
        Credential::Anonymous => "the request carried no credential (the resource is not \
             public): give the account a key, SAS or token"
            .to_string(),
    };
    e.hint(hint)
}

fn default_message(status: u16) -> &'static str {
    match status {
        304 => "not modified",
        400 => "bad request",
        401 | 403 => "not authorized",
        404 => "not found",
        409 => "conflict",
        412 => "precondition failed",
        416 => "range not satisfiable",
        429 => "too many requests",
        500 => "internal server error",
        503 => "server busy",
        _ => "request failed",
    }
}

/// Extracts (code, message) from an XML `<Error>` or a Table JSON `odata.error` body.
pub(crate) fn parse_error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    if trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
            let err = v.get("odata.error").or_else(|| v.get("error"));
            if let Some(err) = err {
                let code = err.get("code").and_then(|c| c.as_str()).map(str::to_string);
                let message = match err.get("message") {
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(m) => m.get("value").and_then(|v| v.as_str()).map(str::to_string),
                    None => None,
                };
                return (code, message);
            }
            // Azure Cosmos DB: `{"code":"PreconditionFailed","message":"…"}`.
            let text = |k: &str| {
                v.get(k)
                    .and_then(|c| c.as_str())
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
            };
            return (text("code"), text("message"));
        }
        return (None, None);
    }
    if trimmed.starts_with('<') {
        return (xml_text(trimmed, "Code"), xml_text(trimmed, "Message"));
    }
    (None, None)
}

/// The text of the first element named `name` (local name), if any.
fn xml_text(xml: &str, name: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut inside = false;
    let mut out = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) if e.local_name().as_ref() == name => inside = true,
            Ok(Event::Text(t)) if inside => out.push_str(&t.into_inner()),
            Ok(Event::GeneralRef(r))
                if inside && !crate::http::encode::push_xml_reference(&r, &mut out) =>
            {
                return None;
            }
            Ok(Event::CData(t)) if inside => out.push_str(&t.into_inner()),
            Ok(Event::End(e)) if inside && e.local_name().as_ref() == name => {
                return Some(out.trim().to_string());
            }
            Ok(Event::Eof) | Err(_) => return None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_refusals_name_what_to_check_for_each_credential() {
        use crate::credential::{Credential, SasToken, SharedKeyCredential, StaticToken};
        let refused = || {
            let h = Headers::from_map(Default::default());
            error_from_parts(403, &h, b"")
        };
        let key = Credential::SharedKey(SharedKeyCredential::new("acct1", "a2V5").unwrap());
        let sas = Credential::Sas(SasToken::new("sv=2025-11-05&sig=SECRET").unwrap());
        let bearer = Credential::bearer(StaticToken::new("tok.en").unwrap());
        let cases = [
            (key, "check the account name and its key"),
            (sas, "its expiry"),
            (bearer, "role assignment"),
            (Credential::Anonymous, "no credential"),
        ];
        for (credential, expect) in cases {
            let e = with_auth_hint(refused(), &credential, "acct1");
            assert!(e.to_string().contains(expect), "{e}");
            assert!(!e.to_string().contains("SECRET"), "{e}");
        }
        // Other answers are left alone.
        let h = Headers::from_map(Default::default());
        let e = with_auth_hint(error_from_parts(412, &h, b""), &Credential::Anonymous, "a");
        assert_eq!(e.message(), "precondition failed");
    }

    #[test]
    fn xml_and_json_errors() {
        let xml = b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ConditionNotMet</Code><Message>The condition specified using HTTP conditional header(s) is not met.\nRequestId:1</Message></Error>";
        let (c, m) = parse_error_body(xml);
        assert_eq!(c.as_deref(), Some("ConditionNotMet"));
        assert!(m.unwrap().starts_with("The condition"));
        let json = br#"{"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US","value":"0:The update condition specified in the request was not satisfied."}}}"#;
        let (c, m) = parse_error_body(json);
        assert_eq!(c.as_deref(), Some("UpdateConditionNotSatisfied"));
        assert!(m.unwrap().starts_with("0:"));
        let h = Headers::from_pairs(vec![("x-ms-error-code".into(), "LeaseIdMissing".into())]);
        let e = error_from_parts(412, &h, b"");
        assert_eq!(e.error_code(), Some(&ErrorCode::LeaseIdMissing));
        assert_eq!(e.message(), "precondition failed");
        assert_eq!(parse_error_body(b"<Error><Code>unterminated"), (None, None));
        // Azure Cosmos DB: top-level code and message; an empty message is no message.
        let (c, m) = parse_error_body(
            br#"{"code":"PreconditionFailed","message":"Operation cannot be performed"}"#,
        );
        assert_eq!(c.as_deref(), Some("PreconditionFailed"));
        assert_eq!(m.as_deref(), Some("Operation cannot be performed"));
        assert_eq!(parse_error_body(br#"{"message":""}"#), (None, None));
    }

    #[test]
    fn references_in_xml_error_text_are_resolved() {
        // The reader reports `&lt;` and `&#39;` apart from the text around them.
        let xml = b"<Error><Code>InvalidXmlNodeValue</Code><Message>value &lt;x&gt; isn&#39;t &amp; wasn&apos;t</Message></Error>";
        let (c, m) = parse_error_body(xml);
        assert_eq!(c.as_deref(), Some("InvalidXmlNodeValue"));
        assert_eq!(m.as_deref(), Some("value <x> isn't & wasn't"));
        // A reference XML does not define: no text rather than a wrong one.
        assert_eq!(
            parse_error_body(b"<Error><Code>A&nbsp;B</Code></Error>"),
            (None, None)
        );
    }
}
