//! Stored access policies: the `<SignedIdentifiers>` of a container, queue or table ACL.
//!
//! A stored access policy names a validity window and a set of permissions under an id; a
//! service SAS that references the id (`si=`) can be revoked by editing or removing the
//! policy. One [`SignedIdentifier`] type serves every service; what differs per service is the
//! set of permission letters it accepts. Policies are written **last writer wins**: Set ACL
//! replaces the whole list (containers also accept date conditions).
//!
//! ```
//! use azstore::access_policy::SignedIdentifier;
//! let start = time::macros::datetime!(2026-01-01 00:00:00 UTC);
//! let readers = SignedIdentifier::new("readers", "r")
//!     .start(start)
//!     .expiry(start + std::time::Duration::from_secs(86400));
//! assert_eq!(readers.permission.as_deref(), Some("r"));
//! ```

use serde::Deserialize;
use time::OffsetDateTime;

use crate::error::{Error, Result};

/// How many stored access policies a container, queue, table or share holds at most.
pub(crate) const MAX_POLICIES: usize = 5;

/// One stored access policy (a `<SignedIdentifier>`).
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::access_policy::SignedIdentifier;
/// let now = azstore::OffsetDateTime::now_utc();
/// // Producers may add messages for 30 days; revoke them all by removing the policy.
/// let producers = SignedIdentifier::new("producers", "a")
///     .expiry(now + std::time::Duration::from_secs(30 * 86400));
/// queue.set_access_policy(&[producers]).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SignedIdentifier {
    /// The policy id (1–64 characters), referenced by a service SAS as `si=`.
    pub id: String,
    /// When the policy starts to apply (sent in UTC to the service's precision of 100 ns).
    pub start: Option<OffsetDateTime>,
    /// When it stops applying (sent in UTC to the service's precision of 100 ns).
    pub expiry: Option<OffsetDateTime>,
    /// Permission letters in the service's order, e.g. `"rwdl"` for a container or `"raup"`
    /// (read, add, update, process) for a queue; `None` when the policy grants none.
    pub permission: Option<String>,
}

impl SignedIdentifier {
    /// A policy `id` granting `permission` (an empty string grants none), with no start or
    /// expiry.
    ///
    /// ```
    /// use azstore::access_policy::SignedIdentifier;
    /// let readers = SignedIdentifier::new("readers", "rl");
    /// assert_eq!(readers.permission.as_deref(), Some("rl"));
    /// assert_eq!(SignedIdentifier::new("none", "").permission, None);
    /// ```
    pub fn new(id: impl Into<String>, permission: impl Into<String>) -> SignedIdentifier {
        let permission = permission.into();
        SignedIdentifier {
            id: id.into(),
            start: None,
            expiry: None,
            permission: Some(permission).filter(|p| !p.is_empty()),
        }
    }

    /// When the policy starts to apply (sent in whole seconds, UTC). Default: none, so
    /// it applies from the moment it is stored (or from the SAS's own start).
    ///
    /// ```
    /// use azstore::access_policy::SignedIdentifier;
    /// let start = time::macros::datetime!(2026-12-01 00:00:00 UTC);
    /// let december = SignedIdentifier::new("december", "r").start(start);
    /// assert_eq!(december.start, Some(start));
    /// ```
    #[must_use]
    pub fn start(mut self, v: OffsetDateTime) -> Self {
        self.start = Some(v);
        self
    }

    /// When the policy stops applying (sent in whole seconds, UTC). Default: none, so a
    /// SAS that names the policy must carry its own expiry.
    ///
    /// ```
    /// use azstore::access_policy::SignedIdentifier;
    /// let end = time::macros::datetime!(2026-12-31 23:59:59 UTC);
    /// let until = SignedIdentifier::new("year-end", "r").expiry(end);
    /// assert_eq!(until.expiry, Some(end));
    /// ```
    #[must_use]
    pub fn expiry(mut self, v: OffsetDateTime) -> Self {
        self.expiry = Some(v);
        self
    }
}

/// Which policies a resource accepts: its name in messages and, when the service defines
/// them strictly, the permission letters allowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PolicyRules {
    /// "a container", "a queue", ... (for error messages).
    pub resource: &'static str,
    /// The permission letters accepted; `None`: not checked here (the service checks).
    pub letters: Option<&'static str>,
}

/// `2026-01-01T00:00:00Z`, or with the fraction in the service's 7 digits (100 ns ticks,
/// finer is cut) when there is one: `2026-01-01T00:00:00.2500000Z`. The service keeps and
/// returns those 7 digits, so a policy reads back as it was set.
fn iso(t: OffsetDateTime) -> Result<String> {
    let t = t.to_offset(time::UtcOffset::UTC);
    if t.year() < 0 || t.year() > 9999 {
        return Err(Error::invalid_input(format!(
            "a stored access policy time must lie in years 0000-9999, got {t}"
        )));
    }
    let ticks = t.nanosecond() / 100;
    let fraction = if ticks == 0 {
        String::new()
    } else {
        format!(".{ticks:07}")
    };
    Ok(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{fraction}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    ))
}

/// The Set ACL body for `policies`, refusing (with `InvalidInput`, before anything is sent)
/// more than five policies, an id that is empty or longer than 64 characters, and permission
/// letters the resource does not accept.
pub(crate) fn to_xml(policies: &[SignedIdentifier], rules: PolicyRules) -> Result<String> {
    if policies.len() > MAX_POLICIES {
        return Err(Error::invalid_input(format!(
            "{} has at most {MAX_POLICIES} stored access policies, got {}",
            rules.resource,
            policies.len()
        )));
    }
    let escape = |s: &str| quick_xml::escape::escape(s).into_owned();
    let mut body = String::from(r#"<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>"#);
    for p in policies {
        if p.id.is_empty() || p.id.chars().count() > 64 {
            return Err(Error::invalid_input(
                "a stored access policy id has 1-64 characters",
            ));
        }
        let permission = p.permission.as_deref().unwrap_or_default();
        if let Some(letters) = rules.letters
            && let Some(c) = permission.chars().find(|c| !letters.contains(*c))
        {
            return Err(Error::invalid_input(format!(
                "permission {c:?} of {} is not one of {letters:?}",
                rules.resource
            )));
        }
        body.push_str("<SignedIdentifier><Id>");
        body.push_str(&escape(&p.id));
        body.push_str("</Id><AccessPolicy>");
        if let Some(t) = p.start {
            body.push_str(&format!("<Start>{}</Start>", iso(t)?));
        }
        if let Some(t) = p.expiry {
            body.push_str(&format!("<Expiry>{}</Expiry>", iso(t)?));
        }
        // No permissions: no element (as Azure itself answers such a policy).
        if !permission.is_empty() {
            body.push_str(&format!("<Permission>{}</Permission>", escape(permission)));
        }
        body.push_str("</AccessPolicy></SignedIdentifier>");
    }
    body.push_str("</SignedIdentifiers>");
    Ok(body)
}

#[derive(Debug, Deserialize, Default)]
struct RawSignedIdentifiers {
    #[serde(rename = "SignedIdentifier", default)]
    items: Vec<RawSignedIdentifier>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawSignedIdentifier {
    id: String,
    #[serde(default)]
    access_policy: Option<RawAccessPolicy>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawAccessPolicy {
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    expiry: Option<String>,
    #[serde(default)]
    permission: Option<String>,
}

/// Parses a Get ACL answer. An empty body means no policies; anything that is not a
/// `<SignedIdentifiers>` document, or a policy with a malformed date, is a decode error
/// naming `operation`.
pub(crate) fn parse(body: &[u8], operation: &str) -> Result<Vec<SignedIdentifier>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    crate::http::checks::expect_xml_root(body, "SignedIdentifiers", operation)?;
    let raw: RawSignedIdentifiers = crate::http::checks::from_xml(body, operation)?;
    let date = |name: &str, s: Option<String>| -> Result<Option<OffsetDateTime>> {
        match s.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(s) => crate::time_fmt::parse_iso8601(s).map(Some).ok_or_else(|| {
                Error::decode(format!(
                    "{operation} response is malformed: bad <{name}> {s:?}"
                ))
            }),
        }
    };
    raw.items
        .into_iter()
        .map(|si| {
            let p = si.access_policy.unwrap_or_default();
            Ok(SignedIdentifier {
                id: si.id,
                start: date("Start", p.start)?,
                expiry: date("Expiry", p.expiry)?,
                permission: p.permission.filter(|p| !p.is_empty()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUEUE: PolicyRules = PolicyRules {
        resource: "a queue",
        letters: Some("raup"),
    };

    #[test]
    fn round_trip_and_refusals() {
        let start = time::macros::datetime!(2026-01-01 00:00:00.25 UTC);
        let ids = vec![
            SignedIdentifier::new("r<1>", "rp").start(start),
            SignedIdentifier::new("empty", ""),
        ];
        let xml = to_xml(&ids, QUEUE).unwrap();
        assert!(xml.contains("<Id>r&lt;1&gt;</Id>"), "{xml}");
        assert!(
            xml.contains("<Start>2026-01-01T00:00:00.2500000Z</Start>"),
            "{xml}"
        );
        assert!(
            xml.contains("<Id>empty</Id><AccessPolicy></AccessPolicy>"),
            "{xml}"
        );
        let back = parse(xml.as_bytes(), "Get ACL").unwrap();
        assert_eq!(back[0].start, Some(start), "the fraction survives");
        assert_eq!(back[1], ids[1]);
        assert_eq!(back[0].permission.as_deref(), Some("rp"));

        assert!(parse(b"  ", "Get ACL").unwrap().is_empty());
        assert!(parse(b"<html/>", "Get ACL").is_err());
        let bad_date = b"<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start>soon</Start></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
        assert!(parse(bad_date, "Get ACL").is_err());

        // Whole seconds as before; 100 ns ticks as the service keeps them (finer is cut);
        // other offsets in UTC.
        let xml = |t| to_xml(&[SignedIdentifier::new("t", "r").expiry(t)], QUEUE).unwrap();
        assert!(
            xml(time::macros::datetime!(2026-05-06 07:08:09 UTC))
                .contains("<Expiry>2026-05-06T07:08:09Z</Expiry>")
        );
        assert!(
            xml(time::macros::datetime!(2026-05-06 07:08:09.123456789 UTC))
                .contains("<Expiry>2026-05-06T07:08:09.1234567Z</Expiry>")
        );
        assert!(
            xml(time::macros::datetime!(2026-05-06 09:08:09.0000001 +02:00))
                .contains("<Expiry>2026-05-06T07:08:09.0000001Z</Expiry>")
        );
        let seven = "<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start>2026-05-06T07:08:09.1234567Z</Start></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
        assert_eq!(
            parse(seven.as_bytes(), "Get ACL").unwrap()[0].start,
            Some(time::macros::datetime!(2026-05-06 07:08:09.1234567 UTC))
        );

        let six: Vec<_> = (0..6)
            .map(|i| SignedIdentifier::new(format!("p{i}"), "r"))
            .collect();
        assert!(to_xml(&six, QUEUE).is_err());
        assert!(to_xml(&[SignedIdentifier::new("x", "rwd")], QUEUE).is_err());
        assert!(to_xml(&[SignedIdentifier::new("", "r")], QUEUE).is_err());
        let unchecked = PolicyRules {
            resource: "a container",
            letters: None,
        };
        assert!(to_xml(&[SignedIdentifier::new("x", "rwd")], unchecked).is_ok());
    }
}
