//! `lro`: Large Result Offloading (LRO) for MCP from the command line.
//!
//! One binary, three uses (see the crate's `README.md`):
//!
//! * `lro gateway` ([`gateway`]) — an HTTP reverse proxy that puts the
//!   offload layer in front of any remote streamable-http MCP server, for
//!   agents that reach it over the network:
//!
//!   ```text
//!   lro gateway --upstream https://server/mcp --listen 127.0.0.1:9000
//!   ```
//!
//! * `lro proxy` ([`proxy`]) — the spec's local LRO proxy: MCP over stdio
//!   to the agent, streamable HTTP (or the old HTTP+SSE transport) to the
//!   remote server, large results in files on the agent's own disk; a drop-in for `mcp-remote` (its flags,
//!   its OAuth sign-in: [`auth`]):
//!
//!   ```text
//!   lro proxy https://server/mcp [--header 'Authorization: Bearer ${TOKEN}']
//!   ```
//!
//! * the file tools ([`files`]) for people working with offloaded results:
//!
//!   ```text
//!   lro inspect FILE                 # header, count, fields, expiry, recipes
//!   lro rebuild FILE                 # the original CallToolResult JSON
//!   lro extract FILE --recipe 6      # a recipe of the file, as lro_extract runs it
//!   lro extract FILE --query 'select(.confidence > 0.8)' [--offset N] [--limit N]
//!   lro cleanup [DIR] [--ttl SECONDS] [--dry-run]
//!   ```
//!
//! The subcommands that offload or clean up (`gateway`, `proxy`, `cleanup`)
//! read the offload configuration: `--config FILE`'s `[prompt.offload]`
//! section, then the `ATLATL_PROMPT__OFFLOAD__*` variables over it, then
//! their flags. `inspect`, `rebuild` and `extract` read only the file they
//! are given, never the configuration.
//!
//! The binary is built on the library's public API only; besides it,
//! [`connect`] is the upstream HTTP client the gateway and the proxy share
//! (TLS, `TCP_NODELAY`), [`fetch`] the OAuth requests' bounded reads on it,
//! and [`announce`] how both register upstream as an LRO proxy.

#![forbid(unsafe_code)]

mod announce;
mod auth;
mod connect;
mod fetch;
mod files;
mod gateway;
mod proxy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// What `--version` prints after `lro `: the package version and the
/// features this binary was built with (the packages on npm and PyPI carry
/// `object-store`), so a user can tell whether `--store s3://…` will work
/// before trying it.
const VERSION: &str = version_with_features();

/// `0.1.0 (features: object-store)`, built at compile time (`none`: no
/// feature).
const fn version_with_features() -> &'static str {
    macro_rules! version_with {
        ($($f:literal),*) => {
            concat!(env!("CARGO_PKG_VERSION"), " (features: ", $($f,)* ")")
        };
    }
    match (cfg!(feature = "object-store"), cfg!(feature = "o200k")) {
        (true, true) => version_with!("object-store, o200k"),
        (true, false) => version_with!("object-store"),
        (false, true) => version_with!("o200k"),
        (false, false) => version_with!("none"),
    }
}

/// Large Result Offloading (LRO) for MCP: tool results too large for an
/// agent's context become JSONL files and a compact descriptor.
///
/// `lro gateway` puts the offloading in front of a remote MCP server for
/// agents on the network; `lro proxy` is a local stdio proxy to a remote
/// server (a drop-in for mcp-remote, OAuth sign-in included) that keeps the
/// files on the agent's machine; `inspect`, `rebuild`, `extract` and
/// `cleanup` work on the offloaded files.
#[derive(Debug, Parser)]
#[command(name = "lro", version = VERSION)]
struct Cli {
    /// A TOML file whose `[prompt.offload]` section configures LRO
    /// (environment variables ATLATL_PROMPT__OFFLOAD__* apply over it);
    /// read by gateway, proxy and cleanup only.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Shows an offloaded file at a glance: what produced it, how many
    /// records, their fields, when it expires, its recipes.
    Inspect(files::InspectArgs),
    /// Prints the original CallToolResult JSON the file was made from.
    Rebuild(files::RebuildArgs),
    /// Runs one of the file's recipes, or a jq filter, over its records
    /// (the same extractor as the `lro_extract` tool).
    Extract(files::ExtractArgs),
    /// Deletes expired offloaded files.
    Cleanup(files::CleanupArgs),
    /// The local LRO proxy: MCP over stdio to the agent, streamable HTTP
    /// (or the old HTTP+SSE transport, --transport) to the remote server;
    /// large results become files on this machine.
    ///
    /// It adds two tools to the server's own: lro_extract (runs one of an
    /// offloaded file's jq recipes, or a jq filter, and answers by pages)
    /// and lro_list (the files this agent may read). To hide them from the
    /// agent, pass --ignore-tool 'lro_*' (the files are still written; the
    /// agent then reads them with its own jq, as the descriptor's recipes
    /// show).
    #[command(version = VERSION)]
    Proxy(Box<proxy::args::ProxyArgs>),
    /// A gateway in front of a remote MCP server for agents on the
    /// network: large results become files served by lro_extract.
    #[command(version = VERSION)]
    Gateway(Box<gateway::args::GatewayArgs>),
    /// The history offload in front of a chat provider (OpenAI Chat
    /// Completions and Responses, Anthropic Messages): each request's
    /// history is kept within its budget (large tool answers to files,
    /// older turns summarized) before it goes on; answers stream back
    /// untouched.
    #[command(version = VERSION)]
    History(Box<gateway::args::HistoryArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = || offload_config(cli.config.as_deref());
    let done = match cli.command {
        Command::Inspect(args) => files::inspect(&args),
        Command::Rebuild(args) => files::rebuild(&args),
        Command::Extract(args) => files::extract(&args),
        Command::Cleanup(args) => config().and_then(|c| files::cleanup(&args, &c)),
        Command::Proxy(args) => config().and_then(|c| {
            logs(args.log_filter(), false);
            proxy::args::run(*args, c)
        }),
        Command::Gateway(args) => {
            config().and_then(|c| gateway::args::run(*args, c, cli.config.as_deref()))
        }
        Command::History(args) => {
            config().and_then(|c| gateway::args::run_history(*args, c, cli.config.as_deref()))
        }
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}

/// The offload configuration: the `[prompt.offload]` section of `file`,
/// then the `ATLATL_PROMPT__OFFLOAD__*` variables (only the subcommands that
/// offload or clean up read it, so a bad variable cannot stop the others).
fn offload_config(file: Option<&Path>) -> Result<tower_lro::config::OffloadConfig, String> {
    tower_lro::config::OffloadConfig::load(file).map_err(|e| format!("configuration: {e}"))
}

/// Logs on stderr (stdout is the agent's, or free), filtered by `RUST_LOG`,
/// else by `default`; one JSON object a line when `json`.
fn logs(default: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    if json {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}

/// One line on stderr, exit status 1.
fn fail(message: &str) -> ExitCode {
    eprintln!("lro: {message}");
    ExitCode::FAILURE
}
