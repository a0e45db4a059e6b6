//! Where the records sit in one value: the record array of a JSON text or
//! of `structuredContent`, its elements, and what a text block holds (JSON,
//! a copy of `structuredContent`, JSON lines, plain text).
//!
//! Everything here walks minified text and keeps no list: the elements of
//! an array are found one after the other by [`Items`], so ten million
//! elements cost no more memory than ten.

use std::borrow::Cow;

#[cfg(debug_assertions)]
use serde_json::value::RawValue;

use super::Records;
use crate::json::{Style, after_string, is_minified, minifies_to, minify, trim_parts, validate};

/// The shape of one JSON text or structured value.
pub(super) enum JsonShape<'a> {
    /// `before + array + after`; `array` is the record array, brackets
    /// included (walk it with [`elements`]).
    Array {
        before: &'a str,
        after: &'a str,
        array: &'a str,
    },
    /// One value, one record.
    Single,
}

/// `json` minified: borrowed when it already is (the usual case: servers
/// send compact JSON), else a minified copy. `json` must be valid JSON.
pub(super) fn minified(json: &str) -> Cow<'_, str> {
    if is_minified(json) {
        Cow::Borrowed(json)
    } else {
        Cow::Owned(minify(json))
    }
}

/// Finds the record array in minified JSON: the value itself when it is an
/// array, else the array member holding more than half of an object's
/// bytes (of repeated keys the last one counts, as for any JSON reader).
pub(super) fn json_shape(minified: &str) -> JsonShape<'_> {
    let shape = match minified.as_bytes().first() {
        Some(b'[') => JsonShape::Array {
            before: "",
            after: "",
            array: minified,
        },
        Some(b'{') => object_shape(minified),
        _ => JsonShape::Single,
    };
    // Debug builds (the tests, the property tests) check it against a parse.
    #[cfg(debug_assertions)]
    if minified.len() <= 1 << 20 {
        check_against_parse(minified, &shape);
    }
    shape
}

/// [`json_shape`] of `json` (valid JSON) when it is already minified;
/// `None` when it is not. An object is detected as minified by the walk that looks
/// for its record array (it sees every byte outside strings): one walk
/// where [`minified`] and [`json_shape`] take two. The elements of the
/// record array are pushed to `records` in that walk too (the walk that
/// finds where the array ends meets each of its commas): nothing is
/// pushed when the answer is `None` or [`JsonShape::Single`].
pub(super) fn minified_shape<'a>(json: &'a str, records: &mut Records) -> Option<JsonShape<'a>> {
    if !(json.starts_with('{') && json.ends_with('}')) {
        let shape = is_minified(json).then(|| json_shape(json))?;
        if let JsonShape::Array { array, .. } = shape {
            push_elements(records, array);
        }
        return Some(shape);
    }
    let mark = records.mark();
    let mut items = Items::new(json);
    let shape = object_shape_of(json, &mut items, Some(records));
    if items.spaced || matches!(shape, JsonShape::Single) {
        // What an array not taken reserved is given back.
        records.truncate(mark);
        records.shrink();
    }
    if items.spaced {
        return None;
    }
    #[cfg(debug_assertions)]
    if json.len() <= 1 << 20 {
        check_against_parse(json, &shape);
    }
    Some(shape)
}

/// Appends the elements of a minified array as records: they take what the
/// array does (each comma becomes a newline), reserved at once.
pub(super) fn push_elements(records: &mut Records, array: &str) {
    records.reserve(array.len());
    for element in elements_of(array) {
        records.push(element);
    }
}

/// The array member of a minified object that holds over half its bytes,
/// unless a later member of the same key hides it.
fn object_shape(object: &str) -> JsonShape<'_> {
    object_shape_of(object, &mut Items::new(object), None)
}

/// [`object_shape`] from the object's items; with `records`, the elements
/// of the record array pushed to it on the way (see [`minified_shape`]).
fn object_shape_of<'a>(
    object: &'a str,
    items: &mut Items<'a>,
    mut records: Option<&mut Records>,
) -> JsonShape<'a> {
    let mut found: Option<(&str, &str)> = None;
    // The records before the object's, and those up to the end of the
    // elements of `found`: the elements of any other array are dropped.
    let start = records.as_deref().map(Records::mark);
    let mut kept = start;
    while let Some(item) = items.item(records.as_deref_mut()) {
        let (key, value) = member(item);
        if found.is_some_and(|(k, _)| same_key(k, key)) {
            // Only one value can hold over half the bytes: none is left.
            found = None;
            kept = start;
        }
        if value.starts_with('[') && value.len() * 2 > object.len() {
            found = Some((key, value));
            kept = records.as_deref().map(Records::mark);
        }
        if let (Some(records), Some(kept)) = (records.as_deref_mut(), kept) {
            records.truncate(kept);
        }
    }
    match found {
        Some((_, array)) => {
            let start = array.as_ptr() as usize - object.as_ptr() as usize;
            JsonShape::Array {
                before: &object[..start],
                after: &object[start + array.len()..],
                array,
            }
        }
        None => JsonShape::Single,
    }
}

/// Whether two raw keys (quotes included) name the same member.
fn same_key(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if !a.contains('\\') && !b.contains('\\') {
        return false;
    }
    let decode = |k: &str| serde_json::from_str::<String>(k).ok();
    matches!((decode(a), decode(b)), (Some(x), Some(y)) if x == y)
}

/// The key (quotes included) and value of one `"key":value` member.
fn member(item: &str) -> (&str, &str) {
    let key_end = after_string(item.as_bytes(), 1);
    (
        &item[..key_end],
        item.get(key_end + 1..).unwrap_or_default(),
    )
}

/// The parse's answer, which [`json_shape`] must give. (An object with a
/// key a parse refuses, a lone surrogate, is walked all the same: its
/// bytes are kept as they are, nothing needs the key decoded.)
#[cfg(debug_assertions)]
fn check_against_parse(minified: &str, shape: &JsonShape<'_>) {
    use crate::wire::mcp::RawObject;
    let array = match minified.as_bytes().first() {
        Some(b'[') => Some(minified),
        Some(b'{') => {
            let Ok(object) = serde_json::from_str::<RawObject<'_>>(minified) else {
                return;
            };
            object
                .values()
                .map(|v| v.get())
                .filter(|v| v.starts_with('['))
                .max_by_key(|v| v.len())
                .filter(|v| v.len() * 2 > minified.len())
        }
        _ => None,
    };
    match (array, shape) {
        (None, JsonShape::Single) => {}
        (Some(parsed), JsonShape::Array { array, .. }) => {
            assert!(std::ptr::eq(parsed, *array), "{minified}");
            let elements = serde_json::from_str::<Vec<&RawValue>>(parsed).expect("an array");
            let walked: Vec<&str> = elements_of(array).collect();
            let parsed: Vec<&str> = elements.iter().map(|e| e.get()).collect();
            assert_eq!(walked, parsed, "{minified}");
        }
        _ => panic!("walk and parse disagree on {minified}"),
    }
}

/// The elements of a minified array (brackets included), one after the other.
pub(super) fn elements_of(array: &str) -> Items<'_> {
    Items::new(array)
}

/// The items at the top level of a minified array or object: each element,
/// or each `"key":value` member. Found by walking the text, nothing kept.
pub(super) struct Items<'a> {
    text: &'a str,
    /// Where the next item starts; past the end when done.
    pos: usize,
    /// Whitespace was met outside strings: the text is not minified (and
    /// the items found are not to be used).
    spaced: bool,
}

impl<'a> Items<'a> {
    /// The items of `container`, a minified array or object.
    fn new(container: &'a str) -> Self {
        let empty = container.len() < 2 || matches!(container.as_bytes()[1], b']' | b'}');
        Items {
            text: container,
            pos: if empty { container.len() } else { 1 },
            spaced: false,
        }
    }
}

impl<'a> Items<'a> {
    /// The next item. With `records`, when the item is a member whose
    /// value is an array opening in the first half of the text (only such
    /// an array can hold over half of it), each element of that array is
    /// pushed to `records` as the walk passes its end.
    fn item(&mut self, mut records: Option<&mut Records>) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        // The closing bracket is the last byte; an item ends before it.
        let end = self.text.len().checked_sub(1)?;
        let start = self.pos;
        if start >= end {
            return None;
        }
        // Where the element being walked starts, inside an array value
        // whose elements are pushed.
        let mut element: Option<usize> = None;
        let mut depth = 0usize;
        let mut i = start;
        while i < end {
            match bytes[i] {
                b'"' => {
                    i = after_string(bytes, i + 1);
                    continue;
                }
                b'[' if depth == 0 && i * 2 < self.text.len() && records.is_some() => {
                    if let Some(records) = records.as_deref_mut() {
                        // At most the rest of the text: reserved once.
                        records.reserve(self.text.len() - i);
                    }
                    element = Some(i + 1);
                    depth = 1;
                }
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    if depth == 1
                        && let (Some(from), Some(records)) =
                            (element.take(), records.as_deref_mut())
                        && from < i
                    {
                        records.push(&self.text[from..i]);
                    }
                    depth = depth.saturating_sub(1);
                }
                b',' if depth == 0 => break,
                b',' if depth == 1 => {
                    if let (Some(from), Some(records)) = (element, records.as_deref_mut()) {
                        records.push(&self.text[from..i]);
                        element = Some(i + 1);
                    }
                }
                b' ' | b'\t' | b'\n' | b'\r' => self.spaced = true,
                _ => {}
            }
            i += 1;
        }
        let i = i.min(end);
        self.pos = i + 1;
        Some(&self.text[start..i])
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        self.item(None)
    }
}

/// What a text block holds.
pub(super) enum TextKind<'t> {
    /// JSON, minified (borrowed when the text already was).
    Json {
        minified: Cow<'t, str>,
    },
    /// JSON that minifies to exactly the minified `structuredContent`: its
    /// backwards-compatible text copy. `style`: the known style it lays the
    /// structured content out in (`None`: none), found while classifying.
    Copy {
        style: Option<Style>,
    },
    /// Two or more lines of JSON values (blank lines aside).
    Jsonl,
    Plain,
}

pub(super) fn classify_text<'t>(text: &'t str, structured_minified: Option<&str>) -> TextKind<'t> {
    let (_, core, _) = trim_parts(text);
    // A known layout of the (valid, minified) structured content is valid
    // JSON and minifies to it: a copy, detected in one compare, without the
    // parse and the minifying compare below.
    if let Some(m) = structured_minified.filter(|_| core.starts_with(['{', '[']))
        && let Some(style) = Style::detect(core, m)
    {
        return TextKind::Copy { style: Some(style) };
    }
    if core.starts_with(['{', '[']) && validate(core).is_ok() {
        // Compared while minifying: a copy is never built.
        if structured_minified.is_some_and(|m| minifies_to(core, m)) {
            return TextKind::Copy { style: None };
        }
        return TextKind::Json {
            minified: minified(core),
        };
    }
    if core.starts_with(['{', '[']) && core.contains('\n') {
        let mut values = 0usize;
        for line in jsonl_lines(core) {
            if validate(line).is_err() {
                return TextKind::Plain;
            }
            values += 1;
        }
        if values >= 2 {
            return TextKind::Jsonl;
        }
    }
    TextKind::Plain
}

/// The non-blank lines of JSON lines text (a final `\r` cut off).
pub(super) fn jsonl_lines(core: &str) -> impl Iterator<Item = &str> {
    core.split('\n')
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| !line.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `minified_shape` answers `Some(json_shape)` exactly when the text is
    /// minified, and pushes exactly the record array's elements after the
    /// records already there.
    fn agrees(json: &str) {
        let mut records = Records::default();
        records.push("0");
        let shape = minified_shape(json, &mut records);
        assert_eq!(shape.is_some(), is_minified(json), "{json}");
        let pushed: Vec<&str> = records.view().iter().skip(1).collect();
        let (Some(shape), true) = (shape, is_minified(json)) else {
            assert!(pushed.is_empty(), "{json}");
            return;
        };
        match (shape, json_shape(json)) {
            (JsonShape::Single, JsonShape::Single) => assert!(pushed.is_empty(), "{json}"),
            (
                JsonShape::Array {
                    before,
                    after,
                    array,
                },
                JsonShape::Array {
                    before: b,
                    after: a,
                    array: arr,
                },
            ) => {
                assert!(std::ptr::eq(array, arr), "{json}");
                assert_eq!((before, after), (b, a), "{json}");
                assert_eq!(pushed, elements_of(array).collect::<Vec<_>>(), "{json}");
            }
            _ => panic!("shapes differ on {json}"),
        }
    }

    #[test]
    fn minified_shape_detects_minified_text_in_its_walk() {
        for json in [
            r#"{"count":2,"memories":[{"id":1},{"id":2}]}"#,
            r#"{"count":2, "memories":[{"id":1},{"id":2}]}"#,
            r#"{"count":2,"memories":[{"id":1},{"id": 2}]}"#,
            r#"{"count":2,"memories":[{"id":1},{"id":2}]} "#,
            r#"{"a b":"c d","x":[" ",{"y":"\n"}]}"#,
            r#"{"a":[1,[2,3],{"b":[4]}],"c":[]}"#,
            r#"{"a":[],"b":[[1,2],[3,4],[5,6]]}"#,
            r#"{"a":[[1,2],[3,4],[5,6],[7]],"a":1}"#,
            r#"{"s":"[1,2]","a":["]",",","[",{"x":[1,2]}]}"#,
            r#"{"a":[1,2,3,4,5,6,7,8,9],"b":[1,2,3,4,5,6,7,8,9,10]}"#,
            "{}",
            "{ }",
            "[1,2]",
            "[1, 2]",
            "\"x y\"",
            " \"x\"",
            "12",
        ] {
            agrees(json);
        }
        let spaced = r#"{"a":[1],"b":{"c": [2,3]}}"#;
        let mut items = Items::new(spaced);
        assert_eq!(items.by_ref().count(), 2);
        assert!(items.spaced);
    }

    fn value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<i32>().prop_map(serde_json::Value::from),
            "[a-z \n\"\\\\,:{}\\[\\]]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[a-z ]{0,4}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Items cross blocks as a parse does: long strings of quotes,
        /// backslashes, commas and brackets, at every offset from a block's
        /// start; whitespace outside strings is detected, inside is not.
        #[test]
        fn items_are_the_elements_a_parse_finds(
            strings in prop::collection::vec("[a,\\[\\]{}\"\\\\ ]{0,150}", 0..12),
            pad in 0usize..64,
            spaced in any::<bool>(),
        ) {
            let mut elements: Vec<serde_json::Value> = vec![serde_json::Value::from("p".repeat(pad))];
            elements.extend(strings.iter().map(|s| serde_json::json!([s, {"k,": s}])));
            let parts: Vec<String> = elements.iter().map(|e| e.to_string()).collect();
            let sep = if spaced { ", " } else { "," };
            let text = format!("[{}]", parts.join(sep));
            let parsed: Vec<&RawValue> = serde_json::from_str(&text).unwrap();
            let mut items = Items::new(&text);
            let walked: Vec<&str> = items.by_ref().collect();
            let trimmed: Vec<&str> = walked.iter().map(|w| w.trim_start()).collect();
            let parsed: Vec<&str> = parsed.iter().map(|e| e.get()).collect();
            prop_assert_eq!(trimmed, parsed);
            prop_assert_eq!(items.spaced, spaced && elements.len() > 1);
        }

        #[test]
        fn minified_shape_agrees_with_minified_then_json_shape(v in value(), style in 0usize..4) {
            let compact = serde_json::to_string(&v).unwrap();
            let text = match style {
                0 => compact,
                1 => serde_json::to_string_pretty(&v).unwrap(),
                2 => Style::Spaced.apply(&compact),
                _ => format!("{compact} "),
            };
            agrees(&text);
        }
    }
}
