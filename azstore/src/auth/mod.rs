//! Request authorization: SharedKey strings-to-sign and SAS generation. Pure functions, no I/O.

pub mod sas;
pub mod shared_key;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// HMAC-SHA256 keyed once with an account key.
#[derive(Clone)]
pub(crate) struct KeyedMac(Hmac<Sha256>);

impl KeyedMac {
    pub(crate) fn new(key: &[u8]) -> KeyedMac {
        KeyedMac(Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length"))
    }

    /// HMAC-SHA256 of `data`, base64 encoded.
    pub(crate) fn sign_base64(&self, data: &[u8]) -> String {
        use base64::Engine;
        let mut mac = self.0.clone();
        mac.update(data);
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    }
}
