//! The MCP result parser of `wire::mcp`: `RawResult::parse` on generated
//! results, on results with a few edits, and on arbitrary bytes; what it
//! accepts it writes back equal as JSON.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::bounds::{config, timed};
use super::model::{canon, same_json};
use super::results::{mutated_result, tool_result};
use crate::wire::mcp::{BlockOut, RawResult};

/// `RawResult::parse` never panics; what it accepts it writes back equal.
fn check_parse(text: &str) -> Result<(), TestCaseError> {
    let Ok(parsed) = RawResult::parse(text) else {
        return Ok(());
    };
    let _ = parsed.structured();
    let blocks: Vec<BlockOut<'_>> = (0..parsed.blocks.len()).map(BlockOut::Original).collect();
    let written = parsed.write(&blocks, None);
    same_json(&written, text)?;
    for (i, b) in parsed.blocks.iter().enumerate() {
        if let Some(t) = &b.text {
            let again = parsed.write(&[BlockOut::WithText(i, Some(t))], None);
            prop_assert!(canon(&again).is_some());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(1))]

    #[test]
    fn fuzz_parse_results(text in tool_result()) {
        timed(|| check_parse(&text))?;
    }

    #[test]
    fn fuzz_parse_mutated(bytes in mutated_result()) {
        timed(|| check_parse(&String::from_utf8_lossy(&bytes)))?;
    }

    #[test]
    fn fuzz_parse_arbitrary(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        timed(|| check_parse(&String::from_utf8_lossy(&bytes)))?;
    }
}
