//! What the services of one layer share, and the requests a response is
//! watched for.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use http::HeaderName;
use serde_json::Value;

use super::budget::BufferBudget;
use super::sessions::ProxySessions;
use crate::cleanup::{CleanupHandle, Custodian};
use crate::engine::Offloader;
use crate::engine::events::{OffloadEvent, PassReason};
use crate::wire::jsonrpc::{RawCall, Watched};

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
    pub buffers: BufferBudget,
    /// The cleanup task started by the first request (when the
    /// configuration's `auto_cleanup` is on); stopped when this is dropped.
    pub cleanup: OnceLock<CleanupHandle>,
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
            .field("buffers", &self.buffers)
            .field("cleanup_started", &self.cleanup.get().is_some())
            .finish()
    }
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
}

impl Shared {
    /// The state of a layer around `offloader`, with the default proxy
    /// header, request cap and proxy-session bounds.
    pub(crate) fn new(offloader: Offloader) -> Self {
        Shared {
            buffers: BufferBudget::new(offloader.config().max_buffered_bytes),
            offloader,
            proxy_header: HeaderName::from_static(DEFAULT_PROXY_HEADER),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            sessions: ProxySessions::new(DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_PROXY_SESSION_TTL),
            tasks: TaskCalls::default(),
            cleanup: OnceLock::new(),
        }
    }

    /// Starts the cleanup task, once, if the configuration asks for it and
    /// a tokio runtime is running here (else it is tried again next time).
    pub(crate) fn ensure_cleanup(&self) {
        if self.cleanup.get().is_some() || !self.offloader.config().auto_cleanup {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let interval = self.offloader.config().cleanup_interval;
        self.cleanup
            .get_or_init(|| Custodian::for_offloader(&self.offloader).spawn(interval));
    }

    /// The watched requests of a body, ready for the response (a
    /// `tasks/result` gets the call its task runs, when remembered).
    pub(crate) fn resolve(&self, watched: Vec<(Value, Watched)>) -> Vec<Watch> {
        watched
            .into_iter()
            .map(|(id, w)| match w {
                Watched::Call { call, task } => Watch {
                    id,
                    call,
                    task_augmented: task,
                },
                Watched::TaskResult(task) => Watch {
                    id,
                    call: self
                        .tasks
                        .get(&task)
                        .unwrap_or_else(|| RawCall::named("tasks_result")),
                    task_augmented: false,
                },
            })
            .collect()
    }

    /// Whether `len` bytes (a body, an event) can be passed on without
    /// looking at them: no watched result in them can be over its
    /// threshold, none can be a `CreateTaskResult` to remember, and no one
    /// listens for the `PassedThrough` events that looking would emit.
    pub(crate) fn surely_untouched(&self, watched: &[Watch], len: usize) -> bool {
        watched
            .iter()
            .all(|w| !w.task_augmented && self.offloader.surely_inline(&w.call.name, len))
            && !self.offloader.events().wants_pass_events()
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

/// Calls that answered with `CreateTaskResult`, by task id, until their
/// `tasks/result`: only what the engine reads of each call is kept
/// ([`RawCall::kept`], a few KB at most), for at most [`TaskCalls::TTL`],
/// at most [`TaskCalls::CAPACITY`] tasks and [`TaskCalls::MAX_BYTES`] in
/// all; past a bound the oldest is forgotten first (its result is then
/// still evaluated, under the name `tasks_result`).
#[derive(Default)]
pub(crate) struct TaskCalls {
    inner: Mutex<TaskMap>,
}

#[derive(Default)]
struct TaskMap {
    calls: HashMap<String, RawCall>,
    /// Task ids with the time they were remembered, oldest first (each once).
    order: VecDeque<(String, Instant)>,
    /// Bytes held by `calls` (ids and kept calls).
    bytes: usize,
}

impl std::fmt::Debug for TaskCalls {
    /// Counts only: task ids and arguments are the clients' data.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let map = self.lock();
        f.debug_struct("TaskCalls")
            .field("len", &map.calls.len())
            .field("bytes", &map.bytes)
            .finish()
    }
}

impl TaskMap {
    /// Forgets the oldest task.
    fn pop_oldest(&mut self) {
        if let Some((task, _)) = self.order.pop_front()
            && let Some(call) = self.calls.remove(&task)
        {
            self.bytes -= task.len() + call.size();
        }
    }

    /// Forgets tasks remembered before `deadline`, and the oldest while
    /// over a bound.
    fn evict(&mut self, deadline: Option<Instant>) {
        while let Some((_, at)) = self.order.front() {
            let expired = deadline.is_some_and(|d| *at < d);
            if !expired
                && self.order.len() <= TaskCalls::CAPACITY
                && self.bytes <= TaskCalls::MAX_BYTES
            {
                break;
            }
            self.pop_oldest();
        }
    }
}

impl TaskCalls {
    pub(crate) const CAPACITY: usize = 10_000;
    pub(crate) const MAX_BYTES: usize = 4 << 20;
    pub(crate) const TTL: Duration = Duration::from_secs(3600);

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskMap> {
        // A panic while holding the lock leaves a valid map; keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers the call a task runs (what the engine reads of it).
    pub(crate) fn insert(&self, task: &str, call: &RawCall) {
        self.insert_at(task, call, Instant::now());
    }

    fn insert_at(&self, task: &str, call: &RawCall, now: Instant) {
        let task = cut_id(task);
        let call = call.kept();
        let mut map = self.lock();
        let added = task.len() + call.size();
        match map.calls.insert(task.to_owned(), call) {
            Some(old) => map.bytes -= task.len() + old.size(),
            None => map.order.push_back((task.to_owned(), now)),
        }
        map.bytes += added;
        map.evict(now.checked_sub(Self::TTL));
    }

    /// The call of `task`, if remembered (and not expired).
    pub(crate) fn get(&self, task: &str) -> Option<RawCall> {
        self.get_at(task, Instant::now())
    }

    fn get_at(&self, task: &str, now: Instant) -> Option<RawCall> {
        let mut map = self.lock();
        map.evict(now.checked_sub(Self::TTL));
        map.calls.get(cut_id(task)).cloned()
    }
}

/// A task id as remembered: ids longer than any real one are cut (they
/// still match themselves).
fn cut_id(task: &str) -> &str {
    let mut end = task.len().min(256);
    while !task.is_char_boundary(end) {
        end -= 1;
    }
    &task[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_calls_forget_the_oldest_first() {
        let tasks = TaskCalls::default();
        for i in 0..TaskCalls::CAPACITY + 5 {
            tasks.insert(&format!("t{i}"), &RawCall::named(format!("tool{i}")));
        }
        // Inserting a known task again does not count twice.
        tasks.insert("t7", &RawCall::named("again"));
        for i in 0..5 {
            assert!(tasks.get(&format!("t{i}")).is_none(), "t{i} is the oldest");
        }
        assert_eq!(tasks.get("t5").unwrap().name, "tool5");
        assert_eq!(tasks.get("t7").unwrap().name, "again");
        let last = TaskCalls::CAPACITY + 4;
        assert_eq!(
            tasks.get(&format!("t{last}")).unwrap().name,
            format!("tool{last}")
        );
        assert_eq!(tasks.lock().calls.len(), TaskCalls::CAPACITY);
    }
}

#[cfg(test)]
mod bounds {
    use bytes::Bytes;

    use super::*;

    fn call_with(arguments: &str) -> RawCall {
        RawCall {
            name: "tool".into(),
            arguments: Some(Bytes::copy_from_slice(arguments.as_bytes())),
        }
    }

    #[test]
    fn only_the_arguments_the_engine_reads_are_kept_and_cut() {
        let big = "x".repeat(1 << 20);
        let args = format!(r#"{{"detail":"full","query":"{big}","blob":"{big}","n":3}}"#);
        let tasks = TaskCalls::default();
        tasks.insert("t", &call_with(&args));
        let kept = tasks.get("t").unwrap();
        let value: serde_json::Value =
            serde_json::from_slice(kept.arguments.as_ref().unwrap()).unwrap();
        assert_eq!(value["detail"], "full");
        assert_eq!(value["query"].as_str().unwrap().len(), 256);
        assert!(value.get("blob").is_none() && value.get("n").is_none());
        assert!(kept.size() < 1024, "{}", kept.size());
    }

    #[test]
    fn tasks_expire_and_total_bytes_are_bounded() {
        let tasks = TaskCalls::default();
        let start = Instant::now();
        tasks.insert_at("old", &RawCall::named("a"), start);
        assert!(tasks.get_at("old", start + TaskCalls::TTL / 2).is_some());
        assert!(tasks.get_at("old", start + TaskCalls::TTL * 2).is_none());
        // Each call holds ~1.5 KB at most: 10,000 of them stay under the cap,
        // and the byte count never passes it.
        let query = "q".repeat(4096);
        let call = call_with(&format!(
            r#"{{"query":"{query}","filter":"{query}","q":"{query}","pattern":"{query}","search":"{query}","detail":"{query}"}}"#
        ));
        for i in 0..TaskCalls::CAPACITY + 10 {
            tasks.insert_at(&format!("task-{i}-{}", "i".repeat(300)), &call, start);
            assert!(tasks.lock().bytes <= TaskCalls::MAX_BYTES);
        }
        let map = tasks.lock();
        assert!(map.calls.len() <= TaskCalls::CAPACITY);
        let counted: usize = map.calls.iter().map(|(k, c)| k.len() + c.size()).sum();
        assert_eq!(counted, map.bytes);
    }
}
