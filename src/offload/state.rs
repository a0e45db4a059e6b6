//! What the services of one layer share, and the requests a response is
//! watched for.

use std::sync::OnceLock;
use std::time::Duration;

use http::HeaderName;
use serde_json::Value;

use super::budget::BufferBudget;
use super::caller::Serving;
use super::memo::Memo;
use super::sessions::ProxySessions;
use crate::answer::BindingKey;
use crate::answer::manifest::{ToolEdits, add_capabilities, add_tools};
use crate::cleanup::{CleanupError, CleanupHandle, Custodian};
use crate::config::ToolListing;
use crate::engine::events::{OffloadEvent, PassReason};
use crate::engine::{Offloader, Outcome};
use crate::extract::ExtractLimits;
use crate::wire::call::OutputSchema;
use crate::wire::jsonrpc::{RawCall, Watched};
use remembered::{
    CLIENT_BOUNDS, OUTPUT_SCHEMA_BOUNDS, TASK_BOUNDS, TaskCalls, UNANSWERED_BOUNDS, Unanswered,
};

mod remembered;

/// Default name of the request header that asks for untouched responses.
/// Values `1` and `true` (any case) count.
pub const DEFAULT_PROXY_HEADER: &str = "lro-proxy";
/// Default cap on the request body kept to classify a request (1 MiB).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;
/// Proxy sessions remembered at most.
pub const DEFAULT_MAX_PROXY_SESSIONS: usize = 10_000;
/// A proxy session is forgotten after this long without a request.
pub const DEFAULT_PROXY_SESSION_TTL: Duration = Duration::from_secs(24 * 3600);

/// The `Mcp-Session-Id` header.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// State shared by every service of one layer.
pub(crate) struct Shared {
    pub offloader: Offloader,
    pub proxy_header: HeaderName,
    pub max_request_bytes: usize,
    pub sessions: ProxySessions,
    pub tasks: TaskCalls,
    /// What each tool's `outputSchema` admits, as the client saw it
    /// (from `tools/list`).
    pub output_schemas: Memo<OutputSchema>,
    /// The client name each session gave in `initialize` (`clientInfo.name`).
    pub clients: Memo<String>,
    /// Sessions whose client is listed the layer's tools once something
    /// was offloaded ([`ToolListing::AfterOffload`]) and had an offload
    /// (the value is not read).
    ///
    /// [`ToolListing::AfterOffload`]: crate::config::ToolListing::AfterOffload
    pub offloaded_in: Memo<bool>,
    pub unanswered: Unanswered,
    pub buffers: BufferBudget,
    /// The layer's one cleanup task, once started: by the first request
    /// (when the configuration's `auto_cleanup` is on; stopped when this is
    /// dropped) or by `spawn_cleanup` (its handle given to the caller).
    /// Set once, so no second task is ever started.
    pub cleanup: OnceLock<CleanupTask>,
    /// What serving offloaded data over MCP needs.
    pub serving: Serving,
}

impl std::fmt::Debug for Shared {
    /// Settings and counts only (no session id, no tool argument).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("offloader", &self.offloader)
            .field("proxy_header", &self.proxy_header)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("sessions", &self.sessions)
            .field("tasks", &self.tasks)
            .field("unanswered", &self.unanswered)
            .field("buffers", &self.buffers)
            .field("cleanup_started", &self.cleanup.get().is_some())
            .field("serving", &self.serving)
            .finish()
    }
}

/// Who holds the layer's one cleanup task.
#[derive(Debug)]
pub(crate) enum CleanupTask {
    /// Started by the layer itself; stopped when the layer's state is dropped.
    Held(
        // Never read: kept for its `Drop`, which stops the task.
        #[allow(dead_code)] CleanupHandle,
    ),
    /// Started by `OffloadLayer::spawn_cleanup`; the caller holds the handle.
    HandedOut,
}

/// A response the layer waits for: the JSON-RPC id of a watched request and
/// the call whose result it carries.
pub(crate) struct Watch {
    /// The JSON-RPC id of the request.
    pub id: Value,
    /// The call whose result it carries (a task's original call when known).
    pub call: RawCall,
    /// The request is a task-augmented `tools/call` (`params.task`): the
    /// only kind a server may answer with a `CreateTaskResult`.
    pub task_augmented: bool,
    /// What the answer carries: a tool result, or an answer the layer adds to.
    pub kind: WatchKind,
    /// Who an offload of the result belongs to ([`ToolCall::owner`](crate::offload::ToolCall::owner)).
    pub owner: Option<String>,
    /// Whether an offload of the result gets a `resource_link` block.
    pub resource_link: bool,
    /// The calling client's name (`clientInfo.name`), when known.
    pub client: Option<String>,
    /// The MCP session whose client is listed the layer's tools only once
    /// something was offloaded in it, and can be notified then (see
    /// [`Shared::lazy_session`]).
    pub lazy_session: Option<String>,
}

/// What a watched answer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchKind {
    /// A tool result (of `tools/call` or `tasks/result`): offloaded when large.
    Result,
    /// A first-page `tools/list` result: gets the layer's tools, loses its
    /// closed output schemas.
    ListTools,
    /// A later page of `tools/list`: loses its closed output schemas.
    ListMoreTools,
    /// An `initialize` or `server/discover` result: gets the resources
    /// capability when it has none.
    Capabilities,
}

impl Watch {
    /// A watched tool result of `call`.
    pub(crate) fn result(id: Value, call: RawCall, task_augmented: bool) -> Self {
        Watch {
            id,
            call,
            task_augmented,
            kind: WatchKind::Result,
            owner: None,
            resource_link: false,
            client: None,
            lazy_session: None,
        }
    }

    /// A watched answer the layer adds to.
    pub(crate) fn served(id: Value, kind: WatchKind) -> Self {
        let name = match kind {
            WatchKind::ListTools | WatchKind::ListMoreTools => "tools/list",
            _ => "initialize",
        };
        Watch {
            kind,
            ..Watch::result(id, RawCall::named(name), false)
        }
    }
}

/// What the layer adds to the watches of one request when it serves
/// offloaded data: answers it adds to, and who the results belong to.
#[derive(Default)]
pub(crate) struct Extra {
    /// Watched answers the layer adds to.
    pub watches: Vec<Watch>,
    /// Owner of the request's offloads.
    pub owner: Option<String>,
    /// Whether its offloads get a `resource_link` block.
    pub resource_link: bool,
    /// The client accepts event streams: the layer may answer with one.
    pub accepts_stream: bool,
}

impl Extra {
    /// No added answers; the owner and `resource_link` of `caller`.
    pub(crate) fn from_caller(caller: super::caller::Caller) -> Self {
        Extra {
            watches: Vec::new(),
            resource_link: caller.resource_link(),
            accepts_stream: caller.accepts_stream,
            owner: caller.owner,
        }
    }

    /// Gives `watched` (tool results) their owner and `resource_link`, and
    /// adds the answers the layer adds to.
    pub(crate) fn apply(self, watched: &mut Vec<Watch>) {
        for w in watched.iter_mut() {
            w.owner.clone_from(&self.owner);
            w.resource_link = self.resource_link;
        }
        watched.extend(self.watches);
    }
}

impl Shared {
    /// The state of a layer around `offloader`, with the default proxy
    /// header, request cap and proxy-session bounds.
    pub(crate) fn new(offloader: Offloader) -> Self {
        warn_unmet_profiles(offloader.config());
        Shared {
            buffers: BufferBudget::new(offloader.config().max_buffered_bytes),
            offloader,
            proxy_header: HeaderName::from_static(DEFAULT_PROXY_HEADER),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            sessions: ProxySessions::new(DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_PROXY_SESSION_TTL),
            tasks: TaskCalls::new(TASK_BOUNDS),
            output_schemas: Memo::new(OUTPUT_SCHEMA_BOUNDS),
            clients: Memo::new(CLIENT_BOUNDS),
            offloaded_in: Memo::new(CLIENT_BOUNDS),
            unanswered: Unanswered::new(UNANSWERED_BOUNDS),
            cleanup: OnceLock::new(),
            serving: Serving::new(ExtractLimits::default(), BindingKey::random(), None),
        }
    }

    /// Whether the layer serves offloaded data over MCP.
    pub(crate) fn serves(&self) -> bool {
        let config = self.offloader.config();
        config.enabled && config.extraction
    }

    /// What to put in place of the watched answer `result` (its JSON), if
    /// anything: the offload of a large tool result, or a server answer
    /// with what the layer adds; with it, whether the answer must be
    /// preceded by `notifications/tools/list_changed` (see
    /// [`note_offload`](Self::note_offload)). `result` is the `result` member of a
    /// response validated whole with serde's rules ([`find_results`],
    /// [`read_reply`]): valid JSON, offloaded without validating it again;
    /// `members`, where its members sit, when the validator reported them.
    ///
    /// [`find_results`]: crate::wire::jsonrpc::find_results
    /// [`read_reply`]: crate::wire::jsonrpc::read_reply
    pub(crate) async fn transform(
        &self,
        w: &Watch,
        result: bytestring::ByteString,
        members: Option<crate::wire::mcp::MemberRanges>,
    ) -> Option<(String, bool)> {
        match w.kind {
            WatchKind::Result => {
                let call = self.call_of(w);
                let outcome = self
                    .offloader
                    .process_validated_async(&call, result, members)
                    .await
                    .ok()?;
                let notify = matches!(outcome, Outcome::Offloaded(_)) && self.note_offload(w);
                Some((outcome.into_replacement()?, notify))
            }
            WatchKind::ListTools | WatchKind::ListMoreTools => {
                let text: &str = &result;
                let config = self.offloader.config();
                let client = w.client.as_deref();
                let listed = config.lists_tools_to(client)
                    && w.lazy_session
                        .as_deref()
                        .is_none_or(|s| self.offloaded_in.get(s).is_some());
                let edits = ToolEdits {
                    add_tools: w.kind == WatchKind::ListTools && listed,
                    open_closed_schemas: config.open_output_schemas,
                    max_result_chars: config.profile_for(client).and_then(|p| p.max_result_bytes),
                };
                let (out, shadowed, schemas) = add_tools(text, edits)?;
                if edits.add_tools {
                    self.serving.note_shadowed(shadowed);
                }
                for (tool, declared) in schemas {
                    self.output_schemas.insert(&tool, declared);
                }
                (out != text).then_some((out, false))
            }
            WatchKind::Capabilities => {
                let lazy = self
                    .offloader
                    .config()
                    .tool_listing_for(w.client.as_deref())
                    == ToolListing::AfterOffload;
                add_capabilities(&result, lazy).map(|out| (out, false))
            }
        }
    }

    /// The session of a request whose client is listed the layer's tools
    /// only once something was offloaded in it ([`ToolListing::AfterOffload`]),
    /// when the layer can notify it then: it has a session and accepts an
    /// event stream (the notification goes before the result). `None`:
    /// the tools are listed as usual.
    pub(crate) fn lazy_session(
        &self,
        client: Option<&str>,
        session: Option<&str>,
        accepts_stream: bool,
    ) -> Option<String> {
        let session = session?;
        let lazy = accepts_stream
            && self.serves()
            && self.offloader.config().tool_listing_for(client) == ToolListing::AfterOffload;
        lazy.then(|| session.to_owned())
    }

    /// Notes that the result `w` watches was offloaded to a file; `true`
    /// when this is the first offload of a session that lists the layer's
    /// tools lazily: they are listed from now on, and its answer must be
    /// preceded by `notifications/tools/list_changed` (once per session).
    pub(crate) fn note_offload(&self, w: &Watch) -> bool {
        let Some(session) = &w.lazy_session else {
            return false;
        };
        let mut first = false;
        self.offloaded_in.update(session, |seen| {
            first = seen.is_none();
            true
        });
        first
    }

    /// The call whose result `w` watches, as the engine takes it.
    pub(crate) fn call_of(&self, w: &Watch) -> crate::wire::call::ToolCall {
        let mut call = w.call.to_call();
        call.owner.clone_from(&w.owner);
        call.resource_link = w.resource_link;
        // A tool not seen in `tools/list` (`None`) is taken as declaring no
        // schema: every `tools/list` through a layer has its closed schemas
        // taken out, so no client learnt one through us.
        call.output_schema = self.output_schemas.get(&call.name);
        call.client.clone_from(&w.client);
        call
    }

    /// Starts the cleanup task, once, if the configuration asks for it, no
    /// task was started before (by this or by [`Self::hand_out_cleanup`])
    /// and a tokio runtime is running here (else it is tried again next
    /// time).
    pub(crate) fn ensure_cleanup(&self) {
        if self.cleanup.get().is_some() || !self.offloader.config().auto_cleanup {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.cleanup
            .get_or_init(|| CleanupTask::Held(self.start_cleanup()));
    }

    /// Starts the layer's one cleanup task and hands its handle out; the
    /// layer then starts none itself. Refused when a task was started
    /// before (by the layer or an earlier call) or outside a runtime.
    pub(crate) fn hand_out_cleanup(&self) -> Result<CleanupHandle, CleanupError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(CleanupError::NoRuntime);
        }
        let mut handed = None;
        self.cleanup.get_or_init(|| {
            handed = Some(self.start_cleanup());
            CleanupTask::HandedOut
        });
        handed.ok_or(CleanupError::AlreadyStarted)
    }

    /// A new cleanup task of the engine's files, on its configured interval.
    fn start_cleanup(&self) -> CleanupHandle {
        let interval = self.offloader.config().cleanup_interval;
        Custodian::for_offloader(&self.offloader).spawn(interval)
    }

    /// The watched requests of a body, ready for the response (a
    /// `tasks/result` gets the call its task runs, when remembered).
    pub(crate) fn resolve(&self, watched: Vec<(Value, Watched)>) -> Vec<Watch> {
        watched
            .into_iter()
            .map(|(id, w)| match w {
                Watched::Call { call, task } => Watch::result(id, call, task),
                Watched::TaskResult(task) => {
                    let call = self.tasks.get(&task);
                    Watch::result(
                        id,
                        call.unwrap_or_else(|| RawCall::named("tasks_result")),
                        false,
                    )
                }
            })
            .collect()
    }

    /// Whether `len` bytes (a body, an event) can be passed on without
    /// looking at them: no watched result in them can be over its
    /// threshold, none can be a `CreateTaskResult` to remember, and no one
    /// listens for the `PassedThrough` events that looking would emit.
    pub(crate) fn passes_unread(&self, watched: &[Watch], len: usize) -> bool {
        watched.iter().all(|w| {
            w.kind == WatchKind::Result
                && !w.task_augmented
                && self
                    .offloader
                    .inline_by_size(&w.call.name, w.client.as_deref(), len)
        }) && !self.offloader.events().wants_pass_events()
    }

    /// Reports a result of `tool` that passes untouched because the message
    /// carrying it cannot be read (`why`).
    pub(crate) fn unreadable(&self, tool: String, why: String) {
        self.offloader.events().emit(OffloadEvent::PassedThrough {
            tool: Some(tool),
            reason: PassReason::Unparseable(why),
        });
    }

    /// Reports a result of `tool` that passes untouched because the buffer
    /// budget ran out.
    pub(crate) fn over_buffer_cap(&self, tool: String) {
        self.offloader.events().emit(OffloadEvent::PassedThrough {
            tool: Some(tool),
            reason: PassReason::BufferCap {
                limit: self.buffers.limit(),
            },
        });
    }
}

/// Says, once per layer, which client profiles ask for what the layer
/// cannot give: the `lro_extract` guidance where extraction is off or the
/// profile leaves the layer's tools unlisted (that client gets the shell
/// guidance).
fn warn_unmet_profiles(config: &crate::config::OffloadConfig) {
    use crate::config::GuidanceKind;
    for (client, profile) in &config.clients {
        let wants_extract = profile.guidance == Some(GuidanceKind::Extract);
        if wants_extract && !config.extract_guidance_for(Some(client)) {
            tracing::warn!(
                target: "tower_lro",
                client = %client,
                "client profile asks for the lro_extract guidance, but extraction is off or its \
                 tools are not listed to that client: it gets the shell guidance"
            );
        }
    }
}
