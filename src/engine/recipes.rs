//! The ten jq recipes of a descriptor.
//!
//! Memory records (`id`, `title`, `namespace`, `memory_type`, ...) get the
//! specification's table verbatim, recipes 9 and 10 chosen by detail level,
//! when every record fits it (see [`RecordStats::memory_recipes_fit`]).
//! Any other records get ten recipes built from the fields they really have
//! (most common category value, score-like numbers, dates, a keyword taken
//! from the data), guarded so that every recipe runs without error under
//! jq 1.6 on the file it describes, whatever the records hold:
//!
//! * field names are written `.["name"]` unless they are plain identifiers
//!   that are no jq 1.6 keyword (`{module}` does not parse in jq 1.6);
//! * per-record programs on mixed records start with `objects |`, slurped
//!   ones with `map(objects) |`;
//! * a nested path whose parent may be no object (`provenance` a string in
//!   some records) is read with `?`;
//! * records nested deeper than jq 1.6's parser allows would stop every
//!   recipe at that line: then each recipe reads the lines as text (`-R`)
//!   and parses them in jq, a record it cannot parse staying a string;
//! * line records that hold groups of short lines are split back into
//!   lines first, so line recipes see lines.

use std::collections::HashMap;

use serde_json::Value;

use super::descriptor::{Detail, JqRecipe};
use super::records::{RecordKind, RecordsView};
use super::stats::{FieldStats, RecordStats};

/// How many records are sampled to pick a keyword for search recipes.
const KEYWORD_SAMPLE: usize = 200;

/// Quotes `s` for a POSIX shell, leaving it bare when that is safe.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Builds the ten recipes for a file.
pub(crate) fn build(
    file: &str,
    stats: &RecordStats,
    kind: RecordKind,
    detail: Detail,
    records: RecordsView<'_>,
) -> Vec<JqRecipe> {
    let file = shell_quote(file);
    if kind == RecordKind::Json && stats.memory_recipes_fit(detail) {
        return memory_recipes(&file, detail);
    }
    let mut b = Builder::new(file);
    b.raw = stats.too_deep > 0;
    match kind {
        RecordKind::Lines => line_recipes(&mut b, records, false),
        RecordKind::LineGroups => line_recipes(&mut b, records, true),
        RecordKind::Json if stats.objects > 0 => object_recipes(&mut b, stats, records),
        RecordKind::Json => scalar_recipes(&mut b, stats),
    }
    b.universal(stats);
    b.finish()
}

/// The specification's recipe table, exactly.
fn memory_recipes(file: &str, detail: Detail) -> Vec<JqRecipe> {
    let mut table: Vec<(&str, &str)> = vec![
        (
            "List titles with namespaces",
            "jq -r '[.title, .namespace] | @tsv'",
        ),
        (
            "Filter by namespace prefix",
            "jq 'select(.namespace | startswith(\"_semantic\"))'",
        ),
        (
            "Search titles by keyword",
            "jq 'select(.title | test(\"keyword\"; \"i\"))'",
        ),
        ("Extract IDs and titles only", "jq '{id, title, namespace}'"),
        (
            "Filter by memory type",
            "jq 'select(.memory_type == \"semantic\")'",
        ),
        (
            "Count by namespace",
            "jq -s 'group_by(.namespace) | map({namespace: .[0].namespace, count: length})'",
        ),
        ("Filter by tag", "jq 'select(.tags | index(\"TAG\"))'"),
        ("Sort by created date", "jq -s 'sort_by(.created)'"),
    ];
    match detail {
        Detail::Medium => table.extend([
            (
                "Sort by confidence desc",
                "jq -s 'sort_by(.confidence) | reverse'",
            ),
            (
                "Full-text search in content",
                "jq 'select(.content | test(\"keyword\"; \"i\"))'",
            ),
        ]),
        Detail::Full => table.extend([
            (
                "Sort by confidence desc",
                "jq -s 'sort_by(.provenance.confidence) | reverse'",
            ),
            (
                "Full-text search in content",
                "jq 'select(.content | test(\"keyword\"; \"i\"))'",
            ),
        ]),
        Detail::Light => table.extend([
            ("List unique namespaces", "jq -s 'map(.namespace) | unique'"),
            (
                "Count by memory_type",
                "jq -s 'group_by(.memory_type) | map({memory_type: .[0].memory_type, count: length})'",
            ),
        ]),
    }
    table
        .into_iter()
        .map(|(description, jq)| JqRecipe {
            description: description.to_owned(),
            command: format!("tail -n +2 {file} | {jq}"),
        })
        .collect()
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

struct Builder {
    file: String,
    out: Vec<JqRecipe>,
    /// Prefix for per-record programs (`objects | ` when records are mixed).
    each: String,
    /// Prefix for slurped programs (`map(objects) | `).
    all: String,
    /// Read lines as text and parse them in jq (some record is too deep for
    /// jq's parser).
    raw: bool,
}

/// Parses a line read as text; a line jq cannot parse stays a string.
const PARSE_LINE: &str = "(. as $line | try fromjson catch $line)";

/// A line record as its lines: one `{line, text}` per non-empty line of a
/// record that holds a group of them.
const SPLIT_LINES: &str = ".line as $n | (.text | split(\"\\n\")) as $t \
    | range(0; $t | length) | select($t[.] != \"\") | {line: ($n + .), text: $t[.]}";

impl Builder {
    fn new(file: String) -> Self {
        Builder {
            file,
            out: Vec::new(),
            each: String::new(),
            all: String::new(),
            raw: false,
        }
    }

    fn push(&mut self, description: String, flags: &str, program: String) {
        if self.out.len() >= 10 || self.out.iter().any(|r| r.description == description) {
            return;
        }
        let (flags, program) = if self.raw {
            raw_form(flags, &program)
        } else {
            (flags.to_owned(), program)
        };
        let program = format!("'{}'", program.replace('\'', "'\\''"));
        let jq = if flags.is_empty() {
            format!("jq {program}")
        } else {
            format!("jq {flags} {program}")
        };
        self.out.push(JqRecipe {
            description,
            command: format!("tail -n +2 {} | {jq}", self.file),
        });
    }

    fn each(&mut self, description: String, flags: &str, program: String) {
        let p = format!("{}{program}", self.each);
        self.push(description, flags, p);
    }

    fn all(&mut self, description: String, flags: &str, program: String) {
        let p = format!("{}{program}", self.all);
        let flags = if flags.is_empty() {
            "-s".to_owned()
        } else {
            format!("-s {flags}")
        };
        self.push(description, &flags, p);
    }

    /// Recipes that fit any records; they fill the list up to ten.
    fn universal(&mut self, stats: &RecordStats) {
        self.push("Count records".into(), "-s", "length".into());
        self.push("Show the first 5 records".into(), "-s", ".[:5]".into());
        self.push("Show the last 5 records".into(), "-s", ".[-5:]".into());
        if stats.objects > 0 {
            self.push(
                "List all field names".into(),
                "-s",
                "map(objects | keys) | add // [] | unique".into(),
            );
        }
        self.push("Show the first record".into(), "-s", ".[0]".into());
        self.push("Every record on one line".into(), "-c", ".".into());
        self.push(
            "Count distinct records".into(),
            "-s",
            "unique | length".into(),
        );
        self.push(
            "Count records by JSON type".into(),
            "-s",
            "group_by(type) | map({type: (.[0] | type), count: length})".into(),
        );
        self.push(
            "Size in characters of each record".into(),
            "",
            "tojson | length".into(),
        );
        self.push(
            "Every 10th record".into(),
            "-s",
            "[.[range(0; length; 10)]]".into(),
        );
        self.push("All records as one JSON array".into(), "-s", ".".into());
    }

    fn finish(self) -> Vec<JqRecipe> {
        self.out
    }
}

/// `flags` and `program` for reading the lines as text: `-R`, each line
/// parsed by [`PARSE_LINE`]; a slurping recipe (`-s`) collects them with
/// `-n` and `[inputs | ...]` instead.
fn raw_form(flags: &str, program: &str) -> (String, String) {
    let mut out: Vec<&str> = flags.split_whitespace().filter(|f| *f != "-s").collect();
    let slurp = out.len() < flags.split_whitespace().count();
    if slurp {
        out.extend(["-n", "-R"]);
        (
            out.join(" "),
            format!("[inputs | {PARSE_LINE}] | {program}"),
        )
    } else {
        out.push("-R");
        (out.join(" "), format!("{PARSE_LINE} | {program}"))
    }
}

/// Picks a frequent word (4+ letters, not in every text) from sample texts.
fn pick_keyword<'t>(texts: impl Iterator<Item = &'t str>) -> Option<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    let mut docs = 0usize;
    for (n, text) in texts.enumerate() {
        docs = n + 1;
        let mut seen: Vec<String> = Vec::new();
        for word in text.split(|c: char| !c.is_alphabetic()) {
            if word.chars().count() < 4 {
                continue;
            }
            let w = word.to_lowercase();
            if seen.contains(&w) {
                continue;
            }
            let e = counts.entry(w.clone()).or_default();
            e.0 += 1;
            e.1 = e.1.max(n);
            seen.push(w);
            if seen.len() > 64 {
                break;
            }
        }
    }
    counts
        .into_iter()
        .filter(|(_, (c, _))| docs < 2 || *c < docs)
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| b.0.cmp(&a.0)))
        .map(|(w, _)| w)
}

/// A regex-safe form of a keyword (letters only, so nothing to escape).
fn keyword_or_default(k: Option<String>) -> String {
    k.filter(|k| k.chars().all(char::is_alphabetic))
        .unwrap_or_else(|| "keyword".to_owned())
}

/// Recipes for line records; `grouped`: some records hold several lines,
/// split back into lines before every recipe.
fn line_recipes(b: &mut Builder, records: RecordsView<'_>, grouped: bool) {
    if grouped {
        b.each = format!("{SPLIT_LINES} | ");
        b.all = format!("map({SPLIT_LINES}) | ");
    }
    let texts: Vec<String> = records
        .iter()
        .take(KEYWORD_SAMPLE)
        .filter_map(|r| serde_json::from_str::<Value>(r).ok())
        .filter_map(|v| v.get("text").and_then(Value::as_str).map(str::to_owned))
        .collect();
    // Lines, not groups: a word in every group may be in few lines.
    let lines = texts
        .iter()
        .flat_map(|t| t.split('\n'))
        .take(KEYWORD_SAMPLE * 4);
    let kw = keyword_or_default(pick_keyword(lines));
    let kwl = lit(&kw);
    b.each("Print the text".into(), "-r", ".text".into());
    b.each(
        format!("Search lines for \"{kw}\" (with line numbers)"),
        "-r",
        format!("select(.text | test({kwl}; \"i\")) | \"\\(.line): \\(.text)\""),
    );
    b.all(
        format!("Count lines containing \"{kw}\""),
        "",
        format!("map(select(.text | test({kwl}; \"i\"))) | length"),
    );
    b.each(
        "Lines 1 to 20".into(),
        "-r",
        "select(.line >= 1 and .line <= 20) | .text".into(),
    );
    b.all(
        "Last 20 non-empty lines".into(),
        "-r",
        ".[-20:][] | .text".into(),
    );
    b.all("Count non-empty lines".into(), "", "length".into());
    b.all(
        "Most repeated lines (top 20)".into(),
        "",
        "group_by(.text) | map({text: .[0].text, count: length}) | sort_by(-.count) | .[:20]"
            .into(),
    );
    b.each(
        "Lines that are not blank".into(),
        "-c",
        "select(.text | test(\"\\\\S\"))".into(),
    );
    b.all(
        "Longest lines (top 10)".into(),
        "",
        "sort_by(.text | length) | reverse | .[:10]".into(),
    );
    b.all(
        "First 20 non-empty lines".into(),
        "-r",
        ".[:20][] | .text".into(),
    );
}

/// Field roles found in object records.
struct Roles<'s> {
    id: Option<&'s str>,
    label: Option<&'s str>,
    text: Option<&'s str>,
    category: Option<(&'s str, String)>,
    number: Option<String>,
    number_name: Option<&'s str>,
    date: Option<&'s str>,
}

// Well-known names of each role, most telling first.
const ID_NAMES: [&str; 4] = ["id", "uuid", "key", "_id"];
const LABEL_NAMES: [&str; 7] = [
    "title", "name", "subject", "summary", "label", "message", "msg",
];
const DATE_NAMES: [&str; 7] = [
    "created",
    "created_at",
    "timestamp",
    "time",
    "date",
    "modified",
    "updated_at",
];
const TEXT_NAMES: [&str; 6] = [
    "content",
    "text",
    "body",
    "message",
    "description",
    "summary",
];

/// The role each field plays, as far as the statistics tell.
fn roles(stats: &RecordStats) -> Roles<'_> {
    let fields = RoleFinder { stats };
    let id = fields.id();
    let date = fields.date();
    let (number, number_name) = fields.number(id);
    Roles {
        id,
        label: fields.common_string(&LABEL_NAMES),
        text: fields.text(date),
        category: fields.category(),
        number,
        number_name,
        date,
    }
}

/// Finds each role among the fields of object records: a well-known name
/// first, else any field that fits.
struct RoleFinder<'s> {
    stats: &'s RecordStats,
}

impl<'s> RoleFinder<'s> {
    /// Present in at least half of the object records.
    fn common(&self, f: &FieldStats) -> bool {
        f.present * 2 >= self.stats.objects
    }

    /// The first of `names` that is a common field holding strings.
    fn common_string(&self, names: &[&str]) -> Option<&'s str> {
        names.iter().find_map(|n| {
            self.stats
                .fields
                .get_key_value(*n)
                .filter(|(_, f)| f.strings > 0 && self.common(f))
                .map(|(k, _)| k.as_str())
        })
    }

    /// A common field with a well-known id name, else the first common
    /// `*_id` or `*Id` field.
    fn id(&self) -> Option<&'s str> {
        let fields = &self.stats.fields;
        ID_NAMES
            .iter()
            .find_map(|n| {
                fields
                    .get_key_value(*n)
                    .filter(|(_, f)| self.common(f))
                    .map(|(k, _)| k.as_str())
            })
            .or_else(|| {
                fields
                    .iter()
                    .find(|(k, f)| self.common(f) && (k.ends_with("_id") || k.ends_with("Id")))
                    .map(|(k, _)| k.as_str())
            })
    }

    /// A field with a well-known date name whose strings are mostly dates,
    /// else the first common field whose values are mostly dates.
    fn date(&self) -> Option<&'s str> {
        let fields = &self.stats.fields;
        DATE_NAMES
            .iter()
            .find_map(|n| {
                fields
                    .get_key_value(*n)
                    .filter(|(_, f)| f.dates > 0 && f.dates * 2 >= f.strings)
                    .map(|(k, _)| k.as_str())
            })
            .or_else(|| {
                fields
                    .iter()
                    .find(|(_, f)| f.dates > 0 && f.dates * 2 >= f.present && self.common(f))
                    .map(|(k, _)| k.as_str())
            })
    }

    /// A common string field with a well-known text name, else the string
    /// field (the date aside) with the longest strings on average.
    fn text(&self, date: Option<&str>) -> Option<&'s str> {
        self.common_string(&TEXT_NAMES).or_else(|| {
            self.stats
                .fields
                .iter()
                .filter(|(k, f)| f.strings > 0 && Some(k.as_str()) != date)
                .max_by_key(|(_, f)| f.string_bytes / f.strings.max(1))
                .map(|(k, _)| k.as_str())
        })
    }

    /// The category field and its most common value.
    fn category(&self) -> Option<(&'s str, String)> {
        let name = self.stats.category_field()?;
        let (top, _) = *self.stats.fields.get(name)?.top_values(1).first()?;
        Some((name, top.to_owned()))
    }

    /// The score-like field, else the first common numeric field that is
    /// not the id: its jq path and its name.
    fn number(&self, id: Option<&str>) -> (Option<String>, Option<&'s str>) {
        match self.stats.score_field() {
            // `?`: in some records `provenance` may be no object.
            Some(("provenance.confidence", _)) => (
                Some(".provenance.confidence?".to_owned()),
                Some("provenance.confidence"),
            ),
            Some((k, _)) => (Some(path(k)), Some(k)),
            None => self
                .stats
                .fields
                .iter()
                .find(|(k, f)| f.numbers > 0 && self.common(f) && Some(k.as_str()) != id)
                .map(|(k, _)| (Some(path(k)), Some(k.as_str())))
                .unwrap_or((None, None)),
        }
    }
}

/// Recipes for records that are (mostly) objects, built on their roles;
/// the order is the order they are offered in.
fn object_recipes(b: &mut Builder, stats: &RecordStats, records: RecordsView<'_>) {
    // Records jq reads as strings (too deep) make the records mixed too.
    if stats.objects < stats.count || stats.too_deep > 0 {
        b.each = "objects | ".into();
        b.all = "map(objects) | ".into();
    }
    let r = roles(stats);
    let shown = shown_fields(&r, stats);
    if !shown.is_empty() {
        b.each(
            format!("Extract {} only", shown.join(", ")),
            "-c",
            projection(&shown),
        );
    }
    if let Some((cat, value)) = &r.category {
        b.each(
            format!("Filter by {cat} (most common value shown)"),
            "-c",
            format!("select({} == {})", path(cat), lit(value)),
        );
    }
    if let Some(text) = r.text {
        search_recipe(b, text, records);
    }
    if let Some((cat, _)) = &r.category {
        category_recipes(b, cat);
    }
    if let (Some(num), Some(name)) = (&r.number, r.number_name) {
        number_recipes(b, num, name);
    }
    if let Some(date) = r.date {
        b.all(
            format!("Sort by {date}"),
            "",
            format!("sort_by({})", path(date)),
        );
    }
    if let Some(label) = r.label {
        b.each(
            format!("List {label} only"),
            "-r",
            format!("{} | strings", path(label)),
        );
    }
    if let Some((name, _)) = stats.fields.iter().find(|(_, f)| f.present < stats.objects) {
        b.each(
            format!("Records that have {name}"),
            "-c",
            format!("select(has({}))", lit(name)),
        );
    }
}

/// The id, label and category fields, each once; else the first three fields.
fn shown_fields<'s>(r: &Roles<'s>, stats: &'s RecordStats) -> Vec<&'s str> {
    let mut shown: Vec<&str> = Vec::new();
    for f in [r.id, r.label, r.category.as_ref().map(|c| c.0)]
        .into_iter()
        .flatten()
    {
        if !shown.contains(&f) {
            shown.push(f);
        }
    }
    if shown.is_empty() {
        stats.fields.keys().take(3).map(String::as_str).collect()
    } else {
        shown
    }
}

/// A case-insensitive search of the text field, for a keyword taken from
/// the first records.
fn search_recipe(b: &mut Builder, text: &str, records: RecordsView<'_>) {
    let sample = records
        .iter()
        .take(KEYWORD_SAMPLE)
        .filter_map(|rec| serde_json::from_str::<Value>(rec).ok())
        .filter_map(|v| v.get(text).and_then(Value::as_str).map(str::to_owned))
        .collect::<Vec<_>>();
    let kw = keyword_or_default(pick_keyword(sample.iter().map(String::as_str)));
    b.each(
        format!("Search {text} for \"{kw}\" (case-insensitive)"),
        "-c",
        format!(
            "select({} | strings | test({}; \"i\"))",
            path(text),
            lit(&kw)
        ),
    );
}

/// Counts by category, and its distinct values.
fn category_recipes(b: &mut Builder, cat: &str) {
    b.all(
        format!("Count by {cat}"),
        "",
        format!(
            "group_by({p}) | map({{{k}: .[0]{s}, count: length}})",
            p = path(cat),
            s = suffix(cat),
            k = lit(cat)
        ),
    );
    b.all(
        format!("List unique values of {cat}"),
        "",
        format!("map({}) | unique", path(cat)),
    );
}

/// The top ten by the numeric field `num` (a jq path), and its min, max and mean.
fn number_recipes(b: &mut Builder, num: &str, name: &str) {
    b.all(
        format!("Sort by {name} descending (top 10)"),
        "",
        format!("sort_by({num}) | reverse | .[:10]"),
    );
    b.all(
        format!("Min, max and mean of {name}"),
        "",
        format!(
            "map({num} | numbers) | {{min: min, max: max, mean: (if length > 0 then add / length else null end)}}"
        ),
    );
}

fn scalar_recipes(b: &mut Builder, stats: &RecordStats) {
    if stats.strings > 0 {
        b.push(
            "Search by keyword (case-insensitive)".into(),
            "-r",
            "strings | select(test(\"keyword\"; \"i\"))".into(),
        );
        b.push(
            "Count by value, most frequent first".into(),
            "-s",
            "group_by(.) | map({value: .[0], count: length}) | sort_by(-.count)".into(),
        );
    }
    if stats.numbers > 0 {
        b.push(
            "Min, max and mean".into(),
            "-s",
            "map(numbers) | {min: min, max: max, mean: (if length > 0 then add / length else null end)}".into(),
        );
    }
    b.push("Unique values".into(), "-s", "unique".into());
    b.push("Sort values".into(), "-s", "sort".into());
    b.push("Print raw values".into(), "-r", ".".into());
}
