//! [`EndpointSummarizer`]: summaries from any OpenAI-compatible chat
//! endpoint (`POST {base_url}/chat/completions`), for the history engine's
//! `compress` mode. Feature `history-endpoint`.

use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::engine::events::clean_label;
use crate::history::{Summarizer, SummaryError, SummaryFuture, SummaryRequest};

/// The default time allowed for one summary: connect, ask, read the answer.
#[cfg_attr(docsrs, doc(cfg(feature = "history-endpoint")))]
pub const DEFAULT_SUMMARY_TIMEOUT: Duration = Duration::from_secs(60);

/// The most bytes of an endpoint's answer read (an answer longer than this
/// is an error, never held whole).
#[cfg_attr(docsrs, doc(cfg(feature = "history-endpoint")))]
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 1 << 20;

/// The default system prompt: a faithful summary that keeps what an agent
/// needs to go on (tool names, identifiers, numbers, decisions).
#[cfg_attr(docsrs, doc(cfg(feature = "history-endpoint")))]
pub const DEFAULT_SUMMARY_PROMPT: &str = "You summarize part of a conversation between a user, \
an AI assistant and its tools, so that the assistant can continue the task without the \
original messages. Be faithful: state only what the transcript says, never guess or add. \
Keep every tool name, identifier, file path, URL, number, error message and decision \
exactly as written. Say what was asked, what was done, what was found and what is still \
open. Write plain prose or short bullet points, no preamble.";

/// Why a summary could not be had from the endpoint.
///
/// Messages never contain the API key; they may name the endpoint's
/// address (for logs, never for a client).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[cfg_attr(docsrs, doc(cfg(feature = "history-endpoint")))]
pub enum EndpointError {
    /// The summarizer's settings are unusable (base URL, key).
    #[error("endpoint settings: {0}")]
    Config(String),
    /// The endpoint could not be reached, or the connection failed.
    #[error("endpoint transport: {0}")]
    Transport(String),
    /// No complete answer within the timeout.
    #[error("endpoint timed out after {0:?}")]
    Timeout(Duration),
    /// The endpoint answered with an error status.
    #[error("endpoint answered {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the answer's body, made safe for a log line.
        body: String,
    },
    /// The answer is not a chat completion with a text message.
    #[error("endpoint answer: {0}")]
    BadAnswer(String),
}

impl From<EndpointError> for SummaryError {
    fn from(e: EndpointError) -> Self {
        match e {
            EndpointError::BadAnswer(_) => SummaryError::BadAnswer(e.to_string()),
            EndpointError::Config(_) => SummaryError::Other(e.to_string()),
            _ => SummaryError::Endpoint(e.to_string()),
        }
    }
}

/// A [`Summarizer`] asking an OpenAI-compatible chat endpoint (OpenAI,
/// vLLM, Ollama, llama.cpp's server, LiteLLM, ...) for each summary:
/// `POST {base_url}/chat/completions` with the model, a system prompt
/// asking for a faithful summary that keeps tool names and identifiers
/// ([`DEFAULT_SUMMARY_PROMPT`]), the transcript as the user message,
/// `max_tokens` set to the budget and `temperature` 0; the key, when set,
/// goes in `Authorization: Bearer`. Each call is bounded by a timeout
/// ([`DEFAULT_SUMMARY_TIMEOUT`]) and the answer read by at most
/// [`DEFAULT_MAX_ANSWER_BYTES`].
///
/// The default connector speaks plain HTTP (a local model server or a
/// gateway on the same host); for `https://` endpoints give a TLS connector
/// with [`with_connector`](Self::with_connector) (e.g. `hyper-rustls`'s
/// `HttpsConnector`).
///
/// ```no_run
/// # fn main() -> Result<(), tower_lro::history::EndpointError> {
/// use tower_lro::history::EndpointSummarizer;
///
/// let summarizer = EndpointSummarizer::new("http://127.0.0.1:11434/v1", "llama3.2")?
///     .api_key_env("OPENAI_API_KEY")?;
/// # Ok(()) }
/// ```
///
/// Its `Debug` never shows the key.
#[derive(Clone)]
#[cfg_attr(docsrs, doc(cfg(feature = "history-endpoint")))]
pub struct EndpointSummarizer<C = HttpConnector> {
    client: Client<C, Full<Bytes>>,
    url: Uri,
    model: String,
    key: Option<HeaderValue>,
    prompt: String,
    timeout: Duration,
    max_answer_bytes: usize,
}

impl<C> std::fmt::Debug for EndpointSummarizer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointSummarizer")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl EndpointSummarizer<HttpConnector> {
    /// A summarizer asking `model` at `base_url` (e.g.
    /// `http://127.0.0.1:8000/v1`; `/chat/completions` is appended), over
    /// plain HTTP, without a key.
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, EndpointError> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        EndpointSummarizer::with_connector(base_url, model, connector)
    }
}

impl<C> EndpointSummarizer<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    /// A summarizer asking `model` at `base_url` through `connector` (a TLS
    /// connector for `https://` endpoints).
    pub fn with_connector(
        base_url: &str,
        model: impl Into<String>,
        connector: C,
    ) -> Result<Self, EndpointError> {
        Ok(EndpointSummarizer {
            client: Client::builder(TokioExecutor::new()).build(connector),
            url: completions_url(base_url)?,
            model: model.into(),
            key: None,
            prompt: DEFAULT_SUMMARY_PROMPT.to_owned(),
            timeout: DEFAULT_SUMMARY_TIMEOUT,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        })
    }

    /// Sends `key` as `Authorization: Bearer {key}`.
    pub fn api_key(mut self, key: &str) -> Result<Self, EndpointError> {
        self.key = Some(bearer(key)?);
        Ok(self)
    }

    /// Sends the key held by the environment variable `name` (read now);
    /// an error when it is not set.
    pub fn api_key_env(self, name: &str) -> Result<Self, EndpointError> {
        self.api_key_from(name, |n| std::env::var(n).ok())
    }

    /// Sends the key `lookup` gives for `name` (the environment, in
    /// [`api_key_env`](Self::api_key_env)).
    fn api_key_from(
        self,
        name: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, EndpointError> {
        match lookup(name) {
            Some(key) => self.api_key(&key),
            None => Err(EndpointError::Config(format!(
                "the environment variable {} holding the API key is not set",
                clean_label(name)
            ))),
        }
    }

    /// Replaces the system prompt ([`DEFAULT_SUMMARY_PROMPT`]).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// Time allowed for one summary ([`DEFAULT_SUMMARY_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most bytes of an answer read ([`DEFAULT_MAX_ANSWER_BYTES`]).
    pub fn max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// The URL asked (`{base_url}/chat/completions`).
    pub fn url(&self) -> &Uri {
        &self.url
    }

    /// Asks the endpoint for a summary of `request.transcript`, within the
    /// timeout.
    pub async fn complete(&self, request: SummaryRequest<'_>) -> Result<String, EndpointError> {
        let ask = self.ask(request);
        match tokio::time::timeout(self.timeout, ask).await {
            Ok(answer) => answer,
            Err(_) => Err(EndpointError::Timeout(self.timeout)),
        }
    }

    /// One request and its answer, unbounded in time.
    async fn ask(&self, request: SummaryRequest<'_>) -> Result<String, EndpointError> {
        let response = self
            .client
            .request(self.http_request(request)?)
            .await
            .map_err(|e| EndpointError::Transport(error_chain(&e)))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), self.max_answer_bytes)
            .collect()
            .await
            .map_err(|e| self.body_error(e.as_ref()))?
            .to_bytes();
        if !status.is_success() {
            return Err(status_error(status, &body));
        }
        completion_text(&body)
    }

    /// Why an answer's body could not be read: too long, or cut.
    fn body_error(&self, e: &(dyn std::error::Error + 'static)) -> EndpointError {
        if e.is::<LengthLimitError>() {
            let limit = self.max_answer_bytes;
            return EndpointError::BadAnswer(format!("the answer is over {limit} bytes"));
        }
        EndpointError::Transport(error_chain(e))
    }

    /// The `POST` of the chat request asking for a summary.
    fn http_request(
        &self,
        request: SummaryRequest<'_>,
    ) -> Result<Request<Full<Bytes>>, EndpointError> {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": request.transcript},
            ],
            "max_tokens": request.budget_tokens.max(1),
            "temperature": 0,
            "stream": false,
        });
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(CONTENT_TYPE, "application/json");
        if let Some(key) = &self.key {
            builder = builder.header(AUTHORIZATION, key.clone());
        }
        builder
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| EndpointError::Config(e.to_string()))
    }
}

impl<C> Summarizer for EndpointSummarizer<C>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    fn summarize<'a>(&'a self, request: SummaryRequest<'a>) -> SummaryFuture<'a> {
        Box::pin(async move { Ok(self.complete(request).await?) })
    }
}

/// `{base_url}/chat/completions`, checked: `http` or `https`, with a host.
fn completions_url(base_url: &str) -> Result<Uri, EndpointError> {
    let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
    let uri: Uri = url
        .parse()
        .map_err(|e| EndpointError::Config(format!("base URL {}: {e}", clean_label(base_url))))?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || uri.host().is_none() || uri.query().is_some() {
        return Err(EndpointError::Config(format!(
            "base URL {}: an http:// or https:// URL with a host and no query",
            clean_label(base_url)
        )));
    }
    Ok(uri)
}

/// The `Authorization` value for `key`, marked sensitive.
fn bearer(key: &str) -> Result<HeaderValue, EndpointError> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", key.trim()))
        .map_err(|_| EndpointError::Config("the API key is not a valid header value".into()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// An error status, with the start of the answer (made safe for a log).
fn status_error(status: StatusCode, body: &[u8]) -> EndpointError {
    EndpointError::Status {
        status: status.as_u16(),
        body: clean_label(&String::from_utf8_lossy(body)).into_owned(),
    }
}

/// The text of the first choice's message in a chat completion.
fn completion_text(body: &[u8]) -> Result<String, EndpointError> {
    let answer: Value = serde_json::from_slice(body)
        .map_err(|e| EndpointError::BadAnswer(format!("not JSON: {e}")))?;
    let message = answer.pointer("/choices/0/message").ok_or_else(|| {
        EndpointError::BadAnswer("no choices[0].message in the completion".into())
    })?;
    let text = match message.get("content") {
        Some(Value::String(s)) => s.trim().to_owned(),
        // Some servers answer with content parts.
        Some(Value::Array(parts)) => text_parts(parts),
        _ => String::new(),
    };
    if text.is_empty() {
        return Err(EndpointError::BadAnswer(
            "the completion's message has no text".into(),
        ));
    }
    Ok(text)
}

/// The text of `{"type": "text", "text": ...}` content parts, joined.
fn text_parts(parts: &[Value]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n").trim().to_owned()
}

/// An error and its sources, `: `-separated, made safe for a log.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    clean_label(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked_and_joined() {
        let url = completions_url("http://127.0.0.1:8000/v1/").unwrap();
        assert_eq!(url.to_string(), "http://127.0.0.1:8000/v1/chat/completions");
        for bad in [
            "127.0.0.1:8000",
            "ftp://host/v1",
            "http://host/v1?x=1",
            "not a url",
        ] {
            assert!(
                matches!(completions_url(bad), Err(EndpointError::Config(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_key_comes_from_the_named_variable_and_never_shows() {
        let lookup = |name: &str| (name == "MY_KEY").then(|| "sk-secret".to_owned());
        let s = EndpointSummarizer::new("http://127.0.0.1:1/v1", "m").unwrap();
        let s = s.api_key_from("MY_KEY", lookup).unwrap();
        assert!(!format!("{s:?}").contains("sk-secret"));
        assert_eq!(
            s.key.as_ref().unwrap().to_str().unwrap(),
            "Bearer sk-secret"
        );
        let missing = EndpointSummarizer::new("http://127.0.0.1:1/v1", "m")
            .unwrap()
            .api_key_from("OTHER", lookup);
        assert!(matches!(missing, Err(EndpointError::Config(m)) if m.contains("OTHER")));
    }

    #[test]
    fn completions_give_their_text_or_a_typed_error() {
        let ok = br#"{"choices":[{"message":{"role":"assistant","content":" sum "}}]}"#;
        assert_eq!(completion_text(ok).unwrap(), "sum");
        let parts = br#"{"choices":[{"message":{"content":[{"type":"text","text":"a"}]}}]}"#;
        assert_eq!(completion_text(parts).unwrap(), "a");
        for bad in [
            &b"<html>"[..],
            b"{}",
            br#"{"choices":[{"message":{"content":""}}]}"#,
        ] {
            assert!(matches!(
                completion_text(bad),
                Err(EndpointError::BadAnswer(_))
            ));
        }
    }
}
