//! Where the descriptor sits in `structuredContent` once its record array
//! is offloaded, and how a rebuild takes it out again: the writer and the
//! reader of that one format, side by side.

use crate::json::push_json_string;
use crate::wire::mcp::RawObject;

/// The member of `structuredContent` that holds the descriptor when its
/// record array was offloaded.
pub(crate) const STRUCTURED_MARKER: &str = "offloaded";

/// `slim` (`structuredContent` with its record array emptied, accepted by
/// `rewrite::structured_fits`: an object without the member, or a bare array),
/// minified, with the descriptor first (member [`STRUCTURED_MARKER`]); a
/// bare array becomes `[descriptor]`.
pub(crate) fn with_descriptor(slim: &str, descriptor_json: &str) -> String {
    let minified = crate::json::minify(slim);
    if minified == "[]" {
        return format!("[{descriptor_json}]");
    }
    let Some(rest) = minified.strip_prefix('{') else {
        return minified; // not reached: refused by `structured_fits`
    };
    let mut out = String::with_capacity(minified.len() + descriptor_json.len() + 16);
    out.push('{');
    push_json_string(&mut out, STRUCTURED_MARKER);
    out.push(':');
    out.push_str(descriptor_json);
    if rest != "}" {
        out.push(',');
    }
    out.push_str(rest);
    out
}

/// The minified `structuredContent` of a rewritten result without the
/// descriptor [`with_descriptor`] put in it: its first member `key` (an object
/// with `"offloaded": true` and a `file_path`), or a bare `[descriptor]`
/// array's element; `None` when it has neither.
pub(crate) fn without_marker(object: &str, key: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Marker<'a> {
        offloaded: bool,
        #[serde(borrow)]
        #[allow(dead_code)]
        file_path: std::borrow::Cow<'a, str>,
    }
    let is_marker = |raw: &str| serde_json::from_str::<Marker<'_>>(raw).is_ok_and(|m| m.offloaded);
    if object.starts_with('[') {
        let items = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(object).ok()?;
        return (items.len() == 1 && is_marker(items[0].get())).then(|| "[]".to_owned());
    }
    let fields = serde_json::from_str::<RawObject<'_>>(object).ok()?;
    let (first, value) = fields.first()?;
    if first != key || !is_marker(value.get()) {
        return None;
    }
    let mut prefix = String::from("{");
    push_json_string(&mut prefix, key);
    prefix.push(':');
    prefix.push_str(value.get());
    let rest = object.strip_prefix(&prefix)?;
    Some(format!("{{{}", rest.strip_prefix(',').unwrap_or(rest)))
}
