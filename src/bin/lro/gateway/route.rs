//! What the gateway does with a request: the health endpoint, the served
//! path through the offload layer, `404` elsewhere; one log line each,
//! written when the answer's body ends (a streamed answer's time is the
//! time to its last byte, not to its headers).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{Method, Request, Response, StatusCode, header};
use http_body::{Body, Frame, SizeHint};
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
