//! [`HistoryEvent`]: what the history layer did with each chat request, to
//! `tracing` and to an optional hook.

use std::sync::Arc;
use std::time::Duration;

use crate::engine::events::clean_string;
use crate::history::HistoryReport;

/// What [`HistoryOffloadLayer`](crate::history::HistoryOffloadLayer) did with one
/// chat request.
///
/// Every event is also a `tracing` event with target `tower_lro` and a
/// stable `event` field holding its [`name`](Self::name):
///
/// | `event` | level | fields |
/// |---|---|---|
/// | `HistoryRewritten` | INFO | `path`, `tokens_before`, `tokens_after`, `files_written`, `bytes_before`, `bytes_after` |
/// | `HistoryUnchanged` | DEBUG | `path` |
/// | `HistoryFellBack` | WARN | `path`, `reason` (see [`FallbackReason::as_str`]), `detail` |
///
/// The path and messages are made safe for a log line (control characters
/// escaped, at most 200 characters).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HistoryEvent {
    /// The request's messages were rewritten; the inner service got the
    /// rewritten body.
    Rewritten {
        /// The request's path.
        path: String,
        /// What the history engine did.
        report: HistoryReport,
        /// Length of the original body.
        bytes_before: usize,
        /// Length of the rewritten body.
        bytes_after: usize,
    },
    /// The history engine left the request as it was (under its
    /// thresholds, or nothing it may touch).
    Unchanged {
        /// The request's path.
        path: String,
    },
    /// The layer could not rewrite the request: the inner service got the
    /// original body, byte for byte. The request itself went on.
    FellBack {
        /// The request's path.
        path: String,
        /// Why.
        reason: FallbackReason,
    },
}

impl HistoryEvent {
    /// The event's stable name (`HistoryRewritten`, `HistoryUnchanged`,
    /// `HistoryFellBack`).
    pub fn name(&self) -> &'static str {
        match self {
            HistoryEvent::Rewritten { .. } => "HistoryRewritten",
            HistoryEvent::Unchanged { .. } => "HistoryUnchanged",
            HistoryEvent::FellBack { .. } => "HistoryFellBack",
        }
    }
}

/// Why a chat request went on with its original body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FallbackReason {
    /// The body is longer than the layer reads
    /// ([`max_body_bytes`](crate::history::HistoryOffloadLayerBuilder::max_body_bytes)).
    TooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
    /// Holding the body would pass the cap on bytes held at once by all
    /// requests of the layer.
    BufferCap {
        /// The cap, in bytes.
        limit: usize,
    },
    /// The body is compressed (`Content-Encoding`, named here).
    Encoded(String),
    /// The body could not be read to its end (the error, as text); the
    /// inner service gets what was read, then the same error.
    BodyError(String),
    /// The history engine failed (a body that is not a chat request in
    /// JSON, a summarizer or file store that failed; its message).
    Rewrite(String),
    /// The rewrite took longer than allowed.
    TimedOut(Duration),
}

impl FallbackReason {
    /// The reason's stable name, the `reason` field of the tracing event:
    /// `too_large`, `buffer_cap`, `encoded`, `body_error`, `rewrite`,
    /// `timed_out`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FallbackReason::TooLarge { .. } => "too_large",
            FallbackReason::BufferCap { .. } => "buffer_cap",
            FallbackReason::Encoded(_) => "encoded",
            FallbackReason::BodyError(_) => "body_error",
            FallbackReason::Rewrite(_) => "rewrite",
            FallbackReason::TimedOut(_) => "timed_out",
        }
    }

    /// Its message made safe for a log line.
    fn clean(&mut self) {
        if let FallbackReason::Encoded(e)
        | FallbackReason::BodyError(e)
        | FallbackReason::Rewrite(e) = self
        {
            clean_string(e);
        }
    }

    fn detail(&self) -> String {
        match self {
            FallbackReason::TooLarge { limit } | FallbackReason::BufferCap { limit } => {
                format!("limit={limit}")
            }
            FallbackReason::Encoded(e)
            | FallbackReason::BodyError(e)
            | FallbackReason::Rewrite(e) => e.clone(),
            FallbackReason::TimedOut(d) => format!("after={d:?}"),
        }
    }
}

type Callback = dyn Fn(&HistoryEvent) + Send + Sync;

/// Emits history events to `tracing` and to the optional hook. Cheap to
/// clone.
#[derive(Clone, Default)]
pub(crate) struct HistoryEvents {
    hook: Option<Arc<Callback>>,
}

impl std::fmt::Debug for HistoryEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryEvents")
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

impl HistoryEvents {
    /// Events going to `tracing` and to `hook`.
    pub(crate) fn new(hook: Option<Arc<Callback>>) -> Self {
        HistoryEvents { hook }
    }

    /// Emits `event`, its path made safe for a log line.
    pub(crate) fn emit(&self, mut event: HistoryEvent) {
        let (HistoryEvent::Rewritten { path, .. }
        | HistoryEvent::Unchanged { path }
        | HistoryEvent::FellBack { path, .. }) = &mut event;
        clean_string(path);
        if let HistoryEvent::FellBack { reason, .. } = &mut event {
            reason.clean();
        }
        trace(&event);
        if let Some(hook) = &self.hook {
            hook(&event);
        }
    }

    /// A request of `path` went on with its original body, for `reason`.
    pub(crate) fn fell_back(&self, path: &str, reason: FallbackReason) {
        let path = path.to_owned();
        self.emit(HistoryEvent::FellBack { path, reason });
    }
}

fn trace(event: &HistoryEvent) {
    match event {
        HistoryEvent::Rewritten {
            path,
            report,
            bytes_before,
            bytes_after,
        } => tracing::info!(
            target: "tower_lro",
            event = "HistoryRewritten",
            path = %path,
            tokens_before = report.tokens_before,
            tokens_after = report.tokens_after,
            files_written = report.files_written.len(),
            bytes_before,
            bytes_after,
        ),
        HistoryEvent::Unchanged { path } => {
            tracing::debug!(target: "tower_lro", event = "HistoryUnchanged", path = %path)
        }
        HistoryEvent::FellBack { path, reason } => tracing::warn!(
            target: "tower_lro",
            event = "HistoryFellBack",
            path = %path,
            reason = reason.as_str(),
            detail = %reason.detail(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn the_hook_gets_events_with_a_path_safe_for_a_log_line() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let events = HistoryEvents::new(Some(Arc::new(move |e: &HistoryEvent| {
            sink.lock().unwrap().push(e.clone());
        })));
        events.fell_back(
            "/v1/chat\n/completions",
            FallbackReason::Encoded("br".into()),
        );
        let seen = seen.lock().unwrap();
        let [HistoryEvent::FellBack { path, reason }] = seen.as_slice() else {
            panic!("{seen:?}");
        };
        assert_eq!(path, "/v1/chat\\n/completions");
        assert_eq!(reason.as_str(), "encoded");
        assert_eq!(seen[0].name(), "HistoryFellBack");
    }
}
