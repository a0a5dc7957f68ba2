//! Typed entities through serde: a struct (or map) ⇄ [`Entity`].
//!
//! Rust types map to EDM types as follows (writing and reading):
//!
//! | Rust | EDM |
//! |---|---|
//! | `String`, `&str`, `char`, unit enum variants | `Edm.String` |
//! | `i8`, `i16`, `i32`, `u8`, `u16` | `Edm.Int32` |
//! | `i64`, `u32`, `u64` (≤ `i64::MAX`) | `Edm.Int64` |
//! | `f32`, `f64` | `Edm.Double` (NaN, ±∞, -0.0 kept) |
//! | `bool` | `Edm.Boolean` |
//! | [`DateTime`](crate::table::DateTime) | `Edm.DateTime` |
//! | [`Guid`](crate::table::Guid) | `Edm.Guid` |
//! | `Vec<u8>` (and serde bytes) | `Edm.Binary` |
//! | [`EdmValue`] | its own type |
//! | `Option::None`, `()` | property omitted |
//!
//! Nested structs, maps and non-byte sequences are refused with `InvalidInput` (a table
//! property is a scalar). Reading is lenient where no information is lost: an `Edm.Int32`
//! property reads into an `i64` or `f64` field; unknown properties are ignored unless the
//! struct says `#[serde(deny_unknown_fields)]`.

use std::fmt;

use serde::de::{self, Visitor};
use serde::ser::{self, Serialize};

use super::edm::{EdmValue, Entity};
use crate::error::{Error, Result};

mod deserializer;
mod serializer;

use deserializer::EntityDeserializer;
use serializer::TopSerializer;

/// The (de)serialization error; converted to [`Error`] at the boundary.
#[derive(Debug)]
pub(crate) struct CodecError(String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CodecError {}
impl ser::Error for CodecError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        CodecError(msg.to_string())
    }
}
impl de::Error for CodecError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        CodecError(msg.to_string())
    }
}

type R<T> = std::result::Result<T, CodecError>;

fn err<T>(msg: impl Into<String>) -> R<T> {
    Err(CodecError(msg.into()))
}

/// Converts a serializable value (a struct with `PartitionKey`/`RowKey`, a map, or an
/// [`Entity`]) into an [`Entity`]. Errors are `InvalidInput`.
///
/// ```
/// use azstore::table::{EdmValue, to_entity};
/// #[derive(serde::Serialize)]
/// #[serde(rename_all = "PascalCase")]
/// struct Order { partition_key: String, row_key: String, total: f64, items: i32 }
///
/// let order = Order { partition_key: "2026-11".into(), row_key: "A-17".into(), total: 20.0, items: 2 };
/// let entity = to_entity(&order)?;
/// assert_eq!(entity.row_key, "A-17");
/// assert_eq!(entity.get("Total"), Some(&EdmValue::Double(20.0))); // Edm.Double even when whole
/// # Ok::<(), azstore::Error>(())
/// ```
pub fn to_entity<T: Serialize + ?Sized>(value: &T) -> Result<Entity> {
    let props = value
        .serialize(TopSerializer)
        .map_err(|e| Error::invalid_input(format!("entity cannot be stored: {e}")))?;
    let mut e = Entity::default();
    let mut pk = None;
    let mut rk = None;
    for (k, v) in props {
        match (k.as_str(), v) {
            ("PartitionKey", EdmValue::String(s)) => pk = Some(s),
            ("RowKey", EdmValue::String(s)) => rk = Some(s),
            ("PartitionKey" | "RowKey", other) => {
                return Err(Error::invalid_input(format!(
                    "{k} must be a string, not {}",
                    other.edm_type()
                )));
            }
            // Set by the service; never sent.
            ("Timestamp", EdmValue::DateTime(t)) => e.timestamp = Some(t),
            ("Timestamp", _) => {}
            (_, v) => {
                e.properties.insert(k, v);
            }
        }
    }
    e.partition_key =
        pk.ok_or_else(|| Error::invalid_input("the entity has no PartitionKey property"))?;
    e.row_key = rk.ok_or_else(|| Error::invalid_input("the entity has no RowKey property"))?;
    Ok(e)
}

/// Converts an [`Entity`] into any deserializable type (a struct with the properties it
/// wants, a map of [`EdmValue`]s, or an [`Entity`]). Errors are decode errors
/// (`ErrorKind::Service`) naming the property.
///
/// ```
/// use azstore::table::{Entity, from_entity};
/// #[derive(serde::Deserialize)]
/// #[serde(rename_all = "PascalCase")]
/// struct Order { row_key: String, items: i32 }
///
/// let entity = Entity::new("2026-11", "A-17").with("Items", 2).with("Note", "gift");
/// let order: Order = from_entity(entity)?; // properties the type does not name are skipped
/// assert_eq!((order.row_key.as_str(), order.items), ("A-17", 2));
/// # Ok::<(), azstore::Error>(())
/// ```
pub fn from_entity<T: de::DeserializeOwned>(entity: Entity) -> Result<T> {
    let mut props: Vec<(String, EdmValue)> = Vec::with_capacity(entity.properties.len() + 3);
    props.push((
        "PartitionKey".into(),
        EdmValue::String(entity.partition_key),
    ));
    props.push(("RowKey".into(), EdmValue::String(entity.row_key)));
    if let Some(t) = entity.timestamp {
        props.push(("Timestamp".into(), EdmValue::DateTime(t)));
    }
    props.extend(entity.properties);
    T::deserialize(EntityDeserializer { props })
        .map_err(|e| Error::decode(format!("entity does not match the type: {}", e.0)))
}

// ---------------------------------------------------------------- Entity's own serde

impl Serialize for Entity {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.properties.len() + 3))?;
        m.serialize_entry("PartitionKey", &self.partition_key)?;
        m.serialize_entry("RowKey", &self.row_key)?;
        if let Some(t) = &self.timestamp {
            m.serialize_entry("Timestamp", t)?;
        }
        for (k, v) in &self.properties {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> de::Deserialize<'de> for Entity {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table entity")
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Entity, A::Error> {
                let mut e = Entity::default();
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "PartitionKey" => e.partition_key = map.next_value()?,
                        "RowKey" => e.row_key = map.next_value()?,
                        "Timestamp" => e.timestamp = Some(map.next_value()?),
                        _ => {
                            let v: EdmValue = map.next_value()?;
                            e.properties.insert(k, v);
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::edm::{DateTime, Guid};
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, PartialEq, serde::Serialize, Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Customer {
        partition_key: String,
        row_key: String,
        email: String,
        visits: i64,
        small: i32,
        score: f64,
        active: bool,
        since: DateTime,
        id: Guid,
        photo: Vec<u8>,
        nick: Option<String>,
        level: Level,
        any: EdmValue,
    }

    #[derive(Debug, PartialEq, serde::Serialize, Deserialize)]
    enum Level {
        Gold,
        Silver,
    }

    fn customer() -> Customer {
        Customer {
            partition_key: "p".into(),
            row_key: "r".into(),
            email: "a@b".into(),
            visits: i64::MAX,
            small: -3,
            score: 2.0,
            active: true,
            since: DateTime::parse("2026-01-02T03:04:05.1234567Z").unwrap(),
            id: Guid(uuid::Uuid::from_u128(7)),
            photo: vec![0, 1, 255],
            nick: None,
            level: Level::Gold,
            any: EdmValue::Int64(5),
        }
    }

    #[test]
    fn struct_maps_to_exact_edm_types_and_back() {
        let c = customer();
        let e = to_entity(&c).unwrap();
        assert_eq!(e.partition_key, "p");
        assert_eq!(e.get("Visits"), Some(&EdmValue::Int64(i64::MAX)));
        assert_eq!(e.get("Small"), Some(&EdmValue::Int32(-3)));
        assert_eq!(e.get("Score"), Some(&EdmValue::Double(2.0)));
        assert_eq!(e.get("Id").map(EdmValue::edm_type), Some("Edm.Guid"));
        assert_eq!(e.get("Since").map(EdmValue::edm_type), Some("Edm.DateTime"));
        assert_eq!(e.get("Photo"), Some(&EdmValue::Binary(vec![0, 1, 255])));
        assert_eq!(e.get("Level"), Some(&EdmValue::String("Gold".into())));
        assert_eq!(e.get("Any"), Some(&EdmValue::Int64(5)));
        assert!(e.get("Nick").is_none());
        let back: Customer = from_entity(e.clone()).unwrap();
        assert_eq!(back, c);
        let dynamic: Entity = from_entity(e.clone()).unwrap();
        assert_eq!(dynamic, e);
        assert_eq!(to_entity(&dynamic).unwrap(), e);
    }

    #[test]
    fn refuses_what_a_table_cannot_store() {
        #[derive(serde::Serialize)]
        struct Nested {
            #[serde(rename = "PartitionKey")]
            pk: String,
            #[serde(rename = "RowKey")]
            rk: String,
            inner: Vec<String>,
        }
        let e = to_entity(&Nested {
            pk: "p".into(),
            rk: "r".into(),
            inner: vec!["x".into()],
        })
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
        assert!(e.message().contains("inner"), "{e}");
        let e = to_entity(&BTreeMap::from([("RowKey", "r")])).unwrap_err();
        assert!(e.message().contains("PartitionKey"), "{e}");
        assert!(to_entity(&5).is_err());
    }
}
