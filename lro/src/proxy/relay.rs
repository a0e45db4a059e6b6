//! One message through the offload layer to the server and its answer
//! back to the agent, with the recoveries the agent never sees: a new
//! session when the server dropped it (`404`), a new token when it wants
//! one (`401`), each followed by one more try. A call of a hidden tool is
//! refused here, without the server.

use std::sync::Arc;

use http::Response;
use http::StatusCode;
use http::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use tower_lro::offload::{OffloadBody, OffloadService};
use tower_service::Service;

use super::Shared;
use super::answer::deliver;
use super::hidden_tools::HiddenTools;
use super::message::Message;
use super::session::{open_stream, renew_session};
use super::upstream::{Upstream, UpstreamError, error_kind};
use super::upstream_body::UpstreamBody;

/// How many times one message is sent again after a recovery (a new
/// token, a new session).
const MAX_RECOVERIES: usize = 2;

/// Sends one message upstream through the layer and relays the answer.
/// When the server has dropped the session (`404` to a request that
/// carried one), a new session is made with the agent's `initialize`; when
/// it wants a (new) token (`401`), one is got; either way the message is
/// sent once more, so the agent never notices. A call of a hidden tool is
/// refused here. `taken` is sent once the server has taken the message
/// (its answer's status is in; for `initialize`, once the answer is
/// relayed, since later requests need its session and version), so the
/// reading of stdin never waits for room on stdout.
pub(super) async fn relay(
    message: Message,
    shared: Arc<Shared>,
    mut service: OffloadService<Upstream>,
    mut taken: Option<tokio::sync::oneshot::Sender<()>>,
) {
    if let (Some(tool), Some(id)) = (&message.tool, &message.request_id)
        && shared.hidden.hides(tool)
    {
        shared.send(&HiddenTools::refusal(id, tool)).await;
        return;
    }
    if message.method.as_deref() == Some("initialize") {
        shared.lock().initialize = Some(message.bytes.clone());
    }
    let (mut with, mut sent) = send(&message, &shared, &mut service).await;
    // After a night's sleep both happen: the token expired (401) and the
    // server dropped the session (404, once the new token is taken).
    for _ in 0..MAX_RECOVERIES {
        let Ok(response) = &sent else { break };
        let status = response.status();
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match recover(status, challenge, &with, &message, &shared).await {
            Recovery::Retry => (with, sent) = send(&message, &shared, &mut service).await,
            Recovery::Fail(why) => sent = Err(UpstreamError::Auth(why)),
            Recovery::None => break,
        }
    }
    if message.method.as_deref() != Some("initialize")
        && let Some(taken) = taken.take()
    {
        let _ = taken.send(());
    }
    let answer = match sent {
        Ok(response) => deliver(response, &shared, &message).await,
        Err(UpstreamError::Auth(why) | UpstreamError::Transport(why)) => Err(why),
        Err(e) => Err(format!("the server cannot be reached ({})", error_kind(&e))),
    };
    if let Err(why) = answer {
        tracing::warn!(target: "tower_lro", method = ?message.method, "{why}");
        shared.owe_error(&message, &why).await;
    }
    if let Some(taken) = taken {
        let _ = taken.send(());
    }
    if message.method.as_deref() == Some("notifications/initialized") {
        open_stream(&shared);
    }
}

/// What a request was sent with: the session generation (`None`: without
/// a session) and the `Authorization` value.
struct SentWith {
    generation: Option<u64>,
    bearer: Option<HeaderValue>,
}

/// What to do about an answer.
enum Recovery {
    /// Send the message once more (a new session, a new token).
    Retry,
    /// Answer the agent with this error.
    Fail(String),
    /// Relay the answer.
    None,
}

/// POSTs one message through the layer; returns what it was sent with and
/// the answer.
async fn send(
    message: &Message,
    shared: &Shared,
    service: &mut OffloadService<Upstream>,
) -> (
    SentWith,
    Result<Response<OffloadBody<UpstreamBody>>, UpstreamError>,
) {
    let mut request = shared.post(message.bytes.clone());
    for (name, value) in &message.routing {
        request.headers_mut().insert(name, value.clone());
    }
    let generation = {
        let session = shared.lock();
        session.id.as_ref().map(|_| session.generation)
    };
    let with = SentWith {
        generation,
        bearer: request.headers().get(AUTHORIZATION).cloned(),
    };
    (with, service.call(request).await)
}

/// A dropped session (`404` to a request that carried one) is renewed; a
/// `401` gets a new token (refresh, or sign-in); either way the message is
/// sent once more.
async fn recover(
    status: StatusCode,
    challenge: Option<String>,
    with: &SentWith,
    message: &Message,
    shared: &Arc<Shared>,
) -> Recovery {
    let initialize = message.method.as_deref() == Some("initialize");
    match (status, with.generation, &shared.auth) {
        (StatusCode::NOT_FOUND, Some(generation), _) if !initialize => {
            tracing::info!(target: "tower_lro", "the server dropped the session; renewing it");
            renew_session(shared, generation).await;
            Recovery::Retry
        }
        (StatusCode::UNAUTHORIZED, _, Some(auth)) => {
            match auth.renew(challenge.as_deref(), with.bearer.as_ref()).await {
                Ok(()) => Recovery::Retry,
                Err(e) => {
                    tracing::warn!(target: "tower_lro", "oauth: {e}");
                    Recovery::Fail(format!("the server needs a sign-in, which failed: {e}"))
                }
            }
        }
        (StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED, None, _) if initialize => {
            Recovery::Fail(format!(
                "the server answered HTTP {} to initialize: it may speak only the old HTTP+SSE transport (2024-11-05), which --transport http-only does not try (http-first, the default, does)",
                status.as_u16()
            ))
        }
        _ => Recovery::None,
    }
}
