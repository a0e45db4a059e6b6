//! What the gateway does with a request: the health endpoint, the served
//! path through the offload layer, `404` elsewhere; one log line each.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use http::{Method, Request, Response, StatusCode, header};
use http_body::Body;
use http_body_util::BodyExt;
use tower_service::Service;

use super::forward::Forward;
use super::{BoxError, GatewayBody, text_response};
use tower_lro::offload::OffloadService;

/// The gateway's request router, shared by all connections.
#[derive(Debug, Clone)]
pub(crate) struct Router {
    pub(crate) service: OffloadService<Forward>,
    /// The path served (the upstream URL's).
    pub(crate) path: Arc<str>,
    /// The health endpoint's path.
    pub(crate) health: Arc<str>,
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
        let response = self.answer(request).await;
        tracing::info!(
            target: "gateway",
            %peer,
            %method,
            path,
            status = response.status().as_u16(),
            content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("-"),
            session,
            ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            "request"
        );
        response
    }

    async fn answer<B>(mut self, request: Request<B>) -> Response<GatewayBody>
    where
        B: Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<BoxError> + Send,
    {
        let path = request.uri().path();
        if path == &*self.health && matches!(*request.method(), Method::GET | Method::HEAD) {
            return health();
        }
        if path != &*self.path {
            return text_response(StatusCode::NOT_FOUND, "not found\n");
        }
        let request = request.map(|b| b.map_err(Into::into).boxed_unsync());
        match self.service.call(request).await {
            Ok(response) => response.map(|b| b.map_err(Into::into).boxed_unsync()),
            Err(never) => match never {},
        }
    }
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
