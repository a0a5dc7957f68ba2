//! Blob index tags: the type, its limits and the conditions tag operations accept.

use std::collections::BTreeMap;

use crate::conditions::Allowed;
use crate::error::{Error, Result};

/// Blob index tags: at most 10 pairs, keys 1–128 and values 0–256 characters.
///
/// ```
/// use azstore::blob::Tags;
/// let tags = Tags::from([("project".to_string(), "apollo".to_string())]);
/// assert_eq!(tags.len(), 1);
/// ```
pub type Tags = BTreeMap<String, String>;

/// Tags accept only `x-ms-if-tags` and a lease id.
pub(crate) const TAGS_ONLY: Allowed = Allowed {
    etag: false,
    dates: false,
    if_modified_since_only: false,
    tags: true,
    lease: true,
};

pub(crate) fn validate_tags(tags: &Tags) -> Result<()> {
    if tags.len() > 10 {
        return Err(Error::invalid_input(
            "a blob can have at most 10 index tags",
        ));
    }
    let ok_char = |c: char| c.is_ascii_alphanumeric() || " +-.:=_/".contains(c);
    for (k, v) in tags {
        if k.is_empty() || k.chars().count() > 128 || v.chars().count() > 256 {
            return Err(Error::invalid_input(
                "tag keys must be 1-128 and values 0-256 characters",
            ));
        }
        if !k.chars().all(ok_char) || !v.chars().all(ok_char) {
            return Err(Error::invalid_input(format!(
                "tag {k:?} has characters outside letters, digits, space and + - . : = _ /"
            )));
        }
    }
    Ok(())
}
