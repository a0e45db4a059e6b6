//! What the records hold: a JSON Schema of the lines, per-field statistics
//! for the summary and the recipes, and whether they are memory records.
//!
//! One pass over the records; each is parsed, folded in and dropped, so the
//! memory used does not grow with the number of records (distinct-value
//! counts are capped).

use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::descriptor::Detail;

/// Nesting depth down to which the line schema is described.
const SCHEMA_DEPTH: usize = 6;
/// Properties described per object in the line schema.
const SCHEMA_PROPERTIES: usize = 64;
/// Top-level fields tracked for recipes and the summary.
const TRACKED_FIELDS: usize = 256;
/// Distinct string values counted per field.
const DISTINCT_CAP: usize = 1024;

/// JSON types, as bit flags.
mod ty {
    pub const NULL: u8 = 1;
    pub const BOOL: u8 = 2;
    pub const INTEGER: u8 = 4;
    pub const NUMBER: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
}

fn type_of(v: &Value) -> u8 {
    match v {
        Value::Null => ty::NULL,
        Value::Bool(_) => ty::BOOL,
        Value::Number(n) if n.is_i64() || n.is_u64() => ty::INTEGER,
        Value::Number(_) => ty::NUMBER,
        Value::String(_) => ty::STRING,
        Value::Array(_) => ty::ARRAY,
        Value::Object(_) => ty::OBJECT,
    }
}

/// A merged JSON Schema node.
#[derive(Debug, Default)]
struct SchemaNode {
    types: u8,
    objects: usize,
    properties: IndexMap<String, (SchemaNode, usize)>,
    more_properties: bool,
    items: Option<Box<SchemaNode>>,
}

impl SchemaNode {
    fn observe(&mut self, v: &Value, depth: usize) {
        self.types |= type_of(v);
        if depth >= SCHEMA_DEPTH {
            return;
        }
        match v {
            Value::Object(map) => {
                self.objects += 1;
                for (k, child) in map {
                    if let Some((node, n)) = self.properties.get_mut(k) {
                        node.observe(child, depth + 1);
                        *n += 1;
                    } else if self.properties.len() < SCHEMA_PROPERTIES {
                        let mut node = SchemaNode::default();
                        node.observe(child, depth + 1);
                        self.properties.insert(k.clone(), (node, 1));
                    } else {
                        self.more_properties = true;
                    }
                }
            }
            Value::Array(items) => {
                let node = self.items.get_or_insert_with(Default::default);
                for item in items {
                    node.observe(item, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn to_schema(&self) -> Value {
        let mut out = Map::new();
        let mut names: Vec<&str> = Vec::new();
        for (bit, name) in [
            (ty::OBJECT, "object"),
            (ty::ARRAY, "array"),
            (ty::STRING, "string"),
            (ty::NUMBER, "number"),
            (ty::INTEGER, "integer"),
            (ty::BOOL, "boolean"),
            (ty::NULL, "null"),
        ] {
            if self.types & bit != 0 && !(bit == ty::INTEGER && self.types & ty::NUMBER != 0) {
                names.push(name);
            }
        }
        match names.as_slice() {
            [] => {}
            [one] => {
                out.insert("type".into(), json!(one));
            }
            many => {
                out.insert("type".into(), json!(many));
            }
        }
        if self.types & ty::OBJECT != 0 && !self.properties.is_empty() {
            let props: Map<String, Value> = self
                .properties
                .iter()
                .map(|(k, (node, _))| (k.clone(), node.to_schema()))
                .collect();
            let required: Vec<&String> = self
                .properties
                .iter()
                .filter(|(_, (_, n))| *n == self.objects)
                .map(|(k, _)| k)
                .collect();
            out.insert("properties".into(), Value::Object(props));
            if !required.is_empty() {
                out.insert("required".into(), json!(required));
            }
        }
        if let Some(items) = &self.items
            && items.types != 0
        {
            out.insert("items".into(), items.to_schema());
        }
        Value::Object(out)
    }
}

/// Statistics of one top-level field of object records.
#[derive(Debug, Default)]
pub(crate) struct FieldStats {
    /// Records in which the field is present.
    pub present: usize,
    /// Types seen (bit flags).
    types: u8,
    /// Present and a string.
    pub strings: usize,
    /// Present and a number.
    pub numbers: usize,
    /// Strings that look like ISO 8601 dates.
    pub dates: usize,
    /// Total length of the string values, in bytes.
    pub string_bytes: usize,
    /// Occurrences of each distinct string value (capped).
    pub distinct: HashMap<String, usize>,
    /// More distinct values than counted.
    pub distinct_overflow: bool,
    /// Smallest and largest numeric value.
    pub min: f64,
    pub max: f64,
}

impl FieldStats {
    fn observe(&mut self, v: &Value) {
        self.present += 1;
        self.types |= type_of(v);
        match v {
            Value::String(s) => {
                self.strings += 1;
                self.string_bytes += s.len();
                if looks_like_date(s) {
                    self.dates += 1;
                }
                if let Some(n) = self.distinct.get_mut(s.as_str()) {
                    *n += 1;
                } else if self.distinct.len() < DISTINCT_CAP {
                    self.distinct.insert(s.clone(), 1);
                } else {
                    self.distinct_overflow = true;
                }
            }
            Value::Number(n) => {
                if let Some(f) = n.as_f64() {
                    if self.numbers == 0 {
                        self.min = f;
                        self.max = f;
                    } else {
                        self.min = self.min.min(f);
                        self.max = self.max.max(f);
                    }
                    self.numbers += 1;
                }
            }
            _ => {}
        }
    }

    /// Whether every value seen is a string.
    pub fn all_strings(&self) -> bool {
        self.types == ty::STRING
    }

    /// The most frequent values, most frequent first (ties by value).
    pub fn top_values(&self, n: usize) -> Vec<(&str, usize)> {
        let mut v: Vec<(&str, usize)> = self
            .distinct
            .iter()
            .map(|(k, c)| (k.as_str(), *c))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        v.truncate(n);
        v
    }
}

fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// Which fields the spec's memory recipes need, and whether all records have them.
#[derive(Debug, Clone, Copy)]
struct MemoryCheck {
    /// Every record is an object with string `id`, `title`, `namespace` and a `memory_type`.
    core: bool,
    /// `tags` is an array or absent in every record.
    tags: bool,
    /// `content` is a string in every record.
    content: bool,
    /// `provenance` is an object or absent in every record.
    provenance_shape: bool,
}

/// Everything learned from one pass over the records.
#[derive(Debug)]
pub(crate) struct RecordStats {
    /// Number of records.
    pub count: usize,
    /// Records that are JSON objects.
    pub objects: usize,
    /// Records that are strings / numbers.
    pub strings: usize,
    pub numbers: usize,
    /// Records that could not be parsed for inspection (numbers beyond f64).
    pub opaque: usize,
    schema: SchemaNode,
    /// Top-level fields of object records, in first-seen order.
    pub fields: IndexMap<String, FieldStats>,
    /// `provenance.confidence` statistics.
    pub provenance_confidence: FieldStats,
    memory: MemoryCheck,
}

impl RecordStats {
    /// Folds every record in.
    pub fn collect<'r>(records: impl IntoIterator<Item = &'r str>) -> RecordStats {
        let mut stats = RecordStats {
            count: 0,
            objects: 0,
            strings: 0,
            numbers: 0,
            opaque: 0,
            schema: SchemaNode::default(),
            fields: IndexMap::new(),
            provenance_confidence: FieldStats::default(),
            memory: MemoryCheck {
                core: true,
                tags: true,
                content: true,
                provenance_shape: true,
            },
        };
        for rec in records {
            stats.count += 1;
            match serde_json::from_str::<Value>(rec) {
                Ok(v) => stats.observe(&v),
                Err(_) => {
                    stats.opaque += 1;
                    stats.memory.core = false;
                }
            }
        }
        if stats.count == 0 {
            stats.memory.core = false;
        }
        stats
    }

    fn observe(&mut self, v: &Value) {
        self.schema.observe(v, 0);
        match v {
            Value::Object(map) => {
                self.objects += 1;
                for (k, child) in map {
                    if let Some(f) = self.fields.get_mut(k) {
                        f.observe(child);
                    } else if self.fields.len() < TRACKED_FIELDS {
                        let mut f = FieldStats::default();
                        f.observe(child);
                        self.fields.insert(k.clone(), f);
                    }
                }
                let m = &mut self.memory;
                m.core &= ["id", "title", "namespace"]
                    .iter()
                    .all(|k| map.get(*k).is_some_and(Value::is_string))
                    && map.contains_key("memory_type");
                m.tags &= map.get("tags").is_none_or(|t| t.is_array() || t.is_null());
                m.content &= map.get("content").is_some_and(Value::is_string);
                match map.get("provenance") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(p)) => {
                        if let Some(c) = p.get("confidence") {
                            self.provenance_confidence.observe(c);
                        }
                    }
                    Some(_) => m.provenance_shape = false,
                }
            }
            Value::String(_) => {
                self.strings += 1;
                self.memory.core = false;
            }
            Value::Number(_) => {
                self.numbers += 1;
                self.memory.core = false;
            }
            _ => self.memory.core = false,
        }
    }

    /// Whether the records are memory records that the spec's recipes for
    /// `detail` run on without error.
    pub fn memory_recipes_fit(&self, detail: Detail) -> bool {
        let m = self.memory;
        let base = m.core && m.tags;
        match detail {
            Detail::Light => base,
            Detail::Medium => base && m.content,
            Detail::Full => base && m.content && m.provenance_shape,
        }
    }

    /// Detail level inferred from the fields: `provenance` → full, a
    /// flattened `confidence` → medium, else light.
    pub fn inferred_detail(&self) -> Detail {
        if self.fields.get("provenance").is_some_and(|f| f.present > 0) {
            Detail::Full
        } else if self.fields.get("confidence").is_some_and(|f| f.numbers > 0) {
            Detail::Medium
        } else {
            Detail::Light
        }
    }

    /// The line schema (JSON Schema 2020-12) of the records.
    pub fn line_schema(&self) -> Value {
        let mut schema = self.schema.to_schema();
        if let Value::Object(map) = &mut schema {
            let mut head = Map::new();
            head.insert(
                "$schema".into(),
                json!("https://json-schema.org/draft/2020-12/schema"),
            );
            head.insert(
                "description".into(),
                json!("One record per line of the JSONL file, after the header line."),
            );
            head.append(map);
            return Value::Object(head);
        }
        schema
    }

    /// The field used for `top_namespaces`: `namespace`, else the most
    /// category-like string field.
    pub fn category_field(&self) -> Option<&str> {
        if self.fields.get("namespace").is_some_and(|f| f.strings > 0) {
            return Some("namespace");
        }
        const PREFERRED: [&str; 9] = [
            "category", "type", "kind", "level", "severity", "status", "source", "service", "group",
        ];
        if let Some(name) = PREFERRED.iter().find(|n| {
            self.fields
                .get(**n)
                .is_some_and(|f| is_category_like(f, self.objects))
        }) {
            return Some(name);
        }
        self.fields
            .iter()
            .filter(|(_, f)| is_category_like(f, self.objects))
            .min_by(|a, b| {
                let ra = a.1.distinct.len() as f64 / a.1.strings as f64;
                let rb = b.1.distinct.len() as f64 / b.1.strings as f64;
                ra.total_cmp(&rb)
            })
            .map(|(k, _)| k.as_str())
    }

    /// Up to `n` most frequent values of the category field.
    pub fn top_categories(&self, n: usize) -> Vec<String> {
        self.category_field()
            .and_then(|k| self.fields.get(k))
            .map(|f| {
                f.top_values(n)
                    .into_iter()
                    .map(|(v, _)| v.to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The numeric field behind `score_range`, if any: score-like names first.
    pub fn score_field(&self) -> Option<(&str, &FieldStats)> {
        const NAMES: [&str; 6] = [
            "score",
            "relevance",
            "similarity",
            "confidence",
            "rank_score",
            "weight",
        ];
        for name in NAMES {
            if let Some(f) = self.fields.get(name)
                && f.numbers > 0
            {
                return Some((name, f));
            }
        }
        if let Some((k, f)) = self
            .fields
            .iter()
            .find(|(k, f)| f.numbers > 0 && (k.ends_with("_score") || k.ends_with("Score")))
        {
            return Some((k.as_str(), f));
        }
        (self.provenance_confidence.numbers > 0)
            .then_some(("provenance.confidence", &self.provenance_confidence))
    }

    /// `(min, max)` of the score field.
    pub fn score_range(&self) -> Option<(f64, f64)> {
        self.score_field().map(|(_, f)| (f.min, f.max))
    }
}

/// A string field present in most records with repeated values.
pub(crate) fn is_category_like(f: &FieldStats, objects: usize) -> bool {
    f.all_strings()
        && !f.distinct_overflow
        && f.present * 2 >= objects
        && !f.distinct.is_empty()
        && f.distinct.len() <= 50
        && f.distinct.len() < f.strings
        && f.string_bytes / f.strings.max(1) <= 64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_merges_types_and_required() {
        let recs = [
            r#"{"a":1,"b":"x","c":[1,2]}"#,
            r#"{"a":2.5,"c":[],"d":null}"#,
        ];
        let s = RecordStats::collect(recs);
        let schema = s.line_schema();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["a"]["type"], "number");
        assert_eq!(schema["properties"]["c"]["items"]["type"], "integer");
        assert_eq!(schema["required"], json!(["a", "c"]));
    }

    #[test]
    fn category_and_scores() {
        let recs: Vec<String> = (0..20)
            .map(|i| {
                format!(
                    r#"{{"level":"{}","msg":"m{i}","score":{}}}"#,
                    ["info", "warn", "error"][i % 3],
                    i as f64 / 10.0
                )
            })
            .collect();
        let s = RecordStats::collect(recs.iter().map(String::as_str));
        assert_eq!(s.category_field(), Some("level"));
        assert_eq!(s.top_categories(5), vec!["info", "warn", "error"]);
        assert_eq!(s.score_range(), Some((0.0, 1.9)));
        assert!(!s.memory_recipes_fit(Detail::Light));
    }
}
