//! Paged results: a result that carries a pagination cursor is one page of
//! a longer listing.
//!
//! The spec (Paginated Recall) says that a result set must never be
//! offloaded and carry an active cursor at once: LRO takes precedence and
//! the server creates no cursor. A layer in front of a server cannot stop
//! the server from paging, so we read it this way: when the offloaded
//! result carries a cursor (`nextCursor`, `next_cursor`, `cursor`,
//! `nextPageToken`, ...), `has_more: true`, or a total beyond its count,
//! in `structuredContent` or in the JSON object of a text block around the
//! records (also one level down, in `pagination`, `page`, `meta`), the
//! descriptor's `page` says that the file holds this page only, the total
//! when known, and how to ask for the next page (call the tool again with
//! the cursor). The cursor itself stays where the server put it in the
//! rewritten result.

use serde_json::{Map, Value};

use super::descriptor::PageInfo;
use super::records::{Rebuild, Shape};

/// Envelopes larger than this are not parsed for a cursor.
const MAX_ENVELOPE_BYTES: usize = 64 * 1024;
/// Longest cursor shown whole.
const MAX_CURSOR_CHARS: usize = 200;

const CURSOR_KEYS: [&str; 7] = [
    "nextCursor",
    "next_cursor",
    "cursor",
    "nextPageToken",
    "next_page_token",
    "next_page",
    "nextPage",
];
const MORE_KEYS: [&str; 3] = ["has_more", "hasMore", "more"];
const TOTAL_KEYS: [&str; 5] = [
    "total",
    "total_count",
    "totalCount",
    "total_results",
    "totalResults",
];
const NESTED_KEYS: [&str; 4] = ["pagination", "page", "meta", "page_info"];

/// What the result says about other pages, if anything; `count` is the
/// number of records in the file, `tool` the tool to call again.
pub(crate) fn page_info(rebuild: Option<&Rebuild>, count: usize, tool: &str) -> Option<PageInfo> {
    let rebuild = rebuild?;
    envelopes(rebuild).find_map(|(place, envelope)| read(&envelope, &place, count, tool))
}

/// The objects around the records: each JSON segment's envelope, then
/// `structuredContent`; each with the name of where it is.
fn envelopes(rebuild: &Rebuild) -> impl Iterator<Item = (String, Map<String, Value>)> + '_ {
    let segments = rebuild.segments.iter().filter_map(|s| match &s.shape {
        Shape::Json { before, after, .. }
            if !before.is_empty() && before.len() + after.len() <= MAX_ENVELOPE_BYTES =>
        {
            let place = match s.block {
                Some(i) => format!("the JSON of content block {i}"),
                None => "structuredContent".to_owned(),
            };
            object(&format!("{before}[]{after}")).map(|o| (place, o))
        }
        _ => None,
    });
    let result = rebuild.result.get();
    let structured = (result.len() <= MAX_ENVELOPE_BYTES)
        .then(|| object(result))
        .flatten()
        .and_then(|mut r| match r.remove("structuredContent") {
            Some(Value::Object(o)) => Some(("structuredContent".to_owned(), o)),
            _ => None,
        });
    segments.chain(structured)
}

fn object(json: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(json) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// The paging facts of one envelope (or of its `pagination` member).
fn read(envelope: &Map<String, Value>, place: &str, count: usize, tool: &str) -> Option<PageInfo> {
    let here = std::iter::once((place.to_owned(), envelope));
    let nested = NESTED_KEYS.iter().filter_map(|k| match envelope.get(*k) {
        Some(Value::Object(o)) => Some((format!("{place}.{k}"), o)),
        _ => None,
    });
    here.chain(nested)
        .find_map(|(place, o)| facts(o, &place, count, tool))
}

fn facts(o: &Map<String, Value>, place: &str, count: usize, tool: &str) -> Option<PageInfo> {
    let cursor = CURSOR_KEYS.iter().find_map(|k| match o.get(*k) {
        Some(Value::String(s)) if !s.is_empty() => Some((k, s.clone())),
        Some(Value::Number(n)) => Some((k, n.to_string())),
        _ => None,
    });
    let has_more = MORE_KEYS
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_bool));
    let total = TOTAL_KEYS
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_u64));
    let more_pages =
        cursor.is_some() || has_more == Some(true) || total.is_some_and(|t| t > count as u64);
    if !more_pages {
        return None;
    }
    let next_cursor_field = cursor.as_ref().map(|(k, _)| format!("{place}.{k}"));
    let next_cursor = cursor.map(|(_, c)| c.chars().take(MAX_CURSOR_CHARS).collect::<String>());
    let note = note(count, total, next_cursor_field.as_deref(), tool);
    Some(PageInfo {
        next_cursor,
        next_cursor_field,
        total,
        has_more,
        note,
    })
}

fn note(count: usize, total: Option<u64>, cursor: Option<&str>, tool: &str) -> String {
    let tool: String = tool.chars().take(64).collect();
    let of = total
        .map(|t| format!(" ({count} of {t} records)"))
        .unwrap_or_default();
    let next = match cursor {
        Some(field) => format!(
            "For the next page, call {tool} again with its cursor argument set to next_cursor (from {field}); each page is offloaded to a file of its own."
        ),
        None => format!(
            "Ask {tool} for the next page as its paging arguments allow; each page is offloaded to a file of its own."
        ),
    };
    format!("This file holds one page of the results{of}, not all of them. {next}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cursors_totals_and_more_flags() {
        let o = |v: Value| v.as_object().unwrap().clone();
        let p = read(
            &o(json!({"items": [], "nextCursor": "abc", "total": 90})),
            "structuredContent",
            30,
            "list",
        )
        .unwrap();
        assert_eq!(p.next_cursor.as_deref(), Some("abc"));
        assert_eq!(
            p.next_cursor_field.as_deref(),
            Some("structuredContent.nextCursor")
        );
        assert_eq!(p.total, Some(90));
        assert!(p.note.contains("(30 of 90 records)"), "{}", p.note);
        let p = read(
            &o(json!({"data": [], "pagination": {"has_more": true}})),
            "x",
            5,
            "t",
        )
        .unwrap();
        assert_eq!(p.has_more, Some(true));
        assert!(
            read(
                &o(json!({"data": [], "total": 5, "has_more": false})),
                "x",
                5,
                "t"
            )
            .is_none()
        );
        assert!(read(&o(json!({"data": [], "cursor": null})), "x", 5, "t").is_none());
    }
}
