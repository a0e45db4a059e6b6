//! Serving offloaded data: what a layer keeps for it ([`Serving`]) and
//! what it knows of the client of one request ([`Caller`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::header::{ACCEPT, AUTHORIZATION};
use http::request::Parts;

use crate::answer::{BindingKey, EXTRACT_TOOL, LIST_TOOL, Shadowed};
use crate::extract::{ExtractLimits, Extractor};

/// A function that names the tenant a request belongs to (see
/// [`OffloadLayerBuilder::partition`](crate::offload::OffloadLayerBuilder::partition)).
pub(crate) type Partition = Arc<dyn Fn(&Parts) -> Option<String> + Send + Sync>;

/// The `MCP-Protocol-Version` request header.
const PROTOCOL_HEADER: &str = "mcp-protocol-version";
/// The first protocol version whose clients know `resource_link` blocks.
const RESOURCE_LINK_SINCE: &str = "2025-06-18";
/// The first protocol version whose results carry `resultType`.
const RESULT_TYPE_SINCE: &str = "2026-07-28";

/// What the layer keeps to serve offloaded data over MCP.
pub(crate) struct Serving {
    /// Runs the queries of `lro_extract` (one per layer: its slots bound
    /// the evaluations of all services of the layer).
    pub extractor: Extractor,
    /// Keys the owner digests of files.
    pub binding_key: BindingKey,
    /// Names a request's tenant, when files are bound to tenants.
    pub partition: Option<Partition>,
    /// The server lists an `lro_extract` of its own (its calls go to it).
    shadowed_extract: AtomicBool,
    /// The server lists an `lro_list` of its own.
    shadowed_list: AtomicBool,
    /// The server's last answer to a POST was an event stream.
    server_streams: AtomicBool,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving")
            .field("extractor", &self.extractor)
            .field("partition", &self.partition.is_some())
            .field("shadowed_extract", &self.shadowed_extract)
            .field("shadowed_list", &self.shadowed_list)
            .finish_non_exhaustive()
    }
}

impl Serving {
    /// Serving state with these limits, binding key and partition function.
    pub(crate) fn new(
        limits: ExtractLimits,
        binding_key: BindingKey,
        partition: Option<Partition>,
    ) -> Self {
        Serving {
            extractor: Extractor::new(limits),
            binding_key,
            partition,
            shadowed_extract: AtomicBool::new(false),
            shadowed_list: AtomicBool::new(false),
            server_streams: AtomicBool::new(false),
        }
    }

    /// The tools the layer answers (those the server does not list itself;
    /// an empty name for one it does not answer).
    pub(crate) fn tools(&self) -> [&'static str; 2] {
        let answered = |shadowed: &AtomicBool, name| {
            if shadowed.load(Ordering::Relaxed) {
                ""
            } else {
                name
            }
        };
        [
            answered(&self.shadowed_extract, EXTRACT_TOOL),
            answered(&self.shadowed_list, LIST_TOOL),
        ]
    }

    /// Notes which of the layer's tools the server lists itself.
    pub(crate) fn note_shadowed(&self, shadowed: Shadowed) {
        self.shadowed_extract
            .store(shadowed.extract, Ordering::Relaxed);
        self.shadowed_list.store(shadowed.list, Ordering::Relaxed);
    }

    /// Notes the media type of the server's answer to a POST.
    pub(crate) fn note_server_streams(&self, streams: bool) {
        self.server_streams.store(streams, Ordering::Relaxed);
    }

    /// What is known of the client of a request from its head. Its files
    /// are bound to the tenant the partition function names, else to its
    /// credentials (the `Authorization` header), else to nothing (the
    /// unguessable file name is the capability). Never to an MCP session:
    /// the same credentials read their files from any session, or none.
    pub(crate) fn caller(&self, parts: &Parts) -> Caller {
        let tenant = self.partition.as_ref().and_then(|p| p(parts));
        let mut authorization = parts.headers.get_all(AUTHORIZATION).iter().peekable();
        let owner = match tenant {
            Some(t) => Some(self.binding_key.tenant(&t)),
            None if authorization.peek().is_some() => Some(
                self.binding_key
                    .credentials(authorization.map(|v| v.as_bytes())),
            ),
            None => None,
        };
        let protocol = parts
            .headers
            .get(PROTOCOL_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_owned());
        let (json, sse) = accepts(parts);
        let streams = sse && (!json || self.server_streams.load(Ordering::Relaxed));
        Caller {
            owner,
            protocol,
            answer_as_stream: streams,
            accepts_stream: sse,
        }
    }
}

/// Whether the `Accept` header admits JSON and event streams (no header:
/// JSON only).
fn accepts(parts: &Parts) -> (bool, bool) {
    let mut any = false;
    let (mut json, mut sse) = (false, false);
    for value in parts.headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            any = true;
            let essence = item.split(';').next().unwrap_or_default().trim();
            let is = |m: &str| essence.eq_ignore_ascii_case(m);
            json |= is("application/json") || is("application/*") || is("*/*");
            sse |= is("text/event-stream") || is("text/*") || is("*/*");
        }
    }
    if !any {
        return (true, false);
    }
    (json, sse)
}

/// What the layer knows of the client of one request.
#[derive(Clone, Default)]
pub(crate) struct Caller {
    /// Who the files it produces belong to (a keyed digest of its tenant or
    /// credentials; `None`: the file name alone is the capability).
    pub owner: Option<String>,
    /// Its `MCP-Protocol-Version` header.
    pub protocol: Option<String>,
    /// The layer's own answers go as an event stream (the client accepts
    /// only that, or both and the server answers so).
    pub answer_as_stream: bool,
    /// Its `Accept` header admits event streams.
    pub accepts_stream: bool,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("owner", &self.owner.is_some())
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl Caller {
    /// Its offloaded results get a `resource_link` block: its protocol
    /// version knows them.
    pub(crate) fn resource_link(&self) -> bool {
        self.protocol
            .as_deref()
            .is_some_and(|v| v >= RESOURCE_LINK_SINCE)
    }

    /// Results answered to it carry `resultType: "complete"` (the header's
    /// version, or `meta`, the request's `_meta` version).
    pub(crate) fn result_type(&self, meta: Option<&str>) -> bool {
        meta.or(self.protocol.as_deref())
            .is_some_and(|v| v >= RESULT_TYPE_SINCE)
    }
}
