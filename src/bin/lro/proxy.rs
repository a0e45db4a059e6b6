//! `lro proxy`: the spec's local LRO proxy, stdio to the agent.

use std::path::PathBuf;

use clap::Args;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use tower_lro::OffloadConfig;
use tower_lro::command::proxy::{self, ProxyOptions};

/// `lro proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// The remote MCP endpoint (streamable HTTP), e.g. http://127.0.0.1:8000/mcp.
    url: String,
    /// A PEM file of CA certificates trusted for an https:// server besides
    /// the system's roots (a private CA).
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// A header sent with every request upstream, `NAME: VALUE`
    /// (e.g. `Authorization: Bearer ...`); repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Where the JSONL files go (default: the configured output_dir, else a
    /// private per-user directory in the system temp dir).
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Offload tool results estimated over this many tokens (default: the
    /// configured threshold_tokens, 1600).
    #[arg(long, value_name = "N")]
    threshold_tokens: Option<usize>,
    /// Do not register upstream as an LRO proxy (the server's own LRO, if
    /// any, then offloads on its side too).
    #[arg(long)]
    no_announce: bool,
}

/// Runs the proxy on stdin/stdout until stdin ends.
pub fn run(args: ProxyArgs, mut config: OffloadConfig) -> Result<(), String> {
    let upstream = args
        .url
        .parse()
        .map_err(|e| format!("upstream URL {:?}: {e}", args.url))?;
    if let Some(dir) = args.output_dir {
        config.output_dir = dir;
    }
    if let Some(n) = args.threshold_tokens {
        config.threshold_tokens = n;
    }
    let mut options = ProxyOptions::new(upstream);
    options.headers = headers(&args.headers)?;
    options.config = config;
    options.announce = !args.no_announce;
    options.connect.ca_cert = args.ca_cert;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    runtime
        .block_on(proxy::run(options, tokio::io::stdin(), tokio::io::stdout()))
        .map_err(|e| e.to_string())
}

/// `NAME: VALUE` strings as headers.
pub(crate) fn headers(given: &[String]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for h in given {
        let bad = || format!("--header {h:?}: expected \"NAME: VALUE\"");
        let (name, value) = h.split_once(':').ok_or_else(bad)?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad())?;
        let value = HeaderValue::from_str(value.trim()).map_err(|_| bad())?;
        map.append(name, value);
    }
    Ok(map)
}
