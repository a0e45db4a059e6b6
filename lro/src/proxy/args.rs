//! The `lro proxy` command line: `mcp-remote`'s (the flags it takes are
//! taken the same way; those that make no sense here are refused by name),
//! plus LRO's own. [`run`] turns them into [`ProxyOptions`] and the sign-in's
//! [`AuthOptions`], and runs the proxy on stdin and stdout.

use std::path::PathBuf;
use std::time::Duration;

use super::ProxyOptions;
use super::keep_alive::DEFAULT_PING_INTERVAL;
use crate::auth::{AuthOptions, default_dir};
use clap::Args;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tower_lro::config::OffloadConfig;

/// `lro proxy`.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// The remote MCP endpoint (streamable HTTP), e.g. http://127.0.0.1:8000/mcp.
    url: String,
    /// The OAuth callback port (as mcp-remote's second argument): used
    /// exactly (default: one derived from the server URL, or the next free).
    callback_port: Option<u16>,
    /// A PEM file of CA certificates trusted for an https:// server besides
    /// the system's roots (a private CA).
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// A header sent with every request upstream, `NAME: VALUE`; `${VAR}`
    /// is replaced by the environment variable VAR; repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Headers from a file, one `NAME: VALUE` per line, `#` comments
    /// (keeps secrets out of the process list).
    #[arg(long, value_name = "FILE")]
    header_file: Vec<PathBuf>,
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
    #[command(flatten)]
    oauth: OAuthArgs,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// The sign-in flags (mcp-remote's names).
#[derive(Debug, Args)]
struct OAuthArgs {
    /// Where OAuth tokens are stored (default: $LRO_AUTH_DIR, else
    /// $MCP_REMOTE_CONFIG_DIR/lro-v1, else ~/.config/lro/auth).
    #[arg(long, value_name = "DIR")]
    auth_dir: Option<PathBuf>,
    /// Never sign in: a 401 is relayed to the agent as an error.
    #[arg(long)]
    no_oauth: bool,
    /// The host name of the OAuth redirect URI (default 127.0.0.1).
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// The path of the OAuth callback (default /oauth/callback).
    #[arg(long, value_name = "PATH")]
    callback_path: Option<String>,
    /// Seconds the sign-in in the browser may take (default 30).
    #[arg(long, value_name = "SECONDS")]
    auth_timeout: Option<u64>,
    /// Where the browser goes after signing in.
    #[arg(long, value_name = "URL")]
    auth_success_url: Option<String>,
    /// The RFC 8707 resource indicator (also isolates the tokens).
    #[arg(long, value_name = "URI")]
    resource: Option<String>,
    /// Never send the resource indicator.
    #[arg(long)]
    disable_resource_parameter: bool,
    /// An extra parameter of the authorization request; repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    authorize_param: Vec<String>,
    /// Client metadata merged into the registration: JSON, or @FILE.
    #[arg(long, value_name = "JSON|@FILE")]
    static_oauth_client_metadata: Option<String>,
    /// A pre-registered client (client_id, client_secret): JSON, or @FILE;
    /// `${VAR}` in its strings is replaced from the environment.
    #[arg(long, value_name = "JSON|@FILE")]
    static_oauth_client_info: Option<String>,
    /// The client-credentials grant (no user, no browser).
    #[arg(long)]
    client_credentials: bool,
    /// A known token endpoint (with --client-credentials): no discovery.
    #[arg(long, value_name = "URL", requires = "client_credentials")]
    token_endpoint: Option<String>,
    /// Send the OpenID Connect ID token instead of the access token.
    #[arg(long)]
    use_id_token: bool,
    /// The device authorization grant (RFC 8628): approve a code shown on
    /// stderr on any device; no callback listener.
    #[arg(long, conflicts_with = "client_credentials")]
    device_code: bool,
    /// The https URL of this client's ID metadata document, used as its
    /// client id where the authorization server takes such documents.
    #[arg(long, value_name = "URL")]
    client_metadata_url: Option<String>,
}

/// mcp-remote's other flags: network, logs, and those refused by name.
#[derive(Debug, Args)]
struct RemoteArgs {
    /// Allow plain http to a server (and OAuth endpoints) off loopback.
    #[arg(long)]
    allow_http: bool,
    /// Seconds a connection may take to open (default 10; 0: the default).
    #[arg(long, value_name = "SECONDS")]
    connect_timeout: Option<f64>,
    /// Seconds the server may take to send its answer's headers (0: no limit).
    #[arg(long, value_name = "SECONDS")]
    headers_timeout: Option<f64>,
    /// The longest silence within an answer, event streams too (0: no limit).
    #[arg(long, value_name = "SECONDS")]
    body_timeout: Option<f64>,
    /// http-first (default: streamable HTTP, the old HTTP+SSE transport
    /// of 2024-11-05 when the server answers 404 or 405), http-only,
    /// sse-first (HTTP+SSE, then streamable HTTP) or sse-only.
    #[arg(long, value_name = "STRATEGY")]
    transport: Option<String>,
    /// legacy (the agent's own handshake, as is); `auto` is not supported.
    #[arg(long, value_name = "MODE")]
    protocol: Option<String>,
    /// Verbose logs on stderr (RUST_LOG wins).
    #[arg(long)]
    debug: bool,
    /// Errors only on stderr (RUST_LOG wins).
    #[arg(long)]
    silent: bool,
    /// Accepted: lro proxy keeps no cookies.
    #[arg(long)]
    disable_cookies: bool,
    /// Hides tools matching PATTERN (`*` wildcards, any case) from the
    /// agent: not listed, calls refused; repeatable.
    #[arg(long, value_name = "PATTERN")]
    ignore_tool: Vec<String>,
    /// Go through the HTTP proxy of HTTPS_PROXY / HTTP_PROXY (lower-case
    /// forms too; credentials in its URL), NO_PROXY honoured; OAuth too.
    #[arg(long)]
    enable_proxy: bool,
    /// Keep-alive: an MCP ping of the proxy's own whenever the link has
    /// been idle 30 s (or --ping-interval); a dead link is pinged until it
    /// is back, a session the server dropped is renewed at once.
    #[arg(long)]
    keep_alive: bool,
    /// Seconds of idleness before a keep-alive ping (implies --keep-alive).
    #[arg(long, value_name = "SECONDS")]
    ping_interval: Option<f64>,
    /// Connect over IPv4 only (a server's IPv6 addresses are not tried).
    #[arg(long)]
    ipv4: bool,
}

impl ProxyArgs {
    /// The log filter the flags ask for (`RUST_LOG` wins).
    pub(crate) fn log_filter(&self) -> &'static str {
        match (self.remote.debug, self.remote.silent) {
            (true, _) => "debug",
            (false, true) => "error",
            _ => "warn",
        }
    }
}

/// Runs the proxy on stdin/stdout until stdin ends.
pub(crate) fn run(args: ProxyArgs, mut config: OffloadConfig) -> Result<(), String> {
    refuse_unsupported(&args.remote)?;
    let upstream = args
        .url
        .parse()
        .map_err(|e| format!("upstream URL {:?}: {e}", args.url))?;
    if let Some(dir) = &args.output_dir {
        config.output_dir = dir.clone();
    }
    if let Some(n) = args.threshold_tokens {
        config.threshold_tokens = n;
    }
    // The agent runs on this machine: its shell reaches files in a
    // directory here (not those in object storage).
    let store = config.store.trim();
    config.files_local_to_client = store.is_empty() || store.starts_with("file:");
    let mut options = ProxyOptions::new(upstream);
    options.headers = headers(&args.headers, &args.header_file)?;
    options.config = config;
    options.announce = !args.no_announce;
    options.connect.ca_cert = args.ca_cert.clone();
    options.allow_http = args.remote.allow_http;
    options.connect.env_proxy = args.remote.enable_proxy;
    options.connect.ipv4_only = args.remote.ipv4;
    if let Some(timeout) = seconds("--connect-timeout", args.remote.connect_timeout)? {
        options.connect.connect_timeout = timeout;
    }
    options.headers_timeout = seconds("--headers-timeout", args.remote.headers_timeout)?;
    options.body_timeout = seconds("--body-timeout", args.remote.body_timeout)?;
    options.hidden_tools = args.remote.ignore_tool.clone();
    if let Some(strategy) = &args.remote.transport {
        options.transport = strategy.parse()?;
    }
    options.ping_interval = ping_interval(&args.remote)?;
    options.auth = if args.oauth.no_oauth {
        None
    } else {
        Some(auth_options(&args)?)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    runtime
        .block_on(super::run(options, tokio::io::stdin(), tokio::io::stdout()))
        .map_err(|e| e.to_string())
}

/// mcp-remote's flags that have no meaning here, or no support yet: one
/// line naming the flag.
fn refuse_unsupported(remote: &RemoteArgs) -> Result<(), String> {
    let refused =
        |flag: &str, why: &str| Err(format!("{flag} is not supported by lro proxy: {why}"));
    match remote.protocol.as_deref() {
        None | Some("legacy") => {}
        Some("auto") => {
            return refused(
                "--protocol auto",
                "the agent's own handshake is relayed as is (an agent that speaks 2026-07-28 talks to such a server directly)",
            );
        }
        Some(p) => return Err(format!("--protocol {p:?}: expected legacy or auto")),
    }
    Ok(())
}

/// `--client-metadata-url`: an https URL with a path (a client ID
/// metadata document's name).
fn client_metadata_url(given: Option<&str>) -> Result<Option<String>, String> {
    let Some(given) = given else { return Ok(None) };
    match url::Url::parse(given) {
        Ok(url) if url.scheme() == "https" && url.path() != "/" && url.fragment().is_none() => {
            Ok(Some(given.to_owned()))
        }
        _ => Err(format!(
            "--client-metadata-url {given:?}: expected an https URL with a path, e.g. https://example.com/lro-client.json"
        )),
    }
}

/// The keep-alive interval: `--ping-interval`, else the default with
/// `--keep-alive`, else none.
fn ping_interval(remote: &RemoteArgs) -> Result<Option<Duration>, String> {
    match remote.ping_interval {
        Some(s) if s > 0.0 => Duration::try_from_secs_f64(s)
            .map(Some)
            .map_err(|_| format!("--ping-interval {s}: expected a number of seconds")),
        Some(s) => Err(format!(
            "--ping-interval {s}: expected a positive number of seconds"
        )),
        None => Ok(remote.keep_alive.then_some(DEFAULT_PING_INTERVAL)),
    }
}

/// A number of seconds; `0` means no limit.
fn seconds(flag: &str, value: Option<f64>) -> Result<Option<Duration>, String> {
    match value {
        None => Ok(None),
        Some(0.0) => Ok(None),
        Some(s) => Duration::try_from_secs_f64(s)
            .map(Some)
            .map_err(|_| format!("{flag} {s}: expected a number of seconds")),
    }
}

/// The sign-in options of the flags.
fn auth_options(args: &ProxyArgs) -> Result<AuthOptions, String> {
    let o = &args.oauth;
    let defaults = AuthOptions::default();
    if let Some(path) = &o.callback_path
        && !path.starts_with('/')
    {
        return Err(format!("--callback-path {path:?}: must start with /"));
    }
    Ok(AuthOptions {
        store_dir: o.auth_dir.clone().unwrap_or_else(default_dir),
        callback_port: args.callback_port,
        callback_host: o.host.clone().unwrap_or(defaults.callback_host),
        callback_path: o.callback_path.clone().unwrap_or(defaults.callback_path),
        auth_timeout: o
            .auth_timeout
            .map_or(defaults.auth_timeout, |s| Duration::from_secs(s.max(1))),
        success_url: o.auth_success_url.clone(),
        resource: o.resource.clone().filter(|r| !r.trim().is_empty()),
        send_resource: !o.disable_resource_parameter,
        authorize_params: authorize_params(&o.authorize_param)?,
        static_client_metadata: o
            .static_oauth_client_metadata
            .as_deref()
            .map(|v| json_arg("--static-oauth-client-metadata", v))
            .transpose()?,
        static_client_info: o
            .static_oauth_client_info
            .as_deref()
            .map(|v| json_arg("--static-oauth-client-info", v).and_then(expand_json))
            .transpose()?,
        client_credentials: o.client_credentials,
        device_code: o.device_code,
        client_metadata_url: client_metadata_url(o.client_metadata_url.as_deref())?,
        token_endpoint: o.token_endpoint.clone(),
        use_id_token: o.use_id_token,
        allow_http: args.remote.allow_http,
    })
}

/// `KEY=VALUE` pairs; the flow's own parameters are refused.
fn authorize_params(given: &[String]) -> Result<Vec<(String, String)>, String> {
    const RESERVED: [&str; 6] = [
        "client_id",
        "redirect_uri",
        "response_type",
        "state",
        "code_challenge",
        "code_challenge_method",
    ];
    given
        .iter()
        .map(|p| {
            let (k, v) = p
                .split_once('=')
                .filter(|(k, _)| !k.trim().is_empty())
                .ok_or_else(|| format!("--authorize-param {p:?}: expected KEY=VALUE"))?;
            let k = k.trim();
            if RESERVED.contains(&k) {
                return Err(format!(
                    "--authorize-param {k}: set by the sign-in flow itself"
                ));
            }
            Ok((k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// A JSON object given inline or as `@FILE`.
fn json_arg(flag: &str, value: &str) -> Result<Value, String> {
    let text = match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("{flag} {path}: {e}"))?,
        None => value.to_owned(),
    };
    serde_json::from_str::<Value>(&text)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| format!("{flag}: expected a JSON object"))
}

/// `${VAR}` replaced in every string of a JSON value.
fn expand_json(value: Value) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => Value::String(expand_env(&s)?),
        Value::Array(a) => Value::Array(a.into_iter().map(expand_json).collect::<Result<_, _>>()?),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| Ok((k, expand_json(v)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other,
    })
}

/// `${VAR}` replaced by the environment variable `VAR` (an unset one is an
/// error: sending the placeholder would only fail later, less clearly).
fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        let value = std::env::var(name).map_err(|_| {
            format!("environment variable {name} (named as ${{{name}}}) is not set")
        })?;
        out.push_str(&rest[..start]);
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The `--header` and `--header-file` headers, `${VAR}` expanded.
pub(crate) fn headers(given: &[String], files: &[PathBuf]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for h in given {
        add_header(&mut map, h).map_err(|why| format!("--header {h:?}: {why}"))?;
    }
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("--header-file {}: {e}", file.display()))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            add_header(&mut map, line)
                .map_err(|why| format!("--header-file {} line {}: {why}", file.display(), n + 1))?;
        }
    }
    Ok(map)
}

/// Adds one `NAME: VALUE` header, `${VAR}` in the value from the
/// environment (an unset one is an error).
pub(crate) fn add_header(map: &mut HeaderMap, text: &str) -> Result<(), String> {
    let bad = || "expected \"NAME: VALUE\"".to_owned();
    let (name, value) = text.split_once(':').ok_or_else(bad)?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad())?;
    let value = HeaderValue::from_str(expand_env(value.trim())?.as_str()).map_err(|_| bad())?;
    map.append(name, value);
    Ok(())
}
