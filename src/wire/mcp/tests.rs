//! Tests of the parent module.

use super::*;

#[test]
fn very_many_content_blocks_are_refused_before_they_are_read() {
    let many = |n: usize| {
        let blocks = vec![r#"{"type":"image"}"#; n].join(",");
        format!(r#"{{"content":[{blocks}]}}"#)
    };
    let at_cap = many(MAX_CONTENT_BLOCKS);
    assert_eq!(
        RawResult::parse(&at_cap).unwrap().blocks.len(),
        MAX_CONTENT_BLOCKS
    );
    match RawResult::parse(&many(MAX_CONTENT_BLOCKS + 1)) {
        Err(ResultError::NotToolResult(why)) => assert_eq!(why, TOO_MANY),
        other => panic!("expected a refusal, got {other:?}"),
    }
}
