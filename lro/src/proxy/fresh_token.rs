//! A new token and one more try, for the requests that do not go through
//! the offload layer (the GET of the server's stream, the `initialize` of
//! a renewed session); the agent's own messages get theirs in
//! [`relay`](super::relay).

use http::header::{HeaderValue, WWW_AUTHENTICATE};
use http::{Response, StatusCode};
use hyper::body::Incoming;

use super::Shared;

/// The answer to what `send` sends (with the token it reports), unless it
/// fails or is refused; a `401` gets a new token and one more try. `what`
/// names the request in the log.
pub(super) async fn with_fresh_token<F, Fut>(
    shared: &Shared,
    what: &str,
    send: F,
) -> Option<Response<Incoming>>
where
    F: Fn() -> Fut,
    Fut: Future<
        Output = (
            Option<HeaderValue>,
            Result<Response<Incoming>, &'static str>,
        ),
    >,
{
    for attempt in 0..2 {
        let (bearer, sent) = send().await;
        let response = match sent {
            Ok(response) => response,
            Err(why) => {
                tracing::info!(target: "tower_lro", "{what}: {why}");
                return None;
            }
        };
        let status = response.status();
        if status.is_success() {
            return Some(response);
        }
        if status != StatusCode::UNAUTHORIZED
            || attempt > 0
            || !renew_token(shared, &response, bearer).await
        {
            tracing::info!(target: "tower_lro", %status, "{what}: refused");
            return None;
        }
    }
    None
}

/// After a `401`: a new token (refresh, client credentials or a sign-in)
/// unless another request got one already; whether there is one now.
async fn renew_token<B>(
    shared: &Shared,
    response: &Response<B>,
    failed: Option<HeaderValue>,
) -> bool {
    let Some(auth) = shared.auth.as_ref() else {
        return false;
    };
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok());
    match auth.renew(challenge, failed.as_ref()).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(target: "tower_lro", "oauth: {e}");
            false
        }
    }
}
