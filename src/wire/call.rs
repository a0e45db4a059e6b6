//! The call a tool result answers.

use serde_json::Value;

/// The call a result answers: tool name and arguments.
///
/// Its `Debug` shows the tool's name and how many arguments there are, never
/// their values (they are the client's data).
#[derive(Clone, Default)]
pub struct ToolCall {
    /// The tool's name (`params.name` of `tools/call`).
    pub name: String,
    /// The call's arguments (`params.arguments`).
    pub arguments: Option<Value>,
    /// Who may read the offload of this call's result over MCP (see
    /// [`OffloadHeader::owner`](crate::descriptor::OffloadHeader::owner)); `None`: the
    /// file name alone is the capability.
    pub owner: Option<String>,
    /// Whether an offloaded result also gets a `resource_link` block to the
    /// file (set by the layer when it serves `resources/read` and the
    /// client's protocol version knows the block; default false).
    pub resource_link: bool,
    /// What the tool declared as its `outputSchema` in `tools/list`, as the
    /// client saw it (the layer remembers it per tool name, and takes
    /// closed schemas out of every `tools/list` it passes on); `None`: not
    /// known, taken as no schema. It decides whether records in
    /// `structuredContent` may be offloaded (see the
    /// [`offload`](crate::offload) docs).
    pub output_schema: Option<OutputSchema>,
    /// The name the calling client gave in `clientInfo` (`initialize`, or
    /// the request's 2026-07-28 `_meta`), which picks its
    /// [`ClientProfile`](crate::config::ClientProfile); `None`: not known.
    pub client: Option<String>,
}

/// A tool's `outputSchema`, as far as offloading is concerned: whether the
/// descriptor can be added to its `structuredContent` as one more member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputSchema {
    /// The tool declares no `outputSchema` (or the layer took a closed one
    /// out of `tools/list`): clients validate nothing.
    Undeclared,
    /// An object schema that admits members it does not name (no
    /// `additionalProperties: false` or other constraint on them at the
    /// top level, and no property named `offloaded`).
    Open,
    /// Any other schema: a member added may break it.
    Closed,
}

impl OutputSchema {
    /// What `schema` (a tool's `outputSchema`, as JSON) admits.
    pub fn of(schema: &serde_json::Value) -> OutputSchema {
        let Some(object) = schema.as_object() else {
            return OutputSchema::Closed;
        };
        let typed_object = match object.get("type") {
            None => true,
            Some(t) => t == "object",
        };
        let open_extra = |key: &str| match object.get(key) {
            None | Some(Value::Bool(true)) => true,
            Some(Value::Object(o)) => o.is_empty(),
            Some(_) => false,
        };
        let constrained = [
            "patternProperties",
            "propertyNames",
            "maxProperties",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "if",
            "$ref",
            "dependentSchemas",
        ]
        .iter()
        .any(|k| object.contains_key(*k));
        let named = object
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key("offloaded"));
        if typed_object
            && open_extra("additionalProperties")
            && open_extra("unevaluatedProperties")
            && !constrained
            && !named
        {
            OutputSchema::Open
        } else {
            OutputSchema::Closed
        }
    }
}

impl ToolCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<Value>) -> Self {
        ToolCall {
            name: name.into(),
            arguments,
            owner: None,
            resource_link: false,
            output_schema: None,
            client: None,
        }
    }

    pub(crate) fn string_arg(&self, key: &str) -> Option<&str> {
        self.arguments.as_ref()?.get(key)?.as_str()
    }

    /// The search text the call asked for: its `query` argument, else the
    /// first non-empty string among the other names tools give it (`q`,
    /// `pattern`, `search`, `filter`, `keyword`, `term`), cut to
    /// [`MAX_QUERY_CHARS`](Self::MAX_QUERY_CHARS) characters (it goes into
    /// the file's header line, which stays small).
    pub fn query(&self) -> Option<&str> {
        let query = QUERY_ARGUMENTS
            .iter()
            .filter_map(|key| self.string_arg(key))
            .find(|q| !q.trim().is_empty())?;
        Some(match query.char_indices().nth(Self::MAX_QUERY_CHARS) {
            Some((cut, _)) => &query[..cut],
            None => query,
        })
    }

    /// The most characters of the query [`query`](Self::query) gives.
    pub const MAX_QUERY_CHARS: usize = 500;
}

/// The argument names a tool's search text goes by, in order of preference.
const QUERY_ARGUMENTS: [&str; 7] = [
    "query", "q", "pattern", "search", "filter", "keyword", "term",
];

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let arguments = match &self.arguments {
            Some(Value::Object(map)) => map.len(),
            Some(_) => 1,
            None => 0,
        };
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("arguments", &arguments)
            .finish()
    }
}
