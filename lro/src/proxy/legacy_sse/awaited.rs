//! The body of the HTTP answer to a request sent over HTTP+SSE: its
//! answer, once the event stream brings it, as one frame; a JSON-RPC error
//! for the request when the stream is gone before it came, or the answer
//! was dropped (over the cap): never a wait without end, and the reason
//! reaches the agent whatever layer the answer goes through.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::oneshot;

use super::super::upstream_body::BoxError;

/// What the stream hands a waiting request: its answer, or why it was
/// dropped.
pub(super) type Delivery = Result<Bytes, String>;

/// The answer to one request, as it comes on the event stream.
pub(super) struct AwaitedAnswer {
    /// `None` once the answer (or the error) was given.
    answer: Option<oneshot::Receiver<Delivery>>,
    /// The request's id, as JSON text.
    id: String,
}

impl AwaitedAnswer {
    pub(super) fn new(answer: oneshot::Receiver<Delivery>, id: String) -> Self {
        AwaitedAnswer {
            answer: Some(answer),
            id,
        }
    }

    /// A JSON-RPC error for the request, saying `why`.
    fn error(&self, why: &str) -> Bytes {
        let id: serde_json::Value = serde_json::from_str(&self.id).unwrap_or_default();
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": why},
        });
        Bytes::from(error.to_string())
    }
}

/// Why an answer cannot come.
const STREAM_CLOSED: &str = "the server's HTTP+SSE event stream closed before the answer came";

impl Body for AwaitedAnswer {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let Some(answer) = self.answer.as_mut() else {
            return Poll::Ready(None);
        };
        let answer = ready!(Pin::new(answer).poll(cx));
        self.answer = None;
        let bytes = match answer {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(why)) => self.error(&why),
            Err(_) => self.error(STREAM_CLOSED),
        };
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }

    fn is_end_stream(&self) -> bool {
        self.answer.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_answer_is_the_body_and_a_gone_stream_an_error_for_the_request() {
        let (tx, rx) = oneshot::channel();
        tx.send(Ok(Bytes::from_static(b"{\"id\":1}"))).unwrap();
        let body = AwaitedAnswer::new(rx, "1".into()).collect().await.unwrap();
        assert_eq!(body.to_bytes(), &b"{\"id\":1}"[..]);
        let error = |body: Bytes| serde_json::from_slice::<serde_json::Value>(&body).unwrap();
        let (tx, rx) = oneshot::channel::<Delivery>();
        drop(tx);
        let e = AwaitedAnswer::new(rx, "\"a\"".into())
            .collect()
            .await
            .unwrap();
        let e = error(e.to_bytes());
        assert_eq!(e["id"], "a");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains("closed before the answer"), "{e}");
        let (tx, rx) = oneshot::channel();
        tx.send(Err("too large".to_owned())).unwrap();
        let e = AwaitedAnswer::new(rx, "7".into()).collect().await.unwrap();
        let e = error(e.to_bytes());
        assert_eq!(
            (e["id"].clone(), e["error"]["message"].clone()),
            (7.into(), "too large".into())
        );
    }
}
