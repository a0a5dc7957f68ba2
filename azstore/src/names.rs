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

/// Refuses a caller value that holds a `.` or `..` path segment (segments separated by `/` or
/// `\\`): a URL resolves such a segment against the ones before it, so `"../other/x"` below a
/// container would name a resource in another container. `kind` names the value in the error
/// ("blob name", "message id", ...).
pub(crate) fn refuse_dot_segments(kind: &str, value: &str) -> Result<()> {
    if value
        .split(['/', '\\'])
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(Error::invalid_input(format!(
            "{kind} {} has a `.` or `..` path segment: in a URL it would name another \
             resource (e.g. one in another container), so it is refused",
            crate::redact::quoted(value, 256)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_are_refused_wherever_they_are() {
        for bad in [
            ".", "..", "../x", "a/../b", "a/./b", "a/..", "..\\x", "a\\.\\b", "a/..",
        ] {
            let e = refuse_dot_segments("blob name", bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{bad}");
            assert!(e.message().contains("blob name"), "{e}");
        }
        for ok in [
            "a..b",
            "..a",
            "a..",
            ".hidden/x",
            "x/.y",
            "...",
            "a/.../b",
            "%2e%2e",
        ] {
            assert!(refuse_dot_segments("blob name", ok).is_ok(), "{ok}");
        }
    }

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

/// The most bytes of metadata (names and values together) Azure Storage accepts on one
/// blob, container, share, file, directory or queue.
pub(crate) const METADATA_MAX_BYTES: usize = 8 * 1024;

/// Checks metadata: at most 8 KiB of names and values together (what the service accepts);
/// each name a valid C# identifier (ASCII letters, digits and `_`, not starting with a
/// digit), unique ignoring case; values printable ASCII.
///
/// ```
/// use std::collections::BTreeMap;
/// use azstore::blob::validate_metadata;
/// let ok = BTreeMap::from([("owner".to_string(), "a".to_string())]);
/// assert!(validate_metadata(&ok).is_ok());
/// let bad = BTreeMap::from([("not-an-identifier".to_string(), "a".to_string())]);
/// assert!(validate_metadata(&bad).is_err());
/// let huge = BTreeMap::from([("blob".to_string(), "x".repeat(1 << 20))]);
/// assert!(validate_metadata(&huge).is_err()); // 1 MiB: refused before sending
/// ```
pub fn validate_metadata(meta: &std::collections::BTreeMap<String, String>) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    let size: usize = meta.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > METADATA_MAX_BYTES {
        return Err(Error::invalid_input(format!(
            "metadata is {size} bytes (names and values together); the service allows at most \
             {METADATA_MAX_BYTES} (8 KiB): keep larger data in the object itself"
        )));
    }
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
