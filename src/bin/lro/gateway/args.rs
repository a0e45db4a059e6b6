//! The `lro gateway` command line: its flags over the offload
//! configuration make the [`GatewayOptions`]; [`run`] serves until SIGINT
//! or SIGTERM, logging on stderr (text or JSON lines).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{
    DEFAULT_HEALTH_PATH, DEFAULT_METRICS_PATH, DEFAULT_READY_PATH, Gateway, GatewayOptions,
    RouteOptions, shutdown_signal,
};
use clap::{Args, ValueEnum};
use tower_lro::config::OffloadConfig;

/// `lro gateway`.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// The upstream MCP endpoint (streamable HTTP, http:// or https://);
    /// the gateway serves the same path. Without it, the routes come from
    /// the --config file's [[gateway.route]] tables.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Where to listen, e.g. 127.0.0.1:9000 (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// A header sent with every request upstream, `NAME: VALUE`
    /// (e.g. `Authorization: Bearer ...`); repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// A PEM file of CA certificates trusted for an https:// upstream
    /// besides the system's roots (a private CA).
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Reach the upstream through the HTTP proxy of HTTPS_PROXY /
    /// HTTP_PROXY (lower-case forms too), NO_PROXY honoured.
    #[arg(long)]
    enable_proxy: bool,
    /// Where the JSONL files go (default: the configured output_dir, else a
    /// private per-user directory in the system temp dir).
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Where files are stored, shared by every replica given the same URL:
    /// s3://bucket/prefix (gs://, az://; credentials, region and endpoint
    /// from AWS_* / GOOGLE_* / AZURE_* variables), or file:///dir (default:
    /// the configured store, else the output directory).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// A file holding the key that binds offloaded files to their caller's
    /// credentials (at least 32 bytes, e.g. `openssl rand -hex 32`): replicas
    /// that read each other's files, or a gateway that must read its files
    /// after a restart, share one. Default: a random key per process.
    #[arg(long, value_name = "FILE")]
    binding_key_file: Option<PathBuf>,
    /// Offload tool results estimated over this many tokens (default: the
    /// configured threshold_tokens, 1600).
    #[arg(long, value_name = "N")]
    threshold_tokens: Option<usize>,
    /// Time-to-live of the files in seconds (default: the configured
    /// ttl_seconds, 3600).
    #[arg(long, value_name = "SECONDS")]
    ttl_seconds: Option<u64>,
    /// Requests up to N bytes are read to find the tool calls to watch
    /// (default 1048576); answers to larger ones pass through.
    #[arg(long, value_name = "N")]
    max_request_bytes: Option<usize>,
    /// Do not register upstream as an LRO proxy (a server running LRO
    /// itself then offloads on its side too).
    #[arg(long)]
    no_announce: bool,
    /// Client connections served at once; more wait in the listen backlog.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections: usize,
    /// Seconds a connection gets to deliver a request head, from when it
    /// opens and again after each answer (closes slow and idle clients).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    header_timeout: u64,
    /// Seconds to open a connection upstream.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    connect_timeout: u64,
    /// Seconds the upstream gets to start its answer (its head; an event
    /// stream then runs as long as it lasts).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    response_timeout: u64,
    /// On SIGINT/SIGTERM, seconds requests in flight get to finish.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    shutdown_grace: u64,
    /// The health endpoint (GET answers 200 while the gateway runs).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_HEALTH_PATH)]
    health_path: String,
    /// The readiness endpoint (GET answers 200 while a file can be written
    /// to the output directory, else 503).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_READY_PATH)]
    ready_path: String,
    /// The metrics endpoint (GET answers the metrics in the OpenMetrics
    /// text format, which Prometheus scrapes).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_METRICS_PATH)]
    metrics_path: String,
    /// The log format on stderr (RUST_LOG filters; default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event.
    Json,
}

/// Runs the gateway until SIGINT or SIGTERM.
pub fn run(
    args: GatewayArgs,
    config: OffloadConfig,
    config_file: Option<&Path>,
) -> Result<(), String> {
    crate::logs("info", matches!(args.log_format, LogFormat::Json));
    let options = options(args, config, config_file)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    runtime.block_on(async {
        let gateway = Gateway::bind(options).await.map_err(|e| e.to_string())?;
        let paths: Vec<&str> = gateway.paths().collect();
        let url = match paths[..] {
            [path] => format!("http://{}{path}", gateway.local_addr()),
            _ => format!("http://{}", gateway.local_addr()),
        };
        tracing::info!(target: "gateway", listen = %url, routes = ?paths, "gateway started");
        println!("lro gateway listening on {url}");
        let _ = std::io::stdout().flush();
        gateway.serve(shutdown_signal()).await;
        Ok(())
    })
}

/// The gateway's options from the flags over the configuration.
fn options(
    args: GatewayArgs,
    mut config: OffloadConfig,
    config_file: Option<&Path>,
) -> Result<GatewayOptions, String> {
    if args.threshold_tokens == Some(0) {
        return Err("--threshold-tokens: must be at least 1".to_owned());
    }
    if let Some(dir) = args.output_dir {
        config.output_dir = dir;
    }
    if let Some(url) = args.store {
        config.store = url.trim().to_owned();
    }
    let binding_key = match &args.binding_key_file {
        Some(file) => Some(
            tower_lro::offload::BindingKey::from_file(file)
                .map_err(|e| format!("--binding-key-file: {e}"))?,
        ),
        None => None,
    };
    if let Some(n) = args.threshold_tokens {
        config.threshold_tokens = n;
    }
    if let Some(s) = args.ttl_seconds {
        config.ttl = Duration::from_secs(s);
    }
    let headers = crate::proxy::args::headers(&args.headers, &[])?;
    let from_file = match config_file {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("configuration: {}: {e}", file.display()))?;
            super::routes::routes(&text, file, &config, &headers)
                .map_err(|e| format!("configuration: {e}"))?
        }
        None => Vec::new(),
    };
    let routes = match (args.upstream, from_file.is_empty()) {
        (Some(upstream), true) => {
            let uri = upstream
                .parse()
                .map_err(|e| format!("--upstream {upstream:?}: {e}"))?;
            let mut route = RouteOptions::new(uri);
            route.headers = headers;
            route.config = config;
            vec![route]
        }
        (None, false) => from_file,
        (Some(_), false) => {
            return Err(
                "--upstream and [[gateway.route]] tables in the --config file: give one or the other"
                    .to_owned(),
            );
        }
        (None, true) => {
            return Err(
                "no route: give --upstream URL, or [[gateway.route]] tables in the --config file"
                    .to_owned(),
            );
        }
    };
    let mut options = GatewayOptions::new(routes, args.listen);
    options.announce = !args.no_announce;
    options.connect.ca_cert = args.ca_cert;
    options.connect.env_proxy = args.enable_proxy;
    options.connect.connect_timeout = seconds("--connect-timeout", args.connect_timeout)?;
    options.limits.max_connections = args.max_connections.max(1);
    options.limits.header_read_timeout = seconds("--header-timeout", args.header_timeout)?;
    options.limits.response_head_timeout = seconds("--response-timeout", args.response_timeout)?;
    options.limits.shutdown_grace = Duration::from_secs(args.shutdown_grace);
    options.health_path = args.health_path;
    options.ready_path = args.ready_path;
    options.metrics_path = args.metrics_path;
    options.max_request_bytes = args.max_request_bytes;
    options.binding_key = binding_key;
    Ok(options)
}

/// A timeout of at least one second.
fn seconds(flag: &str, n: u64) -> Result<Duration, String> {
    if n == 0 {
        return Err(format!("{flag}: must be at least 1"));
    }
    Ok(Duration::from_secs(n))
}
