//! The innermost service of the gateway: forwards a request to the upstream
//! and streams the answer back. It drops hop-by-hop headers, adds the
//! configured ones, registers as an LRO proxy (when asked), waits at most
//! the response-head timeout for the answer's head, then at most the body
//! idle timeout between two pieces of its body (not for the server's own
//! `GET` event stream, which may rest as long as it likes), and answers `502`/`504` itself,
//! with a body that names no address and no OS error (those are logged).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName};
use http::{Method, Request, Response, StatusCode, Uri, Version};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use tower_service::Service;

use super::deadline::{Clock, Timed};
use super::{BoxError, GatewayBody, text_response};
use crate::announce::{announce_in_headers, announce_in_initialize, may_be_initialize};
use crate::connect::{UpstreamClient, error_chain, failure_kind};

/// Request bodies up to this size are read whole to find an `initialize`
/// to announce the proxy in (an `initialize` is a few hundred bytes).
const ANNOUNCE_SCAN_BYTES: u64 = 64 << 10;

/// What every forwarded request shares.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub(crate) client: UpstreamClient<GatewayBody>,
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) announce: bool,
    /// Forward the request's own path (a chat route serves every path
    /// under its upstream's) rather than the upstream URL's.
    pub(crate) keep_path: bool,
    pub(crate) response_head_timeout: Duration,
    /// The longest silence in an answer's body (see [`Limits`](super::Limits)).
    pub(crate) body_idle_timeout: Duration,
    /// The upstream latency histogram (to the answer's head).
    pub(crate) latency: prometheus_client::metrics::histogram::Histogram,
}

/// Forwards requests to the upstream (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Forward(pub(crate) Arc<Upstream>);

impl<B> Service<Request<B>> for Forward
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<GatewayBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<GatewayBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let upstream = self.0.clone();
        Box::pin(async move { Ok(upstream.forward(request).await) })
    }
}

impl Upstream {
    /// One request upstream and its answer (or the gateway's error answer).
    async fn forward<B>(&self, request: Request<B>) -> Response<GatewayBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        // The server's own event stream (GET) may rest as long as it likes.
        let idle = (request.method() != Method::GET).then_some(self.body_idle_timeout);
        let request = match self.upstream_request(request).await {
            Ok(request) => request,
            Err(response) => return response,
        };
        let start = std::time::Instant::now();
        let sent = tokio::time::timeout(self.response_head_timeout, self.client.request(request));
        let sent = sent.await;
        self.latency.observe(start.elapsed().as_secs_f64());
        match sent {
            Ok(Ok(response)) => {
                let (mut parts, body) = response.into_parts();
                strip_hop_by_hop(&mut parts.headers);
                let body = match idle {
                    Some(idle) => Timed::new(body, Clock::Idle(idle)).boxed_unsync(),
                    None => body.map_err(Into::into).boxed_unsync(),
                };
                Response::from_parts(parts, body)
            }
            Ok(Err(e)) => self.failed(&e),
            Err(_) => {
                tracing::warn!(target: "gateway", timeout = ?self.response_head_timeout, "the upstream sent no answer in time");
                text_response(
                    StatusCode::GATEWAY_TIMEOUT,
                    "gateway timeout: the upstream server did not answer in time\n",
                )
            }
        }
    }

    /// The request as it goes upstream: the upstream's scheme, host and
    /// path, the client's query, hop-by-hop headers out, ours in.
    async fn upstream_request<B>(
        &self,
        request: Request<B>,
    ) -> Result<Request<GatewayBody>, Response<GatewayBody>>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let (mut parts, body) = request.into_parts();
        parts.uri = self
            .target(&parts.uri)
            .map_err(|_| text_response(StatusCode::BAD_REQUEST, "bad request target\n"))?;
        parts.version = Version::HTTP_11;
        strip_hop_by_hop(&mut parts.headers);
        // The client sets Host from the upstream URL.
        parts.headers.remove(header::HOST);
        for (name, value) in &self.headers {
            parts.headers.insert(name, value.clone());
        }
        let body = body.map_err(Into::into).boxed_unsync();
        if !self.announce {
            return Ok(Request::from_parts(parts, body));
        }
        announce_in_headers(&mut parts.headers);
        let body = announce_in_body(&parts.method, body).await?;
        if body.size_hint().exact().is_some() {
            parts.headers.remove(header::CONTENT_LENGTH);
        }
        Ok(Request::from_parts(parts, body))
    }

    /// The upstream URI of a request target: the upstream's path (the
    /// route's path may differ from it; a chat route: the request's own)
    /// and the client's query.
    fn target(&self, uri: &Uri) -> Result<Uri, http::Error> {
        let path = if self.keep_path {
            uri.path()
        } else {
            self.uri.path()
        };
        let path_and_query = match uri.query() {
            Some(query) => format!("{path}?{query}"),
            None => path.to_owned(),
        };
        let mut target = Uri::builder().path_and_query(path_and_query);
        if let Some(scheme) = self.uri.scheme() {
            target = target.scheme(scheme.clone());
        }
        if let Some(authority) = self.uri.authority() {
            target = target.authority(authority.clone());
        }
        target.build()
    }

    /// The answer to a request that could not be sent or answered: `502`
    /// (`504` on a connect timeout), the details in the log only.
    fn failed(&self, e: &hyper_util::client::legacy::Error) -> Response<GatewayBody> {
        let kind = failure_kind(e);
        tracing::warn!(target: "gateway", upstream = %self.uri, error = %error_chain(e), "upstream request failed");
        if kind.contains("timed out") {
            text_response(
                StatusCode::GATEWAY_TIMEOUT,
                &format!("gateway timeout: {kind}\n"),
            )
        } else {
            text_response(StatusCode::BAD_GATEWAY, &format!("bad gateway: {kind}\n"))
        }
    }
}

/// A small POST body read whole, with `clientInfo.proxy: true` when it is
/// an `initialize`; any other body passes as it is, streamed.
async fn announce_in_body(
    method: &Method,
    body: GatewayBody,
) -> Result<GatewayBody, Response<GatewayBody>> {
    let small = body
        .size_hint()
        .exact()
        .is_some_and(|n| n <= ANNOUNCE_SCAN_BYTES);
    if method != Method::POST || !small {
        return Ok(body);
    }
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            tracing::debug!(target: "gateway", "request body broke off: {e}");
            return Err(text_response(
                StatusCode::BAD_REQUEST,
                "the request body broke off\n",
            ));
        }
    };
    let bytes = if may_be_initialize(&bytes) {
        announce_in_initialize(bytes)
    } else {
        bytes
    };
    Ok(Full::new(bytes).map_err(|e| match e {}).boxed_unsync())
}

/// Headers that belong to one connection, not to the message (RFC 9110
/// §7.6.1), plus the ones the `Connection` header names.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // RFC 9112, 6.3: a message framed by Transfer-Encoding has no valid
    // Content-Length; drop it before Transfer-Encoding goes.
    if headers.contains_key(header::TRANSFER_ENCODING) {
        headers.remove(header::CONTENT_LENGTH);
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
}
