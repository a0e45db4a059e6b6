//! What the records hold: a JSON Schema of the lines, per-field statistics
//! for the summary and the recipes, whether they are memory records, and
//! whether jq can read them all.
//!
//! One streaming pass over the records: each is walked straight into the
//! statistics (`walk`: no `Value` is built, nothing checked twice; keys and
//! strings are borrowed from the record unless escaped, with serde's
//! answers, which the tests hold it to), so the work per record is one walk and the
//! memory used does not grow with the number of records (fields, schema
//! properties and distinct-value counts are capped). The counts are exact.
//! Below the schema's depth values are skipped without being looked at.
//!
//! A record that fails midway (a number beyond `f64` where values are
//! looked at) counts as opaque; what was folded in before the failure
//! stays (the statistics are descriptive). Repeated keys in a record are
//! each folded in; for the memory check the last one counts, as for jq.
//!
//! By data: the line schema (`schema`), the statistics of one field
//! (`field`), the memory check (`memory`), and here what is known of all
//! the records ([`RecordStats`]); `fold` reads one record into them.

use serde_json::Value;

use super::descriptor::Detail;
use crate::json::nests_deeper;

mod field;
mod fold;
mod memory;
mod schema;
mod walk;

use field::NAMED_CATEGORY;
pub(crate) use field::{FieldStats, is_category_like};

/// The statistics' maps, in insertion order: their keys are short (field
/// names, category values), so a fast hash (still randomly seeded) pays.
pub(crate) type FastMap<K, V> = indexmap::IndexMap<K, V, foldhash::fast::RandomState>;
/// Unordered, for counts that are sorted before use.
pub(crate) type FastHashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use memory::MemoryCheck;
use schema::SchemaNode;

/// Nesting depth down to which the line schema is described.
pub(crate) const SCHEMA_DEPTH: usize = 6;
/// Nesting that jq 1.6 surely parses: its parser stops past 256 levels,
/// an object counting two, so 128 levels of anything.
const JQ_SAFE_DEPTH: usize = 128;

/// JSON types, as bit flags.
mod ty {
    pub(super) const NULL: u8 = 1;
    pub(super) const BOOL: u8 = 2;
    pub(super) const INTEGER: u8 = 4;
    pub(super) const NUMBER: u8 = 8;
    pub(super) const STRING: u8 = 16;
    pub(super) const ARRAY: u8 = 32;
    pub(super) const OBJECT: u8 = 64;
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
    pub fields: FastMap<String, FieldStats>,
    /// Where the next top-level field is looked for first (see
    /// [`SchemaNode::child`]).
    next_field: usize,
    /// `provenance.confidence` statistics.
    pub provenance_confidence: FieldStats,
    memory: MemoryCheck,
}

impl RecordStats {
    /// Folds every record in.
    pub(crate) fn collect<'r>(records: impl IntoIterator<Item = &'r str>) -> RecordStats {
        let mut stats = RecordStats {
            count: 0,
            objects: 0,
            strings: 0,
            numbers: 0,
            opaque: 0,
            too_deep: 0,
            schema: SchemaNode::default(),
            fields: FastMap::default(),
            next_field: 0,
            provenance_confidence: FieldStats::default(),
            memory: MemoryCheck::default(),
        };
        for rec in records {
            stats.fold(rec);
        }
        stats
    }

    /// A record not looked at (too large to hold): counted, opaque.
    pub(crate) fn fold_unread(&mut self) {
        self.count += 1;
        self.opaque += 1;
    }

    /// Folds one record (one valid JSON value) in.
    pub(crate) fn fold(&mut self, rec: &str) {
        self.count += 1;
        let (read, deepest) = walk::record(self, rec);
        // How deep it nests, from the walk when it went through the whole
        // record, else counted.
        let too_deep = match deepest {
            Some(d) => d > JQ_SAFE_DEPTH,
            None => too_deep_for_jq(rec),
        };
        self.too_deep += usize::from(too_deep);
        self.count_type(read.ok());
    }

    /// [`fold`](Self::fold) with serde reading the record: what the walk
    /// must agree with.
    #[cfg(test)]
    fn fold_with_serde(&mut self, rec: &str) {
        use serde::de::DeserializeSeed;
        self.count += 1;
        if too_deep_for_jq(rec) {
            self.too_deep += 1;
        }
        let mut de = serde_json::Deserializer::from_str(rec);
        let read = fold::Root(self)
            .deserialize(&mut de)
            .and_then(|t| de.end().map(|()| t));
        self.count_type(read.ok());
    }

    /// Counts a record of type `t` (`None`: opaque).
    fn count_type(&mut self, t: Option<u8>) {
        match t {
            Some(ty::OBJECT) => self.objects += 1,
            Some(ty::STRING) => self.strings += 1,
            Some(ty::INTEGER | ty::NUMBER) => self.numbers += 1,
            Some(_) => {}
            None => self.opaque += 1,
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
    pub(crate) fn memory_recipes_fit(&self, detail: Detail) -> bool {
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
    pub(crate) fn inferred_detail(&self) -> Detail {
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
    pub(crate) fn line_schema(&self, depth: usize) -> Value {
        self.schema.to_schema(depth.min(SCHEMA_DEPTH), true)
    }

    /// The field of object records that holds a tree's child nodes: an
    /// array of objects that have the same field (`children`).
    pub(crate) fn tree_field(&self) -> Option<&str> {
        self.schema.properties.iter().find_map(|(k, (node, _))| {
            node.items
                .as_ref()
                .is_some_and(|i| i.types & ty::OBJECT != 0 && i.properties.contains_key(k))
                .then_some(k.as_str())
        })
    }

    /// The field used for `top_namespaces`: `namespace`, else the most
    /// category-like string field.
    pub(crate) fn category_field(&self) -> Option<&str> {
        if self
            .fields
            .get(NAMED_CATEGORY)
            .is_some_and(|f| f.strings > 0)
        {
            return Some(NAMED_CATEGORY);
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
    pub(crate) fn top_categories(&self, n: usize) -> Vec<String> {
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
    pub(crate) fn score_field(&self) -> Option<(&str, &FieldStats)> {
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
/// [`JQ_SAFE_DEPTH`] levels. Records too short to nest that deep (a valid
/// value closes each bracket it opens), or with too few opening brackets,
/// are not walked.
fn too_deep_for_jq(record: &str) -> bool {
    let bytes = record.as_bytes();
    if bytes.len() <= 2 * JQ_SAFE_DEPTH {
        return false;
    }
    // Fewer opening brackets than the depth, strings included, cannot nest
    // that deep: one count (which the compiler vectorises) instead of the
    // walk, for nearly every record.
    let opening = bytes
        .iter()
        .map(|&b| usize::from(b == b'[' || b == b'{'))
        .sum::<usize>();
    opening > JQ_SAFE_DEPTH && nests_deeper(bytes, JQ_SAFE_DEPTH)
}

#[cfg(test)]
mod tests;
