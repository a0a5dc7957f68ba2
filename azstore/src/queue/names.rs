//! Queue name rules, checked before any request is sent.

use crate::error::Result;

/// Checks a queue name: 3–63 characters, lowercase letters, digits and single hyphens,
/// starting and ending with a letter or digit.
///
/// ```
/// use azstore::queue::validate_queue_name;
/// assert!(validate_queue_name("orders-2026").is_ok());
/// assert!(validate_queue_name("Orders").is_err());
/// assert!(validate_queue_name("a--b").is_err());
/// ```
pub fn validate_queue_name(name: &str) -> Result<()> {
    crate::names::validate_dns_name("queue", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names() {
        for ok in ["abc", "a-b-c", "0ab", &"a".repeat(63), "q1-poison"] {
            assert!(validate_queue_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ab",
            "",
            "Abc",
            "a--b",
            "-ab",
            "ab-",
            "a_b",
            &"a".repeat(64),
            "a b",
            "$root",
            "ü-abc",
        ] {
            let e = validate_queue_name(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{bad}");
        }
    }
}
