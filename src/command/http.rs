//! The one HTTP client of the `lro` command's upstream side: the proxy's
//! MCP requests and the OAuth requests (discovery, registration, tokens)
//! go through [`client`] and [`fetch`], so the transport (TCP or TLS,
//! [`super::connect`]) is chosen in one place.

use std::time::Duration;

use super::connect::{ConnectError, ConnectOptions, UpstreamClient, upstream_client};
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};

/// The client every upstream request goes through (`http://` and
/// `https://`, see [`super::connect`]).
pub(crate) type HttpClient = UpstreamClient<Full<Bytes>>;

/// The largest answer [`fetch`] reads (OAuth metadata and tokens are small).
const MAX_FETCH_BYTES: usize = 1 << 20;
/// How long one [`fetch`] may take, answer included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The shared upstream client: `TCP_NODELAY` (no delayed-ACK waits on
/// keep-alive), the connect timeout, TLS with the system's roots and the
/// CA file.
pub(crate) fn client(connect: &ConnectOptions) -> Result<HttpClient, ConnectError> {
    upstream_client(connect)
}

/// Why a [`fetch`] failed, without addresses or OS error texts.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The server could not be reached.
    #[error("{0} cannot be reached")]
    Unreachable(String),
    /// The answer did not come in time or was too large.
    #[error("{0} did not answer in time, or answered too much")]
    Answer(String),
}

/// Sends `request` and reads the whole (bounded) answer; `what` names the
/// endpoint in errors.
pub(crate) async fn fetch(
    client: &HttpClient,
    request: Request<Full<Bytes>>,
    what: &str,
) -> Result<Response<Bytes>, FetchError> {
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|_| FetchError::Unreachable(what.to_owned()))?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, MAX_FETCH_BYTES)
            .collect()
            .await
            .map_err(|_| FetchError::Answer(what.to_owned()))?;
        Ok(Response::from_parts(parts, body.to_bytes()))
    };
    tokio::time::timeout(FETCH_TIMEOUT, exchange)
        .await
        .map_err(|_| FetchError::Answer(what.to_owned()))?
}
