//! A recorded request taken apart for the planners.

use std::collections::BTreeMap;

use azstore::{Conditions, ETag, LeaseId, MatchCondition};
use percent_encoding::percent_decode_str;
use testkit::replay::{Interaction, RecordedRequest};

use crate::compare::{azstore_time, query_pairs};

pub struct Req<'a> {
    pub raw: &'a RecordedRequest,
    pub method: &'a str,
    /// Decoded path segments (without the empty leading one).
    pub segs: Vec<String>,
    pub q: BTreeMap<String, String>,
}

impl<'a> Req<'a> {
    pub fn new(it: &'a Interaction) -> Req<'a> {
        let raw = &it.request;
        let segs = raw
            .raw_path()
            .trim_start_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
            .collect();
        Req {
            raw,
            method: &raw.method,
            segs,
            q: query_pairs(raw.raw_query()).into_iter().collect(),
        }
    }

    /// Everything after the first path segment, decoded, with its slashes as sent (a blob
    /// name may begin or end with `/`).
    pub fn rest_after_first(&self) -> String {
        let p = self.raw.raw_path().trim_start_matches('/');
        let rest = p.split_once('/').map_or("", |(_, r)| r);
        percent_decode_str(rest).decode_utf8_lossy().into_owned()
    }

    pub fn h(&self, name: &str) -> Option<&'a str> {
        self.raw.header(name)
    }

    pub fn query(&self, k: &str) -> Option<&str> {
        self.q.get(k).map(String::as_str)
    }

    pub fn comp(&self) -> &str {
        self.query("comp").unwrap_or("")
    }

    pub fn restype(&self) -> &str {
        self.query("restype").unwrap_or("")
    }

    pub fn body(&self) -> Vec<u8> {
        self.raw.body.clone().unwrap_or_default()
    }

    /// The `x-ms-meta-*` pairs.
    pub fn metadata(&self) -> BTreeMap<String, String> {
        self.raw
            .headers
            .iter()
            .filter_map(|(k, v)| {
                let lk = k.to_ascii_lowercase();
                lk.strip_prefix("x-ms-meta-").map(|n| {
                    // Keep the recorded case of the name.
                    (k[k.len() - n.len()..].to_string(), v.clone())
                })
            })
            .collect()
    }

    /// Conditions from If-*, and the lease id.
    pub fn conditions(&self) -> Result<Conditions, String> {
        let m = |v: &str| {
            if v.trim() == "*" {
                MatchCondition::Any
            } else {
                MatchCondition::ETag(ETag::new(v))
            }
        };
        let date = |name: &str| -> Result<Option<time::OffsetDateTime>, String> {
            match self.h(name) {
                None => Ok(None),
                Some(v) => azstore_time(v)
                    .map(Some)
                    .ok_or_else(|| format!("{name} {v:?} is not an HTTP date")),
            }
        };
        let mut c = Conditions::none();
        c.if_match = self.h("if-match").map(m);
        c.if_none_match = self.h("if-none-match").map(m);
        c.if_modified_since = date("if-modified-since")?;
        c.if_unmodified_since = date("if-unmodified-since")?;
        if let Some(id) = self.h("x-ms-lease-id") {
            c.lease_id = Some(LeaseId::new(id).map_err(|e| format!("lease id: {e}"))?);
        }
        Ok(c)
    }

    /// Source conditions from `x-ms-source-if-*`.
    pub fn source_conditions(&self) -> Result<Conditions, String> {
        let mut c = Conditions::none();
        let m = |v: &str| {
            if v.trim() == "*" {
                MatchCondition::Any
            } else {
                MatchCondition::ETag(ETag::new(v))
            }
        };
        c.if_match = self.h("x-ms-source-if-match").map(m);
        c.if_none_match = self.h("x-ms-source-if-none-match").map(m);
        for (name, slot) in [
            ("x-ms-source-if-modified-since", &mut c.if_modified_since),
            (
                "x-ms-source-if-unmodified-since",
                &mut c.if_unmodified_since,
            ),
        ] {
            if let Some(v) = self.h(name) {
                *slot = Some(azstore_time(v).ok_or_else(|| format!("{name} {v:?}"))?);
            }
        }
        Ok(c)
    }

    /// `bytes=a-b` of `x-ms-range` (or `Range`), as a half-open range.
    pub fn range(&self) -> Result<Option<std::ops::Range<u64>>, String> {
        let Some(v) = self.h("x-ms-range").or(self.h("range")) else {
            return Ok(None);
        };
        parse_range(v).map(Some)
    }

    /// Headers other than the ones a client always sends and those `known` ones a planner
    /// handles: a planner refuses a request with a header it cannot reproduce.
    pub fn unexpected_headers(&self, known: &[&str]) -> Vec<String> {
        const ALWAYS: &[&str] = &[
            "accept",
            "accept-encoding",
            "connection",
            "content-length",
            "user-agent",
            "x-ms-date",
            "x-ms-version",
            "x-ms-client-request-id",
            "content-type",
            "dataserviceversion",
            "maxdataserviceversion",
            "accept-charset",
            "if-match",
            "if-none-match",
            "if-modified-since",
            "if-unmodified-since",
            "x-ms-lease-id",
        ];
        self.raw
            .headers
            .iter()
            .map(|(k, _)| k.to_ascii_lowercase())
            .filter(|k| !k.starts_with("x-ms-meta-"))
            .filter(|k| !ALWAYS.contains(&k.as_str()) && !known.contains(&k.as_str()))
            .collect()
    }

    /// Fails when the request carries a header outside `known`.
    pub fn only(&self, known: &[&str]) -> Result<(), String> {
        let extra = self.unexpected_headers(known);
        if extra.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} {}: header(s) {extra:?}",
                self.method, self.raw.uri
            ))
        }
    }
}

pub fn parse_range(v: &str) -> Result<std::ops::Range<u64>, String> {
    let r = v
        .trim()
        .strip_prefix("bytes=")
        .ok_or_else(|| format!("range {v:?}"))?;
    let (a, b) = r.split_once('-').ok_or_else(|| format!("range {v:?}"))?;
    let a: u64 = a.parse().map_err(|_| format!("range {v:?}"))?;
    if b.is_empty() {
        return Err(format!("open range {v:?}"));
    }
    let b: u64 = b.parse().map_err(|_| format!("range {v:?}"))?;
    Ok(a..b + 1)
}
