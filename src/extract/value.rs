//! The value type of extraction: jaq's JSON value, with jq 1.6's semantics
//! where jaq's differ (every number a double, jq's order of values, its
//! indexing and slicing, `%` on integers, string repetition, keys that must
//! be strings), and every new value charged to the evaluation's budget
//! before it is built ([`guard::charge`]).

use std::cmp::Ordering;
use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};
use jaq_core::val::Range;
use jaq_core::{Error, Exn, ValR};
use jaq_json::{Map, Num, Rc, Val};

use super::guard::{self, container_cost, string_cost};
use super::print::{Printer, num_f64};

mod ops;

/// A JSON value during extraction.
#[derive(Clone, Debug, Default)]
pub(crate) struct Jv(pub(crate) Val);

/// Integers up to this magnitude are kept as integers (exact in a double).
pub(crate) const EXACT_INT: f64 = 9_007_199_254_740_992.0;

impl Jv {
    /// The number `f` (an integer when it is one, so it can index arrays).
    pub(super) fn num(f: f64) -> Jv {
        let is_int =
            f.fract() == 0.0 && f.abs() <= EXACT_INT && !(f == 0.0 && f.is_sign_negative());
        Jv(Val::Num(if is_int {
            Num::Int(f as isize)
        } else {
            Num::Float(f)
        }))
    }

    /// A new string, charged to the budget.
    pub(super) fn string(b: Bytes) -> Jv {
        guard::charge(string_cost(b.len()));
        Jv(Val::utf8_str(b))
    }

    /// A new array, charged to the budget.
    pub(super) fn array(items: Vec<Val>) -> Jv {
        guard::charge(container_cost(items.len()));
        Jv(Val::Arr(Rc::new(items)))
    }

    /// jq's name of the value's type.
    pub(super) fn type_name(&self) -> &'static str {
        type_name(&self.0)
    }

    /// The number, if the value is one.
    pub(super) fn as_number(&self) -> Option<f64> {
        match &self.0 {
            Val::Num(n) => Some(num_f64(n)),
            _ => None,
        }
    }

    /// The bytes of a string value.
    pub(super) fn as_str_bytes(&self) -> Option<&Bytes> {
        match &self.0 {
            Val::TStr(b) | Val::BStr(b) => Some(b),
            _ => None,
        }
    }

    /// The value printed compactly, as `tojson`; charged to the budget.
    pub(super) fn to_json(&self) -> Bytes {
        let mut out = Vec::new();
        let cap = guard::alloc_left();
        let mut p = Printer::new(&mut out, false, cap);
        if p.value(&self.0).is_err() {
            guard::stop(guard::Stop::Memory);
        }
        guard::charge(string_cost(out.len()));
        Bytes::from(out)
    }
}

/// jq's name of a value's type.
pub(crate) fn type_name(v: &Val) -> &'static str {
    match v {
        Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::TStr(_) | Val::BStr(_) => "string",
        Val::Arr(_) => "array",
        Val::Obj(_) => "object",
    }
}

/// jq's order of kinds: null < false < true < numbers < strings < arrays < objects.
pub(crate) fn kind(v: &Val) -> u8 {
    match v {
        Val::Null => 0,
        Val::Bool(false) => 1,
        Val::Bool(true) => 2,
        Val::Num(_) => 3,
        Val::TStr(_) | Val::BStr(_) => 4,
        Val::Arr(_) => 5,
        Val::Obj(_) => 6,
    }
}

/// jq 1.6's `jv_cmp`, one step per array or object compared.
pub(crate) fn cmp(a: &Val, b: &Val) -> Ordering {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) => {
            let (x, y) = (num_f64(x), num_f64(y));
            if x < y {
                Ordering::Less
            } else if x == y {
                Ordering::Equal
            } else {
                Ordering::Greater
            }
        }
        (Val::TStr(x) | Val::BStr(x), Val::TStr(y) | Val::BStr(y)) => x[..].cmp(&y[..]),
        (Val::Arr(x), Val::Arr(y)) if Rc::ptr_eq(x, y) => Ordering::Equal,
        (Val::Arr(x), Val::Arr(y)) => {
            guard::tick();
            cmp_seq(x.iter(), y.iter())
        }
        (Val::Obj(x), Val::Obj(y)) if Rc::ptr_eq(x, y) => Ordering::Equal,
        (Val::Obj(x), Val::Obj(y)) => cmp_obj(x, y),
        _ => kind(a).cmp(&kind(b)),
    }
}

fn cmp_seq<'v>(x: impl Iterator<Item = &'v Val>, y: impl Iterator<Item = &'v Val>) -> Ordering {
    let mut y = y;
    for a in x {
        match y.next() {
            None => return Ordering::Greater,
            Some(b) => match cmp(a, b) {
                Ordering::Equal => {}
                o => return o,
            },
        }
    }
    if y.next().is_some() {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

/// Objects compare by their sorted keys, then by their values in key order.
fn cmp_obj(x: &Map, y: &Map) -> Ordering {
    guard::tick();
    let (kx, ky) = (sorted_keys(x), sorted_keys(y));
    match cmp_seq(kx.iter().copied(), ky.iter().copied()) {
        Ordering::Equal => {}
        o => return o,
    }
    for k in kx {
        match (x.get(k), y.get(k)) {
            (Some(a), Some(b)) => match cmp(a, b) {
                Ordering::Equal => {}
                o => return o,
            },
            _ => return Ordering::Equal,
        }
    }
    Ordering::Equal
}

fn sorted_keys(m: &Map) -> Vec<&Val> {
    let mut k: Vec<&Val> = m.keys().collect();
    k.sort_by(|a, b| cmp(a, b));
    k
}

pub(crate) fn equal(a: &Val, b: &Val) -> bool {
    cmp(a, b) == Ordering::Equal
}

impl PartialEq for Jv {
    fn eq(&self, other: &Self) -> bool {
        equal(&self.0, &other.0)
    }
}
impl Eq for Jv {}
impl PartialOrd for Jv {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Jv {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp(&self.0, &other.0)
    }
}

/// Compact, cut after 100 bytes: for error messages.
impl fmt::Display for Jv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 100;
        let mut out = Vec::new();
        let cut = Printer::new(&mut out, false, SHOWN).value(&self.0).is_err();
        f.write_str(&String::from_utf8_lossy(&out))?;
        if cut { f.write_str("...") } else { Ok(()) }
    }
}

impl From<bool> for Jv {
    fn from(b: bool) -> Self {
        Jv(Val::Bool(b))
    }
}
impl From<isize> for Jv {
    fn from(i: isize) -> Self {
        Jv::num(i as f64)
    }
}
impl From<usize> for Jv {
    fn from(i: usize) -> Self {
        Jv::num(i as f64)
    }
}
impl From<f64> for Jv {
    fn from(f: f64) -> Self {
        Jv::num(f)
    }
}
impl From<String> for Jv {
    fn from(s: String) -> Self {
        Jv::string(Bytes::from(s))
    }
}
impl From<Range<Jv>> for Jv {
    fn from(r: Range<Jv>) -> Self {
        let mut m = Map::default();
        for (k, v) in [("start", r.start), ("end", r.end)] {
            if let Some(v) = v {
                m.insert(Val::from(k.to_owned()), v.0);
            }
        }
        guard::charge(container_cost(m.len()));
        Jv(Val::obj(m))
    }
}
impl FromIterator<Jv> for Jv {
    fn from_iter<I: IntoIterator<Item = Jv>>(iter: I) -> Self {
        guard::charge(container_cost(0));
        let items: Vec<Val> = iter
            .into_iter()
            .map(|x| {
                guard::charge(guard::SLOT_BYTES);
                x.0
            })
            .collect();
        Jv(Val::Arr(Rc::new(items)))
    }
}

/// `"type (value)"`, as jq's error messages show a value.
pub(crate) fn shown(v: &Jv) -> String {
    format!("{} ({v})", v.type_name())
}

pub(crate) fn fail(msg: impl fmt::Display) -> Error<Jv> {
    Error::str(msg)
}

/// jq 1.6's slice bounds: start truncated, end rounded up, negatives from
/// the end, both clipped to `len`.
pub(crate) fn slice_bounds(len: usize, range: &Range<&Jv>) -> Option<(usize, usize)> {
    let len_f = len as f64;
    let bound = |b: Option<&&Jv>, default: f64| match b.map(|b| &b.0) {
        None | Some(Val::Null) => Some(default),
        Some(Val::Num(n)) => Some(num_f64(n)),
        Some(_) => None,
    };
    let mut start = bound(range.start.as_ref(), 0.0)?;
    let mut end = bound(range.end.as_ref(), len_f)?;
    if start < 0.0 {
        start += len_f;
    }
    if end < 0.0 {
        end += len_f;
    }
    let start = start.clamp(0.0, len_f);
    let end = end.min(len_f).max(start);
    let s = start as usize;
    let e = if end > end.trunc() {
        end as usize + 1
    } else {
        end as usize
    };
    Some((s, e.min(len)))
}

/// Byte offsets of the chars of `s`, plus its length.
fn char_offsets(s: &[u8]) -> Vec<usize> {
    let mut offs: Vec<usize> = (0..s.len()).filter(|&i| (s[i] as i8) >= -0x40).collect();
    offs.push(s.len());
    offs
}

impl Jv {
    pub(crate) fn slice(self, range: Range<&Jv>) -> ValR<Jv> {
        match &self.0 {
            Val::Null => Ok(self),
            Val::Arr(a) => match slice_bounds(a.len(), &range) {
                Some((s, e)) => Ok(Jv::array(a[s..e].to_vec())),
                None => Err(fail(
                    "Start and end indices of an array slice must be numbers",
                )),
            },
            Val::TStr(b) => {
                let offs = char_offsets(b);
                match slice_bounds(offs.len() - 1, &range) {
                    Some((s, e)) => Ok(Jv(Val::utf8_str(b.slice(offs[s]..offs[e])))),
                    None => Err(fail(
                        "Start and end indices of an string slice must be numbers",
                    )),
                }
            }
            _ => Err(fail(format!(
                "Cannot index {} with object",
                self.type_name()
            ))),
        }
    }

    pub(crate) fn index_val(self, index: &Jv) -> ValR<Jv> {
        match (&self.0, &index.0) {
            (Val::Null, _) => Ok(Jv(Val::Null)),
            (Val::Obj(o), Val::TStr(_)) => Ok(Jv(get(o, &index.0).cloned().unwrap_or_default())),
            (Val::Arr(a), Val::Num(n)) => {
                Ok(Jv(array_get(a, num_f64(n)).cloned().unwrap_or_default()))
            }
            (Val::Arr(_), Val::Arr(_)) => indices(&self, index),
            (Val::Arr(_) | Val::TStr(_), Val::Obj(o)) => {
                let get = |k: &str| o.get(&Val::from(k.to_owned())).cloned().map(Jv);
                let (start, end) = (get("start"), get("end"));
                self.slice(start.as_ref()..end.as_ref())
            }
            (_, Val::TStr(_)) => Err(fail(format!(
                "Cannot index {} with string {index}",
                self.type_name()
            ))),
            _ => Err(fail(format!(
                "Cannot index {} with {}",
                self.type_name(),
                index.type_name()
            ))),
        }
    }
}

/// The value of `key` in `o`: small objects (most records a filter reads
/// a few fields of) are scanned rather than hashed.
pub(crate) fn get<'m>(o: &'m Map, key: &Val) -> Option<&'m Val> {
    if o.len() <= 8 {
        o.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    } else {
        o.get(key)
    }
}

/// The element at index `f` (negative from the end); none when `f` is not
/// an integer or is out of bounds.
fn array_get(a: &[Val], f: f64) -> Option<&Val> {
    if f.fract() != 0.0 {
        return None;
    }
    let i = if f < 0.0 { f + a.len() as f64 } else { f };
    if i < 0.0 { None } else { a.get(i as usize) }
}

pub(crate) fn iterate_error(v: &Jv) -> Error<Jv> {
    fail(format!("Cannot iterate over {}", shown_short(v)))
}

/// `type` or `type (value)` for scalars, as jq shows them when iterating.
fn shown_short(v: &Jv) -> String {
    match v.0 {
        Val::Arr(_) | Val::Obj(_) => v.type_name().to_owned(),
        _ => shown(v),
    }
}

/// jq 1.6's `indices`: byte offsets in strings, positions in arrays (of a
/// sub-array, or of an element).
pub(crate) fn indices(v: &Jv, i: &Jv) -> ValR<Jv> {
    let found: Vec<usize> = match (&v.0, &i.0) {
        (Val::Null, _) | (_, Val::Null) => return Ok(Jv(Val::Null)),
        (Val::TStr(s), Val::TStr(t)) if t.is_empty() => {
            let _ = s;
            Vec::new()
        }
        (Val::TStr(s), Val::TStr(t)) => memchr::memmem::find_iter(s, &t[..]).collect(),
        (Val::Arr(a), Val::Arr(b)) if b.is_empty() => {
            let _ = a;
            Vec::new()
        }
        (Val::Arr(a), Val::Arr(b)) => (0..=a.len().saturating_sub(b.len()))
            .filter(|&p| {
                p + b.len() <= a.len()
                    && a[p..p + b.len()]
                        .iter()
                        .zip(b.iter())
                        .all(|(x, y)| equal(x, y))
            })
            .collect(),
        (Val::Arr(a), x) => (0..a.len()).filter(|&p| equal(&a[p], x)).collect(),
        _ => {
            return Err(fail(format!(
                "Cannot determine the indices of {} in {}",
                shown(i),
                shown(v)
            )));
        }
    };
    Ok(Jv::array(
        found.into_iter().map(|p| Val::from(p as isize)).collect(),
    ))
}

/// Wraps a jaq error as an exception.
pub(crate) fn exn<'a>(e: Error<Jv>) -> Exn<'a, Jv> {
    Exn::from(e)
}
