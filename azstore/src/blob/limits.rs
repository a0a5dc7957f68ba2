//! Limits and input checks the blob write modules share (page alignment, sequence numbers,
//! copy-source URLs).

use crate::error::{Error, Result};

/// Page size: page blob sizes, offsets and lengths are multiples of this.
pub const PAGE_SIZE: u64 = 512;
/// Largest page blob sequence number (2^63 - 1).
pub const MAX_SEQUENCE_NUMBER: u64 = i64::MAX as u64;

pub(crate) fn check_aligned(what: &str, v: u64) -> Result<()> {
    if v % PAGE_SIZE != 0 {
        return Err(Error::invalid_input(format!(
            "page blob {what} must be a multiple of 512 bytes (got {v})"
        )));
    }
    Ok(())
}

pub(crate) use crate::storage::copy_source::validate_source_url;
