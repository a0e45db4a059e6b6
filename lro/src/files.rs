//! The file tools: `inspect`, `rebuild`, `extract`, `cleanup`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::Args;
use serde_json::Value;
use tower_lro::cleanup::Custodian;
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::{OffloadHeader, RecipeProgram};
use tower_lro::extract::{ExtractLimits, Extractor, JqFlags, Paging, Query};
use tower_lro::store::{RESOURCE_URI_PREFIX, Store};

/// The longest header line read (headers are a few KB).
const MAX_HEADER_BYTES: u64 = 1 << 20;
/// How many records `inspect` looks at for their fields.
const SAMPLED_RECORDS: usize = 1000;

/// The file a tool reads, on this machine or in a shared store.
#[derive(Debug, Args)]
struct FileArg {
    /// The offloaded JSONL file (with --store: `lro://files/NAME`, as in
    /// its descriptor, or NAME).
    file: PathBuf,
    /// Read FILE from this shared store: s3://bucket/prefix (gs://, az://;
    /// configured by the AWS_* / GOOGLE_* / AZURE_* variables), as a
    /// gateway given `--store` writes it.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
}

/// A local copy of the file a tool reads, and the store whose private
/// cache holds it (removed with the store).
struct Local {
    path: PathBuf,
    _store: Option<std::sync::Arc<dyn Store>>,
}

impl FileArg {
    /// The file itself, or, with `--store`, its copy fetched from the store.
    fn local(&self) -> Result<Local, String> {
        let shown = self.file.display().to_string();
        let Some(url) = self.store.as_deref() else {
            if shown.starts_with(RESOURCE_URI_PREFIX) {
                return Err(format!(
                    "{shown} is in a shared store: give --store URL (the gateway's --store)"
                ));
            }
            return Ok(Local {
                path: self.file.clone(),
                _store: None,
            });
        };
        let name = shown.strip_prefix(RESOURCE_URI_PREFIX).unwrap_or(&shown);
        let store = tower_lro::store::from_url(url, &std::env::temp_dir(), false)
            .map_err(|e| format!("--store: {e}"))?;
        let shared = store.shared().ok_or_else(|| {
            format!("--store {url}: not a shared store (a directory: give its file's path)")
        })?;
        let manifest = shared
            .manifest(name)
            .map_err(|e| format!("{shown}: {e}"))?
            .ok_or_else(|| {
                format!("{shown}: no such file in the store (never written, or expired and swept)")
            })?;
        let path = shared
            .local_copy(name, &manifest)
            .map_err(|e| format!("{shown}: {e}"))?;
        Ok(Local {
            path,
            _store: Some(store),
        })
    }
}

/// `lro inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    #[command(flatten)]
    file: FileArg,
}

/// `lro rebuild`.
#[derive(Debug, Args)]
pub(crate) struct RebuildArgs {
    #[command(flatten)]
    file: FileArg,
    /// The rewritten result the client received (CallToolResult JSON), for
    /// files that leave large parts (an image, a large `_meta`) to it.
    #[arg(long, value_name = "RESULT_JSON_FILE")]
    with: Option<PathBuf>,
}

/// `lro extract`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["recipe", "query"]))]
pub(crate) struct ExtractArgs {
    #[command(flatten)]
    file: FileArg,
    /// The number of one of the file's recipes (1-10, as in its descriptor).
    #[arg(long)]
    recipe: Option<usize>,
    /// A recipe parameter, `NAME=VALUE` (e.g. `namespace=_semantic`); repeatable.
    #[arg(long = "param", value_name = "NAME=VALUE", requires = "recipe")]
    params: Vec<String>,
    /// A jq filter over the records (one record per input, as
    /// `tail -n +2 FILE | jq FILTER`).
    #[arg(long)]
    query: Option<String>,
    /// With --query: all records as one array (jq -s).
    #[arg(short = 's', long, requires = "query")]
    slurp: bool,
    /// With --query: strings without quotes (jq -r).
    #[arg(short = 'r', long = "raw-output", requires = "query")]
    raw: bool,
    /// With --query: one line per value (jq -c).
    #[arg(short = 'c', long = "compact-output", requires = "query")]
    compact: bool,
    /// Output lines to skip.
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// Output lines to print at most.
    #[arg(long, default_value_t = 1000)]
    limit: usize,
}

/// `lro cleanup`.
#[derive(Debug, Args)]
pub(crate) struct CleanupArgs {
    /// The directory to clean (default: the configured output_dir, else the
    /// per-user directory the layer writes to by default).
    dir: Option<PathBuf>,
    /// Delete files older than this many seconds (default: the configured
    /// ttl_seconds); each file's own `expires_at` wins when present.
    #[arg(long, value_name = "SECONDS")]
    ttl: Option<u64>,
    /// List what would be deleted, delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Sweep this store instead of a directory: s3://bucket/prefix (gs://,
    /// az://; configured by the AWS_* / GOOGLE_* / AZURE_* variables), or
    /// file:///dir (default: the configured store, when no DIR is given).
    /// Safe while gateways sweep it too.
    #[arg(long, value_name = "URL", conflicts_with = "dir")]
    store: Option<String>,
}

/// Reads the header line of `file` (bounded), and the file's size.
fn read_header(file: &Path) -> Result<(OffloadHeader, u64), String> {
    let shown = file.display();
    let f = std::fs::File::open(file).map_err(|e| format!("{shown}: {e}"))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut line = Vec::new();
    BufReader::new(f.take(MAX_HEADER_BYTES))
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("{shown}: {e}"))?;
    let header: OffloadHeader = serde_json::from_slice(&line)
        .map_err(|e| format!("{shown}: not an offloaded file (its first line: {e})"))?;
    if header.header_type != tower_lro::descriptor::HEADER_TYPE {
        return Err(format!("{shown}: not an offloaded file (no lro_header)"));
    }
    Ok((header, size))
}

/// `expires_at` of the header, parsed.
fn expires_at(header: &OffloadHeader) -> Option<DateTime<Utc>> {
    let at = header.expires_at.as_deref()?;
    DateTime::parse_from_rfc3339(at).ok().map(Into::into)
}

/// "in 38 min", "3 min ago".
fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let minutes = (at - now).num_minutes();
    match minutes {
        0 if at >= now => "in under a minute".into(),
        m if m >= 0 => format!("in {m} min"),
        m => format!("{} min ago", -m),
    }
}

/// Prints the header, the records' fields and the recipes.
pub(crate) fn inspect(args: &InspectArgs) -> Result<(), String> {
    let local = args.file.local()?;
    let file = &local.path;
    let (header, size) = read_header(file)?;
    let now = Utc::now();
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: String| {
        out.push_str(&format!("{label:<9} {value}\n"));
    };
    line(
        &mut out,
        "File",
        format!("{} ({size} bytes)", args.file.file.display()),
    );
    let tool = header.tool.as_deref().unwrap_or("?");
    let written = format!(
        "{} by {tool} (operation {})",
        header.timestamp, header.operation
    );
    line(&mut out, "Written", written);
    if let Some(q) = &header.query {
        line(&mut out, "Query", format!("{q:?}"));
    }
    let records = format!(
        "{} (~{} tokens), detail {}",
        header.count,
        header.estimated_tokens,
        header.detail.as_str()
    );
    line(&mut out, "Records", records);
    if let Some(at) = expires_at(&header) {
        let when = relative(at, now);
        let state = if at <= now { "expired, " } else { "" };
        line(
            &mut out,
            "Expires",
            format!("{} ({state}{when})", at.to_rfc3339()),
        );
    }
    line(&mut out, "Fields", fields(file)?);
    for (n, recipe) in header.recipes.iter().enumerate() {
        let label = if n == 0 { "Recipes" } else { "" };
        line(
            &mut out,
            label,
            format!("{:>2}. {}", n + 1, show_recipe(recipe)),
        );
    }
    print(&out)
}

/// A recipe on one line: its flags, filter and parameters.
fn show_recipe(recipe: &RecipeProgram) -> String {
    let mut s = String::new();
    if !recipe.flags.is_empty() {
        s.push_str(&format!("-{} ", recipe.flags));
    }
    s.push_str(&recipe.filter);
    for (name, value) in &recipe.params {
        s.push_str(&format!("  [{name}={value:?}]"));
    }
    s
}

/// The fields of the first records, most common first, with how many of
/// them have each; or what the records are when they are not objects.
fn fields(file: &Path) -> Result<String, String> {
    let f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut seen = 0usize;
    for line in BufReader::new(f).lines().skip(1).take(SAMPLED_RECORDS) {
        let line = line.map_err(|e| format!("{}: {e}", file.display()))?;
        seen += 1;
        match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(map)) => map
                .keys()
                .for_each(|k| *counts.entry(k.clone()).or_default() += 1),
            Ok(other) => *kinds.entry(kind(&other)).or_default() += 1,
            Err(_) => *kinds.entry("text").or_default() += 1,
        }
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut parts: Vec<String> = ranked.iter().map(|(k, n)| format!("{k} ({n})")).collect();
    parts.extend(kinds.iter().map(|(k, n)| format!("<{k}> ({n})")));
    let sampled = if seen == SAMPLED_RECORDS {
        format!("   (first {SAMPLED_RECORDS} records)")
    } else {
        String::new()
    };
    Ok(format!("{}{sampled}", parts.join(", ")))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Prints the original result.
pub(crate) fn rebuild(args: &RebuildArgs) -> Result<(), String> {
    let local = args.file.local()?;
    let file = &local.path;
    let shown = args.file.file.display();
    let json = match &args.with {
        None => tower_lro::offload::rebuild_file(file).map_err(|e| match e {
            tower_lro::offload::RebuildError::NeedsRewrittenResult => {
                format!("{shown}: {e}: pass it with --with RESULT_JSON_FILE")
            }
            e => format!("{shown}: {e}"),
        })?,
        Some(with) => {
            let read =
                |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
            tower_lro::offload::rebuild_with(&read(file)?, &read(with)?)
                .map_err(|e| format!("{shown}: {e}"))?
        }
    };
    print(&format!("{json}\n"))
}

/// Runs a recipe or a query and prints the page.
pub(crate) fn extract(args: &ExtractArgs) -> Result<(), String> {
    let local = args.file.local()?;
    let (header, _) = read_header(&local.path)?;
    if let Some(at) = expires_at(&header).filter(|at| *at <= Utc::now()) {
        let shown = args.file.file.display();
        return Err(format!(
            "{shown}: expired at {} (lro inspect still reads it)",
            at.to_rfc3339()
        ));
    }
    let query = match (args.recipe, &args.query) {
        (Some(n), _) => recipe_query(&header, n, &args.params)?,
        (None, Some(filter)) => Query::new(filter.clone()).flags(JqFlags {
            slurp: args.slurp,
            raw: args.raw,
            compact: args.compact,
        }),
        (None, None) => return Err("give --recipe N or --query FILTER".into()),
    };
    let paging = Paging {
        offset: args.offset,
        limit: args.limit,
    };
    let page = Extractor::new(ExtractLimits::default())
        .extract_blocking(&local.path, &query, paging)
        .map_err(|e| e.to_string())?;
    for error in &page.errors {
        eprintln!("jq: error: {error}");
    }
    print(&page.text())?;
    if page.more {
        let next = page.offset + page.lines.len();
        eprintln!("lro: more lines follow: --offset {next}");
    }
    Ok(())
}

/// Recipe `n` of the file, its parameters from `--param NAME=VALUE`.
fn recipe_query(header: &OffloadHeader, n: usize, params: &[String]) -> Result<Query, String> {
    let mut given = serde_json::Map::new();
    for param in params {
        let (name, value) = param
            .split_once('=')
            .ok_or_else(|| format!("--param {param:?}: expected NAME=VALUE"))?;
        given.insert(name.to_owned(), Value::String(value.to_owned()));
    }
    header.recipe_query(n, &given).map_err(|e| e.to_string())
}

/// Deletes (or lists, with --dry-run) the expired files.
pub(crate) fn cleanup(args: &CleanupArgs, config: &OffloadConfig) -> Result<(), String> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| config.output_dir.clone());
    let ttl = args.ttl.map_or(config.ttl, Duration::from_secs);
    let url = match (&args.store, &args.dir) {
        (Some(url), _) => url.trim(),
        (None, None) => config.store.as_str(),
        (None, Some(_)) => "",
    };
    let (custodian, shown) = if url.is_empty() {
        let custodian = Custodian::new(dir, ttl);
        let shown = custodian.dir().display().to_string();
        (custodian, shown)
    } else {
        if args.dry_run {
            return Err("--dry-run lists a directory only, not a --store".to_owned());
        }
        let store = tower_lro::store::from_url(url, &dir, config.trust_output_dir)
            .map_err(|e| format!("--store: {e}"))?;
        let shown = url.split(['?', '#']).next().unwrap_or_default().to_owned();
        (Custodian::for_store(store, ttl), shown)
    };
    if args.dry_run {
        let expired = custodian.expired_at(Utc::now());
        let mut out = String::new();
        for path in &expired {
            out.push_str(&format!("{}\n", path.display()));
        }
        out.push_str(&format!(
            "{} expired file(s) in {shown} (dry run: none deleted)\n",
            expired.len()
        ));
        return print(&out);
    }
    let report = custodian.run_once();
    for (path, error) in &report.errors {
        eprintln!("lro: {}: {error}", path.display());
    }
    print(&format!(
        "deleted {} of {} offloaded file(s) in {shown}\n",
        report.deleted.len(),
        report.scanned
    ))?;
    if report.errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} file(s) could not be cleaned",
            report.errors.len()
        ))
    }
}

/// Writes to stdout; a closed pipe (`lro ... | head`) is not an error.
fn print(text: &str) -> Result<(), String> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}
