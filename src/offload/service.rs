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
use super::intercept::{intercept, is_json};
use super::request_body::{Capture, RequestBody};
use super::state::{Extra, SESSION_HEADER, Shared};
use crate::config::OffloadConfig;
use crate::engine::Offloader;

/// Middleware that offloads large MCP tool results to JSONL files.
///
/// Created by [`OffloadLayer`](crate::offload::OffloadLayer) (see there what it
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
    /// [`OffloadLayer::builder`](crate::offload::OffloadLayer::builder) for the
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

/// The inner service must be `Clone` (and `Send`): a request the layer
/// reads first (see [`OffloadLayer`](crate::offload::OffloadLayer), "Remote
/// clients") is handed to the readied service later, a clone taking its
/// place, as tower's own middlewares do.
impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for OffloadService<S>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    ReqBody: Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: Send,
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
        let shared = self.shared.clone();
        shared.ensure_cleanup();
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if req.method() == Method::DELETE
            && let Some(id) = &session
        {
            shared.sessions.forget(id);
            shared.offloaded_in.take(id);
        }
        let pass = !shared.offloader.config().enabled
            || req
                .headers()
                .get(&shared.proxy_header)
                .is_some_and(is_truthy)
            || session
                .as_deref()
                .is_some_and(|id| shared.sessions.contains(id));
        if !pass
            && req.method() == Method::GET
            && req.headers().contains_key(LAST_EVENT_ID)
            && let Some(id) = session
        {
            return self.resume(req, id, shared);
        }
        if pass || req.method() != Method::POST {
            return ResponseFuture::passthrough(self.inner.call(req.map(RequestBody::original)));
        }
        self.post(req, session, shared)
    }
}

impl<S> OffloadService<S> {
    /// A `GET` stream of `session` resumed with `Last-Event-ID`: it may
    /// replay results whose own stream went before they came.
    fn resume<ReqBody, ResBody>(
        &mut self,
        req: Request<ReqBody>,
        session: String,
        shared: Arc<Shared>,
    ) -> ResponseFuture<S::Future, ResBody>
    where
        S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        ReqBody: Body<Data = Bytes> + Send + 'static,
        ReqBody::Error: Send,
        ResBody: Body<Data = Bytes> + Send + 'static,
        ResBody::Error: Send + 'static,
    {
        let mut watched = shared.take_unanswered(&session);
        let (parts, body) = req.into_parts();
        if shared.serves() {
            let caller = shared.serving.caller(&parts);
            Extra::from_caller(caller).apply(&mut watched);
        }
        let req = Request::from_parts(parts, RequestBody::original(body));
        if watched.is_empty() {
            return ResponseFuture::passthrough(self.inner.call(req));
        }
        let inner = self.inner.call(req);
        ResponseFuture::resumed(inner, watched, session, shared)
    }

    /// A `POST`: read first when the layer serves offloaded data and the
    /// body is JSON (see `serve`), else teed to the inner service at once.
    fn post<ReqBody, ResBody>(
        &mut self,
        req: Request<ReqBody>,
        session: Option<String>,
        shared: Arc<Shared>,
    ) -> ResponseFuture<S::Future, ResBody>
    where
        S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        ReqBody: Body<Data = Bytes> + Send + 'static,
        ReqBody::Error: Send,
        ResBody: Body<Data = Bytes> + Send + 'static,
        ResBody::Error: Send + 'static,
    {
        let (mut parts, body) = req.into_parts();
        // Its answer must be readable: identity, not compressed.
        parts
            .headers
            .insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        let mut extra = Extra::default();
        if shared.serves() {
            let caller = shared.serving.caller(&parts);
            let over_cap = parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                .is_some_and(|n| n > shared.max_request_bytes as u64);
            // A body over the cap is never the layer's: it streams on at once.
            if is_json(&parts.headers) && !over_cap {
                let clone = self.inner.clone();
                let inner = std::mem::replace(&mut self.inner, clone);
                let req = Request::from_parts(parts, body);
                let step = intercept(inner, shared, req, caller, session);
                return ResponseFuture::intercepting(Box::pin(step));
            }
            extra = Extra::from_caller(caller);
        }
        // The request goes on at once; its chunks are kept as the inner
        // service reads them, and classified when the response arrives.
        let capture = Capture::default();
        let cap = shared.max_request_bytes;
        let req = Request::from_parts(parts, RequestBody::teed(body, cap, capture.clone()));
        let inner = self.inner.call(req);
        ResponseFuture::watching(inner, capture, session, extra, shared)
    }
}
