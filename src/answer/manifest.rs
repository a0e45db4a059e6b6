//! What the layer adds to the server's own answers: its tools in the first
//! page of `tools/list`, and the resources capability in `initialize` (or
//! `server/discover`) when the server declared none. Every other byte of
//! those answers is kept as the server wrote it (members are edited as raw
//! JSON, never parsed into values and written again).

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::wire::call::OutputSchema;

/// The extraction tool's name.
pub(crate) const EXTRACT_TOOL: &str = "lro_extract";
/// The listing tool's name.
pub(crate) const LIST_TOOL: &str = "lro_list";

/// The definition of `lro_extract` (the spec's parameters, plus paging).
///
/// Its input schema is the plainest JSON Schema, so that every client can
/// use it: one `type` per property (no type arrays such as
/// `["integer", "null"]`, which some clients warn about or cannot fill
/// in), optional properties simply not `required`. The arguments are read
/// more leniently than the schema says (`answer::args`): numbers also as
/// strings of digits, `params` also as JSON text, `null` or a blank string
/// as absent.
pub(crate) fn extract_tool() -> serde_json::Value {
    json!({
        "name": EXTRACT_TOOL,
        "title": "Extract from an offloaded result",
        "description": "Query a large tool result that was offloaded to a JSONL file (its descriptor \
            has 'offloaded': true and a file_path). Run one of the descriptor's 10 jq recipes \
            (recipe, with params for its parameters) or a custom jq filter (query, applied to each \
            record). Output is compact JSON, one value per line, paged by values: when more \
            follows, the answer says which offset to ask for next.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "file_path from the offloaded result's descriptor (or the bare file name)"},
                "recipe": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Standard recipe number (1-10) to run, as listed in the descriptor's jq_recipes. Give either recipe or query."},
                "query": {"type": "string", "description": "A jq filter run on each record, e.g. select(.namespace == \"x\") | .title. Give either recipe or query."},
                "slurp": {"type": "boolean", "description": "With query: run it once on the array of all records (jq -s), e.g. group_by(.namespace) | map({namespace: .[0].namespace, count: length})."},
                "params": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Parameters of a parameterized recipe, e.g. {\"namespace\": \"_semantic\"} or {\"keyword\": \"caching\"}."},
                "offset": {"type": "integer", "minimum": 0, "description": "Output values to skip (for the next page)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Output values to return at most."}
            },
            "required": ["file_path"]
        },
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
    })
}

/// The definition of `lro_list` (the memory-pointer pattern's
/// `listArtifacts`).
pub(crate) fn list_tool() -> serde_json::Value {
    json!({
        "name": LIST_TOOL,
        "title": "List offloaded results",
        "description": "List the offloaded tool results this client may read with lro_extract, \
            newest first: file, tool, record count, estimated tokens, expiry.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
    })
}

/// The two definitions as JSON text, made once.
fn tool_texts() -> &'static (String, String) {
    static TEXTS: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    TEXTS.get_or_init(|| (extract_tool().to_string(), list_tool().to_string()))
}

/// A tool of a `tools/list` answer, as far as its name and its
/// `outputSchema`.
#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "outputSchema", default)]
    output_schema: Option<serde_json::Value>,
}

/// Which of the layer's tools the server lists itself.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shadowed {
    /// The server has its own `lro_extract`.
    pub extract: bool,
    /// The server has its own `lro_list`.
    pub list: bool,
}

/// Each listed tool's name and what its `outputSchema` admits, as the
/// client saw it (a closed schema taken out is [`OutputSchema::Undeclared`]).
pub(crate) type OutputSchemas = Vec<(String, OutputSchema)>;

/// What [`add_tools`] does to a `tools/list` result.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolEdits {
    /// Append `lro_extract` and `lro_list` (those the server does not list).
    pub add_tools: bool,
    /// Take out each `outputSchema` that is [`OutputSchema::Closed`], so
    /// that the descriptor can be added to such a tool's
    /// `structuredContent` and clients that show `structuredContent` read
    /// the text content instead.
    pub open_closed_schemas: bool,
    /// Declare the added tools' answers to be at most this many characters
    /// (`_meta["anthropic/maxResultSizeChars"]`, which Claude Code reads:
    /// it keeps answers up to that size in its model's context).
    pub max_result_chars: Option<usize>,
}

/// A `tools/list` result edited as `edits` says (the text unchanged when
/// there is nothing to do), which of the layer's tools the server lists,
/// and each of the server's tools' [`OutputSchema`]. `None` when the
/// result cannot be read as an object with a `tools` array.
pub(crate) fn add_tools(
    result: &str,
    edits: ToolEdits,
) -> Option<(String, Shadowed, OutputSchemas)> {
    let raw: indexmap::IndexMap<String, Box<RawValue>> = serde_json::from_str(result).ok()?;
    let tools: Vec<Box<RawValue>> = serde_json::from_str(raw.get("tools")?.get()).ok()?;
    let mut shadowed = Shadowed::default();
    let mut schemas = Vec::with_capacity(tools.len());
    let mut listed: Vec<std::borrow::Cow<'_, str>> = Vec::with_capacity(tools.len() + 2);
    for t in &tools {
        let named = serde_json::from_str::<Named<'_>>(t.get()).ok()?;
        let name = named.name;
        shadowed.extract |= name.as_deref() == Some(EXTRACT_TOOL);
        shadowed.list |= name.as_deref() == Some(LIST_TOOL);
        let mut schema = named
            .output_schema
            .as_ref()
            .map_or(OutputSchema::Undeclared, OutputSchema::of);
        let mut text = std::borrow::Cow::Borrowed(t.get());
        if schema == OutputSchema::Closed
            && edits.open_closed_schemas
            && let Some(opened) = without_output_schema(t.get())
        {
            text = std::borrow::Cow::Owned(opened);
            schema = OutputSchema::Undeclared;
        }
        if let Some(name) = &name {
            schemas.push((name.clone().into_owned(), schema));
        }
        listed.push(text);
    }
    let (extract, list) = tool_texts();
    let sized = |text: &'static String| -> std::borrow::Cow<'static, str> {
        match edits.max_result_chars {
            Some(chars) => std::borrow::Cow::Owned(with_result_size(text, chars)),
            None => std::borrow::Cow::Borrowed(text.as_str()),
        }
    };
    if edits.add_tools && !shadowed.extract {
        listed.push(sized(extract));
    }
    if edits.add_tools && !shadowed.list {
        listed.push(sized(list));
    }
    let changed = listed.len() != tools.len()
        || listed
            .iter()
            .any(|t| matches!(t, std::borrow::Cow::Owned(_)));
    if !changed {
        return Some((result.to_owned(), shadowed, schemas));
    }
    let array = format!("[{}]", listed.join(","));
    Some((with_member(&raw, "tools", Some(&array))?, shadowed, schemas))
}

/// One of the layer's tool definitions with
/// `_meta["anthropic/maxResultSizeChars"]` set to `chars`.
fn with_result_size(tool: &str, chars: usize) -> String {
    let meta = format!(r#","_meta":{{"anthropic/maxResultSizeChars":{chars}}}}}"#);
    // The definitions are objects made here, without `_meta`.
    format!("{}{meta}", &tool[..tool.len() - 1])
}

/// A tool definition (raw JSON) without its `outputSchema` member.
fn without_output_schema(tool: &str) -> Option<String> {
    let raw: indexmap::IndexMap<String, Box<RawValue>> = serde_json::from_str(tool).ok()?;
    with_member(&raw, "outputSchema", None)
}

/// An `initialize` (or `server/discover`) result with what the layer
/// adds to its `capabilities` object: `resources` when the server declared
/// none; with `tools_list_changed`, `tools.listChanged: true` (the layer
/// then sends `notifications/tools/list_changed` itself). `None` when
/// there is nothing to change or no `capabilities` object.
pub(crate) fn add_capabilities(result: &str, tools_list_changed: bool) -> Option<String> {
    let raw: indexmap::IndexMap<String, Box<RawValue>> = serde_json::from_str(result).ok()?;
    let mut caps: indexmap::IndexMap<String, Box<RawValue>> =
        serde_json::from_str(raw.get("capabilities")?.get()).ok()?;
    let mut changed = false;
    if !caps.contains_key("resources") {
        caps.insert(
            "resources".to_owned(),
            RawValue::from_string("{}".into()).ok()?,
        );
        changed = true;
    }
    if tools_list_changed {
        let mut tools: indexmap::IndexMap<String, Box<RawValue>> = match caps.get("tools") {
            Some(t) => serde_json::from_str(t.get()).ok()?,
            None => indexmap::IndexMap::new(),
        };
        if tools.get("listChanged").map(|v| v.get()) != Some("true") {
            tools.insert(
                "listChanged".to_owned(),
                RawValue::from_string("true".into()).ok()?,
            );
            let text = serde_json::to_string(&tools).ok()?;
            caps.insert("tools".to_owned(), RawValue::from_string(text).ok()?);
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    with_member(
        &raw,
        "capabilities",
        Some(&serde_json::to_string(&caps).ok()?),
    )
}

/// The object `raw` with the value of its member `key` replaced by `value`
/// (raw JSON), or without that member when `value` is `None`; every other
/// member's bytes as they were.
fn with_member(
    raw: &indexmap::IndexMap<String, Box<RawValue>>,
    key: &str,
    value: Option<&str>,
) -> Option<String> {
    let mut out = String::with_capacity(value.map_or(0, str::len) + 64 * raw.len());
    out.push('{');
    for (k, v) in raw {
        let v = if k == key { value } else { Some(v.get()) };
        let Some(v) = v else { continue };
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k).ok()?);
        out.push(':');
        out.push_str(v);
    }
    out.push('}');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const EDITS: ToolEdits = ToolEdits {
        add_tools: true,
        open_closed_schemas: true,
        max_result_chars: None,
    };

    #[test]
    fn closed_output_schemas_are_taken_out_and_open_ones_kept() {
        let result = r#"{"tools":[{"name":"zod","outputSchema":{"type":"object","properties":{"rows":{"type":"array"}},"additionalProperties":false},"inputSchema":{"type":"object"}},{"name":"pydantic","outputSchema":{"type":"object","properties":{"result":{"type":"string"}},"required":["result"]}},{"name":"plain","inputSchema":{}}]}"#;
        let (out, _, schemas) = add_tools(result, EDITS).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(v["tools"][0].get("outputSchema").is_none(), "{out}");
        assert_eq!(v["tools"][0]["inputSchema"]["type"], "object");
        assert_eq!(v["tools"][1]["outputSchema"]["required"][0], "result");
        assert_eq!(
            schemas,
            [
                ("zod".to_owned(), OutputSchema::Undeclared),
                ("pydantic".to_owned(), OutputSchema::Open),
                ("plain".to_owned(), OutputSchema::Undeclared),
            ]
        );
        // Kept when asked to: the layer then knows it is closed.
        let keep = ToolEdits {
            open_closed_schemas: false,
            ..EDITS
        };
        let (out, _, schemas) = add_tools(result, keep).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["tools"][0]["outputSchema"]["additionalProperties"], false);
        assert_eq!(schemas[0].1, OutputSchema::Closed);
        assert_eq!(v["tools"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn tools_are_appended_unless_the_server_has_them() {
        let result = r#"{"tools":[{"name":"status","inputSchema":{"type":"object","x":1.0e3}}],"nextCursor":"c"}"#;
        let (out, shadowed, _) = add_tools(result, EDITS).unwrap();
        assert_eq!(shadowed, Shadowed::default());
        assert!(
            out.starts_with(
                r#"{"tools":[{"name":"status","inputSchema":{"type":"object","x":1.0e3}},"#
            ),
            "{out}"
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["status", "lro_extract", "lro_list"]);
        assert_eq!(v["nextCursor"], "c");
        assert!(v["tools"][1].get("_meta").is_none());
        // Sized for a client whose profile gives its limit.
        let sized = ToolEdits {
            max_result_chars: Some(50_000),
            ..EDITS
        };
        let (out, _, _) = add_tools(result, sized).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        for tool in &v["tools"].as_array().unwrap()[1..] {
            assert_eq!(tool["_meta"]["anthropic/maxResultSizeChars"], 50_000);
        }
        assert!(v["tools"][0].get("_meta").is_none());
        let own = r#"{"tools":[{"name":"lro_extract"}]}"#;
        let (out, shadowed, _) = add_tools(own, EDITS).unwrap();
        assert!(shadowed.extract && !shadowed.list);
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap()["tools"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        let both = r#"{"tools":[{"name":"lro_extract"},{"name":"lro_list"}]}"#;
        assert_eq!(add_tools(both, EDITS).unwrap().0, both);
        for bad in [r#"{"tools":3}"#, "[]", r#"{"x":1}"#] {
            assert!(add_tools(bad, EDITS).is_none(), "{bad}");
        }
    }

    /// Every `type` in `schema`, at any depth, with where it is.
    fn types(schema: &Value, at: &str, out: &mut Vec<(String, Value)>) {
        match schema {
            Value::Object(m) => {
                for (k, v) in m {
                    if k == "type" {
                        out.push((at.to_owned(), v.clone()));
                    }
                    types(v, &format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    types(v, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn input_schemas_have_one_type_per_property() {
        for tool in [extract_tool(), list_tool()] {
            let mut found = Vec::new();
            types(&tool["inputSchema"], "", &mut found);
            assert!(!found.is_empty());
            for (at, t) in found {
                assert!(t.is_string(), "{}: {at}: {t}", tool["name"]);
            }
        }
        let schema = &extract_tool()["inputSchema"];
        assert_eq!(schema["required"], serde_json::json!(["file_path"]));
    }

    #[test]
    fn the_resources_capability_is_added_only_when_missing() {
        let init = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s"}}"#;
        let out = add_capabilities(init, false).unwrap();
        assert_eq!(
            out,
            r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"s"}}"#
        );
        let subscribed = r#"{"capabilities":{"resources":{"subscribe":true}}}"#;
        assert!(add_capabilities(subscribed, false).is_none());
        assert!(add_capabilities(r#"{"capabilities":5}"#, false).is_none());
        let empty = add_capabilities(r#"{"capabilities":{}}"#, false).unwrap();
        assert_eq!(empty, r#"{"capabilities":{"resources":{}}}"#);
    }

    #[test]
    fn tools_list_changed_is_declared_for_lazy_listing() {
        let init = r#"{"capabilities":{"tools":{"x":1},"resources":{}},"serverInfo":{"name":"s"}}"#;
        assert_eq!(
            add_capabilities(init, true).unwrap(),
            r#"{"capabilities":{"tools":{"x":1,"listChanged":true},"resources":{}},"serverInfo":{"name":"s"}}"#
        );
        let declared = r#"{"capabilities":{"tools":{"listChanged":true},"resources":{}}}"#;
        assert!(add_capabilities(declared, true).is_none());
        assert_eq!(
            add_capabilities(r#"{"capabilities":{"resources":{}}}"#, true).unwrap(),
            r#"{"capabilities":{"resources":{},"tools":{"listChanged":true}}}"#
        );
    }
}
