//! EDM values, the dynamic [`Entity`], and their JSON wire form.
//!
//! On the wire (OData JSON) a property is a JSON value, plus a `Name@odata.type` annotation
//! for the types JSON cannot express: `Edm.Int64` (sent as a string so no precision is
//! lost), `Edm.DateTime`, `Edm.Guid`, `Edm.Binary` (base64). azstore also annotates every
//! `Edm.Double`, so that a whole number like `1.0` stays a double and `NaN`, `Infinity` and
//! `-Infinity` (sent as strings, as OData prescribes) survive.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::{Error, Result};

/// The name serde sees for [`EdmValue`] (lets azstore's entity serializer keep exact types).
pub(crate) const EDM_VALUE: &str = "$azstore::EdmValue";
/// The newtype name of [`DateTime`].
pub(crate) const DATETIME: &str = "$azstore::DateTime";
/// The newtype name of [`Guid`].
pub(crate) const GUID: &str = "$azstore::Guid";

/// One typed property value of a table entity.
///
/// `Serialize`/`Deserialize` are implemented, so an `EdmValue` can be a field of a typed
/// entity struct, and a dynamic [`Entity`] round-trips every type exactly.
///
/// ```
/// use azstore::table::{EdmValue, Entity};
/// let e = Entity::new("p", "r").with("Count", 3_i64).with("Ratio", 0.5).with("Raw", vec![1u8, 2]);
/// assert_eq!(e.get("Count"), Some(&EdmValue::Int64(3)));
/// assert_eq!(e.get("Raw").map(EdmValue::edm_type), Some("Edm.Binary"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "$azstore::EdmValue")]
pub enum EdmValue {
    /// `Edm.String`: UTF-8 text (at most 64 KiB in UTF-16).
    String(String),
    /// `Edm.Int32`.
    Int32(i32),
    /// `Edm.Int64`, sent as a JSON string.
    Int64(i64),
    /// `Edm.Double`, including NaN, ±Infinity and -0.0.
    Double(f64),
    /// `Edm.Boolean`.
    Boolean(bool),
    /// `Edm.DateTime`: UTC, 100 ns precision (7 fractional digits on the wire).
    DateTime(DateTime),
    /// `Edm.Guid`.
    Guid(Guid),
    /// `Edm.Binary`: at most 64 KiB, base64 on the wire.
    Binary(Vec<u8>),
}

impl EdmValue {
    /// The EDM type name, e.g. `Edm.Int64`.
    ///
    /// ```
    /// use azstore::table::EdmValue;
    /// assert_eq!(EdmValue::from(7_i64).edm_type(), "Edm.Int64");
    /// assert_eq!(EdmValue::from("x").edm_type(), "Edm.String");
    /// ```
    pub fn edm_type(&self) -> &'static str {
        match self {
            EdmValue::String(_) => "Edm.String",
            EdmValue::Int32(_) => "Edm.Int32",
            EdmValue::Int64(_) => "Edm.Int64",
            EdmValue::Double(_) => "Edm.Double",
            EdmValue::Boolean(_) => "Edm.Boolean",
            EdmValue::DateTime(_) => "Edm.DateTime",
            EdmValue::Guid(_) => "Edm.Guid",
            EdmValue::Binary(_) => "Edm.Binary",
        }
    }

    /// The string, if this is an `Edm.String`.
    ///
    /// ```
    /// use azstore::table::EdmValue;
    /// assert_eq!(EdmValue::from("gold").as_str(), Some("gold"));
    /// assert_eq!(EdmValue::from(1).as_str(), None);
    /// ```
    pub fn as_str(&self) -> Option<&str> {
        match self {
            EdmValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an `i64` if this is an `Edm.Int32` or `Edm.Int64`.
    ///
    /// ```
    /// use azstore::table::EdmValue;
    /// assert_eq!(EdmValue::Int32(5).as_i64(), Some(5));
    /// assert_eq!(EdmValue::Double(5.0).as_i64(), None);
    /// ```
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            EdmValue::Int32(v) => Some(i64::from(*v)),
            EdmValue::Int64(v) => Some(*v),
            _ => None,
        }
    }

    /// Size in bytes as the service counts it towards the 1 MiB entity limit.
    pub(crate) fn stored_size(&self) -> usize {
        match self {
            EdmValue::String(s) => 4 + 2 * s.encode_utf16().count(),
            EdmValue::Binary(b) => 4 + b.len(),
            EdmValue::Int32(_) => 4,
            EdmValue::Boolean(_) => 1,
            EdmValue::Int64(_) | EdmValue::Double(_) | EdmValue::DateTime(_) => 8,
            EdmValue::Guid(_) => 16,
        }
    }

    /// The JSON value and, when the wire needs one, the `@odata.type` annotation.
    pub(crate) fn to_wire(&self) -> (Value, Option<&'static str>) {
        match self {
            EdmValue::String(s) => (Value::String(s.clone()), None),
            EdmValue::Int32(v) => (Value::from(*v), None),
            EdmValue::Boolean(v) => (Value::Bool(*v), None),
            EdmValue::Int64(v) => (Value::String(v.to_string()), Some("Edm.Int64")),
            EdmValue::Double(v) => {
                let value = if v.is_nan() {
                    Value::String("NaN".into())
                } else if v.is_infinite() {
                    Value::String(if *v > 0.0 { "Infinity" } else { "-Infinity" }.into())
                } else {
                    serde_json::Number::from_f64(*v)
                        .map(Value::Number)
                        .unwrap_or(Value::Null)
                };
                (value, Some("Edm.Double"))
            }
            EdmValue::DateTime(t) => (Value::String(t.to_string()), Some("Edm.DateTime")),
            EdmValue::Guid(g) => (Value::String(g.to_string()), Some("Edm.Guid")),
            EdmValue::Binary(b) => (Value::String(B64.encode(b)), Some("Edm.Binary")),
        }
    }

    /// Decodes a wire value with its (optional) type annotation.
    pub(crate) fn from_wire(name: &str, v: &Value, edm_type: Option<&str>) -> Result<EdmValue> {
        let bad = || Error::decode(format!("property {name}: malformed {v} for {edm_type:?}"));
        Ok(match (edm_type, v) {
            (Some("Edm.String") | None, Value::String(s)) => EdmValue::String(s.clone()),
            (Some("Edm.Boolean") | None, Value::Bool(b)) => EdmValue::Boolean(*b),
            (Some("Edm.Int32"), Value::Number(n)) => EdmValue::Int32(
                n.as_i64()
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(bad)?,
            ),
            (Some("Edm.Int64"), Value::String(s)) => {
                EdmValue::Int64(s.trim().parse().map_err(|_| bad())?)
            }
            (Some("Edm.Int64"), Value::Number(n)) => EdmValue::Int64(n.as_i64().ok_or_else(bad)?),
            (Some("Edm.Double"), Value::Number(n)) => EdmValue::Double(n.as_f64().ok_or_else(bad)?),
            (Some("Edm.Double"), Value::String(s)) => EdmValue::Double(match s.as_str() {
                "NaN" => f64::NAN,
                "Infinity" | "INF" => f64::INFINITY,
                "-Infinity" | "-INF" => f64::NEG_INFINITY,
                other => other.parse().map_err(|_| bad())?,
            }),
            (None, Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    match i32::try_from(i) {
                        Ok(i) => EdmValue::Int32(i),
                        Err(_) => EdmValue::Int64(i),
                    }
                } else {
                    EdmValue::Double(n.as_f64().ok_or_else(bad)?)
                }
            }
            (Some("Edm.DateTime"), Value::String(s)) => {
                EdmValue::DateTime(DateTime::parse(s).ok_or_else(bad)?)
            }
            (Some("Edm.Guid"), Value::String(s)) => {
                EdmValue::Guid(Guid(uuid::Uuid::parse_str(s).map_err(|_| bad())?))
            }
            (Some("Edm.Binary"), Value::String(s)) => {
                EdmValue::Binary(B64.decode(s).map_err(|_| bad())?)
            }
            _ => return Err(bad()),
        })
    }

    /// The OData literal for `$filter` (strings quoted with `'` doubled).
    pub(crate) fn filter_literal(&self) -> String {
        match self {
            EdmValue::String(s) => format!("'{}'", s.replace('\'', "''")),
            EdmValue::Int32(v) => v.to_string(),
            EdmValue::Int64(v) => format!("{v}L"),
            EdmValue::Double(v) => {
                if v.is_nan() {
                    "NaN".into()
                } else if v.is_infinite() {
                    if *v > 0.0 { "INF" } else { "-INF" }.into()
                } else {
                    let s = format!("{v:?}");
                    s
                }
            }
            EdmValue::Boolean(v) => v.to_string(),
            EdmValue::DateTime(t) => format!("datetime'{t}'"),
            EdmValue::Guid(g) => format!("guid'{g}'"),
            EdmValue::Binary(b) => {
                let mut s = String::from("X'");
                for byte in b {
                    s.push_str(&format!("{byte:02x}"));
                }
                s.push('\'');
                s
            }
        }
    }
}

macro_rules! from_impl {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for EdmValue {
            fn from(v: $t) -> EdmValue { EdmValue::$v(v.into()) }
        }
    )*};
}
from_impl!(String => String, &str => String, i32 => Int32, i64 => Int64, f64 => Double,
    bool => Boolean, DateTime => DateTime, Guid => Guid, Vec<u8> => Binary, &[u8] => Binary,
    OffsetDateTime => DateTime, uuid::Uuid => Guid);

/// An `Edm.DateTime`: a UTC timestamp with 100 ns precision.
///
/// Use it as a field type in a typed entity (`time::OffsetDateTime` has no serde support
/// enabled here); it serializes as `Edm.DateTime` with 7 fractional digits
/// (`2026-11-22T00:13:20.1234567Z`). Nanoseconds below 100 ns are truncated.
///
/// ```
/// use azstore::table::DateTime;
/// #[derive(serde::Serialize, serde::Deserialize)]
/// #[serde(rename_all = "PascalCase")]
/// struct Visit { partition_key: String, row_key: String, at: DateTime }
/// let v = Visit { partition_key: "2026-11".into(), row_key: "v1".into(), at: DateTime::now() };
/// let e = azstore::table::to_entity(&v)?;
/// assert_eq!(e.get("At").map(|x| x.edm_type()), Some("Edm.DateTime"));
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(OffsetDateTime);

impl DateTime {
    /// Wraps a timestamp, converted to UTC and truncated to 100 ns.
    ///
    /// ```
    /// use azstore::table::DateTime;
    /// let t = DateTime::new(time::macros::datetime!(2026-11-22 01:13:20.123456789 +01:00));
    /// assert_eq!(t.get(), time::macros::datetime!(2026-11-22 00:13:20.1234567 UTC));
    /// ```
    pub fn new(t: OffsetDateTime) -> DateTime {
        let t = t.to_offset(time::UtcOffset::UTC);
        let ns = t.nanosecond();
        DateTime(t.replace_nanosecond(ns - ns % 100).unwrap_or(t))
    }

    /// The current time.
    ///
    /// ```
    /// use azstore::table::Entity;
    /// let seen = Entity::new("workers", "w7").with("LastSeen", azstore::table::DateTime::now());
    /// # let _ = seen;
    /// ```
    pub fn now() -> DateTime {
        DateTime::new(OffsetDateTime::now_utc())
    }

    /// The timestamp.
    ///
    /// ```
    /// let t = azstore::table::DateTime::parse("2026-11-22T00:13:20.1234567Z").unwrap();
    /// assert_eq!(t.get().year(), 2026);
    /// ```
    pub fn get(&self) -> OffsetDateTime {
        self.0
    }

    /// Parses an ISO 8601 timestamp (`2026-11-22T00:13:20.1234567Z`).
    ///
    /// ```
    /// use azstore::table::DateTime;
    /// assert!(DateTime::parse("2026-11-22T00:13:20.1234567Z").is_some());
    /// assert!(DateTime::parse("yesterday").is_none());
    /// ```
    pub fn parse(s: &str) -> Option<DateTime> {
        crate::time_fmt::parse_iso8601(s).map(DateTime::new)
    }
}

impl From<OffsetDateTime> for DateTime {
    fn from(t: OffsetDateTime) -> DateTime {
        DateTime::new(t)
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::time_fmt::iso8601_7(self.0))
    }
}

impl fmt::Debug for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DateTime({self})")
    }
}

/// `Serialize`/`Deserialize` of a wrapper type ([`DateTime`], [`Guid`]): its string form
/// inside a newtype struct whose name (`$name`) tells the table codec which EDM type it is.
macro_rules! wrapper_serde {
    ($ty:ident, $name:expr, $expecting:literal, $what:literal, $parse:expr) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(
                &self,
                s: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_newtype_struct($name, &self.to_string())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(
                d: D,
            ) -> std::result::Result<Self, D::Error> {
                let visitor = Wrapped {
                    expecting: $expecting,
                    what: $what,
                    parse: $parse,
                };
                d.deserialize_newtype_struct($name, visitor)
            }
        }
    };
}

/// Reads a wrapper type from its string form (see `wrapper_serde!`).
struct Wrapped<T> {
    expecting: &'static str,
    what: &'static str,
    parse: fn(&str) -> Option<T>,
}

impl<'de, T> serde::de::Visitor<'de> for Wrapped<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<T, E> {
        (self.parse)(s).ok_or_else(|| E::custom(format!("bad {} {s:?}", self.what)))
    }
    fn visit_newtype_struct<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<T, D::Error> {
        d.deserialize_str(self)
    }
}

wrapper_serde!(
    DateTime,
    DATETIME,
    "an ISO 8601 timestamp",
    "timestamp",
    DateTime::parse
);

/// An `Edm.Guid`. Use it as a field type in a typed entity; a plain `String` field would be
/// stored as `Edm.String`.
///
/// ```
/// use azstore::table::{EdmValue, Entity, Guid};
/// let id = Guid(uuid::Uuid::nil());
/// let e = Entity::new("devices", "d1").with("DeviceId", id);
/// assert_eq!(e.get("DeviceId").map(EdmValue::edm_type), Some("Edm.Guid"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Guid(pub uuid::Uuid);

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.hyphenated())
    }
}

impl From<uuid::Uuid> for Guid {
    fn from(u: uuid::Uuid) -> Guid {
        Guid(u)
    }
}

wrapper_serde!(Guid, GUID, "a GUID", "GUID", |s| uuid::Uuid::parse_str(s)
    .ok()
    .map(Guid));

/// A schemaless entity: keys plus a map of typed properties.
///
/// ```
/// use azstore::table::{EdmValue, Entity};
/// let e = Entity::new("customers", "42")
///     .with("Email", "a@contoso.com")
///     .with("Visits", 7i64)
///     .with("Score", 1.0f64);
/// assert_eq!(e.get("Visits"), Some(&EdmValue::Int64(7)));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entity {
    /// `PartitionKey`.
    pub partition_key: String,
    /// `RowKey`.
    pub row_key: String,
    /// `Timestamp`, set by the service (ignored on writes).
    pub timestamp: Option<DateTime>,
    /// The other properties.
    pub properties: BTreeMap<String, EdmValue>,
}

impl Entity {
    /// An entity with these keys and no properties.
    pub fn new(partition_key: impl Into<String>, row_key: impl Into<String>) -> Entity {
        Entity {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
            ..Entity::default()
        }
    }

    /// Adds (or replaces) a property.
    #[must_use]
    ///
    /// ```
    /// use azstore::table::Entity;
    /// let e = Entity::new("customers", "42").with("Email", "a@contoso.com").with("Vip", true);
    /// assert_eq!(e.properties.len(), 2);
    /// ```
    pub fn with(mut self, name: impl Into<String>, value: impl Into<EdmValue>) -> Entity {
        self.properties.insert(name.into(), value.into());
        self
    }

    /// Adds or replaces a property in place (the `&mut` form of [`with`](Self::with)).
    ///
    /// ```
    /// use azstore::table::{EdmValue, Entity};
    /// let mut e = Entity::new("p", "r").with("N", 1_i64);
    /// e.set("N", 2_i64);
    /// assert_eq!(e.get("N"), Some(&EdmValue::Int64(2)));
    /// ```
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<EdmValue>) {
        self.properties.insert(name.into(), value.into());
    }

    /// A property.
    ///
    /// ```
    /// use azstore::table::{EdmValue, Entity};
    /// let e = Entity::new("p", "r").with("Visits", 7_i64);
    /// assert_eq!(e.get("Visits").and_then(EdmValue::as_i64), Some(7));
    /// assert_eq!(e.get("Missing"), None);
    /// ```
    pub fn get(&self, name: &str) -> Option<&EdmValue> {
        self.properties.get(name)
    }

    /// The JSON body sent to the service.
    pub(crate) fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "PartitionKey".into(),
            Value::String(self.partition_key.clone()),
        );
        m.insert("RowKey".into(), Value::String(self.row_key.clone()));
        for (k, v) in &self.properties {
            let (value, ty) = v.to_wire();
            if let Some(ty) = ty {
                m.insert(format!("{k}@odata.type"), Value::String(ty.into()));
            }
            m.insert(k.clone(), value);
        }
        m
    }

    /// Decodes an entity from a JSON object; also returns its `odata.etag` if present.
    pub(crate) fn from_json(obj: &Map<String, Value>) -> Result<(Entity, Option<ETag>)> {
        let mut e = Entity::default();
        let mut etag = None;
        for (k, v) in obj {
            if k == "odata.etag" {
                etag = v.as_str().map(ETag::new);
                continue;
            }
            if k.starts_with("odata.") || k.contains('@') || v.is_null() {
                continue;
            }
            let ty = obj.get(&format!("{k}@odata.type")).and_then(Value::as_str);
            match k.as_str() {
                "PartitionKey" | "RowKey" => {
                    let s = v
                        .as_str()
                        .ok_or_else(|| Error::decode(format!("{k} is not a string")))?;
                    if k == "PartitionKey" {
                        e.partition_key = s.to_string();
                    } else {
                        e.row_key = s.to_string();
                    }
                }
                "Timestamp" => {
                    e.timestamp = v.as_str().and_then(DateTime::parse);
                }
                _ => {
                    e.properties
                        .insert(k.clone(), EdmValue::from_wire(k, v, ty)?);
                }
            }
        }
        // A `$select` without the keys returns entities without them; they stay empty then.
        Ok((e, etag))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_round_trip_every_type() {
        let t = DateTime::parse("2026-11-22T00:13:20.1234567Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-22T00:13:20.1234567Z");
        let e = Entity::new("p", "r")
            .with("s", "ü'x")
            .with("i", 5)
            .with("l", i64::MAX)
            .with("d", 1.0)
            .with("nz", -0.0)
            .with("nan", f64::NAN)
            .with("inf", f64::NEG_INFINITY)
            .with("b", true)
            .with("t", t)
            .with("g", Guid(uuid::Uuid::nil()))
            .with("bin", (0..=255u8).collect::<Vec<u8>>());
        let json = e.to_json();
        assert_eq!(json["l"], Value::String(i64::MAX.to_string()));
        assert_eq!(json["d@odata.type"], "Edm.Double");
        let text = serde_json::to_string(&json).unwrap();
        assert!(text.contains("\"d\":1.0"), "{text}");
        assert!(text.contains("\"nz\":-0.0"), "{text}");
        assert!(text.contains("\"nan\":\"NaN\""), "{text}");
        let back: Map<String, Value> = serde_json::from_str(&text).unwrap();
        let (got, _) = Entity::from_json(&back).unwrap();
        for (k, v) in &e.properties {
            let g = &got.properties[k];
            match (v, g) {
                (EdmValue::Double(a), EdmValue::Double(b)) => {
                    assert_eq!(a.to_bits(), b.to_bits(), "{k}")
                }
                _ => assert_eq!(v, g, "{k}"),
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_value_survives_the_wire(
            l in proptest::num::i64::ANY,
            i in proptest::num::i32::ANY,
            d in proptest::num::f64::ANY,
            s in ".*",
            b in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            ticks in 0i64..2_000_000_000_000_000,
        ) {
            let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ticks) * 100).unwrap();
            let e = Entity::new("p", "r")
                .with("l", l).with("i", i).with("d", d).with("s", s.as_str())
                .with("b", b).with("t", t);
            let text = serde_json::to_string(&e.to_json()).unwrap();
            let back: Map<String, Value> = serde_json::from_str(&text).unwrap();
            let (got, _) = Entity::from_json(&back).unwrap();
            proptest::prop_assert_eq!(got.properties.len(), e.properties.len());
            for (k, v) in &e.properties {
                match (v, &got.properties[k]) {
                    // NaN payloads are not kept (OData has one "NaN"); every other bit is.
                    (EdmValue::Double(a), EdmValue::Double(b)) if a.is_nan() => {
                        proptest::prop_assert!(b.is_nan())
                    }
                    (EdmValue::Double(a), EdmValue::Double(b)) => {
                        proptest::prop_assert_eq!(a.to_bits(), b.to_bits())
                    }
                    (v, g) => proptest::prop_assert_eq!(v, g),
                }
            }
        }
    }

    #[test]
    fn filter_literals_escape_quotes() {
        assert_eq!(EdmValue::from("o'brien").filter_literal(), "'o''brien'");
        assert_eq!(EdmValue::from(5i64).filter_literal(), "5L");
        assert_eq!(EdmValue::from(1.0).filter_literal(), "1.0");
        assert_eq!(EdmValue::from(vec![0u8, 255]).filter_literal(), "X'00ff'");
    }

    #[test]
    fn malformed_wire_values_are_errors() {
        let v = serde_json::json!("x");
        assert!(EdmValue::from_wire("a", &v, Some("Edm.Int64")).is_err());
        assert!(EdmValue::from_wire("a", &v, Some("Edm.Guid")).is_err());
        assert!(EdmValue::from_wire("a", &serde_json::json!([1]), None).is_err());
    }
}
