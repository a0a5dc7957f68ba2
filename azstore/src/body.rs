//! [`IntoBody`]: what a request body can be made of.

use bytes::Bytes;

/// Anything azstore accepts as the body of a write: owned bytes are moved in without a copy;
/// borrowed ones (`&str`, `&[u8]`, `&String`, `&Vec<u8>`, `&Bytes`, byte-string literals) are
/// copied once, so a body may borrow from a local for the length of the call.
///
/// Every form compiles where a body is taken:
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let s = String::from("a local string");
/// let v: Vec<u8> = vec![1, 2, 3];
/// let none = Conditions::none();
/// blob.upload(s.as_str(), &none).await?; // &str borrowed from a local
/// blob.upload(&s, &none).await?; // &String
/// blob.upload(&v[..], &none).await?; // &[u8]
/// blob.upload(&v, &none).await?; // &Vec<u8>
/// blob.upload(b"bytes", &none).await?; // a byte-string literal
/// blob.upload(s, &none).await?; // String (moved, not copied)
/// blob.upload(v, &none).await?; // Vec<u8> (moved)
/// blob.upload(bytes::Bytes::from_static(b"static"), &none).await?; // Bytes
/// # Ok(()) }
/// ```
pub trait IntoBody {
    /// The body as [`Bytes`].
    fn into_body(self) -> Bytes;
}

impl IntoBody for Bytes {
    fn into_body(self) -> Bytes {
        self
    }
}

impl IntoBody for &Bytes {
    fn into_body(self) -> Bytes {
        self.clone()
    }
}

impl IntoBody for Vec<u8> {
    fn into_body(self) -> Bytes {
        Bytes::from(self)
    }
}

impl IntoBody for String {
    fn into_body(self) -> Bytes {
        Bytes::from(self)
    }
}

impl IntoBody for Box<[u8]> {
    fn into_body(self) -> Bytes {
        Bytes::from(self)
    }
}

impl IntoBody for &str {
    fn into_body(self) -> Bytes {
        Bytes::copy_from_slice(self.as_bytes())
    }
}

impl IntoBody for &String {
    fn into_body(self) -> Bytes {
        Bytes::copy_from_slice(self.as_bytes())
    }
}

impl IntoBody for &[u8] {
    fn into_body(self) -> Bytes {
        Bytes::copy_from_slice(self)
    }
}

impl IntoBody for &Vec<u8> {
    fn into_body(self) -> Bytes {
        Bytes::copy_from_slice(self)
    }
}

impl<const N: usize> IntoBody for &[u8; N] {
    fn into_body(self) -> Bytes {
        Bytes::copy_from_slice(self)
    }
}

impl<const N: usize> IntoBody for [u8; N] {
    fn into_body(self) -> Bytes {
        Bytes::copy_from_slice(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_gives_the_same_bytes() {
        let s = String::from("abc");
        let v = b"abc".to_vec();
        let want = Bytes::from_static(b"abc");
        assert_eq!(s.as_str().into_body(), want);
        assert_eq!((&s).into_body(), want);
        assert_eq!(v.as_slice().into_body(), want);
        assert_eq!((&v).into_body(), want);
        assert_eq!(b"abc".into_body(), want);
        assert_eq!((*b"abc").into_body(), want);
        assert_eq!((&want).into_body(), want);
        assert_eq!(s.into_body(), want);
        assert_eq!(v.into_body(), want);
    }
}
