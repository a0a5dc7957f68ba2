//! The naming rules several services share: DNS-style resource names (containers, queues,
//! shares) and metadata names (blobs, containers, shares, files, directories).

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

/// Checks metadata names: each must be a valid C# identifier (ASCII letters, digits and `_`,
/// not starting with a digit), and names must be unique ignoring case.
///
/// ```
/// use std::collections::BTreeMap;
/// use azstore::blob::validate_metadata;
/// let ok = BTreeMap::from([("owner".to_string(), "a".to_string())]);
/// assert!(validate_metadata(&ok).is_ok());
/// let bad = BTreeMap::from([("not-an-identifier".to_string(), "a".to_string())]);
/// assert!(validate_metadata(&bad).is_err());
/// ```
pub fn validate_metadata(meta: &std::collections::BTreeMap<String, String>) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for (k, v) in meta {
        let b = k.as_bytes();
        let ok = !b.is_empty()
            && !b[0].is_ascii_digit()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
        if !ok {
            return Err(Error::invalid_input(format!(
                "invalid metadata name {k:?}: use ASCII letters, digits and '_', not starting \
                 with a digit"
            )));
        }
        if !seen.insert(k.to_ascii_lowercase()) {
            return Err(Error::invalid_input(format!(
                "metadata name {k:?} appears twice (names are case-insensitive)"
            )));
        }
        if v.chars()
            .any(|c| !c.is_ascii() || (c.is_control() && c != '\t'))
        {
            return Err(Error::invalid_input(format!(
                "metadata value of {k:?} must be printable ASCII (encode other text first)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod metadata_tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn metadata_names() {
        let m = |k: &str| BTreeMap::from([(k.to_string(), "v".to_string())]);
        assert!(validate_metadata(&m("_a1")).is_ok());
        for bad in ["", "1a", "a-b", "a b", "ü"] {
            assert!(validate_metadata(&m(bad)).is_err(), "{bad}");
        }
        let dup = BTreeMap::from([("A".to_string(), "1".into()), ("a".to_string(), "2".into())]);
        assert!(validate_metadata(&dup).is_err());
        let val = BTreeMap::from([("a".to_string(), "é".to_string())]);
        assert!(validate_metadata(&val).is_err());
    }
}
