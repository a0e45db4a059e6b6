//! [`Raw`]: the text of one JSON value, as the server wrote it.

use serde_json::value::RawValue;

/// The raw text of one JSON value inside a result (a span of its bytes,
/// no surrounding whitespace).
///
/// Unlike `&RawValue` it can be made from a span found by the trusted
/// reader without validating it again. Read with serde, it goes through
/// `&RawValue`: what serde reads is validated as before.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    /// A span known to be one JSON value (validated with serde's rules, or a
    /// literal).
    pub(crate) const fn trusted(json: &'a str) -> Self {
        Raw(json)
    }

    /// The JSON text.
    pub(crate) const fn get(self) -> &'a str {
        self.0
    }
}

impl std::fmt::Debug for Raw<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Raw").field(&self.0).finish()
    }
}

impl<'a> From<&'a RawValue> for Raw<'a> {
    fn from(raw: &'a RawValue) -> Self {
        Raw(raw.get())
    }
}

impl<'de> serde::Deserialize<'de> for Raw<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(Raw::from)
    }
}
