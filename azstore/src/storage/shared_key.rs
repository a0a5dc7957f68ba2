//! SharedKey authorization
//! (<https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key>).
//!
//! Two strings-to-sign exist: the full one for Blob, Queue and File, and a shorter one for
//! Table. Both are built here from a [`SignableRequest`], a borrowed view of what will be sent.

/// What the signature covers: a borrowed view of a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SignableRequest<'a> {
    /// HTTP method, upper case.
    pub(crate) method: &'a str,
    /// The URL path exactly as sent (percent-encoded), starting with `/`.
    pub(crate) path: &'a str,
    /// Query parameters, *not* percent-encoded.
    pub(crate) query: &'a [(String, String)],
    /// Headers with lower-case names.
    pub(crate) headers: &'a [(String, String)],
    /// Body length in bytes.
    pub(crate) content_length: u64,
}

impl SignableRequest<'_> {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }
}

/// The string-to-sign for Blob, Queue and File (version 2015-02-21 and later).
///
/// ```text
/// VERB \n Content-Encoding \n Content-Language \n Content-Length (empty when 0) \n
/// Content-MD5 \n Content-Type \n Date \n If-Modified-Since \n If-Match \n If-None-Match \n
/// If-Unmodified-Since \n Range \n CanonicalizedHeaders CanonicalizedResource
/// ```
pub(crate) fn string_to_sign(account: &str, req: &SignableRequest<'_>) -> String {
    let len = if req.content_length == 0 {
        String::new()
    } else {
        req.content_length.to_string()
    };
    let mut s = String::with_capacity(256);
    for part in [
        req.method,
        req.header("content-encoding"),
        req.header("content-language"),
        &len,
        req.header("content-md5"),
        req.header("content-type"),
        "", // Date: we always send x-ms-date instead
        req.header("if-modified-since"),
        req.header("if-match"),
        req.header("if-none-match"),
        req.header("if-unmodified-since"),
        req.header("range"),
    ] {
        s.push_str(part);
        s.push('\n');
    }
    canonicalized_headers(req.headers, &mut s);
    canonicalized_resource(account, req.path, req.query, &mut s);
    s
}

/// The string-to-sign for the Table service (SharedKey, not SharedKeyLite):
/// `VERB \n Content-MD5 \n Content-Type \n Date \n CanonicalizedResource`, where Date is the
/// `x-ms-date` value and the resource keeps only the `comp` query parameter.
pub(crate) fn table_string_to_sign(account: &str, req: &SignableRequest<'_>) -> String {
    let date = match req.header("x-ms-date") {
        "" => req.header("date"),
        d => d,
    };
    let mut s = format!(
        "{}\n{}\n{}\n{}\n/{}{}",
        req.method,
        req.header("content-md5"),
        req.header("content-type"),
        date,
        account,
        req.path
    );
    if let Some((_, comp)) = req
        .query
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("comp"))
    {
        s.push_str("?comp=");
        s.push_str(comp);
    }
    s
}

fn canonicalized_headers(headers: &[(String, String)], out: &mut String) {
    let mut ms: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(k, _)| k.starts_with("x-ms-"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    ms.sort_by(|a, b| a.0.cmp(b.0));
    for (k, v) in ms {
        out.push_str(k);
        out.push(':');
        // Trimmed, inner whitespace kept: what the service and the official SDKs compute.
        out.push_str(v.trim());
        out.push('\n');
    }
}

fn canonicalized_resource(account: &str, path: &str, query: &[(String, String)], out: &mut String) {
    out.push('/');
    out.push_str(account);
    out.push_str(if path.is_empty() { "/" } else { path });
    let mut params: Vec<(String, &str)> = query
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str()))
        .collect();
    params.sort();
    let mut i = 0;
    while i < params.len() {
        let name = params[i].0.clone();
        let mut values: Vec<&str> = Vec::new();
        while i < params.len() && params[i].0 == name {
            values.push(params[i].1);
            i += 1;
        }
        values.sort_unstable();
        out.push('\n');
        out.push_str(&name);
        out.push(':');
        out.push_str(&values.join(","));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn blob_string_to_sign_exact() {
        let headers = h(&[
            ("x-ms-version", "2025-11-05"),
            ("x-ms-date", "Sun, 22 Nov 2026 00:00:00 GMT"),
            ("content-type", "application/octet-stream"),
            ("if-match", "\"0x8D\""),
            ("x-ms-blob-type", "BlockBlob"),
            ("x-ms-meta-a", "  two   words "),
        ]);
        let query = h(&[("timeout", "30"), ("comp", "block"), ("blockid", "YQ==")]);
        let req = SignableRequest {
            method: "PUT",
            path: "/devstoreaccount1/c/my%20blob",
            query: &query,
            headers: &headers,
            content_length: 5,
        };
        assert_eq!(
            string_to_sign("devstoreaccount1", &req),
            "PUT\n\n\n5\n\napplication/octet-stream\n\n\n\"0x8D\"\n\n\n\n\
             x-ms-blob-type:BlockBlob\nx-ms-date:Sun, 22 Nov 2026 00:00:00 GMT\n\
             x-ms-meta-a:two   words\nx-ms-version:2025-11-05\n\
             /devstoreaccount1/devstoreaccount1/c/my%20blob\nblockid:YQ==\ncomp:block\ntimeout:30"
        );
    }

    #[test]
    fn zero_length_is_empty_and_multi_values_sorted() {
        let headers = h(&[("x-ms-date", "D")]);
        let query = h(&[
            ("include", "snapshots"),
            ("Include", "metadata"),
            ("restype", "container"),
        ]);
        let req = SignableRequest {
            method: "GET",
            path: "/acct/c",
            query: &query,
            headers: &headers,
            content_length: 0,
        };
        assert_eq!(
            string_to_sign("acct", &req),
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:D\n/acct/acct/c\ninclude:metadata,snapshots\nrestype:container"
        );
    }

    #[test]
    fn table_string_to_sign_exact() {
        let headers = h(&[
            ("x-ms-date", "Sun, 22 Nov 2026 00:00:00 GMT"),
            ("content-type", "application/json"),
        ]);
        let query = h(&[("comp", "acl"), ("$filter", "x")]);
        let req = SignableRequest {
            method: "POST",
            path: "/Tables",
            query: &query,
            headers: &headers,
            content_length: 10,
        };
        assert_eq!(
            table_string_to_sign("acct", &req),
            "POST\n\napplication/json\nSun, 22 Nov 2026 00:00:00 GMT\n/acct/Tables?comp=acl"
        );
    }
}
