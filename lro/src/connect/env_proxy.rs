//! `--enable-proxy`: upstream connections through the HTTP proxy the
//! environment names, read as curl and mcp-remote read it (`HTTPS_PROXY`,
//! `HTTP_PROXY`, `ALL_PROXY`, their lower-case forms, `NO_PROXY`).
//!
//! hyper-util's [`Matcher`] picks the proxy of each server (or none, for a
//! `NO_PROXY` host); an `https://` server is then reached through a
//! `CONNECT` tunnel (hyper-util's [`Tunnel`], the proxy's credentials in its
//! `Proxy-Authorization`), TLS to the server inside it; an `http://` server
//! through a plain connection to the proxy, each request in absolute form
//! (the connection says it is proxied) with `Proxy-Authorization` added by
//! [`UpstreamClient::request`](super::UpstreamClient::request).

use std::error::Error as StdError;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use http::header::HeaderValue;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower_service::Service;

use super::ConnectError;

/// An error of a connection attempt.
type BoxError = Box<dyn StdError + Send + Sync>;

/// The environment variables a proxy is named in (the matcher's).
const PROXY_VARIABLES: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The proxy rules of the environment, when proxies are enabled; a proxy
/// URL that is not `http://` (a SOCKS or TLS proxy) is refused by name.
pub(super) fn matcher(enabled: bool) -> Result<Option<Arc<Matcher>>, ConnectError> {
    if !enabled {
        return Ok(None);
    }
    for name in PROXY_VARIABLES {
        let Ok(value) = std::env::var(name) else {
            continue;
        };
        let value = value.trim();
        if let Some((scheme, _)) = value.split_once("://")
            && !scheme.eq_ignore_ascii_case("http")
        {
            return Err(ConnectError::ProxyScheme {
                variable: name,
                scheme: scheme.to_owned(),
            });
        }
    }
    Ok(Some(Arc::new(Matcher::from_env())))
}

/// The `Proxy-Authorization` an `http://` request to `uri` carries: the
/// credentials of the proxy's URL, when it goes through one. (An
/// `https://` request never does: the tunnel carried them, the server must
/// not see them.)
pub(super) fn http_proxy_auth(matcher: &Matcher, uri: &Uri) -> Option<HeaderValue> {
    if uri.scheme_str() != Some("http") {
        return None;
    }
    matcher.intercept(uri)?.basic_auth().cloned()
}

/// The TCP connector, through the environment's proxy when there is one
/// for the server.
#[derive(Clone)]
pub(crate) struct ProxyConnector {
    tcp: HttpConnector,
    matcher: Option<Arc<Matcher>>,
}

impl ProxyConnector {
    pub(super) fn new(tcp: HttpConnector, matcher: Option<Arc<Matcher>>) -> Self {
        ProxyConnector { tcp, matcher }
    }
}

impl Service<Uri> for ProxyConnector {
    type Response = ProxyStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<ProxyStream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let proxy = self.matcher.as_ref().and_then(|m| m.intercept(&dst));
        let mut tcp = self.tcp.clone();
        Box::pin(async move {
            let Some(proxy) = proxy else {
                let io = tcp.call(dst).await?;
                return Ok(ProxyStream::new(io, false));
            };
            if dst.scheme_str() == Some("https") {
                let mut tunnel = Tunnel::new(proxy.uri().clone(), tcp);
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                std::future::poll_fn(|cx| tunnel.poll_ready(cx)).await?;
                let io = tunnel.call(dst).await?;
                Ok(ProxyStream::new(io, false))
            } else {
                let io = tcp.call(proxy.uri().clone()).await?;
                Ok(ProxyStream::new(io, true))
            }
        })
    }
}

/// A TCP connection, to the server or to a proxy; `absolute_form` when it
/// goes to a proxy that forwards plain `http` requests (which then carry
/// the server's full URL).
pub(crate) struct ProxyStream {
    io: TokioIo<TcpStream>,
    absolute_form: bool,
}

impl ProxyStream {
    fn new(io: TokioIo<TcpStream>, absolute_form: bool) -> Self {
        ProxyStream { io, absolute_form }
    }

    /// The socket.
    #[cfg(test)]
    pub(super) fn tcp(&self) -> &TcpStream {
        self.io.inner()
    }
}

impl Connection for ProxyStream {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.absolute_form)
    }
}

impl Read for ProxyStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for ProxyStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}
