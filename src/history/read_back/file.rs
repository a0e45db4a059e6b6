//! The tool's answer: numbered lines of one of the named files, read
//! from `store_dir` (or fetched from a shared store into it).

use std::io::{BufRead, BufReader};

use serde_json::Value;

use super::{DEFAULT_LIMIT, MAX_ANSWER_BYTES, MAX_LIMIT, TOOL_NAME, str_at};
use crate::history::HistoryOffloader;
use crate::store::no_follow;

/// The largest file fetched from a shared store to be read back.
const MAX_READ_BACK_FILE_BYTES: u64 = 64 << 20;
/// Longest line shown whole; longer ones are cut, saying so.
const MAX_LINE_BYTES: usize = 8 << 10;

impl HistoryOffloader {
    /// The answer to one call of the tool with `arguments`, reading only
    /// the files in `named` (those the request names, see
    /// [`named_files`](super::named_files)): numbered lines of the file (of its records, for a
    /// file with an LRO header line), those containing `pattern` when it
    /// is given, from `offset`, at most `limit` and [`MAX_ANSWER_BYTES`],
    /// then how many there are and how to read on. Blocking (file reads);
    /// every problem is an answer that says what to do instead.
    pub fn read_back(&self, arguments: &Value, named: &[String]) -> String {
        let file = str_at(arguments, "file").unwrap_or("").trim();
        let name = file.rsplit(['/', '\\']).next().unwrap_or("");
        if name.is_empty() || !named.iter().any(|n| n == name) {
            return format!(
                "{TOOL_NAME}: no file {file:?} is named in this conversation's history; give \
                 the file exactly as a [history offload] or [history summary] message names it"
            );
        }
        let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
        let offset = number("offset").unwrap_or(0) as usize;
        let limit = number("limit").map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT));
        let pattern = str_at(arguments, "pattern")
            .filter(|p| !p.is_empty())
            .map(str::to_lowercase);
        let path = self.config().store_dir.join(name);
        // Written by another process of a fleet: fetched from the store.
        self.inner.store.fetch(name, MAX_READ_BACK_FILE_BYTES);
        let opened = no_follow(std::fs::OpenOptions::new().read(true)).open(&path);
        let Ok(file) = opened else {
            return format!("{TOOL_NAME}: the file {name} is no longer there (files expire)");
        };
        // Used: the sweep keeps it.
        let _ = file.set_modified(std::time::SystemTime::now());
        let mut page = Page::new(offset, limit);
        for (i, line) in BufReader::new(file).split(b'\n').enumerate() {
            let Ok(line) = line else {
                return format!("{TOOL_NAME}: the file {name} could not be read");
            };
            let line = String::from_utf8_lossy(&line);
            if i == 0 && line.starts_with("{\"type\":\"lro_header\"") {
                page.header = true;
                continue;
            }
            let shown = i + usize::from(!page.header);
            let matches = pattern
                .as_ref()
                .is_none_or(|p| line.to_lowercase().contains(p.as_str()));
            if matches {
                page.push(shown, &line);
            }
        }
        page.answer(name, pattern.is_some())
    }
}

/// One page of a read-back answer, as lines are seen.
struct Page {
    offset: usize,
    limit: usize,
    matched: usize,
    lines: Vec<String>,
    bytes: usize,
    /// The page ended on the byte bound before its limit.
    full: bool,
    header: bool,
}

impl Page {
    fn new(offset: usize, limit: usize) -> Page {
        Page {
            offset,
            limit,
            matched: 0,
            lines: Vec::new(),
            bytes: 0,
            full: false,
            header: false,
        }
    }

    /// A matching line, numbered `number` (from 1, records only).
    fn push(&mut self, number: usize, line: &str) {
        self.matched += 1;
        if self.matched <= self.offset || self.lines.len() >= self.limit || self.full {
            return;
        }
        let mut shown = line.to_owned();
        if shown.len() > MAX_LINE_BYTES {
            let mut cut = MAX_LINE_BYTES;
            while !shown.is_char_boundary(cut) {
                cut -= 1;
            }
            shown.truncate(cut);
            shown.push_str(&format!(" … (line cut: {} bytes in all)", line.len()));
        }
        let shown = format!("{number}: {shown}");
        if self.bytes + shown.len() > MAX_ANSWER_BYTES && !self.lines.is_empty() {
            self.full = true;
            return;
        }
        self.bytes += shown.len() + 1;
        self.lines.push(shown);
    }

    fn answer(self, name: &str, filtered: bool) -> String {
        let what = if filtered { "matching lines" } else { "lines" };
        let unit = if self.header { " (records)" } else { "" };
        if self.lines.is_empty() {
            return format!(
                "{name}: no {what} from offset {} ({} {what}{unit} in all)",
                self.offset, self.matched
            );
        }
        let end = self.offset + self.lines.len();
        let mut out = format!(
            "{name}: {what} {}-{end} of {}{unit}, numbered:\n",
            self.offset + 1,
            self.matched
        );
        out.push_str(&self.lines.join("\n"));
        if end < self.matched {
            out.push_str(&format!(
                "\nMore: call {TOOL_NAME} again with offset={end}."
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn files_are_read_back_in_numbered_pages_of_named_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::history::HistoryConfig::default().store_dir(dir.path());
        let offloader = HistoryOffloader::new(config);
        let text: String = (1..=300)
            .map(|i| format!("line {i}{}\n", if i % 10 == 0 { " ERROR" } else { "" }))
            .collect();
        std::fs::write(dir.path().join("history-tool-a-1.txt"), &text).unwrap();
        std::fs::write(
            dir.path().join("atlatl-a-01J0000000000000000000000.jsonl"),
            "{\"type\":\"lro_header\",\"count\":2}\n{\"a\":1}\n{\"a\":2}\n",
        )
        .unwrap();
        let named = vec![
            "history-tool-a-1.txt".to_owned(),
            "atlatl-a-01J0000000000000000000000.jsonl".to_owned(),
        ];
        let read = |args: Value| offloader.read_back(&args, &named);
        let first = read(json!({"file": format!("{}/history-tool-a-1.txt", dir.path().display())}));
        assert!(
            first.starts_with("history-tool-a-1.txt: lines 1-100 of 300, numbered:\n1: line 1\n"),
            "{first}"
        );
        assert!(
            first.ends_with(
                "100: line 100 ERROR\nMore: call lro_history_read again with offset=100."
            ),
            "{first}"
        );
        let errors =
            read(json!({"file": "history-tool-a-1.txt", "pattern": "error", "offset": 28}));
        assert_eq!(
            errors,
            "history-tool-a-1.txt: matching lines 29-30 of 30, numbered:\n290: line 290 ERROR\n300: line 300 ERROR"
        );
        let records = read(json!({"file": "atlatl-a-01J0000000000000000000000.jsonl", "limit": 1}));
        assert!(records.starts_with("atlatl-a-01J0000000000000000000000.jsonl: lines 1-1 of 2 (records), numbered:\n1: {\"a\":1}\nMore"), "{records}");
        let other = read(json!({"file": "history-checkpoint-x.json"}));
        assert!(
            other.contains("no file") && other.contains("named"),
            "{other}"
        );
        let gone = offloader.read_back(
            &json!({"file": "history-gone.txt"}),
            &["history-gone.txt".into()],
        );
        assert!(gone.contains("no longer there"), "{gone}");
    }

    #[cfg(feature = "object-store")]
    #[test]
    fn files_of_another_process_are_read_back_from_a_shared_store() {
        use std::sync::Arc;
        let memory = Arc::new(object_store::memory::InMemory::new());
        let bucket = Arc::new(crate::store::BucketStore::new(memory, "h").unwrap());
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let process = |i: usize, under: &str| {
            let config = crate::history::HistoryConfig::default().store_dir(dirs[i].path());
            HistoryOffloader::new(config)
                .with_bucket(bucket.clone(), under)
                .unwrap()
        };
        let (a, b, other) = (
            process(0, "owner-a"),
            process(1, "owner-a"),
            process(2, "owner-c"),
        );
        let name = "history-tool-x-1.txt";
        a.inner.store.put(name, b"one\ntwo\n").unwrap();
        let named = vec![name.to_owned()];
        let read = b.read_back(&json!({"file": name}), &named);
        assert!(read.ends_with("1: one\n2: two"), "{read}");
        assert!(dirs[1].path().join(name).is_file(), "kept where b reads");
        let refused = other.read_back(&json!({"file": name}), &named);
        assert!(refused.contains("no longer there"), "{refused}");
        let config = crate::history::HistoryConfig::default().store_dir(dirs[2].path());
        for bad in ["../x", "owner a", "a/./b/.."] {
            let made = HistoryOffloader::new(config.clone()).with_bucket(bucket.clone(), bad);
            assert!(made.is_err(), "{bad}");
        }
    }
}
