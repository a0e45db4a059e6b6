//! The way back out: a [`RawResult`] written as compact JSON, its blocks
//! replaced, kept or rewritten, every value the server wrote as it came.

use super::*;

impl RawResult<'_> {
    /// Writes the result as compact JSON with the given blocks and, when
    /// `structured` is `Some`, that raw text in place of `structuredContent`.
    pub(crate) fn write(&self, blocks: &[BlockOut<'_>], structured: Option<&str>) -> String {
        self.write_over(blocks, structured, &[])
    }

    /// [`write`](Self::write), with the top-level fields named in `fields`
    /// given as raw JSON (`structuredContent` included, when `structured`
    /// is `None`).
    pub(crate) fn write_over(
        &self,
        blocks: &[BlockOut<'_>],
        structured: Option<&str>,
        fields: &[(&str, &str)],
    ) -> String {
        let mut out = String::with_capacity(256);
        out.push('{');
        for (n, (key, value)) in self.top.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            push_json_string(&mut out, key);
            out.push(':');
            match key.as_str() {
                "content" => {
                    out.push('[');
                    for (m, block) in blocks.iter().enumerate() {
                        if m > 0 {
                            out.push(',');
                        }
                        self.write_block(&mut out, block);
                    }
                    out.push(']');
                }
                "structuredContent" if structured.is_some() => {
                    minify_into(structured.unwrap_or("null"), &mut out)
                }
                k => match fields.iter().find(|(f, _)| *f == k) {
                    Some((_, raw)) => minify_into(raw, &mut out),
                    None => minify_into(value.get(), &mut out),
                },
            }
        }
        out.push('}');
        out
    }

    /// Content block `i` as minified JSON, unchanged.
    pub(crate) fn block_json(&self, i: usize) -> String {
        self.block_json_as(&BlockOut::Original(i))
    }

    /// One block as [`write`](Self::write) writes it, minified JSON.
    pub(crate) fn block_json_as(&self, block: &BlockOut<'_>) -> String {
        let mut out = String::new();
        self.write_block(&mut out, block);
        out
    }

    /// Bytes of content block `i` as the server wrote it (about).
    pub(crate) fn block_bytes(&self, i: usize) -> usize {
        self.blocks.get(i).map_or(0, |b| {
            b.fields
                .iter()
                .map(|(k, v)| k.len() + v.get().len() + 4)
                .sum()
        })
    }

    fn write_block(&self, out: &mut String, block: &BlockOut<'_>) {
        let (index, text) = match *block {
            BlockOut::NewText(text) => return write_text_block(out, text, None),
            BlockOut::TextLike(text, like) => {
                let annotations = self
                    .blocks
                    .get(like)
                    .and_then(|b| b.fields.get("annotations"));
                return write_text_block(out, text, annotations.copied());
            }
            BlockOut::Json(json) => return out.push_str(json),
            BlockOut::Original(i) => (i, None),
            BlockOut::WithText(i, text) => (i, Some(text)),
        };
        let Some(original) = self.blocks.get(index) else {
            out.push_str("null");
            return;
        };
        // Where the text goes: `text`, or `resource.text`.
        let text_key = if original.in_resource {
            "resource"
        } else {
            "text"
        };
        out.push('{');
        for (n, (key, value)) in original.fields.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            push_json_string(out, key);
            out.push(':');
            match text {
                Some(t) if key == text_key && original.in_resource => {
                    write_resource(out, *value, t)
                }
                Some(Some(t)) if key == text_key => push_json_string(out, t),
                Some(None) if key == text_key => out.push_str("null"),
                _ => minify_into(value.get(), out),
            }
        }
        out.push('}');
    }
}

/// A text block, with `annotations` when given.
fn write_text_block(out: &mut String, text: &str, annotations: Option<Raw<'_>>) {
    out.push_str("{\"type\":\"text\",\"text\":");
    push_json_string(out, text);
    if let Some(a) = annotations {
        out.push_str(",\"annotations\":");
        minify_into(a.get(), out);
    }
    out.push('}');
}

/// Writes `resource` (a raw object) with its `text` replaced (`None`: `null`).
fn write_resource(out: &mut String, resource: Raw<'_>, text: Option<&str>) {
    let Ok(fields) = serde_json::from_str::<RawObject<'_>>(resource.get()) else {
        minify_into(resource.get(), out);
        return;
    };
    out.push('{');
    for (n, (key, value)) in fields.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        push_json_string(out, key);
        out.push(':');
        match (key.as_str(), text) {
            ("text", Some(t)) => push_json_string(out, t),
            ("text", None) => out.push_str("null"),
            _ => minify_into(value.get(), out),
        }
    }
    out.push('}');
}
