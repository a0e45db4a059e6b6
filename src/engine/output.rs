//! Writing an offload: the header, the file, the descriptor and the
//! rewritten result.

use chrono::{DateTime, Utc};

use super::describe::{self, Facts};
use super::descriptor::{Detail, HEADER_TYPE, OffloadHeader, OffloadResponse, OffloadedResult};
use super::events::PassReason;
use super::offloader::Offloader;
use super::outcome::{Offloaded, Outcome};
use super::rebuild::expiry;
use super::recipes::{self, Recipe};
use super::records::{self, Extraction, Rebuild, RecordKind, Records, RecordsView};
use super::stats::RecordStats;
use crate::config::EffectivePolicy;
use crate::json::push_json_string;
use crate::store;
use crate::wire::call::ToolCall;
use crate::wire::mcp::{BlockOut, RawObject, RawResult, resource_link_block};

/// The spec's operation name for a tool: `recall`, `list`, `inject`,
/// `search`, else the tool name reduced to `[a-z0-9_]` (at most 64 bytes), so
/// a tool name can never steer a file path.
pub fn operation_name(tool: &str) -> String {
    match tool {
        "recall_memories" => return "recall".into(),
        "list_memories" => return "list".into(),
        "inject_context" => return "inject".into(),
        _ => {}
    }
    let lower = tool.to_ascii_lowercase();
    if lower == "search" || lower.starts_with("search_") || lower.ends_with("_search") {
        return "search".into();
    }
    let mut op: String = lower
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if op.trim_matches('_').is_empty() {
        op = "tool".into();
    }
    op
}

impl Offloader {
    /// Writes the records to a file and builds the rewritten result; on a
    /// write failure, the spec's truncation fallback.
    ///
    /// Memory: the records are the file's body already (the texts they came
    /// from left `parsed` during the extraction), and the header goes in
    /// front of the records in their own buffer (see [`File`]), so nothing
    /// here copies the records.
    pub(super) fn offload(
        &self,
        call: &ToolCall,
        parsed: &RawResult<'_>,
        extraction: Extraction,
        estimated_tokens: usize,
        policy: &EffectivePolicy,
    ) -> Outcome {
        let Extraction {
            records,
            kind,
            rebuild,
            kept_blocks,
            structured_slim,
            structured_copy_key,
        } = extraction;
        let (stats, detail, recipes) = plan(call, &records, kind);
        let id = self.next_file_id();
        let mut header = self.header(call, &id, records.len(), estimated_tokens, detail, rebuild);
        header.recipes = recipes.iter().map(|r| r.program.clone()).collect();
        let file_name = store::file_name(&header.operation, id);
        let file = File::new(records, &header);
        // Described before the write: a descriptor over its budget, or not
        // smaller than the result, keeps the result inline, and no file is
        // left behind.
        let planned = self.store.dir().join(&file_name);
        let described = Described::new(&header, &stats, kind, &recipes);
        let response = match self.smaller_descriptor(&described, &planned, &file, estimated_tokens)
        {
            Ok(response) => response,
            Err(reason) => return Outcome::Inline(reason),
        };
        let path = match self.store.write(&file_name, &file.bytes) {
            Ok(path) => path,
            Err(error) => {
                let rebuild = header.rebuild.as_ref();
                let threshold = policy.threshold_tokens;
                let records = file.records();
                return self.truncate(parsed, rebuild, records, error, estimated_tokens, threshold);
            }
        };
        let response = self.rewritten_for(&described, (&planned, response), &path, &file);
        drop(file);
        let descriptor_json = serde_json::to_string(&response).unwrap_or_default();
        let link = call.resource_link.then(|| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let size = std::fs::metadata(&path).ok().map(|m| m.len());
            resource_link_block(&store::resource_uri(&name), &name, size)
        });
        let blocks = blocks_around(
            &kept_blocks,
            parsed.blocks.len(),
            &descriptor_json,
            link.as_deref(),
        );
        let structured = match structured_copy_key {
            Some(key) => structured_copy(parsed, &key, &descriptor_json),
            None => structured_slim,
        };
        let result = parsed.write(&blocks, structured.as_deref());
        let created_at = id.datetime().into();
        Outcome::Offloaded(Box::new(Offloaded {
            result,
            response,
            file: OffloadedResult {
                path,
                header: OffloadHeader {
                    rebuild: None,
                    ..header
                },
                ttl: self.config.ttl,
                created_at,
            },
        }))
    }

    /// The file's first line.
    fn header(
        &self,
        call: &ToolCall,
        id: &ulid::Ulid,
        count: usize,
        estimated_tokens: usize,
        detail: Detail,
        rebuild: Rebuild,
    ) -> OffloadHeader {
        let created_at: DateTime<Utc> = id.datetime().into();
        let timestamp = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        OffloadHeader {
            header_type: HEADER_TYPE.to_owned(),
            operation: operation_name(&call.name),
            query: call.query().map(str::to_owned),
            count,
            schema_version: self.config.schema_version.clone(),
            timestamp: timestamp(created_at),
            estimated_tokens,
            detail,
            tool: Some(call.name.clone()),
            expires_at: Some(timestamp(expiry(created_at, self.config.ttl))),
            rebuild: Some(rebuild),
            recipes: Vec::new(),
            owner: call.owner.clone(),
        }
    }

    /// The descriptor of the file at `path`, within its budget; else the
    /// estimated tokens of the smallest one.
    /// The descriptor, when it is within its budget and smaller than the
    /// result of `estimated_tokens` it replaces (a threshold set below the
    /// descriptor's size would otherwise trade a small result for a bigger
    /// descriptor); else why the result stays inline.
    fn smaller_descriptor(
        &self,
        d: &Described<'_>,
        planned: &std::path::Path,
        file: &File,
        estimated_tokens: usize,
    ) -> Result<OffloadResponse, PassReason> {
        let too_large = |descriptor_tokens| PassReason::DescriptorTooLarge { descriptor_tokens };
        let response = self
            .descriptor(d, planned, file.records())
            .map_err(too_large)?;
        let json = serde_json::to_string(&response).unwrap_or_default();
        let descriptor_tokens = self.estimator.estimate(&json);
        if descriptor_tokens >= estimated_tokens {
            return Err(too_large(descriptor_tokens));
        }
        Ok(response)
    }

    fn descriptor(
        &self,
        d: &Described<'_>,
        path: &std::path::Path,
        records: RecordsView<'_>,
    ) -> Result<OffloadResponse, usize> {
        let path = path.to_string_lossy();
        describe::describe(&Facts {
            header: d.header,
            path: &path,
            stats: d.stats,
            kind: d.kind,
            recipes: d.recipes,
            records,
            preview_chars: self.config.preview_chars,
            extraction: self.config.extraction,
            estimator: &*self.estimator,
            ttl: Some(self.config.ttl),
        })
    }
}

/// The rewritten result's blocks: the kept blocks before the first block
/// the descriptor stands for keep their place; then the descriptor, with
/// that block's annotations, and the link to the file; then the other kept
/// blocks, in order.
fn blocks_around<'a>(
    kept_blocks: &[usize],
    total: usize,
    descriptor_json: &'a str,
    link: Option<&'a str>,
) -> Vec<BlockOut<'a>> {
    let source = records::first_source(kept_blocks, total);
    let lead = source.unwrap_or(0);
    let mut blocks = Vec::with_capacity(kept_blocks.len() + 2);
    blocks.extend(kept_blocks[..lead].iter().map(|&i| BlockOut::Original(i)));
    blocks.push(match source {
        Some(i) => BlockOut::TextLike(descriptor_json, i),
        None => BlockOut::NewText(descriptor_json),
    });
    blocks.extend(link.map(BlockOut::Json));
    blocks.extend(kept_blocks[lead..].iter().map(|&i| BlockOut::Original(i)));
    blocks
}

/// The records' statistics, their detail level and their recipes.
fn plan(
    call: &ToolCall,
    records: &Records,
    kind: RecordKind,
) -> (RecordStats, Detail, Vec<Recipe>) {
    let stats = RecordStats::collect(records.view().iter());
    let detail = describe::detail_level(call.string_arg("detail"), &call.name, &stats);
    let recipes = recipes::build(&stats, kind, detail, records.view());
    (stats, detail, recipes)
}

impl Offloader {
    /// The descriptor of the file the store wrote at `path`: the one made
    /// for the planned path when the store wrote there.
    fn rewritten_for(
        &self,
        d: &Described<'_>,
        (planned, response): (&std::path::Path, OffloadResponse),
        path: &std::path::Path,
        file: &File,
    ) -> OffloadResponse {
        if path == planned {
            return response;
        }
        self.descriptor(d, path, file.records()).unwrap_or(response)
    }
}

/// What the descriptor is made of, besides the file's path and records.
struct Described<'a> {
    header: &'a OffloadHeader,
    stats: &'a RecordStats,
    kind: RecordKind,
    recipes: &'a [Recipe],
}

impl<'a> Described<'a> {
    fn new(
        header: &'a OffloadHeader,
        stats: &'a RecordStats,
        kind: RecordKind,
        recipes: &'a [Recipe],
    ) -> Self {
        Described {
            header,
            stats,
            kind,
            recipes,
        }
    }
}

/// `structuredContent` whose member `key` copied the text as a string: now
/// it copies the descriptor.
fn structured_copy(parsed: &RawResult<'_>, key: &str, descriptor_json: &str) -> Option<String> {
    let object = serde_json::from_str::<RawObject<'_>>(parsed.structured()?.get()).ok()?;
    let mut value = String::with_capacity(descriptor_json.len() + 16);
    push_json_string(&mut value, descriptor_json);
    Some(records::with_field(&object, key, &value))
}

/// The file's contents: the header line, then the records. Made in the
/// records' own buffer: it grows by the header's exact length, the records
/// move up within it and the header is written in front.
struct File {
    bytes: Vec<u8>,
    /// Where the records start, and how many there are.
    records_at: usize,
    count: usize,
}

impl File {
    fn new(records: Records, header: &OffloadHeader) -> File {
        let count = records.len();
        let mut bytes = records.into_body().into_bytes();
        let body = bytes.len();
        let header_len = json_len(header);
        bytes.reserve_exact(header_len + 1);
        bytes.resize(body + header_len + 1, 0);
        bytes.copy_within(..body, header_len + 1);
        // Serialising our own types cannot fail; the slice has the exact room.
        let _ = serde_json::to_writer(&mut bytes[..header_len], header);
        bytes[header_len] = b'\n';
        File {
            bytes,
            records_at: header_len + 1,
            count,
        }
    }

    /// The records, as written.
    fn records(&self) -> RecordsView<'_> {
        // The records were a `String`: still UTF-8 (checked, not assumed).
        let body = std::str::from_utf8(&self.bytes[self.records_at..]).unwrap_or_default();
        RecordsView::new(body, self.count)
    }
}

/// The length of `value` serialised as compact JSON, without building it.
fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
