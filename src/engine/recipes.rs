//! The ten recipes of a descriptor, each built once as a [`RecipeProgram`]
//! (jq flags, a filter whose parameters are jq variables such as
//! `$keyword`, and each parameter's default value). The same list gives the
//! header's `recipes` (what `lro_extract` runs, parameters passed as jq
//! variables) and the descriptor's `jq_recipes` (the shell command
//! [`command`] renders: each `$name` replaced by the JSON string literal of
//! its value).
//!
//! Parameters are strings only (`$namespace`, `$keyword`, `$tag`,
//! `$memory_type` for memories; `$keyword`, `$value`, `$key` for other
//! records). Counts such as "the first 20" are fixed in the filter:
//! `lro_extract` pages its output itself (`offset`, `limit`).
//!
//! Memory records (`id`, `title`, `namespace`, `memory_type`, ...) get the
//! specification's table verbatim, recipes 9 and 10 chosen by detail level,
//! when the records mostly look like memories and the table runs on all of
//! them (see [`RecordStats::memory_recipes_fit`]). Any other records get ten
//! recipes built from what they really hold (`objects`: fields and their
//! roles; `shapes`: lines, trees, one large object, one long text), each
//! answering a question with output much smaller than the data, guarded so
//! that every recipe runs without error under jq 1.6 on the file it
//! describes, whatever the records hold:
//!
//! * field names are written `.["name"]` unless they are plain identifiers
//!   that are no jq 1.6 keyword (`{module}` does not parse in jq 1.6);
//!   fields with names longer than [`MAX_NAME_CHARS`] are not used;
//! * per-record programs on mixed records start with `objects |`, slurped
//!   ones with `map(objects) |`;
//! * a nested path whose parent may be no object (`provenance` a string in
//!   some records) is read with `?`;
//! * records nested deeper than jq 1.6's parser allows would stop every
//!   recipe at that line: then each shell command reads the lines as text
//!   (`-R`) and parses them in jq, a record it cannot parse staying a
//!   string. This is the one case where a command uses other flags than
//!   `-s`, `-r`, `-c`; its header program is the plain one, which the
//!   extractor, like jq, cannot run past such a record;
//! * search terms are short real words taken from the data (`keyword`),
//!   else the spec's placeholder `keyword`, named as one.

mod keyword;
mod memory;
mod objects;
mod roles;
mod shapes;

use super::descriptor::{Detail, JqRecipe, RecipeProgram, shell_command, shell_quote};
use super::records::{RecordKind, RecordsView};
use super::stats::RecordStats;

/// How many records are sampled to pick a keyword for search recipes.
const KEYWORD_SAMPLE: usize = 200;
/// Longest field name or value a recipe quotes; longer ones are not used.
pub(crate) const MAX_NAME_CHARS: usize = 32;

/// What a recipe does, for the guidance's Browse / Filter / Analyze lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Shows records or parts of them.
    Browse,
    /// Selects records by a value.
    Filter,
    /// Selects records by a search term.
    Search,
    /// Counts, groups, sorts or measures.
    Analyze,
}

/// One recipe: what it does and the program that does it.
#[derive(Debug, Clone)]
pub(crate) struct Recipe {
    /// Human-readable description.
    pub description: String,
    /// Short name for the guidance's recipe list.
    pub short: String,
    pub role: Role,
    pub program: RecipeProgram,
    /// The shell command reads lines as text (`-R`): some record is too
    /// deep for jq's parser.
    pub raw: bool,
}

/// Builds the ten recipes for the records.
pub(crate) fn build(
    stats: &RecordStats,
    kind: RecordKind,
    detail: Detail,
    records: RecordsView<'_>,
) -> Vec<Recipe> {
    if is_memory(stats, kind, detail) {
        return memory::memory_recipes(detail);
    }
    let mut b = Builder::new(stats.too_deep > 0);
    match kind {
        RecordKind::Lines | RecordKind::LineGroups if shapes::is_long_text(records) => {
            shapes::long_text_recipes(&mut b, records, kind == RecordKind::LineGroups)
        }
        RecordKind::Lines => shapes::line_recipes(&mut b, records, false),
        RecordKind::LineGroups => shapes::line_recipes(&mut b, records, true),
        RecordKind::Json if stats.objects > 0 => objects::object_recipes(&mut b, stats, records),
        RecordKind::Json if stats.strings > 0 && shapes::is_long_text(records) => {
            shapes::long_string_recipes(&mut b, records)
        }
        RecordKind::Json => objects::scalar_recipes(&mut b, stats),
    }
    b.universal(stats);
    b.out
}

/// Whether the records get the spec's memory table.
pub(crate) fn is_memory(stats: &RecordStats, kind: RecordKind, detail: Detail) -> bool {
    kind == RecordKind::Json && stats.memory_recipes_fit(detail)
}

/// The descriptor's `jq_recipes`: each recipe's shell command over `file`.
pub(crate) fn jq_recipes(file: &str, recipes: &[Recipe]) -> Vec<JqRecipe> {
    let file = shell_quote(file);
    recipes
        .iter()
        .map(|r| JqRecipe {
            description: r.description.clone(),
            command: command(&file, r),
        })
        .collect()
}

/// `tail -n +2 FILE | jq FLAGS 'FILTER'` for a recipe, each parameter
/// replaced by the JSON string literal of its value; `file` already quoted.
/// A recipe over records too deep for jq's parser reads lines as text.
pub(crate) fn command(file: &str, recipe: &Recipe) -> String {
    let p = &recipe.program;
    if !recipe.raw {
        return shell_command(file, &p.flag_words().join(" "), &p.rendered());
    }
    let (flags, filter) = raw_form(&p.flag_words(), &p.rendered());
    shell_command(file, &flags, &filter)
}

/// jq 1.6's keywords (its lexer's list, `__loc__` aside): none can stand
/// alone as an object key (`{module}` is a syntax error), so fields of
/// these names are always quoted.
const JQ_KEYWORDS: [&str; 19] = [
    "and", "or", "not", "if", "then", "elif", "else", "end", "as", "def", "reduce", "foreach",
    "try", "catch", "label", "import", "include", "module", "break",
];

/// `.name`, or `.["name"]` when the name is not a plain identifier.
fn path(name: &str) -> String {
    if is_ident(name) {
        format!(".{name}")
    } else {
        format!(".[{}]", lit(name))
    }
}

/// `path` for use after another path: `.name`, or `["name"]` (jq 1.6 has no `.["name"]` there).
fn suffix(name: &str) -> String {
    if is_ident(name) {
        format!(".{name}")
    } else {
        format!("[{}]", lit(name))
    }
}

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !JQ_KEYWORDS.contains(&name)
        && name != "__loc__"
}

/// A jq string literal (JSON escaping is valid jq; `\(` cannot appear).
fn lit(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Whether a field name or value is short enough to quote in a recipe.
fn quotable(s: &str) -> bool {
    s.chars().count() <= MAX_NAME_CHARS && !s.chars().any(char::is_control)
}

/// `{a, b}` shorthand where possible, else `{"a": .["a"]}`.
fn projection(fields: &[&str]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|f| {
            if is_ident(f) {
                (*f).to_owned()
            } else {
                format!("{}: {}", lit(f), path(f))
            }
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Collects recipes, at most ten, each description once.
struct Builder {
    out: Vec<Recipe>,
    /// Prefix for per-record programs (`objects | ` when records are mixed).
    each: String,
    /// Prefix for slurped programs (`map(objects) | `).
    all: String,
    /// Commands read lines as text and parse them in jq (some record is
    /// too deep for jq's parser).
    raw: bool,
}

/// Parses a line read as text; a line jq cannot parse stays a string.
const PARSE_LINE: &str = "(. as $line | try fromjson catch $line)";

impl Builder {
    fn new(raw: bool) -> Self {
        Builder {
            out: Vec::new(),
            each: String::new(),
            all: String::new(),
            raw,
        }
    }

    /// Adds a recipe of `flags` (letters) and `filter`, with parameters.
    fn push_with(
        &mut self,
        (description, short): (String, &str),
        role: Role,
        flags: &str,
        filter: String,
        params: &[(&str, &str)],
    ) {
        if self.out.len() >= 10 || self.out.iter().any(|r| r.description == description) {
            return;
        }
        let mut program = RecipeProgram::new(flags, filter);
        for (k, v) in params {
            program = program.param(*k, *v);
        }
        self.out.push(Recipe {
            description,
            short: short.to_owned(),
            role,
            program,
            raw: self.raw,
        });
    }

    fn push(&mut self, description: String, short: &str, role: Role, flags: &str, filter: String) {
        self.push_with((description, short), role, flags, filter, &[]);
    }

    fn each(&mut self, description: String, short: &str, role: Role, flags: &str, filter: String) {
        let p = format!("{}{filter}", self.each);
        self.push(description, short, role, flags, p);
    }

    fn all(&mut self, description: String, short: &str, role: Role, flags: &str, filter: String) {
        let p = format!("{}{filter}", self.all);
        self.push(description, short, role, &format!("s{flags}"), p);
    }

    /// Recipes that fit any records; they fill the list up to ten. Each
    /// prints a count or a few records; when there are few records (a few
    /// records may be all the data), the counts come first.
    fn universal(&mut self, stats: &RecordStats) {
        use Role::*;
        let mut list: Vec<(&str, &str, Role, &str)> = vec![
            ("Count records", "count", Analyze, "length"),
            ("Show the first 5 records", "first 5", Browse, ".[:5]"),
            ("Show the last 5 records", "last 5", Browse, ".[-5:]"),
            (
                "List all field names",
                "field names",
                Browse,
                "map(objects | keys) | add // [] | unique",
            ),
            ("Show the first record", "first record", Browse, ".[0]"),
            (
                "Count distinct records",
                "count distinct",
                Analyze,
                "unique | length",
            ),
            (
                "Count records by JSON type",
                "count by type",
                Analyze,
                "group_by(type) | map({type: (.[0] | type), count: length})",
            ),
            (
                "Sizes in characters: smallest, largest, total",
                "sizes",
                Analyze,
                "map(tojson | length) | {min: min, max: max, total: add}",
            ),
            (
                "Every 100th record (first 10)",
                "sample",
                Browse,
                "[.[range(0; length; 100)]] | .[:10]",
            ),
            ("Show records 6 to 10", "records 6-10", Browse, ".[5:10]"),
        ];
        if stats.objects == 0 {
            list.retain(|r| r.1 != "field names");
        }
        if stats.count <= 10 {
            // Stable: the counts, in order, then the rest.
            list.sort_by_key(|r| r.2 != Analyze);
        }
        for (description, short, role, filter) in list {
            self.push(description.into(), short, role, "s", filter.into());
        }
    }

    /// The first recipe of `role`, as `(number, short name)`.
    #[cfg(test)]
    fn first(&self, role: Role) -> Option<(usize, &str)> {
        first_of(&self.out, role)
    }
}

/// The first recipe of `role` in `recipes`: its number (1-based) and short
/// name.
pub(crate) fn first_of(recipes: &[Recipe], role: Role) -> Option<(usize, &str)> {
    recipes
        .iter()
        .position(|r| r.role == role)
        .map(|i| (i + 1, recipes[i].short.as_str()))
}

/// `flags` and `filter` for reading the lines as text: `-R`, each line
/// parsed by [`PARSE_LINE`]; a slurping recipe (`-s`) collects them with
/// `-n` and `[inputs | ...]` instead.
fn raw_form(flags: &[String], filter: &str) -> (String, String) {
    let mut out: Vec<&str> = flags
        .iter()
        .map(String::as_str)
        .filter(|f| *f != "-s")
        .collect();
    if out.len() < flags.len() {
        out.extend(["-n", "-R"]);
        (out.join(" "), format!("[inputs | {PARSE_LINE}] | {filter}"))
    } else {
        out.push("-R");
        (out.join(" "), format!("{PARSE_LINE} | {filter}"))
    }
}

#[cfg(test)]
mod tests;
