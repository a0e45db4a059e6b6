//! The HTTP client the `lro` command opens upstream connections with, shared
//! by [`gateway`](crate::gateway) and [`proxy`](crate::proxy): `http://` and
//! `https://` (rustls with the `ring` provider, the system's root
//! certificates plus an optional private CA file), `TCP_NODELAY` on every
//! socket it opens, a connect timeout, IPv4 only with `--ipv4`, and with
//! `--enable-proxy` the HTTP proxy the environment names ([`env_proxy`]).
//!
//! [`upstream_client`] makes one from [`ConnectOptions`] (the `--ca-cert`,
//! `--connect-timeout`, `--ipv4` and `--enable-proxy` flags);
//! [`failure_kind`] and [`error_chain`] say what went wrong without (for
//! the agent) or with (for the log) addresses.

mod env_proxy;

use std::error::Error as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http::header::PROXY_AUTHORIZATION;
use http::{Request, Uri};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

pub(crate) use env_proxy::ProxyConnector;

/// The connector of [`upstream_client`]: TCP (with `TCP_NODELAY`), through
/// the environment's proxy when enabled, then TLS for `https://` URLs.
pub(crate) type Connector = HttpsConnector<ProxyConnector>;

/// The client of [`upstream_client`]: hyper's pooled client, and the
/// proxy's credentials for the plain `http` requests that go through one.
pub(crate) struct UpstreamClient<B> {
    client: Client<Connector, B>,
    proxy: Option<Arc<Matcher>>,
}

impl<B> Clone for UpstreamClient<B> {
    fn clone(&self) -> Self {
        UpstreamClient {
            client: self.client.clone(),
            proxy: self.proxy.clone(),
        }
    }
}

impl<B> std::fmt::Debug for UpstreamClient<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamClient")
            .field("proxy", &self.proxy.is_some())
            .finish_non_exhaustive()
    }
}

impl<B> UpstreamClient<B>
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// Sends `request`; one to an `http://` server through a proxy with
    /// credentials carries them in `Proxy-Authorization` (unless it has
    /// one already).
    pub(crate) fn request(&self, mut request: Request<B>) -> ResponseFuture {
        if let Some(auth) = self
            .proxy
            .as_deref()
            .and_then(|m| env_proxy::http_proxy_auth(m, request.uri()))
        {
            request
                .headers_mut()
                .entry(PROXY_AUTHORIZATION)
                .or_insert(auth);
        }
        self.client.request(request)
    }
}

/// The default [`ConnectOptions::connect_timeout`].
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How upstream connections are opened.
#[derive(Debug, Clone)]
pub(crate) struct ConnectOptions {
    /// A PEM file of CA certificates trusted besides the system's roots
    /// (a private CA of the upstream server).
    pub ca_cert: Option<PathBuf>,
    /// The longest a TCP connection may take to open.
    pub connect_timeout: Duration,
    /// Through the HTTP proxy of `HTTPS_PROXY`/`HTTP_PROXY` (and their
    /// lower-case forms), `NO_PROXY` honoured (`--enable-proxy`).
    pub env_proxy: bool,
    /// Connect over IPv4 only: a server's IPv6 addresses are not tried
    /// (`--ipv4`).
    pub ipv4_only: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            ca_cert: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            env_proxy: false,
            ipv4_only: false,
        }
    }
}

/// Why no client could be made, or an upstream URL is not usable.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The CA file cannot be read or holds no PEM certificate.
    #[error("CA certificate file {path:?}: {why}")]
    CaFile {
        /// The file given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The system's root certificates and the CA file give no trust anchor.
    #[error("no root certificates: the system has none and no --ca-cert was given")]
    NoRoots,
    /// The TLS configuration was refused by rustls.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The upstream URL is not `http://` or `https://` with a host.
    #[error("upstream URL {0:?}: expected http(s)://HOST[:PORT]/PATH")]
    BadUpstream(String),
    /// `--enable-proxy` with a proxy URL that is not `http://`.
    #[error(
        "--enable-proxy: {variable} names a {scheme}:// proxy; only http:// proxies are supported"
    )]
    ProxyScheme {
        /// The environment variable.
        variable: &'static str,
        /// The proxy URL's scheme.
        scheme: String,
    },
}

/// Checks that `uri` is an `http://` or `https://` URL with a host.
pub(crate) fn check_upstream(uri: &Uri) -> Result<(), ConnectError> {
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || uri.host().is_none_or(str::is_empty) {
        return Err(ConnectError::BadUpstream(uri.to_string()));
    }
    Ok(())
}

/// A pooled HTTP/1.1 client for `http://` and `https://` upstreams.
pub(crate) fn upstream_client<B>(
    options: &ConnectOptions,
) -> Result<UpstreamClient<B>, ConnectError>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    let proxy = env_proxy::matcher(options.env_proxy)?;
    let connector = connector(options, proxy.clone())?;
    Ok(UpstreamClient {
        client: Client::builder(TokioExecutor::new()).build(connector),
        proxy,
    })
}

/// The connector: `TCP_NODELAY`, the connect timeout, the proxy, TLS with
/// the roots.
fn connector(
    options: &ConnectOptions,
    proxy: Option<Arc<Matcher>>,
) -> Result<Connector, ConnectError> {
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(options.connect_timeout));
    tcp.enforce_http(false);
    if options.ipv4_only {
        // With only an IPv4 local address, hyper-util tries only the
        // server's IPv4 addresses.
        tcp.set_local_address(Some(std::net::Ipv4Addr::UNSPECIFIED.into()));
    }
    Ok(HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(options)?)
        .https_or_http()
        .enable_http1()
        .wrap_connector(ProxyConnector::new(tcp, proxy)))
}

/// rustls with the `ring` provider, trusting the system's roots and the CA
/// file.
fn tls_config(options: &ConnectOptions) -> Result<rustls::ClientConfig, ConnectError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for e in &native.errors {
        tracing::debug!(target: "tower_lro", "system root certificates: {e}");
    }
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = &options.ca_cert {
        for cert in ca_certificates(path)? {
            roots.add(cert).map_err(|e| ConnectError::CaFile {
                path: path.clone(),
                why: e.to_string(),
            })?;
        }
    }
    if roots.is_empty() {
        return Err(ConnectError::NoRoots);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The certificates of a PEM file (at least one).
fn ca_certificates(path: &PathBuf) -> Result<Vec<CertificateDer<'static>>, ConnectError> {
    let bad = |why: String| ConnectError::CaFile {
        path: path.clone(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".to_owned()));
    }
    Ok(certs)
}

/// What went wrong with an upstream request, in words that name no address
/// and no OS error (those go to the log): fit for an answer to a client.
pub(crate) fn failure_kind(e: &hyper_util::client::legacy::Error) -> &'static str {
    let mut source = e.source();
    while let Some(s) = source {
        if is_tls(s) {
            return "the TLS handshake with the server failed";
        }
        if s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return "the connection to the server timed out";
        }
        source = s.source();
    }
    if e.is_connect() {
        "connection refused or unreachable"
    } else {
        "the connection failed"
    }
}

/// Whether `e` is a rustls error, also when wrapped in I/O errors (whose
/// `source` skips the error they wrap).
fn is_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.is::<rustls::Error>() {
        return true;
    }
    let inner = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref());
    inner.is_some_and(|inner| is_tls(inner))
}

/// An error and its causes on one line, for the log.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_service::Service;

    /// Every socket the connector opens has `TCP_NODELAY` (keep-alive
    /// requests would otherwise wait for delayed ACKs).
    #[tokio::test]
    async fn opened_sockets_have_nodelay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut connector = connector(&ConnectOptions::default(), None).unwrap();
        let uri: Uri = format!("http://{addr}/mcp").parse().unwrap();
        let stream = connector.call(uri).await.unwrap();
        let hyper_rustls::MaybeHttpsStream::Http(tcp) = stream else {
            panic!("an http:// URL gave a TLS stream");
        };
        assert!(tcp.tcp().nodelay().unwrap());
    }

    #[test]
    fn upstream_urls_are_checked() {
        for good in ["http://127.0.0.1:1/mcp", "https://example.com/mcp"] {
            assert!(check_upstream(&good.parse().unwrap()).is_ok(), "{good}");
        }
        for bad in ["ftp://example.com/", "/mcp"] {
            assert!(check_upstream(&bad.parse().unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_ca_file_without_certificates_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let options = ConnectOptions {
            ca_cert: Some(path.clone()),
            ..ConnectOptions::default()
        };
        let e = connector(&options, None).expect_err("an error");
        assert!(e.to_string().contains("empty.pem"), "{e}");
    }
}
