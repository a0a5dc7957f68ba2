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

    // The full list of cases is in `crate::names`; this checks the queue uses that rule.
    #[test]
    fn queue_names() {
        assert!(validate_queue_name("q1-poison").is_ok());
        let e = validate_queue_name("Q1").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
        assert!(e.message().contains("queue"), "{e}");
    }
}
