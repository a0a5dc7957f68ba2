//! The naming rule containers, queues and shares share.

use crate::error::{Error, Result};

/// Checks a DNS-style resource name: 3–63 lowercase letters, digits and hyphens, starting and
/// ending with a letter or digit, no two hyphens in a row. `kind` names the resource in the
/// error ("container", "queue", "share").
pub(crate) fn validate_dns_name(kind: &str, name: &str) -> Result<()> {
    let b = name.as_bytes();
    let ok = (3..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first() != Some(&b'-')
        && b.last() != Some(&b'-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "invalid {kind} name {name:?}: 3-63 lowercase letters, digits or single hyphens, \
             starting and ending with a letter or digit"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["abc", "a-b-c", "0ab", &"a".repeat(63), "q1-poison"] {
            assert!(validate_dns_name("queue", ok).is_ok(), "{ok}");
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
            let e = validate_dns_name("share", bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{bad}");
            assert!(e.message().contains("share"), "{e}");
        }
    }
}
