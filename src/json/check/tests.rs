//! Tests of the parent module.

use super::*;
use proptest::prelude::*;

/// What `serde_json` says, skipping a value from a reader.
fn serde_says(input: &[u8]) -> bool {
    let mut de = serde_json::Deserializer::from_reader(input);
    serde::Deserialize::deserialize(&mut de)
        .map(|_: serde::de::IgnoredAny| ())
        .and_then(|()| de.end())
        .is_ok()
}

/// What the check says, fed in pieces of `piece` bytes.
fn check_says(input: &[u8], piece: usize) -> bool {
    let mut check = Check::default();
    input
        .chunks(piece.max(1))
        .try_for_each(|c| check.feed(c))
        .and_then(|()| check.finish())
        .is_ok()
}

#[test]
fn agrees_with_serde_on_the_edges_of_the_grammar() {
    let cases = crate::json::GRAMMAR_EDGES;
    for case in cases {
        for piece in [1, 2, 3, 7, 8, 9, 1024] {
            assert_eq!(
                check_says(case.as_bytes(), piece),
                serde_says(case.as_bytes()),
                "{case:?} in pieces of {piece}"
            );
        }
    }
    // Invalid UTF-8 in a string: neither looks.
    let bytes = b"[\"\xff\xfe\"]";
    assert!(check_says(bytes, 1) && serde_says(bytes));
}

#[test]
fn nesting_is_a_bit_per_level_and_capped() {
    let deep = |n: usize| format!("{}0{}", "[{\"a\":".repeat(n), "}]".repeat(n));
    assert!(check_says(deep(1000).as_bytes(), 4096));
    let mut check = Check::default();
    let opens = "[".repeat(MAX_DEPTH);
    assert!(check.feed(opens.as_bytes()).is_ok());
    assert_eq!(check.stack.len(), MAX_DEPTH / 64);
    assert_eq!(
        check.feed(b"["),
        Err(Invalid {
            at: MAX_DEPTH as u64
        })
    );
}

#[test]
fn plain_runs_stop_at_the_first_special_byte() {
    for (text, run) in [
        ("abcdefgh", 8),
        ("abcdefghij\"", 10),
        ("abc\\defghijk", 3),
        ("\u{1}", 0),
        ("abcdefg\u{1f}", 7),
        ("ab\"\\\u{0}", 2),
        ("ééééé\"", 10),
        ("\u{7f}\u{80}\u{20}!", 5),
    ] {
        assert_eq!(plain_run(text.as_bytes()), run, "{text:?}");
        let to_quote = text.find(['"', '\\']).unwrap_or(text.len());
        assert_eq!(to_quote_or_backslash(text.as_bytes()), to_quote, "{text:?}");
    }
}

/// JSON-like text: valid values, then a few bytes changed.
fn json_like() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        ".{0,20}".prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    let mutation = prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3);
    (value, any::<bool>(), mutation).prop_map(|(v, pretty, mutation)| {
        let mut bytes = match pretty {
            true => serde_json::to_vec_pretty(&v).unwrap_or_default(),
            false => serde_json::to_vec(&v).unwrap_or_default(),
        };
        for (at, byte) in mutation {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                let pick = b"\"\\{}[],:0-+.eE tfnu\n\x01aZ";
                bytes[i] = pick[usize::from(byte) % pick.len()];
            }
        }
        bytes
    })
}

/// Long strings dense with escapes (as pretty JSON in a text block),
/// a few bytes then changed: across the 64-byte blocks.
fn long_strings() -> impl Strategy<Value = Vec<u8>> {
    let mutation = prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3);
    (super::super::escape_heavy_texts(), mutation).prop_map(|(texts, mutation)| {
        let mut bytes = serde_json::to_vec(&texts).unwrap_or_default();
        for (at, byte) in mutation {
            let i = at.index(bytes.len());
            let pick = b"\"\\ntu0aF\x01\x1f/";
            bytes[i] = pick[usize::from(byte) % pick.len()];
        }
        bytes
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn agrees_with_serde_on_long_strings(input in long_strings(), piece in 1usize..200) {
        prop_assert_eq!(check_says(&input, piece), serde_says(&input));
        prop_assert_eq!(check_says(&input, input.len().max(1)), serde_says(&input));
    }

    #[test]
    fn agrees_with_serde_in_any_pieces(input in json_like(), piece in 1usize..40) {
        prop_assert_eq!(check_says(&input, piece), serde_says(&input));
    }
}
