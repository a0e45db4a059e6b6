//! The descriptor of a written file, small and true.
//!
//! **Budget.** A descriptor aims at [`DESCRIPTOR_BUDGET_TOKENS`]
//! estimated tokens whatever the records hold: recipes quote only short
//! field names, values and words (see `recipes`), and when the descriptor
//! is over the budget it is built again with less (`DETAILINGS`): first
//! the guidance names the path once (its `lro_extract` examples say
//! `file_path=FILE`, and one line points at `jq_recipes` instead of
//! listing the recipes' short names), then without the preview, then the
//! line schema one level deep and fewer namespaces, then the records' type
//! only, then three lines of guidance. The path stays in `file_path` and
//! in each of the ten recipes (the spec's), so a long output directory can
//! still leave the smallest descriptor over the target; it is used as long
//! as it is within its hard bounds: at most the threshold (or the budget,
//! when the threshold is lower) and smaller than the result it replaces.
//! Past those (a path thousands of characters long, a threshold below the
//! descriptor's size) the result stays inline
//! ([`PassReason::DescriptorTooLarge`]).
//!
//! **Guidance.** When the layer serves extraction (`lro_extract`, the
//! default), the guidance is the spec's native template; otherwise the
//! spec's shell template. For records that are not memories both name the
//! recipes that really browse, filter, search and analyze. The spec says
//! implementations SHOULD use its templates and that the implementation
//! serving `lro_extract` owns the prompt: the native template repeats the
//! path in four examples (about 75 tokens with a 70-character path), so a
//! descriptor over the budget uses the compact form above, which keeps
//! every example's form and every field the spec requires.
//!
//! [`PassReason::DescriptorTooLarge`]: crate::offload::PassReason::DescriptorTooLarge

use super::descriptor::{
    Detail, FILE_LINE, OffloadHeader, OffloadResponse, OffloadSummary, RECIPES_ARE_JQ_RECIPES,
    extract_guidance_with, guidance, json_string,
};
use super::events::PassReason;
use super::paging;
use super::recipes::{self, Recipe, Role};
use super::records::{RecordKind, RecordsView};
use super::stats::RecordStats;
use crate::estimate::TokenEstimator;
use crate::store::RESOURCE_URI_PREFIX;

/// The descriptor's target, in estimated tokens. It trades what the
/// descriptor tells (the spec's templates verbatim, a preview, a deeper
/// schema) against what every offloaded result costs the model's
/// context: at 850, 200 full memories (a 70-character path) get the
/// compact guidance and a one-level schema, and reach a client as at most
/// 900 tokens with their `resource_link` (benches/README.md, "Descriptor
/// size").
pub(crate) const DESCRIPTOR_BUDGET_TOKENS: usize = 850;

/// What a descriptor is made of.
#[derive(Clone, Copy)]
pub(crate) struct Facts<'a> {
    pub header: &'a OffloadHeader,
    pub path: &'a str,
    pub stats: &'a RecordStats,
    pub kind: RecordKind,
    pub recipes: &'a [Recipe],
    /// The records, or the first of them (a spilled result's sample).
    pub records: RecordsView<'a>,
    /// All the records joined by newlines, in characters (the preview
    /// says how many it leaves out).
    pub data_chars: usize,
    pub preview_chars: usize,
    /// The guidance points at `lro_extract` rather than the shell.
    pub extraction: bool,
    /// The shared store's URL (`lro --store`), when the file is in one.
    pub store_url: Option<&'a str>,
    pub estimator: &'a dyn TokenEstimator,
    /// The file's time to live, when it has one.
    pub ttl: Option<std::time::Duration>,
}

/// How much a descriptor tells beyond what the spec requires.
#[derive(Clone, Copy)]
struct Detailing {
    schema_depth: usize,
    preview: bool,
    namespaces: usize,
    guidance: Guidance,
}

/// How the guidance is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Guidance {
    /// The spec's template (or ours for records that are not memories),
    /// the path in every `lro_extract` example.
    Full,
    /// The same, the examples naming the path once (`FILE`, "the
    /// file_path above") and without a long custom-filter example.
    PathOnce,
    /// Three lines: what was offloaded, and where to look.
    Short,
}

/// From the most detailed to the least; the first within the budget is
/// used. The path goes first (named once in the guidance instead of in
/// every `lro_extract` example, and the recipe list left to `jq_recipes`),
/// then the preview (the line schema names the fields), then the schema's
/// depth and the namespaces; the file path in `file_path` and in each of
/// the ten recipes always stays. Nested objects are described two levels
/// down at most: deeper levels rarely matter to a query and cost the most.
const DETAILINGS: [Detailing; 7] = [
    detailing(2, true, 5, Guidance::Full),
    detailing(2, true, 5, Guidance::PathOnce),
    detailing(2, false, 5, Guidance::PathOnce),
    detailing(1, false, 5, Guidance::PathOnce),
    detailing(1, false, 3, Guidance::PathOnce),
    detailing(0, false, 1, Guidance::PathOnce),
    detailing(0, false, 1, Guidance::Short),
];

const fn detailing(
    schema_depth: usize,
    preview: bool,
    namespaces: usize,
    guidance: Guidance,
) -> Detailing {
    Detailing {
        schema_depth,
        preview,
        namespaces,
        guidance,
    }
}

/// The descriptor, when it fits: within its target
/// ([`DESCRIPTOR_BUDGET_TOKENS`]) when it can be, else the smallest one,
/// as long as it stays within its hard bounds — at most the threshold (or
/// the target, when the threshold is lower) and smaller than the result of
/// `estimated_tokens` it replaces (a threshold set below the descriptor's
/// size would otherwise trade a small result for a bigger descriptor).
/// Else why the result stays inline.
pub(crate) fn fitted(
    f: &Facts<'_>,
    estimated_tokens: usize,
    threshold: usize,
) -> Result<OffloadResponse, PassReason> {
    let (response, descriptor_tokens) = describe(f);
    let cap = threshold.max(DESCRIPTOR_BUDGET_TOKENS);
    if descriptor_tokens > cap || descriptor_tokens >= estimated_tokens {
        return Err(PassReason::DescriptorTooLarge { descriptor_tokens });
    }
    Ok(response)
}

/// The descriptor, as detailed as the budget allows, else the smallest
/// one; and its estimated tokens.
pub(crate) fn describe(f: &Facts<'_>) -> (OffloadResponse, usize) {
    let mut smallest: Option<(OffloadResponse, usize)> = None;
    for detailing in DETAILINGS {
        let response = build(f, detailing);
        let json = serde_json::to_string(&response).unwrap_or_default();
        let tokens = f.estimator.estimate(&json);
        if tokens <= DESCRIPTOR_BUDGET_TOKENS {
            return (response, tokens);
        }
        if smallest.as_ref().is_none_or(|(_, t)| tokens < *t) {
            smallest = Some((response, tokens));
        }
    }
    // DETAILINGS is not empty.
    smallest.unwrap_or_else(|| (build(f, DETAILINGS[0]), usize::MAX))
}

fn build(f: &Facts<'_>, d: Detailing) -> OffloadResponse {
    let (count, tokens, detail) = (f.header.count, f.header.estimated_tokens, f.header.detail);
    let memories = recipes::is_memory(f.stats, f.kind, detail);
    let path = (d.guidance == Guidance::Full).then_some(f.path);
    let guidance = match (d.guidance, memories, f.extraction) {
        (Guidance::Short, _, _) => short_guidance(count, tokens, memories, f.extraction, detail),
        (_, true, true) => extract_guidance_with(count, tokens, path, detail),
        // The shell template names the path once already.
        (_, true, false) => guidance(count, tokens, f.path, detail),
        (_, false, true) => generic_extract_guidance(count, tokens, path, f.recipes),
        (_, false, false) => generic_guidance(count, tokens, f.recipes),
    };
    let guidance = match f
        .store_url
        .filter(|_| f.path.starts_with(RESOURCE_URI_PREFIX))
    {
        Some(url) => format!(
            "{guidance}\nThe file is in a shared store, not on this machine: from a shell with \
             the store's credentials, `lro extract --store {url} {} --recipe N` (or --query \
             FILTER) runs a recipe.",
            f.path
        ),
        None => guidance,
    };
    let tool = f.header.tool.as_deref().unwrap_or(&f.header.operation);
    OffloadResponse {
        offloaded: true,
        summary: summary(f, d.namespaces),
        file_path: f.path.to_owned(),
        line_schema: line_schema(f.stats, f.kind, d.schema_depth),
        jq_recipes: recipes::jq_recipes(f.path, f.recipes),
        guidance,
        preview: if d.preview {
            preview(f.records, f.data_chars, f.preview_chars)
        } else {
            String::new()
        },
        expires_after_seconds: f.ttl.map(|t| t.as_secs()),
        page: paging::page_info(f.header.rebuild.as_ref(), count, tool),
    }
}

/// The shortest guidance: what was offloaded, and where to look.
fn short_guidance(
    count: usize,
    tokens: usize,
    memories: bool,
    extraction: bool,
    detail: Detail,
) -> String {
    let what = if memories { "memories" } else { "records" };
    let how = if extraction {
        "Query it with the `lro_extract` tool (the file_path above and recipe=1 to 10, or \
         query=\"a jq filter\"), or with the jq recipes above."
    } else {
        "Use the jq recipes above to extract specific data."
    };
    format!(
        "Results offloaded to JSONL ({count} {what}, ~{tokens} tokens saved).\n\
         Detail level: {detail}\n\
         {how}\n\
         The header line (line 1) contains metadata; records start at line 2."
    )
}

fn summary(f: &Facts<'_>, namespaces: usize) -> OffloadSummary {
    let score = f.stats.score_field();
    OffloadSummary {
        count: f.header.count,
        estimated_tokens: f.header.estimated_tokens,
        operation: f.header.operation.clone(),
        top_namespaces: f.stats.top_categories(namespaces),
        score_range: score.map(|(_, s)| (s.min, s.max)),
        detail: f.header.detail,
        score_field: score.map(|(name, _)| name.to_owned()),
        data_bytes: f.header.data_bytes,
        data_sha256: f.header.data_sha256.clone(),
    }
}

/// The records' schema; line records say what a line is.
fn line_schema(stats: &RecordStats, kind: RecordKind, depth: usize) -> serde_json::Value {
    let mut schema = stats.line_schema(depth);
    if let (Some(text), serde_json::Value::Object(map)) = (kind.describe(), &mut schema) {
        map.insert("description".into(), text.into());
    }
    schema
}

/// The first recipe of `role`, as `#n (short name)`.
fn pointer(recipes: &[Recipe], role: Role) -> Option<String> {
    recipes::first_of(recipes, role).map(|(n, short)| format!("#{n} ({short})"))
}

/// Shell guidance for records that are not memories: the spec's template,
/// its Browse / Filter / Analyze lines naming recipes that do that (a line
/// is left out when no recipe does). The path and the detail level are in
/// `file_path` and `summary`, not repeated.
pub(crate) fn generic_guidance(count: usize, tokens: usize, recipes: &[Recipe]) -> String {
    let mut g = format!(
        "Results offloaded to JSONL ({count} records, ~{tokens} tokens saved).\n\
         Use the jq recipes above to extract specific data. Common patterns:\n"
    );
    if let Some(p) = pointer(recipes, Role::Browse) {
        g.push_str(&format!("- Browse: recipe {p}\n"));
    }
    let filters: Vec<String> = [Role::Filter, Role::Search]
        .into_iter()
        .filter_map(|r| pointer(recipes, r))
        .collect();
    if !filters.is_empty() {
        g.push_str(&format!("- Filter: recipe {}\n", filters.join(" or ")));
    }
    if let Some(p) = pointer(recipes, Role::Analyze) {
        g.push_str(&format!("- Analyze: recipe {p}\n"));
    }
    g.push_str(
        "Read the file directly only if you need the complete dataset.\n\
         The header line (line 1) contains metadata; records start at line 2.",
    );
    g
}

/// `lro_extract` guidance for records that are not memories: examples with
/// recipes that really browse, filter and search (with their parameters),
/// a custom filter, and the list of the ten recipes. With no `path`, the
/// compact form of [`extract_guidance_with`]: `file_path=FILE`, no search
/// example, no long custom filter, no list.
fn generic_extract_guidance(
    count: usize,
    tokens: usize,
    path: Option<&str>,
    recipes: &[Recipe],
) -> String {
    let file = path.map_or_else(|| "FILE".to_owned(), json_string);
    let mut g = format!("Results offloaded to JSONL ({count} records, ~{tokens} tokens saved).\n");
    if path.is_none() {
        g.push_str(FILE_LINE);
    }
    g.push_str("Use the `lro_extract` tool to query this result set. Examples:\n");
    let mut filtered = false;
    for (label, role) in [
        ("Browse", Role::Browse),
        ("Filter", Role::Filter),
        ("Search", Role::Search),
    ] {
        // The compact form shows a search only when no filter was shown:
        // both are a recipe with `params`.
        if role == Role::Search && filtered && path.is_none() {
            continue;
        }
        let Some((n, _)) = recipes::first_of(recipes, role) else {
            continue;
        };
        filtered |= role == Role::Filter;
        let params = example_params(&recipes[n - 1], role);
        g.push_str(&format!(
            "- {label}: lro_extract(file_path={file}, recipe={n}{params})\n"
        ));
    }
    let custom = custom_example(recipes).filter(|q| path.is_some() || q.len() <= 80);
    if let Some(query) = custom {
        let query = serde_json::to_string(&query).unwrap_or_default();
        g.push_str(&format!(
            "- Custom filter: lro_extract(file_path={file}, query={query})\n"
        ));
    }
    if path.is_none() {
        g.push_str(RECIPES_ARE_JQ_RECIPES);
        return g;
    }
    let list: Vec<String> = recipes
        .iter()
        .enumerate()
        .map(|(i, r)| format!("{}={}", i + 1, r.short))
        .collect();
    g.push_str(&format!("Available recipes: {}.", list.join(", ")));
    g
}

/// `, params={...}` for an example call: a search shows `"your term"`,
/// others their default values.
fn example_params(recipe: &Recipe, role: Role) -> String {
    if recipe.program.params.is_empty() {
        return String::new();
    }
    let params: serde_json::Map<String, serde_json::Value> = recipe
        .program
        .params
        .iter()
        .map(|(k, v)| {
            let v = if role == Role::Search && k == "keyword" {
                "your term"
            } else {
                v
            };
            (k.clone(), v.into())
        })
        .collect();
    format!(", params={}", serde_json::Value::Object(params))
}

/// A per-record filter of the recipes (a filter or a search), rendered
/// with its default values, as an example of a custom query.
fn custom_example(recipes: &[Recipe]) -> Option<String> {
    recipes
        .iter()
        .filter(|r| matches!(r.role, Role::Filter | Role::Search) && !r.program.flags.contains('s'))
        .find(|r| !r.raw)
        .map(|r| r.program.rendered())
}

/// About the first `limit` characters of the data (records joined by
/// newlines, `total` characters). Only the records shown are walked.
fn preview(records: RecordsView<'_>, total: usize, limit: usize) -> String {
    if limit == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut taken = 0usize;
    for (n, rec) in records.iter().enumerate() {
        if taken >= limit {
            break;
        }
        if n > 0 {
            out.push('\n');
            taken += 1;
        }
        let want = limit.saturating_sub(taken);
        match rec.char_indices().nth(want) {
            Some((cut, _)) => {
                out.push_str(&rec[..cut]);
                taken += want;
            }
            None => {
                out.push_str(rec);
                taken += rec.chars().count();
            }
        }
    }
    if total > taken {
        out.push_str(&format!("...(truncated, {} more chars)", total - taken));
    }
    out
}

/// The detail level: the records', when they are objects (a recall
/// without `detail` that returned full records is `full`, whatever the
/// argument or the tool's default says); else the call's `detail`
/// argument, else the tool's default, else light.
pub(crate) fn detail_level(argument: Option<&str>, tool: &str, stats: &RecordStats) -> Detail {
    if stats.objects > 0 {
        return stats.inferred_detail();
    }
    if let Some(d) = argument.and_then(Detail::parse) {
        return d;
    }
    match tool {
        "inject_context" => Detail::Medium,
        _ => Detail::Light,
    }
}
