//! What a queue worker records when it moves a message to the poison queue: the
//! [`POISON_METADATA`] entry of the poison queue's metadata.

use crate::error::Result;
use crate::queue::client::QueueClient;

/// The poison queue's metadata entry that records the last move to it: the original message
/// id, the id of its copy in the poison queue, the dequeue count, the time and the handler's
/// last error (percent-encoded where not printable ASCII, at most 1 KiB), as
/// `message=<id>; copy=<id>; dequeue_count=<n>; at=<RFC 3339>; error=<text>`.
///
/// The copy itself keeps the message's text unchanged, so any SDK reads it as it was sent; the
/// reason of every move is in the worker's WARN log line.
///
/// ```no_run
/// # async fn demo(poison: azstore::queue::QueueClient) -> azstore::Result<()> {
/// let props = poison.get_properties().await?;
/// if let Some(last) = props.metadata.get(azstore::queue::POISON_METADATA) {
///     println!("last poisoned: {last}");
/// }
/// # Ok(()) }
/// ```
pub const POISON_METADATA: &str = "azstore_poison_last";

/// The value of [`POISON_METADATA`] for one move.
pub(super) fn poison_record(id: &str, copy_id: &str, dequeue_count: u32, reason: &str) -> String {
    use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
    const KEEP_READABLE: &AsciiSet = &CONTROLS.add(b'%').add(b';');
    // Whole characters only, so the value always decodes.
    let mut error = String::new();
    let mut buf = [0u8; 4];
    for c in reason.chars() {
        let encoded = utf8_percent_encode(c.encode_utf8(&mut buf), KEEP_READABLE).to_string();
        if error.len() + encoded.len() > 1024 {
            break;
        }
        error.push_str(&encoded);
    }
    let at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    format!("message={id}; copy={copy_id}; dequeue_count={dequeue_count}; at={at}; error={error}")
}

/// Writes `record` into the poison queue's metadata, keeping its other entries (last writer
/// wins: with several workers, the entry is one of the latest moves).
pub(super) async fn record_poison(poison: &QueueClient, record: String) -> Result<()> {
    let mut metadata = poison.get_properties().await?.metadata;
    metadata.insert(POISON_METADATA.to_string(), record);
    poison.set_metadata(&metadata).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poison_record_is_one_readable_header_value() {
        let r = poison_record("m1", "c1", 5, "line one\nline two; ü 100%");
        assert!(
            r.starts_with("message=m1; copy=c1; dequeue_count=5; at="),
            "{r}"
        );
        assert!(
            r.ends_with("; error=line one%0Aline two%3B %C3%BC 100%25"),
            "{r}"
        );
        assert!(r.bytes().all(|b| (0x20..0x7f).contains(&b)), "{r}");
        let long = poison_record("m", "c", 1, &"ü".repeat(2000));
        let error = long.split("error=").nth(1).unwrap();
        assert!(
            error.len() <= 1024 && error.ends_with("%BC"),
            "{}",
            error.len()
        );
    }
}
