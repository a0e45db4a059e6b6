//! Recipes for text: line records (one per line, or per group of short
//! lines), and one long text (a single long line, or one long string).

use serde_json::Value;

use super::super::records::RecordsView;
use super::objects::sample_keyword;
use super::{Builder, KEYWORD_SAMPLE, Role, keyword};

/// A text is long when its record holds more characters than this.
const LONG_TEXT_BYTES: usize = 2000;

/// A line record as its lines: one `{line, text}` per non-empty line of a
/// record that holds a group of them.
const SPLIT_LINES: &str = ".line as $n | (.text | split(\"\\n\")) as $t \
    | range(0; $t | length) | select($t[.] != \"\") | {line: ($n + .), text: $t[.]}";

/// Whether the records are one to three long texts, where per-line recipes
/// would print the whole data.
pub(super) fn is_long_text(records: RecordsView<'_>) -> bool {
    let n = records.len();
    (1..=3).contains(&n) && records.iter().all(|r| r.len() > LONG_TEXT_BYTES)
}

/// The keyword and its parameter value, and how the description names it.
fn search_term(kw: Option<String>) -> (String, String) {
    match kw {
        Some(k) => (format!("\"{k}\""), k),
        None => (
            "a term (\"keyword\" is a placeholder: set yours)".to_owned(),
            "keyword".to_owned(),
        ),
    }
}

/// Recipes for line records; `grouped`: some records hold several lines,
/// split back into lines before every recipe.
pub(super) fn line_recipes(b: &mut Builder, records: RecordsView<'_>, grouped: bool) {
    use Role::*;
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
    let (named, kw) = search_term(keyword::pick(lines));
    let kw: &str = &kw;
    let each = b.each.clone();
    let all = b.all.clone();
    b.push_with(
        (
            format!("Search lines for {named} (with line numbers)"),
            "search lines",
        ),
        Search,
        "r",
        format!("{each}select(.text | test($keyword; \"i\")) | \"\\(.line): \\(.text)\""),
        &[("keyword", kw)],
    );
    b.push_with(
        (format!("Count lines containing {named}"), "count matches"),
        Analyze,
        "s",
        format!("{all}map(select(.text | test($keyword; \"i\"))) | length"),
        &[("keyword", kw)],
    );
    b.each(
        "Lines 1 to 20".into(),
        "lines 1-20",
        Browse,
        "r",
        "select(.line >= 1 and .line <= 20) | .text".into(),
    );
    b.all(
        "Last 20 non-empty lines".into(),
        "last 20",
        Browse,
        "r",
        ".[-20:][] | .text".into(),
    );
    b.all(
        "Count non-empty lines".into(),
        "count lines",
        Analyze,
        "",
        "length".into(),
    );
    line_analysis(b);
}

/// Line recipes that count, group and measure.
fn line_analysis(b: &mut Builder) {
    use Role::*;
    b.all(
        "Most repeated lines (top 20)".into(),
        "repeated lines",
        Analyze,
        "c",
        "group_by(.text) | map({text: .[0].text, count: length}) | sort_by(-.count) | .[:20][]"
            .into(),
    );
    b.all(
        "Most frequent words (top 20)".into(),
        "frequent words",
        Analyze,
        "c",
        "[.[].text | scan(\"[A-Za-z]{4,}\") | ascii_downcase] | group_by(.) | map({word: .[0], count: length}) | sort_by(-.count) | .[:20][]".into(),
    );
    b.all(
        "Longest lines (top 10)".into(),
        "longest lines",
        Analyze,
        "c",
        "sort_by(.text | length) | reverse | .[:10][]".into(),
    );
    b.all(
        "Lines 21 to 40".into(),
        "lines 21-40",
        Browse,
        "r",
        ".[20:40][] | .text".into(),
    );
}

/// Recipes for one to three long line records (`grouped`: records hold
/// groups of lines): length, pieces, matches in context.
pub(super) fn long_text_recipes(b: &mut Builder, records: RecordsView<'_>, grouped: bool) {
    let kw = sample_keyword(records, |v| {
        v.get("text").and_then(Value::as_str).map(str::to_owned)
    });
    text_recipes(b, ".text", kw, grouped);
}

/// Recipes for one to three long strings.
pub(super) fn long_string_recipes(b: &mut Builder, records: RecordsView<'_>) {
    let kw = sample_keyword(records, |v| v.as_str().map(str::to_owned));
    b.each = "strings | ".into();
    text_recipes(b, ".", kw, false);
}

/// Recipes over the long text at `text` (a jq path) of each record.
fn text_recipes(b: &mut Builder, text: &str, kw: Option<String>, grouped: bool) {
    use Role::*;
    let (named, kw) = search_term(kw);
    let kw: &str = &kw;
    let e = b.each.clone();
    b.each(
        "Length in characters".into(),
        "length",
        Analyze,
        "",
        format!("{text} | length"),
    );
    b.each(
        "The first 500 characters".into(),
        "start",
        Browse,
        "r",
        format!("{text}[:500]"),
    );
    b.each(
        "The last 500 characters".into(),
        "end",
        Browse,
        "r",
        format!("{text}[-500:]"),
    );
    b.push_with(
        (format!("Count matches of {named}"), "count matches"),
        Analyze,
        "",
        format!("{e}[{text} | match($keyword; \"gi\")] | length"),
        &[("keyword", kw)],
    );
    b.push_with(
        (format!("Each match of {named} with 80 characters around it (first 20)"), "matches in context"),
        Search,
        "r",
        format!("{e}{text} as $s | [$s | match($keyword; \"gi\").offset] | .[:20][] | $s[(if . > 80 then . - 80 else 0 end):(. + 80)]"),
        &[("keyword", kw)],
    );
    text_pieces(b, text, grouped);
}

/// Pieces of a long text and its words.
fn text_pieces(b: &mut Builder, text: &str, grouped: bool) {
    use Role::*;
    b.each(
        "Characters 500 to 1500".into(),
        "middle",
        Browse,
        "r",
        format!("{text}[500:1500]"),
    );
    b.each(
        "Count words".into(),
        "count words",
        Analyze,
        "",
        format!("[{text} | scan(\"[^\\\\s]+\")] | length"),
    );
    b.each(
        "Most frequent words (top 20)".into(),
        "frequent words",
        Analyze,
        "c",
        format!("[{text} | scan(\"[A-Za-z]{{4,}}\") | ascii_downcase] | group_by(.) | map({{word: .[0], count: length}}) | sort_by(-.count) | .[:20][]"),
    );
    if grouped {
        b.each(
            "Count lines".into(),
            "count lines",
            Analyze,
            "",
            format!("{text} | split(\"\\n\") | length"),
        );
        b.each(
            "The first 10 lines".into(),
            "first lines",
            Browse,
            "r",
            format!("{text} | split(\"\\n\") | .[:10][]"),
        );
    } else {
        b.each(
            "The first 10 sentences".into(),
            "sentences",
            Browse,
            "r",
            format!("{text} | split(\". \") | .[:10][]"),
        );
    }
}
