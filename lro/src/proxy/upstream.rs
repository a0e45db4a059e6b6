//! The proxy's HTTP requests to the server: the session's headers, the
//! token, `Accept`, and the LRO proxy announcement on the way (the
//! `lro-proxy` header, `clientInfo.proxy` in `initialize`); and
//! [`Upstream`], the service behind the offload layer that sends them.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tower_lro::offload::RequestBody;
use tower_service::Service;

use super::upstream_body::UpstreamBody;
use super::{SESSION_HEADER, VERSION_HEADER};
use super::{Shared, within};
use crate::announce::{announce_in_headers, announce_in_initialize};
use crate::auth::Auth;
use crate::connect::failure_kind;

/// Why a request upstream got no answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum UpstreamError {
    /// The connection failed.
    #[error("{0}")]
    Client(#[from] hyper_util::client::legacy::Error),
    /// No status and headers within `--headers-timeout`.
    #[error("no answer in time")]
    Timeout,
    /// A sign-in was needed and failed.
    #[error("{0}")]
    Auth(String),
    /// The transport failed (see [`transport`](super::transport)).
    #[error("{0}")]
    Transport(String),
}

/// A short, address-free account of an upstream error.
pub(super) fn error_kind(e: &UpstreamError) -> &'static str {
    match e {
        UpstreamError::Client(e) => failure_kind(e),
        UpstreamError::Timeout => "no answer within the headers timeout",
        UpstreamError::Auth(_) => "the sign-in failed",
        UpstreamError::Transport(_) => "the transport failed",
    }
}

impl Shared {
    /// Sends a request to the server, registering as an LRO proxy on the
    /// way (the header, and `clientInfo.proxy` in `initialize`).
    pub(super) async fn send_upstream(
        &self,
        mut parts: http::request::Parts,
        bytes: Bytes,
    ) -> Result<Response<Incoming>, UpstreamError> {
        self.touch();
        let bytes = if self.announce {
            announce_in_headers(&mut parts.headers);
            announce_in_initialize(bytes)
        } else {
            bytes
        };
        let request = self
            .client
            .request(Request::from_parts(parts, Full::new(bytes)));
        match within(self.headers_timeout, request).await {
            Some(answer) => Ok(answer?),
            None => Err(UpstreamError::Timeout),
        }
    }

    /// A POST of one message, with the session's headers.
    pub(super) fn post(&self, body: Bytes) -> Request<Full<Bytes>> {
        self.request(Method::POST, body)
    }

    pub(super) fn request(&self, method: Method, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method.clone();
        *request.uri_mut() = self.upstream.clone();
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        if let Some(bearer) = self.auth.as_ref().and_then(Auth::bearer) {
            headers.insert(AUTHORIZATION, bearer);
        }
        let accept = if method == Method::GET {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if method == Method::POST {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = &session.id {
            headers.insert(SESSION_HEADER, id.clone());
        }
        if let Some(version) = &session.version {
            headers.insert(VERSION_HEADER, version.clone());
        }
        request
    }
}

/// The service behind the layer: sends to the server, registering as an
/// LRO proxy on the way.
#[derive(Clone)]
pub(super) struct Upstream(pub(super) Arc<Shared>);

impl Service<Request<RequestBody<Full<Bytes>>>> for Upstream {
    type Response = Response<UpstreamBody>;
    type Error = UpstreamError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<RequestBody<Full<Bytes>>>) -> Self::Future {
        let shared = self.0.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            // Our own Full body inside the tee: it cannot fail.
            let bytes = body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            shared.send_message(parts, bytes).await
        })
    }
}
