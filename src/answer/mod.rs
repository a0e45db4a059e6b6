//! Serving offloaded data over MCP, transport-free: the `lro_extract` and
//! `lro_list` tools and `resources/read` of `lro://files/{name}` (the
//! layer answers them itself; the `lro` command can drive the same code).
//!
//! * `args` — `lro_extract`'s arguments, checked, with clear messages.
//! * `access` — which files a caller may read (name or path in the output
//!   directory, no symbolic link, a valid header, not expired, its owner),
//!   all refusals alike; the keyed owner digest. A file the caller may read
//!   whose records are not the `data_bytes` its header counts (cut short
//!   on disk) is refused by name as damaged, with an `OffloadFileDamaged`
//!   event, rather than served in part.
//! * `manifest` — the tool definitions, added to `tools/list` answers; the
//!   resources capability added to `initialize` answers.
//! * `page` — an extraction page cut to the threshold, and its trailer.
//!
//! # Pages never flood the context
//!
//! An `lro_extract` answer prints compact values, one per line, as `jq -c`
//! does (with `-r` too when the recipe has it): the descriptor's shell
//! recipes keep the spec's text, which pretty-prints, but a model reading
//! over MCP pays for every indentation and line break. It is at most the
//! offload threshold in estimated tokens (the same estimator and threshold
//! as offloading). Past it, the answer holds the whole values that fit and
//! a trailer giving the `offset` of the next page: paging by values, so a
//! page never ends inside a record, rather than offloading the answer
//! again, since a second file would need a second extraction to read, and
//! the agent asked for exactly this part. A single value longer than the
//! budget is cut and the trailer says so (narrow the query to read it
//! whole; an array can be read an element at a time with `| .[]`).
//!
//! A page that is one value other than an object (a slurped count, a
//! number, a string) is also the answer's `structuredContent`, as
//! `{"value": V, "note": trailer}`: Gemini CLI otherwise parses the text as
//! `structuredContent` and fails the call, and clients that show only
//! `structuredContent` then read the same value.

mod access;
mod args;
mod binding;
pub(crate) mod manifest;
mod page;

use chrono::Utc;
use serde_json::{Value, json};

pub(crate) use access::AccessError;
use access::quoted;
pub use binding::{BindingKey, BindingKeyError};
pub(crate) use manifest::{EXTRACT_TOOL, LIST_TOOL, Shadowed};

use crate::engine::Offloader;
use crate::extract::{ExtractError, Extractor, Query};
use crate::store::resource_uri;
use access::{Input, Readable, list_readable, open_readable, read_capped};
use args::{ExtractArgs, Wanted, custom_query, recipe_query};

/// Files `lro_list` shows at most.
pub(crate) const MAX_LISTED: usize = 50;

/// A tool's answer: its text blocks, and whether it is a tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolAnswer {
    /// The text of each content block.
    pub blocks: Vec<String>,
    /// `isError`.
    pub is_error: bool,
}

impl ToolAnswer {
    fn error(message: impl Into<String>) -> Self {
        ToolAnswer {
            blocks: vec![message.into()],
            is_error: true,
        }
    }

    /// `{"value": V}` (with `"note"`, the trailer, when there is one) when
    /// the first block is one JSON value that is not an object, else
    /// `None`. Some clients (Gemini CLI) take a result without
    /// `structuredContent` to be `JSON.parse` of its first text block and
    /// then reject it unless it is an object: one array, number or string
    /// printed by a query would fail the call there. Clients that show
    /// `structuredContent` rather than the text (Claude Code, Codex CLI)
    /// then read the same value and the same trailer.
    fn lone_value(&self) -> Option<Value> {
        let first = self.blocks.first()?;
        let value: Value = serde_json::from_str(first).ok()?;
        if value.is_object() {
            return None;
        }
        let mut structured = json!({ "value": value });
        if let Some(note) = self.blocks.get(1) {
            structured["note"] = Value::from(note.as_str());
        }
        Some(structured)
    }

    /// The `CallToolResult` JSON; `result_type`: with `resultType:
    /// "complete"` (protocol 2026-07-28 and later require it).
    pub(crate) fn to_result_json(&self, result_type: bool) -> String {
        let content: Vec<Value> = self
            .blocks
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        let mut result = json!({"content": content});
        if self.is_error {
            result["isError"] = Value::Bool(true);
        } else if let Some(structured) = self.lone_value() {
            result["structuredContent"] = structured;
        }
        if result_type {
            result["resultType"] = Value::from("complete");
        }
        result.to_string()
    }
}

/// Answers `lro_extract` with `arguments` for a caller whose owner digest
/// is `owner`. Never fails: every problem is a tool error.
pub(crate) async fn extract(
    offloader: &Offloader,
    extractor: &Extractor,
    arguments: Option<&Value>,
    owner: Option<&str>,
) -> ToolAnswer {
    let args = match ExtractArgs::parse(arguments) {
        Ok(a) => a,
        Err(e) => return ToolAnswer::error(e.0),
    };
    let (file, query, input) = match open_blocking(offloader, &args, owner).await {
        Ok(f) => f,
        Err(message) => return ToolAnswer::error(message),
    };
    let page = match input {
        Input::Path(path) => extractor.extract(&path, &query, args.paging).await,
        Input::Reader(reader, size) => {
            extractor
                .extract_reader(reader, size, &query, args.paging)
                .await
        }
        Input::Records(reader, span) => {
            extractor
                .extract_from_record(reader, span, &query, args.paging)
                .await
        }
    };
    match page {
        Ok(page) => {
            let budget = offloader.config().threshold_tokens;
            let spread = spread_hint(&query);
            ToolAnswer {
                blocks: page::answer(&page, &*offloader.estimator, budget, spread.as_deref()),
                is_error: false,
            }
        }
        Err(ExtractError::Damaged(detail)) => {
            ToolAnswer::error(access::damaged(offloader, &file, detail).to_string())
        }
        Err(ExtractError::Unreadable | ExtractError::NotOffloaded) => {
            ToolAnswer::error(AccessError::Unavailable(quoted(&args.file)).to_string())
        }
        Err(e) => ToolAnswer::error(format!("lro_extract: {e}")),
    }
}

/// The jq query the arguments ask for, on this file.
fn query_of(args: &ExtractArgs, file: &Readable) -> Result<Query, String> {
    match &args.what {
        Wanted::Query(filter) => {
            if !args.params.is_empty() {
                return Err("params apply to recipes only; a query takes none".into());
            }
            Ok(custom_query(filter, args.slurp))
        }
        Wanted::Recipe(_) if args.slurp => Err("slurp applies to queries only".into()),
        Wanted::Recipe(n) => recipe_query(&file.header.recipes, *n, &args.params).map_err(|e| e.0),
    }
}

/// The arguments that read the elements of an array `query` prints one
/// value at a time (`FILTER | .[]`), when a custom query can say it (a
/// query takes no variables).
fn spread_hint(query: &Query) -> Option<String> {
    if !query.vars().is_empty() || query.jq_flags().raw {
        return None;
    }
    let filter = Value::from(format!("{} | .[]", query.filter()));
    let slurp = if query.jq_flags().slurp {
        ", slurp=true"
    } else {
        ""
    };
    Some(format!("query={filter}{slurp}"))
}

/// [`open_readable`] on the blocking pool, with the query `args` ask for
/// on it and what to read: the file, or a reader of a shared store's
/// object (from the page's first record when the query allows it). An
/// error is the tool error's text.
async fn open_blocking(
    offloader: &Offloader,
    args: &ExtractArgs,
    owner: Option<&str>,
) -> Result<(Readable, Query, Input), String> {
    let (o, a, w) = (offloader.clone(), args.clone(), owner.map(str::to_owned));
    let unavailable = AccessError::Unavailable(quoted(&args.file)).to_string();
    tokio::task::spawn_blocking(move || {
        let file =
            open_readable(&o, &a.file, w.as_deref(), Utc::now()).map_err(|e| e.to_string())?;
        let query = query_of(&a, &file)?.compact(true).by_value(true);
        let input = file
            .input(&o, &query, a.paging.offset)
            .map_err(|e| e.to_string())?;
        Ok((file, query, input))
    })
    .await
    .unwrap_or(Err(unavailable))
}

/// Answers `lro_list`: the files the caller may read, newest first, as
/// many as fit in the threshold (at most [`MAX_LISTED`]).
pub(crate) async fn list(offloader: &Offloader, owner: Option<&str>) -> ToolAnswer {
    let (o, w) = (offloader.clone(), owner.map(str::to_owned));
    let files = tokio::task::spawn_blocking(move || {
        list_readable(&o, w.as_deref(), MAX_LISTED, Utc::now())
    })
    .await
    .unwrap_or_default();
    let entries: Vec<Value> = files.iter().map(entry).collect();
    let budget = offloader.config().threshold_tokens;
    ToolAnswer {
        blocks: vec![page::listing(&entries, &*offloader.estimator, budget)],
        is_error: false,
    }
}

/// One file of `lro_list`.
fn entry(f: &Readable) -> Value {
    let h = &f.header;
    json!({
        "file_path": f.path.to_string_lossy(),
        "uri": resource_uri(&f.name),
        "tool": h.tool.as_deref().unwrap_or(&h.operation),
        "count": h.count,
        "estimated_tokens": h.estimated_tokens,
        "expires_at": h.expires_at,
    })
}

/// The text of the offload file `name` (from an `lro://files/` URI) for a
/// caller whose owner digest is `owner`, if it may read it and it is at
/// most `max_bytes` long.
pub(crate) async fn read_resource(
    offloader: &Offloader,
    name: &str,
    owner: Option<&str>,
    max_bytes: u64,
) -> Result<String, AccessError> {
    let (o, n, w) = (offloader.clone(), name.to_owned(), owner.map(str::to_owned));
    let unavailable = AccessError::Unavailable(quoted(name));
    let read = move || {
        let file = open_readable(&o, &n, w.as_deref(), Utc::now())?;
        if file.size().is_some_and(|size| size > max_bytes) {
            return Err(AccessError::TooLarge { max: max_bytes });
        }
        let local = file.local_path(&o)?;
        read_capped(&local, max_bytes).ok_or(AccessError::TooLarge { max: max_bytes })
    };
    tokio::task::spawn_blocking(read)
        .await
        .unwrap_or(Err(unavailable))
}
