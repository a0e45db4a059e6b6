//! The one HTTP client of the `lro` command's upstream side: the proxy's
//! MCP requests and the OAuth requests (discovery, registration, tokens)
//! go through [`client`] and [`fetch`], so the transport (plain TCP today)
//! is chosen in one place.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The client every upstream request goes through.
pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// The largest answer [`fetch`] reads (OAuth metadata and tokens are small).
const MAX_FETCH_BYTES: usize = 1 << 20;
/// How long one [`fetch`] may take, answer included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// A client with `TCP_NODELAY` (no delayed-ACK waits on keep-alive) and,
/// when given, a bound on establishing the connection.
pub(crate) fn client(connect_timeout: Option<Duration>) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(connect_timeout);
    Client::builder(TokioExecutor::new()).build(connector)
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
