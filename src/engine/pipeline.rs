//! The offload pipeline, top to bottom: each step is a function over the
//! data it needs, in a file named for it.
//!
//! 1. `decide` — inline, or the parsed result over the threshold;
//! 2. `records::split` — the records, and the [`Rebuild`] that puts the
//!    result back together;
//! 3. `stats` — their statistics and detail level, with the completeness
//!    contract (the data's SHA-256, taken at once with the statistics);
//! 4. `recipes` — the ten jq recipes;
//! 5. `file` — the header line and the file's bytes;
//! 6. `describe` — the descriptor, fitted to its budget (before the write:
//!    a result that stays inline leaves no file);
//! 7. the store's write, or `fallback` (the spec's truncation) when it fails;
//! 8. `rewrite` — the rewritten `CallToolResult`.
//!
//! [`Rebuild`]: super::records::Rebuild

use super::decide::{self, Decision};
use super::describe::{self, Facts};
use super::events::PassReason;
use super::fallback;
use super::file::{self, HeaderFacts};
use super::outcome::{Offloaded, Outcome};
use super::recipes;
use super::records::{self, Extraction, Rebuild, RecordKind, Records, RecordsView};
use super::rewrite::{self, Replacement};
use super::stats::RecordStats;
use crate::config::OffloadConfig;
use crate::contract::{DataContract, DataDigest};
use crate::estimate::TokenEstimator;
use crate::parallel;
use crate::store::{self, Store};
use crate::wire::call::ToolCall;
use crate::wire::mcp::{Input, RawResult, ResultError};

/// What the pipeline needs of an [`Offloader`](super::Offloader): its
/// configuration, estimator and store, and the id of the file to write.
pub(super) struct Parts<'a> {
    pub config: &'a OffloadConfig,
    pub estimator: &'a dyn TokenEstimator,
    pub store: &'a dyn Store,
    pub file_id: ulid::Ulid,
}

/// One result through the pipeline (`input`: whether serde validated
/// `result` already). (About 110 lines: the steps in order are the point
/// of this function; each is a call.)
///
/// Memory: the records are the file's body already (the texts they came
/// from left the parsed result during the split), and the header goes in
/// front of the records in their own buffer (see [`File`]), so nothing
/// here copies the records.
pub(super) fn run(
    o: &Parts<'_>,
    call: &ToolCall,
    result: &[u8],
    input: Input<'_>,
) -> Result<Outcome, ResultError> {
    let policy = o
        .config
        .policy_for_client(&call.name, call.client.as_deref());
    let estimator = o.estimator;
    let (mut parsed, estimated_tokens) =
        match decide::decide(estimator, &policy, o.config.enabled, result, input)? {
            Decision::Inline(reason) => return Ok(Outcome::Inline(reason)),
            Decision::Offload(parsed, tokens) => (parsed, tokens),
        };
    // The descriptor, and the resource link when asked, come first.
    let inserted = 1 + usize::from(call.resource_link);
    let large = policy.threshold_tokens / 4;
    let is_large = |t: &str| estimator.estimate(t) > large;
    let Extraction {
        records,
        kind,
        rebuild,
        kept_blocks,
        structured_slim,
        structured_copy_key,
    } = records::split(&mut parsed, is_large, inserted)?;
    if records.is_empty() {
        return Ok(Outcome::Inline(PassReason::NoRecords));
    }
    if let Err(reason) = rewrite::structured_fits(structured_slim.as_deref(), call.output_schema) {
        return Ok(Outcome::Inline(reason));
    }
    let view = records.view();
    let body = view.body();
    let (stats, contract) = parallel::join(
        o.config.parallel,
        body.len(),
        || RecordStats::collect(view.iter()),
        || DataDigest::of(body.as_bytes(), view.len()),
    );
    let split = Split {
        kind,
        rebuild,
        stats,
        contract,
        estimated_tokens,
        kept_blocks,
        structured_slim,
        structured_copy_key,
    };
    Ok(finish(
        o,
        call,
        policy.threshold_tokens,
        &parsed,
        Data::Memory(records),
        split,
    ))
}

/// Where a result's records are once split.
pub(super) enum Data<'a> {
    /// In memory, the file's data lines.
    Memory(Records),
    /// In a data file (a spilled result's, rewound), with its first records.
    File {
        file: &'a std::fs::File,
        sample: RecordsView<'a>,
        /// All the records.
        count: usize,
        /// All the records joined by newlines, in characters.
        chars: usize,
    },
}

impl Data<'_> {
    /// The records, or the first of them; all of them; their characters.
    fn records(&self) -> (RecordsView<'_>, usize, usize) {
        match self {
            Data::Memory(records) => {
                let view = records.view();
                (view, view.len(), view.chars())
            }
            Data::File {
                sample,
                count,
                chars,
                ..
            } => (*sample, *count, *chars),
        }
    }
}

/// What the split and the statistics gave, for [`finish`].
pub(super) struct Split {
    pub kind: RecordKind,
    pub rebuild: Rebuild,
    pub stats: RecordStats,
    pub contract: DataContract,
    pub estimated_tokens: usize,
    /// Blocks that stay in the rewritten result, in order.
    pub kept_blocks: Vec<usize>,
    /// `structuredContent` with its record array emptied, when it was a source.
    pub structured_slim: Option<String>,
    /// The `structuredContent` member that copied a source block's text.
    pub structured_copy_key: Option<String>,
}

/// Steps 4 to 8 for records split already, wherever they are: recipes,
/// header, descriptor, the store's write or the fallback, the rewritten
/// result. `parsed`: the result with its sources taken out.
pub(super) fn finish(
    o: &Parts<'_>,
    call: &ToolCall,
    threshold: usize,
    parsed: &RawResult<'_>,
    data: Data<'_>,
    split: Split,
) -> Outcome {
    let estimator = o.estimator;
    let (records, count, data_chars) = data.records();
    let detail = describe::detail_level(call.string_arg("detail"), &call.name, &split.stats);
    let recipes = recipes::build(&split.stats, split.kind, detail, records);
    let id = o.file_id;
    let header = file::header(
        call,
        o.config,
        HeaderFacts {
            id,
            estimated_tokens: split.estimated_tokens,
            detail,
            rebuild: split.rebuild,
            recipes: &recipes,
            contract: &split.contract,
        },
    );
    let file_name = store::file_name(&header.operation, id);
    let planned = o.store.dir().join(&file_name);
    let planned = planned.to_string_lossy();
    let facts = Facts {
        header: &header,
        path: &planned,
        stats: &split.stats,
        kind: split.kind,
        recipes: &recipes,
        records,
        data_chars,
        preview_chars: o.config.preview_chars,
        extraction: o.config.extract_guidance_for(call.client.as_deref()),
        store_url: o.store.url(),
        estimator,
        ttl: Some(o.config.ttl),
    };
    let response = match describe::fitted(&facts, split.estimated_tokens, threshold) {
        Ok(response) => response,
        Err(reason) => return Outcome::Inline(reason),
    };
    let head = file::head_line(&header);
    let written = match &data {
        Data::Memory(_) => o
            .store
            .write_parts(&file_name, &head, records.body().as_bytes()),
        Data::File { file, .. } => o.store.write_from(&file_name, &head, &mut &**file),
    };
    let path = match written {
        Ok(path) => path,
        Err(error) => {
            let rebuild = header.rebuild.as_ref();
            let all = (records, count);
            return fallback::truncate(
                estimator,
                parsed,
                rebuild,
                all,
                error,
                split.estimated_tokens,
                threshold,
            );
        }
    };
    // A store may write elsewhere than planned: describe the real path.
    let written = path.to_string_lossy();
    let response = if written == planned {
        response
    } else {
        describe::describe(&Facts {
            path: &written,
            ..facts
        })
        .0
    };
    drop(data);
    let descriptor_json = serde_json::to_string(&response).unwrap_or_default();
    let link = call.resource_link.then(|| rewrite::link_to(&path));
    let result = rewrite::rewritten(
        parsed,
        Replacement {
            descriptor_json: &descriptor_json,
            link: link.as_deref(),
            kept_blocks: &split.kept_blocks,
            structured_slim: split.structured_slim,
            structured_copy_key: split.structured_copy_key.as_deref(),
        },
    );
    let file = file::written(path, header, o.config.ttl, id);
    Outcome::Offloaded(Box::new(Offloaded {
        result,
        response,
        file,
    }))
}
