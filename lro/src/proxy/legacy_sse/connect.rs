//! Opening the HTTP+SSE event stream: the `GET` (a `401` gets a new token
//! and one more try), then its first event, `endpoint`, whose data is the
//! URL the messages are POSTed to: relative to the stream's URL, or
//! absolute, but always on the server's own origin.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tower_lro::sse::{EventSplitter, event_data};

use super::super::upstream::UpstreamError;
use super::super::{Shared, within};
use super::LegacyError;
use super::stream::event_type;
use crate::announce::announce_in_headers;
use crate::auth::Auth;

/// How long the server may take to send the endpoint event.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most bytes read before the endpoint event.
const MAX_BEFORE_ENDPOINT: usize = 1 << 20;

/// An open event stream: where to POST, and the stream, read up to the end
/// of the endpoint event.
pub(super) struct Opened {
    pub(super) endpoint: Uri,
    pub(super) stream: (Incoming, EventSplitter),
}

/// Opens the event stream at the server's URL and reads its endpoint.
pub(super) async fn open(shared: &Arc<Shared>) -> Result<Opened, LegacyError> {
    let mut renewed = false;
    let response = loop {
        let request = stream_request(shared);
        let bearer = request.headers().get(AUTHORIZATION).cloned();
        let response = match within(shared.headers_timeout, shared.client.request(request)).await {
            Some(Ok(response)) => response,
            Some(Err(e)) => return Err(LegacyError::Upstream(UpstreamError::Client(e))),
            None => return Err(LegacyError::Upstream(UpstreamError::Timeout)),
        };
        let status = response.status();
        if status.is_success() {
            break response;
        }
        let auth = shared.auth.as_ref().filter(|_| !renewed);
        match auth.filter(|_| status == StatusCode::UNAUTHORIZED) {
            Some(auth) => {
                let challenge = response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok());
                if let Err(e) = auth.renew(challenge, bearer.as_ref()).await {
                    return Err(LegacyError::Upstream(UpstreamError::Auth(format!(
                        "the server needs a sign-in, which failed: {e}"
                    ))));
                }
                renewed = true;
            }
            None => return Err(LegacyError::Refused(status)),
        }
    };
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
    {
        return Err(LegacyError::NotEventStream(content_type));
    }
    let mut body = response.into_body();
    let mut splitter = EventSplitter::default();
    let data = tokio::time::timeout(ENDPOINT_TIMEOUT, endpoint_data(&mut body, &mut splitter))
        .await
        .map_err(|_| LegacyError::NoEndpoint("none within 30 s"))??;
    let endpoint = resolve(&shared.upstream, &data)?;
    tracing::debug!(target: "tower_lro", %endpoint, "HTTP+SSE endpoint");
    Ok(Opened {
        endpoint,
        stream: (body, splitter),
    })
}

/// The `GET` of the event stream.
fn stream_request(shared: &Shared) -> Request<Full<Bytes>> {
    let mut request = Request::new(Full::new(Bytes::new()));
    *request.method_mut() = Method::GET;
    *request.uri_mut() = shared.upstream.clone();
    let headers = request.headers_mut();
    headers.clone_from(&shared.headers);
    if let Some(bearer) = shared.auth.as_ref().and_then(Auth::bearer) {
        headers.insert(AUTHORIZATION, bearer);
    }
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if shared.announce {
        announce_in_headers(headers);
    }
    request
}

/// The data of the first `endpoint` event; events before it are skipped.
async fn endpoint_data(
    body: &mut Incoming,
    splitter: &mut EventSplitter,
) -> Result<String, LegacyError> {
    let mut read = 0;
    loop {
        while let Some(event) = splitter.next_event() {
            if event_type(&event) != b"endpoint" {
                continue;
            }
            let data = event_data(&event).unwrap_or_default();
            return String::from_utf8(data.to_vec())
                .map_err(|_| LegacyError::BadEndpoint("not UTF-8".to_owned()));
        }
        let frame = match body.frame().await {
            None => return Err(LegacyError::NoEndpoint("the stream ended")),
            Some(Err(_)) => return Err(LegacyError::NoEndpoint("the stream broke off")),
            Some(Ok(frame)) => frame,
        };
        if let Ok(data) = frame.into_data() {
            read += data.len();
            if read > MAX_BEFORE_ENDPOINT {
                return Err(LegacyError::NoEndpoint("over 1 MiB before it"));
            }
            splitter.push(&data);
        }
    }
}

/// The endpoint `data` names, resolved against the stream's URL; refused
/// when it is on another origin (scheme, host and port) than the server.
fn resolve(server: &Uri, data: &str) -> Result<Uri, LegacyError> {
    let bad = || LegacyError::BadEndpoint(data.chars().take(200).collect());
    let base = url::Url::parse(&server.to_string()).map_err(|_| bad())?;
    let endpoint = base.join(data.trim()).map_err(|_| bad())?;
    if endpoint.origin() != base.origin() {
        return Err(LegacyError::ForeignEndpoint {
            endpoint: endpoint.origin().ascii_serialization(),
            server: base.origin().ascii_serialization(),
        });
    }
    endpoint.as_str().parse().map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_stream_url_on_its_origin_only() {
        let server: Uri = "http://127.0.0.1:8000/mcp/sse".parse().unwrap();
        for (data, want) in [
            (
                "/messages/?session_id=ab12",
                "http://127.0.0.1:8000/messages/?session_id=ab12",
            ),
            (
                "message?sessionId=x",
                "http://127.0.0.1:8000/mcp/message?sessionId=x",
            ),
            ("http://127.0.0.1:8000/m?s=1", "http://127.0.0.1:8000/m?s=1"),
            (" /m?s=1\r", "http://127.0.0.1:8000/m?s=1"),
        ] {
            assert_eq!(resolve(&server, data).unwrap().to_string(), want, "{data}");
        }
        for foreign in [
            "http://127.0.0.1:8001/messages",
            "https://127.0.0.1:8000/messages",
            "//evil.example/messages",
            "http://localhost:8000/messages",
        ] {
            let e = resolve(&server, foreign).unwrap_err();
            assert!(
                matches!(e, LegacyError::ForeignEndpoint { .. }),
                "{foreign}: {e}"
            );
            assert!(e.to_string().contains("http://127.0.0.1:8000"), "{e}");
        }
        let https: Uri = "https://example.com/sse".parse().unwrap();
        assert_eq!(
            resolve(&https, "https://example.com:443/messages")
                .unwrap()
                .to_string(),
            "https://example.com/messages"
        );
    }
}
