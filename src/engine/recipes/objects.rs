//! Recipes for JSON records: objects (by the roles their fields play,
//! found in `roles`), trees of objects, one large object, and scalars: one
//! table of recipe builders per record shape, side by side so that the ten
//! recipes of each shape can be compared.

use serde_json::Value;

use super::super::records::RecordsView;
use super::super::stats::RecordStats;
use super::roles::{Roles, roles};
use super::{Builder, KEYWORD_SAMPLE, Role, keyword, lit, path, projection, quotable, suffix};

/// Recipes for records that are (mostly) objects: trees get walking
/// recipes, one or two large objects key recipes, others recipes built on
/// their fields' roles; the order is the order they are offered in.
pub(super) fn object_recipes(b: &mut Builder, stats: &RecordStats, records: RecordsView<'_>) {
    // Records jq reads as strings (too deep) make the records mixed too.
    if stats.objects < stats.count || stats.too_deep > 0 {
        b.each = "objects | ".into();
        b.all = "map(objects) | ".into();
    }
    let r = roles(stats);
    if let Some(children) = stats.tree_field().filter(|c| quotable(c)) {
        return tree_recipes(b, children, &r, records);
    }
    if stats.count <= 2 && stats.fields.len() > 8 {
        return large_object_recipes(b, stats, records);
    }
    field_recipes(b, stats, &r, records);
}

/// Recipes on the fields' roles.
fn field_recipes(b: &mut Builder, stats: &RecordStats, r: &Roles<'_>, records: RecordsView<'_>) {
    use Role::*;
    let shown = shown_fields(r, stats);
    if !shown.is_empty() {
        let desc = format!("Extract {} only", shown.join(", "));
        b.each(desc, "fields", Browse, "c", projection(&shown));
    }
    if let Some((cat, value)) = &r.category {
        b.push_with(
            (
                format!("Filter by {cat} (value: \"{value}\", the most common)"),
                &format!("filter {cat}"),
            ),
            Filter,
            "c",
            format!("{}select({} == $value)", b.each, path(cat)),
            &[("value", value)],
        );
    }
    if let Some(text) = r.text.filter(|t| quotable(t)) {
        let kw = sample_keyword(records, |v| {
            v.get(text).and_then(Value::as_str).map(str::to_owned)
        });
        let filter = format!(
            "{}select({} | strings | test($keyword; \"i\"))",
            b.each,
            path(text)
        );
        search_recipe(b, ("c", &filter), text, kw.as_deref());
    }
    if let Some((cat, _)) = &r.category {
        category_recipes(b, cat);
    }
    if let (Some(num), Some(name)) = (&r.number, r.number_name) {
        number_recipes(b, num, name);
    }
    if let Some(date) = r.date {
        let p = path(date);
        b.all(
            format!("Sort by {date} (first 10)"),
            &format!("sort by {date}"),
            Analyze,
            "",
            format!("sort_by({p}) | .[:10]"),
        );
    }
    if let Some(label) = r.label {
        b.each(
            format!("List {label} only"),
            &format!("{label} list"),
            Browse,
            "r",
            format!("{} | strings", path(label)),
        );
    }
    if let Some((name, _)) = stats
        .fields
        .iter()
        .find(|(k, f)| f.present < stats.objects && quotable(k))
    {
        b.all(
            format!("How many records have {name}"),
            &format!("count with {name}"),
            Analyze,
            "",
            format!("map(select(has({}))) | length", lit(name)),
        );
    }
}

/// A search recipe for `filter` (which takes `$keyword`), over `what`.
fn search_recipe(b: &mut Builder, (flags, filter): (&str, &str), what: &str, kw: Option<&str>) {
    let (desc, value) = match kw {
        Some(k) => (format!("Search {what} for \"{k}\" (case-insensitive)"), k),
        None => (
            format!("Search {what} by keyword (\"keyword\" is a placeholder: set your term)"),
            "keyword",
        ),
    };
    b.push_with(
        (desc, &format!("search {what}")),
        Role::Search,
        flags,
        filter.to_owned(),
        &[("keyword", value)],
    );
}

/// A keyword from the first records' texts, as `text_of` gives them.
pub(super) fn sample_keyword(
    records: RecordsView<'_>,
    text_of: impl Fn(&Value) -> Option<String>,
) -> Option<String> {
    let texts: Vec<String> = records
        .iter()
        .take(KEYWORD_SAMPLE)
        .filter_map(|rec| serde_json::from_str::<Value>(rec).ok())
        .filter_map(|v| text_of(&v))
        .collect();
    keyword::pick(texts.iter().map(String::as_str))
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
        stats
            .fields
            .keys()
            .filter(|k| quotable(k))
            .take(3)
            .map(String::as_str)
            .collect()
    } else {
        shown
    }
}

/// Counts by category, and its distinct values.
fn category_recipes(b: &mut Builder, cat: &str) {
    let (p, s, k) = (path(cat), suffix(cat), lit(cat));
    b.all(
        format!("Count by {cat}"),
        &format!("count by {cat}"),
        Role::Analyze,
        "",
        format!("group_by({p}) | map({{{k}: .[0]{s}, count: length}})"),
    );
    b.all(
        format!("List unique values of {cat}"),
        &format!("unique {cat}"),
        Role::Browse,
        "",
        format!("map({p}) | unique"),
    );
}

/// The top ten by the numeric field `num` (a jq path), and its min, max and mean.
fn number_recipes(b: &mut Builder, num: &str, name: &str) {
    b.all(
        format!("Sort by {name} descending (top 10)"),
        &format!("top 10 by {name}"),
        Role::Analyze,
        "",
        format!("sort_by({num}) | reverse | .[:10]"),
    );
    b.all(
        format!("Min, max and mean of {name}"),
        &format!("{name} stats"),
        Role::Analyze,
        "",
        format!("map({num} | numbers) | {{min: min, max: max, mean: (if length > 0 then add / length else null end)}}"),
    );
}

/// Recipes that walk a tree whose nodes hold their children in `children`.
fn tree_recipes(b: &mut Builder, children: &str, r: &Roles<'_>, records: RecordsView<'_>) {
    use Role::*;
    let kids = path(children);
    let nodes = format!("recurse(objects | {kids} | arrays | .[])");
    let all_nodes = format!("[.[] | {nodes} | objects]");
    let leaf = format!("select((({kids} | arrays | length) // 0) == 0)");
    let name = r.label.filter(|l| *l != children).unwrap_or("name");
    let np = path(name);
    b.all(
        "Count all nodes of the tree".into(),
        "count nodes",
        Analyze,
        "",
        format!("{all_nodes} | length"),
    );
    b.all(
        "Count leaves (nodes without children)".into(),
        "count leaves",
        Analyze,
        "",
        format!("{all_nodes} | map({leaf}) | length"),
    );
    b.all(
        format!("First 50 paths ({name}s joined by /)"),
        "paths",
        Browse,
        "r",
        format!("def p($pre): objects | ($pre + \"/\" + ({np} | tostring)) as $q | $q, ({kids} | arrays | .[] | p($q)); [.[] | p(\"\")] | .[:50][]"),
    );
    b.all(
        "First 20 leaves".into(),
        "first leaves",
        Browse,
        "c",
        format!("{all_nodes} | map({leaf}) | .[:20][]"),
    );
    let kw = keyword::pick(
        tree_names(records, children, name)
            .iter()
            .map(String::as_str),
    );
    let filter = format!(
        "{all_nodes} | map(select({np} | strings | test($keyword; \"i\")) | del({kids})) | .[:50][]"
    );
    search_recipe(
        b,
        ("sc", &filter),
        &format!("{name}s in the whole tree"),
        kw.as_deref(),
    );
    tree_shape_recipes(b, children, r, &all_nodes);
}

/// The tree's shape: depth, widest nodes, nodes by category, node fields,
/// top-level names.
fn tree_shape_recipes(b: &mut Builder, children: &str, r: &Roles<'_>, all_nodes: &str) {
    use Role::*;
    let kids = path(children);
    let name = r.label.filter(|l| *l != children).unwrap_or("name");
    let np = path(name);
    b.all(
        "Depth of the tree".into(),
        "depth",
        Analyze,
        "",
        format!("def d: 1 + ([objects | {kids} | arrays | .[] | d] | max // 0); map(d) | max"),
    );
    b.all(
        "Nodes with the most children (top 10)".into(),
        "widest nodes",
        Analyze,
        "c",
        format!("{all_nodes} | map({{{n}: {np}, children: (({kids} | arrays | length) // 0)}}) | sort_by(-.children) | .[:10][]", n = lit(name)),
    );
    if let Some((cat, _)) = r.category.as_ref().filter(|(c, _)| *c != children) {
        let (p, s, k) = (path(cat), suffix(cat), lit(cat));
        b.all(
            format!("Count nodes by {cat}"),
            &format!("nodes by {cat}"),
            Analyze,
            "c",
            format!("{all_nodes} | group_by({p}) | map({{{k}: .[0]{s}, count: length}})"),
        );
    }
    b.all(
        "List the fields of nodes".into(),
        "node fields",
        Browse,
        "c",
        format!("{all_nodes} | map(keys[]) | unique"),
    );
    b.each(
        format!("Top-level {name}s"),
        "top level",
        Browse,
        "r",
        format!("{np} | tostring"),
    );
}

/// The names of the first nodes of the trees (each one a text for the
/// keyword: a word in every record may be in few nodes), 64 KiB at most.
fn tree_names(records: RecordsView<'_>, children: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for rec in records.iter().take(KEYWORD_SAMPLE) {
        let Ok(v) = serde_json::from_str::<Value>(rec) else {
            continue;
        };
        let mut stack = vec![&v];
        while let Some(node) = stack.pop() {
            if bytes > 64 * 1024 {
                return out;
            }
            if let Some(s) = node.get(name).and_then(Value::as_str) {
                bytes += s.len();
                out.push(s.to_owned());
            }
            if let Some(kids) = node.get(children).and_then(Value::as_array) {
                stack.extend(kids.iter());
            }
        }
    }
    out
}

/// Recipes for one or two large objects (an environment, a config):
/// their keys, sizes and values by key.
fn large_object_recipes(b: &mut Builder, stats: &RecordStats, records: RecordsView<'_>) {
    use Role::*;
    b.each(
        "Count keys".into(),
        "count keys",
        Analyze,
        "",
        "keys | length".into(),
    );
    b.each(
        "List keys (first 100)".into(),
        "keys",
        Browse,
        "r",
        "keys_unsorted | .[:100][]".into(),
    );
    b.each(
        "Largest values by key (top 20 sizes in characters)".into(),
        "largest",
        Analyze,
        "c",
        "to_entries | map({key, size: (.value | tojson | length)}) | sort_by(-.size) | .[:20][]"
            .into(),
    );
    if let Some(key) = stats.fields.keys().find(|k| quotable(k)) {
        b.push_with(
            (format!("Value of one key (key: \"{key}\")"), "value of key"),
            Filter,
            "c",
            format!("{}.[$key]", b.each),
            &[("key", key)],
        );
    }
    // Each key, each string value, a text of its own: a word in most of
    // them tells nothing apart.
    let (keys, values) = object_texts(records);
    if let Some(kw) = keyword::pick(keys.iter().map(String::as_str)) {
        let filter = format!(
            "{}to_entries[] | select(.key | test($keyword; \"i\")) | .key",
            b.each
        );
        search_recipe(b, ("r", &filter), "keys", Some(&kw));
    }
    let kw = keyword::pick(values.iter().map(String::as_str));
    let filter = format!(
        "{}to_entries[] | select(.value | tojson | test($keyword; \"i\")) | .key",
        b.each
    );
    search_recipe(b, ("r", &filter), "values (keys shown)", kw.as_deref());
    b.each(
        "Count values by JSON type".into(),
        "count by type",
        Analyze,
        "c",
        "[.[] | type] | group_by(.) | map({type: .[0], count: length})".into(),
    );
    b.each(
        "First 10 entries".into(),
        "first 10",
        Browse,
        "c",
        "to_entries[:10] | from_entries".into(),
    );
    b.each(
        "Values shortened to 60 characters (first 30 keys)".into(),
        "short values",
        Browse,
        "c",
        "to_entries[:30][] | {key, value: (.value | tojson | .[:60])}".into(),
    );
}

/// The keys and the string values of the first objects (64 KiB at most).
fn object_texts(records: RecordsView<'_>) -> (Vec<String>, Vec<String>) {
    let (mut keys, mut values, mut bytes) = (Vec::new(), Vec::new(), 0usize);
    for rec in records.iter().take(2) {
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(rec) else {
            continue;
        };
        for (k, v) in o {
            bytes += k.len() + v.as_str().map_or(0, str::len);
            if bytes > 64 * 1024 {
                return (keys, values);
            }
            if let Value::String(v) = v {
                values.push(v);
            }
            keys.push(k);
        }
    }
    (keys, values)
}

/// Recipes for records that are strings, numbers or other scalars.
pub(super) fn scalar_recipes(b: &mut Builder, stats: &RecordStats) {
    use Role::*;
    if stats.strings > 0 {
        b.push_with(
            (
                "Search by keyword (\"keyword\" is a placeholder: set your term)".into(),
                "search",
            ),
            Search,
            "r",
            "strings | select(test($keyword; \"i\"))".into(),
            &[("keyword", "keyword")],
        );
        b.push(
            "Most frequent values (top 20)".into(),
            "frequent values",
            Analyze,
            "s",
            "group_by(.) | map({value: .[0], count: length}) | sort_by(-.count) | .[:20]".into(),
        );
    }
    if stats.numbers > 0 {
        b.push(
            "Min, max and mean".into(),
            "stats",
            Analyze,
            "s",
            "map(numbers) | {min: min, max: max, mean: (if length > 0 then add / length else null end)}".into(),
        );
    }
    b.push(
        "Count unique values".into(),
        "count unique",
        Analyze,
        "s",
        "unique | length".into(),
    );
    b.push(
        "Smallest 10 values".into(),
        "smallest",
        Analyze,
        "s",
        "sort | .[:10]".into(),
    );
    b.push(
        "Largest 10 values".into(),
        "largest",
        Analyze,
        "s",
        "sort | .[-10:]".into(),
    );
}
