//! Observability events: what happened to each tool result and each file
//! (see [`OffloadEvent`] for their tracing form).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};

/// One observability event.
///
/// Every event is emitted as a `tracing` event with target `tower_lro`, a
/// stable `event` field holding its name, and the fields listed on its
/// variant (names stable across releases):
///
/// | `event` | level | fields |
/// |---|---|---|
/// | `Offloaded` | INFO | `tool`, `path`, `count`, `estimated_tokens`, `bytes` |
/// | `OffloadWriteFailed` | WARN | `tool`, `error`, `kept`, `total`, `estimated_tokens` |
/// | `OffloadFileExpired` | INFO | `path`, `created_at`, `age_seconds` |
/// | `PassedThrough` | DEBUG, WARN when [notable](PassReason::is_notable) | `tool`, `reason` (see [`PassReason::as_str`]), `detail` |
/// | `OffloadFileDamaged` | WARN | `path`, `detail` |
///
/// Names, paths and messages in events (a tool name is the client's text)
/// are made safe for a log line: control characters escaped, at most 200
/// characters.
///
/// An optional hook receives the same events as [`OffloadEvent`] values, for
/// metrics: a callback ([`EventHook::callback`]) or a bounded tokio channel
/// ([`EventHook::channel`], which never blocks and counts what it drops when
/// the receiver falls behind).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OffloadEvent {
    /// A tool result was written to a file and replaced by a descriptor.
    Offloaded {
        /// The tool that produced the result.
        tool: String,
        /// The file written.
        path: PathBuf,
        /// Records in the file.
        count: usize,
        /// Estimated tokens of the original result.
        estimated_tokens: usize,
        /// Bytes of the original result.
        bytes: usize,
    },
    /// The file could not be written; the result was truncated inline
    /// (the spec's fallback). The request still succeeded.
    OffloadWriteFailed {
        /// The tool that produced the result.
        tool: String,
        /// The write error, as text.
        error: String,
        /// Records kept inline.
        kept: usize,
        /// Records in the full result.
        total: usize,
        /// Estimated tokens of the full result.
        estimated_tokens: usize,
    },
    /// The cleanup task deleted a file whose time-to-live had passed.
    OffloadFileExpired {
        /// The file deleted.
        path: PathBuf,
        /// When it was created (from the ULID in its name).
        created_at: DateTime<Utc>,
        /// Its age when deleted, in seconds.
        age_seconds: u64,
    },
    /// An offloaded file asked for (`lro_extract`, `resources/read`) is
    /// not what its header says (its records are shorter or longer than
    /// the `data_bytes` it counts: cut short on disk, or written to since),
    /// so it was refused rather than served in part.
    OffloadFileDamaged {
        /// The file.
        path: PathBuf,
        /// What does not match.
        detail: String,
    },
    /// A tool result went to the client untouched.
    PassedThrough {
        /// The tool, when known.
        tool: Option<String>,
        /// Why.
        reason: PassReason,
    },
}

impl OffloadEvent {
    /// The event's stable name (`Offloaded`, `OffloadWriteFailed`,
    /// `OffloadFileExpired`, `OffloadFileDamaged`, `PassedThrough`).
    pub fn name(&self) -> &'static str {
        match self {
            OffloadEvent::OffloadFileDamaged { .. } => "OffloadFileDamaged",
            OffloadEvent::Offloaded { .. } => "Offloaded",
            OffloadEvent::OffloadWriteFailed { .. } => "OffloadWriteFailed",
            OffloadEvent::OffloadFileExpired { .. } => "OffloadFileExpired",
            OffloadEvent::PassedThrough { .. } => "PassedThrough",
        }
    }
}

/// Why a tool result passed through untouched.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PassReason {
    /// Offloading is disabled.
    Disabled,
    /// The tool is excluded by policy.
    Excluded,
    /// At or under the token threshold (and under the byte trigger).
    UnderThreshold {
        /// Estimated tokens (an upper bound when the result was too short to
        /// need parsing).
        estimated_tokens: usize,
    },
    /// `isError: true` and error offloading is off for the tool.
    IsError,
    /// Over the threshold, but nothing in it can become records.
    NoRecords,
    /// The result could not be parsed as an MCP `CallToolResult`.
    Unparseable(String),
    /// The request declared `clientInfo.proxy` in its `_meta`. (Requests
    /// passed through because of the proxy header or a proxy session are
    /// never read, so they have no tool to name and emit no event.)
    Proxy,
    /// Buffering the response would have passed the global cap on buffered
    /// bytes.
    BufferCap {
        /// The cap, in bytes.
        limit: usize,
    },
    /// The engine's blocking task did not complete (runtime shutting down).
    Interrupted,
    /// The response body is compressed (`Content-Encoding`, named here): the
    /// layer asks servers for identity bodies, and passes on what a server
    /// compresses anyway.
    Encoded(String),
    /// Even the smallest descriptor would be over its hard bounds: over the
    /// threshold (or 850 estimated tokens when the threshold is lower; an
    /// output directory of a path thousands of characters long), or not
    /// smaller than the result it would replace (a threshold set below the
    /// descriptor's size).
    DescriptorTooLarge {
        /// Estimated tokens of the smallest descriptor.
        descriptor_tokens: usize,
    },
    /// The records are in `structuredContent` and the tool's output schema
    /// is known to be closed (or `structuredContent` already has a member
    /// `offloaded`, or is not an object): the descriptor cannot be
    /// added beside the emptied record array in a form every validating
    /// client accepts, and an emptied array without it would read as "no
    /// data" to a model that is shown `structuredContent`.
    StructuredSchemaClosed,
}

impl PassReason {
    /// The reason's stable name, used as the `reason` field of the tracing
    /// event: `disabled`, `excluded`, `under_threshold`, `is_error`,
    /// `no_records`, `unparseable`, `proxy`, `buffer_cap`, `interrupted`,
    /// `encoded`, `descriptor_too_large`, `structured_schema_closed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            PassReason::DescriptorTooLarge { .. } => "descriptor_too_large",
            PassReason::StructuredSchemaClosed => "structured_schema_closed",
            PassReason::Disabled => "disabled",
            PassReason::Excluded => "excluded",
            PassReason::UnderThreshold { .. } => "under_threshold",
            PassReason::IsError => "is_error",
            PassReason::NoRecords => "no_records",
            PassReason::Unparseable(_) => "unparseable",
            PassReason::Proxy => "proxy",
            PassReason::BufferCap { .. } => "buffer_cap",
            PassReason::Interrupted => "interrupted",
            PassReason::Encoded(_) => "encoded",
        }
    }

    /// Whether a large result may have escaped offloading for this reason
    /// (the server sent something the layer cannot read or hold): such
    /// events are logged at WARN, the others at DEBUG.
    pub fn is_notable(&self) -> bool {
        matches!(
            self,
            PassReason::Unparseable(_)
                | PassReason::BufferCap { .. }
                | PassReason::Interrupted
                | PassReason::Encoded(_)
                | PassReason::StructuredSchemaClosed
        )
    }

    fn detail(&self) -> String {
        match self {
            PassReason::UnderThreshold { estimated_tokens } => {
                format!("estimated_tokens={estimated_tokens}")
            }
            PassReason::Unparseable(e) | PassReason::Encoded(e) => e.clone(),
            PassReason::BufferCap { limit } => format!("limit={limit}"),
            _ => String::new(),
        }
    }
}

type Callback = dyn Fn(&OffloadEvent) + Send + Sync;

/// A user hook receiving every [`OffloadEvent`].
#[derive(Clone)]
pub struct EventHook {
    inner: HookKind,
}

#[derive(Clone)]
enum HookKind {
    Callback(Arc<Callback>),
    Channel {
        tx: tokio::sync::mpsc::Sender<OffloadEvent>,
        dropped: Arc<AtomicU64>,
    },
}

impl std::fmt::Debug for EventHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            HookKind::Callback(_) => f.write_str("EventHook::Callback"),
            HookKind::Channel { dropped, .. } => f
                .debug_struct("EventHook::Channel")
                .field("dropped", &dropped.load(Ordering::Relaxed))
                .finish(),
        }
    }
}

impl EventHook {
    /// A hook calling `f` for every event, on the thread that emits it (an
    /// async worker or a blocking-pool thread): keep it short and never block.
    pub fn callback(f: impl Fn(&OffloadEvent) + Send + Sync + 'static) -> Self {
        EventHook {
            inner: HookKind::Callback(Arc::new(f)),
        }
    }

    /// A hook sending every event to a bounded channel of `capacity` (at
    /// least 1). Never blocks: when the channel is full or closed the event
    /// is dropped and counted ([`dropped`](Self::dropped)).
    pub fn channel(capacity: usize) -> (Self, tokio::sync::mpsc::Receiver<OffloadEvent>) {
        let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
        let hook = EventHook {
            inner: HookKind::Channel {
                tx,
                dropped: Arc::new(AtomicU64::new(0)),
            },
        };
        (hook, rx)
    }

    /// Events a channel hook dropped because its receiver was full or gone
    /// (always 0 for a callback).
    pub fn dropped(&self) -> u64 {
        match &self.inner {
            HookKind::Callback(_) => 0,
            HookKind::Channel { dropped, .. } => dropped.load(Ordering::Relaxed),
        }
    }

    fn deliver(&self, event: &OffloadEvent) {
        match &self.inner {
            HookKind::Callback(f) => f(event),
            HookKind::Channel { tx, dropped } => {
                if tx.try_send(event.clone()).is_err() {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Emits events to `tracing` and to the optional hook. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    hook: Option<EventHook>,
}

impl Events {
    /// Events going to `tracing` and to `hook`.
    pub(crate) fn new(hook: Option<EventHook>) -> Self {
        Events { hook }
    }

    /// Emits `event`.
    pub(crate) fn emit(&self, event: OffloadEvent) {
        let event = event.cleaned();
        trace(&event);
        if let Some(hook) = &self.hook {
            hook.deliver(&event);
        }
    }

    /// Whether [`emit`](Self::emit) would do anything for a `PassedThrough`
    /// event (a hook is set, or tracing listens at DEBUG for `tower_lro`).
    pub(crate) fn wants_pass_events(&self) -> bool {
        self.hook.is_some() || tracing::enabled!(target: "tower_lro", tracing::Level::DEBUG)
    }
}

fn trace(event: &OffloadEvent) {
    match event {
        OffloadEvent::Offloaded {
            tool,
            path,
            count,
            estimated_tokens,
            bytes,
        } => tracing::info!(
            target: "tower_lro",
            event = "Offloaded",
            tool = %tool,
            path = %path.display(),
            count,
            estimated_tokens,
            bytes,
            "tool result offloaded"
        ),
        OffloadEvent::OffloadWriteFailed {
            tool,
            error,
            kept,
            total,
            estimated_tokens,
        } => tracing::warn!(
            target: "tower_lro",
            event = "OffloadWriteFailed",
            tool = %tool,
            error = %error,
            kept,
            total,
            estimated_tokens,
            "offload write failed; result truncated inline"
        ),
        OffloadEvent::OffloadFileExpired {
            path,
            created_at,
            age_seconds,
        } => tracing::info!(
            target: "tower_lro",
            event = "OffloadFileExpired",
            path = %path.display(),
            created_at = %created_at.to_rfc3339(),
            age_seconds,
            "expired offload file deleted"
        ),
        OffloadEvent::OffloadFileDamaged { path, detail } => tracing::warn!(
            target: "tower_lro",
            event = "OffloadFileDamaged",
            path = %path.display(),
            detail = %detail,
            "damaged offload file refused"
        ),
        OffloadEvent::PassedThrough { tool, reason } => {
            // One form, two levels (a tracing level must be known statically).
            macro_rules! passed {
                ($level:ident) => {
                    tracing::$level!(
                        target: "tower_lro",
                        event = "PassedThrough",
                        tool = tool.as_deref().unwrap_or(""),
                        reason = reason.as_str(),
                        detail = %reason.detail(),
                        "tool result passed through"
                    )
                };
            }
            if reason.is_notable() {
                passed!(warn)
            } else {
                passed!(debug)
            }
        }
    }
}

/// Characters of a name, path or message kept in an event.
pub(crate) const MAX_LABEL_CHARS: usize = 200;

/// `s` safe for a log line: control characters (newlines, ESC, NUL, ...)
/// escaped as `\n`, `\u{1b}`, ...; at most [`MAX_LABEL_CHARS`] characters,
/// then `…` marking the cut. Borrowed when already safe.
pub(crate) fn clean_label(s: &str) -> std::borrow::Cow<'_, str> {
    let safe = s.len() <= MAX_LABEL_CHARS && !s.chars().any(char::is_control);
    if safe {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(MAX_LABEL_CHARS * 2);
    let mut width = 0;
    for c in s.chars() {
        let escape = c.is_control().then(|| c.escape_default());
        let len = escape.as_ref().map_or(1, |e| e.len());
        if width + len > MAX_LABEL_CHARS {
            out.push('…');
            break;
        }
        width += len;
        match escape {
            Some(e) => out.extend(e),
            None => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `s` made safe for a log line ([`clean_label`]), in place.
pub(crate) fn clean_string(s: &mut String) {
    if let std::borrow::Cow::Owned(c) = clean_label(s) {
        *s = c;
    }
}

fn clean_path(p: &mut PathBuf) {
    if let Some(s) = p.to_str()
        && let std::borrow::Cow::Owned(c) = clean_label(s)
    {
        *p = PathBuf::from(c);
    }
}

impl OffloadEvent {
    /// The event with every name, path and message made safe for a log line
    /// ([`clean_label`]).
    fn cleaned(mut self) -> Self {
        match &mut self {
            OffloadEvent::Offloaded { tool, path, .. } => {
                clean_string(tool);
                clean_path(path);
            }
            OffloadEvent::OffloadWriteFailed { tool, error, .. } => {
                clean_string(tool);
                clean_string(error);
            }
            OffloadEvent::OffloadFileExpired { path, .. } => clean_path(path),
            OffloadEvent::OffloadFileDamaged { path, detail } => {
                clean_path(path);
                clean_string(detail);
            }
            OffloadEvent::PassedThrough { tool, reason } => {
                if let Some(tool) = tool {
                    clean_string(tool);
                }
                if let PassReason::Unparseable(e) | PassReason::Encoded(e) = reason {
                    clean_string(e);
                }
            }
        }
        self
    }
}

#[cfg(test)]
mod labels {
    use super::*;

    #[test]
    fn names_in_events_cannot_forge_log_lines() {
        let (hook, mut rx) = EventHook::channel(4);
        let events = Events::new(Some(hook));
        let forged = format!("t\nevent=Offloaded tool=x\u{1b}[2J\0{}", "n".repeat(10_000));
        events.emit(OffloadEvent::PassedThrough {
            tool: Some(forged),
            reason: PassReason::Unparseable("bad\r\nline".into()),
        });
        let Ok(OffloadEvent::PassedThrough {
            tool: Some(tool),
            reason: PassReason::Unparseable(detail),
        }) = rx.try_recv()
        else {
            panic!("no event");
        };
        assert!(!tool.chars().any(char::is_control), "{tool:?}");
        assert!(
            tool.starts_with("t\\nevent=Offloaded tool=x\\u{1b}[2J\\u{0}"),
            "{tool}"
        );
        assert!(tool.chars().count() <= MAX_LABEL_CHARS + 1 && tool.ends_with('…'));
        assert_eq!(detail, "bad\\r\\nline");
        assert_eq!(clean_label("plain_tool"), "plain_tool");
    }
}
