//! Fuzzing the engine through the public API:
//! `Offloader::process` on generated tool results (hostile shapes
//! included, see `tests/fuzz/values.rs`), on results with a few edits and
//! on arbitrary bytes, checked against `rebuild_file` / `rebuild_with`.
//!
//! Each case must not panic; an offloaded result must be valid JSON with
//! a descriptor among its text blocks, its file (with the rewritten result
//! where the header leaves kept parts to it) must rebuild the input
//! exactly, and its top-level fields other than `content` and
//! `structuredContent` must be kept.
//!
//! The generators, bounds and JSON model are those of the library's
//! internal fuzz suite (`tests/fuzz/mod.rs`, which says how to run longer:
//! `LRO_FUZZ_CASES=20000 cargo test --release --test fuzz_engine`); each
//! case writes a file, so a quarter of `LRO_FUZZ_CASES` cases per target.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::Deserialize;
use serde_json::value::RawValue;
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::OffloadResponse;
use tower_lro::offload::{
    Offloaded, Offloader, Outcome, RebuildError, ToolCall, rebuild_file, rebuild_with,
};

// Shared with the library's fuzz module (`tests/fuzz/mod.rs`), which uses
// all of them; this test uses part.
#[allow(dead_code)]
#[path = "../fuzz/bounds.rs"]
mod bounds;
#[allow(dead_code)]
#[path = "../fuzz/model.rs"]
mod model;
#[allow(dead_code)]
#[path = "../fuzz/results.rs"]
mod results;
#[allow(dead_code)]
#[path = "../fuzz/values.rs"]
mod values;

use bounds::{config, timed};
use model::{Json, Obj, canon, same_json};
use results::{mutated_result, tool_result};

/// [`same_json`], a text block's text that holds JSON (or JSON lines)
/// compared by the JSON it holds, not its layout.
fn same_json_but_layout(a: &str, b: &str) -> Result<(), TestCaseError> {
    let (Some(ja), Some(jb)) = (Json::read(a), Json::read(b)) else {
        return Err(TestCaseError::fail("not JSON"));
    };
    let (ca, cb) = (texts_as_json(ja).canon(), texts_as_json(jb).canon());
    prop_assert!(
        ca == cb,
        "not equal as JSON, texts read as JSON:\n{:.600}\n{:.600}",
        a,
        b
    );
    Ok(())
}

/// A text read as JSON, or as JSON lines (an array of them), where it is.
fn text_as_json(j: Json) -> Json {
    let Json::Str(text) = &j else { return j };
    let Ok(text) = String::from_utf8(text.clone()) else {
        return j;
    };
    if let Some(parsed) = Json::read(&text) {
        return parsed;
    }
    let lines: Option<Vec<Json>> = text
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .map(Json::read)
        .collect();
    lines.map_or(j, Json::Arr)
}

/// `j` with its member `key` (each occurrence) mapped by `f`.
fn map_member(j: Json, key: &[u8], f: &dyn Fn(Json) -> Json) -> Json {
    match j {
        Json::Obj(members) => Json::Obj(
            members
                .into_iter()
                .map(|(k, v)| if k == key { (k, f(v)) } else { (k, v) })
                .collect(),
        ),
        other => other,
    }
}

/// The result with each block's text (or `resource.text`) read as JSON, or
/// as JSON lines, where it is.
fn texts_as_json(result: Json) -> Json {
    let block = |b: Json| {
        let b = map_member(b, b"text", &text_as_json);
        map_member(b, b"resource", &|r| map_member(r, b"text", &text_as_json))
    };
    map_member(result, b"content", &|c| match c {
        Json::Arr(blocks) => Json::Arr(blocks.into_iter().map(block).collect()),
        other => other,
    })
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// The engine on one result: never panics; when it offloads, the file
/// rebuilds the input and the rewritten result keeps what it must.
fn check_engine(
    dir: &std::path::Path,
    bytes: &[u8],
    threshold: usize,
    offload_errors: bool,
) -> Result<(), TestCaseError> {
    let offloader = Offloader::new(
        OffloadConfig::default()
            .output_dir(dir)
            .threshold_tokens(threshold)
            .offload_errors(offload_errors),
    );
    // A tool known to declare no output schema, so that records in
    // `structuredContent` are offloaded too (the descriptor added to it).
    let mut call = ToolCall::new("fuzz_tool", None);
    call.output_schema = Some(tower_lro::offload::OutputSchema::Undeclared);
    let outcome = offloader.process(&call, bytes);
    let off = match outcome {
        Ok(Outcome::Offloaded(off)) => off,
        Ok(Outcome::Inline(_)) | Err(_) => return Ok(()),
        Ok(Outcome::Truncated(t)) => {
            return Err(TestCaseError::fail(format!(
                "the write failed: {}",
                t.error
            )));
        }
    };
    let input = std::str::from_utf8(bytes);
    prop_assert!(input.is_ok(), "offloaded bytes that are not UTF-8");
    let input = input.unwrap_or_default();
    let rebuilt = check_rebuild(&offloader, &off);
    let _ = std::fs::remove_file(&off.file.path);
    let rebuilt = rebuilt?;
    if same_json(&rebuilt, input).is_err() {
        // A large JSON text laid out irregularly comes back compact.
        same_json_but_layout(&rebuilt, input)?;
    }
    check_rewritten(&off, input)
}

/// The result rebuilt from the file and the rewritten result; the file
/// alone, read by the function and by the offloader, gives the same,
/// unless its header leaves large kept parts to the rewritten result.
fn check_rebuild(offloader: &Offloader, off: &Offloaded) -> Result<String, TestCaseError> {
    let file = std::fs::read_to_string(&off.file.path).unwrap_or_default();
    let alone = rebuild_file(&off.file.path);
    let checked = offloader.rebuild_file(&off.file.path);
    let rebuilt = rebuild_with(&file, &off.result);
    prop_assert!(rebuilt.is_ok(), "rebuild failed: {:?}", rebuilt.err());
    let rebuilt = rebuilt.unwrap_or_default();
    match (alone, checked) {
        (Ok(alone), Ok(checked)) => {
            prop_assert_eq!(&alone, &rebuilt);
            prop_assert_eq!(&checked, &rebuilt);
        }
        (Err(RebuildError::NeedsRewrittenResult), Err(RebuildError::NeedsRewrittenResult)) => {}
        (a, c) => prop_assert!(
            false,
            "rebuild from the file: {:?} / {:?}",
            a.err(),
            c.err()
        ),
    }
    Ok(rebuilt)
}

/// The rewritten result, read as a client reads it: JSON with a `content`
/// array, one of whose text blocks is the descriptor of the file; the
/// input's top-level fields other than `content` and `structuredContent`
/// kept.
fn check_rewritten(off: &Offloaded, input: &str) -> Result<(), TestCaseError> {
    // Read without `Value`: a kept field may nest past its recursion limit.
    #[derive(Deserialize)]
    struct Rewritten<'a> {
        #[serde(borrow)]
        content: Vec<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct TextBlock {
        text: String,
    }
    prop_assert!(canon(&off.result).is_some(), "rewritten result not JSON");
    let rewritten = serde_json::from_str::<Rewritten<'_>>(&off.result);
    prop_assert!(rewritten.is_ok(), "rewritten result: {:?}", rewritten.err());
    let content = rewritten.map(|r| r.content).unwrap_or_default();
    let descriptor = content
        .iter()
        .filter_map(|b| serde_json::from_str::<TextBlock>(b.get()).ok())
        .find_map(|b| serde_json::from_str::<OffloadResponse>(&b.text).ok());
    let Some(d) = descriptor else {
        return Err(TestCaseError::fail(format!(
            "no descriptor: {:.300}",
            off.result
        )));
    };
    prop_assert!(d.offloaded);
    prop_assert_eq!(d.jq_recipes.len(), 10);
    prop_assert_eq!(d.file_path, off.file.path.to_string_lossy());
    let (Some(before), Some(after)) = (Obj::read(input), Obj::read(&off.result)) else {
        return Err(TestCaseError::fail("not a JSON object"));
    };
    for (k, _) in &before.0 {
        if k == b"content" || k == b"structuredContent" {
            continue;
        }
        let kept = after.get(k).and_then(|v| canon(v.get()));
        prop_assert_eq!(
            before.get(k).and_then(|v| canon(v.get())),
            kept,
            "top-level field {:?} kept",
            String::from_utf8_lossy(k)
        );
    }
    Ok(())
}

/// A shared output directory for the engine's files.
fn out_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

proptest! {
    // The engine writes a file per case: a quarter of the cases.
    #![proptest_config(config(4))]

    #[test]
    fn fuzz_engine_results(text in tool_result(), threshold in 1usize..64, errors in any::<bool>()) {
        let dir = out_dir();
        timed(|| check_engine(dir.path(), text.as_bytes(), threshold, errors))?;
    }

    #[test]
    fn fuzz_engine_mutated(bytes in mutated_result(), threshold in 1usize..64, errors in any::<bool>()) {
        let dir = out_dir();
        timed(|| check_engine(dir.path(), &bytes, threshold, errors))?;
    }

    #[test]
    fn fuzz_engine_arbitrary(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        let dir = out_dir();
        timed(|| check_engine(dir.path(), &bytes, 1, true))?;
    }
}
