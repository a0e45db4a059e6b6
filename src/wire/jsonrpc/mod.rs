//! JSON-RPC messages, as far as the layer needs them; one file per kind of
//! message read:
//!
//! * `request` — request bodies classified: which `tools/call` and
//!   `tasks/result` requests to watch (id, tool name, arguments), whether
//!   the client declared itself an LRO proxy, whether it is an
//!   `initialize`;
//! * `call` — a watched `tools/call` as read ([`RawCall`]), and what of it
//!   is kept for long;
//! * `reply` — response bodies searched for the watched ids without
//!   parsing results;
//! * `served` — requests the layer answers itself (`lro_extract`,
//!   `lro_list`, `resources/read`) or adds to (`tools/list`,
//!   `initialize`).
//!
//! Here: what they share, the reader of a message's members ([`members`],
//! over the crate's one key reader, [`Key`]) and of a request.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::json::{Key, Visitor, validate_visiting};
use crate::wire::mcp::{MemberRanges, Raw};

mod call;
mod reply;
mod request;
mod served;

pub(crate) use call::RawCall;
pub(crate) use reply::{Found, Reply, created_task_id, find_results, read_reply};
pub(crate) use request::{Classified, Watched, classify};
pub(crate) use served::{Served, classify_served};

/// The `_meta` key under which 2026-07-28 requests carry client information.
pub const CLIENT_INFO_META_KEY: &str = "io.modelcontextprotocol/clientInfo";

/// A request as the layer reads it: borrowed from the body, with the
/// parts it does not need left unparsed (no allocation for `initialize`,
/// `tools/list` and the like).
pub(super) struct Request<'a> {
    /// The id, when it can be read as a `Value`.
    pub(super) id: Option<Value>,
    /// `method`, raw.
    pub(super) method: Option<Raw<'a>>,
    /// `params`, raw.
    pub(super) params: Option<Raw<'a>>,
}

impl<'a> Request<'a> {
    /// `None` when `json` is no object, repeats a member read here, or
    /// has an id that cannot be read (read with [`members`]' rules: an
    /// object only, keys it does not read skipped, lone surrogates
    /// included).
    pub(super) fn read(json: &'a str) -> Option<Self> {
        let [id, method, params] = members(json, ["id", "method", "params"]).ok()?;
        let id = id.map(value_of).transpose().ok()?;
        Some(Request { id, method, params })
    }
}

/// A raw value as a `Value` (refused: a string with a lone surrogate).
pub(super) fn value_of(raw: Raw<'_>) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Value>(raw.get())
}

/// The members named in `names` of the JSON object `json`, each raw (a
/// `null` member counts as absent); the others skipped. Anything but an
/// object is refused: a JSON array is never read positionally as a
/// message, `_meta` or client information (serde's derived structs accept
/// `[id, method, params]`). Keys are read with [`Key`], unescaped without
/// checking surrogates, so a key holding a lone surrogate (`"\ud800"`) is
/// one more key to skip, not an error that would hide the whole message.
/// The object is checked whole, raw control characters in keys included
/// (found by the fuzz suite: a request with a raw line break in a key was
/// classified). A name given twice is an error, as with a derived struct.
///
/// Read in one pass of the validator ([`validate_nested`], serde's rules for
/// a skipped value), which reports each member on the way: about twice
/// as fast as serde on a large result. When it refuses, or a name is
/// given twice, serde reads the object as before and names the error.
pub(super) fn members<'a, const N: usize>(
    json: &'a str,
    names: [&'static str; N],
) -> Result<[Option<Raw<'a>>; N], serde_json::Error> {
    members_within(json, names, None).map(|(found, _)| found)
}

/// [`members`], and when the validator read them (`None` else), where the
/// members of the object `names[within]` sit in it (see [`MemberRanges`]).
pub(super) fn members_within<'a, const N: usize>(
    json: &'a str,
    names: [&'static str; N],
    within: Option<usize>,
) -> Result<([Option<Raw<'a>>; N], Option<MemberRanges>), serde_json::Error> {
    match validated_members(json, names, within) {
        Some(found) => Ok(found),
        None => serde_members(json, names).map(|found| (found, None)),
    }
}

/// Most members of the object `within` whose ranges are kept (a result has
/// a handful).
const MAX_WITHIN: usize = 64;

/// [`members_within`] by the validator: `None` when `json` is no valid JSON
/// object, gives a name twice, or has a key serde would not decode.
fn validated_members<'a, const N: usize>(
    json: &'a str,
    names: [&'static str; N],
    within: Option<usize>,
) -> Option<([Option<Raw<'a>>; N], Option<MemberRanges>)> {
    if json.trim_ascii_start().as_bytes().first() != Some(&b'{') {
        return None;
    }
    let mut reading = Reading {
        json,
        names,
        within,
        found: [None; N],
        seen: [false; N],
        unusual: false,
        inner: Some(Vec::new()),
        long_strings: Vec::new(),
        kept: None,
    };
    validate_visiting(json, &mut reading).ok()?;
    (!reading.unusual).then_some((reading.found, reading.kept))
}

/// What [`validated_members`] has read so far.
struct Reading<'a, const N: usize> {
    json: &'a str,
    names: [&'static str; N],
    within: Option<usize>,
    found: [Option<Raw<'a>>; N],
    seen: [bool; N],
    unusual: bool,
    /// The members of the value being read at depth 1 (`None`: too many).
    inner: Option<Vec<(Range<usize>, Range<usize>)>>,
    /// Every long string so far.
    long_strings: Vec<Range<usize>>,
    /// Where things sit in `names[within]`, once read.
    kept: Option<MemberRanges>,
}

impl<const N: usize> Visitor for Reading<'_, N> {
    fn member(&mut self, depth: usize, key: Range<usize>, value: Range<usize>) {
        if depth == 2 {
            match &mut self.inner {
                Some(v) if v.len() < MAX_WITHIN => v.push((key, value)),
                _ => self.inner = None,
            }
            return;
        }
        let held = self.inner.replace(Vec::new());
        let span = value.clone();
        let (Some(key), Some(value)) = (self.json.get(key), self.json.get(value)) else {
            self.unusual = true;
            return;
        };
        match name_of(key, &self.names) {
            Ok(Some(i)) => {
                self.unusual |= self.seen[i];
                self.seen[i] = true;
                self.found[i] = Some(Raw::trusted(value)).filter(|v| v.get() != "null");
                if self.within == Some(i) && value.starts_with('{') {
                    self.kept =
                        held.map(|members| placed_within(members, &self.long_strings, span));
                }
            }
            Ok(None) => {}
            Err(()) => self.unusual = true,
        }
    }

    fn long_string(&mut self, at: Range<usize>) {
        self.long_strings.push(at);
    }
}

/// The members and long strings within the value at `span`, relative to
/// its text.
fn placed_within(
    members: Vec<(Range<usize>, Range<usize>)>,
    long_strings: &[Range<usize>],
    span: Range<usize>,
) -> MemberRanges {
    let shift = |r: &Range<usize>| r.start - span.start..r.end - span.start;
    MemberRanges {
        members: members.iter().map(|(k, v)| (shift(k), shift(v))).collect(),
        long_strings: long_strings
            .iter()
            .filter(|r| span.start <= r.start && r.end <= span.end)
            .map(shift)
            .collect(),
    }
}

/// Which of `names` the key written `literal` (quotes included) is, read
/// as [`Key`] reads it (by serde when it has escapes); `Err` when serde
/// cannot read it.
fn name_of(literal: &str, names: &[&str]) -> Result<Option<usize>, ()> {
    let inner = literal
        .get(1..literal.len().saturating_sub(1))
        .unwrap_or_default();
    if !inner.contains('\\') {
        return Ok(names.iter().position(|n| *n == inner));
    }
    let key = serde_json::from_str::<Key<'_>>(literal).map_err(|_| ())?;
    Ok(names.iter().position(|n| n.as_bytes() == key.as_bytes()))
}

/// [`members`] by serde, with its errors: each key read with [`Key`]; the
/// object checked whole when a key holds a control character (raw or
/// escaped).
fn serde_members<'a, const N: usize>(
    json: &'a str,
    names: [&'static str; N],
) -> Result<[Option<Raw<'a>>; N], serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(json);
    let (found, control) = Members(names).deserialize(&mut de)?;
    de.end()?;
    if control {
        serde_json::from_str::<serde::de::IgnoredAny>(json)?;
    }
    Ok(found.map(|raw| raw.map(Raw::from)))
}

/// The seed and visitor of [`serde_members`].
struct Members<const N: usize>([&'static str; N]);

impl<'de, const N: usize> serde::de::DeserializeSeed<'de> for Members<N> {
    /// The members, and whether a key holds a control character.
    type Value = ([Option<&'de RawValue>; N], bool);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, const N: usize> serde::de::Visitor<'de> for Members<N> {
    type Value = ([Option<&'de RawValue>; N], bool);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = [None; N];
        let mut seen = [false; N];
        let mut control = false;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            control |= key.as_bytes().iter().any(|&b| b < 0x20);
            match self.0.iter().position(|n| n.as_bytes() == key.as_bytes()) {
                Some(i) if seen[i] => {
                    return Err(serde::de::Error::duplicate_field(self.0[i]));
                }
                Some(i) => {
                    seen[i] = true;
                    let value = map.next_value::<&'de RawValue>()?;
                    found[i] = Some(value).filter(|v| v.get() != "null");
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok((found, control))
    }
}

/// A JSON string, borrowed when it has no escapes.
pub(super) fn json_str(raw: Raw<'_>) -> Option<Cow<'_, str>> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(raw.get())
            .ok()
            .map(Cow::Owned),
    }
}

#[cfg(test)]
mod tests;
