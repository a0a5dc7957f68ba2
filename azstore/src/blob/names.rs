//! Name rules, checked before any request is sent.

use crate::error::{Error, Result};

/// Checks a container name: 3–63 characters, lowercase letters, digits and hyphens, starting
/// with a letter or digit, no two hyphens in a row, not ending with a hyphen (`$root`, `$logs`
/// and `$web` are also accepted).
///
/// ```
/// use azstore::blob::validate_container_name;
/// assert!(validate_container_name("reports-2026").is_ok());
/// assert!(validate_container_name("Reports").is_err());
/// assert!(validate_container_name("a--b").is_err());
/// ```
pub fn validate_container_name(name: &str) -> Result<()> {
    if matches!(name, "$root" | "$logs" | "$web") {
        return Ok(());
    }
    crate::names::validate_dns_name("container", name)
}

/// Checks a blob name: 1–1024 characters, no control characters other than tab, not ending
/// with `.` or `/`, no `.` or `..` segment (`/` or `\\` separated).
///
/// The last rule is azstore's, after Azure's naming guide ("avoid blob names that end with a
/// dot or a forward slash"): the service itself stores such names (live Azure answered 201 to
/// `.a.a.` and `/a/a/` in `test_common_blob.test_create_blob_with_special_chars`), but tools
/// and file systems mishandle them.
///
/// A `..` segment would leave the container: URLs resolve it, so
/// `container("uploads").blob("../secrets/config.json")` would name `secrets/config.json`.
/// Names that merely contain dots (`a..b`, `.env`, `v1.2/..x`) are fine.
///
/// ```
/// use azstore::blob::validate_blob_name;
/// assert!(validate_blob_name("2026/11/report.pdf").is_ok());
/// assert!(validate_blob_name("").is_err());
/// assert!(validate_blob_name("../secrets/config.json").is_err());
/// assert!(validate_blob_name("a/./b").is_err());
/// assert!(validate_blob_name(".env").is_ok());
/// ```
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
    crate::names::refuse_dot_segments("blob name", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The full list of cases is in `crate::names`; this checks containers use that rule
    // plus the three special names.
    #[test]
    fn container_names() {
        for ok in ["a-b-c", "$root", "$logs", "$web"] {
            assert!(validate_container_name(ok).is_ok(), "{ok}");
        }
        for bad in ["a--b", "$other"] {
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
        for escape in ["../other/x", "a/../../b", "./a", "a/./b", "..\\x", ".."] {
            assert!(validate_blob_name(escape).is_err(), "{escape}");
        }
    }
}
