//! What the gateway does with a request: the health, readiness and metrics
//! endpoints, the served path through the offload layer, `404` elsewhere;
//! one log line each, written when the answer's body ends (a streamed
//! answer's time is the time to its last byte, not to its headers), and
//! the request counted in the metrics.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{Method, Request, Response, StatusCode, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tower_service::Service;

use bytes::Bytes;
use serde::Deserialize;

use super::forward::Forward;
use super::metrics::{self, Metrics, OTHER_ROUTE};
use super::tenants::Tenants;
use super::{BoxError, Bucket, GatewayBody, full, text_response};
use tower_lro::offload::{OffloadLayer, OffloadService};
use tower_lro::store::{FsStore, Store};

/// Request bodies up to this size (with a `Content-Length`) are looked at
/// for an `lro_extract` call (its metrics) when no `Mcp-Name` header names
/// it; larger ones pass unread (the call is a few hundred bytes).
const EXTRACT_SCAN_BYTES: u64 = 64 << 10;

/// One served path and what serves it.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The path served (an MCP route: exactly; a chat route: it and every
    /// path under it).
    pub(crate) path: Arc<str>,
    pub(crate) kind: RouteKind,
}

/// What a route puts in front of its upstream.
#[derive(Debug, Clone)]
pub(crate) enum RouteKind {
    /// An MCP server behind the offload layer.
    Mcp {
        service: OffloadService<Forward>,
        /// The layer, whose store the readiness probe writes to.
        layer: OffloadLayer,
    },
    /// A chat provider behind the history offload layer.
    History {
        service: Tenants,
        /// Its `store_dir` as the history layer writes to it, which the
        /// readiness probe writes to.
        store: FsStore,
        /// The object store its files also go to, which the readiness
        /// probe checks.
        bucket: Option<Arc<Bucket>>,
    },
}

impl Route {
    /// Whether this route serves `path`, and how closely: `Some(usize::MAX)`
    /// for an exact match, the prefix's length for a chat route's path
    /// under its own.
    fn serves(&self, path: &str) -> Option<usize> {
        let own = &*self.path;
        if path == own {
            return Some(usize::MAX);
        }
        let under = path
            .strip_prefix(own)
            .is_some_and(|rest| own.ends_with('/') || rest.starts_with('/'));
        (matches!(self.kind, RouteKind::History { .. }) && under).then_some(own.len())
    }
}

/// The gateway's request router, shared by all connections.
#[derive(Debug, Clone)]
pub(crate) struct Router {
    /// The routes, by path (exact match; a few, looked through in order).
    pub(crate) routes: Arc<[Route]>,
    /// The health endpoint's path.
    pub(crate) health: Arc<str>,
    /// The readiness endpoint's path.
    pub(crate) ready: Arc<str>,
    /// The metrics endpoint's path.
    pub(crate) metrics_path: Arc<str>,
    /// The metrics.
    pub(crate) metrics: Arc<Metrics>,
}

impl Router {
    /// Answers one request from `peer` and logs it.
    pub(crate) async fn handle<B>(
        self,
        peer: SocketAddr,
        request: Request<B>,
    ) -> Response<GatewayBody>
    where
        B: Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<BoxError> + Send,
    {
        let start = Instant::now();
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let session = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_owned();
        // The gateway's own endpoints are never a route's, not even under a
        // chat route's prefix.
        let endpoint = [&self.health, &self.ready, &self.metrics_path]
            .iter()
            .any(|p| ***p == *path);
        let route = (0..self.routes.len())
            .filter(|_| !endpoint)
            .filter_map(|i| Some((self.routes[i].serves(&path)?, i)))
            .max()
            .map(|(_, i)| i);
        let counted = match route {
            Some(i) => Some(self.routes[i].path.clone()),
            None if endpoint => None,
            None => Some(OTHER_ROUTE.into()),
        };
        let metrics = self.metrics.clone();
        let response = self.answer(route, request).await;
        if let Some(route) = counted {
            metrics.request(
                &route,
                response.status().as_u16(),
                start.elapsed().as_secs_f64(),
            );
        }
        let log = RequestLog {
            start,
            to_headers: start.elapsed(),
            peer,
            method,
            path,
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_owned(),
            session,
            bytes: 0,
        };
        response.map(|body| {
            Logged {
                inner: body,
                log: Some(log),
            }
            .boxed_unsync()
        })
    }

    async fn answer<B>(self, route: Option<usize>, request: Request<B>) -> Response<GatewayBody>
    where
        B: Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<BoxError> + Send,
    {
        let path = request.uri().path();
        let get = matches!(*request.method(), Method::GET | Method::HEAD);
        if get && path == &*self.health {
            return health();
        }
        if get && path == &*self.ready {
            return self.readiness().await;
        }
        if get && path == &*self.metrics_path {
            return self.metrics_answer();
        }
        let Some(route) = route else {
            return text_response(StatusCode::NOT_FOUND, "not found\n");
        };
        let Route { kind, path } = self.routes[route].clone();
        let mut request = request.map(|b| b.map_err(Into::into).boxed_unsync());
        let mut service = match kind {
            RouteKind::Mcp { service, .. } => service,
            RouteKind::History { mut service, .. } => {
                return match service.call(request).await {
                    Ok(response) => response.map(|b| b.map_err(Into::into).boxed_unsync()),
                    Err(never) => match never {},
                };
            }
        };
        // The 2026-07-28 revision names the method and the tool in headers;
        // earlier ones only in the body, read when it is small.
        let mut extract = {
            let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
            header("mcp-method") == Some("tools/call") && header("mcp-name") == Some("lro_extract")
        };
        let small = request
            .body()
            .size_hint()
            .exact()
            .is_some_and(|n| n <= EXTRACT_SCAN_BYTES);
        if !extract && request.method() == Method::POST && small {
            let (parts, body) = request.into_parts();
            let bytes = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) => {
                    tracing::debug!(target: "gateway", "request body broke off: {e}");
                    return text_response(StatusCode::BAD_REQUEST, "the request body broke off\n");
                }
            };
            extract = is_extract_call(&bytes);
            request = Request::from_parts(parts, full(bytes));
        }
        let start = Instant::now();
        let response = match service.call(request).await {
            Ok(response) => response.map(|b| b.map_err(Into::into).boxed_unsync()),
            Err(never) => match never {},
        };
        if !extract {
            return response;
        }
        // The layer's own answer, whole in its memory already: read to tell
        // a failed extraction from a good one.
        let (parts, body) = response.into_parts();
        let (bytes, ok) = match body.collect().await {
            Ok(collected) => {
                let bytes = collected.to_bytes();
                let ok = parts.status.is_success() && answer_is_ok(&bytes);
                (bytes, ok)
            }
            Err(_) => (Bytes::new(), false),
        };
        self.metrics
            .extract(&path, ok, start.elapsed().as_secs_f64());
        Response::from_parts(parts, full(bytes))
    }

    /// The readiness answer: `200` when a file can be written to the output
    /// store and removed again (the probe writes through the layer's own
    /// store), else `503`, so a load balancer sends no traffic to a
    /// replica whose offloads would only fall back.
    async fn readiness(&self) -> Response<GatewayBody> {
        let mut probe = Ok(());
        for route in self.routes.iter() {
            let kind = route.kind.clone();
            let probed = tokio::task::spawn_blocking(move || probe_route(&kind))
                .await
                .unwrap_or_else(|e| Err(format!("probe task: {e}")));
            if let Err(e) = probed {
                self.metrics.probe_failed(&route.path);
                tracing::warn!(target: "gateway", route = %route.path, error = %e, "not ready: the output store cannot be written");
                probe = Err(());
            }
        }
        self.metrics.ready.set(i64::from(probe.is_ok()));
        let (status, body) = match probe {
            Ok(()) => (StatusCode::OK, "{\"status\":\"ready\"}\n"),
            Err(()) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "{\"status\":\"not ready\",\"reason\":\"the output store cannot be written\"}\n",
            ),
        };
        let mut response = text_response(status, body);
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        response
    }

    /// The metrics, in the OpenMetrics text format.
    fn metrics_answer(&self) -> Response<GatewayBody> {
        let mut response = text_response(StatusCode::OK, &self.metrics.encode());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(metrics::CONTENT_TYPE),
        );
        response
    }
}

/// Writes a small file where the route's files go and removes it.
fn probe_route(kind: &RouteKind) -> Result<(), String> {
    match kind {
        RouteKind::Mcp { layer, .. } => probe_store(layer.offloader().store()),
        RouteKind::History { store, bucket, .. } => {
            probe_store(store)?;
            #[cfg(feature = "object-store")]
            if let Some(bucket) = bucket {
                Store::check(&**bucket).map_err(|e| e.to_string())?;
            }
            #[cfg(not(feature = "object-store"))]
            let _ = bucket;
            Ok(())
        }
    }
}

/// Writes a small file through `store` and removes it.
fn probe_store(store: &dyn Store) -> Result<(), String> {
    let name = format!(
        "atlatl-readyprobe-{}.jsonl",
        ulid::Ulid::new().to_string().to_ascii_lowercase()
    );
    store.write(&name, b"{}\n").map_err(|e| e.to_string())?;
    store
        .remove(&name)
        .map(|_| ())
        .map_err(|e| format!("removing the probe: {e}"))
}

/// Whether a request body is one `tools/call` of `lro_extract`.
fn is_extract_call(bytes: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Call {
        method: String,
        params: Option<Params>,
    }
    #[derive(Deserialize)]
    struct Params {
        name: Option<String>,
    }
    if memchr::memmem::find(bytes, b"lro_extract").is_none() {
        return false;
    }
    serde_json::from_slice::<Call>(bytes).is_ok_and(|call| {
        call.method == "tools/call"
            && call
                .params
                .and_then(|p| p.name)
                .is_some_and(|n| n == "lro_extract")
    })
}

/// Whether the layer's answer (JSON, or an event stream of it) is a result
/// without `isError: true`.
fn answer_is_ok(bytes: &[u8]) -> bool {
    let ok = |message: &serde_json::Value| {
        message.get("error").is_none()
            && message
                .get("result")
                .is_some_and(|r| r.get("isError") != Some(&serde_json::Value::Bool(true)))
    };
    if let Ok(message) = serde_json::from_slice::<serde_json::Value>(bytes) {
        return ok(&message);
    }
    let text = String::from_utf8_lossy(bytes);
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str::<serde_json::Value>(&data).is_ok_and(|m| ok(&m))
}

/// The health endpoint's answer: the gateway is up and accepting requests
/// (the upstream is not asked).
fn health() -> Response<GatewayBody> {
    let mut response = text_response(StatusCode::OK, "{\"status\":\"ok\"}\n");
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// What the log line of one request says, gathered until its body ends.
struct RequestLog {
    start: Instant,
    to_headers: std::time::Duration,
    peer: SocketAddr,
    method: Method,
    path: String,
    status: u16,
    content_type: String,
    session: String,
    bytes: u64,
}

impl RequestLog {
    /// Writes the line; `end` says how the body ended.
    fn write(&self, end: &'static str) {
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        tracing::info!(
            target: "gateway",
            peer = %self.peer,
            method = %self.method,
            path = self.path,
            status = self.status,
            content_type = self.content_type,
            session = self.session,
            bytes = self.bytes,
            end,
            ms_to_headers = ms(self.to_headers),
            ms = ms(self.start.elapsed()),
            "request"
        );
    }
}

/// A response body that writes its request's log line when it ends: its
/// last frame, an error, or the client gone (dropped unfinished).
struct Logged {
    inner: GatewayBody,
    log: Option<RequestLog>,
}

impl Body for Logged {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let end = match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(log)) = (frame.data_ref(), self.log.as_mut()) {
                    log.bytes += data.len() as u64;
                }
                None
            }
            Poll::Ready(Some(Err(_))) => Some("error"),
            Poll::Ready(None) => Some("complete"),
            Poll::Pending => None,
        };
        if let Some(end) = end
            && let Some(log) = self.log.take()
        {
            log.write(end);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        if let Some(log) = self.log.take() {
            // An empty body may never be polled; else the client left.
            log.write(if self.inner.is_end_stream() {
                "complete"
            } else {
                "client gone"
            });
        }
    }
}
