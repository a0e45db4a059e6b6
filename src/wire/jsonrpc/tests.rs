use super::*;
use proptest::prelude::*;

const NAMES: [&str; 3] = ["id", "method", "result"];
/// `result`: the object whose members are placed.
const WITHIN: usize = 2;

/// The members as text, or the error's message.
fn text(
    found: Result<[Option<Raw<'_>>; 3], serde_json::Error>,
) -> Result<[Option<&str>; 3], String> {
    found
        .map(|f| f.map(|raw| raw.map(Raw::get)))
        .map_err(|e| e.to_string())
}

/// Asserts the validator's reading is serde's, when it reads `json` at all.
fn agree(json: &str) {
    let serde = text(serde_members(json, NAMES));
    let within = validated_members(json, NAMES, Some(WITHIN));
    let validated = within.as_ref().map(|(f, _)| *f);
    if let Some((found, Some(ranges))) = &within {
        // The ranges put the object back together, member by member.
        let object = found[WITHIN].expect("an object").get();
        let members: Vec<String> = ranges
            .members
            .iter()
            .map(|(k, v)| format!("{}:{}", &object[k.clone()], &object[v.clone()]))
            .collect();
        let rebuilt = format!("{{{}}}", members.join(","));
        // Each long string is one string literal of the object, in order.
        let mut after = 0;
        for r in &ranges.long_strings {
            assert!(
                after <= r.start && r.len() >= crate::json::LONG_STRING,
                "{json:?}"
            );
            assert!(serde_json::from_str::<String>(&object[r.clone()]).is_ok());
            after = r.end;
        }
        if let Ok(value) = serde_json::from_str::<Value>(object) {
            assert_eq!(
                serde_json::from_str::<Value>(&rebuilt).ok(),
                Some(value),
                "{json:?}"
            );
        }
    }
    if let Ok(found) = &serde {
        assert_eq!(
            validated.map(|f| f.map(|raw| raw.map(Raw::get))),
            Some(*found),
            "{json:?}"
        );
    }
    if validated.is_some() {
        assert!(serde.is_ok(), "{json:?}: {serde:?}");
    }
    assert_eq!(text(members(json, NAMES)), serde, "{json:?}");
}

#[test]
fn members_as_serde_reads_them() {
    for json in [
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        r#" { "id" : "x" , "result" : [1, {"id": 2}] } "#,
        r#"{"id":1,"result":null}"#,
        r#"{"id":1,"result":null,"result":2}"#,
        r#"{"id":1,"result":{},"result":{}}"#,
        r#"{"i\u0064":1,"\ud800":2,"re\u0073ult":"s"}"#,
        r#"{"id":1,"re\u0073ult":2,"result":3}"#,
        "{\"id\":1,\"a\nb\":2}",
        r#"{"id":1,"\u0001":2}"#,
        r#"{"id":1,"result":{"a":"\x"}}"#,
        r#"{"id":1,"result":1}x"#,
        r#"[1,"m",{}]"#,
        r#""id""#,
        "",
        "{}",
        r#"{"id":01}"#,
    ] {
        agree(json);
    }
    let dup = r#"{"jsonrpc":"2.0","id":9,"result":{},"result":{"content":[1]}}"#;
    let err = members(dup, NAMES).err().map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.starts_with("duplicate field `result`")));
}

#[test]
fn the_long_strings_of_the_object_within_are_reported() {
    use crate::json::LONG_STRING;
    // `n` bytes with its quotes, escapes in it.
    let string = |n: usize| format!("\"{}\\n\"", "a".repeat(n - 4));
    let (outside, text, deep, just, under) = (
        string(LONG_STRING * 2),
        string(LONG_STRING + 7),
        string(LONG_STRING * 3),
        string(LONG_STRING),
        string(LONG_STRING - 1),
    );
    let result = format!(
        r#"{{"content":[{{"type":"text","text":{text}}}],"short":"ab","s":{{"t":[{deep}]}},"j":{just},"u":{under},"k":[{under}]}}"#
    );
    let json = format!(r#"{{"jsonrpc":"2.0","x":{outside},"id":1,"result":{result}}}"#);
    agree(&json);
    let (found, ranges) = validated_members(&json, NAMES, Some(WITHIN)).expect("read");
    let object = found[WITHIN].expect("result").get();
    assert_eq!(object, result);
    let reported: Vec<&str> = ranges
        .expect("placed")
        .long_strings
        .iter()
        .map(|r| &object[r.clone()])
        .collect();
    assert_eq!(reported, [&text, &deep, &just]);
}

/// Objects with the names read, some escaped or repeated, and other keys.
fn objects() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "id", "method", "result", "i\\u0064", "jsonrpc", "\\ud800", "x\\n", "res",
    ]);
    let value = prop::sample::select(vec![
        "1",
        "null",
        "\"s\\\"\"",
        "[1,{\"id\":2}]",
        "{\"result\":{}}",
        "-0.5e3",
        "true",
        long_value(),
    ]);
    let members = prop::collection::vec((key, value, " ?"), 0..5);
    (
        members,
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..2),
    )
        .prop_map(|(members, edits)| {
            let body: Vec<String> = members
                .iter()
                .map(|(k, v, ws)| format!("{ws}\"{k}\"{ws}:{ws}{v}"))
                .collect();
            let mut bytes = format!("{{{}}}", body.join(",")).into_bytes();
            for (at, byte) in edits {
                let i = at.index(bytes.len());
                bytes[i] = b"\"\\{}[],:0 \n\x01u"[usize::from(byte) % 13];
            }
            String::from_utf8(bytes).unwrap_or_default()
        })
}

/// A value holding strings one each side of
/// [`LONG_STRING`](crate::json::LONG_STRING) bytes, escapes in them.
fn long_value() -> &'static str {
    let string = |n: usize| format!("\"{}\\\"\"", "é".repeat((n - 4) / 2));
    let (over, under) = (string(20_000), string(16_000));
    Box::leak(
        format!("{{\"content\":[{{\"text\":{over}}}],\"x\":[{under},{over}]}}").into_boxed_str(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn members_agree_with_serde(json in objects()) {
        agree(&json);
    }
}

/// Best of 15 rounds of `runs` calls of `f`, in MB/s of `input`.
fn mb_per_s(input: &str, runs: u32, f: impl Fn(&str) -> bool) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = std::time::Instant::now();
        for _ in 0..runs {
            assert!(f(std::hint::black_box(input)));
        }
        best = best.min(t.elapsed().as_secs_f64() / f64::from(runs));
    }
    input.len() as f64 / best / 1e6
}

#[test]
#[ignore = "a measure: cargo test --release --lib members_speed -- --ignored --nocapture"]
fn members_speed() {
    let memories =
        crate::fixtures::MemoryGenerator::new(2026).memories(4200, crate::descriptor::Detail::Full);
    let result = crate::fixtures::memory_tool_result(&memories);
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
    let small = r#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"Stored memory mem_00017 in namespace \"work\".\nTags: a, b"}],"structuredContent":{"id":"mem_00017","tags":["a","b"],"score":0.875},"isError":false}}"#;
    for (name, input, runs) in [("body", body.as_str(), 1), ("small", small, 10_000)] {
        let serde = mb_per_s(input, runs, |j| serde_members(j, NAMES).is_ok());
        let ours = mb_per_s(input, runs, |j| members(j, NAMES).is_ok());
        println!(
            "{name:>6} {} B: members by serde {serde:>5.0} MB/s, by the validator {ours:>5.0}",
            input.len()
        );
    }
}
