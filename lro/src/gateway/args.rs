//! The `lro gateway` and `lro history` command lines: their flags over the
//! offload (history) configuration make the [`GatewayOptions`]; [`run`]
//! and [`run_history`] serve until SIGINT or SIGTERM, logging on stderr
//! (text or JSON lines).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{
    DEFAULT_HEALTH_PATH, DEFAULT_METRICS_PATH, DEFAULT_READY_PATH, Gateway, GatewayOptions,
    RouteOptions, shutdown_signal,
};
use clap::{Args, ValueEnum};
use http::{HeaderMap, Uri};
use tower_lro::config::OffloadConfig;
use tower_lro::history::{HistoryConfig, SummaryMode};

/// `lro gateway`.
#[derive(Debug, Args)]
pub(crate) struct GatewayArgs {
    /// The upstream MCP endpoint (streamable HTTP, http:// or https://);
    /// the gateway serves the same path. Without it, the routes come from
    /// the --config file's [[gateway.route]] tables.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
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
    #[command(flatten)]
    serve: ServeArgs,
}

/// `lro history`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// The chat provider's base URL (e.g. `https://api.openai.com/v1` or
    /// `https://api.anthropic.com`): its path and every path under it is
    /// served, chat requests (`…/chat/completions`, `…/messages`,
    /// `…/responses`) with their history rewritten, the others untouched.
    /// Without it, the routes come from the --config file's
    /// [[gateway.route]] tables (`kind = "history"`).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Where offloaded tool answers and summarized messages go (default:
    /// the configured store_dir, else `history` in a private per-user
    /// directory in the system temp dir).
    #[arg(long, value_name = "DIR")]
    store_dir: Option<PathBuf>,
    /// compact, compress or auto (default: the configured
    /// working_summary_mode, auto).
    #[arg(long, value_name = "MODE")]
    mode: Option<SummaryMode>,
    /// The history's budget in estimated tokens (default: the configured
    /// max_total_tokens, 20000).
    #[arg(long, value_name = "N")]
    max_total_tokens: Option<usize>,
    /// Tool answers over this many estimated tokens are offloaded
    /// (default: the configured max_tool_message_tokens, 2000).
    #[arg(long, value_name = "N")]
    max_tool_message_tokens: Option<usize>,
    /// Do not add the `lro_history_read` tool to chat requests whose
    /// history names offloaded files (by default it is added and answered
    /// here, so the model reads them back wherever its own tools run; the
    /// configured read_tool).
    #[arg(long)]
    no_read_tool: bool,
    /// A file holding the key that binds the history's files to their
    /// caller's credentials (each caller's files go to a directory of its
    /// own under --store-dir, named by a keyed MAC of its credentials;
    /// at least 32 bytes, e.g. `openssl rand -hex 32`): a restarted proxy
    /// given the same key finds its callers' files again. Default: a
    /// random key per process.
    #[arg(long, value_name = "FILE")]
    binding_key_file: Option<PathBuf>,
    /// An object store the history's files also go to, shared by every
    /// replica given the same URL and --binding-key-file: s3://bucket/prefix
    /// (gs://, az://; credentials from AWS_* / GOOGLE_* / AZURE_*), so that
    /// a conversation's next turn, on any replica, reads its files back and
    /// keeps its rewrite (default: the configured store, else none).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Delete the history's files unused this long (default: the
    /// configured file_ttl_seconds, 7 days; 0: never).
    #[arg(long, value_name = "SECONDS")]
    file_ttl_seconds: Option<u64>,
    #[command(flatten)]
    serve: ServeArgs,
}

/// The flags `lro gateway` and `lro history` share: where to listen, how
/// the upstream is reached, the limits, the endpoints, the logs.
#[derive(Debug, Args)]
struct ServeArgs {
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
    /// Seconds a client gets to send a whole request body, from its head.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    request_body_timeout: u64,
    /// Seconds the upstream may go silent in the body of an answer (not
    /// in its own GET event stream).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    body_idle_timeout: u64,
    /// Bytes a second a client must at least read its answers at, once
    /// they waited on it 10 s (its connection is closed under it; 0: off).
    #[arg(long, value_name = "BYTES", default_value_t = 8192)]
    min_send_rate: u64,
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
pub(crate) fn run(
    args: GatewayArgs,
    config: OffloadConfig,
    config_file: Option<&Path>,
) -> Result<(), String> {
    let json = matches!(args.serve.log_format, LogFormat::Json);
    let history = history_config(config_file)?;
    serve(
        "gateway",
        json,
        options(args, config, &history, config_file)?,
    )
}

/// Runs `lro history` until SIGINT or SIGTERM.
pub(crate) fn run_history(
    args: HistoryArgs,
    offload: OffloadConfig,
    config_file: Option<&Path>,
) -> Result<(), String> {
    let json = matches!(args.serve.log_format, LogFormat::Json);
    let mut config = history_config(config_file)?;
    if let Some(dir) = args.store_dir {
        config.store_dir = dir;
    }
    if let Some(mode) = args.mode {
        config.mode = mode;
    }
    if args.no_read_tool {
        config.read_tool = false;
    }
    if let Some(url) = args.store {
        config.store = url.trim().to_owned();
    }
    if let Some(seconds) = args.file_ttl_seconds {
        config.file_ttl = (seconds > 0).then(|| Duration::from_secs(seconds));
    }
    for (flag, n, field) in [
        (
            "--max-total-tokens",
            args.max_total_tokens,
            &mut config.max_total_tokens,
        ),
        (
            "--max-tool-message-tokens",
            args.max_tool_message_tokens,
            &mut config.max_tool_message_tokens,
        ),
    ] {
        match n {
            Some(0) => return Err(format!("{flag}: must be at least 1")),
            Some(n) => *field = n,
            None => {}
        }
    }
    let headers = crate::proxy::args::headers(&args.serve.headers, &[])?;
    let from_file = routes_of(config_file, &offload, &config, &headers)?;
    let routes = one_or_file(args.upstream, from_file, |upstream| {
        let mut route = RouteOptions::new(upstream);
        route.headers = headers.clone();
        route.history = Some(config.clone());
        route
    })?;
    let mut options = GatewayOptions::new(routes, args.serve.listen);
    apply_serve(args.serve, &mut options)?;
    options.binding_key = binding_key(args.binding_key_file.as_deref())?;
    serve("history", json, options)
}

/// The `[prompt.history]` configuration: the file's section, then the
/// `ATLATL_PROMPT__HISTORY__*` variables.
fn history_config(config_file: Option<&Path>) -> Result<HistoryConfig, String> {
    HistoryConfig::load(config_file).map_err(|e| format!("configuration: {e}"))
}

/// Binds `options` and serves until SIGINT or SIGTERM, saying where on
/// stdout (`lro NAME listening on URL`).
fn serve(name: &str, json: bool, options: GatewayOptions) -> Result<(), String> {
    crate::logs("info", json);
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
        tracing::info!(target: "gateway", listen = %url, routes = ?paths, "{name} started");
        println!("lro {name} listening on {url}");
        let _ = std::io::stdout().flush();
        gateway.serve(shutdown_signal()).await;
        Ok(())
    })
}

/// The routes of the --config file's [[gateway.route]] tables, if any.
fn routes_of(
    config_file: Option<&Path>,
    offload: &OffloadConfig,
    history: &HistoryConfig,
    headers: &HeaderMap,
) -> Result<Vec<RouteOptions>, String> {
    let Some(file) = config_file else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("configuration: {}: {e}", file.display()))?;
    super::routes::routes(&text, file, offload, history, headers)
        .map_err(|e| format!("configuration: {e}"))
}

/// One route from `--upstream` (made by `route`), or the file's routes.
fn one_or_file(
    upstream: Option<String>,
    from_file: Vec<RouteOptions>,
    route: impl FnOnce(Uri) -> RouteOptions,
) -> Result<Vec<RouteOptions>, String> {
    match (upstream, from_file.is_empty()) {
        (Some(upstream), true) => {
            let uri = upstream
                .parse()
                .map_err(|e| format!("--upstream {upstream:?}: {e}"))?;
            Ok(vec![route(uri)])
        }
        (None, false) => Ok(from_file),
        (Some(_), false) => Err(
            "--upstream and [[gateway.route]] tables in the --config file: give one or the other"
                .to_owned(),
        ),
        (None, true) => Err(
            "no route: give --upstream URL, or [[gateway.route]] tables in the --config file"
                .to_owned(),
        ),
    }
}

/// The shared flags into `options`.
fn apply_serve(serve: ServeArgs, options: &mut GatewayOptions) -> Result<(), String> {
    options.connect.ca_cert = serve.ca_cert;
    options.connect.env_proxy = serve.enable_proxy;
    options.connect.connect_timeout = seconds("--connect-timeout", serve.connect_timeout)?;
    options.limits.max_connections = serve.max_connections.max(1);
    options.limits.header_read_timeout = seconds("--header-timeout", serve.header_timeout)?;
    options.limits.response_head_timeout = seconds("--response-timeout", serve.response_timeout)?;
    options.limits.request_body_timeout =
        seconds("--request-body-timeout", serve.request_body_timeout)?;
    options.limits.body_idle_timeout = seconds("--body-idle-timeout", serve.body_idle_timeout)?;
    options.limits.min_send_rate = serve.min_send_rate;
    options.limits.shutdown_grace = Duration::from_secs(serve.shutdown_grace);
    options.health_path = serve.health_path;
    options.ready_path = serve.ready_path;
    options.metrics_path = serve.metrics_path;
    Ok(())
}

/// The gateway's options from the flags over the configuration.
fn options(
    args: GatewayArgs,
    mut config: OffloadConfig,
    history: &HistoryConfig,
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
    let binding_key = binding_key(args.binding_key_file.as_deref())?;
    if let Some(n) = args.threshold_tokens {
        config.threshold_tokens = n;
    }
    if let Some(s) = args.ttl_seconds {
        config.ttl = Duration::from_secs(s);
    }
    let headers = crate::proxy::args::headers(&args.serve.headers, &[])?;
    let from_file = routes_of(config_file, &config, history, &headers)?;
    let routes = one_or_file(args.upstream, from_file, |upstream| {
        let mut route = RouteOptions::new(upstream);
        route.headers = headers.clone();
        route.config = config;
        route
    })?;
    let mut options = GatewayOptions::new(routes, args.serve.listen);
    options.announce = !args.no_announce;
    apply_serve(args.serve, &mut options)?;
    options.max_request_bytes = args.max_request_bytes;
    options.binding_key = binding_key;
    Ok(options)
}

/// The key in `--binding-key-file`, if given.
fn binding_key(file: Option<&Path>) -> Result<Option<tower_lro::offload::BindingKey>, String> {
    file.map(|file| {
        tower_lro::offload::BindingKey::from_file(file)
            .map_err(|e| format!("--binding-key-file: {e}"))
    })
    .transpose()
}

/// A timeout of at least one second.
fn seconds(flag: &str, n: u64) -> Result<Duration, String> {
    if n == 0 {
        return Err(format!("{flag}: must be at least 1"));
    }
    Ok(Duration::from_secs(n))
}
