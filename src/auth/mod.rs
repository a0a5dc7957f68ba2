//! Request authorization: SharedKey strings-to-sign and SAS generation. Pure functions, no I/O.

pub mod sas;
pub mod shared_key;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// HMAC-SHA256 of `data` under `key`, base64 encoded.
pub(crate) fn hmac_sha256_base64(key: &[u8], data: &[u8]) -> String {
    use base64::Engine;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}
