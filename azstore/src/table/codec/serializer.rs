//! Serializing: a struct or map into named [`EdmValue`] properties.

use std::collections::BTreeMap;
use std::convert::identity;

use serde::ser::{self, Impossible, Serialize};

use super::{CodecError, R, err};
use crate::table::edm::{DATETIME, DateTime, EDM_VALUE, EdmValue, GUID, Guid};

/// `Serializer` methods that refuse their value with `$fail(what)`, grouped by `what`:
/// `refuse! { fail; "a bool": serialize_bool(bool) -> Ok; ... }`.
macro_rules! refuse {
    ($fail:ident; $($what:literal: $($method:ident($($arg:ty),*) -> $out:ident),+;)*) => {
        $($(fn $method(self, $(_: $arg),*) -> R<Self::$out> {
            $fail($what)
        })+)*
    };
}

/// `Serializer` methods that store a scalar as one EDM type:
/// `store! { serialize_i8(i8) => Int32(i32::from), ... }`.
macro_rules! store {
    ($($method:ident($ty:ty) => $variant:ident($conv:path)),* $(,)?) => {
        $(fn $method(self, v: $ty) -> R<Self::Ok> {
            Ok(Some(EdmValue::$variant($conv(v))))
        })*
    };
}

/// The compound forms no entity and no property takes: tuples and enum variants with data.
macro_rules! refuse_compounds {
    ($fail:ident) => {
        refuse! { $fail;
            "a tuple": serialize_tuple(usize) -> SerializeTuple;
            "a tuple struct": serialize_tuple_struct(&'static str, usize) -> SerializeTupleStruct;
            "an enum variant with data":
                serialize_tuple_variant(&'static str, u32, &'static str, usize) -> SerializeTupleVariant,
                serialize_struct_variant(&'static str, u32, &'static str, usize) -> SerializeStructVariant;
        }
    };
}

/// Serializes the top level: a struct or map into named properties.
pub(super) struct TopSerializer;

pub(super) struct PropCollector {
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

    refuse! { top_only;
        "a number": serialize_i8(i8) -> Ok, serialize_i16(i16) -> Ok, serialize_i32(i32) -> Ok,
            serialize_i64(i64) -> Ok, serialize_u8(u8) -> Ok, serialize_u16(u16) -> Ok,
            serialize_u32(u32) -> Ok, serialize_u64(u64) -> Ok, serialize_f32(f32) -> Ok,
            serialize_f64(f64) -> Ok;
        "a bool": serialize_bool(bool) -> Ok;
        "a char": serialize_char(char) -> Ok;
        "a string": serialize_str(&str) -> Ok;
        "bytes": serialize_bytes(&[u8]) -> Ok;
        "None": serialize_none() -> Ok;
        "()": serialize_unit() -> Ok;
        "a unit struct": serialize_unit_struct(&'static str) -> Ok;
        "an enum": serialize_unit_variant(&'static str, u32, &'static str) -> Ok;
        "a sequence": serialize_seq(Option<usize>) -> SerializeSeq;
    }
    refuse_compounds!(top_only);
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R<Self::Ok> {
        v.serialize(self)
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
    fn serialize_map(self, _: Option<usize>) -> R<Self::SerializeMap> {
        Ok(PropCollector {
            props: BTreeMap::new(),
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> R<Self::SerializeStruct> {
        self.serialize_map(None)
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

    store! {
        serialize_bool(bool) => Boolean(identity),
        serialize_i8(i8) => Int32(i32::from),
        serialize_i16(i16) => Int32(i32::from),
        serialize_i32(i32) => Int32(identity),
        serialize_i64(i64) => Int64(identity),
        serialize_u8(u8) => Int32(i32::from),
        serialize_u16(u16) => Int32(i32::from),
        serialize_u32(u32) => Int64(i64::from),
    }
    fn serialize_u64(self, v: u64) -> R<Self::Ok> {
        match i64::try_from(v) {
            Ok(v) => Ok(Some(EdmValue::Int64(v))),
            Err(_) => err(format!("{v} does not fit Edm.Int64")),
        }
    }
    store! {
        serialize_f32(f32) => Double(f64::from),
        serialize_f64(f64) => Double(identity),
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
    refuse! { not_scalar;
        "a map": serialize_map(Option<usize>) -> SerializeMap;
        "a nested struct": serialize_struct(&'static str, usize) -> SerializeStruct;
    }
    refuse_compounds!(not_scalar);
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
