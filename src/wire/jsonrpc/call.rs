//! A watched `tools/call` as read from its request, and what of it is
//! kept for long.

use bytes::Bytes;
use serde_json::Value;

use crate::wire::call::ToolCall;

/// A `tools/call` as read from a request: its arguments kept as raw JSON
/// (a slice of the request body, no copy) and parsed only when a result
/// really has to be evaluated.
#[derive(Debug, Clone)]
pub(crate) struct RawCall {
    /// The tool's name.
    pub name: String,
    /// `params.arguments`, as sent.
    pub arguments: Option<Bytes>,
}

impl RawCall {
    /// A call known by name only.
    pub(crate) fn named(name: impl Into<String>) -> Self {
        RawCall {
            name: name.into(),
            arguments: None,
        }
    }

    /// The call with its arguments parsed.
    pub(crate) fn to_call(&self) -> ToolCall {
        let arguments = self
            .arguments
            .as_deref()
            .and_then(|a| serde_json::from_slice::<Value>(a).ok());
        ToolCall::new(self.name.clone(), arguments)
    }

    /// What of the call is kept for long (a task's call, until its
    /// `tasks/result`): the name and the few string arguments the engine
    /// reads ([`DESCRIPTOR_ARGUMENTS`]), each cut to [`KEPT_CHARS`]
    /// characters, in a buffer of its own (not a slice keeping the whole
    /// request body alive). At most a few KB, whatever the client sent.
    pub(crate) fn kept(&self) -> Self {
        let arguments = self.arguments.as_deref().and_then(|a| {
            let all: serde_json::Map<String, Value> = serde_json::from_slice(a).ok()?;
            let kept: serde_json::Map<String, Value> = DESCRIPTOR_ARGUMENTS
                .iter()
                .filter_map(|&k| {
                    let v = all.get(k)?.as_str()?;
                    Some((
                        k.to_owned(),
                        Value::String(cut_chars(v, KEPT_CHARS).to_owned()),
                    ))
                })
                .collect();
            let bytes = serde_json::to_vec(&kept).ok()?;
            Some(Bytes::from(bytes))
        });
        RawCall {
            name: cut_chars(&self.name, KEPT_CHARS).to_owned(),
            arguments,
        }
    }

    /// Bytes this call holds.
    pub(crate) fn size(&self) -> usize {
        self.name.len() + self.arguments.as_ref().map_or(0, Bytes::len)
    }
}

/// The arguments the engine reads from a call (detail level, query under
/// each of its names, see [`ToolCall::query`]).
pub(crate) const DESCRIPTOR_ARGUMENTS: [&str; 8] = [
    "detail", "query", "q", "pattern", "search", "filter", "keyword", "term",
];

/// Characters kept of a remembered call's name and of each kept argument.
pub(crate) const KEPT_CHARS: usize = 256;

/// The first `n` characters of `s`.
fn cut_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(at, _)| &s[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_arguments_the_engine_reads_are_kept_and_cut() {
        let big = "x".repeat(1 << 20);
        let args = format!(r#"{{"detail":"full","query":"{big}","blob":"{big}","n":3}}"#);
        let call = RawCall {
            name: "t".repeat(10_000),
            arguments: Some(Bytes::from(args)),
        };
        let kept = call.kept();
        let value: Value = serde_json::from_slice(kept.arguments.as_ref().unwrap()).unwrap();
        assert_eq!(value["detail"], "full");
        assert_eq!(value["query"].as_str().unwrap().len(), KEPT_CHARS);
        assert!(value.get("blob").is_none() && value.get("n").is_none());
        assert_eq!(kept.name.len(), KEPT_CHARS);
        assert!(kept.size() < 1024, "{}", kept.size());
    }
}
