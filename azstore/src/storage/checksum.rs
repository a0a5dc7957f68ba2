//! Transactional checksums: what azstore computes for `Content-MD5` and `x-ms-content-crc64`.
//!
//! Azure Storage's CRC-64 is the reflected CRC with polynomial `0x9A6C9329AC4BC9B5`
//! (`0xAD93D23594C93659` in normal notation), initial value and final XOR all ones — the
//! variant catalogued as CRC-64/NVME. On the wire it is the 8 bytes of the value in
//! little-endian order, base64-encoded. The tests check this against values the service
//! itself returned.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};

/// Which transactional checksum azstore computes and sends with a write, or asks the service
/// for on a ranged read. Off by default: TLS already protects data in transit; a checksum adds
/// an end-to-end check (against corrupting proxies or memory) for the CPU cost of hashing.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient, data: bytes::Bytes) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::{Checksum, UploadOptions};
/// let options = UploadOptions::new(Conditions::none()).checksum(Checksum::Crc64);
/// blob.upload_with(data, &options).await?; // every block checked by the service
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checksum {
    /// No checksum.
    #[default]
    None,
    /// MD5 of the body, sent as `Content-MD5`; the service answers 400 `Md5Mismatch` when
    /// the bytes it received differ.
    Md5,
    /// Azure's CRC-64 of the body, sent as `x-ms-content-crc64`; the service answers 400
    /// `Crc64Mismatch` when the bytes it received differ.
    Crc64,
}

impl Checksum {
    /// The request header carrying this checksum of `body`, if any.
    pub(crate) fn header(self, body: &[u8]) -> Option<(&'static str, String)> {
        match self {
            Checksum::None => None,
            Checksum::Md5 => Some(("content-md5", md5_base64(body))),
            Checksum::Crc64 => Some(("x-ms-content-crc64", crc64_base64(body))),
        }
    }

    /// Sets `body` as the request's body, followed by this checksum's header, if any.
    pub(crate) fn body(
        self,
        req: crate::http::Request,
        body: bytes::Bytes,
        content_type: &str,
    ) -> crate::http::Request {
        let header = self.header(&body);
        let req = req.body(body, content_type);
        match header {
            Some((k, v)) => req.header(k, v),
            None => req,
        }
    }
}

/// The base64 MD5 digest of `data`, as sent in `Content-MD5`.
///
/// ```
/// assert_eq!(azstore::blob::md5_base64(b"hello"), "XUFAKrxLKna5cZ2REBfFkg==");
/// ```
pub fn md5_base64(data: &[u8]) -> String {
    STANDARD.encode(Md5::digest(data))
}

/// The base64 CRC-64 of `data`, as sent in `x-ms-content-crc64`.
///
/// ```
/// use azstore::blob::crc64_base64;
/// // The 8 bytes of the CRC (little-endian), base64: 12 characters.
/// assert_eq!(crc64_base64(b"123456789"), "iJh5CoYUi64=");
/// ```
pub fn crc64_base64(data: &[u8]) -> String {
    STANDARD.encode(crc64(data).to_le_bytes())
}

/// Reversed polynomial of Azure Storage's CRC-64.
const POLY: u64 = 0x9A6C_9329_AC4B_C9B5;

/// Slice-by-8 tables: `TABLES[0]` is the classic byte table, `TABLES[k][b]` advances `b`
/// through `k` further zero bytes.
static TABLES: [[u64; 256]; 8] = make_tables();

const fn make_tables() -> [[u64; 256]; 8] {
    let mut t = [[0u64; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 { (c >> 1) ^ POLY } else { c >> 1 };
            bit += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// Azure Storage's CRC-64 of `data` (CRC-64/NVME).
///
/// ```
/// // The CRC-64/NVME check value.
/// assert_eq!(azstore::blob::crc64(b"123456789"), 0xAE8B_1486_0A79_9888);
/// ```
pub fn crc64(data: &[u8]) -> u64 {
    !crc64_update(!0, data)
}

/// Continues a CRC-64 register (pre-inverted) over `data`.
fn crc64_update(mut crc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let v = crc ^ u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        crc = TABLES[7][(v & 0xff) as usize]
            ^ TABLES[6][((v >> 8) & 0xff) as usize]
            ^ TABLES[5][((v >> 16) & 0xff) as usize]
            ^ TABLES[4][((v >> 24) & 0xff) as usize]
            ^ TABLES[3][((v >> 32) & 0xff) as usize]
            ^ TABLES[2][((v >> 40) & 0xff) as usize]
            ^ TABLES[1][((v >> 48) & 0xff) as usize]
            ^ TABLES[0][(v >> 56) as usize];
    }
    for &b in chunks.remainder() {
        crc = TABLES[0][((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values Azure Storage itself returned in `x-ms-content-crc64` / `Content-MD5`, from
    /// recordings of live traffic in the Azure SDK for JavaScript
    /// (sdk/storage/storage-blob/recordings/node/…: `syncuploadfromurl/
    /// recording_stageblockfromurl__destination_bearer_token.js` for "Hello World",
    /// `pageblobclient/recording_verify_pagedasynciterableiterator_for_listpagerangesdiff.js`
    /// for the pages of 'a' and 'b').
    #[test]
    fn crc64_matches_the_service() {
        assert_eq!(crc64_base64(b"Hello World"), "YeJLfssylmU=");
        assert_eq!(md5_base64(b"Hello World"), "sQqNsWTgdUEFt6mb5y4/5Q==");
        assert_eq!(crc64_base64(&[b'a'; 512]), "u661BimQ84c=");
        assert_eq!(crc64_base64(&[b'b'; 1024]), "pK+ypU+jreM=");
    }

    #[test]
    fn crc64_catalogue_check_value_and_every_length() {
        // The catalogue's check value of CRC-64/NVME.
        assert_eq!(crc64(b"123456789"), 0xae8b_1486_0a79_9888);
        assert_eq!(crc64(b""), 0);
        // Slice-by-8 agrees with the bytewise loop at every alignment and length.
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for start in 0..9 {
            for end in start..data.len() {
                let slice = &data[start..end];
                let mut bytewise = !0u64;
                for &b in slice {
                    bytewise = TABLES[0][((bytewise ^ b as u64) & 0xff) as usize] ^ (bytewise >> 8);
                }
                assert_eq!(crc64(slice), !bytewise, "start {start} end {end}");
            }
        }
    }
}
