//! A local OAuth 2.0 token endpoint over HTTPS (testkit's `TokenIssuer`) as a process, for
//! running `azure_identity`'s `ClientSecretCredential` end to end against the emulators
//! (`scripts/live-check-local`). Needs the test certificate of `scripts/azurite run`
//! (`AZSTORE_TLS_CERT_FILE`, `AZSTORE_TLS_KEY_FILE`).
//!
//! ```text
//! azstore-token-issuer     prints `azstore-token-issuer: listening on https://127.0.0.1:PORT`
//! ```
//!
//! Tokens live one hour and are JWTs that Azurite's `--oauth basic` accepts; the tenant is
//! `testkit::token::TENANT`. Runs until killed.

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let issuer = testkit::token::TokenIssuer::start(std::time::Duration::from_secs(3600)).await;
    println!(
        "azstore-token-issuer: listening on {}",
        issuer.authority_host()
    );
    std::future::pending::<()>().await;
}
