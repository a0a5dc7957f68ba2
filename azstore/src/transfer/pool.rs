//! Buffers reused from one range or block to the next: a transfer touches the same few
//! buffers again and again instead of fresh pages for every chunk (page faults and zeroing
//! cost as much CPU as the copy itself), and its memory stays at the buffers in use.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// The free buffers of one transfer.
#[derive(Debug)]
pub(crate) struct Pool {
    free: Mutex<Vec<Vec<u8>>>,
    /// Free buffers kept at most (more are released).
    keep: usize,
}

impl Pool {
    /// A pool that keeps up to `keep` free buffers.
    pub(crate) fn new(keep: usize) -> Arc<Pool> {
        Arc::new(Pool {
            free: Mutex::new(Vec::with_capacity(keep)),
            keep,
        })
    }

    /// An empty buffer with room for `len` bytes.
    pub(crate) fn take(&self, len: usize) -> Vec<u8> {
        let reused = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut buf = reused.unwrap_or_default();
        buf.clear();
        buf.reserve_exact(len);
        buf
    }

    /// A buffer of exactly `len` bytes of unspecified content (zeros or an earlier transfer's
    /// bytes: a reused buffer is not cleared), to be filled by a read.
    pub(crate) fn take_filled(&self, len: usize) -> Vec<u8> {
        let reused = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match reused {
            Some(mut buf) => {
                buf.resize(len, 0);
                buf
            }
            // Zeroed pages come from the allocator without a memset (calloc / fresh mmap).
            None => vec![0u8; len],
        }
    }

    fn put(&self, buf: Vec<u8>) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < self.keep {
            free.push(buf);
        }
    }

    /// `buf` as `Bytes` that give the buffer back to the pool when the last of them is
    /// dropped.
    pub(crate) fn bytes(self: &Arc<Self>, buf: Vec<u8>) -> Bytes {
        Bytes::from_owner(Pooled {
            buf,
            pool: self.clone(),
        })
    }
}

/// A buffer on loan from a [`Pool`].
#[must_use = "dropping a Pooled returns its buffer to the pool"]
struct Pooled {
    buf: Vec<u8>,
    pool: Arc<Pool>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.put(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_the_pool_stays_bounded() {
        let pool = Pool::new(1);
        let mut a = pool.take(64);
        a.extend_from_slice(b"abc");
        let ptr = a.as_ptr();
        let bytes = pool.bytes(a);
        assert_eq!(&bytes[..], b"abc");
        let copy = bytes.clone();
        drop(bytes);
        assert!(pool.take(1).capacity() < 64, "still lent out");
        drop(copy);
        let again = pool.take(64);
        assert_eq!(again.as_ptr(), ptr, "the same buffer, reused");
        assert!(again.is_empty());
        pool.put(vec![1, 2, 3]);
        pool.put(vec![0; 8]);
        assert_eq!(pool.free.lock().unwrap().len(), 1, "keeps at most `keep`");
        assert_eq!(
            pool.take_filled(2),
            [1, 2],
            "a reused buffer is not cleared"
        );
        assert_eq!(pool.take_filled(2), [0, 0], "a fresh one is zeroed");
    }
}
