//! `lro`: Large Result Offloading from the command line.
//!
//! File tools for people working with offloaded results:
//!
//! ```text
//! lro inspect FILE                 # header, count, fields, expiry, recipes
//! lro rebuild FILE                 # the original CallToolResult JSON
//! lro extract FILE --recipe 6      # a recipe of the file, as lro_extract runs it
//! lro extract FILE --recipe 2 --param namespace=_semantic
//! lro extract FILE --query 'select(.confidence > 0.8)' [--offset N] [--limit N]
//! lro cleanup [DIR] [--ttl SECONDS] [--dry-run]
//! ```
//!
//! And the spec's local LRO proxy, for an agent's MCP configuration:
//!
//! ```text
//! lro proxy http://server:8000/mcp [--header 'Authorization: Bearer ...']
//! ```
//!
//! And a gateway in front of a remote server, for agents that reach it over
//! HTTP:
//!
//! ```text
//! lro gateway --upstream https://server/mcp --listen 127.0.0.1:9000
//! ```
//!
//! `--config FILE` reads the `[prompt.offload]` section of a TOML file;
//! `ATLATL_PROMPT__OFFLOAD__*` variables apply over it; flags win.

mod files;
mod gateway;
mod proxy;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Large Result Offloading (LRO) for MCP: the file tools.
#[derive(Debug, Parser)]
#[command(name = "lro", version)]
struct Cli {
    /// A TOML file whose `[prompt.offload]` section configures LRO
    /// (environment variables ATLATL_PROMPT__OFFLOAD__* apply over it).
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
    /// The local LRO proxy: MCP over stdio to the agent, streamable HTTP to
    /// the remote server; large results become files on this machine.
    Proxy(Box<proxy::ProxyArgs>),
    /// A gateway in front of a remote MCP server for agents on the
    /// network: large results become files served by lro_extract.
    Gateway(gateway::GatewayArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match tower_lro::config::OffloadConfig::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(e) => return fail(&format!("configuration: {e}")),
    };
    let done = match cli.command {
        Command::Inspect(args) => files::inspect(&args),
        Command::Rebuild(args) => files::rebuild(&args),
        Command::Extract(args) => files::extract(&args),
        Command::Cleanup(args) => files::cleanup(&args, &config),
        Command::Proxy(args) => {
            logs(args.log_filter(), false);
            proxy::run(*args, config)
        }
        Command::Gateway(args) => gateway::run(args, config),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
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
