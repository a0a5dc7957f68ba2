//! The bearer-token path: what the `TokenCache` costs per request and what it saves, next to
//! baselines measured in the same run.
//!
//! * per request, a cached token vs asking the source directly (a static token, the cheapest
//!   source there is: what every attempt would pay for without the cache, plus the source's
//!   own latency, typically milliseconds for Entra ID);
//! * a cold burst of 64 concurrent requests against a source that takes 20 ms: token requests
//!   and time until all have a token, with the cache vs without.
//!
//! Run: `cargo bench -p azstore --bench bearer` (no emulator needed).
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use azstore::credential::StaticToken;
use azstore::{
    OffsetDateTime, credential::AccessToken, credential::TokenCache, credential::TokenProvider,
};

struct Slow {
    calls: Arc<AtomicU64>,
}

impl TokenProvider for Slow {
    fn token(&self) -> Pin<Box<dyn Future<Output = azstore::Result<AccessToken>> + Send + '_>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(AccessToken::new(
                "eyJ0eXAiOiJKV1QifQ.e30.c2ln",
                OffsetDateTime::now_utc() + time::Duration::hours(1),
            ))
        })
    }
}

async fn burst(provider: Arc<dyn TokenProvider>) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let p = provider.clone();
            tokio::spawn(async move { p.token().await.map(|_| ()) })
        })
        .collect();
    for t in tasks {
        t.await.expect("task").expect("token");
    }
    start.elapsed()
}

#[tokio::main]
async fn main() {
    const N: u32 = 200_000;
    let token = StaticToken::new("eyJ0eXAiOiJKV1QifQ.eyJleHAiOjQxMDI0NDQ4MDB9.c2ln").unwrap();

    // Baseline: the source itself.
    let start = Instant::now();
    for _ in 0..N {
        std::hint::black_box(token.token().await.unwrap());
    }
    let direct = start.elapsed() / N;

    let cache = TokenCache::new(token.clone());
    cache.get().await.unwrap();
    let start = Instant::now();
    for _ in 0..N {
        std::hint::black_box(cache.get().await.unwrap());
    }
    let cached = start.elapsed() / N;

    println!("per request ({N} sequential):");
    println!("  static source asked directly (baseline)  {direct:>10.2?}");
    println!("  TokenCache hit                           {cached:>10.2?}");

    let calls = Arc::new(AtomicU64::new(0));
    let raw: Arc<dyn TokenProvider> = Arc::new(Slow {
        calls: calls.clone(),
    });
    let t_raw = burst(raw).await;
    let raw_calls = calls.swap(0, Ordering::SeqCst);
    let cached: Arc<dyn TokenProvider> = Arc::new(TokenCache::new(Slow {
        calls: calls.clone(),
    }));
    let t_cached = burst(cached).await;
    let cached_calls = calls.load(Ordering::SeqCst);
    println!("cold burst of 64 concurrent requests, source latency 20 ms:");
    println!(
        "  without cache (baseline)  {raw_calls:>3} token requests, all served after {t_raw:.1?}"
    );
    println!(
        "  TokenCache                {cached_calls:>3} token request(s), all served after {t_cached:.1?}"
    );
}
