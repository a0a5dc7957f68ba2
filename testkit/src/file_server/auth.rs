//! Who may call: SharedKey, implemented from the documentation, and bearer tokens.

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::*;

/// The Blob/Queue/File string-to-sign of a received request.
pub(super) fn expected_string_to_sign(req: &HttpRequest) -> String {
    let h = |n: &str| req.header(n).unwrap_or("").to_string();
    // Content-Length: empty when zero (version 2015-02-21 and later).
    let len = match req.header("content-length") {
        Some("0") | None => String::new(),
        Some(v) => v.to_string(),
    };
    let mut s = String::new();
    s.push_str(&req.method);
    s.push('\n');
    for v in [
        h("content-encoding"),
        h("content-language"),
        len,
        h("content-md5"),
        h("content-type"),
        h("date"),
        h("if-modified-since"),
        h("if-match"),
        h("if-none-match"),
        h("if-unmodified-since"),
        h("range"),
    ] {
        s.push_str(&v);
        s.push('\n');
    }
    // Canonicalized headers: x-ms-*, lower case, sorted, one per line.
    let mut ms: Vec<(&str, &str)> = req
        .headers
        .iter()
        .filter(|(k, _)| k.starts_with("x-ms-"))
        .map(|(k, v)| (k.as_str(), v.trim()))
        .collect();
    ms.sort();
    for (k, v) in ms {
        s.push_str(k);
        s.push(':');
        s.push_str(v);
        s.push('\n');
    }
    // Canonicalized resource: /account + encoded path, then query parameters by name.
    s.push('/');
    s.push_str(ACCOUNT);
    s.push_str(&req.raw_path);
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in &req.query {
        names
            .entry(k.to_ascii_lowercase())
            .or_default()
            .push(v.clone());
    }
    for (k, mut vs) in names {
        vs.sort();
        s.push('\n');
        s.push_str(&k);
        s.push(':');
        s.push_str(&vs.join(","));
    }
    s
}

pub(super) fn authorized(req: &HttpRequest) -> bool {
    let Some(auth) = req.header("authorization") else {
        return false;
    };
    let Some(rest) = auth.strip_prefix("SharedKey ") else {
        return false;
    };
    let Some((account, sig)) = rest.split_once(':') else {
        return false;
    };
    if account != ACCOUNT {
        return false;
    }
    if req.header("x-ms-date").is_none() && req.header("date").is_none() {
        return false;
    }
    let Ok(key) = base64::engine::general_purpose::STANDARD.decode(KEY) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else {
        return false;
    };
    mac.update(expected_string_to_sign(req).as_bytes());
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    expected == sig.trim()
}

/// Checks an OAuth bearer token the way Azurite's `--oauth basic` does (a JWT whose `iss` is
/// an Entra ID issuer, `aud` the storage or this account's File audience, `nbf`/`exp` around
/// now; the signature is not checked), and the header Azure Files requires on every OAuth
/// request: `x-ms-file-request-intent: backup` (without it Azure answers 400).
///
/// Deviation: Azure refuses bearer tokens over plain HTTP; this loopback emulator speaks only
/// HTTP, so it accepts them (azstore sends them only after an explicit opt-in for loopback).
pub(super) fn check_bearer(req: &HttpRequest, token: &str) -> Option<Reply> {
    let denied = |why: &str| {
        Some(Reply::error(
            403,
            "AuthenticationFailed",
            &format!("Server failed to authenticate the request. {why}"),
        ))
    };
    let claims = token
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p.trim_end_matches('='))
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let Some(claims) = claims else {
        return denied("Authentication scheme Bearer is not supported.");
    };
    let num = |k: &str| claims.get(k).and_then(|v| v.as_i64());
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    match (num("nbf"), num("exp"), num("iat")) {
        (Some(nbf), Some(exp), Some(_)) => {
            if now < nbf || now > exp {
                return denied("Lifetime validation failed. The token is expired.");
            }
        }
        _ => return denied("Authentication scheme Bearer is not supported."),
    }
    let iss = claims.get("iss").and_then(|v| v.as_str()).unwrap_or("");
    if ![
        "https://sts.windows.net/",
        "https://sts.microsoftonline.de/",
        "https://sts.chinacloudapi.cn/",
        "https://sts.windows-ppe.net",
        "https://login.microsoftonline.com/",
    ]
    .iter()
    .any(|p| iss.starts_with(p))
    {
        return denied("Invalid token issuer.");
    }
    let aud = claims.get("aud").and_then(|v| v.as_str()).unwrap_or("");
    let aud = aud.trim_end_matches('/');
    let own = format!("https://{ACCOUNT}.file.core.windows.net");
    if aud != "https://storage.azure.com" && aud != own {
        return denied("Invalid token audience.");
    }
    if !req
        .header("x-ms-file-request-intent")
        .is_some_and(|v| v.eq_ignore_ascii_case("backup"))
    {
        return Some(Reply::error(
            400,
            "MissingRequiredHeader",
            "An HTTP header that's mandatory for this request is not specified. \
             (x-ms-file-request-intent is required with OAuth.)",
        ));
    }
    None
}
