//! Input checks made before anything is sent: table names, keys, property names, entity size.

use super::edm::Entity;
use crate::error::{Error, Result};

/// Checks a table name: 3–63 characters, ASCII letters and digits, starting with a letter,
/// and not the reserved name `tables`.
///
/// ```
/// use azstore::table::validate_table_name;
/// assert!(validate_table_name("Customers2026").is_ok());
/// assert!(validate_table_name("2fast").is_err());
/// assert!(validate_table_name("my-table").is_err());
/// ```
pub fn validate_table_name(name: &str) -> Result<()> {
    let ok_len = (3..=63).contains(&name.len());
    let ok_chars = name.chars().all(|c| c.is_ascii_alphanumeric());
    let starts = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if !ok_len || !ok_chars || !starts {
        return Err(Error::invalid_input(format!(
            "invalid table name {name:?}: 3-63 ASCII letters and digits, starting with a letter"
        )));
    }
    if name.eq_ignore_ascii_case("tables") {
        return Err(Error::invalid_input("\"tables\" is a reserved table name"));
    }
    Ok(())
}

/// The most bytes (UTF-8) a `PartitionKey` or `RowKey` may have.
pub const MAX_KEY_BYTES: usize = 1024;
/// The most properties an entity may have, including `PartitionKey`, `RowKey` and
/// `Timestamp`.
pub const MAX_PROPERTIES: usize = 255;
/// The most an entity may weigh, as the service counts it.
pub const MAX_ENTITY_BYTES: usize = 1024 * 1024;

/// Checks a `PartitionKey` or `RowKey` value: at most 1 KiB, no `/`, `\`, `#`, `?` and no
/// control characters (U+0000–U+001F, U+007F–U+009F).
///
/// ```
/// use azstore::table::validate_key;
/// assert!(validate_key("RowKey", "customer 42 ü").is_ok());
/// assert!(validate_key("RowKey", "a/b").is_err());
/// ```
pub fn validate_key(which: &str, key: &str) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::invalid_input(format!(
            "{which} is {} bytes; at most {MAX_KEY_BYTES} are allowed",
            key.len()
        )));
    }
    if let Some(c) = key
        .chars()
        .find(|c| matches!(c, '/' | '\\' | '#' | '?') || c.is_control())
    {
        return Err(Error::invalid_input(format!(
            "{which} contains the forbidden character {c:?}"
        )));
    }
    Ok(())
}

/// Checks a property name: 1–255 characters, letters, digits and `_`, not starting with a
/// digit (names must be valid identifiers; this also keeps them safe inside `$filter`).
///
/// ```
/// use azstore::table::validate_property_name;
/// assert!(validate_property_name("Email").is_ok());
/// assert!(validate_property_name("2fa").is_err());
/// assert!(validate_property_name("a b").is_err());
/// ```
pub fn validate_property_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.chars().count() <= 255
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "invalid property name {name:?}: letters, digits and '_', not starting with a digit"
        )))
    }
}

/// Checks keys, property names, the property count and the entity size before a write.
pub(crate) fn validate_entity(e: &Entity) -> Result<()> {
    validate_key("PartitionKey", &e.partition_key)?;
    validate_key("RowKey", &e.row_key)?;
    if e.properties.len() + 3 > MAX_PROPERTIES {
        return Err(Error::invalid_input(format!(
            "the entity has {} properties plus PartitionKey, RowKey and Timestamp; at most \
             {MAX_PROPERTIES} are allowed in all",
            e.properties.len()
        )));
    }
    let utf16 = |s: &str| 2 * s.encode_utf16().count();
    let mut size = 4 + utf16(&e.partition_key) + utf16(&e.row_key);
    for (k, v) in &e.properties {
        validate_property_name(k)?;
        if matches!(k.as_str(), "PartitionKey" | "RowKey" | "Timestamp") {
            return Err(Error::invalid_input(format!(
                "{k} is a system property, not a user property"
            )));
        }
        size += 8 + utf16(k) + v.stored_size();
    }
    if size > MAX_ENTITY_BYTES {
        return Err(Error::invalid_input(format!(
            "the entity is {size} bytes; at most {MAX_ENTITY_BYTES} are allowed"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keys_and_limits() {
        assert!(validate_table_name("abc").is_ok());
        assert!(validate_table_name("ab").is_err());
        assert!(validate_table_name(&"a".repeat(64)).is_err());
        assert!(validate_table_name("Tables").is_err());
        for bad in ["a/b", "a\\b", "a#b", "a?b", "a\u{1}b", "a\u{7f}", "a\u{85}"] {
            assert!(validate_key("RowKey", bad).is_err(), "{bad:?}");
        }
        assert!(validate_key("RowKey", &"x".repeat(1024)).is_ok());
        assert!(validate_key("RowKey", &"x".repeat(1025)).is_err());
        let mut e = Entity::new("p", "r");
        for i in 0..252 {
            e.set(format!("P{i}"), i);
        }
        assert!(validate_entity(&e).is_ok());
        e.set("One", 1);
        assert!(validate_entity(&e).is_err());
        let big = Entity::new("p", "r").with("B", vec![0u8; 1024 * 1024]);
        assert!(validate_entity(&big).is_err());
        assert!(validate_entity(&Entity::new("p", "r").with("odata.x", 1)).is_err());
    }
}
