//! [`HistoryOffloadService`]: which requests are chat requests, and the
//! call.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request};
use http_body::Body;
use tower_service::Service;

use super::events::FallbackReason;
use super::future::HistoryResponseFuture;
use super::rewrite::{declared_length, rewrite_then_call};
use super::state::HistoryShared;
use crate::history::ChatFormat;
use crate::offload::RequestBody;
use crate::offload::encoding;
use crate::offload::is_json;

/// Middleware rewriting the message history of chat requests before the
/// inner service sees them.
///
/// Created by [`HistoryOffloadLayer`](crate::history::HistoryOffloadLayer) (see
/// there what it does).
#[derive(Clone, Debug)]
pub struct HistoryOffloadService<S> {
    inner: S,
    shared: Arc<HistoryShared>,
}

impl<S> HistoryOffloadService<S> {
    pub(crate) fn from_shared(inner: S, shared: Arc<HistoryShared>) -> Self {
        HistoryOffloadService { inner, shared }
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

/// What to do with a request.
enum Plan {
    /// Not a chat request: on at once, never read.
    Pass,
    /// A chat request that cannot be read: on at once, with an event.
    FallBack(FallbackReason),
    /// A chat request to rewrite, in this format (`None`: detected).
    Rewrite(Option<ChatFormat>),
}

/// Whether and how `req` is rewritten.
fn plan<B>(req: &Request<B>, shared: &HistoryShared) -> Plan {
    if req.method() != Method::POST {
        return Plan::Pass;
    }
    let format = ChatFormat::of_path(req.uri().path());
    if format.is_none() && !is_json(req.headers()) {
        return Plan::Pass;
    }
    if let Some(coding) = encoding(req.headers()) {
        return Plan::FallBack(FallbackReason::Encoded(coding));
    }
    let limit = shared.max_body_bytes;
    if declared_length(req.headers()).is_some_and(|n| n > limit as u64) {
        return Plan::FallBack(FallbackReason::TooLarge { limit });
    }
    Plan::Rewrite(format)
}

/// The inner service must be `Clone` (and `Send`): a chat request is read
/// before the readied service is called, a clone taking its place, as
/// tower's own middlewares do.
impl<S, ReqBody> Service<Request<ReqBody>> for HistoryOffloadService<S>
where
    S: Service<Request<RequestBody<ReqBody>>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: std::fmt::Display + Send,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = HistoryResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let format = match plan(&req, &self.shared) {
            Plan::Pass => return self.pass(req),
            Plan::FallBack(reason) => {
                self.shared.events.fell_back(req.uri().path(), reason);
                return self.pass(req);
            }
            Plan::Rewrite(format) => format,
        };
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let step = rewrite_then_call(inner, self.shared.clone(), req, format);
        HistoryResponseFuture::rewriting(Box::pin(step))
    }
}

impl<S> HistoryOffloadService<S> {
    /// `req` on to the inner service at once, its body untouched.
    fn pass<ReqBody>(&mut self, req: Request<ReqBody>) -> HistoryResponseFuture<S::Future>
    where
        S: Service<Request<RequestBody<ReqBody>>>,
        ReqBody: Body,
    {
        HistoryResponseFuture::direct(self.inner.call(req.map(RequestBody::original)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_the_format() {
        let cases = [
            ("/v1/chat/completions", Some(ChatFormat::OpenAiChat)),
            (
                "/openai/deployments/x/chat/completions/",
                Some(ChatFormat::OpenAiChat),
            ),
            ("/v1/messages", Some(ChatFormat::AnthropicMessages)),
            ("/v1/responses", Some(ChatFormat::OpenAiResponses)),
            ("/v1/embeddings", None),
            ("/v1/models", None),
        ];
        for (path, format) in cases {
            assert_eq!(ChatFormat::of_path(path), format, "{path}");
        }
    }
}
