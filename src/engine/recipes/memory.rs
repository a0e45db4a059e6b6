//! The specification's recipe table for memory records, exactly: recipes 1
//! to 8, and the two that follow by detail level.

use super::super::descriptor::{Detail, RecipeProgram};
use super::{Recipe, Role};

/// A row of the memory table: description, short name, role, flags,
/// filter, parameters with their default values.
type Row = (
    &'static str,
    &'static str,
    Role,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// The spec's recipes 1 to 8, in every table.
const MEMORY_TABLE: [Row; 8] = [
    (
        "List titles with namespaces",
        "titles+namespaces",
        Role::Browse,
        "r",
        "[.title, .namespace] | @tsv",
        &[],
    ),
    (
        "Filter by namespace prefix",
        "filter namespace",
        Role::Filter,
        "",
        "select(.namespace | startswith($namespace))",
        &[("namespace", "_semantic")],
    ),
    (
        "Search titles by keyword",
        "search titles",
        Role::Search,
        "",
        "select(.title | test($keyword; \"i\"))",
        &[("keyword", "keyword")],
    ),
    (
        "Extract IDs and titles only",
        "IDs+titles",
        Role::Browse,
        "",
        "{id, title, namespace}",
        &[],
    ),
    (
        "Filter by memory type",
        "filter type",
        Role::Filter,
        "",
        "select(.memory_type == $memory_type)",
        &[("memory_type", "semantic")],
    ),
    (
        "Count by namespace",
        "count by namespace",
        Role::Analyze,
        "s",
        "group_by(.namespace) | map({namespace: .[0].namespace, count: length})",
        &[],
    ),
    (
        "Filter by tag",
        "filter tag",
        Role::Filter,
        "",
        "select(.tags | index($tag))",
        &[("tag", "TAG")],
    ),
    (
        "Sort by created date",
        "sort by date",
        Role::Analyze,
        "s",
        "sort_by(.created)",
        &[],
    ),
];

/// Recipes 9 and 10 at medium detail.
const MEMORY_MEDIUM: [Row; 2] = [
    (
        "Sort by confidence desc",
        "sort by confidence",
        Role::Analyze,
        "s",
        "sort_by(.confidence) | reverse",
        &[],
    ),
    (
        "Full-text search in content",
        "search content",
        Role::Search,
        "",
        "select(.content | test($keyword; \"i\"))",
        &[("keyword", "keyword")],
    ),
];

/// Recipes 9 and 10 at full detail.
const MEMORY_FULL: [Row; 2] = [
    (
        "Sort by confidence desc",
        "sort by confidence",
        Role::Analyze,
        "s",
        "sort_by(.provenance.confidence) | reverse",
        &[],
    ),
    (
        "Full-text search in content",
        "search content",
        Role::Search,
        "",
        "select(.content | test($keyword; \"i\"))",
        &[("keyword", "keyword")],
    ),
];

/// Recipes 9 and 10 at light detail.
const MEMORY_LIGHT: [Row; 2] = [
    (
        "List unique namespaces",
        "unique namespaces",
        Role::Browse,
        "s",
        "map(.namespace) | unique",
        &[],
    ),
    (
        "Count by memory_type",
        "count by type",
        Role::Analyze,
        "s",
        "group_by(.memory_type) | map({memory_type: .[0].memory_type, count: length})",
        &[],
    ),
];

/// The specification's recipe table, exactly (as rendered with the
/// default parameters).
pub(super) fn memory_recipes(detail: Detail) -> Vec<Recipe> {
    let adaptive = match detail {
        Detail::Light => MEMORY_LIGHT,
        Detail::Medium => MEMORY_MEDIUM,
        Detail::Full => MEMORY_FULL,
    };
    MEMORY_TABLE
        .into_iter()
        .chain(adaptive)
        .map(|(description, short, role, flags, filter, params)| {
            let mut program = RecipeProgram::new(flags, filter);
            for (k, v) in params {
                program = program.param(*k, *v);
            }
            Recipe {
                description: description.to_owned(),
                short: short.to_owned(),
                role,
                program,
                raw: false,
            }
        })
        .collect()
}
