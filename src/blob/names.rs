//! Name rules, checked before any request is sent.

use crate::error::{Error, Result};

/// Checks a container name: 3–63 characters, lowercase letters, digits and hyphens, starting
/// with a letter or digit, no two hyphens in a row, not ending with a hyphen (`$root`, `$logs`
/// and `$web` are also accepted).
pub fn validate_container_name(name: &str) -> Result<()> {
    if matches!(name, "$root" | "$logs" | "$web") {
        return Ok(());
    }
    let bytes = name.as_bytes();
    let ok = (3..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "invalid container name {name:?}: 3-63 lowercase letters, digits or single hyphens, \
             starting and ending with a letter or digit"
        )))
    }
}

/// Checks a blob name: 1–1024 characters, no control characters other than tab, not ending
/// with `.` or `/`.
pub fn validate_blob_name(name: &str) -> Result<()> {
    let chars = name.chars().count();
    if chars == 0 || chars > 1024 {
        return Err(Error::invalid_input(format!(
            "blob name must be 1-1024 characters (got {chars})"
        )));
    }
    if name.chars().any(|c| c.is_control() && c != '\t') {
        return Err(Error::invalid_input(
            "blob name contains control characters",
        ));
    }
    if name.ends_with('.') || name.ends_with('/') {
        return Err(Error::invalid_input(
            "blob name must not end with '.' or '/'",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names() {
        for ok in ["abc", "a-b-c", "0ab", &"a".repeat(63), "$root"] {
            assert!(validate_container_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ab",
            "Abc",
            "a--b",
            "-ab",
            "ab-",
            "a_b",
            &"a".repeat(64),
            "a b",
        ] {
            assert!(validate_container_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn blob_names() {
        assert!(validate_blob_name("dir/a b#c?d%e ü").is_ok());
        assert!(validate_blob_name("").is_err());
        assert!(validate_blob_name("x/").is_err());
        assert!(validate_blob_name(&"a".repeat(1025)).is_err());
        assert!(validate_blob_name("a\nb").is_err());
    }
}
