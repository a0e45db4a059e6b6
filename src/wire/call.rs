//! The call a tool result answers.

use serde_json::Value;

/// The call a result answers: tool name and arguments.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    /// The tool's name (`params.name` of `tools/call`).
    pub name: String,
    /// The call's arguments (`params.arguments`).
    pub arguments: Option<Value>,
}

impl ToolCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<Value>) -> Self {
        ToolCall {
            name: name.into(),
            arguments,
        }
    }

    pub(crate) fn string_arg(&self, key: &str) -> Option<&str> {
        self.arguments.as_ref()?.get(key)?.as_str()
    }
}
