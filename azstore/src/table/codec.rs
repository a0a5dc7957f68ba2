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
//! | [`DateTime`] | `Edm.DateTime` |
//! | [`Guid`] | `Edm.Guid` |
//! | `Vec<u8>` (and serde bytes) | `Edm.Binary` |
//! | [`EdmValue`] | its own type |
//! | `Option::None`, `()` | property omitted |
//!
//! Nested structs, maps and non-byte sequences are refused with `InvalidInput` (a table
//! property is a scalar). Reading is lenient where no information is lost: an `Edm.Int32`
//! property reads into an `i64` or `f64` field; unknown properties are ignored unless the
//! struct says `#[serde(deny_unknown_fields)]`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::ser::{self, Impossible, Serialize};

use super::edm::{DATETIME, DateTime, EDM_VALUE, EdmValue, Entity, GUID, Guid};
use crate::error::{Error, Result};

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

// ---------------------------------------------------------------- serializer

/// Serializes the top level: a struct or map into named properties.
struct TopSerializer;

struct PropCollector {
    props: BTreeMap<String, EdmValue>,
    key: Option<String>,
}

impl PropCollector {
    fn push(&mut self, key: String, value: Option<EdmValue>) -> R<()> {
        if let Some(v) = value {
            if self.props.insert(key.clone(), v).is_some() {
                return err(format!("property {key} appears twice"));
            }
        }
        Ok(())
    }
}

fn top_only<T>(what: &str) -> R<T> {
    err(format!(
        "an entity must be a struct or a map of properties, not {what}"
    ))
}

impl ser::Serializer for TopSerializer {
    type Ok = BTreeMap<String, EdmValue>;
    type Error = CodecError;
    type SerializeSeq = Impossible<Self::Ok, CodecError>;
    type SerializeTuple = Impossible<Self::Ok, CodecError>;
    type SerializeTupleStruct = Impossible<Self::Ok, CodecError>;
    type SerializeTupleVariant = Impossible<Self::Ok, CodecError>;
    type SerializeMap = PropCollector;
    type SerializeStruct = PropCollector;
    type SerializeStructVariant = Impossible<Self::Ok, CodecError>;

    fn serialize_bool(self, _: bool) -> R<Self::Ok> {
        top_only("a bool")
    }
    fn serialize_i8(self, _: i8) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_i16(self, _: i16) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_i32(self, _: i32) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_i64(self, _: i64) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_u8(self, _: u8) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_u16(self, _: u16) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_u32(self, _: u32) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_u64(self, _: u64) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_f32(self, _: f32) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_f64(self, _: f64) -> R<Self::Ok> {
        top_only("a number")
    }
    fn serialize_char(self, _: char) -> R<Self::Ok> {
        top_only("a char")
    }
    fn serialize_str(self, _: &str) -> R<Self::Ok> {
        top_only("a string")
    }
    fn serialize_bytes(self, _: &[u8]) -> R<Self::Ok> {
        top_only("bytes")
    }
    fn serialize_none(self) -> R<Self::Ok> {
        top_only("None")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R<Self::Ok> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R<Self::Ok> {
        top_only("()")
    }
    fn serialize_unit_struct(self, _: &'static str) -> R<Self::Ok> {
        top_only("a unit struct")
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R<Self::Ok> {
        top_only("an enum")
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> R<Self::Ok> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> R<Self::Ok> {
        top_only("an enum")
    }
    fn serialize_seq(self, _: Option<usize>) -> R<Self::SerializeSeq> {
        top_only("a sequence")
    }
    fn serialize_tuple(self, _: usize) -> R<Self::SerializeTuple> {
        top_only("a tuple")
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> R<Self::SerializeTupleStruct> {
        top_only("a tuple struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> R<Self::SerializeTupleVariant> {
        top_only("an enum")
    }
    fn serialize_map(self, _: Option<usize>) -> R<Self::SerializeMap> {
        Ok(PropCollector {
            props: BTreeMap::new(),
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> R<Self::SerializeStruct> {
        self.serialize_map(None)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> R<Self::SerializeStructVariant> {
        top_only("an enum")
    }
}

impl ser::SerializeStruct for PropCollector {
    type Ok = BTreeMap<String, EdmValue>;
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> R<()> {
        let value = v
            .serialize(ValueSerializer)
            .map_err(|e| CodecError(format!("property {key}: {}", e.0)))?;
        self.push(key.to_string(), value)
    }
    fn end(self) -> R<Self::Ok> {
        Ok(self.props)
    }
}

impl ser::SerializeMap for PropCollector {
    type Ok = BTreeMap<String, EdmValue>;
    type Error = CodecError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R<()> {
        match key.serialize(ValueSerializer)? {
            Some(EdmValue::String(s)) => {
                self.key = Some(s);
                Ok(())
            }
            _ => err("property names must be strings"),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R<()> {
        let key = self
            .key
            .take()
            .ok_or_else(|| CodecError("map value without a key".into()))?;
        let value = v
            .serialize(ValueSerializer)
            .map_err(|e| CodecError(format!("property {key}: {}", e.0)))?;
        self.push(key, value)
    }
    fn end(self) -> R<Self::Ok> {
        Ok(self.props)
    }
}

/// Serializes one property value; `None` means "omit the property".
struct ValueSerializer;

fn not_scalar<T>(what: &str) -> R<T> {
    err(format!(
        "{what} cannot be a table property (properties are scalars)"
    ))
}

impl ser::Serializer for ValueSerializer {
    type Ok = Option<EdmValue>;
    type Error = CodecError;
    type SerializeSeq = BytesCollector;
    type SerializeTuple = Impossible<Self::Ok, CodecError>;
    type SerializeTupleStruct = Impossible<Self::Ok, CodecError>;
    type SerializeTupleVariant = Impossible<Self::Ok, CodecError>;
    type SerializeMap = Impossible<Self::Ok, CodecError>;
    type SerializeStruct = Impossible<Self::Ok, CodecError>;
    type SerializeStructVariant = Impossible<Self::Ok, CodecError>;

    fn serialize_bool(self, v: bool) -> R<Self::Ok> {
        Ok(Some(EdmValue::Boolean(v)))
    }
    fn serialize_i8(self, v: i8) -> R<Self::Ok> {
        Ok(Some(EdmValue::Int32(v.into())))
    }
    fn serialize_i16(self, v: i16) -> R<Self::Ok> {
        Ok(Some(EdmValue::Int32(v.into())))
    }
    fn serialize_i32(self, v: i32) -> R<Self::Ok> {
        Ok(Some(EdmValue::Int32(v)))
    }
    fn serialize_i64(self, v: i64) -> R<Self::Ok> {
        Ok(Some(EdmValue::Int64(v)))
    }
    fn serialize_u8(self, v: u8) -> R<Self::Ok> {
        Ok(Some(EdmValue::Int32(v.into())))
    }
    fn serialize_u16(self, v: u16) -> R<Self::Ok> {
        Ok(Some(EdmValue::Int32(v.into())))
    }
    fn serialize_u32(self, v: u32) -> R<Self::Ok> {
        Ok(Some(EdmValue::Int64(v.into())))
    }
    fn serialize_u64(self, v: u64) -> R<Self::Ok> {
        match i64::try_from(v) {
            Ok(v) => Ok(Some(EdmValue::Int64(v))),
            Err(_) => err(format!("{v} does not fit Edm.Int64")),
        }
    }
    fn serialize_f32(self, v: f32) -> R<Self::Ok> {
        Ok(Some(EdmValue::Double(v.into())))
    }
    fn serialize_f64(self, v: f64) -> R<Self::Ok> {
        Ok(Some(EdmValue::Double(v)))
    }
    fn serialize_char(self, v: char) -> R<Self::Ok> {
        Ok(Some(EdmValue::String(v.to_string())))
    }
    fn serialize_str(self, v: &str) -> R<Self::Ok> {
        Ok(Some(EdmValue::String(v.to_string())))
    }
    fn serialize_bytes(self, v: &[u8]) -> R<Self::Ok> {
        Ok(Some(EdmValue::Binary(v.to_vec())))
    }
    fn serialize_none(self) -> R<Self::Ok> {
        Ok(None)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R<Self::Ok> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R<Self::Ok> {
        Ok(None)
    }
    fn serialize_unit_struct(self, _: &'static str) -> R<Self::Ok> {
        Ok(None)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R<Self::Ok> {
        Ok(Some(EdmValue::String(variant.to_string())))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> R<Self::Ok> {
        let inner = v.serialize(self)?;
        match (name, inner) {
            (DATETIME, Some(EdmValue::String(s))) => DateTime::parse(&s)
                .map(|t| Some(EdmValue::DateTime(t)))
                .ok_or_else(|| CodecError(format!("bad timestamp {s:?}"))),
            (GUID, Some(EdmValue::String(s))) => uuid::Uuid::parse_str(&s)
                .map(|g| Some(EdmValue::Guid(Guid(g))))
                .map_err(|_| CodecError(format!("bad GUID {s:?}"))),
            (_, inner) => Ok(inner),
        }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> R<Self::Ok> {
        if name != EDM_VALUE {
            return not_scalar(&format!("enum variant {variant} with data"));
        }
        let inner = v.serialize(ValueSerializer)?;
        // `EdmValue::Binary(vec![])` serializes as an empty sequence: keep it binary.
        Ok(inner.or_else(|| (variant == "Binary").then(|| EdmValue::Binary(Vec::new()))))
    }
    fn serialize_seq(self, _: Option<usize>) -> R<Self::SerializeSeq> {
        Ok(BytesCollector(Vec::new()))
    }
    fn serialize_tuple(self, _: usize) -> R<Self::SerializeTuple> {
        not_scalar("a tuple")
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> R<Self::SerializeTupleStruct> {
        not_scalar("a tuple struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> R<Self::SerializeTupleVariant> {
        not_scalar("an enum variant with data")
    }
    fn serialize_map(self, _: Option<usize>) -> R<Self::SerializeMap> {
        not_scalar("a map")
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> R<Self::SerializeStruct> {
        not_scalar("a nested struct")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> R<Self::SerializeStructVariant> {
        not_scalar("an enum variant with data")
    }
}

/// A sequence property: only sequences of bytes (`Vec<u8>`) are allowed, as `Edm.Binary`.
struct BytesCollector(Vec<u8>);

impl ser::SerializeSeq for BytesCollector {
    type Ok = Option<EdmValue>;
    type Error = CodecError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> R<()> {
        match v.serialize(ValueSerializer)? {
            Some(EdmValue::Int32(b)) if (0..=255).contains(&b) => {
                self.0.push(b as u8);
                Ok(())
            }
            _ => not_scalar("a sequence other than bytes"),
        }
    }
    fn end(self) -> R<Self::Ok> {
        Ok(Some(EdmValue::Binary(self.0)))
    }
}

// ---------------------------------------------------------------- deserializer

struct EntityDeserializer {
    props: Vec<(String, EdmValue)>,
}

impl<'de> de::Deserializer<'de> for EntityDeserializer {
    type Error = CodecError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        visitor.visit_map(PropsAccess {
            iter: self.props.into_iter(),
            value: None,
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> R<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct PropsAccess {
    iter: std::vec::IntoIter<(String, EdmValue)>,
    value: Option<(String, EdmValue)>,
}

impl<'de> de::MapAccess<'de> for PropsAccess {
    type Error = CodecError;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> R<Option<K::Value>> {
        match self.iter.next() {
            None => Ok(None),
            Some((k, v)) => {
                let key = seed.deserialize(k.as_str().into_deserializer())?;
                self.value = Some((k, v));
                Ok(Some(key))
            }
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> R<V::Value> {
        let (k, v) = self
            .value
            .take()
            .ok_or_else(|| CodecError("value without key".into()))?;
        seed.deserialize(ValueDeserializer(v))
            .map_err(|e| CodecError(format!("property {k}: {}", e.0)))
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct ValueDeserializer(EdmValue);

impl<'de> de::Deserializer<'de> for ValueDeserializer {
    type Error = CodecError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.0 {
            EdmValue::String(s) => visitor.visit_string(s),
            EdmValue::Int32(v) => visitor.visit_i32(v),
            EdmValue::Int64(v) => visitor.visit_i64(v),
            EdmValue::Double(v) => visitor.visit_f64(v),
            EdmValue::Boolean(v) => visitor.visit_bool(v),
            EdmValue::DateTime(t) => visitor.visit_string(t.to_string()),
            EdmValue::Guid(g) => visitor.visit_string(g.to_string()),
            EdmValue::Binary(b) => visitor.visit_byte_buf(b),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        match self.0 {
            EdmValue::Binary(b) => visitor.visit_seq(
                de::value::SeqDeserializer::<_, CodecError>::new(b.into_iter()),
            ),
            other => ValueDeserializer(other).deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> R<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> R<V::Value> {
        if name == EDM_VALUE {
            return visitor.visit_enum(ExactValue(self.0));
        }
        match self.0 {
            EdmValue::String(s) => visitor.visit_enum(s.into_deserializer()),
            other => err(format!(
                "expected a string for enum {name}, found {}",
                other.edm_type()
            )),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// Hands an [`EdmValue`] to its own `Deserialize` impl with the exact type as variant.
struct ExactValue(EdmValue);

impl<'de> de::EnumAccess<'de> for ExactValue {
    type Error = CodecError;
    type Variant = ValueDeserializer;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> R<(V::Value, ValueDeserializer)> {
        let name = match &self.0 {
            EdmValue::String(_) => "String",
            EdmValue::Int32(_) => "Int32",
            EdmValue::Int64(_) => "Int64",
            EdmValue::Double(_) => "Double",
            EdmValue::Boolean(_) => "Boolean",
            EdmValue::DateTime(_) => "DateTime",
            EdmValue::Guid(_) => "Guid",
            EdmValue::Binary(_) => "Binary",
        };
        let v = seed.deserialize(name.into_deserializer())?;
        Ok((v, ValueDeserializer(self.0)))
    }
}

impl<'de> de::VariantAccess<'de> for ValueDeserializer {
    type Error = CodecError;
    fn unit_variant(self) -> R<()> {
        err("unexpected unit variant")
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> R<T::Value> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> R<V::Value> {
        err("unexpected tuple variant")
    }
    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], _: V) -> R<V::Value> {
        err("unexpected struct variant")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

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
