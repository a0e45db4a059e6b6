//! Generators of JSON-RPC request and response bodies (one message, a
//! batch, edited ones, anything), for `jsonrpc.rs`.

use proptest::prelude::*;
use proptest::sample::select;

use super::results::{apply_edits, edit, tool_result_j};
use super::values::{J, json, json_text, key, lit, number, obj, render, s, str_contents, ws_seed};

fn client_info() -> BoxedStrategy<J> {
    prop_oneof![
        4 => (select(&["true", "false", "\"true\"", "1", "null", "true "][..]), any::<bool>())
            .prop_map(|(flag, dup)| {
                let mut m = vec![("name", s("c")), ("proxy", lit(flag.trim()))];
                if dup {
                    m.push(("pro\\u0078y", lit("true")));
                }
                obj(m)
            }),
        1 => json(),
    ]
    .boxed()
}

fn params() -> BoxedStrategy<J> {
    let name = prop_oneof![
        4 => select(&["fuzz_tool", "t\\u00e9", "recall_memories", ""][..]).prop_map(s),
        2 => str_contents().prop_map(J::Str),
        1 => json(),
    ];
    let member = prop_oneof![
        3 => json().prop_map(|v| ("arguments".to_owned(), v)),
        2 => (client_info(), any::<bool>()).prop_map(|(ci, escaped_key)| {
            let k = if escaped_key {
                "io.modelcontextprotocol\\/clientInfo"
            } else {
                "io.modelcontextprotocol/clientInfo"
            };
            ("_meta".to_owned(), obj(vec![(k, ci)]))
        }),
        1 => client_info().prop_map(|ci| ("clientInfo".to_owned(), ci)),
        1 => prop_oneof![str_contents().prop_map(J::Str), json()]
            .prop_map(|v| ("taskId".to_owned(), v)),
        1 => prop_oneof![Just(lit("null")), json()].prop_map(|v| ("task".to_owned(), v)),
        1 => (key(), json()),
        1 => json().prop_map(|v| ("name".to_owned(), v)),
    ];
    prop_oneof![
        6 => (prop::option::weighted(0.85, name), prop::collection::vec(member, 0..4), any::<u8>())
            .prop_map(|(name, others, order)| {
                let mut members: Vec<(String, J)> = name.map(|n| ("name".to_owned(), n)).into_iter().collect();
                members.extend(others);
                if !members.is_empty() {
                    let n = members.len();
                    members.rotate_left(usize::from(order) % n);
                }
                J::Obj(members)
            }),
        1 => json(),
    ]
    .boxed()
}

/// A JSON-RPC request (or something close to one).
pub(super) fn request() -> BoxedStrategy<J> {
    let id = prop_oneof![
        3 => number().prop_map(J::Lit),
        3 => str_contents().prop_map(J::Str),
        1 => Just(lit("null")),
        1 => json(),
    ];
    let method = prop_oneof![
        8 => select(&["tools/call", "tools\\/call", "\\u0074ools/call", "tasks/result"][..])
            .prop_map(s),
        3 => select(&[
            "initialize", "tools/list", "notifications/progress", "tools/call ", "Tools/call",
        ][..])
        .prop_map(s),
        1 => json(),
    ];
    (
        prop::option::weighted(0.9, id),
        prop::option::weighted(0.95, method),
        prop::option::weighted(0.9, params()),
        prop::collection::vec((key(), json()), 0..2),
        any::<u8>(),
    )
        .prop_map(|(id, method, params, extra, order)| {
            let mut members = vec![("jsonrpc".to_owned(), s("2.0"))];
            members.extend(id.map(|v| ("id".to_owned(), v)));
            members.extend(method.map(|v| ("method".to_owned(), v)));
            members.extend(params.map(|v| ("params".to_owned(), v)));
            members.extend(extra);
            let n = members.len();
            members.rotate_left(usize::from(order) % n);
            J::Obj(members)
        })
        .boxed()
}

/// A request body: one request, a batch, or anything.
pub(super) fn request_body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => (request(), ws_seed()).prop_map(|(r, seed)| render(&r, seed).into_bytes()),
        2 => (prop::collection::vec(request(), 0..5), ws_seed())
            .prop_map(|(rs, seed)| render(&J::Arr(rs), seed).into_bytes()),
        1 => (json_text(), select(&["", " ", "\u{feff}", "\x0c", "\n\r\t"][..]))
            .prop_map(|(t, lead)| format!("{lead}{t}").into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => (request(), ws_seed(), prop::collection::vec(edit(), 1..3)).prop_map(
            |(r, seed, edits)| {
                let mut b = render(&r, seed).into_bytes();
                apply_edits(&mut b, &edits);
                b
            }
        ),
    ]
    .boxed()
}

/// A JSON-RPC message a server sends.
pub(super) fn message() -> BoxedStrategy<J> {
    let id = prop_oneof![
        3 => number().prop_map(J::Lit),
        3 => str_contents().prop_map(J::Str),
        1 => Just(lit("null")),
        1 => json(),
    ];
    let body = prop_oneof![
        4 => tool_result_j().prop_map(|r| ("result".to_owned(), r)),
        1 => json().prop_map(|r| ("result".to_owned(), r)),
        1 => json().prop_map(|e| ("error".to_owned(), e)),
        1 => json().prop_map(|p| ("params".to_owned(), p)),
    ];
    (
        prop::option::weighted(0.9, id),
        prop::option::weighted(
            0.15,
            select(&["notifications/progress", "sampling/createMessage"][..]),
        ),
        prop::collection::vec(body, 1..3),
        any::<u8>(),
    )
        .prop_map(|(id, method, bodies, order)| {
            let mut members = vec![("jsonrpc".to_owned(), s("2.0"))];
            members.extend(id.map(|v| ("id".to_owned(), v)));
            members.extend(method.map(|m| ("method".to_owned(), s(m))));
            members.extend(bodies);
            let n = members.len();
            members.rotate_left(usize::from(order) % n);
            J::Obj(members)
        })
        .boxed()
}

/// A response body: one message, a batch, or anything.
pub(super) fn response_body() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (message(), ws_seed()).prop_map(|(m, seed)| render(&m, seed)),
        2 => (prop::collection::vec(message(), 0..4), ws_seed())
            .prop_map(|(ms, seed)| render(&J::Arr(ms), seed)),
        1 => json_text(),
        1 => prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => (message(), ws_seed(), prop::collection::vec(edit(), 1..3)).prop_map(
            |(m, seed, edits)| {
                let mut b = render(&m, seed).into_bytes();
                apply_edits(&mut b, &edits);
                String::from_utf8_lossy(&b).into_owned()
            }
        ),
    ]
    .boxed()
}
