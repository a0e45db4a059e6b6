//! The properties' reading of JSON, by `serde_json`: equality as JSON, an
//! object's members, a string's text. Shared like `values.rs`.
//!
//! Where a `serde_json::Value` serves (an id, a string's text, a member as
//! the library reads it) the models use it. It cannot serve as the
//! reference reading of a whole generated text, which the generators make
//! hostile on purpose; [`Json`] is `serde_json`'s own reading, one level at
//! a time, kept in a type that can hold what `Value` cannot:
//!
//! * duplicate keys, in order (a `Map` keeps the last): the models of the
//!   JSON-RPC readers need them, a repeated member makes a message
//!   unreadable;
//! * lone surrogates (`"\ud800"`): `Value::String` is UTF-8; here strings
//!   and keys are WTF-8 bytes, as `serde_json` unescapes them for
//!   `deserialize_bytes`;
//! * nesting past 128 levels: a `Value` stops at `serde_json`'s recursion
//!   limit (the `unbounded_depth` feature would lift it for the library
//!   too, whose visitors rely on it); here each level is its own parse of
//!   a `RawValue`, which has no limit;
//! * numbers as written, outside `f64` and 64-bit integers included
//!   (`1e999`): `arbitrary_precision` would change the library's numbers
//!   too.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A JSON value as `serde_json` reads it (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json {
    /// `null`, `true`, `false` or a number, as written.
    Lit(String),
    /// A string, unescaped to WTF-8.
    Str(Vec<u8>),
    /// An array.
    Arr(Vec<Json>),
    /// An object's members in order, duplicates kept (keys in WTF-8).
    Obj(Vec<(Vec<u8>, Json)>),
}

impl Json {
    /// `text` read; `None` unless it is one valid JSON value.
    pub(super) fn read(text: &str) -> Option<Json> {
        serde_json::from_str::<&RawValue>(text).ok().map(Json::of)
    }

    /// A raw value (valid, trimmed), read level by level.
    fn of(raw: &RawValue) -> Json {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'[') => Json::Arr(
                serde_json::from_str::<Vec<&RawValue>>(text)
                    .unwrap_or_default()
                    .into_iter()
                    .map(Json::of)
                    .collect(),
            ),
            Some(b'{') => Json::Obj(
                Obj::read(text)
                    .map(|o| o.0)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, Json::of(v)))
                    .collect(),
            ),
            Some(b'"') => Json::Str(
                serde_json::from_str::<Wtf8>(text)
                    .map(|s| s.0)
                    .unwrap_or_default(),
            ),
            _ => Json::Lit(text.to_owned()),
        }
    }

    /// The value compared as JSON: objects as maps, the last of duplicate
    /// keys winning, members in key order.
    pub(super) fn canon(self) -> Json {
        match self {
            Json::Arr(items) => Json::Arr(items.into_iter().map(Json::canon).collect()),
            Json::Obj(members) => Json::Obj(
                members
                    .into_iter()
                    .map(|(k, v)| (k, v.canon()))
                    .collect::<BTreeMap<_, _>>()
                    .into_iter()
                    .collect(),
            ),
            other => other,
        }
    }
}

/// `text` compared as JSON (`None` unless valid).
pub(super) fn canon(text: &str) -> Option<Json> {
    Json::read(text).map(Json::canon)
}

/// One object's members as `serde_json` reads them: keys in WTF-8, values
/// raw, in order, duplicates kept.
#[derive(Debug)]
pub(super) struct Obj<'a>(pub Vec<(Vec<u8>, &'a RawValue)>);

impl<'a> Obj<'a> {
    /// `text` as an object; `None` for anything else.
    pub(super) fn read(text: &'a str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// The member `key` (its last occurrence).
    pub(super) fn get(&self, key: impl AsRef<[u8]>) -> Option<&'a RawValue> {
        let key = key.as_ref();
        self.0.iter().rev().find(|(k, _)| k == key).map(|m| m.1)
    }

    /// Whether `key` appears more than once.
    pub(super) fn repeats(&self, key: impl AsRef<[u8]>) -> bool {
        let key = key.as_ref();
        self.0.iter().filter(|(k, _)| k == key).count() > 1
    }
}

impl<'de> Deserialize<'de> for Obj<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Obj<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Obj<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(Wtf8(k)) = map.next_key()? {
                    members.push((k, map.next_value()?));
                }
                Ok(Obj(members))
            }
        }
        d.deserialize_map(Members)
    }
}

/// A string or key unescaped by `serde_json` without checking surrogates.
struct Wtf8(Vec<u8>);

impl<'de> Deserialize<'de> for Wtf8 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl Visitor<'_> for Bytes {
            type Value = Wtf8;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Wtf8, E> {
                Ok(Wtf8(v.to_vec()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Wtf8, E> {
                Ok(Wtf8(v.as_bytes().to_vec()))
            }
        }
        d.deserialize_bytes(Bytes)
    }
}

/// `a` and `b` are equal as JSON (both valid).
pub(super) fn same_json(a: &str, b: &str) -> Result<(), TestCaseError> {
    let ca = canon(a);
    prop_assert!(ca.is_some(), "not JSON: {:.300}", a);
    let cb = canon(b);
    prop_assert!(cb.is_some(), "not JSON: {:.300}", b);
    prop_assert!(ca == cb, "not equal as JSON:\n{:.600}\n{:.600}", a, b);
    Ok(())
}
