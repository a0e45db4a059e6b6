//! A forward HTTP proxy on loopback, the test peer of `--enable-proxy`: it
//! tunnels `CONNECT host:port` and forwards absolute-form requests
//! (`POST http://host:port/path`), each on to the address its own name
//! table gives the host (a name the test process itself cannot resolve,
//! so a request that bypasses the proxy fails), or to a loopback address
//! given as such. Optionally it requires `Proxy-Authorization: Basic`. It
//! records what it was asked for, one `METHOD TARGET` per request.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// The host name only the proxy resolves.
pub(crate) const SERVER_NAME: &str = "mcp.lro-test.internal";

/// The body of the proxy's answers.
type Body = BoxBody<Bytes, hyper::Error>;

/// A running forward proxy.
pub(crate) struct ForwardProxy {
    /// Where it listens.
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ForwardProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ForwardProxy {
    /// `METHOD TARGET` of each request it was asked for, in order.
    pub(crate) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// Its URL, with `user:password@` when given (as `HTTPS_PROXY` names it).
    pub(crate) fn url(&self, credentials: Option<&str>) -> String {
        match credentials {
            Some(c) => format!("http://{c}@{}", self.addr),
            None => format!("http://{}", self.addr),
        }
    }
}

/// What every connection shares.
struct Rules {
    names: HashMap<String, SocketAddr>,
    /// The `Proxy-Authorization` value required, if any.
    required: Option<String>,
    seen: Arc<Mutex<Vec<String>>>,
}

/// Starts a proxy resolving `names` (host → address); `required`: the
/// exact `Proxy-Authorization` it wants.
pub(crate) async fn forward_proxy(
    names: &[(&str, SocketAddr)],
    required: Option<&str>,
) -> ForwardProxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rules = Arc::new(Rules {
        names: names.iter().map(|(n, a)| ((*n).to_owned(), *a)).collect(),
        required: required.map(str::to_owned),
        seen: seen.clone(),
    });
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let rules = rules.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let rules = rules.clone();
                    async move { Ok::<_, hyper::Error>(handle(&rules, request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    ForwardProxy { addr, seen, task }
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Empty::new().map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    response
}

/// One request to the proxy: checked, recorded, tunnelled or forwarded.
async fn handle(rules: &Rules, mut request: Request<Incoming>) -> Response<Body> {
    let target = request.uri().to_string();
    rules
        .seen
        .lock()
        .unwrap()
        .push(format!("{} {target}", request.method()));
    if let Some(required) = &rules.required {
        let given = request.headers().get("proxy-authorization");
        if given.is_none_or(|g| g.as_bytes() != required.as_bytes()) {
            let mut refused = empty(StatusCode::PROXY_AUTHENTICATION_REQUIRED);
            refused.headers_mut().insert(
                "proxy-authenticate",
                "Basic realm=\"test\"".parse().unwrap(),
            );
            return refused;
        }
    }
    let (Some(host), port) = (request.uri().host(), request.uri().port_u16()) else {
        return empty(StatusCode::BAD_REQUEST);
    };
    let Some(origin) = resolve(rules, host, port.unwrap_or(80)) else {
        return empty(StatusCode::BAD_GATEWAY);
    };
    if request.method() == Method::CONNECT {
        let upgrade = hyper::upgrade::on(&mut request);
        tokio::spawn(async move {
            let (Ok(upgraded), Ok(mut tcp)) =
                (upgrade.await, tokio::net::TcpStream::connect(origin).await)
            else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut tcp).await;
        });
        return empty(StatusCode::OK);
    }
    forward(request, origin).await
}

/// The address of `host`: from the name table, or a loopback address.
fn resolve(rules: &Rules, host: &str, port: u16) -> Option<SocketAddr> {
    if let Some(addr) = rules.names.get(host) {
        return Some(*addr);
    }
    let ip: IpAddr = host.trim_matches(['[', ']']).parse().ok()?;
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}

/// An absolute-form request sent on to `origin` in origin form, without
/// the proxy's own headers; the answer streamed back.
async fn forward(mut request: Request<Incoming>, origin: SocketAddr) -> Response<Body> {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/".to_owned(), ToString::to_string);
    *request.uri_mut() = path.parse().unwrap();
    request.headers_mut().remove("proxy-authorization");
    request.headers_mut().remove("proxy-connection");
    let Ok(tcp) = tokio::net::TcpStream::connect(origin).await else {
        return empty(StatusCode::BAD_GATEWAY);
    };
    let Ok((mut sender, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await
    else {
        return empty(StatusCode::BAD_GATEWAY);
    };
    tokio::spawn(conn);
    match sender.send_request(request).await {
        Ok(response) => response.map(BodyExt::boxed),
        Err(_) => empty(StatusCode::BAD_GATEWAY),
    }
}
