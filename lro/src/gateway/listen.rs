//! Accepting client connections: at most [`Limits::max_connections`] at
//! once, each socket with `TCP_NODELAY` (without it, a keep-alive client
//! waits for a delayed ACK, ~40 ms, whenever an answer goes out in two
//! writes), and accept errors (e.g. out of file descriptors) waited out
//! rather than spun on.
//!
//! [`Limits::max_connections`]: super::Limits::max_connections

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long the accept loop pauses after a failed accept.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A listening socket with a connection cap.
#[derive(Debug)]
pub(crate) struct Listener {
    listener: TcpListener,
    slots: Arc<Semaphore>,
}

/// An accepted client connection; its slot is freed when this is dropped.
#[derive(Debug)]
pub(crate) struct Accepted {
    pub(crate) stream: TcpStream,
    pub(crate) peer: SocketAddr,
    pub(crate) _slot: OwnedSemaphorePermit,
}

impl Listener {
    /// Listens on `listener`, serving at most `max_connections` at once.
    pub(crate) fn new(listener: TcpListener, max_connections: usize) -> Self {
        Listener {
            listener,
            slots: Arc::new(Semaphore::new(max_connections.max(1))),
        }
    }

    /// The address listened on.
    pub(crate) fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next client, once a slot is free, with `TCP_NODELAY` set
    /// (`None` only if the slots were closed, which nothing does).
    pub(crate) async fn accept(&self) -> Option<Accepted> {
        let slot = self.slots.clone().acquire_owned().await.ok()?;
        loop {
            match self.listener.accept().await {
                Ok((stream, peer)) => {
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(target: "gateway", %peer, "TCP_NODELAY: {e}");
                    }
                    return Some(Accepted {
                        stream,
                        peer,
                        _slot: slot,
                    });
                }
                Err(e) => {
                    tracing::warn!(target: "gateway", "accept failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sockets the gateway serves on have `TCP_NODELAY`: the regression
    /// that made every keep-alive request 40 to 90 ms slower.
    #[tokio::test]
    async fn accepted_sockets_have_nodelay() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listener = Listener::new(tcp, 4);
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).await.unwrap();
        let accepted = listener.accept().await.unwrap();
        assert!(accepted.stream.nodelay().unwrap());
    }

    /// Over the cap, the next client is not accepted until a slot is free.
    #[tokio::test]
    async fn the_cap_holds_further_clients_back() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listener = Listener::new(tcp, 1);
        let addr = listener.local_addr().unwrap();
        let _a = TcpStream::connect(addr).await.unwrap();
        let _b = TcpStream::connect(addr).await.unwrap();
        let first = listener.accept().await;
        let second = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(second.is_err(), "a second client was accepted over the cap");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(10), listener.accept()).await;
        assert!(second.is_ok(), "the freed slot was not reused");
    }
}
