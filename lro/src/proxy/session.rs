//! The session's life: its `Mcp-Session-Id` and protocol version
//! remembered from the `initialize` answer, the server's GET stream opened
//! once per session, a new session made with the agent's own `initialize`
//! when the server drops one, and the session ended with `DELETE` at the
//! end of stdin.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use http::{Method, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;

use super::SESSION_HEADER;
use super::Shared;
use super::answer::relay_events;
use super::fresh_token::with_fresh_token;
use super::upstream::error_kind;
use crate::connect::failure_kind;

/// How long the end of the session (`DELETE`) may take at exit.
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(5);

/// A new session in place of the one the server dropped (generation
/// `dropped`): the agent's `initialize` again (its answer is not relayed:
/// the agent has had one), then `notifications/initialized`, then the
/// server's GET stream again. Done once however many requests saw the 404.
pub(super) async fn renew_session(shared: &Arc<Shared>, dropped: u64) {
    let _one_at_a_time = shared.renewing.lock().await;
    let initialize = {
        let mut session = shared.lock();
        if session.generation != dropped {
            return;
        }
        session.generation += 1;
        session.id = None;
        session.stream_opened = false;
        session.initialize.clone()
    };
    let Some(initialize) = initialize else { return };
    let Some(response) = new_session(shared, initialize).await else {
        return;
    };
    shared.remember_session(response.headers());
    let _ = response.into_body().collect().await;
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let (parts, _) = shared.post(initialized.clone()).into_parts();
    let _ = shared.send_upstream(parts, initialized).await;
    open_stream(shared);
}

/// The server's answer to the agent's `initialize` sent again for a new
/// session; a `401` gets a new token and one more try.
async fn new_session(shared: &Arc<Shared>, initialize: Bytes) -> Option<Response<Incoming>> {
    with_fresh_token(shared, "a new session", || async {
        let (parts, _) = shared.post(initialize.clone()).into_parts();
        let bearer = parts.headers.get(AUTHORIZATION).cloned();
        let sent = shared.send_upstream(parts, initialize.clone()).await;
        (bearer, sent.map_err(|e| error_kind(&e)))
    })
    .await
}

/// Opens the server's GET stream once per session, in the background.
pub(super) fn open_stream(shared: &Arc<Shared>) {
    let generation = {
        let mut session = shared.session.lock().unwrap_or_else(|e| e.into_inner());
        if session.stream_opened || session.id.is_none() {
            return;
        }
        session.stream_opened = true;
        session.stream_broken = false;
        session.generation
    };
    let task_shared = shared.clone();
    let task = tokio::spawn(async move {
        let shared = task_shared;
        let Some(response) = stream_response(&shared).await else {
            return;
        };
        if let Err(why) = relay_events(response.into_body(), &shared, None).await {
            tracing::info!(target: "tower_lro", "server stream ended: {why}");
            let mut session = shared.lock();
            if session.generation == generation {
                session.stream_broken = true;
            }
        }
    });
    let mut session = shared.lock();
    if session.generation == generation {
        session.stream = Some(task.abort_handle());
    }
}

/// The server's stream opened again, when the link is back (a keep-alive
/// ping answered): if it broke off meanwhile, or, after the link was down
/// (`was_down`), in case it hangs on a connection that died silently. Only
/// a stream the session had opened is opened again.
pub(super) fn reopen_stream(shared: &Arc<Shared>, was_down: bool) {
    {
        let mut session = shared.lock();
        if !session.stream_opened || !(session.stream_broken || was_down) {
            return;
        }
        if let Some(old) = session.stream.take() {
            old.abort();
        }
        session.stream_opened = false;
    }
    tracing::info!(target: "tower_lro", "opening the server's stream again");
    open_stream(shared);
}

/// The server's answer to the GET of its stream, when it opens one; a
/// `401` gets a new token (as for any message) and one more try.
async fn stream_response(shared: &Arc<Shared>) -> Option<Response<Incoming>> {
    with_fresh_token(shared, "server stream", || async {
        let request = shared.request(Method::GET, Bytes::new());
        let bearer = request.headers().get(AUTHORIZATION).cloned();
        let sent = shared.client.request(request).await;
        (bearer, sent.map_err(|e| failure_kind(&e)))
    })
    .await
}

/// Ends the session upstream (`DELETE`), when there is one.
pub(super) async fn goodbye(shared: &Shared) {
    let has_session = shared
        .session
        .lock()
        .map(|s| s.id.is_some())
        .unwrap_or(false);
    if !has_session {
        return;
    }
    let request = shared.request(Method::DELETE, Bytes::new());
    let _ = tokio::time::timeout(GOODBYE_TIMEOUT, shared.client.request(request)).await;
}

impl Shared {
    pub(super) fn remember_session(&self, headers: &HeaderMap) {
        if let Some(id) = headers.get(SESSION_HEADER) {
            let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
            session.id = Some(id.clone());
        }
    }

    /// The protocol version of an `initialize` answer.
    pub(super) fn remember_version(&self, answer: &str) {
        let version = serde_json::from_str::<Value>(answer).ok().and_then(|v| {
            let v = v.pointer("/result/protocolVersion")?.as_str()?.to_owned();
            HeaderValue::from_str(&v).ok()
        });
        if let Some(version) = version {
            let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
            session.version = Some(version);
        }
    }
}
