//! Two halves against one pass: the same answer, the same notes in the
//! same order, at every cut a text offers.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::{LONG_STRING, validate_whole};
use super::*;

/// One pass: the answer, and the notes when valid.
fn whole(b: &[u8]) -> Result<Vec<Note>, Invalid> {
    let mut notes = notes();
    validate_whole(b, &mut notes).map(|()| notes.notes)
}

/// Notes of everything.
fn notes() -> Notes {
    Notes {
        notes: Vec::new(),
        members: true,
    }
}

/// Two halves cut at `at`.
fn split(b: &[u8], at: usize) -> Result<Vec<Note>, Invalid> {
    let mut notes = notes();
    validate_split(b, at, &mut notes).map(|()| notes.notes)
}

/// Every cut `text` offers (a `,{"`), each agreeing with one pass.
fn agree_at_every_cut(text: &[u8]) -> usize {
    let expected = whole(text);
    let cuts: Vec<usize> = memchr::memmem::find_iter(text, b",{\"").collect();
    for &at in &cuts {
        assert_eq!(
            split(text, at),
            expected,
            "cut at {at}: {:?}",
            String::from_utf8_lossy(text)
        );
    }
    cuts.len()
}

/// A result message around `items` (objects), `text` and `extra`.
fn message(items: Vec<Value>, text: String, extra: Value, pretty: bool) -> String {
    let v = json!({
        "jsonrpc": "2.0",
        "result": {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"items": items, "more": [{"a": [{"b": 1}, {"c": extra.clone()}]}]},
            "isError": false,
            "after": extra,
        },
        "id": 7,
        "tail": [{"x": 1}, {"y": [2, {"z": 3}]}],
    });
    match pretty {
        true => serde_json::to_string_pretty(&v).unwrap(),
        false => v.to_string(),
    }
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z,{}\\[\\]\":\\\\ ]{0,12}".prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::btree_map("[a-z{,\"]{0,4}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z]{1,4}", value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// `text` with a byte at each of `at` set to one of `to`.
fn edited(text: &str, edits: &[(prop::sample::Index, u8)]) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for (at, to) in edits {
        let i = at.index(b.len());
        b[i] = b"\"\\{}[],: x0"[usize::from(*to) % 11];
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    #[test]
    fn two_halves_are_one_pass(
        items in prop::collection::vec(object(), 0..6),
        text in "[a-z,{}\"\\n]{0,30}",
        extra in value(),
        pretty in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
    ) {
        let json = message(items, text, extra, pretty);
        agree_at_every_cut(json.as_bytes());
        agree_at_every_cut(&edited(&json, &edits));
    }
}

#[test]
fn cuts_inside_strings_and_at_every_depth_agree() {
    // The halves agree where the cut is an array's comma at depth 2 or more.
    let text = br#"{"k":{"l":[{"a":1},{"b":"x,{"},{"c":2}],"m":{"n":1}},"o":3}"#;
    let joined = |at: usize| match first_half(text, at + 1, true) {
        Ok(First::Paused(paused)) => paused.join(second_half(text, at + 1).ok()??, true),
        _ => None,
    };
    let cuts: Vec<usize> = memchr::memmem::find_iter(text, b",{\"").collect();
    assert_eq!(cuts.len(), 3);
    assert!(joined(cuts[0]).is_some());
    assert!(joined(cuts[1]).is_none(), "inside a string");
    assert_eq!(joined(cuts[2]), whole(text).ok());
    for text in [
        r#"[{"a":1},{"b":2}]"#,
        r#"{"k":[{"a":1},{"b":2}]}"#,
        r#"{"k":{"l":[{"a":1},{"b":"x,{"},{"c":[1,{"d":2},{"e":3}]}],"m":2},"n":[1,2]}"#,
        r#"{"s":"a,{\"b\":1}","t":["x,{","y"]}"#,
        r#"{"k":[{"a":1},{"b":2}]]"#,
        r#"{"k":[{"a":1},{"b":2}}}"#,
        r#"{"k":{"l":[{"a":1},{"b":2}]}"#,
        r#"{"k":{"l":[{"a":1},{"b":2}]}}}"#,
        r#"{"k":{"l":[{"a":1},{"b":2}],"m":1,"n"}}"#,
        r#"{"k":{"l":[{"a":1},{"b":2}],"m":}}"#,
        r#"{"k":{"l":[{"a":1},{"b":2}],3}}"#,
        r#"{"k":[[{"a":1},{"b":2}],"x":1]}"#,
        r#"{"k":{"l":[{"a":1},{"b":2}]} , "m" : [ {"c" : 3} ] } "#,
        r#"{"k":{"l":[{"a":1},{"b":2}]} x"#,
        r#"{"k":{"l":[{"a":1},{"b":2"#,
    ] {
        agree_at_every_cut(text.as_bytes());
    }
}

#[test]
fn a_large_result_is_cut_and_told_as_one_pass_tells_it() {
    let long = "ab\\\"".repeat(LONG_STRING);
    let items: Vec<Value> = (0..60_000)
        .map(|n| json!({"id": n, "note": if n % 15_000 == 0 { long.clone() } else { format!("n{n}") }, "tags": ["a", {"b": n}]}))
        .collect();
    let json = message(items, long.clone(), json!({"s": long}), false);
    let at = split_at(&json).expect("cut");
    assert!(at > json.find("\"items\"").unwrap());
    let one = whole(json.as_bytes()).expect("valid");
    assert_eq!(split(json.as_bytes(), at), Ok(one.clone()));
    // The halves agreed (no second pass).
    let First::Paused(paused) = first_half(json.as_bytes(), at + 1, true).expect("valid") else {
        panic!("paused at the cut");
    };
    let met = second_half(json.as_bytes(), at + 1)
        .expect("valid")
        .expect("kept");
    assert_eq!(paused.join(met, true), Some(one.clone()));
    // As the validator runs it: cut, told the same.
    let mut told = notes();
    super::super::validate_told(&json, &mut told).expect("valid");
    assert_eq!(told.notes, one);
    assert!(one.iter().filter(|n| matches!(n, Note::Long(_))).count() >= 6);
    assert!(one.iter().any(|n| matches!(n, Note::Member(2, ..))));
    // Broken past the cut, found broken.
    let mut broken = json.clone().into_bytes();
    let last = broken.len() - 30;
    broken[last] = b'}';
    assert_eq!(split(&broken, at), Err(Invalid));
}

#[test]
fn a_top_level_array_is_cut_when_no_member_is_told() {
    let items: Vec<Value> = (0..80_000)
        .map(|n| json!({"id": n, "t": [n, "u"]}))
        .collect();
    let json = Value::from(items).to_string();
    let at = split_at(&json).expect("cut");
    let agreed = |members: bool| {
        let First::Paused(paused) = first_half(json.as_bytes(), at + 1, members).expect("valid")
        else {
            panic!("paused at the cut");
        };
        let met = second_half(json.as_bytes(), at + 1)
            .expect("valid")
            .expect("kept");
        paused.join(met, members)
    };
    // Cut between two elements, at depth 1: with no member told the
    // halves agree.
    assert_eq!(agreed(false), Some(Vec::new()));
    // Told of members, they would be told of each element's: not cut.
    assert_eq!(agreed(true).map(|notes| notes.len()), None);
    assert_eq!(super::super::validate(&json), Ok(()));
    let mut broken = json.clone().into_bytes();
    broken.pop();
    assert_eq!(
        super::super::validate(std::str::from_utf8(&broken).unwrap()),
        Err(Invalid)
    );
}
