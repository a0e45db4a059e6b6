//! What the services of one layer share, and the requests a response is
//! watched for.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use http::HeaderName;
use serde_json::Value;

use super::budget::BufferBudget;
use super::sessions::ProxySessions;
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
        }
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

/// Calls that answered with `CreateTaskResult`, by task id: at most
/// [`TaskCalls::CAPACITY`], the oldest forgotten first (its result is then
/// still evaluated, under the name `tasks_result`).
#[derive(Default)]
pub(crate) struct TaskCalls {
    inner: Mutex<TaskMap>,
}

#[derive(Default)]
struct TaskMap {
    calls: HashMap<String, RawCall>,
    /// Task ids, oldest first (each once).
    order: VecDeque<String>,
}

impl std::fmt::Debug for TaskCalls {
    /// The count only: task ids and arguments are the clients' data.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskCalls")
            .field("len", &self.lock().calls.len())
            .finish()
    }
}

impl TaskCalls {
    pub(crate) const CAPACITY: usize = 10_000;

    fn lock(&self) -> std::sync::MutexGuard<'_, TaskMap> {
        // A panic while holding the lock leaves a valid map; keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers the call a task runs (with its own copy of the arguments).
    pub(crate) fn insert(&self, task: String, call: &RawCall) {
        let call = call.detached();
        let mut map = self.lock();
        if map.calls.insert(task.clone(), call).is_none() {
            map.order.push_back(task);
        }
        while map.order.len() > Self::CAPACITY {
            if let Some(oldest) = map.order.pop_front() {
                map.calls.remove(&oldest);
            }
        }
    }

    pub(crate) fn get(&self, task: &str) -> Option<RawCall> {
        self.lock().calls.get(task).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_calls_forget_the_oldest_first() {
        let tasks = TaskCalls::default();
        for i in 0..TaskCalls::CAPACITY + 5 {
            tasks.insert(format!("t{i}"), &RawCall::named(format!("tool{i}")));
        }
        // Inserting a known task again does not count twice.
        tasks.insert("t7".into(), &RawCall::named("again"));
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
