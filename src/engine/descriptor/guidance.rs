//! The specification's guidance templates, filled in: the shell one, and
//! the one that points at `lro_extract`.

use super::Detail;

/// The specification's guidance template, filled in.
pub fn guidance(count: usize, tokens: usize, path: &str, detail: Detail) -> String {
    format!(
        "Results offloaded to JSONL ({count} memories, ~{tokens} tokens saved).\n\
         File: {path}\n\
         Detail level: {detail}\n\
         Use the jq recipes above to extract specific data. Common patterns:\n\
         - Browse: recipe #1 (titles with namespaces)\n\
         - Filter: recipe #2 (by namespace) or #3 (by keyword)\n\
         - Analyze: recipe #6 (count by namespace)\n\
         Read the file directly only if you need the complete dataset.\n\
         The header line (line 1) contains metadata; memory objects start at line 2."
    )
}

/// The specification's guidance template for an implementation that
/// serves extraction itself (the `lro_extract` tool), filled in. The
/// custom-filter example uses the confidence field the records have at
/// `detail` (none at light).
pub fn extract_guidance(count: usize, tokens: usize, path: &str, detail: Detail) -> String {
    extract_guidance_with(count, tokens, Some(path), detail)
}

/// The compact form of [`extract_guidance`], used when the descriptor
/// would be over its budget with the template verbatim: the path is named
/// once, in `file_path`.
pub fn compact_extract_guidance(count: usize, tokens: usize, detail: Detail) -> String {
    extract_guidance_with(count, tokens, None, detail)
}

/// [`extract_guidance`]; with no `path`, its compact form: the examples
/// say `file_path=FILE` and a line says FILE is the descriptor's
/// `file_path`, the keyword-search example (the filter's form again) is
/// left out, and one line points at `jq_recipes` instead of listing the
/// recipes' short names.
pub(crate) fn extract_guidance_with(
    count: usize,
    tokens: usize,
    path: Option<&str>,
    detail: Detail,
) -> String {
    let custom = match detail {
        Detail::Light => r#"select(.memory_type == \"episodic\")"#,
        Detail::Medium => "select(.confidence > 0.8)",
        Detail::Full => "select(.provenance.confidence > 0.8)",
    };
    let file = path.map_or_else(|| "FILE".to_owned(), json_string);
    let mut g = format!("Results offloaded to JSONL ({count} memories, ~{tokens} tokens saved).\n");
    if path.is_none() {
        g.push_str(FILE_LINE);
    }
    g.push_str(&format!(
        "Detail level: {detail}\n\
         Use the `lro_extract` tool to query this result set. Examples:\n\
         - Browse: lro_extract(file_path={file}, recipe=1)\n\
         - Filter by namespace: lro_extract(file_path={file}, recipe=2, params={{\"namespace\": \"_semantic\"}})\n"
    ));
    if path.is_some() {
        g.push_str(&format!(
            "- Search by keyword: lro_extract(file_path={file}, recipe=3, params={{\"keyword\": \"your term\"}})\n"
        ));
    }
    g.push_str(&format!(
        "- Custom filter: lro_extract(file_path={file}, query=\"{custom}\")\n"
    ));
    g.push_str(if path.is_some() {
        "Available recipes: 1=titles+namespaces, 2=filter namespace, 3=search titles,\n\
         4=IDs+titles, 5=filter type, 6=count by namespace, 7=filter tag, 8=sort by date,\n\
         9=detail-adaptive, 10=detail-adaptive."
    } else {
        RECIPES_ARE_JQ_RECIPES
    });
    g
}

/// The compact guidance's second line: what `FILE` in its examples is.
pub(crate) const FILE_LINE: &str = "FILE below is the file_path above.\n";

/// The compact guidance's last line, in place of the recipe list.
pub(crate) const RECIPES_ARE_JQ_RECIPES: &str = "recipe=N runs the Nth of the jq_recipes above.";

/// `s` as a JSON string.
pub(crate) fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}
