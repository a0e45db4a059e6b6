//! [`OffloadService`]: classification, the call, and the response path.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, HeaderValue};
use http::{HeaderName, Method, Request, Response};
use http_body::Body;
use tower_service::Service;

use super::body::OffloadBody;
use super::future::ResponseFuture;
use super::request_body::{Capture, RequestBody};
use super::state::{SESSION_HEADER, Shared};
use crate::engine::Offloader;
use crate::engine::config::OffloadConfig;

/// Middleware that offloads large MCP tool results to JSONL files.
///
/// Created by [`OffloadLayer`](crate::OffloadLayer) (see there what it
/// does), or with [`OffloadService::new`].
#[derive(Clone)]
pub struct OffloadService<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> std::fmt::Debug for OffloadService<S>
where
    S: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadService")
            .field("inner", &self.inner)
            .field("shared", &self.shared)
            .finish()
    }
}

impl<S> OffloadService<S> {
    /// Wraps `inner` with the default layer settings and `config` (use
    /// [`OffloadLayer::builder`](crate::OffloadLayer::builder) for the
    /// other settings).
    pub fn new(inner: S, config: OffloadConfig) -> Self {
        OffloadService::from_shared(inner, Arc::new(Shared::new(Offloader::new(config))))
    }

    pub(crate) fn from_shared(inner: S, shared: Arc<Shared>) -> Self {
        OffloadService { inner, shared }
    }

    /// A reference to the inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A mutable reference to the inner service.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// The `Last-Event-ID` header of a resumed event stream.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

fn is_truthy(v: &HeaderValue) -> bool {
    let v = v.as_bytes();
    v == b"1" || v.eq_ignore_ascii_case(b"true")
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for OffloadService<S>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>,
    ReqBody: Body<Data = Bytes>,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Send + 'static,
{
    type Response = Response<OffloadBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let shared = &self.shared;
        shared.ensure_cleanup();
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok());
        if req.method() == Method::DELETE
            && let Some(id) = session
        {
            shared.sessions.forget(id);
        }
        let pass = !shared.offloader.config().enabled
            || req
                .headers()
                .get(&shared.proxy_header)
                .is_some_and(is_truthy)
            || session.is_some_and(|id| shared.sessions.contains(id));
        if !pass
            && req.method() == Method::GET
            && req.headers().contains_key(LAST_EVENT_ID)
            && let Some(id) = session
        {
            let watched = shared.take_unanswered(id);
            if !watched.is_empty() {
                let session = id.to_owned();
                let inner = self.inner.call(req.map(RequestBody::original));
                return ResponseFuture::resumed(inner, watched, session, shared.clone());
            }
        }
        if pass || req.method() != Method::POST {
            return ResponseFuture::passthrough(self.inner.call(req.map(RequestBody::original)));
        }
        let session = session.map(str::to_owned);
        // The request goes on at once; its chunks are kept as the inner
        // service reads them, and classified when the response arrives.
        // Its answer must be readable: identity, not compressed.
        let mut req = req;
        req.headers_mut()
            .insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        let capture = Capture::default();
        let cap = shared.max_request_bytes;
        let req = req.map(|b| RequestBody::teed(b, cap, capture.clone()));
        ResponseFuture::watching(self.inner.call(req), capture, session, shared.clone())
    }
}
