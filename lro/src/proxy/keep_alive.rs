//! Keep-alive (`--keep-alive`, `--ping-interval`): while the link to the
//! server is idle (no request sent for the interval), the proxy sends an
//! MCP `ping` of its own, with the session's headers and token; its answer
//! is read here and never reaches the agent (it comes back on the ping's
//! own POST, under an id of the proxy's, `lro-keepalive-N`).
//!
//! What a ping tells: answered, the link and the session are alive (and
//! the server's GET stream, if it broke off, or may hang on a connection
//! that died while the link was down, is opened again); `404` for the session, the server dropped it (it was
//! restarted, or forgot an idle session), so a new one is made now, as a
//! `404` to an agent's message would ([`renew_session`]), and the agent's
//! next message finds it ready; no answer (refused, reset, or none within
//! the interval, at least 1 s and at most 30 s), the link is dead: logged
//! once, and pinged again each interval until the server answers. A `401`
//! (the token expired while idle) counts as alive: the agent's next
//! message gets the new token, a sign-in never starts from a ping.
//!
//! Pings start once the agent's `initialize` is answered (before it, there
//! is no session to keep), and carry the 2026-07-28 routing headers as the
//! agent's messages do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;

use super::Shared;
use super::message::Message;
use super::session::{renew_session, reopen_stream};
use super::upstream::error_kind;

/// The interval of `--keep-alive` without `--ping-interval`.
pub(super) const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);
/// The most of a ping's answer read while looking for its id.
const MAX_PING_ANSWER_BYTES: usize = 64 << 10;

/// What one ping found.
enum Pong {
    /// The server answered (or asked for a token).
    Alive,
    /// The server dropped the session of this generation.
    SessionDropped(u64),
    /// No answer: why.
    Dead(String),
}

/// Pings the server whenever the link has been idle for `interval`, until
/// the task is aborted (at the end of stdin).
pub(super) fn spawn(shared: &Arc<Shared>, interval: Duration) -> tokio::task::JoinHandle<()> {
    let shared = shared.clone();
    tokio::spawn(async move {
        let limit = interval.clamp(Duration::from_secs(1), Duration::from_secs(30));
        let mut down = false;
        // Runs for the life of the proxy: aborted when stdin ends.
        for n in 1u64.. {
            let idle = shared.idle_for();
            if idle < interval || !shared.session_ready() {
                tokio::time::sleep(interval.saturating_sub(idle).max(interval / 4)).await;
                continue;
            }
            match ping(&shared, n, limit).await {
                Pong::Alive => {
                    if down {
                        tracing::info!(target: "tower_lro", "keep-alive: the server answers again");
                    }
                    reopen_stream(&shared, down);
                    down = false;
                }
                Pong::SessionDropped(generation) => {
                    tracing::info!(target: "tower_lro", "keep-alive: the server dropped the session; renewing it");
                    renew_session(&shared, generation).await;
                    down = false;
                }
                Pong::Dead(why) => {
                    if !down {
                        tracing::warn!(target: "tower_lro", "keep-alive: the server does not answer ({why}); pinging it every {interval:?}");
                    }
                    down = true;
                }
            }
        }
    })
}

/// Sends ping `n` and reads its answer, within `limit`.
async fn ping(shared: &Arc<Shared>, n: u64, limit: Duration) -> Pong {
    let id = format!("\"lro-keepalive-{n}\"");
    let body = Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
    let generation = {
        let session = shared.lock();
        session.id.as_ref().map(|_| session.generation)
    };
    // The 2026-07-28 routing headers, as any message of the agent's gets.
    let text = String::from_utf8_lossy(&body).into_owned();
    let routing = serde_json::from_str(&text)
        .map(|value| Message::new(&text, &value).routing)
        .unwrap_or_default();
    let exchange = async {
        let (mut parts, _) = shared.post(body.clone()).into_parts();
        for (name, value) in routing {
            parts.headers.insert(name, value);
        }
        // Through the transport the run speaks: over HTTP+SSE the answer
        // comes on the event stream, matched to the ping's id.
        let response = shared
            .send_message(parts, body)
            .await
            .map_err(|e| error_kind(&e).to_owned())?;
        let status = response.status();
        match (status, generation) {
            (StatusCode::NOT_FOUND, Some(generation)) => {
                return Ok(Pong::SessionDropped(generation));
            }
            (StatusCode::UNAUTHORIZED, _) => return Ok(Pong::Alive),
            _ if !status.is_success() => return Err(format!("HTTP {status} to a ping")),
            _ => {}
        }
        let mut body = std::pin::pin!(response.into_body());
        let mut seen = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("the answer broke off: {e}"))?;
            if let Ok(data) = frame.into_data() {
                seen.extend_from_slice(&data);
            }
            if contains(&seen, id.as_bytes()) {
                return Ok(Pong::Alive);
            }
            if seen.len() > MAX_PING_ANSWER_BYTES {
                return Err("an answer to a ping too large".to_owned());
            }
        }
        Err("no answer to the ping".to_owned())
    };
    match tokio::time::timeout(limit, exchange).await {
        Ok(Ok(pong)) => pong,
        Ok(Err(why)) => Pong::Dead(why),
        Err(_) => Pong::Dead(format!("no answer within {limit:?}")),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

impl Shared {
    /// How long since a request was last sent upstream.
    fn idle_for(&self) -> Duration {
        let last = *self.last_sent.lock().unwrap_or_else(|e| e.into_inner());
        last.elapsed()
    }

    /// A request was sent upstream now.
    pub(super) fn touch(&self) {
        *self.last_sent.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Whether the session is up (the agent's `initialize` answered).
    fn session_ready(&self) -> bool {
        self.lock().version.is_some()
    }
}
