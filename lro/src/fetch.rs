//! The client type of the `lro` proxy's upstream side, made by
//! [`crate::connect::upstream_client`] (TCP or TLS): the proxy's MCP
//! requests and the OAuth requests (discovery, registration, tokens) share
//! it; [`fetch`] reads an OAuth answer whole, bounded.

use std::time::Duration;

use crate::connect::UpstreamClient;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};

/// The client every upstream request goes through (`http://` and
/// `https://`, see [`crate::connect`]).
pub(crate) type HttpClient = UpstreamClient<Full<Bytes>>;

/// The largest answer [`fetch`] reads (OAuth metadata and tokens are small).
const MAX_FETCH_BYTES: usize = 1 << 20;
/// How long one [`fetch`] may take, answer included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

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
