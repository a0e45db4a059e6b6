//! The HTTP transport of [`BucketStore`](super::BucketStore): hyper's
//! client with rustls on the `ring` provider and the system's root
//! certificates, the stack the `lro` command already uses, given to
//! `object_store` as its [`HttpConnector`]. Not reqwest: its rustls needs a
//! process-wide crypto provider (or aws-lc-rs, a C build), which would
//! change every other reqwest client of the process.
//!
//! It honours `object_store`'s client options that matter here:
//! `allow_http` (`AWS_ALLOW_HTTP`, …: plain `http://` only when set),
//! `timeout` (the answer's head, default 30 s) and `connect_timeout`
//! (default 5 s).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::rt::TokioExecutor;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody,
    HttpResponse, HttpResponseBody, HttpService,
};
use object_store::{ClientConfigKey, ClientOptions};

/// Default time to the answer's head.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time to connect.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Makes the hyper client of a store.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Hyper;

impl HttpConnector for Hyper {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let duration = |key| {
            options
                .get_config_value(&key)
                .and_then(|v| humantime::parse_duration(&v).ok())
        };
        let allow_http = options
            .get_config_value(&ClientConfigKey::AllowHttp)
            .is_some_and(|v| v == "true");
        let mut tcp = TcpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(
            duration(ClientConfigKey::ConnectTimeout).unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        ));
        tcp.enforce_http(false);
        let https = HttpsConnectorBuilder::new()
            .with_tls_config(tls_config().map_err(|e| object_store::Error::Generic {
                store: "tls",
                source: Box::new(e),
            })?)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(HttpClient::new(Service {
            client,
            timeout: duration(ClientConfigKey::Timeout).unwrap_or(DEFAULT_TIMEOUT),
            allow_http,
        }))
    }
}

/// rustls with the `ring` provider, trusting the system's roots.
fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for e in &native.errors {
        tracing::debug!(target: "tower_lro", "system root certificates: {e}");
    }
    roots.add_parsable_certificates(native.certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The client.
#[derive(Debug)]
struct Service {
    client: Client<HttpsConnector<TcpConnector>, HttpRequestBody>,
    timeout: Duration,
    allow_http: bool,
}

impl Service {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        if req.uri().scheme_str() == Some("http") && !self.allow_http {
            return Err(HttpError::new(
                HttpErrorKind::Connect,
                std::io::Error::other(
                    "plain http:// to the store needs allow_http (AWS_ALLOW_HTTP=true)",
                ),
            ));
        }
        let answer = tokio::time::timeout(self.timeout, self.client.request(req)).await;
        let response = match answer {
            Err(_) => {
                let e = std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time");
                return Err(HttpError::new(HttpErrorKind::Timeout, e));
            }
            Ok(Err(e)) => {
                let kind = if e.is_connect() {
                    HttpErrorKind::Connect
                } else {
                    HttpErrorKind::Request
                };
                return Err(HttpError::new(kind, e));
            }
            Ok(Ok(response)) => response,
        };
        let (parts, body) = response.into_parts();
        let body = body.map_err(|e| HttpError::new(HttpErrorKind::Interrupted, e));
        Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(body)))
    }
}

impl HttpService for Service {
    fn call<'a, 'b>(
        &'a self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(self.send(req))
    }
}
