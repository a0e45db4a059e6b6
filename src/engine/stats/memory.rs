//! Whether the records are memory records: per record, the types of the
//! fields the spec's memory recipes read, and the counts over all records.

use super::ty;

/// How many records have the fields the spec's memory recipes need.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct MemoryCheck {
    /// Object records with string `title` and `namespace` (the table's
    /// recipes 2 and 3 stop with an error on a record without them).
    pub(super) core: usize,
    /// Object records with a string `id`.
    pub(super) ids: usize,
    /// Object records with a `memory_type`.
    pub(super) typed: usize,
    /// Object records whose `tags` is an array, null or absent.
    pub(super) tags: usize,
    /// Object records whose `content` is a string.
    pub(super) content: usize,
    /// Object records whose `provenance` is an object, null or absent.
    pub(super) provenance_shape: usize,
}

impl MemoryCheck {
    /// Folds in the memory fields of one object record.
    pub(super) fn fold(&mut self, f: &MemoryFields) {
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
pub(super) struct MemoryFields {
    id: u8,
    title: u8,
    namespace: u8,
    memory_type: u8,
    tags: u8,
    content: u8,
    provenance: u8,
}

impl MemoryFields {
    pub(super) fn note(&mut self, key: &str, t: u8) {
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
