//! Shared access signatures: service SAS (blob, container, queue, table) and account SAS,
//! signed with the account key (<https://learn.microsoft.com/rest/api/storageservices/create-service-sas>).
//!
//! ```
//! use azstore::{SasBuilder, SharedKeyCredential};
//! use time::{Duration, OffsetDateTime};
//! let key = SharedKeyCredential::new("acct", "a2V5").unwrap();
//! let sas = SasBuilder::new("rw", OffsetDateTime::now_utc() + Duration::hours(1))
//!     .blob(&key, "reports", "2026/q4.csv")
//!     .unwrap();
//! assert!(sas.expose_secret().contains("sr=b"));
//! assert!(!sas.to_string().contains(&sas.expose_secret()[sas.expose_secret().find("sig=").unwrap() + 4..]));
//! ```

use time::OffsetDateTime;
use time::macros::format_description;

use crate::credential::{SasToken, SharedKeyCredential};
use crate::error::{Error, Result};

/// The signed version azstore writes into generated SAS tokens.
pub const SAS_VERSION: &str = "2025-11-05";

const BLOB_PERMS: &str = "racwdxyltmeopi";
const CONTAINER_PERMS: &str = "racwdxyltfmeopi";
const QUEUE_PERMS: &str = "raup";
const TABLE_PERMS: &str = "raud";
const ACCOUNT_PERMS: &str = "rwdxylacuptfi";

/// Builds SAS tokens. Permissions are letters (`r` read, `a` add, `c` create, `w` write,
/// `d` delete, `l` list, `u` update, `p` process, …); they are put into the order the service
/// requires, and letters the resource does not support are refused.
#[derive(Debug, Clone)]
#[must_use]
pub struct SasBuilder {
    permissions: String,
    start: Option<OffsetDateTime>,
    expiry: OffsetDateTime,
    https_only: bool,
    ip: Option<String>,
    identifier: Option<String>,
}

impl SasBuilder {
    /// A SAS granting `permissions` until `expiry`.
    pub fn new(permissions: &str, expiry: OffsetDateTime) -> SasBuilder {
        SasBuilder {
            permissions: permissions.to_string(),
            start: None,
            expiry,
            https_only: false,
            ip: None,
            identifier: None,
        }
    }

    /// Not valid before `start` (allow for clock skew: start a few minutes in the past).
    pub fn start(mut self, start: OffsetDateTime) -> SasBuilder {
        self.start = Some(start);
        self
    }

    /// Only accept the SAS over HTTPS (`spr=https`).
    pub fn https_only(mut self) -> SasBuilder {
        self.https_only = true;
        self
    }

    /// Only accept requests from this IP or range (`sip`), e.g. `168.1.5.60-168.1.5.70`.
    pub fn ip_range(mut self, ip: impl Into<String>) -> SasBuilder {
        self.ip = Some(ip.into());
        self
    }

    /// Refer to a stored access policy (`si`) on the container, queue or table.
    pub fn identifier(mut self, id: impl Into<String>) -> SasBuilder {
        self.identifier = Some(id.into());
        self
    }

    /// A service SAS for one blob (`sr=b`).
    pub fn blob(&self, key: &SharedKeyCredential, container: &str, blob: &str) -> Result<SasToken> {
        let perms = order_permissions(&self.permissions, BLOB_PERMS, "blob")?;
        let resource = format!("/blob/{}/{}/{}", key.account(), container, blob);
        self.blob_like(key, perms, resource, "b")
    }

    /// A service SAS for a container and its blobs (`sr=c`).
    pub fn container(&self, key: &SharedKeyCredential, container: &str) -> Result<SasToken> {
        let perms = order_permissions(&self.permissions, CONTAINER_PERMS, "container")?;
        let resource = format!("/blob/{}/{}", key.account(), container);
        self.blob_like(key, perms, resource, "c")
    }

    fn blob_like(
        &self,
        key: &SharedKeyCredential,
        perms: String,
        resource: String,
        sr: &str,
    ) -> Result<SasToken> {
        let (st, se) = self.times()?;
        let spr = self.protocol();
        let ip = self.ip.as_deref().unwrap_or("");
        let si = self.identifier.as_deref().unwrap_or("");
        // perms, start, expiry, resource, identifier, ip, protocol, version, sr, snapshot time,
        // encryption scope, rscc, rscd, rsce, rscl, rsct
        let sts = [
            perms.as_str(),
            &st,
            &se,
            &resource,
            si,
            ip,
            spr,
            SAS_VERSION,
            sr,
            "",
            "",
            "",
            "",
            "",
            "",
            "",
        ]
        .join("\n");
        let sig = key.sign(&sts);
        self.token(&perms, &st, &se, &[("sr", sr)], &sig)
    }

    /// A service SAS for a queue.
    pub fn queue(&self, key: &SharedKeyCredential, queue: &str) -> Result<SasToken> {
        let perms = order_permissions(&self.permissions, QUEUE_PERMS, "queue")?;
        let (st, se) = self.times()?;
        let resource = format!("/queue/{}/{}", key.account(), queue);
        let sts = [
            perms.as_str(),
            &st,
            &se,
            &resource,
            self.identifier.as_deref().unwrap_or(""),
            self.ip.as_deref().unwrap_or(""),
            self.protocol(),
            SAS_VERSION,
        ]
        .join("\n");
        let sig = key.sign(&sts);
        self.token(&perms, &st, &se, &[], &sig)
    }

    /// A service SAS for a table (whole table; no partition/row key ranges).
    pub fn table(&self, key: &SharedKeyCredential, table: &str) -> Result<SasToken> {
        let perms = order_permissions(&self.permissions, TABLE_PERMS, "table")?;
        let (st, se) = self.times()?;
        let resource = format!("/table/{}/{}", key.account(), table.to_ascii_lowercase());
        let sts = [
            perms.as_str(),
            &st,
            &se,
            &resource,
            self.identifier.as_deref().unwrap_or(""),
            self.ip.as_deref().unwrap_or(""),
            self.protocol(),
            SAS_VERSION,
            "",
            "",
            "",
            "",
        ]
        .join("\n");
        let sig = key.sign(&sts);
        self.token(&perms, &st, &se, &[("tn", table)], &sig)
    }

    /// An account SAS. `services` is a subset of `bqtf` (blob, queue, table, file) and
    /// `resource_types` a subset of `sco` (service, container, object).
    pub fn account(
        &self,
        key: &SharedKeyCredential,
        services: &str,
        resource_types: &str,
    ) -> Result<SasToken> {
        let perms = order_permissions(&self.permissions, ACCOUNT_PERMS, "account")?;
        let ss = order_permissions(services, "bqtf", "account services")?;
        let srt = order_permissions(resource_types, "sco", "account resource types")?;
        if self.identifier.is_some() {
            return Err(Error::invalid_input(
                "account SAS cannot refer to a stored access policy",
            ));
        }
        let (st, se) = self.times()?;
        let sts = [
            key.account(),
            &perms,
            &ss,
            &srt,
            &st,
            &se,
            self.ip.as_deref().unwrap_or(""),
            self.protocol(),
            SAS_VERSION,
            "",
            "",
        ]
        .join("\n");
        let sig = key.sign(&sts);
        self.token(&perms, &st, &se, &[("ss", &ss), ("srt", &srt)], &sig)
    }

    fn protocol(&self) -> &'static str {
        if self.https_only { "https" } else { "" }
    }

    fn times(&self) -> Result<(String, String)> {
        let st = match self.start {
            Some(s) => iso8601(s)?,
            None => String::new(),
        };
        Ok((st, iso8601(self.expiry)?))
    }

    fn token(
        &self,
        perms: &str,
        st: &str,
        se: &str,
        extra: &[(&str, &str)],
        sig: &str,
    ) -> Result<SasToken> {
        let mut pairs: Vec<(&str, &str)> = vec![("sv", SAS_VERSION)];
        pairs.extend_from_slice(extra);
        pairs.push(("sp", perms));
        if !st.is_empty() {
            pairs.push(("st", st));
        }
        pairs.push(("se", se));
        if let Some(ip) = &self.ip {
            pairs.push(("sip", ip));
        }
        if self.https_only {
            pairs.push(("spr", "https"));
        }
        if let Some(si) = &self.identifier {
            pairs.push(("si", si));
        }
        pairs.push(("sig", sig));
        let q = pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", crate::http::request::encode_query_value(v)))
            .collect::<Vec<_>>()
            .join("&");
        SasToken::new(q)
    }
}

fn order_permissions(given: &str, canonical: &str, what: &str) -> Result<String> {
    if let Some(bad) = given.chars().find(|c| !canonical.contains(*c)) {
        return Err(Error::invalid_input(format!(
            "permission '{bad}' is not valid for a {what} SAS (allowed: {canonical})"
        )));
    }
    if given.is_empty() {
        return Err(Error::invalid_input(format!(
            "{what} SAS needs at least one permission"
        )));
    }
    Ok(canonical.chars().filter(|c| given.contains(*c)).collect())
}

fn iso8601(t: OffsetDateTime) -> Result<String> {
    t.to_offset(time::UtcOffset::UTC)
        .format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
        ))
        .map_err(|_| Error::invalid_input("SAS time out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn permission_order_and_validation() {
        assert_eq!(order_permissions("wr", BLOB_PERMS, "b").unwrap(), "rw");
        assert!(order_permissions("rq", BLOB_PERMS, "b").is_err());
        assert!(order_permissions("", BLOB_PERMS, "b").is_err());
    }

    #[test]
    fn blob_sas_is_deterministic() {
        let key = SharedKeyCredential::new("acct", "a2V5").unwrap();
        let b = SasBuilder::new("rw", datetime!(2026-11-22 01:00 UTC));
        let t = b.blob(&key, "c", "b").unwrap();
        let raw = t.expose_secret();
        assert!(
            raw.starts_with("sv=2025-11-05&sr=b&sp=rw&se=2026-11-22T01%3A00%3A00Z&sig="),
            "{raw}"
        );
        // same inputs, same signature
        assert_eq!(raw, b.blob(&key, "c", "b").unwrap().expose_secret());
        assert_ne!(raw, b.blob(&key, "c", "other").unwrap().expose_secret());
    }
}
