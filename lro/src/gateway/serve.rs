//! The gateway's serve loop: accept, serve each connection with hyper,
//! and on shutdown let requests in flight finish, then stop the cleanup
//! task.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use super::Gateway;
use super::deadline::{Clock, Metered, SendMeter, SlowReader, Timed};
use super::listen::Accepted;
use tower_lro::cleanup::CleanupHandle;

impl Gateway {
    /// Serves until `shutdown` resolves (e.g. [`shutdown_signal`]), then
    /// stops accepting, serves the open connections for [`DRAIN`] more,
    /// lets requests in flight finish (at most [`Limits::shutdown_grace`]
    /// in all, then their connections are closed) and stops the cleanup
    /// task.
    ///
    /// [`shutdown_signal`]: super::shutdown_signal
    /// [`Limits::shutdown_grace`]: super::Limits::shutdown_grace
    pub(crate) async fn serve(self, shutdown: impl Future<Output = ()>) {
        let http = self.http1();
        let graceful = GracefulShutdown::new();
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut shutdown => break,
            };
            let Some(accepted) = accepted else { break };
            connections.spawn(self.connection(&http, &graceful, accepted));
            while connections.try_join_next().is_some() {}
        }
        let Gateway {
            listener,
            limits,
            cleanup,
            ..
        } = self;
        drop(listener);
        finish(limits.shutdown_grace, cleanup, graceful, connections).await;
    }

    /// hyper's HTTP/1.1 server settings from the limits.
    fn http1(&self) -> http1::Builder {
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read_timeout)
            .max_header_size(self.limits.max_header_bytes)
            .keep_alive(true);
        http
    }

    /// One client connection, watched for the graceful shutdown.
    fn connection(
        &self,
        http: &http1::Builder,
        graceful: &GracefulShutdown,
        accepted: Accepted,
    ) -> impl Future<Output = ()> + Send + 'static {
        let router = self.router.clone();
        let open = OpenConnection::new(self.router.metrics.connections_open.clone());
        let peer = accepted.peer;
        let body_deadline = Clock::Deadline(self.limits.request_body_timeout);
        let meter = Arc::new(SendMeter::default());
        let metered = meter.clone();
        let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
            let router = router.clone();
            let meter = metered.clone();
            let request = request.map(|body| Timed::new(body, body_deadline));
            async move {
                let response = router.handle(peer, request).await;
                Ok::<_, std::convert::Infallible>(response.map(|body| Metered::new(body, meter)))
            }
        });
        let min_rate = self.limits.min_send_rate;
        let (stream, cutter) = match min_rate {
            0 => (Some(accepted.stream), None),
            _ => with_cutter(accepted.stream),
        };
        let slot = accepted._slot;
        let served = stream
            .map(|stream| graceful.watch(http.serve_connection(TokioIo::new(stream), service)));
        async move {
            let Some(served) = served else { return };
            tokio::select! {
                ended = served => {
                    if let Err(e) = ended {
                        tracing::debug!(target: "gateway", %peer, "connection ended: {e}");
                    }
                }
                () = too_slow(&meter, min_rate) => {
                    tracing::warn!(target: "gateway", %peer, min_rate, "a client read its answer too slowly: its connection is reset");
                    // What the socket still holds is dropped, not sent.
                    if let Some(cutter) = cutter {
                        let _ = cutter.set_zero_linger();
                    }
                }
            }
            drop(slot);
            drop(open);
        }
    }
}

/// `stream`, and a second handle on its socket to reset it by (closing
/// both with a zero linger drops what the kernel still holds for a slow
/// reader, where a plain close would send it on). `None` for the stream
/// when the socket cannot be handed back; no cutter when it cannot be
/// cloned (the connection is then closed the plain way).
fn with_cutter(stream: TcpStream) -> (Option<TcpStream>, Option<TcpStream>) {
    let Ok(std) = stream.into_std() else {
        return (None, None);
    };
    let dup = std
        .try_clone()
        .ok()
        .and_then(|d| TcpStream::from_std(d).ok());
    (TcpStream::from_std(std).ok(), dup)
}

/// Ends once the connection's client reads under `min_rate` bytes a second
/// (never with `0`), looked at every second.
async fn too_slow(meter: &SendMeter, min_rate: u64) {
    if min_rate == 0 {
        return std::future::pending().await;
    }
    let mut judge = SlowReader::new(min_rate);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if judge.too_slow(meter) {
            return;
        }
    }
}

/// One open client connection in the `connections open` gauge, until
/// dropped (also when its task is aborted at the end of the grace period).
struct OpenConnection(prometheus_client::metrics::gauge::Gauge);

impl OpenConnection {
    fn new(gauge: prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        OpenConnection(gauge)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// How long the open connections are still served once the gateway
/// stops accepting. A request a client wrote on a kept-alive connection
/// just before the signal may still sit unread in its socket (a loaded
/// gateway reads it late), and closing that connection as idle would lose
/// it; in this time it is read and answered. Longer: fewer such requests
/// refused, and every shutdown with connections open takes that much
/// longer. Under 200 clients on 2 cores, requests written 170–200 ms
/// before the signal were still unread at it.
pub(crate) const DRAIN: Duration = Duration::from_millis(500);

/// After the last accept: the open connections served for [`DRAIN`], then
/// requests in flight finish within the grace period (the drain counted),
/// then the rest is cut; the cleanup task stops.
async fn finish(
    grace: Duration,
    cleanup: Vec<CleanupHandle>,
    graceful: GracefulShutdown,
    mut connections: JoinSet<()>,
) {
    let drain = DRAIN.min(grace);
    if !connections.is_empty() {
        tokio::time::sleep(drain).await;
    }
    if tokio::time::timeout(grace - drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(target: "gateway", ?grace, "requests still running after the grace period; closing their connections");
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    for cleanup in cleanup {
        cleanup.shutdown().await;
    }
    tracing::info!(target: "gateway", "stopped");
}
