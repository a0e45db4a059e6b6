//! Tests of the spilled walk: children, spans and minified bytes, read in
//! pieces of every size.

use std::io;

use super::*;

#[derive(Default)]
struct Collect {
    keys: Vec<String>,
    spans: Vec<(u64, u64)>,
    bytes: Vec<u8>,
    ends: usize,
}

impl Visit for Collect {
    fn key(&mut self, raw: &[u8]) {
        self.keys.push(String::from_utf8_lossy(raw).into_owned());
    }
    fn start(&mut self, at: u64) -> Result<(), NotStreamable> {
        self.spans.push((at, 0));
        Ok(())
    }
    fn wants_bytes(&self) -> bool {
        true
    }
    fn bytes(&mut self, b: &[u8]) -> Result<(), NotStreamable> {
        self.bytes.extend_from_slice(b);
        Ok(())
    }
    fn end(&mut self, at: u64) -> Result<(), NotStreamable> {
        self.spans.last_mut().unwrap().1 = at;
        self.bytes.push(b'\n');
        self.ends += 1;
        Ok(())
    }
}

/// [`Collect`] that does not want the bytes: strings are stepped over.
#[derive(Default)]
struct Spans(Collect);

impl Visit for Spans {
    fn key(&mut self, raw: &[u8]) {
        self.0.key(raw);
    }
    fn start(&mut self, at: u64) -> Result<(), NotStreamable> {
        self.0.start(at)
    }
    fn end(&mut self, at: u64) -> Result<(), NotStreamable> {
        self.0.end(at)
    }
}

/// A reader that hands out `piece` bytes at a time.
struct Pieces<'a>(&'a [u8], usize);

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.1.min(buf.len()).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn strings_stepped_over_end_where_strings_read_end() {
    // Runs of backslashes of every length before quotes, at every
    // position of the 64-byte blocks and of the reads.
    let mut text = String::new();
    for i in 0..300 {
        text.push_str(&"\\\\".repeat(i % 5));
        text.push_str(["\\\"", "x", "{", "]", ","][i % 5]);
        text.push_str(&"y".repeat(i % 67));
    }
    let src = format!(r#"{{"a": {{"t": "{text}", "u": ["{text}", 1]}}, "b": "{text}", "c": 2}}"#);
    assert!(serde_json::from_str::<serde_json::Value>(&src).is_ok());
    let mut read = Collect::default();
    walk(src.as_bytes(), &mut read).unwrap();
    for piece in [1, 2, 3, 63, 64, 65, 1000, CHUNK] {
        let mut stepped = Spans::default();
        walk(Pieces(src.as_bytes(), piece), &mut stepped).unwrap();
        assert_eq!(stepped.0.spans, read.spans, "pieces of {piece}");
        assert_eq!(stepped.0.keys, ["a", "b", "c"]);
    }
}

#[test]
fn nested_children_come_minified_in_any_pieces() {
    let child = |i: usize| {
        serde_json::json!({
            "id": i, "tags": ["a", "b\\\"]", [[], {}]], "n": {"x": [1.5, -2e3, null, true]},
            "s": "{[,]}", "e": [], "o": {"deep": [[[{"k": [i]}]]]}
        })
    };
    let children: Vec<_> = (0..40).map(child).collect();
    let minified: String = children.iter().map(|c| format!("{c}\n")).collect();
    let pretty = serde_json::to_string_pretty(&children).unwrap();
    let compact = serde_json::to_string(&children).unwrap();
    for (src, ws) in [(pretty.as_str(), true), (compact.as_str(), false)] {
        for piece in [1, 2, 7, 64, 65, 4096, CHUNK] {
            let mut c = Collect::default();
            let outer = walk(Pieces(src.as_bytes(), piece), &mut c).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&c.bytes),
                minified,
                "pieces of {piece}"
            );
            assert_eq!(outer.inner_ws > 0, ws);
            for ((start, end), want) in c.spans.iter().zip(&children) {
                let raw = &src[*start as usize..*end as usize];
                assert_eq!(
                    &serde_json::from_str::<serde_json::Value>(raw).unwrap(),
                    want
                );
                assert!(!raw.ends_with(char::is_whitespace), "{raw:?}");
            }
            let mut stepped = Spans::default();
            walk(Pieces(src.as_bytes(), piece), &mut stepped).unwrap();
            assert_eq!(stepped.0.spans, c.spans);
        }
    }
}

#[test]
fn children_of_objects_and_arrays() {
    let src = br#" { "a" : [1, {"x": "y,}"}] , "b\"c": "s" , "n":null } "#;
    let mut c = Collect::default();
    let outer = walk(&src[..], &mut c).unwrap();
    assert_eq!(c.keys, ["a", "b\\\"c", "n"]);
    assert_eq!(outer.lead, 1);
    assert_eq!(outer.trail, 1);
    assert_eq!(
        &src[c.spans[0].0 as usize..c.spans[0].1 as usize],
        br#"[1, {"x": "y,}"}]"#
    );
    assert_eq!(
        String::from_utf8(c.bytes).unwrap(),
        "[1,{\"x\":\"y,}\"}]\n\"s\"\nnull\n"
    );
    let mut c = Collect::default();
    walk(&b"[]"[..], &mut c).unwrap();
    assert_eq!(c.ends, 0);
    let mut c = Collect::default();
    let outer = walk(&b"[1,\n 22 ,\"\\\\\"]"[..], &mut c).unwrap();
    assert_eq!(String::from_utf8(c.bytes).unwrap(), "1\n22\n\"\\\\\"\n");
    assert!(outer.inner_ws > 0);
    assert!(walk(&b"[1] x"[..], &mut Collect::default()).is_err());
    assert!(walk(&b"[1"[..], &mut Collect::default()).is_err());
    assert!(walk(&b"7"[..], &mut Collect::default()).is_err());
}
