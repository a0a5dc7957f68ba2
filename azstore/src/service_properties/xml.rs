//! The XML of Get/Set Service Properties (the service schema), read and written, with the
//! elements azstore does not model carried through; and the checks before a Set.

use serde::Deserialize;

use super::{
    CorsRule, Logging, Metrics, ProtocolSettings, RetentionPolicy, ServiceProperties, StaticWebsite,
};
use crate::error::{Error, Result};

/// A boolean as the service reads it: `true`/`false` in any case (the Python SDK sends
/// `True`, and Azure accepts it).
fn de_bool<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<bool>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    match s.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(serde::de::Error::custom(format!("{v:?} is not a boolean"))),
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawRetention {
    #[serde(default, deserialize_with = "de_bool")]
    enabled: Option<bool>,
    #[serde(default)]
    days: Option<u32>,
    #[serde(default, deserialize_with = "de_bool")]
    allow_permanent_delete: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawLogging {
    #[serde(default)]
    version: Option<String>,
    #[serde(default, deserialize_with = "de_bool")]
    delete: Option<bool>,
    #[serde(default, deserialize_with = "de_bool")]
    read: Option<bool>,
    #[serde(default, deserialize_with = "de_bool")]
    write: Option<bool>,
    #[serde(default)]
    retention_policy: Option<RawRetention>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawMetrics {
    #[serde(default)]
    version: Option<String>,
    #[serde(default, deserialize_with = "de_bool")]
    enabled: Option<bool>,
    #[serde(rename = "IncludeAPIs", default, deserialize_with = "de_bool")]
    include_apis: Option<bool>,
    #[serde(default)]
    retention_policy: Option<RawRetention>,
}

#[derive(Deserialize, Default)]
struct RawCors {
    #[serde(rename = "CorsRule", default)]
    rules: Vec<RawCorsRule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawCorsRule {
    #[serde(default)]
    allowed_origins: Option<String>,
    #[serde(default)]
    allowed_methods: Option<String>,
    #[serde(default)]
    allowed_headers: Option<String>,
    #[serde(default)]
    exposed_headers: Option<String>,
    #[serde(default)]
    max_age_in_seconds: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawStaticWebsite {
    #[serde(default, deserialize_with = "de_bool")]
    enabled: Option<bool>,
    #[serde(default)]
    index_document: Option<String>,
    #[serde(rename = "ErrorDocument404Path", default)]
    error_document_404_path: Option<String>,
    #[serde(default)]
    default_index_document_path: Option<String>,
}

#[derive(Deserialize)]
struct RawProtocol {
    #[serde(rename = "SMB", default)]
    smb: Option<RawSmb>,
}

#[derive(Deserialize)]
struct RawSmb {
    #[serde(rename = "Multichannel", default)]
    multichannel: Option<RawEnabled>,
}

#[derive(Deserialize)]
struct RawEnabled {
    #[serde(rename = "Enabled", default, deserialize_with = "de_bool")]
    enabled: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawProperties {
    #[serde(default)]
    logging: Option<RawLogging>,
    #[serde(default)]
    hour_metrics: Option<RawMetrics>,
    #[serde(default)]
    minute_metrics: Option<RawMetrics>,
    #[serde(default)]
    cors: Option<RawCors>,
    #[serde(default)]
    default_service_version: Option<String>,
    #[serde(default)]
    delete_retention_policy: Option<RawRetention>,
    #[serde(default)]
    static_website: Option<RawStaticWebsite>,
    #[serde(default)]
    protocol_settings: Option<RawProtocol>,
}

const RETENTION: &[&str] = &["Enabled", "Days", "AllowPermanentDelete"];
const METRICS: &[&str] = &["Version", "Enabled", "IncludeAPIs", "RetentionPolicy"];

/// Every element azstore models, by the path of its parent: the schema of API version
/// 2025-11-05. A child of one of these parents that is not listed is kept verbatim; the
/// children of an element whose path is not a parent here (`CorsRule`, `Version`) are read
/// as a whole.
const MODELLED: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "Logging",
            "HourMetrics",
            "MinuteMetrics",
            "Cors",
            "DefaultServiceVersion",
            "DeleteRetentionPolicy",
            "StaticWebsite",
            "ProtocolSettings",
        ],
    ),
    (
        "Logging",
        &["Version", "Delete", "Read", "Write", "RetentionPolicy"],
    ),
    ("Logging/RetentionPolicy", RETENTION),
    ("HourMetrics", METRICS),
    ("HourMetrics/RetentionPolicy", RETENTION),
    ("MinuteMetrics", METRICS),
    ("MinuteMetrics/RetentionPolicy", RETENTION),
    ("DeleteRetentionPolicy", RETENTION),
    (
        "StaticWebsite",
        &[
            "Enabled",
            "IndexDocument",
            "ErrorDocument404Path",
            "DefaultIndexDocumentPath",
        ],
    ),
    ("ProtocolSettings", &["SMB"]),
    ("ProtocolSettings/SMB", &["Multichannel"]),
    ("ProtocolSettings/SMB/Multichannel", &["Enabled"]),
];

/// The elements of `text` (a `<StorageServiceProperties>` document) that [`MODELLED`] does
/// not name, verbatim, each with the path of its parent.
fn unmodelled(text: &str) -> Result<Vec<(&'static str, String)>> {
    use quick_xml::events::Event;
    let malformed =
        |e: &dyn std::fmt::Display| Error::decode(format!("service properties are malformed: {e}"));
    let mut reader = quick_xml::Reader::from_str(text);
    // Element names below the root; `None` until the root element opened.
    let mut stack: Option<Vec<String>> = None;
    let mut out = Vec::new();
    loop {
        let before = reader.buffer_position() as usize;
        let (e, empty) = match reader.read_event().map_err(|e| malformed(&e))? {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(_) => {
                if let Some(s) = &mut stack {
                    s.pop();
                }
                continue;
            }
            Event::Eof => return Ok(out),
            _ => continue,
        };
        let Some(path) = &mut stack else {
            stack = Some(Vec::new());
            continue;
        };
        let name = e.local_name().as_ref().to_string();
        let parent = path.join("/");
        let known = MODELLED.iter().find(|(p, _)| *p == parent);
        match known {
            Some((_, children)) if children.contains(&name.as_str()) => {
                if !empty {
                    path.push(name);
                }
            }
            _ => {
                if !empty {
                    let end = e.to_end().into_owned();
                    reader.read_to_end(end.name()).map_err(|e| malformed(&e))?;
                }
                if let Some((p, _)) = known {
                    let raw = text[before..reader.buffer_position() as usize].trim();
                    out.push((*p, raw.to_string()));
                }
            }
        }
    }
}

fn retention(r: Option<RawRetention>) -> RetentionPolicy {
    let r = r.unwrap_or_default();
    RetentionPolicy {
        enabled: r.enabled.unwrap_or(false),
        days: r.days,
        allow_permanent_delete: r.allow_permanent_delete,
    }
}

fn list(s: Option<String>) -> Vec<String> {
    s.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

fn metrics(m: RawMetrics) -> Metrics {
    Metrics {
        version: m.version.unwrap_or_default(),
        enabled: m.enabled.unwrap_or(false),
        include_apis: m.include_apis,
        retention_policy: retention(m.retention_policy),
    }
}

impl ServiceProperties {
    /// Parses a `<StorageServiceProperties>` document (a leading BOM is accepted).
    ///
    /// ```
    /// use azstore::service_properties::ServiceProperties;
    /// let xml = b"<StorageServiceProperties><DefaultServiceVersion>2025-11-05</DefaultServiceVersion></StorageServiceProperties>";
    /// let props = ServiceProperties::from_xml(xml)?;
    /// assert_eq!(props.default_service_version.as_deref(), Some("2025-11-05"));
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn from_xml(body: &[u8]) -> Result<ServiceProperties> {
        let text = std::str::from_utf8(body)
            .map_err(|_| Error::decode("service properties are not UTF-8"))?;
        let text = text.trim_start_matches('\u{feff}');
        let raw: RawProperties = quick_xml::de::from_str(text)
            .map_err(|e| Error::decode(format!("service properties are malformed: {e}")))?;
        let unmodelled = unmodelled(text)?;
        Ok(ServiceProperties {
            logging: raw.logging.map(|l| Logging {
                version: l.version.unwrap_or_default(),
                delete: l.delete.unwrap_or(false),
                read: l.read.unwrap_or(false),
                write: l.write.unwrap_or(false),
                retention_policy: retention(l.retention_policy),
            }),
            hour_metrics: raw.hour_metrics.map(metrics),
            minute_metrics: raw.minute_metrics.map(metrics),
            cors: raw.cors.map(|c| {
                c.rules
                    .into_iter()
                    .map(|r| CorsRule {
                        allowed_origins: list(r.allowed_origins),
                        allowed_methods: list(r.allowed_methods),
                        allowed_headers: list(r.allowed_headers),
                        exposed_headers: list(r.exposed_headers),
                        max_age_in_seconds: r.max_age_in_seconds.unwrap_or(0),
                    })
                    .collect()
            }),
            default_service_version: raw.default_service_version.filter(|v| !v.is_empty()),
            delete_retention_policy: raw.delete_retention_policy.map(|r| retention(Some(r))),
            static_website: raw.static_website.map(|w| StaticWebsite {
                enabled: w.enabled.unwrap_or(false),
                index_document: w.index_document.filter(|s| !s.is_empty()),
                error_document_404_path: w.error_document_404_path.filter(|s| !s.is_empty()),
                default_index_document_path: w
                    .default_index_document_path
                    .filter(|s| !s.is_empty()),
            }),
            protocol: raw.protocol_settings.map(|p| ProtocolSettings {
                smb_multichannel: p.smb.and_then(|s| s.multichannel).and_then(|m| m.enabled),
            }),
            unmodelled,
        })
    }

    /// Checks the limits the service enforces, so bad input is refused before sending.
    pub(crate) fn validate(&self) -> Result<()> {
        let check_retention = |what: &str, r: &RetentionPolicy| -> Result<()> {
            match (r.enabled, r.days) {
                (true, Some(d)) if (1..=365).contains(&d) => Ok(()),
                (true, _) => Err(Error::invalid_input(format!(
                    "{what}: an enabled retention policy needs 1-365 days"
                ))),
                (false, _) => Ok(()),
            }
        };
        if let Some(l) = &self.logging {
            check_retention("logging", &l.retention_policy)?;
        }
        for (what, m) in [
            ("hour metrics", &self.hour_metrics),
            ("minute metrics", &self.minute_metrics),
        ] {
            if let Some(m) = m {
                check_retention(what, &m.retention_policy)?;
            }
        }
        if let Some(r) = &self.delete_retention_policy {
            check_retention("delete retention", r)?;
        }
        if let Some(rules) = &self.cors {
            if rules.len() > 5 {
                return Err(Error::invalid_input("at most 5 CORS rules"));
            }
            for r in rules {
                if r.allowed_origins.is_empty() || r.allowed_methods.is_empty() {
                    return Err(Error::invalid_input(
                        "a CORS rule needs allowed origins and methods",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `<StorageServiceProperties>` document, sections in the service's schema order,
    /// each followed by the elements of it that were read but are not modelled.
    ///
    /// ```
    /// use azstore::service_properties::{RetentionPolicy, ServiceProperties};
    /// let mut props = ServiceProperties::default();
    /// props.delete_retention_policy = Some(RetentionPolicy::days(7));
    /// let xml = props.to_xml();
    /// assert!(xml.contains("<Days>7</Days>"));
    /// assert_eq!(ServiceProperties::from_xml(xml.as_bytes())?, props);
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn to_xml(&self) -> String {
        fn esc(s: &str) -> String {
            quick_xml::escape::escape(s).into_owned()
        }
        let extra = |out: &mut String, path: &str| {
            for (_, raw) in self.unmodelled.iter().filter(|(p, _)| *p == path) {
                out.push_str(raw);
            }
        };
        let retention = |out: &mut String, tag: &str, path: &str, r: &RetentionPolicy| {
            out.push_str(&format!("<{tag}><Enabled>{}</Enabled>", r.enabled));
            if let (true, Some(d)) = (r.enabled, r.days) {
                out.push_str(&format!("<Days>{d}</Days>"));
            }
            if let Some(a) = r.allow_permanent_delete {
                out.push_str(&format!("<AllowPermanentDelete>{a}</AllowPermanentDelete>"));
            }
            extra(out, path);
            out.push_str(&format!("</{tag}>"));
        };
        let metrics = |out: &mut String, tag: &str, m: &Metrics| {
            out.push_str(&format!(
                "<{tag}><Version>{}</Version><Enabled>{}</Enabled>",
                esc(&m.version),
                m.enabled
            ));
            if m.enabled {
                if let Some(i) = m.include_apis {
                    out.push_str(&format!("<IncludeAPIs>{i}</IncludeAPIs>"));
                }
            }
            let path = format!("{tag}/RetentionPolicy");
            retention(out, "RetentionPolicy", &path, &m.retention_policy);
            extra(out, tag);
            out.push_str(&format!("</{tag}>"));
        };
        let mut out =
            String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>");
        if let Some(l) = &self.logging {
            out.push_str(&format!(
                "<Logging><Version>{}</Version><Delete>{}</Delete><Read>{}</Read><Write>{}</Write>",
                esc(&l.version),
                l.delete,
                l.read,
                l.write
            ));
            retention(
                &mut out,
                "RetentionPolicy",
                "Logging/RetentionPolicy",
                &l.retention_policy,
            );
            extra(&mut out, "Logging");
            out.push_str("</Logging>");
        }
        if let Some(m) = &self.hour_metrics {
            metrics(&mut out, "HourMetrics", m);
        }
        if let Some(m) = &self.minute_metrics {
            metrics(&mut out, "MinuteMetrics", m);
        }
        if let Some(rules) = &self.cors {
            out.push_str("<Cors>");
            for r in rules {
                out.push_str(&format!(
                    "<CorsRule><AllowedOrigins>{}</AllowedOrigins><AllowedMethods>{}</AllowedMethods>\
                     <MaxAgeInSeconds>{}</MaxAgeInSeconds><ExposedHeaders>{}</ExposedHeaders>\
                     <AllowedHeaders>{}</AllowedHeaders></CorsRule>",
                    esc(&r.allowed_origins.join(",")),
                    esc(&r.allowed_methods.join(",")),
                    r.max_age_in_seconds,
                    esc(&r.exposed_headers.join(",")),
                    esc(&r.allowed_headers.join(","))
                ));
            }
            out.push_str("</Cors>");
        }
        if let Some(v) = &self.default_service_version {
            out.push_str(&format!(
                "<DefaultServiceVersion>{}</DefaultServiceVersion>",
                esc(v)
            ));
        }
        if let Some(r) = &self.delete_retention_policy {
            retention(
                &mut out,
                "DeleteRetentionPolicy",
                "DeleteRetentionPolicy",
                r,
            );
        }
        if let Some(w) = &self.static_website {
            out.push_str(&format!("<StaticWebsite><Enabled>{}</Enabled>", w.enabled));
            for (tag, value) in [
                ("IndexDocument", &w.index_document),
                ("ErrorDocument404Path", &w.error_document_404_path),
                ("DefaultIndexDocumentPath", &w.default_index_document_path),
            ] {
                if let Some(d) = value {
                    out.push_str(&format!("<{tag}>{}</{tag}>", esc(d)));
                }
            }
            extra(&mut out, "StaticWebsite");
            out.push_str("</StaticWebsite>");
        }
        if let Some(p) = &self.protocol {
            out.push_str("<ProtocolSettings><SMB>");
            if p.smb_multichannel.is_some()
                || self
                    .unmodelled
                    .iter()
                    .any(|(path, _)| *path == "ProtocolSettings/SMB/Multichannel")
            {
                out.push_str("<Multichannel>");
                if let Some(e) = p.smb_multichannel {
                    out.push_str(&format!("<Enabled>{e}</Enabled>"));
                }
                extra(&mut out, "ProtocolSettings/SMB/Multichannel");
                out.push_str("</Multichannel>");
            }
            extra(&mut out, "ProtocolSettings/SMB");
            out.push_str("</SMB>");
            extra(&mut out, "ProtocolSettings");
            out.push_str("</ProtocolSettings>");
        }
        extra(&mut out, "");
        out.push_str("</StorageServiceProperties>");
        out
    }
}
