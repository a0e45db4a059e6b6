//! The signals that stop the gateway gracefully.

/// Resolves on the first SIGINT (Ctrl-C) or SIGTERM; if the signal handlers
/// cannot be installed, on Ctrl-C only, or never.
pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => tracing::info!(target: "gateway", "SIGTERM: shutting down"),
                _ = tokio::signal::ctrl_c() => tracing::info!(target: "gateway", "SIGINT: shutting down"),
            }
            return;
        }
    }
    if tokio::signal::ctrl_c().await.is_ok() {
        tracing::info!(target: "gateway", "interrupted: shutting down");
    } else {
        std::future::pending::<()>().await;
    }
}
