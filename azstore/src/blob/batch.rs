//! Blob Batch: many Delete Blob subrequests in one request
//! (<https://learn.microsoft.com/rest/api/storageservices/blob-batch>).
//!
//! The request is `POST /<container>?restype=container&comp=batch` with a `multipart/mixed`
//! body: one part per subrequest (`Content-Type: application/http`,
//! `Content-Transfer-Encoding: binary`, `Content-ID: n`), each a whole `DELETE
//! /<container>/<blob> HTTP/1.1` with its own `x-ms-date` and authorization and no
//! `x-ms-version` (the batch's version applies to every subrequest). The service answers 202
//! with a `multipart/mixed` body holding each subrequest's status line, headers
//! (`x-ms-error-code`) and error body, tagged with the subrequest's `Content-ID`. At most 256
//! subrequests per batch, a body of at most 4 MiB, and subrequests are not atomic: each
//! succeeds or fails on its own.
//!
//! Azurite (3.37) implements the operation (`BlobBatchHandler`) with two differences from
//! Azure that this code tolerates: a batch it cannot parse is answered 202 with one
//! subresponse without `Content-ID` holding the error (Azure answers the batch request itself
//! with 400), and the 256-subrequest limit is enforced the same way.

use crate::blob::client::ContainerClient;
use crate::blob::names::validate_blob_name;
use crate::error::{Error, Result};
use crate::http::edge::{Authorization, Unsigned};
use crate::http::{Headers, Intent, Method, Request, encode_path, encode_query_value};
use crate::storage::refusal::error_from_parts;

/// The most subrequests one Blob Batch request may carry; [`ContainerClient::delete_blobs`]
/// sends one request per 256 names.
pub const MAX_BATCH_SUBREQUESTS: usize = 256;

/// The most bytes a Blob Batch request body may have.
const MAX_BATCH_BODY: usize = 4 << 20;

/// The most bytes of a batch reply read into memory: a subresponse is a status line, a few
/// headers and at most a short XML error (under 1 KiB on Azure), so 256 of them fit many
/// times over; a larger reply is a misbehaving server or proxy.
const MAX_BATCH_REPLY: u64 = 4 << 20;

impl ContainerClient {
    /// Deletes the blobs `names` of this container (each with its snapshots, as
    /// [`BlobClient::delete`](crate::blob::BlobClient::delete) with no conditions does) through
    /// Blob Batch: one request per 256 names instead of one per blob. Returns one result per
    /// name, in the order given.
    ///
    /// Each deletion succeeds or fails on its own, with the service's status and code: a blob
    /// that does not exist is an error with [`is_not_found`](crate::Error::is_not_found)
    /// (`BlobNotFound`), a blob under someone else's lease is refused with 412
    /// (`LeaseIdMissing`, [`ErrorKind::LeaseHeld`](crate::ErrorKind::LeaseHeld)). When a batch
    /// request fails as a whole (a timeout, a refused credential, a malformed reply), each of
    /// its names carries that error. The order in which the service runs the deletions of one
    /// batch is not defined: a name given twice is deleted once and the other result is
    /// `BlobNotFound`.
    ///
    /// Refused before anything is sent (the outer `Err`, [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)):
    /// no names, or a name that is not a valid blob name (the message names its index).
    ///
    /// A batch whose outcome is unknown (the connection dropped after it was sent) is sent
    /// again: a deletion repeated leaves the same state, and finds `BlobNotFound` where the
    /// first attempt already deleted the blob.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let names = ["logs/2026-11-01.json", "logs/2026-11-02.json", "logs/2026-11-03.json"];
    /// for (name, result) in names.iter().zip(container.delete_blobs(&names).await?) {
    ///     match result {
    ///         Ok(()) => println!("deleted {name}"),
    ///         Err(e) if e.is_not_found() => println!("{name} was already gone"),
    ///         Err(e) => eprintln!("{name}: {e}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_blobs<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<Result<()>>> {
        if names.is_empty() {
            return Err(Error::invalid_input(
                "delete_blobs needs at least one blob name (Azure refuses an empty batch)",
            ));
        }
        for (i, name) in names.iter().enumerate() {
            validate_blob_name(name.as_ref())
                .map_err(|e| e.context(format!("blob name {i} ({:?})", name.as_ref())))?;
        }
        let mut results = Vec::with_capacity(names.len());
        for chunk in names.chunks(MAX_BATCH_SUBREQUESTS) {
            match self.submit_delete_batch(chunk).await {
                Ok(r) => results.extend(r),
                Err(e) => results.extend(chunk.iter().map(|_| Err(e.duplicate()))),
            }
        }
        Ok(results)
    }

    /// One Blob Batch request deleting `names` (1 to 256 names, already validated): one result
    /// per name, or the error of the batch request as a whole (after the pipeline's retries).
    pub(crate) async fn submit_delete_batch<S: AsRef<str>>(
        &self,
        names: &[S],
    ) -> Result<Vec<Result<()>>> {
        let pipeline = &self.pipeline;
        let boundary = format!("batch_{}", uuid::Uuid::new_v4());
        let body = self.delete_batch_body(&boundary, names).await?;
        // The subrequests are signed once, here: an attempt the pipeline repeats carries the
        // same signatures (SharedKey dates stay valid for 15 minutes, beyond the call's time
        // budget); after a bearer token refused with 401, the repeat carries the new token on
        // the batch request and the old one on its subrequests, which are then refused one by
        // one (401 each) rather than as a whole.
        // A batch of unconditional deletes is an idempotent write, not a conditional one:
        // applied twice it leaves the same state (the repeat finds 404 `BlobNotFound` where
        // the first deleted), so the pipeline may send it again after an ambiguous failure,
        // as it does a single Delete Blob.
        let req = Request::new(Method::Post, &self.name)
            .query("restype", "container")
            .query("comp", "batch")
            .body(body, &format!("multipart/mixed; boundary={boundary}"))
            .intent(Intent::IdempotentWrite)
            .response_limit(MAX_BATCH_REPLY);
        let resp = pipeline.send(req).await?;
        let content_type = resp.headers.get("content-type").unwrap_or_default();
        let reply_boundary = boundary_of(content_type).ok_or_else(|| {
            Error::decode(format!(
                "the Blob Batch reply's Content-Type {content_type:?} names no multipart boundary"
            ))
        })?;
        let parts = parse_batch_reply(&resp.body, reply_boundary)?;
        let slots = by_content_id(parts, names.len())?;
        Ok(slots
            .into_iter()
            .zip(names)
            .map(|(part, name)| {
                if (200..300).contains(&part.status) {
                    return Ok(());
                }
                let e = pipeline
                    .edge()
                    .refusal(part.status, &part.headers, &part.body);
                Err(e.context(format!("Delete Blob {:?} in a batch", name.as_ref())))
            })
            .collect())
    }

    /// The multipart body of a batch deleting `names`, each subrequest authorized on its own.
    async fn delete_batch_body<S: AsRef<str>>(
        &self,
        boundary: &str,
        names: &[S],
    ) -> Result<String> {
        let pipeline = &self.pipeline;
        let prefix = pipeline.endpoint().path_prefix();
        let date = crate::time_fmt::http_date_now();
        let mut body = String::with_capacity(names.len() * 400);
        for (i, name) in names.iter().enumerate() {
            // The path as the pipeline sends it: below the origin, with the endpoint's path
            // prefix (Azurite's `/devstoreaccount1`), percent-encoded.
            let path = format!(
                "{prefix}/{}",
                encode_path(&format!("{}/{}", self.name, name.as_ref()))
            );
            let mut headers = vec![
                ("x-ms-date".to_string(), date.clone()),
                // As BlobClient::delete: the blob goes with its snapshots (a blob with
                // snapshots is otherwise refused with 409 SnapshotsPresent).
                ("x-ms-delete-snapshots".to_string(), "include".to_string()),
            ];
            // The pipeline's own edge authorizes each subrequest as it would a request of its
            // own (and refuses what the endpoint may not receive before anything is sent).
            let authorization = pipeline
                .edge()
                .authorize(Unsigned {
                    method: Method::Delete,
                    path: &path,
                    query: &[],
                    headers: &mut headers,
                    content_length: 0,
                })
                .decided()
                .await?;
            let mut query = String::new();
            match authorization {
                Authorization::None => {}
                Authorization::Header(value) | Authorization::Bearer(value, _) => {
                    let value = value.to_str().map_err(|_| {
                        Error::invalid_input("the credential cannot be sent in a header")
                    })?;
                    headers.push(("authorization".to_string(), value.to_string()));
                }
                // A SAS authorizes each subrequest by the query of its URL.
                Authorization::Query(pairs) => {
                    for (k, v) in pairs {
                        query.push(if query.is_empty() { '?' } else { '&' });
                        query.push_str(&encode_query_value(&k));
                        query.push('=');
                        query.push_str(&encode_query_value(&v));
                    }
                }
            }
            body.push_str("--");
            body.push_str(boundary);
            body.push_str(
                "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n",
            );
            body.push_str(&format!(
                "Content-ID: {i}\r\n\r\nDELETE {path}{query} HTTP/1.1\r\n"
            ));
            for (k, v) in &headers {
                body.push_str(&format!("{k}: {v}\r\n"));
            }
            body.push_str("Content-Length: 0\r\n\r\n");
        }
        body.push_str("--");
        body.push_str(boundary);
        body.push_str("--\r\n");
        if body.len() > MAX_BATCH_BODY {
            return Err(Error::invalid_input(format!(
                "the Blob Batch body is {} bytes; the service takes at most {MAX_BATCH_BODY}: \
                 delete fewer blobs per batch",
                body.len()
            )));
        }
        Ok(body)
    }
}

/// The `boundary` parameter of a `multipart/mixed` Content-Type (quotes removed).
fn boundary_of(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("boundary") {
            return None;
        }
        let v = v.trim().trim_matches('"');
        (!v.is_empty()).then_some(v)
    })
}

/// One subresponse of a batch reply.
#[derive(Debug)]
struct SubResponse {
    /// The `Content-ID` of the subrequest it answers (absent on Azurite's whole-batch error).
    content_id: Option<usize>,
    status: u16,
    headers: Headers,
    body: Vec<u8>,
}

/// The subresponses of a batch reply whose multipart boundary is `boundary`, in the order
/// sent. A reply that does not have that shape (no closing boundary, a part without a status
/// line, a `Content-ID` that is not a number) is a decode error; never a panic.
fn parse_batch_reply(body: &[u8], boundary: &str) -> Result<Vec<SubResponse>> {
    let text = String::from_utf8_lossy(body);
    let delimiter = format!("--{boundary}");
    let bad = |why: &str| Error::decode(format!("malformed Blob Batch reply: {why}"));
    // Delimiters start a line (RFC 2046); the text before the first is a preamble.
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(&delimiter) {
        let at = from + at;
        if at == 0 || text[..at].ends_with('\n') {
            starts.push(at);
        }
        from = at + delimiter.len();
    }
    let mut parts = Vec::new();
    let mut closed = false;
    for (n, &start) in starts.iter().enumerate() {
        let after = &text[start + delimiter.len()..];
        if after.starts_with("--") {
            closed = true;
            break;
        }
        let end = starts.get(n + 1).map_or(text.len(), |&next| next);
        let part = &text[start + delimiter.len()..end];
        // The rest of the delimiter line (transport padding) ends with its line break.
        let Some((_, part)) = part.split_once('\n') else {
            return Err(bad("a boundary line without a part after it"));
        };
        parts.push(parse_part(part).map_err(|why| bad(&why))?);
    }
    if !closed {
        return Err(bad(
            "the closing boundary is missing (the reply was cut short)",
        ));
    }
    Ok(parts)
}

/// One part: MIME headers (`Content-ID`), a blank line, then an HTTP response.
fn parse_part(part: &str) -> std::result::Result<SubResponse, String> {
    let mut lines = part.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut content_id = None;
    for line in lines.by_ref() {
        if line.is_empty() {
            break;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!("part header line {line:?} has no colon"));
        };
        if k.trim().eq_ignore_ascii_case("content-id") {
            let id = v
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("Content-ID {:?} is not a subrequest number", v.trim()))?;
            content_id = Some(id);
        }
    }
    let status_line = lines.next().unwrap_or_default();
    let mut words = status_line.split_whitespace();
    let status = match (words.next(), words.next()) {
        (Some(version), Some(code)) if version.starts_with("HTTP/") && code.len() == 3 => {
            code.parse::<u16>().ok().filter(|s| (100..600).contains(s))
        }
        _ => None,
    }
    .ok_or_else(|| format!("{status_line:?} is not an HTTP status line"))?;
    let mut headers = Vec::new();
    for line in lines.by_ref() {
        if line.is_empty() {
            break;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!("subresponse header line {line:?} has no colon"));
        };
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let rest: Vec<&str> = lines.collect();
    let body = rest
        .join("\n")
        .trim_end_matches(['\r', '\n'])
        .as_bytes()
        .to_vec();
    Ok(SubResponse {
        content_id,
        status,
        headers: Headers::from_pairs(headers),
        body,
    })
}

/// The subresponses in subrequest order (`Content-ID` 0 to `n - 1`, each exactly once), or
/// the error of a batch refused as a whole.
fn by_content_id(parts: Vec<SubResponse>, n: usize) -> Result<Vec<SubResponse>> {
    let bad = |why: String| Error::decode(format!("malformed Blob Batch reply: {why}"));
    // Azurite answers a batch it refuses with one subresponse without Content-ID.
    if let [only] = parts.as_slice() {
        if only.content_id.is_none() && only.status >= 300 {
            let e = error_from_parts(only.status, &only.headers, &only.body);
            return Err(e.context("the Blob Batch request was refused as a whole"));
        }
    }
    let mut slots: Vec<Option<SubResponse>> = (0..n).map(|_| None).collect();
    for part in parts {
        let Some(id) = part.content_id else {
            return Err(bad("a subresponse without Content-ID".into()));
        };
        match slots.get_mut(id) {
            None => return Err(bad(format!("Content-ID {id} names no subrequest (of {n})"))),
            Some(Some(_)) => return Err(bad(format!("Content-ID {id} answered twice"))),
            Some(slot) => *slot = Some(part),
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| bad(format!("no subresponse for subrequest {i} (of {n})"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const AZURE_REPLY: &str = "--batchresponse_66925647-d0cb-4109-b6d3-28efe3e1e5ed \r\n\
        Content-Type: application/http\r\nContent-ID: 0\r\n\r\n\
        HTTP/1.1 202 Accepted\r\nx-ms-request-id: 778fdc83-801e-0000-62ff-0334671e284f\r\n\
        x-ms-version: 2018-11-09\r\n\r\n\
        --batchresponse_66925647-d0cb-4109-b6d3-28efe3e1e5ed \r\n\
        Content-Type: application/http\r\nContent-ID: 2\r\n\r\n\
        HTTP/1.1 404 The specified blob does not exist.\r\nx-ms-error-code: BlobNotFound\r\n\
        x-ms-request-id: 778fdc83-801e-0000-62ff-0334671e2852\r\nx-ms-version: 2018-11-09\r\n\
        Content-Length: 216\r\nContent-Type: application/xml\r\n\r\n\
        <?xml version=\"1.0\" encoding=\"utf-8\"?>\r\n<Error><Code>BlobNotFound</Code>\
        <Message>The specified blob does not exist.</Message></Error>\r\n\
        --batchresponse_66925647-d0cb-4109-b6d3-28efe3e1e5ed \r\n\
        Content-Type: application/http\r\nContent-ID: 1\r\n\r\n\
        HTTP/1.1 412 There is currently a lease on the blob and no lease ID was specified in the request.\r\n\
        x-ms-error-code: LeaseIdMissing\r\n\r\n\
        --batchresponse_66925647-d0cb-4109-b6d3-28efe3e1e5ed--\r\n";
    const BOUNDARY: &str = "batchresponse_66925647-d0cb-4109-b6d3-28efe3e1e5ed";

    #[test]
    fn reply_parts_are_matched_to_subrequests_by_content_id() {
        let parts = parse_batch_reply(AZURE_REPLY.as_bytes(), BOUNDARY).unwrap();
        assert_eq!(parts.len(), 3);
        let slots = by_content_id(parts, 3).unwrap();
        assert_eq!(slots[0].status, 202);
        assert_eq!(slots[1].status, 412);
        assert_eq!(slots[2].status, 404);
        let e = error_from_parts(slots[2].status, &slots[2].headers, &slots[2].body);
        assert!(e.is_not_found(), "{e}");
        assert_eq!(e.error_code().unwrap().to_string(), "BlobNotFound");
        let e = error_from_parts(slots[1].status, &slots[1].headers, &slots[1].body);
        assert_eq!(e.kind(), crate::ErrorKind::LeaseHeld, "{e}");
        // Fewer or more subrequests than answers: a decode error, not a guess.
        let parts = parse_batch_reply(AZURE_REPLY.as_bytes(), BOUNDARY).unwrap();
        assert!(
            by_content_id(parts, 4)
                .unwrap_err()
                .message()
                .contains("subrequest 3")
        );
        let parts = parse_batch_reply(AZURE_REPLY.as_bytes(), BOUNDARY).unwrap();
        assert!(
            by_content_id(parts, 2)
                .unwrap_err()
                .message()
                .contains("Content-ID 2")
        );
    }

    #[test]
    fn a_reply_cut_short_or_without_status_lines_is_a_decode_error() {
        let cut = &AZURE_REPLY[..AZURE_REPLY.len() - 60];
        let e = parse_batch_reply(cut.as_bytes(), BOUNDARY).unwrap_err();
        assert!(e.message().contains("closing boundary"), "{e}");
        let no_status = "--b\r\nContent-ID: 0\r\n\r\nhello\r\n--b--\r\n";
        let e = parse_batch_reply(no_status.as_bytes(), "b").unwrap_err();
        assert!(e.message().contains("status line"), "{e}");
        let bad_id = "--b\r\nContent-ID: x\r\n\r\nHTTP/1.1 202 Accepted\r\n\r\n--b--";
        assert!(parse_batch_reply(bad_id.as_bytes(), "b").is_err());
        assert!(parse_batch_reply(b"", "b").is_err());
        assert_eq!(
            boundary_of("multipart/mixed; boundary=\"x y\""),
            Some("x y")
        );
        assert_eq!(boundary_of("multipart/mixed"), None);
    }

    #[test]
    fn azurites_whole_batch_refusal_is_the_batch_error() {
        let reply = "--r\r\nContent-Type: application/http\r\n\r\n\
                     HTTP/1.1 400 Bad Request\r\nx-ms-error-code: InvalidInput\r\n\r\n\
                     <?xml version=\"1.0\"?><Error><Code>InvalidInput</Code>\
                     <Message>One of the request inputs is not valid.</Message></Error>\r\n--r--";
        let parts = parse_batch_reply(reply.as_bytes(), "r").unwrap();
        let e = by_content_id(parts, 3).unwrap_err();
        assert_eq!(e.status(), Some(400));
        assert!(e.message().contains("refused as a whole"), "{e}");
    }

    fn reply_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            proptest::collection::vec(
                prop_oneof![
                    Just("--b"),
                    Just("--b--"),
                    Just("\r\n"),
                    Just("\n"),
                    Just("Content-ID: "),
                    Just("Content-ID: 0"),
                    Just("Content-ID: 99999999999999999999999"),
                    Just("HTTP/1.1 "),
                    Just("202 Accepted"),
                    Just("404"),
                    Just("x-ms-error-code: BlobNotFound"),
                    Just(":"),
                    Just(" "),
                    Just("ü"),
                    Just("<Error><Code>"),
                ],
                0..40
            )
            .prop_map(|v| v.concat()),
        ]
    }

    proptest! {
        #[test]
        fn any_reply_parses_or_fails_without_panicking(text in reply_text(), n in 0usize..4) {
            if let Ok(parts) = parse_batch_reply(text.as_bytes(), "b") {
                // What the client does with each subresponse: its error, redacted.
                for p in &parts {
                    let _ = error_from_parts(p.status, &p.headers, &p.body).to_string();
                }
                let _ = by_content_id(parts, n);
            }
        }
    }
}
