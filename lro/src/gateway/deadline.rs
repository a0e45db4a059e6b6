//! Bodies with a clock: a request body must arrive whole within a deadline,
//! and an upstream answer may not go silent longer than an idle timeout.
//! Either ends the body with an error ([`TimedOut`]), which fails that one
//! exchange: the request is refused, or the answer's calls get an error,
//! and the client's connection slot is free again.
//!
//! And a client too slow to read its answers ([`SendMeter`], [`SlowReader`]):
//! the time the answer waits on the client (a piece handed to the
//! connection, the next not yet asked for) is summed; a client that took
//! under the minimum rate over the last [`SEND_RATE_GRACE`] of it is cut
//! off. Time the answer waits on the
//! upstream (an event stream at rest) is not the client's and not counted.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::BoxError;

/// What ended a body whose time ran out.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TimedOut {
    /// The client did not send its whole request body within the deadline.
    #[error("the request body did not arrive within {0:?}")]
    Request(Duration),
    /// The upstream sent nothing of its answer's body for this long.
    #[error("the upstream answer sent nothing for {0:?}")]
    Idle(Duration),
}

pin_project! {
    /// A body that errors once its time runs out: at a fixed deadline
    /// ([`Clock::Deadline`]) or after a silence ([`Clock::Idle`]).
    pub(crate) struct Timed<B> {
        #[pin]
        inner: B,
        #[pin]
        sleep: Sleep,
        clock: Clock,
        done: bool,
    }
}

/// How a [`Timed`] body's time runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Clock {
    /// The whole body within this time from its start.
    Deadline(Duration),
    /// At most this long between two frames (or before the first).
    Idle(Duration),
}

impl<B> Timed<B> {
    pub(crate) fn new(inner: B, clock: Clock) -> Self {
        let (Clock::Deadline(d) | Clock::Idle(d)) = clock;
        Timed {
            inner,
            sleep: tokio::time::sleep(d),
            clock,
            done: false,
        }
    }
}

impl<B> Body for Timed<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        match this.inner.poll_frame(cx) {
            Poll::Ready(Some(frame)) => {
                if let Clock::Idle(d) = this.clock {
                    this.sleep.reset(Instant::now() + *d);
                }
                return Poll::Ready(Some(frame.map_err(Into::into)));
            }
            Poll::Ready(None) => {
                *this.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        match this.sleep.poll(cx) {
            Poll::Ready(()) => {
                *this.done = true;
                let error = match *this.clock {
                    Clock::Deadline(d) => TimedOut::Request(d),
                    Clock::Idle(d) => TimedOut::Idle(d),
                };
                Poll::Ready(Some(Err(error.into())))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Time waited on a slow reader before its rate is judged: a client that
/// stalls briefly (a full window, a paused process) is not cut off.
pub(crate) const SEND_RATE_GRACE: Duration = Duration::from_secs(10);

/// How fast one connection's client takes the answers' bytes: bytes
/// handed over and the time spent waiting for the client to take them.
#[derive(Debug, Default)]
pub(crate) struct SendMeter(std::sync::Mutex<Sent>);

#[derive(Debug, Default)]
struct Sent {
    bytes: u64,
    waited: Duration,
    /// When the last piece was handed over, if the next was not asked yet.
    handed: Option<Instant>,
}

impl SendMeter {
    fn sent(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next piece is asked for: the wait since the last one ends.
    fn asked(&self) {
        let mut s = self.sent();
        if let Some(at) = s.handed.take() {
            s.waited += at.elapsed();
        }
    }

    /// A piece of `bytes` handed to the connection (`last`: of the answer).
    fn handed(&self, bytes: usize, last: bool) {
        let mut s = self.sent();
        s.bytes += bytes as u64;
        s.handed = (!last).then(Instant::now);
    }

    /// Bytes handed over so far, and the time spent waiting on the client.
    fn totals(&self) -> (u64, Duration) {
        let s = self.sent();
        let waited = s.waited + s.handed.map_or(Duration::ZERO, |at| at.elapsed());
        (s.bytes, waited)
    }
}

/// Judges a [`SendMeter`] over the last [`SEND_RATE_GRACE`] of waiting on
/// the client (not since the start: the first bytes fill the socket's
/// buffers at once, whatever the client's pace).
#[derive(Debug)]
pub(crate) struct SlowReader {
    min_rate: u64,
    /// `(bytes, waited)` as last looked at, oldest first.
    seen: std::collections::VecDeque<(u64, Duration)>,
}

impl SlowReader {
    pub(crate) fn new(min_rate: u64) -> Self {
        SlowReader {
            min_rate,
            seen: std::collections::VecDeque::new(),
        }
    }

    /// Whether, over the last [`SEND_RATE_GRACE`] the answers waited on
    /// it, the client took under `min_rate` bytes a second.
    pub(crate) fn too_slow(&mut self, meter: &SendMeter) -> bool {
        let (bytes, waited) = meter.totals();
        if self.seen.back().is_none_or(|&(_, w)| w < waited) {
            self.seen.push_back((bytes, waited));
        }
        // The newest look at least the grace of waiting ago, and no older.
        while self
            .seen
            .get(1)
            .is_some_and(|&(_, w)| waited - w >= SEND_RATE_GRACE)
        {
            self.seen.pop_front();
        }
        if self.seen.len() > 4096 {
            self.seen.pop_front();
        }
        let Some(&(then_bytes, then_waited)) = self.seen.front() else {
            return false;
        };
        let span = waited - then_waited;
        span >= SEND_RATE_GRACE
            && ((bytes - then_bytes) as f64) < self.min_rate as f64 * span.as_secs_f64()
    }
}

pin_project! {
    /// An answer's body counted by a [`SendMeter`].
    pub(crate) struct Metered<B> {
        #[pin]
        inner: B,
        meter: std::sync::Arc<SendMeter>,
    }
}

impl<B> Metered<B> {
    pub(crate) fn new(inner: B, meter: std::sync::Arc<SendMeter>) -> Self {
        Metered { inner, meter }
    }
}

impl<B: Body<Data = Bytes>> Body for Metered<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        this.meter.asked();
        let polled = this.inner.as_mut().poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            // The last piece is not waited on: no next one will be asked
            // for (the connection then waits for the next request).
            let last = this.inner.is_end_stream();
            this.meter.handed(data.len(), last);
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

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A body that sends one frame, then nothing, never ending.
    struct OneThenSilent(bool);

    impl Body for OneThenSilent {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            if std::mem::replace(&mut self.0, true) {
                return Poll::Pending;
            }
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))))
        }
    }

    fn one_then_silent() -> OneThenSilent {
        OneThenSilent(false)
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_body_ends_with_an_error_after_the_idle_time() {
        let mut body = Box::pin(Timed::new(
            one_then_silent(),
            Clock::Idle(Duration::from_secs(5)),
        ));
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "x");
        let started = Instant::now();
        let error = body.frame().await.unwrap().unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert!(error.to_string().contains("sent nothing"), "{error}");
        assert!(body.frame().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_is_judged_on_its_last_seconds_of_keeping_the_answer_waiting() {
        let (meter, mut judge) = (SendMeter::default(), SlowReader::new(8192));
        let second = || tokio::time::advance(Duration::from_secs(1));
        // 4 MB into the socket's buffers at once, then the upstream rests
        // a minute: the client kept nothing waiting.
        meter.handed(4 << 20, false);
        meter.asked();
        for _ in 0..60 {
            second().await;
            assert!(!judge.too_slow(&meter));
        }
        // Then 1 KB a second taken, the answer waiting on the client: past
        // the grace, under 8 KB/s over the last seconds (4 MB long ago do
        // not count).
        let mut cut = None;
        for n in 0..30 {
            meter.handed(1024, false);
            second().await;
            meter.asked();
            if judge.too_slow(&meter) {
                cut = Some(n);
                break;
            }
        }
        assert_eq!(cut, Some(SEND_RATE_GRACE.as_secs() as usize - 1));
        // The last piece of an answer is not waited on.
        let (meter, mut judge) = (SendMeter::default(), SlowReader::new(8192));
        meter.handed(151, true);
        for _ in 0..30 {
            second().await;
            assert!(
                !judge.too_slow(&meter),
                "an idle connection after a whole answer"
            );
        }
        // A client taking 64 KB a second never is.
        let (meter, mut judge) = (SendMeter::default(), SlowReader::new(8192));
        for _ in 0..60 {
            meter.handed(64 << 10, false);
            second().await;
            meter.asked();
            assert!(!judge.too_slow(&meter));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_whole_body_in_time_passes_as_it_came() {
        let body = http_body_util::Full::new(Bytes::from_static(b"whole"));
        let body = Timed::new(body, Clock::Deadline(Duration::from_secs(1)));
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(bytes, "whole");
    }
}
