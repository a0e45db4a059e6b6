//! The old HTTP+SSE transport of MCP (revision 2024-11-05), for servers
//! that do not speak streamable HTTP.
//!
//! ```text
//! GET  URL            ──► text/event-stream: `event: endpoint` (where to POST),
//!                         then every message of the server as `event: message`
//! POST endpoint (each message of the agent) ──► 202 Accepted
//! ```
//!
//! The answers come on the GET stream, not on the POST's answer; so each
//! request of the agent is remembered by its id (`State::pending`) and its
//! answer, when it comes on the stream, is handed to the request's own HTTP
//! response ([`AwaitedAnswer`]), which is what the offload layer reads:
//! large tool results are offloaded, `lro_extract` and `lro_list` answered,
//! `tools/list` extended exactly as for streamable HTTP. Everything else on
//! the stream (progress, logs, the server's own requests, answers to ids
//! nobody waits for) goes to the agent as it comes, through the bounded
//! queue to stdout; the agent's answers to the server's requests are
//! POSTed like any message.
//!
//! The endpoint must be on the server's own origin ([`connect`]): a server
//! cannot steer the agent's messages elsewhere.
//!
//! When the stream ends (the server restarted, the network dropped), every
//! request waiting for an answer on it gets a JSON-RPC error at once, never
//! a hang; the next message opens a new stream and, before it, sends the
//! agent's `initialize` and `notifications/initialized` again (mcp-remote
//! exits instead). A `404` to a POST (the server forgot the session) does
//! the same, and the message is sent once more.
//!
//! [`AwaitedAnswer`]: awaited::AwaitedAnswer

mod awaited;
mod connect;
mod oversized;
mod stream;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::upstream::UpstreamError;
use super::upstream_body::{UpstreamBody, boxed};
use super::{Shared, within};
use crate::announce::{announce_in_headers, announce_in_initialize};
use crate::auth::Auth;
use awaited::{AwaitedAnswer, Delivery};

/// How long the answer to a replayed `initialize` may take.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes of a POST's own answer read (it is `Accepted`), and how
/// long that may take; the rest is dropped with the connection.
const MAX_POST_ANSWER_BYTES: usize = 64 << 10;
const POST_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the HTTP+SSE transport could not carry a message.
#[derive(Debug, thiserror::Error)]
pub(super) enum LegacyError {
    /// The request failed (connection, timeout, sign-in).
    #[error("{}", super::upstream::error_kind(.0))]
    Upstream(UpstreamError),
    /// The `GET` of the event stream got an HTTP error.
    #[error("the server answered HTTP {} to the GET of an HTTP+SSE event stream: {}", .0.as_u16(), refused_why(*.0))]
    Refused(StatusCode),
    /// The `GET` got something else than an event stream.
    #[error(
        "the server answered the GET of an HTTP+SSE event stream with {0:?}, not text/event-stream: it does not speak the old HTTP+SSE transport (2024-11-05) at this URL"
    )]
    NotEventStream(String),
    /// The stream ended, or said nothing in time, before its endpoint.
    #[error("the server's HTTP+SSE event stream gave no endpoint event: {0}")]
    NoEndpoint(&'static str),
    /// The endpoint is not a URL.
    #[error("the server's HTTP+SSE endpoint event holds no usable URL ({0:?})")]
    BadEndpoint(String),
    /// The endpoint is on another origin than the server's.
    #[error(
        "the server's HTTP+SSE endpoint event names another origin ({endpoint}) than the server's ({server}); refused: the agent's messages go to the server's own origin only"
    )]
    ForeignEndpoint {
        /// The origin the endpoint names.
        endpoint: String,
        /// The server's origin.
        server: String,
    },
    /// A request with the same id is waiting for its answer.
    #[error(
        "a request with id {0} is already waiting for its answer: the ids of requests in flight must differ"
    )]
    IdInUse(String),
    /// The stream kept closing under the message.
    #[error("the server's HTTP+SSE event stream closed while the message was sent")]
    Closed,
}

/// What an HTTP error to the `GET` of the event stream says.
fn refused_why(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => {
            "it wants credentials (a sign-in, which is off or failed, or --header Authorization)"
        }
        StatusCode::FORBIDDEN => "the credentials are not allowed",
        _ => "it does not speak the old HTTP+SSE transport (2024-11-05) at this URL",
    }
}

/// Why an answer cannot be waited for.
#[derive(Debug, PartialEq, Eq)]
enum NoWait {
    /// The stream is gone (another is opened).
    Gone,
    /// A request with the same id waits already.
    InUse,
}

/// A sender of the answer to one request, and the stream it waits on.
type Waiter = (u64, oneshot::Sender<Delivery>);

/// The open stream and the requests waiting for their answers on it.
#[derive(Default)]
struct State {
    /// The endpoint to POST to and the generation of the open stream.
    open: Option<(Uri, u64)>,
    /// How many streams were opened.
    generation: u64,
    /// Ids (as canonical JSON) of requests waiting for their answer.
    pending: HashMap<String, Waiter>,
    /// The task reading the open stream.
    reader: Option<AbortHandle>,
}

/// The HTTP+SSE connection of one run.
#[derive(Default)]
pub(super) struct LegacySse {
    state: Mutex<State>,
    /// Held while a stream is opened (one at a time).
    opening: tokio::sync::Mutex<()>,
}

/// What the transport needs to know of one message.
#[derive(Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<String>,
}

/// The canonical text of a JSON-RPC id, the key of [`State::pending`].
fn id_key(id: &Value) -> String {
    id.to_string()
}

/// The id of a request (`None` for notifications and answers) and
/// whether it is `initialize`.
fn request_of(bytes: &[u8]) -> (Option<String>, bool) {
    let Ok(head) = serde_json::from_slice::<Head>(bytes) else {
        return (None, false);
    };
    match (&head.id, head.method.as_deref()) {
        (Some(id), Some(method)) => (Some(id_key(id)), method == "initialize"),
        _ => (None, false),
    }
}

/// From how many bytes on a message is first read at its edges for its id.
const EDGES_FROM: usize = 64 << 10;

/// The id of an answer (a message with an id and no method). A large one
/// is read at its edges first ([`oversized::at_edges`]): its id is most
/// often there, and a second parse of it all is spared.
fn answer_id(data: &[u8]) -> Option<String> {
    if data.len() > EDGES_FROM {
        let tail = &data[data.len() - oversized::TAIL_BYTES..];
        match oversized::at_edges(&data[..oversized::HEAD_BYTES], tail) {
            oversized::Edges::Answer(id) => return Some(id),
            oversized::Edges::NotAnswer => return None,
            oversized::Edges::Unknown => {}
        }
    }
    let head = serde_json::from_slice::<Head>(data).ok()?;
    match (head.id, head.method) {
        (Some(id), None) => Some(id_key(&id)),
        _ => None,
    }
}

impl LegacySse {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the answer to `key` on the stream of `generation`.
    fn expect(&self, key: &str, generation: u64) -> Result<oneshot::Receiver<Delivery>, NoWait> {
        let mut state = self.lock();
        if state.open.as_ref().map(|(_, g)| *g) != Some(generation) {
            return Err(NoWait::Gone);
        }
        // An id in use: the answers to the two requests could not be distinguished
        // apart (the first stays the one waiting).
        if state.pending.contains_key(key) {
            return Err(NoWait::InUse);
        }
        let (tx, rx) = oneshot::channel();
        state.pending.insert(key.to_owned(), (generation, tx));
        Ok(rx)
    }

    fn forget(&self, key: Option<&str>) {
        if let Some(key) = key {
            self.lock().pending.remove(key);
        }
    }

    /// The waiter of the answer `key`, taken.
    fn answered(&self, key: &str) -> Option<oneshot::Sender<Delivery>> {
        self.lock().pending.remove(key).map(|(_, tx)| tx)
    }

    /// The stream of `generation` is gone: the next message opens another,
    /// and every request waiting on it learns its answer cannot come.
    fn dropped(&self, generation: u64) {
        let mut state = self.lock();
        if state.open.as_ref().map(|(_, g)| *g) == Some(generation) {
            state.open = None;
            // A stream the server forgot (a 404 to a POST) may still be
            // open: it is closed, its events are no longer the agent's.
            if let Some(reader) = state.reader.take() {
                reader.abort();
            }
        }
        state.pending.retain(|_, (g, _)| *g != generation);
    }

    /// Stops reading the stream (the end of the run).
    pub(super) fn close(&self) {
        let mut state = self.lock();
        if let Some(reader) = state.reader.take() {
            reader.abort();
        }
        state.open = None;
        state.pending.clear();
    }
}

impl Shared {
    /// Sends one message of the agent over HTTP+SSE. A request's answer is
    /// an HTTP answer whose body is its answer from the stream, once it
    /// comes; anything else's is the POST's own (`202`).
    pub(super) async fn send_legacy(
        self: &Arc<Self>,
        bytes: Bytes,
    ) -> Result<Response<UpstreamBody>, LegacyError> {
        let (key, initialize) = request_of(&bytes);
        let legacy = &self.transport.legacy;
        // Twice at most: a stream that closes under the message, or a
        // session the server forgot (404), is opened again once.
        for attempt in 0..2 {
            let (endpoint, generation) = self.legacy_endpoint(initialize).await?;
            let answer = match &key {
                Some(key) => match legacy.expect(key, generation) {
                    Ok(rx) => Some(rx),
                    Err(NoWait::Gone) => continue,
                    Err(NoWait::InUse) => return Err(LegacyError::IdInUse(key.clone())),
                },
                None => None,
            };
            let response = match self.post_legacy(&endpoint, bytes.clone()).await {
                Ok(response) => response,
                Err(e) => {
                    legacy.forget(key.as_deref());
                    return Err(LegacyError::Upstream(e));
                }
            };
            let status = response.status();
            if status == StatusCode::NOT_FOUND && attempt == 0 {
                tracing::info!(target: "tower_lro", "the server forgot the HTTP+SSE session; opening a new one");
                legacy.forget(key.as_deref());
                legacy.dropped(generation);
                continue;
            }
            let Some(answer) = answer.filter(|_| status.is_success()) else {
                legacy.forget(key.as_deref());
                return Ok(boxed(response));
            };
            // The POST's own answer ("Accepted") is read, so the connection
            // goes back to the pool.
            let _ = within(
                Some(POST_ANSWER_TIMEOUT),
                Limited::new(response.into_body(), MAX_POST_ANSWER_BYTES).collect(),
            )
            .await;
            return Ok(Response::builder()
                .header(CONTENT_TYPE, "application/json")
                .body(AwaitedAnswer::new(answer, key.clone().unwrap_or_default()).boxed_unsync())
                .unwrap_or_default());
        }
        Err(LegacyError::Closed)
    }

    /// The endpoint of the open stream and its generation; opens one when
    /// there is none (one at a time), and then, unless `initialize` is what
    /// is being sent, sends the agent's `initialize` again first.
    async fn legacy_endpoint(
        self: &Arc<Self>,
        initialize: bool,
    ) -> Result<(Uri, u64), LegacyError> {
        let legacy = &self.transport.legacy;
        if let Some(open) = legacy.lock().open.clone() {
            return Ok(open);
        }
        let _one_at_a_time = legacy.opening.lock().await;
        if let Some(open) = legacy.lock().open.clone() {
            return Ok(open);
        }
        let opened = connect::open(self).await?;
        let generation = {
            let mut state = legacy.lock();
            state.generation += 1;
            state.open = Some((opened.endpoint.clone(), state.generation));
            state.generation
        };
        let reader = tokio::spawn(stream::read(self.clone(), opened.stream, generation));
        legacy.lock().reader = Some(reader.abort_handle());
        let agent_initialize = self.lock().initialize.clone();
        if let Some(agent_initialize) = agent_initialize.filter(|_| !initialize) {
            self.replay_initialize(&opened.endpoint, generation, agent_initialize)
                .await;
        }
        Ok((opened.endpoint, generation))
    }

    /// The agent's `initialize` (under an id of the proxy's own, its answer
    /// not relayed: the agent has had one) and `notifications/initialized`,
    /// on a new stream.
    async fn replay_initialize(&self, endpoint: &Uri, generation: u64, initialize: Bytes) {
        let Ok(mut message) = serde_json::from_slice::<Value>(&initialize) else {
            return;
        };
        let id = Value::from(format!("lro-proxy-renewal-{generation}"));
        message["id"] = id.clone();
        let legacy = &self.transport.legacy;
        let Ok(answer) = legacy.expect(&id_key(&id), generation) else {
            return;
        };
        tracing::info!(target: "tower_lro", "a new HTTP+SSE session: sending the agent's initialize again");
        let sent = self
            .post_legacy(endpoint, Bytes::from(message.to_string()))
            .await;
        if !sent.is_ok_and(|r| r.status().is_success())
            || !matches!(within(Some(REPLAY_TIMEOUT), answer).await, Some(Ok(Ok(_))))
        {
            legacy.forget(Some(&id_key(&id)));
            tracing::warn!(target: "tower_lro", "the new HTTP+SSE session was not initialized");
            return;
        }
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let _ = self
            .post_legacy(endpoint, Bytes::from_static(initialized.as_bytes()))
            .await;
    }

    /// A POST of one message to the endpoint, registering as an LRO proxy
    /// on the way (the header, and `clientInfo.proxy` in `initialize`).
    async fn post_legacy(
        &self,
        endpoint: &Uri,
        bytes: Bytes,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = endpoint.clone();
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        if let Some(bearer) = self.auth.as_ref().and_then(Auth::bearer) {
            headers.insert(AUTHORIZATION, bearer);
        }
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let bytes = if self.announce {
            announce_in_headers(headers);
            announce_in_initialize(bytes)
        } else {
            bytes
        };
        *request.body_mut() = Full::new(bytes);
        match within(self.headers_timeout, self.client.request(request)).await {
            Some(answer) => Ok(answer?),
            None => Err(UpstreamError::Timeout),
        }
    }
}

#[cfg(test)]
mod tests;
