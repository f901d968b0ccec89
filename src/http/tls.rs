//! The HTTPS client set-up shared by every outbound client (forges, LLMs, remote config): rustls
//! with ring only and the bundled web PKI roots, so a `FROM scratch` image works and no other
//! crypto provider is ever compiled in.

use std::sync::Arc;
use std::time::Duration;

/// `replan/<version>`: GitHub refuses requests without a User-Agent.
pub const USER_AGENT: &str = concat!("replan/", env!("CARGO_PKG_VERSION"));

/// TLS with ring and the Mozilla roots; ALPN offers HTTP/2 and HTTP/1.1 (reqwest leaves ALPN to
/// the caller for a preconfigured config).
pub fn tls_config() -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A client builder with our TLS and User-Agent, for callers that add their own settings.
pub fn builder() -> Result<reqwest::ClientBuilder, String> {
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config()?)
        .user_agent(USER_AGENT))
}

/// A client with our TLS, User-Agent and a per-request time-out.
pub fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    builder()?
        .timeout(timeout)
        .build()
        .map_err(|e| format!("HTTP client setup failed: {e}"))
}
