//! The completeness contract: every descriptor and header says how many
//! record lines the file holds, how many bytes they are and their SHA-256,
//! and those figures are the file's (recomputed here from the file, and by
//! `sha256sum`/`wc` where they are installed).

use crate::shapes;

use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::OffloadHeader;
use tower_lro::offload::{Offloader, Outcome};

pub(crate) use crate::common::data_figures;

#[test]
fn every_shape_says_how_to_tell_the_file_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    for case in shapes::all() {
        let body = case.result.to_string();
        let Outcome::Offloaded(off) = o.process(&case.call, body.as_bytes()).unwrap() else {
            panic!("{}: expected an offload", case.name);
        };
        let file = std::fs::read(&off.file.path).unwrap();
        let (lines, bytes, sha) = data_figures(&file);
        let header: OffloadHeader =
            serde_json::from_slice(&file[..file.iter().position(|&b| b == b'\n').unwrap()])
                .unwrap();
        let s = &off.response.summary;
        assert_eq!((s.count, header.count), (lines, lines), "{}", case.name);
        assert_eq!(s.data_bytes, Some(bytes), "{}", case.name);
        assert_eq!(header.data_bytes, Some(bytes), "{}", case.name);
        assert_eq!(s.data_sha256.as_deref(), Some(&*sha), "{}", case.name);
        assert_eq!(header.data_sha256.as_deref(), Some(&*sha), "{}", case.name);
        assert_eq!(off.file.header.data_sha256.as_deref(), Some(&*sha));
        // The descriptor the client reads carries it too.
        let sent: serde_json::Value = serde_json::from_str(&off.result).unwrap();
        let text = sent["content"][0]["text"].as_str().unwrap();
        let descriptor: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(descriptor["summary"]["data_sha256"], sha.as_str());
        assert_eq!(descriptor["summary"]["data_bytes"], bytes);
        // The commands the rustdoc names agree, where they exist.
        let shell = format!(
            "tail -n +2 '{}' | sha256sum",
            off.file.path.to_string_lossy()
        );
        if let Ok(out) = std::process::Command::new("sh")
            .arg("-c")
            .arg(&shell)
            .output()
            && out.status.success()
        {
            let printed = String::from_utf8_lossy(&out.stdout);
            assert!(printed.starts_with(&sha), "{}: {printed}", case.name);
        }
    }
}

/// A text copy of `structuredContent` large enough to be told beside taking
/// the records: their statistics and digest are begun then, while the copy
/// is still being told, and finished after the split with the records of
/// another text when there is one. The file, its contract and everything
/// the statistics decide (summary, line schema, recipes) are those of the
/// same records taken at once: the same result without the copy.
#[test]
fn records_read_in_advance_are_described_as_records_read_at_once() {
    use serde_json::json;
    use tower_lro::descriptor::Detail;
    use tower_lro::fixtures::MemoryGenerator;
    use tower_lro::offload::ToolCall;
    let dir = tempfile::tempdir().unwrap();
    let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    let call = ToolCall::new("recall_memories", None);
    // 300 memories: about 300 KB (one thread folds); 3000: over 1 MiB (the
    // fold is shared). The other text adds 400 records after them.
    for (n, other) in [(300, false), (300, true), (3000, true)] {
        let memories = MemoryGenerator::new(11).memories(n, Detail::Full);
        let structured = json!({"count": n, "memories": memories});
        let copy = serde_json::to_string_pretty(&structured).unwrap();
        assert!(copy.len() > 192 << 10);
        let mut blocks = Vec::new();
        if other {
            let rows: Vec<_> = (0..400)
                .map(|i| json!({"row": i, "level": if i % 2 == 0 { "info" } else { "warn" }}))
                .collect();
            blocks.push(json!({"type": "text", "text": serde_json::to_string(&rows).unwrap()}));
        }
        let offload = |blocks: Vec<serde_json::Value>| {
            let result = json!({"content": blocks, "structuredContent": structured}).to_string();
            match o.process(&call, result.as_bytes()).unwrap() {
                // The tokens of the copy are counted beside the records
                // taken: as many as counted on one thread.
                Outcome::Offloaded(off) => {
                    let tokens = o.estimate(result.as_bytes()).unwrap();
                    assert_eq!(off.response.summary.estimated_tokens, tokens);
                    off
                }
                _ => panic!("{n} {other}: expected an offload"),
            }
        };
        let at_once = offload(blocks.clone());
        blocks.insert(0, json!({"type": "text", "text": copy}));
        let ahead = offload(blocks);
        let records = n + if other { 400 } else { 0 };
        let data = |off: &tower_lro::offload::Offloaded| {
            let file = std::fs::read(&off.file.path).unwrap();
            let at = file.iter().position(|&b| b == b'\n').unwrap() + 1;
            (data_figures(&file), file[at..].to_vec())
        };
        let ((lines, bytes, sha), body) = data(&ahead);
        assert_eq!(lines, records, "{n} {other}");
        assert_eq!(data(&at_once), ((lines, bytes, sha.clone()), body));
        let (a, b) = (&ahead.response, &at_once.response);
        assert_eq!(a.summary.count, records);
        assert_eq!(a.summary.data_sha256.as_deref(), Some(&*sha));
        assert_eq!(a.summary.data_bytes, Some(bytes));
        assert_eq!(a.summary.top_namespaces, b.summary.top_namespaces);
        assert_eq!(a.summary.detail, b.summary.detail);
        assert_eq!(a.summary.score_field, b.summary.score_field);
        assert_eq!(a.summary.score_range, b.summary.score_range);
        assert_eq!(a.line_schema, b.line_schema, "{n} {other}");
        let jq = |r: &tower_lro::descriptor::OffloadResponse| {
            r.jq_recipes
                .iter()
                .map(|j| j.command.replace(&r.file_path, "FILE"))
                .collect::<Vec<_>>()
        };
        assert_eq!(jq(a), jq(b), "{n} {other}");
    }
}

/// The one switch of the engine's parallel work (`parallel = false`): a
/// result over `PARALLEL_FROM` (3,000 full memories, ~7 MB) gives the same
/// file and the same descriptor (file names and times aside) with its two
/// walks on one thread as on two.
#[test]
fn parallel_work_off_gives_the_same_file_and_descriptor() {
    use serde_json::json;
    use tower_lro::descriptor::Detail;
    use tower_lro::fixtures::MemoryGenerator;
    use tower_lro::offload::ToolCall;
    let memories = MemoryGenerator::new(5).memories(3000, Detail::Full);
    let result = json!({"content": [], "structuredContent": {"memories": memories}}).to_string();
    assert!(result.len() > 1 << 20);
    let call = ToolCall::new("recall_memories", None);
    let offload = |parallel: bool| {
        let dir = tempfile::tempdir().unwrap();
        let config = OffloadConfig::default()
            .output_dir(dir.path())
            .parallel(parallel);
        let Outcome::Offloaded(off) = Offloader::new(config)
            .process(&call, result.as_bytes())
            .unwrap()
        else {
            panic!("expected an offload");
        };
        let file = std::fs::read(&off.file.path).unwrap();
        let at = file.iter().position(|&b| b == b'\n').unwrap() + 1;
        let mut descriptor = serde_json::to_value(&off.response).unwrap();
        let path = off.response.file_path.clone();
        let text = descriptor.to_string().replace(&path, "FILE");
        descriptor = serde_json::from_str(&text).unwrap();
        for volatile in ["expires_at", "created_at"] {
            descriptor.as_object_mut().unwrap().remove(volatile);
        }
        (file[at..].to_vec(), descriptor)
    };
    let (on, off) = (offload(true), offload(false));
    assert_eq!(on.0, off.0, "the records");
    assert_eq!(on.1, off.1, "the descriptor");
}
