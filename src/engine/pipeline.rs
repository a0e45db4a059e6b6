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

use super::contract::DataDigest;
use super::decide::{self, Decision};
use super::describe::{self, Facts};
use super::events::PassReason;
use super::fallback;
use super::file::{self, File, HeaderFacts};
use super::outcome::{Offloaded, Outcome};
use super::recipes;
use super::records::{self, Extraction};
use super::rewrite::{self, Replacement};
use super::stats::RecordStats;
use crate::config::OffloadConfig;
use crate::estimate::TokenEstimator;
use crate::parallel;
use crate::store::{self, Store};
use crate::wire::call::ToolCall;
use crate::wire::mcp::{Input, ResultError};

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
        body.len(),
        || RecordStats::collect(view.iter()),
        || DataDigest::of(body.as_bytes(), view.len()),
    );
    let detail = describe::detail_level(call.string_arg("detail"), &call.name, &stats);
    let recipes = recipes::build(&stats, kind, detail, records.view());
    let id = o.file_id;
    let header = file::header(
        call,
        o.config,
        HeaderFacts {
            id,
            estimated_tokens,
            detail,
            rebuild,
            recipes: &recipes,
            contract: &contract,
        },
    );
    let file_name = store::file_name(&header.operation, id);
    let file = File::new(records, &header);
    let planned = o.store.dir().join(&file_name);
    let planned = planned.to_string_lossy();
    let facts = Facts {
        header: &header,
        path: &planned,
        stats: &stats,
        kind,
        recipes: &recipes,
        records: file.records(),
        data_chars: file.records().chars(),
        preview_chars: o.config.preview_chars,
        extraction: o.config.extract_guidance_for(call.client.as_deref()),
        estimator,
        ttl: Some(o.config.ttl),
    };
    let response = match describe::fitted(&facts, estimated_tokens, policy.threshold_tokens) {
        Ok(response) => response,
        Err(reason) => return Ok(Outcome::Inline(reason)),
    };
    let path = match o.store.write_parts(&file_name, &file.head, file.body()) {
        Ok(path) => path,
        Err(error) => {
            let all = (file.records(), file.records().len());
            let rebuild = header.rebuild.as_ref();
            let (tokens, threshold) = (estimated_tokens, policy.threshold_tokens);
            let truncated =
                fallback::truncate(estimator, &parsed, rebuild, all, error, tokens, threshold);
            return Ok(truncated);
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
    drop(file);
    let descriptor_json = serde_json::to_string(&response).unwrap_or_default();
    let link = call.resource_link.then(|| rewrite::link_to(&path));
    let result = rewrite::rewritten(
        &parsed,
        Replacement {
            descriptor_json: &descriptor_json,
            link: link.as_deref(),
            kept_blocks: &kept_blocks,
            structured_slim,
            structured_copy_key: structured_copy_key.as_deref(),
        },
    );
    let file = file::written(path, header, o.config.ttl, id);
    Ok(Outcome::Offloaded(Box::new(Offloaded {
        result,
        response,
        file,
    })))
}
