//! The transport-free offload engine.
//!
//! [`Offloader::process`] takes a tool call ([`ToolCall`]: tool name and
//! arguments) and its MCP `CallToolResult` as JSON bytes, and decides:
//!
//! * **inline** — the estimated tokens are `<= threshold_tokens` (default
//!   1600), offloading is disabled, the result is an error (`isError`), or it
//!   holds nothing to offload: the caller keeps the original bytes, untouched;
//! * **offloaded** — the result is written as a JSONL file (a header line,
//!   then one record per line) and a rewritten `CallToolResult` carrying the
//!   [`OffloadResponse`] descriptor is returned;
//! * **truncated** — the file could not be written: the result is returned
//!   inline, cut on record boundaries to fit the threshold, with a warning
//!   block first (the spec's write-failure fallback). The call still succeeds.
//!
//! No HTTP types appear here: the tower layer, a proxy binary or an
//! extraction tool all drive the same engine.
//!
//! # Token estimation
//!
//! The estimate covers what a model would read: the text of the text blocks,
//! or the serialised `structuredContent`, whichever is larger (servers send
//! the same data in both; clients show one). Image, audio and resource blocks
//! are not counted. Estimation is pluggable ([`TokenEstimator`]); the default
//! is the spec's `characters / 4`, CJK-aware ([`ScriptAwareEstimator`]).
//! Results whose byte length alone proves them under the threshold are not
//! even parsed.
//!
//! # Records
//!
//! A JSON array in `structuredContent` or in a text block gives one record
//! per element; an object whose bulk (over half its bytes) is one array gives
//! that array's elements; JSONL text gives its lines; plain text gives one
//! `{"line": n, "text": "..."}` record per non-empty line (empty lines get
//! none; when one record per line would cost more than twice the text,
//! consecutive short lines share a record: `line` is the first one's number
//! and `text` their lines joined by `\n`). Everything else (other
//! fields, other blocks, the object around the array, the exact whitespace of
//! the text) is kept in the header's `rebuild` section: [`rebuild`] restores
//! the original `CallToolResult`, equal as JSON, from the file alone. Literals
//! are never re-serialised, so numbers beyond `f64` and escapes survive.
//!
//! # The rewritten result
//!
//! The rewritten `CallToolResult` is valid MCP: a text block holding the
//! descriptor JSON stands where the first block that gave records stood
//! (with that block's annotations; first when records came from
//! `structuredContent`), followed by a `resource_link` to the file when the
//! client knows them; image, audio and resource blocks, and text blocks
//! that were not record sources, keep their original order around it; `isError`, `_meta`, `resultType` and every other top-level field
//! are kept as they were.
//!
//! **`structuredContent`** carries the descriptor too: some clients show
//! their model only `structuredContent` when a result has it (Claude Code
//! passes `JSON.stringify(structuredContent)` and drops the text blocks),
//! so no model is ever shown an emptied value as if it were the data. When
//! records came from it, its record array is emptied and the descriptor
//! put first in it as the member `offloaded` (`{"memories": [...]}`
//! becomes `{"offloaded": {descriptor}, "memories": []}`, every other field
//! unchanged; a bare record array becomes `[descriptor]`). That is done
//! for a tool declaring no `outputSchema` or an open one (an object schema
//! that admits members it does not name: [`OutputSchema::Open`]); the
//! layer takes closed schemas (`additionalProperties: false`, the usual
//! output of zod) out of the `tools/list` answers it passes on, so that no
//! client validates one, and a result whose schema is known to be closed
//! stays inline ([`PassReason::StructuredSchemaClosed`]). A
//! `structuredContent` member that copied the text (`{"result": "..."}`,
//! what the Python SDK sends for a tool returning `str`) holds the
//! descriptor's JSON text. When `structuredContent` holds no array it is
//! left untouched. The descriptor is taken out again when the original is
//! rebuilt.
//!
//! Which part each client shows its model: the [`offload`](crate::offload)
//! module docs.
//!
//! [`OutputSchema::Open`]: crate::offload::OutputSchema::Open
//! [`PassReason::StructuredSchemaClosed`]: crate::offload::PassReason::StructuredSchemaClosed
//!
//! # Detail level
//!
//! The level the records show, when they are objects: `provenance` → full,
//! a flattened `confidence` or a `content` → medium, else light. The call's
//! `detail` argument and the tool's default (`light` for recall_memories,
//! `medium` for inject_context) name it only for records that are not
//! objects: a recall without `detail` that returned full records is labelled
//! full, and its recipes use fields the records have. It appears in the
//! header, the summary and the guidance, and selects recipes 9 and 10 for
//! memory records.
//!
//! # The descriptor
//!
//! About 850 estimated tokens whatever the records hold (the guidance
//! names the path once first, then the preview and the schema's depth are
//! trimmed); never over the threshold (or 850, when the threshold is
//! lower) and always smaller than the result it replaces (else the result
//! stays inline, `PassReason::DescriptorTooLarge`), with the path in every
//! recipe. Its guidance is the spec's `lro_extract` template (compacted
//! over the budget) when extraction is on, the shell template otherwise. A paged result (a cursor, `has_more` or a total
//! beyond the count in `structuredContent` or around a JSON text's records)
//! gets a `page` addition: the file holds this page, the total when known,
//! and how to ask for the next one. The spec forbids a result offloaded with
//! an active cursor; a layer cannot stop a server from paging, so it tells
//! the agent instead.
//!
//! # Example
//!
//! ```
//! use tower_lro::{OffloadConfig, Offloader, Outcome, ToolCall};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
//! let rows: Vec<_> = (0..500).map(|i| serde_json::json!({"id": i, "level": "info", "msg": "started worker"})).collect();
//! let result = serde_json::json!({
//!     "content": [{"type": "text", "text": serde_json::to_string(&rows).unwrap()}]
//! });
//! let call = ToolCall::new("query_logs", None);
//! match offloader.process(&call, result.to_string().as_bytes()).unwrap() {
//!     Outcome::Offloaded(o) => {
//!         assert_eq!(o.response.summary.count, 500);
//!         assert_eq!(o.response.jq_recipes.len(), 10);
//!         // Nothing is lost: the file alone gives the original back.
//!         let file = std::fs::read_to_string(&o.file.path).unwrap();
//!         let rebuilt: serde_json::Value = serde_json::from_str(&tower_lro::offload::rebuild(&file).unwrap()).unwrap();
//!         assert_eq!(rebuilt, result);
//!     }
//!     other => panic!("expected an offload, got {other:?}"),
//! }
//! ```
//!
//! # Files
//!
//! `offloader` — [`Offloader`] and its whole API; `pipeline` — one result
//! through the steps, in order: `decide` → `records` (split) → `stats` →
//! `recipes` → `file` (header and bytes) → `describe` (the descriptor,
//! fitted) → the store's write, or `fallback` → `rewrite` (the rewritten
//! result). Beside them: `ahead` (the statistics and contract of
//! `structuredContent`'s records, begun during `decide`), `descriptor` (the
//! spec's types), `paging`, `events`, `outcome`, `rebuild` (the read side).

mod decide;
mod describe;
pub mod descriptor;
pub(crate) mod events;
mod fallback;
mod file;
mod offloader;
mod outcome;
mod paging;
mod pipeline;
pub(crate) mod rebuild;
pub(crate) mod recipes;
pub(crate) mod records;
mod rewrite;
mod spilled;
pub(crate) mod stats;

pub use file::operation_name;
pub use offloader::Offloader;
pub use outcome::{Offloaded, Outcome, Truncated};
pub use spilled::SpilledReply;
