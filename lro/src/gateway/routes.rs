//! The routes of a `--config` file: its `[[gateway.route]]` tables, each a
//! served `path`, an `upstream` URL, optional `headers` to send and the
//! route's own offload keys (any key of `[prompt.offload]`: `enabled`,
//! `threshold_tokens`, `exclude_tools`, `ttl_seconds`, `output_dir`,
//! `[gateway.route.tools.NAME]`, `[gateway.route.clients.NAME]` ...), applied over the gateway's own
//! configuration by the library's own parser, so a route takes exactly the
//! keys, checks and messages of `[prompt.offload]`.
//!
//! ```toml
//! [prompt.offload]
//! threshold_tokens = 1600
//!
//! [[gateway.route]]
//! path = "/github/mcp"
//! upstream = "https://github-mcp.internal.example/mcp"
//! headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }
//! threshold_tokens = 4000
//! exclude_tools = ["get_me"]
//! ```
//!
//! A table with `kind = "history"` is a chat route (`lro history`'s): its
//! `upstream` a chat provider's base URL, its other keys those of
//! `[prompt.history]` (`working_summary_mode`, `max_total_tokens`,
//! `store_dir` ...) over the gateway's; it serves its `path` and every path
//! under it.
//!
//! A route without an `output_dir` of its own writes into a directory of
//! its own under the gateway's (`route-` and its path, e.g.
//! `route-github-mcp`): each route's files are readable through that route
//! only (each layer reads its own directory).

use std::path::{Path, PathBuf};

use http::HeaderMap;
use tower_lro::config::OffloadConfig;
use tower_lro::history::HistoryConfig;
use tower_lro::store::FsStore;

use super::RouteOptions;
use crate::proxy::args::add_header;

/// The routes of the TOML document `text` (read from `file`), each over
/// `base` (the gateway's configuration, flags applied) and `headers` (the
/// `--header` flags; a route's own headers replace those of the same name).
/// None when it has no `[[gateway.route]]` table. (About 110 lines: one
/// pass over the tables, each key checked where it is read, so that every
/// refusal names its table and key.)
pub(crate) fn routes(
    text: &str,
    file: &Path,
    base: &OffloadConfig,
    history: &HistoryConfig,
    headers: &HeaderMap,
) -> Result<Vec<RouteOptions>, String> {
    let at = |what: String| format!("{}: {what}", file.display());
    let doc: toml::Table = text.parse().map_err(|e| at(format!("{e}")))?;
    let Some(gateway) = doc.get("gateway") else {
        return Ok(Vec::new());
    };
    let gateway = gateway
        .as_table()
        .ok_or_else(|| at("gateway: expected a table".to_owned()))?;
    if let Some(key) = gateway.keys().find(|k| *k != "route") {
        return Err(at(format!(
            "gateway.{key}: unknown key (expected [[gateway.route]] tables)"
        )));
    }
    let Some(tables) = gateway.get("route") else {
        return Ok(Vec::new());
    };
    let tables = tables
        .as_array()
        .ok_or_else(|| at("gateway.route: expected [[gateway.route]] tables".to_owned()))?;
    let base_dir = if base.output_dir.as_os_str().is_empty() {
        FsStore::default_dir()
    } else {
        base.output_dir.clone()
    };
    let mut routes: Vec<RouteOptions> = Vec::with_capacity(tables.len());
    for (i, table) in tables.iter().enumerate() {
        let n = i + 1;
        let at = |what: String| at(format!("[[gateway.route]] #{n}: {what}"));
        let mut table = table
            .as_table()
            .ok_or_else(|| at("expected a table".to_owned()))?
            .clone();
        let mut string = |key: &str| match table.remove(key) {
            Some(toml::Value::String(s)) => Ok(s),
            Some(other) => Err(at(format!("{key}: expected a string, found {other}"))),
            None => Err(at(format!("{key}: missing"))),
        };
        let path = string("path")?;
        if routes.iter().any(|r| r.path == path) {
            return Err(at(format!("path {path:?}: served by an earlier route too")));
        }
        let upstream = string("upstream")?;
        let upstream = upstream
            .parse()
            .map_err(|e| at(format!("upstream {upstream:?}: {e}")))?;
        let mut route_headers = HeaderMap::new();
        match table.remove("headers") {
            None => {}
            Some(toml::Value::Table(given)) => {
                for (name, value) in given {
                    let value = value
                        .as_str()
                        .ok_or_else(|| at(format!("headers.{name}: expected a string")))?;
                    add_header(&mut route_headers, &format!("{name}: {value}"))
                        .map_err(|why| at(format!("headers.{name}: {why}")))?;
                }
            }
            Some(other) => {
                return Err(at(format!(
                    "headers: expected a table of NAME = \"VALUE\", found {other}"
                )));
            }
        }
        let mut all_headers = headers.clone();
        for name in route_headers.keys() {
            all_headers.remove(name);
        }
        for (name, value) in &route_headers {
            all_headers.append(name, value.clone());
        }
        let history_route = match table.remove("kind") {
            None => false,
            Some(toml::Value::String(kind)) if kind == "mcp" => false,
            Some(toml::Value::String(kind)) if kind == "history" => true,
            Some(other) => {
                return Err(at(format!(
                    "kind: expected \"mcp\" or \"history\", found {other}"
                )));
            }
        };
        if history_route {
            let config = history_keys(history, table, &path, &routes).map_err(at)?;
            let mut route = RouteOptions::new(upstream);
            route.path = path;
            route.headers = all_headers;
            route.history = Some(config);
            routes.push(route);
            continue;
        }
        let own_dir = table.contains_key("output_dir");
        let own_store = table.contains_key("store");
        let document = under_prompt("offload", table).map_err(at)?;
        let mut config = base
            .clone()
            .apply_toml_str(&document)
            .map_err(|e| at(e.to_string().replace("prompt.offload.", "")))?;
        own_place(&mut config, &routes, &path, (own_dir, own_store), &base_dir).map_err(at)?;
        routes.push(RouteOptions {
            path,
            upstream,
            headers: all_headers,
            config,
            history: None,
        });
    }
    Ok(routes)
}

/// A route's own keys as the TOML document `[prompt.SECTION]` with them,
/// for the library's own parser.
fn under_prompt(section: &str, table: toml::Table) -> Result<String, String> {
    let mut keys = toml::Table::new();
    keys.insert(section.to_owned(), toml::Value::Table(table));
    let mut prompt = toml::Table::new();
    prompt.insert("prompt".to_owned(), toml::Value::Table(keys));
    toml::to_string(&prompt).map_err(|e| e.to_string())
}

/// A chat route's configuration: its keys (any of `[prompt.history]`) over
/// `base`, and a `store_dir` of its own under the base's unless it names
/// one no earlier chat route uses.
fn history_keys(
    base: &HistoryConfig,
    table: toml::Table,
    path: &str,
    routes: &[RouteOptions],
) -> Result<HistoryConfig, String> {
    let own_dir = table.contains_key("store_dir");
    let document = under_prompt("history", table)?;
    let mut config = base
        .clone()
        .apply_toml_str(&document)
        .map_err(|e| e.to_string().replace("prompt.history.", ""))?;
    if !own_dir {
        config.store_dir = base.store_dir.join(dir_name(path));
    }
    let clash = routes.iter().find(|r| {
        r.history
            .as_ref()
            .is_some_and(|h| h.store_dir == config.store_dir)
    });
    match clash {
        Some(other) => Err(format!(
            "store_dir {} is route {:?}'s too: give each route its own",
            config.store_dir.display(),
            other.path
        )),
        None => Ok(config),
    }
}

/// Gives a route without an `output_dir` (a `store`) of its own a
/// directory (a prefix) of its own under the gateway's, and checks that no
/// earlier route writes where it writes.
fn own_place(
    config: &mut OffloadConfig,
    routes: &[RouteOptions],
    path: &str,
    (own_dir, own_store): (bool, bool),
    base_dir: &Path,
) -> Result<(), String> {
    if !own_dir {
        config.output_dir = base_dir.join(dir_name(path));
    }
    if !own_store && !config.store.is_empty() {
        let store = config.store.trim_end_matches('/');
        config.store = format!("{store}/{}", dir_name(path).display());
    }
    let shared = !config.store.is_empty();
    let clash = routes.iter().find(|r| {
        if shared {
            r.config.store == config.store
        } else {
            r.config.store.is_empty() && r.config.output_dir == config.output_dir
        }
    });
    match clash {
        Some(other) if shared => Err(format!(
            "store {:?} is route {:?}'s too: give each route its own",
            config.store, other.path
        )),
        Some(other) => Err(format!(
            "output directory {} is route {:?}'s too: give each route its own",
            config.output_dir.display(),
            other.path
        )),
        None => Ok(()),
    }
}

/// The directory of a route under the gateway's: `route-` and its path's
/// letters, digits, `-` and `_` (other characters as `-`).
fn dir_name(path: &str) -> PathBuf {
    let name: String = path
        .trim_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    PathBuf::from(format!("route-{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<RouteOptions>, String> {
        routes(
            text,
            Path::new("gw.toml"),
            &OffloadConfig::default().output_dir("/srv/lro"),
            &HistoryConfig::default().store_dir("/srv/history"),
            &HeaderMap::new(),
        )
    }

    #[test]
    fn history_routes_take_the_history_keys() {
        let routes = parse(
            r#"
            [[gateway.route]]
            path = "/openai"
            upstream = "https://api.openai.com/v1"
            kind = "history"
            max_total_tokens = 30000
            working_summary_mode = "compact"

            [[gateway.route]]
            path = "/mcp"
            upstream = "http://127.0.0.1:2/mcp"
            kind = "mcp"
            "#,
        )
        .unwrap();
        let history = routes[0].history.as_ref().expect("a chat route");
        assert_eq!(history.max_total_tokens, 30000);
        assert_eq!(history.mode.as_str(), "compact");
        assert_eq!(history.store_dir, Path::new("/srv/history/route-openai"));
        assert!(routes[1].history.is_none());
        let e = parse(
            "[[gateway.route]]\npath = \"/a\"\nupstream = \"http://h/v1\"\nkind = \"chat\"\n",
        )
        .unwrap_err();
        assert!(e.contains("#1: kind: expected"), "{e}");
        let e = parse(
            "[[gateway.route]]\npath = \"/a\"\nupstream = \"http://h/v1\"\nkind = \"history\"\nmax_total_tokens = \"x\"\n",
        )
        .unwrap_err();
        assert!(e.contains("#1") && e.contains("max_total_tokens"), "{e}");
    }

    #[test]
    fn routes_take_the_offload_keys_over_the_base() {
        let routes = parse(
            r#"
            [[gateway.route]]
            path = "/a/mcp"
            upstream = "http://127.0.0.1:1/mcp"
            threshold_tokens = 4000
            exclude_tools = ["t"]
            ttl_seconds = 60
            headers = { X-Team = "infra" }
            clients.claude-code = { threshold_tokens = 9000, guidance = "shell" }

            [[gateway.route]]
            path = "/b"
            upstream = "http://127.0.0.1:2/mcp"
            enabled = false
            "#,
        )
        .unwrap();
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].config.threshold_tokens, 4000);
        assert!(routes[0].config.excluded_tools.contains("t"));
        assert_eq!(routes[0].config.ttl.as_secs(), 60);
        assert_eq!(routes[0].headers["x-team"], "infra");
        assert_eq!(
            routes[0].config.output_dir,
            Path::new("/srv/lro/route-a-mcp")
        );
        assert!(!routes[1].config.enabled);
        assert_eq!(routes[1].config.threshold_tokens, 1600);
        // A client profile of one route only.
        let claude = Some("claude-code");
        assert_eq!(
            routes[0]
                .config
                .policy_for_client("x", claude)
                .threshold_tokens,
            9000
        );
        assert!(!routes[0].config.extract_guidance_for(claude));
        // The other route: the shipped profile only.
        assert_eq!(
            routes[1].config.profile_for(claude),
            tower_lro::config::shipped_profiles()
                .into_iter()
                .find_map(|(name, p)| (name == "claude_code").then_some(p))
        );
    }

    #[test]
    fn bad_routes_are_named() {
        let e = parse("[[gateway.route]]\npath = \"/a\"\n").unwrap_err();
        assert!(e.contains("#1: upstream: missing"), "{e}");
        let e = parse(
            "[[gateway.route]]\npath = \"/a\"\nupstream = \"http://h/mcp\"\nthreshold_tokens = \"x\"\n",
        )
        .unwrap_err();
        assert!(e.contains("#1") && e.contains("threshold_tokens"), "{e}");
        assert!(
            parse("[prompt.offload]\nthreshold_tokens = 10\n")
                .unwrap()
                .is_empty()
        );
    }
}
