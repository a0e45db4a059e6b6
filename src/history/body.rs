//! [`HistoryOffloader::rewrite_body`]: the messages of a whole request
//! body rewritten, every other byte of the body kept.

use indexmap::IndexMap;
use serde_json::Value;
use serde_json::value::RawValue;

use super::format::ChatFormat;
use super::offloader::HistoryOffloader;
use super::report::{BodyRewrite, HistoryError, HistoryReport};
use crate::json::range_in;

impl HistoryOffloader {
    /// Rewrites the messages of a request body: Chat Completions and
    /// Anthropic `messages`, Responses `input`; `format` `None` detects it
    /// ([`ChatFormat::detect`]'s rules). Only the bytes of the messages
    /// member change; every other member (`model`, `tools`, `system`,
    /// `stream`, unknown ones) and the body's layout keep their bytes. A
    /// Responses `input` that is a string has nothing to rewrite
    /// (`Unchanged`), nor has one chained to an earlier response by
    /// `previous_response_id`: the provider keeps that conversation's
    /// earlier items itself and adds them to this `input`, which holds only
    /// the new ones, so the history is out of reach here, and a rewrite of
    /// the new items would be stored by the provider in place of what the
    /// agent sent (`Unchanged`, the body passes byte for byte).
    pub async fn rewrite_body(
        &self,
        format: Option<ChatFormat>,
        body: &[u8],
    ) -> Result<BodyRewrite, HistoryError> {
        let text =
            std::str::from_utf8(body).map_err(|_| HistoryError::NotChatBody("not UTF-8".into()))?;
        let top: IndexMap<String, &RawValue> = serde_json::from_str(text)
            .map_err(|e| HistoryError::NotChatBody(format!("not a JSON object: {e}")))?;
        let (format, raw, parsed) = messages_member(format, &top)?;
        if format == ChatFormat::OpenAiResponses && chained(&top) {
            return Ok(BodyRewrite::Unchanged(self.unchanged_report()));
        }
        let parsed = parsed.map_or_else(|| serde_json::from_str::<Vec<Value>>(raw.get()), Ok);
        let Ok(messages) = parsed else {
            return match format {
                ChatFormat::OpenAiResponses if raw.get().starts_with('"') => {
                    Ok(BodyRewrite::Unchanged(self.unchanged_report()))
                }
                _ => Err(HistoryError::NotChatBody(format!(
                    "`{}` is not an array",
                    format.messages_key()
                ))),
            };
        };
        let outcome = self.rewrite_messages(format, messages).await?;
        if !outcome.report.changed() {
            return Ok(BodyRewrite::Unchanged(outcome.report));
        }
        let rewritten = serde_json::to_string(&outcome.messages)
            .map_err(|e| HistoryError::NotChatBody(e.to_string()))?;
        let range = range_in(text, raw.get());
        let mut out = Vec::with_capacity(body.len() - range.len() + rewritten.len());
        out.extend_from_slice(&body[..range.start]);
        out.extend_from_slice(rewritten.as_bytes());
        out.extend_from_slice(&body[range.end..]);
        Ok(BodyRewrite::Rewritten {
            body: out,
            report: outcome.report,
        })
    }

    fn unchanged_report(&self) -> HistoryReport {
        HistoryReport::new(self.config().mode, 0)
    }
}

/// Whether a Responses body continues an earlier response
/// (`previous_response_id` set, not `null`).
fn chained(top: &IndexMap<String, &RawValue>) -> bool {
    top.get("previous_response_id")
        .is_some_and(|raw| raw.get().trim() != "null")
}

/// The format, its messages member, and the messages when detecting the
/// format parsed them already.
fn messages_member<'a>(
    format: Option<ChatFormat>,
    top: &IndexMap<String, &'a RawValue>,
) -> Result<(ChatFormat, &'a RawValue, Option<Vec<Value>>), HistoryError> {
    let (format, parsed) = match format {
        Some(format) => (format, None),
        None => detect(top)?,
    };
    let raw = top.get(format.messages_key()).ok_or_else(|| {
        HistoryError::NotChatBody(format!("no `{}` member", format.messages_key()))
    })?;
    Ok((format, raw, parsed))
}

/// [`ChatFormat::detect`] on a body's raw members, with the messages it
/// had to parse.
fn detect(
    top: &IndexMap<String, &RawValue>,
) -> Result<(ChatFormat, Option<Vec<Value>>), HistoryError> {
    if let Some(raw) = top.get("messages") {
        let messages: Vec<Value> = serde_json::from_str(raw.get())
            .map_err(|_| HistoryError::NotChatBody("`messages` is not an array".into()))?;
        let format = ChatFormat::of_messages(top.contains_key("system"), &messages);
        return Ok((format, Some(messages)));
    }
    if top.contains_key("input") {
        return Ok((ChatFormat::OpenAiResponses, None));
    }
    Err(HistoryError::NotChatBody(
        "no `messages` or `input` member".into(),
    ))
}
