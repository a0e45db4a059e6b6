//! What a layer remembers between requests (calls that became tasks,
//! output schemas, client names, calls whose stream went before their
//! result), each in a bounded [`Memo`], with its bounds.

use std::time::Duration;

use serde_json::Value;

use super::super::memo::{Bounds, Memo};
use super::{DEFAULT_MAX_PROXY_SESSIONS, DEFAULT_PROXY_SESSION_TTL, Shared, Watch};
use crate::wire::jsonrpc::RawCall;

/// Calls that answered with `CreateTaskResult`, by task id, until their
/// `tasks/result`: only what the engine reads of each call is kept
/// ([`RawCall::kept`], a few KB at most); past a bound the oldest is
/// forgotten first (its result is then still evaluated, under the name
/// `tasks_result`).
pub(crate) type TaskCalls = Memo<RawCall>;

/// Tools whose `outputSchema` is remembered: a server lists tens, a
/// gateway hundreds; names are cut at 256 characters.
pub(crate) const OUTPUT_SCHEMA_BOUNDS: Bounds = Bounds {
    capacity: 4096,
    max_bytes: 1 << 20,
    ttl: Duration::from_secs(24 * 3600),
};

/// Sessions whose client name is remembered: as many as proxy sessions,
/// for as long.
pub(crate) const CLIENT_BOUNDS: Bounds = Bounds {
    capacity: DEFAULT_MAX_PROXY_SESSIONS,
    max_bytes: 4 << 20,
    ttl: DEFAULT_PROXY_SESSION_TTL,
};

/// Bounds of [`TaskCalls`].
pub(crate) const TASK_BOUNDS: Bounds = Bounds {
    capacity: 10_000,
    max_bytes: 4 << 20,
    ttl: Duration::from_secs(3600),
};

/// Calls whose event stream ended (or was dropped by the client) before
/// their result came, by session, with their JSON-RPC ids: a server may
/// replay the result on a `GET` stream resumed with `Last-Event-ID`.
pub(crate) type Unanswered = Memo<Vec<(Value, RawCall)>>;

/// Bounds of [`Unanswered`].
pub(crate) const UNANSWERED_BOUNDS: Bounds = Bounds {
    capacity: 10_000,
    max_bytes: 4 << 20,
    ttl: Duration::from_secs(3600),
};

/// Calls remembered per session at most.
const UNANSWERED_PER_SESSION: usize = 16;

impl Shared {
    /// Remembers the calls of `session` still watched when its stream went.
    pub(crate) fn remember_unanswered(&self, session: &str, watched: Vec<Watch>) {
        self.unanswered.update(session, |known| {
            let mut calls = known.unwrap_or_default();
            calls.extend(watched.into_iter().map(|w| (w.id, w.call.kept())));
            let over = calls.len().saturating_sub(UNANSWERED_PER_SESSION);
            calls.drain(..over);
            calls
        });
    }

    /// The calls of `session` whose results a resumed stream may replay.
    pub(crate) fn take_unanswered(&self, session: &str) -> Vec<Watch> {
        let calls = self.unanswered.take(session).unwrap_or_default();
        calls
            .into_iter()
            .map(|(id, call)| Watch::result(id, call, false))
            .collect()
    }
}
