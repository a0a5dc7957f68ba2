//! TLS for the test bed: a throw-away CA and a server certificate for 127.0.0.1 / localhost,
//! generated at test time (`azstore-test-cert`, run by `scripts/azurite`), and the HTTPS
//! Azurite with `--oauth basic` that `scripts/azurite run` starts beside the plain one.
//!
//! Environment set by `scripts/azurite run`:
//!
//! | variable | what |
//! |---|---|
//! | `AZSTORE_TLS_CONNECTION_STRING` | the HTTPS Azurite (Blob, Queue, Table), SharedKey |
//! | `AZSTORE_TLS_CA_FILE` | the CA certificate (PEM) to trust |
//! | `AZSTORE_TLS_CERT_FILE`, `AZSTORE_TLS_KEY_FILE` | the server certificate and key (PEM) |

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Writes `dir/ca.pem`, `dir/cert.pem` (server certificate for 127.0.0.1, ::1 and localhost,
/// signed by the CA) and `dir/key.pem`.
pub fn generate_into(dir: &Path) -> Result<(), String> {
    let err = |e: rcgen::Error| e.to_string();
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let now = time::OffsetDateTime::now_utc();

    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "azstore test CA (throw-away)");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.not_before = now - time::Duration::hours(1);
    ca.not_after = now + time::Duration::days(2);
    let ca_key = KeyPair::generate().map_err(err)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;

    let mut leaf = CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])
    .map_err(err)?;
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.not_before = now - time::Duration::hours(1);
    leaf.not_after = now + time::Duration::days(2);
    let leaf_key = KeyPair::generate().map_err(err)?;
    let issuer = Issuer::new(ca, ca_key);
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(err)?;

    let write = |name: &str, content: String| {
        let p = dir.join(name);
        std::fs::write(&p, content).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("ca.pem", ca_cert.pem())?;
    write("cert.pem", leaf_cert.pem())?;
    write("key.pem", leaf_key.serialize_pem())?;
    Ok(())
}

fn env_path(var: &str) -> PathBuf {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "{var} is not set. These tests need the HTTPS Azurite that `scripts/azurite run` \
             starts: run the suite with `scripts/test`, or wrap a command in \
             `scripts/azurite run --only azurite,file,tls,redis -- cargo test`."
        ),
    }
}

/// The CA certificate (PEM) the test servers' certificate chains to.
pub fn ca_pem() -> Vec<u8> {
    let p = env_path("AZSTORE_TLS_CA_FILE");
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The HTTPS Azurite (with `--oauth basic`) as a SharedKey account; swap the credential for a
/// bearer token with `with_credential`. Panics with instructions when it is not running.
pub fn https_account() -> azstore::StorageAccount {
    let cs = std::env::var("AZSTORE_TLS_CONNECTION_STRING").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_TLS_CONNECTION_STRING is not set: these tests need the HTTPS Azurite of \
             `scripts/azurite run` (run `scripts/test`, or `scripts/azurite run --only azurite,file,tls,redis -- cargo test`)."
        )
    });
    let account = azstore::StorageAccount::from_connection_string(&cs).expect("valid string");
    let ep = account
        .endpoint(azstore::Service::Blob)
        .expect("blob endpoint");
    let hostport = ep
        .origin()
        .split("://")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    if std::net::TcpStream::connect(&hostport).is_err() {
        panic!(
            "the HTTPS Azurite is not reachable at {hostport}; start it with `scripts/azurite run --only azurite,file,tls,redis -- cargo test`"
        );
    }
    account
}

/// Transport options that trust the test CA (and nothing else).
pub fn transport() -> azstore::http::TransportOptions {
    azstore::http::TransportOptions::default()
        .tls_roots(azstore::http::TlsRoots::OnlyAdded)
        .add_root_certificates_pem(&ca_pem())
        .expect("the test CA is valid PEM")
}

/// A rustls server configuration with the test server certificate.
pub fn server_config() -> Arc<rustls::ServerConfig> {
    let cert_path = env_path("AZSTORE_TLS_CERT_FILE");
    let key_path = env_path("AZSTORE_TLS_KEY_FILE");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .unwrap_or_else(|e| panic!("{}: {e}", cert_path.display()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", cert_path.display()));
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .unwrap_or_else(|e| panic!("{}: {e}", key_path.display()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server certificate and key match");
    Arc::new(config)
}
