//! Where a value is folded in ([`Fold`]), and, in the tests, the fold of
//! one record as `serde_json` reads it: a visitor per value that updates
//! its schema node, the statistics of its top-level field and the memory
//! check, and skips what is not described. The engine reads records with
//! its own walk ([`walk`](super::walk)), which must agree with this one.

#[cfg(test)]
use std::fmt;

#[cfg(test)]
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::field::FieldStats;
#[cfg(test)]
use super::memory::MemoryFields;
use super::schema::SchemaNode;
use super::{FastMap, SCHEMA_DEPTH};
#[cfg(test)]
use super::{RecordStats, ty};

/// Top-level fields tracked for recipes and the summary.
pub(super) const TRACKED_FIELDS: usize = 256;

/// One record, folded into the statistics as serde reads it; gives its type.
#[cfg(test)]
pub(super) struct Root<'s>(pub(super) &'s mut RecordStats);

#[cfg(test)]
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

#[cfg(test)]
impl<'de> DeserializeSeed<'de> for Root<'_> {
    type Value = u8;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u8, D::Error> {
        d.deserialize_any(self)
    }
}

#[cfg(test)]
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
            next_field,
            provenance_confidence,
            memory,
            ..
        } = self.0;
        schema.types |= ty::OBJECT;
        schema.begin_object();
        *next_field = 0;
        let mut memory_fields = MemoryFields::default();
        while let Some(key) = map.next_key::<String>()? {
            let key = key.as_str();
            let t = map.next_value_seed(Fold {
                node: schema.child(key),
                field: tracked(fields, next_field, key),
                confidence: (key == "provenance").then_some(&mut *provenance_confidence),
                depth: 1,
            })?;
            memory_fields.note(key, t);
        }
        memory.fold(&memory_fields);
        Ok(ty::OBJECT)
    }
}

/// The statistics of top-level field `key`, started if there is room.
/// `next`: where it is looked for first (the field after the last one:
/// records mostly list their keys in the same order), moved past it.
pub(super) fn tracked<'f>(
    fields: &'f mut FastMap<String, FieldStats>,
    next: &mut usize,
    key: &str,
) -> Option<&'f mut FieldStats> {
    let hinted = fields.get_index(*next).is_some_and(|(k, _)| k == key);
    let found = match hinted {
        true => Some(*next),
        false => fields.get_index_of(key),
    };
    let i = match found {
        Some(i) => i,
        None if fields.len() < TRACKED_FIELDS => {
            fields
                .insert_full(key.to_owned(), FieldStats::for_field(key))
                .0
        }
        None => return None,
    };
    *next = i + 1;
    fields.get_index_mut(i).map(|(_, f)| f)
}

/// Where one value is folded in: its schema node (none past the property
/// cap), the statistics of the top-level field it is, and, for the value
/// of `provenance`, the statistics its `confidence` goes to. Gives the
/// value's type.
pub(super) struct Fold<'s> {
    pub node: Option<&'s mut SchemaNode>,
    pub field: Option<&'s mut FieldStats>,
    pub confidence: Option<&'s mut FieldStats>,
    pub depth: usize,
}

impl Fold<'_> {
    pub(super) fn typed(&mut self, t: u8) -> u8 {
        if let Some(node) = self.node.as_deref_mut() {
            node.types |= t;
        }
        if let Some(field) = self.field.as_deref_mut() {
            field.observe_type(t);
        }
        t
    }

    pub(super) fn number(mut self, t: u8, f: f64) -> u8 {
        if let Some(field) = self.field.as_deref_mut() {
            field.observe_number(f);
        }
        self.typed(t)
    }

    /// The node whose contents are described, when this depth is.
    pub(super) fn described(&mut self) -> Option<&mut SchemaNode> {
        self.node
            .as_deref_mut()
            .filter(|_| self.depth < SCHEMA_DEPTH)
    }
}

#[cfg(test)]
impl<'de> DeserializeSeed<'de> for Fold<'_> {
    type Value = u8;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u8, D::Error> {
        d.deserialize_any(self)
    }
}

#[cfg(test)]
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
            node.begin_object();
        }
        while let Some(key) = map.next_key::<String>()? {
            let key = key.as_str();
            let child = node.as_deref_mut().and_then(|n| n.child(key));
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
