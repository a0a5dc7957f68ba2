//! Throughput of the transactional checksums azstore computes (`Checksum::Crc64` and
//! `Checksum::Md5`), beside a baseline measured in the same run: the classic byte-at-a-time
//! table CRC-64 of the same polynomial. No server needed:
//!
//!     cargo bench -p azstore --bench checksum

use std::time::Instant;

const POLY: u64 = 0x9A6C_9329_AC4B_C9B5;

fn bytewise_table() -> [u64; 256] {
    let mut t = [0u64; 256];
    for (i, slot) in t.iter_mut().enumerate() {
        let mut c = i as u64;
        for _ in 0..8 {
            c = if c & 1 == 1 { (c >> 1) ^ POLY } else { c >> 1 };
        }
        *slot = c;
    }
    t
}

fn bytewise(t: &[u64; 256], data: &[u8]) -> u64 {
    let mut crc = !0u64;
    for &b in data {
        crc = t[((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

fn rate(label: &str, bytes: usize, rounds: usize, mut f: impl FnMut() -> u64) -> f64 {
    let mut sink = 0u64;
    sink ^= f(); // warm-up
    let start = Instant::now();
    for _ in 0..rounds {
        sink ^= f();
    }
    let secs = start.elapsed().as_secs_f64();
    let mib_s = (bytes * rounds) as f64 / (1024.0 * 1024.0) / secs;
    println!("{label:<34} {mib_s:>9.0} MiB/s   (sink {:x})", sink & 0xf);
    mib_s
}

fn main() {
    let len = 16 << 20;
    let data: Vec<u8> = (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let table = bytewise_table();
    assert_eq!(
        azstore::blob::crc64(&data),
        bytewise(&table, &data),
        "slice-by-8 and bytewise CRC-64 disagree"
    );
    let rounds = 8;
    println!("checksum throughput over {} MiB x {rounds}", len >> 20);
    let base = rate("baseline: bytewise table CRC-64", len, rounds, || {
        bytewise(&table, &data)
    });
    let crc = rate("azstore::blob::crc64 (slice-by-8)", len, rounds, || {
        azstore::blob::crc64(&data)
    });
    rate("azstore::blob::md5_base64", len, rounds, || {
        azstore::blob::md5_base64(&data).len() as u64
    });
    println!("crc64 / baseline: {:.1}x", crc / base);
}
