//! The body of the HTTP answer to a request sent over HTTP+SSE: its
//! answer, once the event stream brings it, as one frame; an error when
//! the stream is gone before it came, or the answer was dropped (over the
//! cap): the relay then owes the agent a JSON-RPC error, never a wait
//! without end.

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
}

impl AwaitedAnswer {
    pub(super) fn new(answer: oneshot::Receiver<Delivery>) -> Self {
        AwaitedAnswer {
            answer: Some(answer),
        }
    }
}

/// Why an answer cannot come.
#[derive(Debug, thiserror::Error)]
#[error("the server's HTTP+SSE event stream closed before the answer came")]
struct StreamClosed;

/// Why an answer was dropped.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Dropped(String);

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
        Poll::Ready(Some(match answer {
            Ok(Ok(bytes)) => Ok(Frame::data(bytes)),
            Ok(Err(why)) => Err(Box::new(Dropped(why))),
            Err(_) => Err(Box::new(StreamClosed)),
        }))
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
    async fn the_answer_is_the_body_and_a_gone_stream_an_error() {
        let (tx, rx) = oneshot::channel();
        tx.send(Ok(Bytes::from_static(b"{\"id\":1}"))).unwrap();
        let body = AwaitedAnswer::new(rx).collect().await.unwrap();
        assert_eq!(body.to_bytes(), &b"{\"id\":1}"[..]);
        let (tx, rx) = oneshot::channel::<Delivery>();
        drop(tx);
        let e = AwaitedAnswer::new(rx).collect().await.unwrap_err();
        assert!(e.to_string().contains("closed before the answer"), "{e}");
        let (tx, rx) = oneshot::channel();
        tx.send(Err("too large".to_owned())).unwrap();
        let e = AwaitedAnswer::new(rx).collect().await.unwrap_err();
        assert_eq!(e.to_string(), "too large");
    }
}
