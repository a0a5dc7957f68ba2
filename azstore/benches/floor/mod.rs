//! The floor the benchmarks compare azstore with: a minimal hand-written reqwest client that
//! builds and signs each request itself (SharedKey, as documented in "Authorize with Shared
//! Key"), with no retries, no typed results and no error classification. Shared by the
//! `transfers` and `instructions` benchmarks (`#[path]`-included, not a bench of its own).
#![allow(dead_code)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};

/// The TLS configuration of a client built outside azstore (reqwest's `rustls-no-provider`
/// needs one; the floor speaks plain HTTP to Azurite, so no roots are needed).
pub fn plain_tls() -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(rustls::RootCertStore::empty())
    .with_no_client_auth()
}

/// Account, key and endpoint from `AZURE_STORAGE_CONNECTION_STRING` (Azurite style).
pub struct Floor {
    pub http: reqwest::Client,
    account: String,
    key: Vec<u8>,
    /// `http://127.0.0.1:10000/devstoreaccount1` (no trailing slash).
    base: String,
    /// `/devstoreaccount1` for a path-style endpoint, empty otherwise.
    prefix: String,
}

fn field<'a>(conn: &'a str, name: &str) -> Option<&'a str> {
    conn.split(';')
        .find_map(|p| p.trim().strip_prefix(name)?.strip_prefix('='))
}

impl Floor {
    pub fn from_env() -> Floor {
        let conn = std::env::var("AZURE_STORAGE_CONNECTION_STRING").expect(
            "set AZURE_STORAGE_CONNECTION_STRING (wrap the command in `scripts/azurite run --`)",
        );
        let account = field(&conn, "AccountName")
            .expect("AccountName")
            .to_string();
        let key = STANDARD
            .decode(field(&conn, "AccountKey").expect("AccountKey"))
            .expect("base64 key");
        let base = field(&conn, "BlobEndpoint")
            .expect("BlobEndpoint")
            .trim_end_matches('/')
            .to_string();
        let after_scheme = base.split_once("://").map(|(_, r)| r).unwrap_or(&base);
        let prefix = after_scheme
            .find('/')
            .map(|i| after_scheme[i..].to_string())
            .unwrap_or_default();
        Floor {
            http: reqwest::Client::builder()
                .tls_backend_preconfigured(plain_tls())
                .tcp_nodelay(true)
                .pool_idle_timeout(std::time::Duration::from_secs(4))
                .build()
                .expect("reqwest client"),
            account,
            key,
            base,
            prefix,
        }
    }

    /// `x-ms-date`, formatted once per second (what any careful hand-written client does).
    fn date() -> String {
        use std::cell::RefCell;
        use time::macros::format_description;
        thread_local! {
            static LAST: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
        }
        let now = time::OffsetDateTime::now_utc();
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            if last.0 != now.unix_timestamp() {
                let text = now
                    .format(format_description!(
                        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
                    ))
                    .expect("date");
                *last = (now.unix_timestamp(), text);
            }
            last.1.clone()
        })
    }

    /// A signed request for `path` (`container/blob`) with `query` (sorted by name,
    /// URL-safe values) and the given `x-ms-*`
    /// headers (besides date and version) and body length.
    pub fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, &str)],
        mut x_ms: Vec<(&'static str, String)>,
        content_length: u64,
        content_type: &str,
    ) -> reqwest::RequestBuilder {
        x_ms.push(("x-ms-date", Floor::date()));
        x_ms.push(("x-ms-version", "2025-11-05".to_string()));
        x_ms.sort_by(|a, b| a.0.cmp(b.0));
        let mut sts = String::with_capacity(256);
        sts.push_str(method.as_str());
        sts.push_str("\n\n\n");
        if content_length > 0 {
            sts.push_str(&content_length.to_string());
        }
        sts.push_str("\n\n");
        sts.push_str(content_type);
        sts.push_str("\n\n\n\n\n\n\n");
        for (k, v) in &x_ms {
            sts.push_str(k);
            sts.push(':');
            sts.push_str(v);
            sts.push('\n');
        }
        sts.push('/');
        sts.push_str(&self.account);
        sts.push_str(&self.prefix);
        sts.push('/');
        sts.push_str(path);
        let mut url = format!("{}/{path}", self.base);
        for (i, (k, v)) in query.iter().enumerate() {
            sts.push('\n');
            sts.push_str(k);
            sts.push(':');
            sts.push_str(v);
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(k);
            url.push('=');
            url.push_str(v);
        }
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&self.key).expect("key");
        mac.update(sts.as_bytes());
        let sig = STANDARD.encode(mac.finalize().into_bytes());
        let mut rb = self
            .http
            .request(method, url)
            .header("authorization", format!("SharedKey {}:{sig}", self.account));
        for (k, v) in x_ms {
            rb = rb.header(k, v);
        }
        if !content_type.is_empty() {
            rb = rb.header("content-type", content_type);
        }
        rb
    }

    /// Get Blob of `range` (half-open).
    pub fn get_range(&self, path: &str, start: u64, end: u64) -> reqwest::RequestBuilder {
        self.request(
            reqwest::Method::GET,
            path,
            &[],
            vec![("x-ms-range", format!("bytes={}-{}", start, end - 1))],
            0,
            "",
        )
    }
}

impl Floor {
    /// Put Block (`id`: base64 of letters and digits only, so it needs no URL encoding).
    pub fn put_block(&self, path: &str, id: &str, body: bytes::Bytes) -> reqwest::RequestBuilder {
        let len = body.len() as u64;
        self.request(
            reqwest::Method::PUT,
            path,
            &[("blockid", id), ("comp", "block")],
            Vec::new(),
            len,
            "application/octet-stream",
        )
        .body(body)
    }

    /// Put Block List of `xml`.
    pub fn put_block_list(&self, path: &str, xml: String) -> reqwest::RequestBuilder {
        self.request(
            reqwest::Method::PUT,
            path,
            &[("comp", "blocklist")],
            Vec::new(),
            xml.len() as u64,
            "application/xml",
        )
        .body(xml)
    }
}

/// Process CPU time (user + system) so far, in seconds.
pub fn cpu_seconds() -> f64 {
    let ru = rusage();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Peak resident set size of this process image, in MiB (`VmHWM`; `ru_maxrss` would carry
/// the parent's peak across `exec`).
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kib| kib / 1024.0)
        .unwrap_or_else(|| rusage().ru_maxrss as f64 / 1024.0)
}

/// User and system CPU seconds so far.
pub fn cpu_split() -> (f64, f64) {
    let ru = rusage();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

fn rusage() -> libc::rusage {
    // SAFETY: getrusage writes into the zeroed struct we pass; RUSAGE_SELF is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru
}
