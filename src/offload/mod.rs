//! The tower middleware: [`OffloadLayer`] in front of an MCP
//! streamable-http endpoint, and the transport-free engine under it
//! ([`Offloader`]).
//!
//! The layer watches the JSON-RPC `tools/call` (and `tasks/result`)
//! responses going back to the client. When a result's estimated size is
//! over the threshold, the engine writes the full result to a JSONL file (a
//! header line, then one record per line) and the response is rewritten to
//! carry the compact descriptor ([`OffloadResponse`](crate::descriptor::OffloadResponse))
//! instead. Everything else passes through untouched, streaming. The layer
//! also answers, itself, the requests remote clients need to read the files
//! (`lro_extract`, `lro_list`, `resources/read`: [Remote
//! clients](#remote-clients)). Its settings are [`OffloadLayerBuilder`]'s
//! and [`OffloadConfig`](crate::config::OffloadConfig)'s (the spec's
//! `[prompt.offload]` keys; see [`config`](crate::config)).
//!
//! ```
//! use bytes::Bytes;
//! use http::{Request, Response};
//! use http_body_util::{BodyExt, Full};
//! use serde_json::{Value, json};
//! use tower::{BoxError, ServiceBuilder, ServiceExt};
//! use tower_lro::config::OffloadConfig;
//! use tower_lro::offload::{OffloadLayer, RequestBody};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! # let dir = tempfile::tempdir()?;
//! // An MCP server whose every tool answers 500 log rows (about 9,000 tokens).
//! let server = tower::service_fn(|req: Request<RequestBody<Full<Bytes>>>| async move {
//!     let call: Value = serde_json::from_slice(&req.into_body().collect().await?.to_bytes())?;
//!     let rows: Vec<Value> =
//!         (0..500).map(|i| json!({"id": i, "level": "info", "msg": "worker started"})).collect();
//!     let answer = json!({"jsonrpc": "2.0", "id": call["id"],
//!         "result": {"content": [{"type": "text", "text": serde_json::to_string(&rows)?}]}});
//!     Ok::<_, BoxError>(Response::builder()
//!         .header("content-type", "application/json")
//!         .body(Full::new(Bytes::from(answer.to_string())))?)
//! });
//! let service = ServiceBuilder::new()
//!     .layer(OffloadLayer::new(OffloadConfig::default().output_dir(dir.path())))
//!     .service(server);
//!
//! let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
//!                   "params": {"name": "query_logs", "arguments": {}}});
//! let request = Request::post("/mcp")
//!     .header("content-type", "application/json")
//!     .header("accept", "application/json, text/event-stream")
//!     .body(Full::new(Bytes::from(call.to_string())))?;
//! let response = service.oneshot(request).await?;
//! let reply: Value = serde_json::from_slice(&response.into_body().collect().await?.to_bytes())?;
//! let text = reply["result"]["content"][0]["text"].as_str().unwrap();
//! let descriptor: tower_lro::descriptor::OffloadResponse = serde_json::from_str(text)?;
//! assert!(descriptor.offloaded);
//! assert_eq!(descriptor.summary.count, 500);
//! assert_eq!(descriptor.jq_recipes.len(), 10);
//! assert!(std::path::Path::new(&descriptor.file_path).exists()); // the full result, as JSONL
//! # Ok(()) }
//! ```
//!
//! # Where to put it
//!
//! Each of these is a runnable example (`cargo run --example NAME`; it
//! starts on `127.0.0.1:0`, calls a small and a large tool with an rmcp
//! client, prints what the client received and exits; `--serve` keeps it
//! running for your own MCP client).
//!
//! **On one route of an axum app** (`examples/axum_router.rs`):
//!
//! ```no_run
//! use std::sync::Arc;
//! use axum::{Router, routing::get};
//! use rmcp::transport::streamable_http_server::{
//!     StreamableHttpService, StreamableHttpServerConfig, session::local::LocalSessionManager,
//! };
//! use tower::ServiceBuilder;
//! use tower_lro::{OffloadConfig, OffloadLayer};
//!
//! # #[derive(Clone)] struct MyServer;
//! # impl rmcp::ServerHandler for MyServer {}
//! # #[tokio::main] async fn main() -> std::io::Result<()> {
//! let mcp = StreamableHttpService::new(
//!     || Ok(MyServer),
//!     Arc::new(LocalSessionManager::default()),
//!     StreamableHttpServerConfig::default(),
//! );
//! let layer = OffloadLayer::new(
//!     OffloadConfig::default()
//!         .threshold_tokens(1600)      // the spec's default
//!         .output_dir("/tmp/lro"),     // default: a private per-user dir in the temp dir
//! );
//! let app = Router::new()
//!     .route("/health", get(|| async { "ok" }))    // not touched by the layer
//!     .route_service("/mcp", ServiceBuilder::new().layer(layer).service(mcp));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! **rmcp's service served directly, no router** (`examples/rmcp_server.rs`):
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use rmcp::transport::streamable_http_server::{
//! #     StreamableHttpService, StreamableHttpServerConfig, session::local::LocalSessionManager,
//! # };
//! # use tower::ServiceBuilder;
//! # use tower_lro::{OffloadConfig, OffloadLayer};
//! # #[derive(Clone)] struct MyServer;
//! # impl rmcp::ServerHandler for MyServer {}
//! # #[tokio::main] async fn main() -> std::io::Result<()> {
//! let service = ServiceBuilder::new()
//!     .layer(OffloadLayer::new(OffloadConfig::default().output_dir("/tmp/lro")))
//!     .service(StreamableHttpService::new(|| Ok(MyServer), Arc::new(LocalSessionManager::default()),
//!                                         StreamableHttpServerConfig::default()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! loop {
//!     let (stream, _) = listener.accept().await?;
//!     let service = hyper_util::service::TowerToHyperService::new(service.clone());
//!     tokio::spawn(hyper::server::conn::http1::Builder::new()
//!         .serve_connection(hyper_util::rt::TokioIo::new(stream), service));
//! }
//! # }
//! ```
//!
//! **A hand-written hyper / tower service** (`examples/hyper_service.rs`).
//! Any `tower::Service<http::Request<B>>` whose response body is an
//! `http_body::Body<Data = Bytes>` can be wrapped. The layer hands the
//! inner service the request body as [`RequestBody<B>`] (the client's body,
//! chunk for chunk, as it comes; the layer keeps a reference to each chunk
//! to classify the request when the response arrives), so write the
//! service generic over the body type. The inner service must be `Clone`
//! (see [Remote clients](#remote-clients)):
//!
//! ```
//! use std::{future::Future, pin::Pin, task::{Context, Poll}};
//! use bytes::Bytes;
//! use http::{Request, Response};
//! use http_body::Body;
//! use http_body_util::{BodyExt, Full};
//! use tower::{BoxError, Service, ServiceBuilder};
//! use tower_lro::{OffloadConfig, OffloadLayer};
//!
//! #[derive(Clone)]
//! struct McpHandler; // answers initialize, tools/list, tools/call as JSON-RPC
//!
//! impl<B> Service<Request<B>> for McpHandler
//! where B: Body<Data = Bytes> + Send + 'static, B::Error: Into<BoxError>
//! {
//!     type Response = Response<Full<Bytes>>;
//!     type Error = BoxError;
//!     type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;
//!
//!     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
//!         Poll::Ready(Ok(()))
//!     }
//!     fn call(&mut self, req: Request<B>) -> Self::Future {
//!         Box::pin(async move {
//!             let request = req.into_body().collect().await.map_err(Into::<BoxError>::into)?.to_bytes();
//!             let answer: Bytes = json_rpc_answer(&request);
//!             Ok(Response::builder().header("content-type", "application/json").body(Full::new(answer))?)
//!         })
//!     }
//! }
//! # fn json_rpc_answer(_: &[u8]) -> Bytes { Bytes::new() }
//!
//! let service = ServiceBuilder::new().layer(OffloadLayer::builder().build()).service(McpHandler);
//! // serve it with hyper_util::service::TowerToHyperService, as above
//! # fn is_service<S: Service<Request<Full<Bytes>>>>(_: &S) {}
//! # is_service(&service);
//! ```
//!
//! **In front of any MCP server, whatever its language**: `lro gateway`
//! (the `tower-lro-cli` package, `cargo install tower-lro-cli`), a reverse
//! proxy with this layer in it.
//!
//! **Without HTTP**: the engine needs no transport. [`Offloader::process`]
//! decides inline or offload for one `CallToolResult`, and [`rebuild_file`]
//! gives the original result back from a file, exactly.
//!
//! ```
//! use tower_lro::config::OffloadConfig;
//! use tower_lro::offload::{Offloader, Outcome, ToolCall};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let rows: Vec<_> = (0..500).map(|i| serde_json::json!({"id": i, "level": "info", "msg": "started worker"})).collect();
//! # let result = serde_json::json!({"content": [{"type": "text", "text": serde_json::to_string(&rows)?}]});
//! # let result_json = result.to_string();
//! let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
//! let call = ToolCall::new("query_logs", None);
//! # let mut offloaded = false;
//! if let Outcome::Offloaded(o) = offloader.process(&call, result_json.as_bytes())? {
//!     // o.result: the CallToolResult to send instead; o.file.path: the JSONL file
//!     let original = tower_lro::offload::rebuild_file(&o.file.path)?;
//! #   assert_eq!(serde_json::from_str::<serde_json::Value>(&original)?, result);
//! #   offloaded = true;
//! }
//! # assert!(offloaded);
//! # Ok(()) }
//! ```
//!
//! # What the client receives
//!
//! A valid MCP `CallToolResult` in which a text block stands where the
//! offloaded text stood (other blocks, such as images, keep their order
//! around it), holding the descriptor: the spec's
//! [`OffloadResponse`](crate::descriptor::OffloadResponse), plus, when the
//! descriptor has room within its budget, a `preview` of the first 200
//! characters of the data (`preview_chars`).
//! [`descriptor`](crate::descriptor) shows one and has the types.
//!
//! Image, audio and resource blocks, `isError`, `_meta` and `resultType`
//! stay. When the records came from `structuredContent`, the descriptor is
//! put first in it beside the emptied record array (`{"offloaded": {..},
//! "count": 200, "memories": []}`), because some clients show their model
//! `structuredContent` alone; the layer takes closed output schemas out of
//! `tools/list`, so clients that validate a tool's `outputSchema` still
//! accept it (see [What each client shows its model](#what-each-client-shows-its-model)).
//! Memory records get the
//! spec's recipe table exactly; any other records (log lines, rows, JSON
//! arrays, trees, one large object, one long line) get ten recipes built
//! from what they really hold, each printing far less than the data. Every
//! recipe runs under jq 1.6, and `lro_extract` prints the same for it. The
//! descriptor stays under about 850 estimated tokens whatever the records
//! hold; it also says when the file expires (`expires_after_seconds`; the
//! header's `expires_at`) and what `score_range` measures
//! (`summary.score_field`).
//!
//! A result that carries a pagination cursor (`nextCursor`, `next_cursor`,
//! `cursor`, `has_more`, or a `total` beyond its count, in
//! `structuredContent` or around the records of a JSON text) is one page of
//! a longer listing. The spec forbids offloading a result with an active
//! cursor; a layer in front of a server cannot stop the server from paging,
//! so the descriptor's `page` says instead that the file holds this page,
//! the total when known, the next cursor and how to ask for the next page
//! (call the tool again with it; each page is offloaded to a file of its
//! own).
//!
//! # How it treats traffic
//!
//! * Only `POST` bodies are read, up to a cap
//!   ([`DEFAULT_MAX_REQUEST_BYTES`],
//!   [`OffloadLayerBuilder::max_request_bytes`]); a larger body gets its
//!   response passed through. A JSON body is read before the inner service
//!   is called (the layer may answer it itself: [Remote
//!   clients](#remote-clients)) and played back unchanged; with extraction
//!   off, the body reaches the inner service as it comes and the layer
//!   keeps a reference to each chunk. `GET` (never-ending SSE streams),
//!   `DELETE`, and any other request stream through unbuffered. A `POST` goes to
//!   the inner service with `Accept-Encoding: identity` (the layer must
//!   read its answer); an answer compressed all the same passes through
//!   with an `encoded` event.
//! * A `GET` stream resumed with `Last-Event-ID` may replay a result whose
//!   own stream went before it came (the client dropped it): the layer
//!   remembers such calls per session (bounded) and offloads the replayed
//!   result too.
//! * `tools/call` and `tasks/result` responses are evaluated, in JSON
//!   responses (collected, rewritten, `Content-Length` fixed; one whose
//!   length proves every result in it under its threshold streams on
//!   unread) and in SSE streams (events before the result, such as progress
//!   notifications, are forwarded as they arrive; only the result's event
//!   is rewritten, keeping its `id:` and `event:` lines). Legacy JSON-RPC
//!   batches are handled per call.
//! * Results under the threshold, error results (`isError: true`, unless
//!   `offload_errors`), and anything the layer cannot parse pass through
//!   byte for byte. The layer never answers an error of its own; the inner
//!   service's errors, error statuses and broken bodies reach the client as
//!   they were.
//! * **Write failures**: when the file cannot be written (no directory,
//!   disk full, read-only), the result is returned inline, cut on record
//!   boundaries to fit the threshold, with a warning block first (the
//!   spec's fallback); the request succeeds.
//! * **A client that goes away** while its file is being written: the file
//!   is deleted once written, so nothing is left that no one heard
//!   about.
//! * Memory is bounded whatever the result's size: a JSON response over
//!   16 MiB, or one that would pass `max_buffered_bytes` (default 512 MiB,
//!   all responses together), and likewise the one event of an event
//!   stream that carries the watched result, is spilled to a private
//!   temporary file as it arrives and offloaded from there in streaming
//!   passes ([`Offloader::process_spilled`]): a 1 GB result costs tens of
//!   MiB. What stays inline after all (not a result, under the threshold)
//!   is played back from the spill byte for byte. An upstream whose JSON
//!   answer to watched calls breaks off mid-body (the layer held it back,
//!   so nothing of it was sent) gets each of those calls a JSON-RPC error
//!   (-32603, "broke off") in a whole `200` answer: the call fails alone,
//!   not the client's connection. Any other answer that breaks off (an
//!   event stream, already flowing) has its error passed on after the same
//!   bytes as without the layer. Nothing is published either way.
//! * Files expire: the layer runs the spec's `offload_cleanup` task itself
//!   (see [`cleanup`](crate::cleanup)), and [`rebuild_file`] and
//!   `lro_extract` refuse an expired file even before it is deleted.
//!
//! # Remote clients
//!
//! A descriptor's `file_path` is on the server's disk; an agent on another
//! machine, or one without a shell, cannot run its jq recipes. So the layer
//! also serves the files through MCP itself (on by default; `extraction =
//! false` in `[prompt.offload]`, or [`OffloadConfig::extraction`](crate::config::OffloadConfig::extraction)
//! with `false`, turns it off):
//!
//! * **`lro_extract`** (the spec's native extraction tool): `file_path`
//!   from the descriptor (or the bare file name), and either `recipe`
//!   (1-10, the descriptor's recipes, with `params` such as
//!   `{"keyword": "cache"}`) or a jq `query` run on each record
//!   (`slurp: true` runs it once on all of them); `offset` / `limit` page
//!   the output lines. An answer is never more than the threshold in
//!   estimated tokens: past it, it holds the lines that fit and says which
//!   `offset` to ask for next. Mistakes and refusals are tool errors
//!   (`isError: true`). The jq engine is [`extract`](crate::extract).
//! * **`lro_list`**: the offloaded results this client may read, newest
//!   first (file, tool, count, tokens, expiry).
//! * **`resources/read`** of `lro://files/{name}` returns the whole file
//!   (`application/jsonl`); the layer adds the resources capability to the
//!   server's `initialize` answer when it declared none.
//!
//! The two tools are added to the first page of `tools/list` (not when the
//! server has tools of those names: then their calls go to it), and the
//! layer answers their calls without calling the server, as JSON or as an
//! event stream, whichever the client takes (both protocol generations,
//! 2026-07-28 included).
//!
//! Who may read what: a file made in an MCP session (`Mcp-Session-Id`) is
//! readable only in that session (its header keeps a keyed digest of the
//! session, never the id); [`OffloadLayerBuilder::partition`] binds files
//! to tenants instead (e.g. the authenticated principal); without either,
//! the unguessable file name is the capability. A missing, expired,
//! foreign or other-session file, a path outside the output directory and
//! a symbolic link all get the same tool error. Queries are untrusted
//! code: bounded in time, memory, output and concurrency
//! ([`OffloadLayerBuilder::extract_limits`],
//! [`ExtractLimits`](crate::extract::ExtractLimits)).
//!
//! To answer a request itself, the layer reads a JSON `POST` body (up to
//! the classification cap) before calling the inner service, then plays it
//! back unchanged; so the inner service must be `Clone`, as rmcp's
//! `StreamableHttpService` and axum's `Router` are.
//!
//! # Proxy pass-through
//!
//! An LRO proxy (a local process that materialises files on the client's
//! own machine, such as `lro proxy`) needs full results from the remote
//! server. The layer returns a response untouched when:
//!
//! * the request carries the header `lro-proxy: 1` (or `true`; the name is
//!   [`DEFAULT_PROXY_HEADER`], configurable with
//!   [`OffloadLayerBuilder::proxy_header`]);
//! * the session's `initialize` declared `clientInfo.proxy: true` (protocol
//!   versions with sessions: the returned `Mcp-Session-Id` is remembered in
//!   a bounded, expiring set, [`OffloadLayerBuilder::proxy_sessions`], and
//!   forgotten on `DELETE`);
//! * the request's `params._meta["io.modelcontextprotocol/clientInfo"]`
//!   ([`CLIENT_INFO_META_KEY`]) has `proxy: true` (protocol 2026-07-28,
//!   which has no sessions).
//!
//! # Events
//!
//! Events go to `tracing` (target `tower_lro`, a stable `event` field) and
//! to an optional hook ([`OffloadLayerBuilder::event_hook`]):
//! [`EventHook::callback`] or [`EventHook::channel`] (bounded, never
//! blocks, counts what it drops).
//!
//! | `event` | level | fields |
//! |---|---|---|
//! | `Offloaded` | INFO | `tool`, `path`, `count`, `estimated_tokens`, `bytes` |
//! | `OffloadWriteFailed` | WARN | `tool`, `error`, `kept`, `total`, `estimated_tokens` |
//! | `OffloadFileExpired` | INFO | `path`, `created_at`, `age_seconds` |
//! | `PassedThrough` | DEBUG; WARN for `unparseable`, `buffer_cap`, `interrupted`, `encoded` (a large result may have escaped) | `tool`, `reason` (`disabled`, `excluded`, `under_threshold`, `is_error`, `no_records`, `unparseable`, `proxy`, `buffer_cap`, `interrupted`, `encoded`, `descriptor_too_large`), `detail` |
//!
//! Names, paths and messages in events are escaped (control characters)
//! and cut to 200 characters, so a tool name cannot forge a log line.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! # let dir = tempfile::tempdir().unwrap();
//! use tower_lro::offload::{EventHook, OffloadEvent, OffloadLayer};
//!
//! let (hook, mut events) = EventHook::channel(1024);
//! let layer = OffloadLayer::builder()
//! #   .config(tower_lro::config::OffloadConfig::default().output_dir(dir.path()))
//!     .event_hook(hook)
//!     .build();
//! // ... serve; each event as it happens:
//! # drop(layer);
//! while let Ok(event) = events.try_recv() {
//!     if let OffloadEvent::Offloaded { tool, path, .. } = event {
//!         println!("{tool}: {}", path.display());
//!     }
//! }
//! # }
//! ```
//!
//! # Security
//!
//! Both the servers and the agents behind the layer carry other people's
//! content, so every byte the layer reads is treated as hostile:
//!
//! * **The output directory must be private.** Another local user who can
//!   write into it could replace a published file (a recipe then prints
//!   forged records) or plant symlinks at the final names (every offload
//!   fails). By default files go to `tower-lro-{uid}` in the system temp
//!   dir, created `0700`; a configured directory that is a symlink, owned
//!   by another user, or writable by group or others is refused
//!   ([`StoreError::Untrusted`](crate::store::StoreError::Untrusted): an
//!   error logged when the layer is built,
//!   [`OffloadLayerBuilder::try_build`] returns it, and each large result
//!   falls back to the spec's truncation) unless you set
//!   `trust_output_dir`. Files are created `0600`, never through a symlink,
//!   never over an existing file (see [`store`](crate::store)).
//! * **Bounded memory.** Buffered responses share `max_buffered_bytes`
//!   (larger ones are spilled to disk, see above);
//!   what the layer remembers between requests (proxy sessions, the calls
//!   of tasks, calls whose stream was dropped) is bounded in count, bytes
//!   and time, and keeps only the tool name and the few arguments the
//!   descriptor uses.
//! * **Framing.** A body the layer sends carries a length header that
//!   matches it, or none (a `Content-Length` beside `Transfer-Encoding` is
//!   dropped, RFC 9112 §6.3).
//! * **Logs.** Tool names and paths are escaped and cut in events; `Debug`
//!   of the public types shows settings and counts, never session ids,
//!   tool arguments or result data.
//!
//! `tests/layer/hostile.rs` plays a hostile upstream on loopback (stale lengths,
//! compressed answers, server requests reusing the call's id, duplicate
//! members, lone surrogates, odd SSE framing).
//!
//! # Source files
//!
//! `layer` (the layer and its builder) → `service` (tees the request) →
//! `future` (waits for the response) → `respond` (pass through, read as
//! JSON, or rewrite as events) → `json_response` / `sse_rewrite` → `body`
//! (with `replay`, held frames played back); `intercept` (requests the
//! layer answers itself, through the crate's `answer` module) and `caller`
//! (what serving knows per client); below them `request_body` (the request
//! tee), `state` (what the services of one layer share), `memo` (what is
//! remembered between requests, bounded), `sessions` (proxy sessions) and
//! `budget` (the cap on buffered bytes). The engine itself is the crate's
//! `engine` module (see the module map in the crate docs).
//!
//! # What each client shows its model
//!
//! Which parts of a `CallToolResult` each client passes to its model, read
//! from its own code (Claude Code, Codex CLI and Gemini CLI also by running them:
//! `tests/command/agent_clients.rs`):
//!
//! | client | text blocks | `structuredContent` | `resource_link` | `_meta` | its own limit |
//! |---|---|---|---|---|---|
//! | Claude Code 2.1.332 (run) | dropped when `structuredContent` is present | `JSON.stringify` of it, schema or not | one line, `[Resource link: NAME] URI` | dropped | over ~50k chars a 2 KB preview and a saved path; over 25k tokens an error notice and a path |
//! | Codex CLI 0.171.0 (run) | dropped when `structuredContent` is present | `JSON.stringify` of it, schema or not | raw JSON, without `structuredContent` only | dropped | ~10k tokens, the middle cut (a 218 KB result reached its model as 48 KB), nothing saved |
//! | VS Code (source) | dropped when `structuredContent` is present | `JSON.stringify` of it, schema or not | a resource part | dropped | (Copilot: large results to disk) |
//! | Gemini CLI 0.61.0 (run) | each one, in `<untrusted_context>` | dropped (without it, the first text block is `JSON.parse`d as `structuredContent`: a bare JSON array or number there makes its SDK reject the result, so an `lro_extract` answer of one such value also carries it as `structuredContent: {"value": V}`) | one line, `Resource Link: NAME at URI` | dropped | 40,000 chars for one text part: head and tail, full output saved |
//! | Goose (source) | joined | dropped | dropped | dropped | 200,000 chars per block: a saved path, no preview |
//! | MCP Inspector 2.3 (source; no model) | shown | shown; validated against `outputSchema` (a mismatch fails the call) | shown | not shown | none |
//! | Copilot CLI, Cursor | not verified (closed source) | | | | Copilot CLI: 20-30 KB to a file |
//!
//! So the descriptor is in the text block (Gemini CLI, Goose) and in
//! `structuredContent` (Claude Code, Codex, VS Code), and every schema the
//! layer leaves in `tools/list` accepts it (Inspector, the SDK clients).
//! Claude Code and Codex both defer MCP tools behind a tool search: the
//! definitions of `lro_extract` and `lro_list` reach their model only when
//! it searches for them; other clients send them with every request (a
//! [`ClientProfile`](crate::config::ClientProfile) lists them only once
//! something was offloaded, or never).
//!
//! **Client profiles.** The layer learns each client's name from
//! `initialize`'s `clientInfo` (remembered per `Mcp-Session-Id`, bounded)
//! or from the request's 2026-07-28 `_meta` client info, and applies that
//! client's [`ClientProfile`](crate::config::ClientProfile): its own
//! threshold and result limit, offloading off, the shell guidance where
//! its model has a shell on the files' machine, and when `lro_extract` and
//! `lro_list` are in its `tools/list`: always, never, or once something
//! was offloaded in its session (the layer then declares
//! `tools.listChanged` in `initialize` and sends
//! `notifications/tools/list_changed` just before that first offloaded
//! result, a JSON answer becoming an event stream of the two). Profiles
//! ship for Claude Code, Codex CLI, Gemini CLI, Goose and VS Code (the
//! table and the reasons: [`config::client`](crate::config::ClientProfile));
//! configuration overrides them key by key (`[prompt.offload.clients.NAME]`,
//! `ATLATL_PROMPT__OFFLOAD__CLIENTS__NAME__KEY`, per route in `lro
//! gateway`) or turns them off (`builtin_profiles = false`). A client
//! without a profile, a name, or whose name the layer never saw gets the
//! rest of the configuration.

// The one file over 500 lines, for its guide: the rustdoc above (what the
// layer does, remote clients, proxies, client profiles, with examples) is
// this module's page in `cargo doc`, as in tower-http's modules; the code
// is the fifty lines below.

mod body;
mod budget;
mod caller;
mod future;
mod intercept;
mod json_response;
#[allow(clippy::module_inception)]
mod layer;
mod memo;
mod replay;
mod request_body;
mod respond;
mod service;
mod sessions;
mod spill;
mod sse_rewrite;
mod sse_spill;
mod state;
mod tools_changed;

pub use body::OffloadBody;
pub use future::ResponseFuture;
pub use layer::{OffloadLayer, OffloadLayerBuilder};
pub use request_body::RequestBody;
pub use service::OffloadService;
pub use state::{
    DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PROXY_HEADER,
    DEFAULT_PROXY_SESSION_TTL,
};

pub use crate::answer::{BindingKey, BindingKeyError};
pub use crate::engine::events::{EventHook, OffloadEvent, PassReason};
pub use crate::engine::rebuild::{rebuild, rebuild_at, rebuild_file, rebuild_with};
pub use crate::engine::records::{Rebuild, RebuildError};
pub use crate::engine::{Offloaded, Offloader, Outcome, SpilledReply, Truncated, operation_name};
pub use crate::wire::call::{OutputSchema, ToolCall};
pub use crate::wire::jsonrpc::CLIENT_INFO_META_KEY;
pub use crate::wire::mcp::ResultError;

// What the history offload layer shares with this one.
#[cfg(feature = "history")]
pub(crate) use budget::BufferBudget;
#[cfg(feature = "history")]
pub(crate) use intercept::{Read, is_json, read_request};
#[cfg(feature = "history")]
pub(crate) use respond::encoding;
