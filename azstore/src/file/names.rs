//! Share, directory and file name rules, checked before any request is sent
//! (<https://learn.microsoft.com/rest/api/storageservices/naming-and-referencing-shares--directories--files--and-metadata>).

use crate::error::{Error, Result};

/// Longest directory or file name (one path component), in characters.
pub const MAX_NAME_CHARS: usize = 255;
/// Longest path below the share, in characters.
pub const MAX_PATH_CHARS: usize = 2048;
/// Most directory levels in a path.
pub const MAX_DEPTH: usize = 250;

/// Checks a share name: 3–63 characters, lowercase letters, digits and single hyphens,
/// starting and ending with a letter or digit (the container-name rules).
///
/// ```
/// use azstore::file::validate_share_name;
/// assert!(validate_share_name("reports-2026").is_ok());
/// assert!(validate_share_name("Reports").is_err());
/// ```
pub fn validate_share_name(name: &str) -> Result<()> {
    crate::names::validate_dns_name("share", name)
}

/// Checks one directory or file name: 1–255 characters; none of `" \ / : | < > * ?` or
/// control characters; not `.` or `..`; not ending with `.` (the service would strip it).
///
/// ```
/// use azstore::file::validate_name;
/// assert!(validate_name("report 2026 (final).txt").is_ok());
/// assert!(validate_name("a:b").is_err());
/// ```
pub fn validate_name(name: &str) -> Result<()> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(Error::invalid_input(format!(
            "file and directory names must be 1-{MAX_NAME_CHARS} characters (got {chars})"
        )));
    }
    if let Some(c) = name.chars().find(|c| {
        matches!(c, '"' | '\\' | '/' | ':' | '|' | '<' | '>' | '*' | '?') || c.is_control()
    }) {
        return Err(Error::invalid_input(format!(
            "file and directory names must not contain {c:?} (nor any of \" \\ / : | < > * ? or control characters)"
        )));
    }
    if name == "." || name == ".." || name.ends_with('.') {
        return Err(Error::invalid_input(
            "file and directory names must not be `.`/`..` or end with `.`",
        ));
    }
    Ok(())
}

/// Checks a path below the share (`dir/sub/file.txt`, `/`-separated): every component is a
/// valid name, at most 2048 characters and 250 levels. The empty path is the root directory.
///
/// ```
/// use azstore::file::validate_path;
/// assert!(validate_path("reports/2026/q4.pdf").is_ok());
/// assert!(validate_path("").is_ok()); // the root
/// assert!(validate_path("a/b?c").is_err());
/// ```
pub fn validate_path(path: &str) -> Result<()> {
    if path.is_empty() {
        return Ok(());
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return Err(Error::invalid_input(format!(
            "file paths must be at most {MAX_PATH_CHARS} characters"
        )));
    }
    let mut depth = 0;
    for part in path.split('/') {
        validate_name(part)?;
        depth += 1;
    }
    if depth > MAX_DEPTH + 1 {
        return Err(Error::invalid_input(format!(
            "file paths must be at most {MAX_DEPTH} directories deep"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The full list of cases is in `crate::names`; shares have no special names.
    #[test]
    fn shares() {
        assert!(validate_share_name("a-b-c").is_ok());
        for bad in ["a--b", "$root"] {
            assert!(validate_share_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths() {
        assert!(validate_path("").is_ok());
        assert!(validate_path("a/b c/d.txt").is_ok());
        assert!(validate_path("ü/名前").is_ok());
        for bad in [
            "a//b", "/a", "a/", "a/./b", "a/../b", "a*b", "a\u{1}", "a.", "x/y?",
        ] {
            assert!(validate_path(bad).is_err(), "{bad}");
        }
        assert!(validate_name(&"a".repeat(255)).is_ok());
        assert!(validate_name(&"a".repeat(256)).is_err());
        assert!(validate_path(&vec!["a"; 252].join("/")).is_err());
        assert!(validate_path(&vec!["a"; 251].join("/")).is_ok());
    }
}
