//! Fuzz suite: property-based fuzzing, with proptest,
//! of the code that reads what servers and clients send.
//!
//! * Through the public API: the engine (`Offloader::process`, checked
//!   against `rebuild_file`) in `tests/fuzz_engine.rs`, the layer in
//!   `tests/fuzz_layer.rs`.
//! * Here, the internals that have no public API: the SSE splitter and
//!   data rewriting (`sse.rs`, over `wire::sse`), JSON-RPC classification
//!   and reply reading (`jsonrpc.rs`, over `wire::jsonrpc`), the MCP result
//!   parser (`parse.rs`, over `wire::mcp`) and the byte-level JSON helpers
//!   (`minify.rs`, over `json`).
//!
//! # Why these files are in `tests/` but compiled into the library
//!
//! They test crate-private functions, so they must be compiled inside the
//! crate; they are long (generators, reference readings, models), so they
//! are not written beside the code. `src/lib.rs` includes this directory
//! as the unit-test module `fuzz` (`#[cfg(test)] #[path =
//! "../tests/fuzz/mod.rs"] mod fuzz;`): test code stays out of `src/`, the
//! library's build never sees it, and `cargo test --lib fuzz` runs it.
//! The alternative, making these functions public to reach them from an
//! integration test, would add to the public surface only for tests. The
//! generators and the JSON model (`bounds.rs`, `values.rs`, `results.rs`,
//! `messages.rs`, `model.rs`) use nothing of the crate;
//! `tests/fuzz_engine.rs` includes four of them with `#[path]` too.
//!
//! The generators aim at hostile shapes: nesting a few hundred levels deep
//! (past `serde_json`'s recursion limit of 128, which raw values do not
//! have), huge and out-of-range numbers, escapes and lone surrogates
//! (`\ud800`), duplicate and escaped keys, thousands of tiny records, and
//! CR, LF and CRLF line ends mixed with empty lines; each JSON text is laid
//! out with random whitespace. Every target also runs on arbitrary bytes.
//!
//! # Running it
//!
//! Everything runs on stable, with plain `cargo test`, for a bounded number
//! of cases per target: `LRO_FUZZ_CASES` (default
//! [`DEFAULT_CASES`](bounds::DEFAULT_CASES)) for the cheap targets, a
//! fraction of it for the engine. To fuzz for longer:
//!
//! ```text
//! LRO_FUZZ_CASES=100000 cargo test --release --lib fuzz
//! LRO_FUZZ_CASES=20000 cargo test --release --test fuzz_engine
//! LRO_FUZZ_CASES=20000 cargo test --release --test fuzz_layer
//! ```
//!
//! (`--release` also turns off the crate's `debug_assertions` cross-checks
//! — `RawResult::check_fast`, the outline-versus-parse check of the record
//! shapes — so run a long one in a debug build too.) Each run draws a new
//! random seed; `PROPTEST_RNG_SEED=<n>` replays one. A case slower than
//! `LRO_FUZZ_SLOW_MS` milliseconds (default 10 000) fails as slow.
//!
//! Inputs found crashing or slow are kept beside their target as plain
//! `#[test]`s (`regression_*`) holding the literal input. No property skips
//! a shape: a bug found is fixed, and where the fix changes bytes the model
//! expected, the model says so (see `sse.rs`'s `expected_lines`).

mod bounds;
mod jsonrpc;
mod messages;
mod minify;
mod model;
mod parse;
mod results;
mod sse;
mod values;
