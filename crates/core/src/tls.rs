//! The TLS settings every HTTP client of the core uses (the transports' and the OAuth
//! sign-in's), with one platform certificate verifier shared by the process.

use crate::error::Error;
use std::sync::{Arc, Mutex};

/// The TLS settings of every client: what `reqwest::Client::builder().build()` makes by
/// default (the installed ring provider, TLS 1.2 and 1.3, the platform verifier, no client
/// certificate, SNI, ALPN h2 then http/1.1, ticket resumption), except that the verifier is built once per
/// process and shared. Building it loads and parses every system root certificate, which
/// was the largest part of an idle HTTP connection's memory (issue 6); each attempt still
/// gets a client, a connection pool and a TLS session cache of its own.
pub(crate) fn tls_config() -> Result<rustls::ClientConfig, Error> {
    use rustls_platform_verifier::Verifier;
    static VERIFIER: Mutex<Option<Arc<Verifier>>> = Mutex::new(None);
    let unavailable = || Error::config("could not set up the HTTP client (TLS roots unavailable)");
    // Installing the process-wide provider twice is harmless; the first one wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .ok_or_else(unavailable)?;
    let verifier = {
        let mut shared = VERIFIER.lock().expect("lock");
        match shared.as_ref() {
            Some(v) => v.clone(),
            // A failure is not kept: the next attempt tries again.
            None => shared
                .insert(Arc::new(
                    Verifier::new(provider.clone()).map_err(|_| unavailable())?,
                ))
                .clone(),
        }
    };
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|_| unavailable())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    // Session tickets for 4 server names, not rustls's default 256 (a hash map allocated in
    // full, ~10 KB per client): a client talks to its one server, and to a few more only
    // when redirected.
    tls.resumption = rustls::client::Resumption::in_memory_sessions(4);
    Ok(tls)
}
