//! The line schema: one merged JSON Schema node per place in the records.

use serde_json::{Map, Value, json};

use super::{FastMap, ty};

/// Properties described per object in the line schema.
const SCHEMA_PROPERTIES: usize = 64;

/// A merged JSON Schema node.
#[derive(Debug, Default)]
pub(super) struct SchemaNode {
    /// Types seen here (bit flags).
    pub(super) types: u8,
    /// Objects seen here.
    pub(super) objects: usize,
    /// Properties of the objects seen here, each with the number of objects
    /// that have it, in first-seen order (at most [`SCHEMA_PROPERTIES`]).
    pub(super) properties: FastMap<String, (SchemaNode, usize)>,
    /// Properties past the cap were seen.
    more_properties: bool,
    /// The merged node of the elements of the arrays seen here.
    pub(super) items: Option<Box<SchemaNode>>,
    /// Where the next property is looked for first: records mostly list
    /// their keys in the same order, so a key is then found with one
    /// compare instead of a hash lookup.
    next: usize,
}

impl SchemaNode {
    /// The node of property `key` of an object seen here, counted present;
    /// `None` once the properties are capped.
    pub(super) fn child(&mut self, key: &str) -> Option<&mut SchemaNode> {
        // The property after the last one, when it is this key (the usual
        // case); else one lookup.
        let hinted = self
            .properties
            .get_index(self.next)
            .is_some_and(|(k, _)| k == key);
        let found = match hinted {
            true => Some(self.next),
            false => self.properties.get_index_of(key),
        };
        let i = match found {
            Some(i) => i,
            None if self.properties.len() >= SCHEMA_PROPERTIES => {
                self.more_properties = true;
                return None;
            }
            None => {
                let node = (SchemaNode::default(), 0);
                self.properties.insert_full(key.to_owned(), node).0
            }
        };
        self.next = i + 1;
        let (_, (node, n)) = self.properties.get_index_mut(i)?;
        *n += 1;
        Some(node)
    }

    /// One more object seen here: counted, its keys looked for from the
    /// first property on.
    pub(super) fn begin_object(&mut self) {
        self.objects += 1;
        self.next = 0;
    }

    /// The node as JSON Schema, described `depth` levels down (0: its type
    /// only). `top`: the records' own node, the only one that lists
    /// `required` (and only when some property is missing from some record).
    pub(super) fn to_schema(&self, depth: usize, top: bool) -> Value {
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
