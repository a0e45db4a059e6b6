//! Which transport the proxy speaks to the server (`--transport`, with
//! mcp-remote's strategies): streamable HTTP, or the old HTTP+SSE
//! transport of the 2024-11-05 revision ([`legacy_sse`]).
//!
//! * `http-only`: streamable HTTP;
//! * `sse-only`: HTTP+SSE;
//! * `http-first` (the default): streamable HTTP, unless the server answers
//!   the first message (the agent's `initialize`) with `404` or `405`: then
//!   HTTP+SSE at the same URL, as mcp-remote does;
//! * `sse-first`: HTTP+SSE, unless the server answers the `GET` of its
//!   event stream with `404` or `405`: then streamable HTTP.
//!
//! A `*-first` strategy decides once, at the first message a transport
//! takes; one fallback at most (the other transport failing too gives an
//! error naming both). Both transports answer the offload layer alike: an
//! HTTP response ([`UpstreamBody`]), so the layer offloads, answers
//! `lro_extract` and lists its tools the same way whatever the transport.
//!
//! [`legacy_sse`]: super::legacy_sse

use std::str::FromStr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Response, StatusCode};

use super::Shared;
use super::legacy_sse::{LegacyError, LegacySse};
use super::upstream::UpstreamError;
use super::upstream_body::{UpstreamBody, boxed};

/// How the proxy picks its transport (`--transport`, mcp-remote's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Strategy {
    /// Streamable HTTP, falling back to HTTP+SSE on `404`/`405`.
    #[default]
    HttpFirst,
    /// Streamable HTTP only.
    HttpOnly,
    /// HTTP+SSE, falling back to streamable HTTP on `404`/`405`.
    SseFirst,
    /// HTTP+SSE only.
    SseOnly,
}

impl FromStr for Strategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "http-first" => Ok(Strategy::HttpFirst),
            "http-only" => Ok(Strategy::HttpOnly),
            "sse-first" => Ok(Strategy::SseFirst),
            "sse-only" => Ok(Strategy::SseOnly),
            _ => Err(format!(
                "--transport {s:?}: expected http-first, http-only, sse-first or sse-only"
            )),
        }
    }
}

/// The transport this run speaks, once decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaks {
    Http,
    Sse,
    /// A `*-first` strategy before its first answer.
    Undecided,
}

/// The strategy, what it decided, and the HTTP+SSE connection.
pub(super) struct Transport {
    strategy: Strategy,
    speaks: Mutex<Speaks>,
    pub(super) legacy: LegacySse,
}

impl Transport {
    pub(super) fn new(strategy: Strategy) -> Transport {
        let speaks = match strategy {
            Strategy::HttpOnly => Speaks::Http,
            Strategy::SseOnly => Speaks::Sse,
            Strategy::HttpFirst | Strategy::SseFirst => Speaks::Undecided,
        };
        Transport {
            strategy,
            speaks: Mutex::new(speaks),
            legacy: LegacySse::default(),
        }
    }

    fn speaks(&self) -> Speaks {
        *self.speaks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn decide(&self, speaks: Speaks) {
        let mut now = self.speaks.lock().unwrap_or_else(|e| e.into_inner());
        if *now == Speaks::Undecided {
            tracing::info!(target: "tower_lro", "transport: {}", match speaks {
                Speaks::Sse => "HTTP+SSE (2024-11-05)",
                _ => "streamable HTTP",
            });
            *now = speaks;
        }
    }
}

/// Whether an answer tells a client to try the other transport.
fn wrong_transport(status: StatusCode) -> bool {
    status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED
}

impl Shared {
    /// Sends one message of the agent upstream over the transport of the
    /// strategy (deciding it at the first answer, see the module's
    /// documentation); `parts` are the streamable-HTTP request's.
    pub(super) async fn send_message(
        self: &Arc<Self>,
        parts: http::request::Parts,
        bytes: Bytes,
    ) -> Result<Response<UpstreamBody>, UpstreamError> {
        self.touch(); // the link is not idle (keep-alive), whatever the transport
        let transport = &self.transport;
        match (transport.speaks(), transport.strategy) {
            (Speaks::Http, _) => Ok(boxed(self.send_upstream(parts, bytes).await?)),
            (Speaks::Sse, _) => self.send_legacy(bytes).await.map_err(legacy_error),
            (Speaks::Undecided, Strategy::SseFirst) => {
                match self.send_legacy(bytes.clone()).await {
                    Err(LegacyError::Refused(status)) if wrong_transport(status) => {
                        tracing::info!(target: "tower_lro", %status, "no HTTP+SSE event stream; trying streamable HTTP");
                        let response = self.send_upstream(parts, bytes).await?;
                        if response.status().is_success() {
                            transport.decide(Speaks::Http);
                        }
                        Ok(boxed(response))
                    }
                    Err(e) => Err(legacy_error(e)),
                    Ok(response) => {
                        transport.decide(Speaks::Sse);
                        Ok(response)
                    }
                }
            }
            (Speaks::Undecided, _) => {
                let response = self.send_upstream(parts, bytes.clone()).await?;
                let status = response.status();
                if status.is_success() {
                    transport.decide(Speaks::Http);
                }
                if !wrong_transport(status) {
                    return Ok(boxed(response));
                }
                tracing::info!(target: "tower_lro", %status, "streamable HTTP refused; trying the old HTTP+SSE transport (2024-11-05)");
                match self.send_legacy(bytes).await {
                    Ok(response) => {
                        transport.decide(Speaks::Sse);
                        Ok(response)
                    }
                    Err(e) => Err(UpstreamError::Transport(format!(
                        "the server answered HTTP {} to streamable HTTP, and the old HTTP+SSE transport (2024-11-05) failed too: {e}",
                        status.as_u16()
                    ))),
                }
            }
        }
    }
}

/// What the agent learns when the HTTP+SSE transport fails.
fn legacy_error(e: LegacyError) -> UpstreamError {
    match e {
        LegacyError::Upstream(e) => e,
        e => UpstreamError::Transport(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_are_mcp_remotes() {
        for (text, strategy) in [
            ("http-first", Strategy::HttpFirst),
            ("http-only", Strategy::HttpOnly),
            ("sse-first", Strategy::SseFirst),
            ("sse-only", Strategy::SseOnly),
        ] {
            assert_eq!(text.parse::<Strategy>(), Ok(strategy));
        }
        let e = "sse".parse::<Strategy>().unwrap_err();
        assert!(e.contains("expected http-first"), "{e}");
        assert_eq!(Strategy::default(), Strategy::HttpFirst);
    }
}
