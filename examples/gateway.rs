//! A stand-alone LRO gateway: a reverse proxy that puts `OffloadLayer` in
//! front of any streamable-http MCP server, whatever it is written in.
//!
//! ```text
//! cargo run --release --example gateway -- --upstream http://127.0.0.1:8000/mcp --listen 127.0.0.1:9000
//! ```
//!
//! Every request on the upstream URL's path (`POST`, `GET`, `DELETE`, ...)
//! is forwarded to the upstream with its headers (`Mcp-Session-Id`,
//! `MCP-Protocol-Version`, `Accept`, `Content-Type`, `Last-Event-ID`, ...)
//! minus the hop-by-hop ones, and the bodies are streamed both ways: an SSE
//! stream's events reach the client as the upstream sends them. Responses to
//! `tools/call` go through the layer on the way back, so large results become
//! a descriptor and a JSONL file in `--output-dir`. Other paths get `404`; an
//! unreachable upstream gets `502`. One log line per request goes to stderr
//! (`RUST_LOG` filters, default `info`). Plain `http://` upstreams only.
//!
//! Remote agents cannot open the files, so the gateway also serves them
//! over MCP (the layer does it): `tools/list` gains `lro_extract` and
//! `lro_list`, whose calls the gateway answers itself (recipes, custom jq
//! queries, paging), and `resources/read` of `lro://files/{name}` returns a
//! file; each file is readable only in the MCP session that produced it.
//! `ATLATL_PROMPT__OFFLOAD__EXTRACTION=false` turns this off.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri, Version};
use http_body::Body;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tower::{Layer, Service, ServiceExt};
use tower_lro::{OffloadLayer, OffloadService};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body type flowing through the gateway in both directions.
type GwBody = UnsyncBoxBody<Bytes, BoxError>;

const USAGE: &str = "\
tower-lro gateway: Large Result Offloading in front of any streamable-http MCP server

USAGE:
    gateway --upstream URL --listen ADDR [OPTIONS]

REQUIRED:
    --upstream URL            the upstream MCP endpoint, e.g. http://127.0.0.1:8000/mcp
                              (http only); the gateway serves the same path
    --listen ADDR             where to listen, e.g. 127.0.0.1:9000 (port 0: any free port)

OPTIONS:
    --threshold-tokens N      offload tool results estimated over N tokens (default 1600)
    --output-dir DIR          where the JSONL files go (default: a private per-user
                              directory in the system temp dir)
    --ttl-seconds N           time-to-live of the files in seconds (default 3600)
    --max-request-bytes N     requests up to N bytes are read to find the tool calls
                              to watch (default 1048576); the answers to larger
                              requests pass through, never offloaded
    -h, --help                print this help

Remote agents read the offloaded files over MCP: the gateway adds the tools
lro_extract (a descriptor recipe 1-10 with params, or a jq query; paged) and
lro_list to tools/list and answers them itself, and serves resources/read of
lro://files/NAME; a file is readable only in the MCP session that made it.
ATLATL_PROMPT__OFFLOAD__EXTRACTION=false turns this off (ATLATL_PROMPT__OFFLOAD__*
variables configure the rest; the flags above win over them).

Logs go to stderr, one line per request; RUST_LOG filters them (default: info).
On start the gateway prints `gateway listening on http://ADDR/PATH` on stdout.";

/// The command line, parsed.
#[derive(Debug)]
struct Args {
    upstream: Upstream,
    listen: SocketAddr,
    threshold_tokens: Option<usize>,
    output_dir: Option<PathBuf>,
    ttl_seconds: Option<u64>,
    max_request_bytes: Option<usize>,
}

/// Where requests go.
#[derive(Debug, Clone)]
struct Upstream {
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    path: String,
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority, self.path)
    }
}

fn parse_upstream(value: &str) -> Result<Upstream, String> {
    let bad = |why: &str| format!("--upstream: `{value}` {why}");
    let uri: Uri = value
        .parse()
        .map_err(|e| bad(&format!("is not a URL ({e})")))?;
    let scheme = uri
        .scheme()
        .cloned()
        .ok_or_else(|| bad("has no scheme (expected http://HOST:PORT/PATH)"))?;
    if scheme != http::uri::Scheme::HTTP {
        return Err(bad(
            "is not an http:// URL (this gateway has no TLS client)",
        ));
    }
    let authority = uri.authority().cloned().ok_or_else(|| bad("has no host"))?;
    if authority.host().is_empty() {
        return Err(bad("has no host"));
    }
    // `host:` with nothing after the colon parses, with no port.
    if authority.as_str().ends_with(':') {
        return Err(bad("has an empty port"));
    }
    if uri.query().is_some() {
        return Err(bad(
            "has a query string; give only scheme, host, port and path",
        ));
    }
    let path = match uri.path() {
        "" => "/".to_owned(),
        p => p.to_owned(),
    };
    Ok(Upstream {
        scheme,
        authority,
        path,
    })
}

/// Parses the arguments (without the program name). `Ok(None)`: help asked.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let mut upstream = None;
    let mut listen = None;
    let mut threshold_tokens = None;
    let mut output_dir = None;
    let mut ttl_seconds = None;
    let mut max_request_bytes = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let known = [
            "--upstream",
            "--listen",
            "--threshold-tokens",
            "--output-dir",
            "--ttl-seconds",
            "--max-request-bytes",
        ];
        if !known.contains(&flag.as_str()) {
            return Err(format!("unknown argument `{arg}` (see --help)"));
        }
        let value = match inline {
            Some(v) => v,
            None => args
                .next()
                .filter(|v| !v.starts_with("--"))
                .ok_or_else(|| format!("{flag} needs a value"))?,
        };
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: `{v}` is not a whole number"))
        };
        match flag.as_str() {
            "--upstream" => upstream = Some(parse_upstream(&value)?),
            "--listen" => {
                listen = Some(value.parse::<SocketAddr>().map_err(|_| {
                    format!("--listen: `{value}` is not an address like 127.0.0.1:9000")
                })?);
            }
            "--threshold-tokens" => {
                let n = number(&value)?;
                if n == 0 {
                    return Err(format!("{flag}: must be at least 1"));
                }
                threshold_tokens =
                    Some(usize::try_from(n).map_err(|_| format!("{flag}: too large"))?);
            }
            "--output-dir" => {
                if value.is_empty() {
                    return Err(format!("{flag}: empty path"));
                }
                output_dir = Some(PathBuf::from(value));
            }
            "--ttl-seconds" => ttl_seconds = Some(number(&value)?),
            "--max-request-bytes" => {
                let n = number(&value)?;
                max_request_bytes =
                    Some(usize::try_from(n).map_err(|_| format!("{flag}: too large"))?);
            }
            _ => unreachable!("checked against `known`"),
        }
    }
    Ok(Some(Args {
        upstream: upstream.ok_or("--upstream is required (see --help)")?,
        listen: listen.ok_or("--listen is required (see --help)")?,
        threshold_tokens,
        output_dir,
        ttl_seconds,
        max_request_bytes,
    }))
}

/// Headers that belong to one connection, not to the message (RFC 9110
/// §7.6.1), plus the ones the `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // RFC 9112, 6.3: a message framed by Transfer-Encoding has no valid
    // Content-Length; drop it before Transfer-Encoding goes.
    if headers.contains_key(header::TRANSFER_ENCODING) {
        headers.remove(header::CONTENT_LENGTH);
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
}

fn text_response(status: StatusCode, text: String) -> Response<GwBody> {
    let mut resp = Response::new(
        Full::new(Bytes::from(text))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// An error and its causes on one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The innermost service: forwards a request to the upstream and streams the
/// response back; answers `502` itself when the upstream cannot be reached.
#[derive(Clone)]
struct Forward {
    client: Client<HttpConnector, GwBody>,
    upstream: Arc<Upstream>,
}

impl<B> Service<Request<B>> for Forward
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<GwBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<GwBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let (mut parts, body) = req.into_parts();
        let path_and_query = parts
            .uri
            .path_and_query()
            .map_or(self.upstream.path.as_str(), |pq| pq.as_str());
        let uri = Uri::builder()
            .scheme(self.upstream.scheme.clone())
            .authority(self.upstream.authority.clone())
            .path_and_query(path_and_query)
            .build();
        let client = self.client.clone();
        let upstream = self.upstream.clone();
        Box::pin(async move {
            let uri = match uri {
                Ok(uri) => uri,
                Err(e) => {
                    return Ok(text_response(
                        StatusCode::BAD_REQUEST,
                        format!("bad request target: {e}\n"),
                    ));
                }
            };
            parts.uri = uri;
            parts.version = Version::HTTP_11;
            strip_hop_by_hop(&mut parts.headers);
            // The client sets Host from the upstream URL.
            parts.headers.remove(header::HOST);
            let req = Request::from_parts(parts, body.map_err(Into::into).boxed_unsync());
            match client.request(req).await {
                Ok(resp) => {
                    let (mut parts, body) = resp.into_parts();
                    strip_hop_by_hop(&mut parts.headers);
                    Ok(Response::from_parts(
                        parts,
                        body.map_err(Into::into).boxed_unsync(),
                    ))
                }
                Err(e) => {
                    let why = error_chain(&e);
                    tracing::warn!(target: "gateway", %upstream, error = %why, "upstream request failed");
                    Ok(text_response(
                        StatusCode::BAD_GATEWAY,
                        format!("bad gateway: upstream {upstream} failed: {why}\n"),
                    ))
                }
            }
        })
    }
}

/// The gateway's handler for one request: the path check, then the layer
/// around [`Forward`], then one log line.
async fn handle(
    svc: OffloadService<Forward>,
    path: Arc<str>,
    req: Request<Incoming>,
) -> Result<Response<GwBody>, Infallible> {
    let start = Instant::now();
    let method = req.method().clone();
    let target = req.uri().path().to_owned();
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let resp = if req.uri().path() == &*path {
        svc.oneshot(req)
            .await?
            .map(|b| b.map_err(Into::into).boxed_unsync())
    } else {
        text_response(
            StatusCode::NOT_FOUND,
            format!("not found: this gateway serves {path} only\n"),
        )
    };
    tracing::info!(
        target: "gateway",
        %method,
        path = %target,
        status = resp.status().as_u16(),
        content_type = resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("-"),
        session = session.as_deref().unwrap_or("-"),
        ms = start.elapsed().as_millis() as u64,
        "request"
    );
    Ok(resp)
}

#[tokio::main]
async fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("gateway: {e}");
            std::process::exit(2);
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    if let Err(e) = run(args).await {
        eprintln!("gateway: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), BoxError> {
    // The spec's ATLATL_PROMPT__OFFLOAD__* variables first, the flags over them.
    let config = tower_lro::OffloadConfig::load(None)?;
    let mut layer = OffloadLayer::builder().config(config);
    if let Some(n) = args.threshold_tokens {
        layer = layer.threshold_tokens(n);
    }
    if let Some(dir) = &args.output_dir {
        layer = layer.output_dir(dir);
    }
    if let Some(s) = args.ttl_seconds {
        layer = layer.ttl(Duration::from_secs(s));
    }
    if let Some(n) = args.max_request_bytes {
        layer = layer.max_request_bytes(n);
    }
    let layer = layer.build();
    let config = layer.offloader().config().clone();
    // The layer runs offload_cleanup itself: expired files go every cleanup
    // interval (default 1 h).

    let client = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build_http::<GwBody>();
    let upstream = Arc::new(args.upstream);
    let path: Arc<str> = upstream.path.clone().into();
    let service = layer.layer(Forward {
        client,
        upstream: upstream.clone(),
    });

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("--listen: cannot bind {}: {e}", args.listen))?;
    let addr = listener.local_addr()?;
    println!("gateway listening on http://{addr}{path}");
    tracing::info!(
        target: "gateway",
        listen = %addr,
        %upstream,
        threshold_tokens = config.threshold_tokens,
        output_dir = %config.output_dir.display(),
        ttl_seconds = config.ttl.as_secs(),
        "gateway started"
    );

    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!(target: "gateway", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => {
                tracing::info!(target: "gateway", "interrupted; exiting");
                return Ok(());
            }
        };
        let service = service.clone();
        let path = path.clone();
        tokio::spawn(async move {
            let svc =
                hyper::service::service_fn(move |req| handle(service.clone(), path.clone(), req));
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                tracing::debug!(target: "gateway", %peer, error = %e, "connection ended with an error");
            }
        });
    }
}
