//! Get/Set Service Properties of the Blob, Queue, Table and File services: Storage Analytics
//! logging and metrics, CORS rules, (Blob only) the soft-delete retention policy, the default
//! service version and static website hosting, and (File only) the SMB protocol settings: the
//! schema of API version 2025-11-05 in full. Also Get Service Stats (Blob, Queue, Table): the
//! geo-replication status of an RA-GRS account's secondary location.
//!
//! ```no_run
//! # async fn f(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
//! use azstore::service_properties::RetentionPolicy;
//! let mut props = blobs.get_service_properties().await?;
//! props.delete_retention_policy = Some(RetentionPolicy::days(7)); // soft delete on
//! blobs.set_service_properties(&props).await?;
//! # Ok(()) }
//! ```
//!
//! Set Service Properties replaces only the sections that are present: a `None` section is
//! left out of the request and so left unchanged by the service. Elements a later service
//! version adds, which azstore does not model, are kept from Get Service Properties and sent
//! back by Set Service Properties inside the same section, so a read-modify-write never drops
//! a setting it read.

pub(crate) mod ops;
mod stats;
mod xml;
pub(crate) use ops::{Sections, service_properties, service_stats};
pub use stats::{GeoReplicationStatus, ServiceStats};

/// A retention policy: how many days logs, metrics or soft-deleted blobs are kept.
///
/// ```
/// use azstore::service_properties::RetentionPolicy;
/// assert_eq!(
///     RetentionPolicy::days(7),
///     RetentionPolicy { enabled: true, days: Some(7), allow_permanent_delete: None }
/// );
/// assert!(!RetentionPolicy::disabled().enabled);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetentionPolicy {
    /// Whether data is deleted after `days`.
    pub enabled: bool,
    /// 1–365 days; required when enabled.
    pub days: Option<u32>,
    /// (Blob soft delete) Whether soft-deleted snapshots and versions may be deleted
    /// permanently (`AllowPermanentDelete`); `None` leaves the service's setting.
    pub allow_permanent_delete: Option<bool>,
}

impl RetentionPolicy {
    /// Keep for `days` days (1–365, checked before Set Service Properties is sent).
    ///
    /// ```
    /// let week = azstore::service_properties::RetentionPolicy::days(7);
    /// assert_eq!(week.days, Some(7));
    /// ```
    pub fn days(days: u32) -> RetentionPolicy {
        RetentionPolicy {
            enabled: true,
            days: Some(days),
            allow_permanent_delete: None,
        }
    }

    /// No retention limit (or, for soft delete: soft delete off).
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// use azstore::service_properties::RetentionPolicy;
    /// let mut props = blobs.get_service_properties().await?;
    /// props.delete_retention_policy = Some(RetentionPolicy::disabled()); // soft delete off
    /// blobs.set_service_properties(&props).await?;
    /// # Ok(()) }
    /// ```
    pub fn disabled() -> RetentionPolicy {
        RetentionPolicy {
            enabled: false,
            days: None,
            allow_permanent_delete: None,
        }
    }

    /// Whether soft-deleted blob versions and snapshots may be deleted permanently before the
    /// retention ends (`AllowPermanentDelete`, Blob soft delete). Default: not sent, which
    /// leaves the account's setting as it is.
    ///
    /// ```
    /// use azstore::service_properties::RetentionPolicy;
    /// let policy = RetentionPolicy::days(14).allow_permanent_delete(false);
    /// assert_eq!(policy.allow_permanent_delete, Some(false));
    /// ```
    #[must_use]
    pub fn allow_permanent_delete(mut self, allow: bool) -> RetentionPolicy {
        self.allow_permanent_delete = Some(allow);
        self
    }
}

/// Storage Analytics logging.
///
/// ```no_run
/// # async fn demo(queues: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
/// use azstore::service_properties::{Logging, RetentionPolicy, ServiceProperties};
/// let mut props = ServiceProperties::default(); // other sections: left unchanged
/// props.logging = Some(Logging {
///     version: "1.0".into(),
///     delete: true,
///     read: false,
///     write: true,
///     retention_policy: RetentionPolicy::days(30),
/// });
/// queues.set_service_properties(&props).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Logging {
    /// Analytics version, usually `1.0`.
    pub version: String,
    /// Log delete requests.
    pub delete: bool,
    /// Log read requests.
    pub read: bool,
    /// Log write requests.
    pub write: bool,
    /// How long logs are kept.
    pub retention_policy: RetentionPolicy,
}

/// Storage Analytics metrics (hourly or per minute).
///
/// ```no_run
/// # async fn demo(tables: azstore::table::TableServiceClient) -> azstore::Result<()> {
/// use azstore::service_properties::{Metrics, RetentionPolicy};
/// let mut props = tables.get_service_properties().await?;
/// props.hour_metrics = Some(Metrics {
///     version: "1.0".into(),
///     enabled: true,
///     include_apis: Some(true),
///     retention_policy: RetentionPolicy::days(7),
/// });
/// tables.set_service_properties(&props).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metrics {
    /// Analytics version, usually `1.0`.
    pub version: String,
    /// Whether metrics are collected.
    pub enabled: bool,
    /// Whether per-API statistics are included (only meaningful when enabled).
    pub include_apis: Option<bool>,
    /// How long metrics are kept.
    pub retention_policy: RetentionPolicy,
}

/// One CORS rule.
///
/// ```no_run
/// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
/// use azstore::service_properties::CorsRule;
/// let mut props = blobs.get_service_properties().await?;
/// // Let the web app read blobs from the browser.
/// props.cors = Some(vec![CorsRule {
///     allowed_origins: vec!["https://app.contoso.com".into()],
///     allowed_methods: vec!["GET".into(), "HEAD".into()],
///     allowed_headers: vec!["*".into()],
///     exposed_headers: vec!["etag".into()],
///     max_age_in_seconds: 3600,
/// }]);
/// blobs.set_service_properties(&props).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CorsRule {
    /// Origins allowed (`*` for all).
    pub allowed_origins: Vec<String>,
    /// Methods allowed (`GET`, `PUT`, ...).
    pub allowed_methods: Vec<String>,
    /// Request headers allowed.
    pub allowed_headers: Vec<String>,
    /// Response headers exposed.
    pub exposed_headers: Vec<String>,
    /// How long a browser may cache the preflight answer.
    pub max_age_in_seconds: u32,
}

/// Static website hosting (Blob service).
///
/// ```no_run
/// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
/// use azstore::service_properties::StaticWebsite;
/// let mut props = blobs.get_service_properties().await?;
/// props.static_website = Some(StaticWebsite {
///     enabled: true,
///     index_document: Some("index.html".into()),
///     error_document_404_path: Some("404.html".into()),
///     default_index_document_path: None,
/// });
/// blobs.set_service_properties(&props).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StaticWebsite {
    /// Whether the `$web` container is served.
    pub enabled: bool,
    /// The index document, e.g. `index.html`.
    pub index_document: Option<String>,
    /// The document served for 404s.
    pub error_document_404_path: Option<String>,
    /// The absolute path of the default index page (`DefaultIndexDocumentPath`), served for
    /// every path instead of the per-directory `index_document`.
    pub default_index_document_path: Option<String>,
}

/// Protocol settings of the File service (`ProtocolSettings`).
///
/// ```no_run
/// # async fn demo(shares: azstore::file::ShareServiceClient) -> azstore::Result<()> {
/// let props = shares.get_service_properties().await?;
/// if let Some(settings) = &props.protocol {
///     println!("SMB Multichannel: {:?}", settings.smb_multichannel);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProtocolSettings {
    /// Whether SMB Multichannel is on (`SMB/Multichannel/Enabled`; premium file shares).
    pub smb_multichannel: Option<bool>,
}

/// The properties of a storage service. Sections a service does not have (e.g. soft delete
/// on Queue) are `None` when read and must be `None` when written.
///
/// ```no_run
/// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
/// let props = blobs.get_service_properties().await?;
/// println!("soft delete: {:?}, CORS rules: {}", props.delete_retention_policy,
///     props.cors.as_ref().map_or(0, Vec::len));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ServiceProperties {
    /// Analytics logging (Blob, Queue, Table).
    pub logging: Option<Logging>,
    /// Hourly metrics.
    pub hour_metrics: Option<Metrics>,
    /// Minute metrics.
    pub minute_metrics: Option<Metrics>,
    /// CORS rules (`Some(vec![])` removes all rules; at most 5).
    pub cors: Option<Vec<CorsRule>>,
    /// (Blob) The version used for requests without `x-ms-version`.
    pub default_service_version: Option<String>,
    /// (Blob) Soft delete: how long deleted blobs are kept.
    pub delete_retention_policy: Option<RetentionPolicy>,
    /// (Blob) Static website hosting.
    pub static_website: Option<StaticWebsite>,
    /// (File) Protocol settings.
    pub protocol: Option<ProtocolSettings>,
    /// Elements azstore does not model, verbatim, by the path of their parent.
    unmodelled: Vec<(&'static str, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bom() {
        let mut props = ServiceProperties {
            logging: Some(Logging {
                version: "1.0".into(),
                delete: true,
                read: false,
                write: true,
                retention_policy: RetentionPolicy::days(5),
            }),
            hour_metrics: Some(Metrics {
                version: "1.0".into(),
                enabled: true,
                include_apis: Some(true),
                retention_policy: RetentionPolicy::days(5),
            }),
            minute_metrics: Some(Metrics {
                version: "1.0".into(),
                enabled: false,
                include_apis: None,
                retention_policy: RetentionPolicy::disabled(),
            }),
            cors: Some(vec![CorsRule {
                allowed_origins: vec!["www.xyz.com".into(), "www.ab.com".into()],
                allowed_methods: vec!["GET".into(), "PUT".into()],
                allowed_headers: vec!["x-ms-meta-*".into()],
                exposed_headers: vec!["x-ms-meta-data*".into()],
                max_age_in_seconds: 500,
            }]),
            default_service_version: Some("2019-02-02".into()),
            delete_retention_policy: Some(RetentionPolicy::days(2)),
            static_website: Some(StaticWebsite {
                enabled: true,
                index_document: Some("index.html".into()),
                error_document_404_path: Some("404 & gone.html".into()),
                default_index_document_path: Some("/index.html".into()),
            }),
            ..ServiceProperties::default()
        };
        props.delete_retention_policy = Some(RetentionPolicy::days(2).allow_permanent_delete(true));
        let xml = format!("\u{feff}{}", props.to_xml());
        assert_eq!(ServiceProperties::from_xml(xml.as_bytes()).unwrap(), props);
        // As the Python SDK sends it (recording test_soft_delete_with_leased_blob).
        let python = b"<?xml version='1.0' encoding='utf-8'?>\n<StorageServiceProperties><DeleteRetentionPolicy><Enabled>True</Enabled><Days>2</Days></DeleteRetentionPolicy></StorageServiceProperties>";
        let p = ServiceProperties::from_xml(python).unwrap();
        assert_eq!(p.delete_retention_policy, Some(RetentionPolicy::days(2)));
        assert!(p.logging.is_none() && p.cors.is_none());
    }

    #[test]
    fn invalid_settings_are_refused() {
        let mut p = ServiceProperties {
            delete_retention_policy: Some(RetentionPolicy {
                enabled: true,
                days: None,
                allow_permanent_delete: None,
            }),
            ..ServiceProperties::default()
        };
        assert!(p.validate().is_err());
        p.delete_retention_policy = Some(RetentionPolicy::days(366));
        assert!(p.validate().is_err());
        p.delete_retention_policy = Some(RetentionPolicy::days(365));
        assert!(p.validate().is_ok());
        assert!(ServiceProperties::from_xml(b"<StorageServiceProperties><Logging>").is_err());
    }

    /// A later version's elements, and ones azstore does not model, survive a
    /// read-modify-write in their section; a section left `None` is left out whole.
    #[test]
    fn unmodelled_elements_are_carried_through() {
        let read = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>\
            <Logging><Version>1.0</Version><Delete>false</Delete><Read>false</Read><Write>false</Write>\
            <RetentionPolicy><Enabled>false</Enabled><Future>1</Future></RetentionPolicy><Sampling rate=\"0.5\"/></Logging>\
            <DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days><AllowPermanentDelete>true</AllowPermanentDelete><Tier>Cold</Tier></DeleteRetentionPolicy>\
            <StaticWebsite><Enabled>true</Enabled><DefaultIndexDocumentPath>/a.html</DefaultIndexDocumentPath><Spa><On>true</On></Spa></StaticWebsite>\
            <Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule></Cors>\
            <ProtocolSettings><SMB><Multichannel><Enabled>true</Enabled></Multichannel><EncryptionInTransit><Required>true</Required></EncryptionInTransit></SMB></ProtocolSettings>\
            <NewSection><A>x &amp; y</A></NewSection>\
            </StorageServiceProperties>";
        let p = ServiceProperties::from_xml(read.as_bytes()).unwrap();
        assert_eq!(
            p.delete_retention_policy,
            Some(RetentionPolicy::days(7).allow_permanent_delete(true))
        );
        assert_eq!(
            p.static_website
                .as_ref()
                .unwrap()
                .default_index_document_path
                .as_deref(),
            Some("/a.html")
        );
        assert_eq!(p.protocol.as_ref().unwrap().smb_multichannel, Some(true));
        assert_eq!(p.cors.as_ref().unwrap().len(), 1);
        let xml = p.to_xml();
        for kept in [
            "<RetentionPolicy><Enabled>false</Enabled><Future>1</Future></RetentionPolicy><Sampling rate=\"0.5\"/></Logging>",
            "<AllowPermanentDelete>true</AllowPermanentDelete><Tier>Cold</Tier></DeleteRetentionPolicy>",
            "<DefaultIndexDocumentPath>/a.html</DefaultIndexDocumentPath><Spa><On>true</On></Spa></StaticWebsite>",
            "<SMB><Multichannel><Enabled>true</Enabled></Multichannel><EncryptionInTransit><Required>true</Required></EncryptionInTransit></SMB>",
            "<NewSection><A>x &amp; y</A></NewSection></StorageServiceProperties>",
        ] {
            assert!(xml.contains(kept), "{kept} missing from {xml}");
        }
        assert_eq!(ServiceProperties::from_xml(xml.as_bytes()).unwrap(), p);
        // A section set to None goes whole, with what it carried.
        let mut q = p.clone();
        q.static_website = None;
        assert!(!q.to_xml().contains("Spa"));
        assert!(q.to_xml().contains("<NewSection>"));
        assert!(
            ServiceProperties::from_xml(
                b"<StorageServiceProperties><Logging></Nope></StorageServiceProperties>"
            )
            .is_err()
        );
    }

    #[test]
    fn service_stats_as_the_service_sends_them() {
        let live = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>Wed, 19 Jan 2022 22:28:43 GMT</LastSyncTime></GeoReplication></StorageServiceStats>";
        let s = ServiceStats::from_xml(live.as_bytes()).unwrap();
        assert_eq!(s.status, GeoReplicationStatus::Live);
        assert_eq!(s.last_sync_time.unwrap().unix_timestamp(), 1_642_631_323);
        let boot = b"<StorageServiceStats><GeoReplication><Status>bootstrap</Status><LastSyncTime /></GeoReplication></StorageServiceStats>";
        let s = ServiceStats::from_xml(boot).unwrap();
        assert_eq!(s.status, GeoReplicationStatus::Bootstrap);
        assert_eq!(s.last_sync_time, None);
        let new = b"<StorageServiceStats><GeoReplication><Status>paused</Status></GeoReplication></StorageServiceStats>";
        assert_eq!(
            ServiceStats::from_xml(new).unwrap().status,
            GeoReplicationStatus::Other("paused".into())
        );
        for bad in [
            &b"<html/>"[..],
            b"<StorageServiceStats></StorageServiceStats>",
            b"<StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>soon</LastSyncTime></GeoReplication></StorageServiceStats>",
        ] {
            assert!(ServiceStats::from_xml(bad).is_err());
        }
    }
}
