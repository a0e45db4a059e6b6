//! The one reader of JSON object keys, for the hand-written serde visitors
//! of the levels above (`wire::jsonrpc`'s member reader, `engine::stats`'s
//! record fold).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, Visitor};

/// An object key as `serde_json` reads it: unescaped, borrowed from the
/// text unless it holds escapes. Read as bytes, so surrogates are not
/// checked: a key holding a lone surrogate escape (`"\ud800"`, kept as
/// WTF-8) is still read, and a reader that skips keys it does not know
/// is not stopped by one.
pub(crate) struct Key<'de>(Cow<'de, [u8]>);

impl Key<'_> {
    /// The key's unescaped bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(KeyVisitor)
    }
}

/// The visitor of [`Key`]: `serde_json` hands a key over as bytes, or as
/// text through other deserializers.
struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_bytes<E>(self, v: &[u8]) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_vec())))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v.as_bytes())))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.as_bytes().to_vec())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of a JSON object, in order.
    fn keys(json: &str) -> Vec<Vec<u8>> {
        let map: Vec<(Vec<u8>, serde::de::IgnoredAny)> =
            serde_json::from_str::<OwnedKeys>(json).unwrap().0;
        map.into_iter().map(|(k, _)| k).collect()
    }

    struct OwnedKeys(Vec<(Vec<u8>, serde::de::IgnoredAny)>);

    impl<'de> Deserialize<'de> for OwnedKeys {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = OwnedKeys;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<OwnedKeys, A::Error> {
                    let mut out = Vec::new();
                    while let Some(k) = map.next_key::<Key<'de>>()? {
                        out.push((k.as_bytes().to_vec(), map.next_value()?));
                    }
                    Ok(OwnedKeys(out))
                }
            }
            d.deserialize_map(V)
        }
    }

    #[test]
    fn keys_are_unescaped_and_lone_surrogates_read() {
        assert_eq!(
            keys(r#"{"a":1,"b\u0063":2,"\ud800":3,"\ud83d\ude00":4}"#),
            vec![
                b"a".to_vec(),
                b"bc".to_vec(),
                vec![0xed, 0xa0, 0x80],
                "😀".as_bytes().to_vec()
            ]
        );
        let k: Key<'_> = serde_json::from_str(r#""id""#).unwrap();
        assert!(matches!(k.0, Cow::Borrowed(_)) && k.as_bytes() == b"id");
    }
}
