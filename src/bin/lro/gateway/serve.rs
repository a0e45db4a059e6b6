//! The gateway's serve loop: accept, serve each connection with hyper,
//! and on shutdown let requests in flight finish, then stop the cleanup
//! task.

use std::future::Future;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::task::JoinSet;

use super::Gateway;
use super::listen::Accepted;
use tower_lro::cleanup::CleanupHandle;

impl Gateway {
    /// Serves until `shutdown` resolves (e.g. [`shutdown_signal`]), then
    /// stops accepting, lets requests in flight finish (at most
    /// [`Limits::shutdown_grace`], then their connections are closed) and
    /// stops the cleanup task.
    ///
    /// [`shutdown_signal`]: super::shutdown_signal
    /// [`Limits::shutdown_grace`]: super::Limits::shutdown_grace
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
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
        let service = hyper::service::service_fn(move |request| {
            let router = router.clone();
            async move { Ok::<_, std::convert::Infallible>(router.handle(peer, request).await) }
        });
        let served = graceful.watch(http.serve_connection(TokioIo::new(accepted.stream), service));
        let slot = accepted._slot;
        async move {
            if let Err(e) = served.await {
                tracing::debug!(target: "gateway", %peer, "connection ended: {e}");
            }
            drop(slot);
            drop(open);
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

/// After the last accept: requests in flight finish within the grace
/// period, then the rest is cut; the cleanup task stops.
async fn finish(
    grace: Duration,
    cleanup: Vec<CleanupHandle>,
    graceful: GracefulShutdown,
    mut connections: JoinSet<()>,
) {
    if tokio::time::timeout(grace, graceful.shutdown())
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
