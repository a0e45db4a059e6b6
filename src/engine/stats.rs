//! What the records hold: a JSON Schema of the lines, per-field statistics
//! for the summary and the recipes, whether they are memory records, and
//! whether jq can read them all.
//!
//! One streaming pass over the records: each is deserialized straight into
//! the statistics (no `Value` is built; keys and strings are borrowed from
//! the record unless escaped), so the work per record is one parse and the
//! memory used does not grow with the number of records (fields, schema
//! properties and distinct-value counts are capped). The counts are exact.
//! Below the schema's depth values are skipped without being looked at.
//!
//! A record that fails midway (a number beyond `f64` where values are
//! looked at) counts as opaque; what was folded in before the failure
//! stays (the statistics are descriptive). Repeated keys in a record are
//! each folded in; for the memory check the last one counts, as for jq.

use std::collections::HashMap;
use std::fmt;

use indexmap::IndexMap;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, json};

use super::descriptor::Detail;
use super::records::string_end;

/// Nesting depth down to which the line schema is described.
pub(crate) const SCHEMA_DEPTH: usize = 6;
/// Properties described per object in the line schema.
const SCHEMA_PROPERTIES: usize = 64;
/// Top-level fields tracked for recipes and the summary.
const TRACKED_FIELDS: usize = 256;
/// Distinct string values counted per field.
const DISTINCT_CAP: usize = 1024;
/// Longer strings are not counted as distinct values (the field is then no
/// category), so the counts hold short strings only.
const DISTINCT_MAX_BYTES: usize = 128;
/// Nesting that jq 1.6 surely parses: its parser stops past 256 levels,
/// an object counting two, so 128 levels of anything.
const JQ_SAFE_DEPTH: usize = 128;

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
    /// The node of property `key` of an object seen here, counted present;
    /// `None` once the properties are capped.
    fn child(&mut self, key: &str) -> Option<&mut SchemaNode> {
        if !self.properties.contains_key(key) {
            if self.properties.len() >= SCHEMA_PROPERTIES {
                self.more_properties = true;
                return None;
            }
            self.properties
                .insert(key.to_owned(), (SchemaNode::default(), 0));
        }
        let (node, n) = self.properties.get_mut(key)?;
        *n += 1;
        Some(node)
    }

    /// The node as JSON Schema, described `depth` levels down (0: its type
    /// only). `top`: the records' own node, the only one that lists
    /// `required` (and only when some property is missing from some record).
    fn to_schema(&self, depth: usize, top: bool) -> Value {
        let mut out = Map::new();
        if let Some(t) = self.type_names() {
            out.insert("type".into(), t);
        }
        if depth == 0 {
            return Value::Object(out);
        }
        if self.types & ty::OBJECT != 0 && !self.properties.is_empty() {
            let props: Map<String, Value> = self
                .properties
                .iter()
                .map(|(k, (node, _))| (k.clone(), node.to_schema(depth - 1, false)))
                .collect();
            let required: Vec<&String> = self
                .properties
                .iter()
                .filter(|(_, (_, n))| *n == self.objects)
                .map(|(k, _)| k)
                .collect();
            out.insert("properties".into(), Value::Object(props));
            if top && !required.is_empty() && required.len() < self.properties.len() {
                out.insert("required".into(), json!(required));
            }
        }
        if let Some(items) = &self.items
            && items.types != 0
        {
            out.insert("items".into(), items.to_schema(depth - 1, false));
        }
        Value::Object(out)
    }

    /// `"type"`: one name, or the list of them.
    fn type_names(&self) -> Option<Value> {
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
            [] => None,
            [one] => Some(json!(one)),
            many => Some(json!(many)),
        }
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
    /// More distinct values than counted (or some too long to count).
    pub distinct_overflow: bool,
    /// Smallest and largest numeric value.
    pub min: f64,
    pub max: f64,
}

impl FieldStats {
    fn observe_type(&mut self, t: u8) {
        self.present += 1;
        self.types |= t;
    }

    fn observe_str(&mut self, s: &str) {
        self.strings += 1;
        self.string_bytes += s.len();
        if looks_like_date(s) {
            self.dates += 1;
        }
        if let Some(n) = self.distinct.get_mut(s) {
            *n += 1;
        } else if self.distinct.len() < DISTINCT_CAP && s.len() <= DISTINCT_MAX_BYTES {
            self.distinct.insert(s.to_owned(), 1);
        } else {
            self.distinct_overflow = true;
        }
    }

    fn observe_number(&mut self, f: f64) {
        if self.numbers == 0 {
            self.min = f;
            self.max = f;
        } else {
            self.min = self.min.min(f);
            self.max = self.max.max(f);
        }
        self.numbers += 1;
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

/// How many records have the fields the spec's memory recipes need.
#[derive(Debug, Clone, Copy, Default)]
struct MemoryCheck {
    /// Object records with string `title` and `namespace` (the table's
    /// recipes 2 and 3 stop with an error on a record without them).
    core: usize,
    /// Object records with a string `id`.
    ids: usize,
    /// Object records with a `memory_type`.
    typed: usize,
    /// Object records whose `tags` is an array, null or absent.
    tags: usize,
    /// Object records whose `content` is a string.
    content: usize,
    /// Object records whose `provenance` is an object, null or absent.
    provenance_shape: usize,
}

impl MemoryCheck {
    /// Folds in the memory fields of one object record.
    fn fold(&mut self, f: &MemoryFields) {
        let string = |t: u8| t == ty::STRING;
        let add = |n: &mut usize, yes: bool| *n += usize::from(yes);
        add(&mut self.core, string(f.title) && string(f.namespace));
        add(&mut self.ids, string(f.id));
        add(&mut self.typed, f.memory_type != 0);
        add(&mut self.tags, matches!(f.tags, 0 | ty::ARRAY | ty::NULL));
        add(&mut self.content, string(f.content));
        add(
            &mut self.provenance_shape,
            matches!(f.provenance, 0 | ty::NULL | ty::OBJECT),
        );
    }
}

/// The type of each memory field in one record (0: absent; of repeated
/// keys, the last).
#[derive(Default)]
struct MemoryFields {
    id: u8,
    title: u8,
    namespace: u8,
    memory_type: u8,
    tags: u8,
    content: u8,
    provenance: u8,
}

impl MemoryFields {
    fn note(&mut self, key: &str, t: u8) {
        let slot = match key {
            "id" => &mut self.id,
            "title" => &mut self.title,
            "namespace" => &mut self.namespace,
            "memory_type" => &mut self.memory_type,
            "tags" => &mut self.tags,
            "content" => &mut self.content,
            "provenance" => &mut self.provenance,
            _ => return,
        };
        *slot = t;
    }
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
    /// Records nested deeper than jq 1.6 surely parses.
    pub too_deep: usize,
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
            too_deep: 0,
            schema: SchemaNode::default(),
            fields: IndexMap::new(),
            provenance_confidence: FieldStats::default(),
            memory: MemoryCheck::default(),
        };
        for rec in records {
            stats.fold(rec);
        }
        stats
    }

    /// Folds one record in.
    fn fold(&mut self, rec: &str) {
        self.count += 1;
        if too_deep_for_jq(rec) {
            self.too_deep += 1;
        }
        let mut de = serde_json::Deserializer::from_str(rec);
        match Root(self)
            .deserialize(&mut de)
            .and_then(|t| de.end().map(|()| t))
        {
            Ok(ty::OBJECT) => self.objects += 1,
            Ok(ty::STRING) => self.strings += 1,
            Ok(ty::INTEGER | ty::NUMBER) => self.numbers += 1,
            Ok(_) => {}
            Err(_) => self.opaque += 1,
        }
    }

    /// Whether the records are memory records that the spec's recipes for
    /// `detail` run on without error (jq 1.6 reads every one of them) and
    /// with fields that the records have. Mostly memories is enough: every
    /// record must be an object with a string `title` and `namespace`, a
    /// `tags` list if any (and a string `content` at medium and full, a
    /// `provenance` object if any at full), since the table's recipes stop
    /// with an error otherwise; `id`, `memory_type` and the confidence that
    /// recipe 9 sorts by (`confidence` at medium, `provenance.confidence`
    /// at full) need only be in most.
    pub fn memory_recipes_fit(&self, detail: Detail) -> bool {
        let m = self.memory;
        let all = |n: usize| n == self.count;
        let most = |n: usize| n * 2 > self.count;
        let base = self.count > 0
            && self.objects == self.count
            && self.too_deep == 0
            && all(m.core)
            && all(m.tags)
            && most(m.ids)
            && most(m.typed);
        let confidence = self.fields.get("confidence").map_or(0, |f| f.numbers);
        match detail {
            Detail::Light => base,
            Detail::Medium => base && all(m.content) && most(confidence),
            Detail::Full => {
                base && all(m.content)
                    && all(m.provenance_shape)
                    && most(self.provenance_confidence.numbers)
            }
        }
    }

    /// Detail level the records show: `provenance` → full, a flattened
    /// `confidence` or a `content` → medium, else light.
    pub fn inferred_detail(&self) -> Detail {
        let has = |k: &str| self.fields.get(k).is_some_and(|f| f.present > 0);
        if has("provenance") {
            Detail::Full
        } else if self.fields.get("confidence").is_some_and(|f| f.numbers > 0) || has("content") {
            Detail::Medium
        } else {
            Detail::Light
        }
    }

    /// The line schema (JSON Schema) of the records, described `depth`
    /// levels down (at most [`SCHEMA_DEPTH`]; 0: the records' type only).
    /// Trimmed to what tells the reader something: no `$schema`, and
    /// `required` only at the top and only when some property is missing
    /// from some record (a schema without it still accepts every record).
    pub fn line_schema(&self, depth: usize) -> Value {
        self.schema.to_schema(depth.min(SCHEMA_DEPTH), true)
    }

    /// The field of object records that holds a tree's child nodes: an
    /// array of objects that have the same field (`children`).
    pub fn tree_field(&self) -> Option<&str> {
        self.schema.properties.iter().find_map(|(k, (node, _))| {
            node.items
                .as_ref()
                .is_some_and(|i| i.types & ty::OBJECT != 0 && i.properties.contains_key(k))
                .then_some(k.as_str())
        })
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
}

/// Whether `record` may nest deeper than jq 1.6 parses: more than
/// [`JQ_SAFE_DEPTH`] levels. A byte walk, stopped as soon as it knows;
/// records too short to nest that deep are not walked.
fn too_deep_for_jq(record: &str) -> bool {
    let bytes = record.as_bytes();
    if bytes.len() <= 2 * JQ_SAFE_DEPTH {
        return false;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i + 1);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > JQ_SAFE_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// A key, borrowed from the record unless it holds escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(v.into()))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(v.to_owned().into()))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// One record, folded into the statistics as it is read; gives its type.
struct Root<'s>(&'s mut RecordStats);

impl Root<'_> {
    /// The record as any value: its schema node only.
    fn fold(&mut self) -> Fold<'_> {
        Fold {
            node: Some(&mut self.0.schema),
            field: None,
            confidence: None,
            depth: 0,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Root<'_> {
    type Value = u8;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u8, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Root<'_> {
    type Value = u8;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: serde::de::Error>(mut self, v: bool) -> Result<u8, E> {
        self.fold().visit_bool(v)
    }
    fn visit_i64<E: serde::de::Error>(mut self, v: i64) -> Result<u8, E> {
        self.fold().visit_i64(v)
    }
    fn visit_u64<E: serde::de::Error>(mut self, v: u64) -> Result<u8, E> {
        self.fold().visit_u64(v)
    }
    fn visit_f64<E: serde::de::Error>(mut self, v: f64) -> Result<u8, E> {
        self.fold().visit_f64(v)
    }
    fn visit_str<E: serde::de::Error>(mut self, v: &str) -> Result<u8, E> {
        self.fold().visit_str(v)
    }
    fn visit_unit<E: serde::de::Error>(mut self) -> Result<u8, E> {
        self.fold().visit_unit()
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, seq: A) -> Result<u8, A::Error> {
        self.fold().visit_seq(seq)
    }

    /// An object record: each top-level field folded into its node, its
    /// field statistics and the memory check.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u8, A::Error> {
        let RecordStats {
            schema,
            fields,
            provenance_confidence,
            memory,
            ..
        } = self.0;
        schema.types |= ty::OBJECT;
        schema.objects += 1;
        let mut memory_fields = MemoryFields::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let t = map.next_value_seed(Fold {
                node: schema.child(&key),
                field: tracked(fields, &key),
                confidence: (key == "provenance").then_some(&mut *provenance_confidence),
                depth: 1,
            })?;
            memory_fields.note(&key, t);
        }
        memory.fold(&memory_fields);
        Ok(ty::OBJECT)
    }
}

/// The statistics of top-level field `key`, started if there is room.
fn tracked<'f>(
    fields: &'f mut IndexMap<String, FieldStats>,
    key: &str,
) -> Option<&'f mut FieldStats> {
    if !fields.contains_key(key) && fields.len() < TRACKED_FIELDS {
        fields.insert(key.to_owned(), FieldStats::default());
    }
    fields.get_mut(key)
}

/// Where one value is folded in: its schema node (none past the property
/// cap), the statistics of the top-level field it is, and, for the value
/// of `provenance`, the statistics its `confidence` goes to. Gives the
/// value's type.
struct Fold<'s> {
    node: Option<&'s mut SchemaNode>,
    field: Option<&'s mut FieldStats>,
    confidence: Option<&'s mut FieldStats>,
    depth: usize,
}

impl Fold<'_> {
    fn typed(&mut self, t: u8) -> u8 {
        if let Some(node) = self.node.as_deref_mut() {
            node.types |= t;
        }
        if let Some(field) = self.field.as_deref_mut() {
            field.observe_type(t);
        }
        t
    }

    fn number(mut self, t: u8, f: f64) -> u8 {
        if let Some(field) = self.field.as_deref_mut() {
            field.observe_number(f);
        }
        self.typed(t)
    }

    /// The node whose contents are described, when this depth is.
    fn described(&mut self) -> Option<&mut SchemaNode> {
        self.node
            .as_deref_mut()
            .filter(|_| self.depth < SCHEMA_DEPTH)
    }
}

impl<'de> DeserializeSeed<'de> for Fold<'_> {
    type Value = u8;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u8, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Fold<'_> {
    type Value = u8;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: serde::de::Error>(mut self, _: bool) -> Result<u8, E> {
        Ok(self.typed(ty::BOOL))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u8, E> {
        Ok(self.number(ty::INTEGER, v as f64))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u8, E> {
        Ok(self.number(ty::INTEGER, v as f64))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u8, E> {
        Ok(self.number(ty::NUMBER, v))
    }
    fn visit_str<E: serde::de::Error>(mut self, v: &str) -> Result<u8, E> {
        if let Some(field) = self.field.as_deref_mut() {
            field.observe_str(v);
        }
        Ok(self.typed(ty::STRING))
    }
    fn visit_unit<E: serde::de::Error>(mut self) -> Result<u8, E> {
        Ok(self.typed(ty::NULL))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<u8, A::Error> {
        let depth = self.depth + 1;
        match self.described() {
            Some(node) => {
                let items = node.items.get_or_insert_with(Default::default);
                while seq
                    .next_element_seed(Fold {
                        node: Some(&mut **items),
                        field: None,
                        confidence: None,
                        depth,
                    })?
                    .is_some()
                {}
            }
            None => while seq.next_element::<IgnoredAny>()?.is_some() {},
        }
        Ok(self.typed(ty::ARRAY))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<u8, A::Error> {
        let depth = self.depth + 1;
        let mut confidence = self.confidence.take();
        let mut node = self.described();
        if let Some(node) = node.as_deref_mut() {
            node.objects += 1;
        }
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let child = node.as_deref_mut().and_then(|n| n.child(&key));
            let field = confidence.as_deref_mut().filter(|_| key == "confidence");
            if child.is_none() && field.is_none() {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            map.next_value_seed(Fold {
                node: child,
                field,
                confidence: None,
                depth,
            })?;
        }
        Ok(self.typed(ty::OBJECT))
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
        let schema = s.line_schema(SCHEMA_DEPTH);
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["a"]["type"], "number");
        assert_eq!(schema["properties"]["c"]["items"]["type"], "integer");
        assert_eq!(schema["required"], json!(["a", "c"]));
        assert_eq!(s.line_schema(0), json!({"type": "object"}));
        // Every property in every record: no `required` to repeat them.
        let all = RecordStats::collect([r#"{"a":1,"b":{"c":1}}"#, r#"{"a":2,"b":{"c":2}}"#]);
        assert_eq!(
            all.line_schema(SCHEMA_DEPTH),
            json!({"type": "object", "properties": {"a": {"type": "integer"},
                "b": {"type": "object", "properties": {"c": {"type": "integer"}}}}})
        );
        assert_eq!(all.tree_field(), None);
        let tree =
            RecordStats::collect([r#"{"name":"a","children":[{"name":"b","children":[]}]}"#]);
        assert_eq!(tree.tree_field(), Some("children"));
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
        assert_eq!(
            s.score_field().map(|(_, f)| (f.min, f.max)),
            Some((0.0, 1.9))
        );
        assert!(!s.memory_recipes_fit(Detail::Light));
    }
}
