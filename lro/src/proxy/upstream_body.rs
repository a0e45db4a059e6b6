//! The body of an answer from upstream, whichever the transport: a
//! streamable-HTTP answer's own, or an answer awaited on the HTTP+SSE
//! event stream ([`legacy_sse`](super::legacy_sse)).

use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;

/// Any error of a body from upstream.
pub(super) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body of an answer from upstream, whichever the transport.
pub(super) type UpstreamBody = UnsyncBoxBody<Bytes, BoxError>;

/// The body of a streamable-HTTP answer, as an [`UpstreamBody`].
pub(super) fn boxed(response: Response<Incoming>) -> Response<UpstreamBody> {
    response.map(|body| body.map_err(BoxError::from).boxed_unsync())
}
