//! What the agent learns of an HTTP error answer: the server's own
//! JSON-RPC error message when it sent one (read bounded in size and
//! time), and what a demand for the 2026-07-28 revision means to an agent
//! that negotiated an earlier one.

use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use serde_json::Value;

use super::{Shared, within};

/// The largest error answer read for its JSON-RPC error.
const MAX_REFUSAL_BYTES: usize = 64 << 10;
/// How long an error answer's body may take.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the agent learns of an HTTP error answer: the server's own
/// JSON-RPC error message when it sent one, and, when the server demands
/// the 2026-07-28 revision of an agent that speaks an earlier one, what
/// that means.
pub(super) async fn refusal<B>(status: StatusCode, body: B, shared: &Shared) -> String
where
    B: http_body::Body<Data = Bytes>,
{
    let mut body = std::pin::pin!(body);
    let mut bytes = Vec::new();
    while bytes.len() < MAX_REFUSAL_BYTES {
        match within(Some(REFUSAL_TIMEOUT), body.frame()).await {
            Some(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    let error = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("error").cloned());
    let code = error.as_ref().and_then(|e| e.get("code")?.as_i64());
    let Some(message) = error.as_ref().and_then(|e| e.get("message")?.as_str()) else {
        return format!("the server answered HTTP {}", status.as_u16());
    };
    let revision = shared
        .lock()
        .version
        .as_ref()
        .and_then(|v| v.to_str().ok().map(str::to_owned));
    let per_request = message.contains("protocolVersion") && message.contains("_meta");
    match revision {
        Some(agent) if agent.as_str() < "2026-07-28" && (per_request || code == Some(-32022)) => {
            format!(
                "protocol revision mismatch: the server requires the 2026-07-28 revision on every request ({message}), and the agent negotiated {agent}; lro proxy relays the agent's own revision and does not translate between them, so use an agent that speaks 2026-07-28"
            )
        }
        _ => format!("the server answered HTTP {}: {message}", status.as_u16()),
    }
}
