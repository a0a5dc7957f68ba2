//! Writes a throw-away certificate authority and a server certificate for 127.0.0.1 /
//! localhost, for the HTTPS emulators of the test suite (Azurite with `--oauth basic`, which
//! accepts bearer tokens only over HTTPS, and the test token issuer).
//!
//! ```text
//! azstore-test-cert DIR      writes DIR/ca.pem, DIR/cert.pem, DIR/key.pem
//! ```
//!
//! Generated at test time (never committed), valid for two days. `scripts/azurite` runs it.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: azstore-test-cert DIR");
        return ExitCode::from(2);
    };
    match testkit::tls::generate_into(std::path::Path::new(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("azstore-test-cert: {e}");
            ExitCode::from(1)
        }
    }
}
