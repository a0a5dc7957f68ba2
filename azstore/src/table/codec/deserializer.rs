//! Deserializing: an entity's properties into any `Deserialize` type.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::{CodecError, R, err};
use crate::table::edm::{EDM_VALUE, EdmValue};

/// `deserialize_newtype_struct` that hands the visitor the deserializer itself, so wrapper
/// types ([`DateTime`](crate::table::DateTime), ...) read the value inside.
macro_rules! see_through_newtypes {
    () => {
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            visitor: V,
        ) -> R<V::Value> {
            visitor.visit_newtype_struct(self)
        }
    };
}

pub(super) struct EntityDeserializer {
    pub(super) props: Vec<(String, EdmValue)>,
}

impl<'de> de::Deserializer<'de> for EntityDeserializer {
    type Error = CodecError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> R<V::Value> {
        visitor.visit_map(PropsAccess {
            iter: self.props.into_iter(),
            value: None,
        })
    }

    see_through_newtypes!();

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

    see_through_newtypes!();

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
