//! Conversions between object_store's values and azstore's: dates, metadata, attributes, tags.

use std::borrow::Cow;

use ::object_store::path::Path;
use ::object_store::{Attribute, AttributeValue, Attributes, ObjectMeta, TagSet};
use chrono::{DateTime, Utc};
use time::OffsetDateTime;

use super::PUT_ID_METADATA;
use crate::blob::{BlobProperties, BlobWriteOptions, Tags};
use crate::error::{Error, Result};

/// A chrono time as `time`'s (whole seconds: HTTP dates have no finer precision).
pub(crate) fn to_time(t: DateTime<Utc>) -> Result<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp(t.timestamp())
        .map_err(|_| Error::invalid_input(format!("date {t} is out of range")))
}

/// A `time` time as chrono's.
pub(crate) fn to_chrono(t: OffsetDateTime) -> DateTime<Utc> {
    DateTime::from_timestamp(t.unix_timestamp(), t.nanosecond()).unwrap_or_default()
}

/// The `ObjectMeta` of a blob at `location` with these properties.
pub(crate) fn meta(location: Path, p: &BlobProperties) -> Result<ObjectMeta> {
    let last_modified = p
        .last_modified
        .ok_or_else(|| Error::decode("the blob's properties have no Last-Modified"))?;
    Ok(ObjectMeta {
        location,
        last_modified: to_chrono(last_modified),
        size: p.content_length,
        e_tag: Some(p.etag.as_str().to_string()),
        version: p.version_id.clone(),
    })
}

/// The attributes stored with a blob: its HTTP headers and metadata, without the write id.
pub(crate) fn attributes(p: &BlobProperties) -> Attributes {
    let mut a = Attributes::new();
    let h = &p.http_headers;
    for (attr, v) in [
        (Attribute::CacheControl, &h.cache_control),
        (Attribute::ContentDisposition, &h.content_disposition),
        (Attribute::ContentEncoding, &h.content_encoding),
        (Attribute::ContentLanguage, &h.content_language),
        (Attribute::ContentType, &h.content_type),
    ] {
        if let Some(v) = v {
            a.insert(attr, AttributeValue::from(v.clone()));
        }
    }
    for (k, v) in &p.metadata {
        if k != PUT_ID_METADATA {
            a.insert(
                Attribute::Metadata(Cow::Owned(k.clone())),
                AttributeValue::from(v.clone()),
            );
        }
    }
    a
}

/// The write options of a put with `attributes` and `tags` (checked before sending).
pub(crate) fn write_options(attributes: &Attributes, tags: &TagSet) -> Result<BlobWriteOptions> {
    let mut w = BlobWriteOptions::default();
    for (attr, value) in attributes {
        let v = value.as_ref().to_string();
        match attr {
            Attribute::CacheControl => w.headers.cache_control = Some(v),
            Attribute::ContentDisposition => w.headers.content_disposition = Some(v),
            Attribute::ContentEncoding => w.headers.content_encoding = Some(v),
            Attribute::ContentLanguage => w.headers.content_language = Some(v),
            Attribute::ContentType => w.headers.content_type = Some(v),
            Attribute::Metadata(k) => {
                if k.as_ref() == PUT_ID_METADATA {
                    return Err(Error::invalid_input(format!(
                        "the metadata name {PUT_ID_METADATA} is BlobStore's own (the write id \
                         of a conditional write)"
                    )));
                }
                w.metadata.insert(k.to_string(), v);
            }
            other => {
                return Err(Error::invalid_input(format!(
                    "attribute {other:?} is not supported by Azure Blob Storage"
                )));
            }
        }
    }
    if !tags.is_empty() {
        w.tags = Some(parse_tags(tags.encoded())?);
    }
    Ok(w)
}

/// A `TagSet`'s form-encoded `k=v&k2=v2` as azstore's tags.
pub(crate) fn parse_tags(encoded: &str) -> Result<Tags> {
    let decode = |s: &str| -> Result<String> {
        let plus = s.replace('+', " ");
        percent_encoding::percent_decode_str(&plus)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| Error::invalid_input("a tag is not valid UTF-8"))
    };
    let mut tags = Tags::new();
    for pair in encoded.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        tags.insert(decode(k)?, decode(v)?);
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_dates() {
        let mut set = TagSet::default();
        set.push("project", "a b");
        set.push("k&", "v=1");
        let tags = parse_tags(set.encoded()).unwrap();
        assert_eq!(tags.get("project").map(String::as_str), Some("a b"));
        assert_eq!(tags.get("k&").map(String::as_str), Some("v=1"));
        let t = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        assert_eq!(to_time(to_chrono(t)).unwrap(), t);
    }

    #[test]
    fn the_write_id_name_is_reserved() {
        let a = Attributes::from_iter([(Attribute::Metadata(PUT_ID_METADATA.into()), "x")]);
        assert!(write_options(&a, &TagSet::default()).is_err());
        let a = Attributes::from_iter([
            (Attribute::ContentType, "text/plain"),
            (Attribute::Metadata("k".into()), "v"),
        ]);
        let w = write_options(&a, &TagSet::default()).unwrap();
        assert_eq!(w.headers.content_type.as_deref(), Some("text/plain"));
        assert_eq!(w.metadata.get("k").map(String::as_str), Some("v"));
    }
}
