//! The input of a query: what `tail -n +2 FILE` gives jq, read as jq 1.6
//! reads it: a stream of JSON values, every number a double, nesting up to
//! 256 levels (jq's `MAX_PARSING_DEPTH`).

use jaq_json::{Num, Rc, Val};

use super::print::num_f64;
use super::value::Jv;
use crate::json::nests_deeper;

/// jq 1.6's `MAX_PARSING_DEPTH`.
const MAX_DEPTH: usize = 256;

/// What is wrong with the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InputError {
    /// Value number `index` (from 0) is not valid JSON.
    Invalid { index: usize, reason: String },
    /// The input nests deeper than 256 levels.
    TooDeep,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Invalid { index, reason } => {
                write!(f, "record {} is not valid JSON ({reason})", index + 1)
            }
            InputError::TooDeep => f.write_str("Exceeds depth limit for parsing"),
        }
    }
}

impl InputError {
    /// The same error, in a text where `count` values came before.
    pub(super) fn after(self, count: usize) -> InputError {
        match self {
            InputError::Invalid { index, reason } => InputError::Invalid {
                index: index + count,
                reason,
            },
            other => other,
        }
    }
}

/// Every JSON value of `text`, in order.
pub(crate) fn values(text: &[u8]) -> Result<Vec<Val>, InputError> {
    if nests_deeper(text, MAX_DEPTH) {
        return Err(InputError::TooDeep);
    }
    jaq_json::read::parse_many(text)
        .enumerate()
        .map(|(index, v)| {
            let mut v = v.map_err(|e| InputError::Invalid {
                index,
                reason: e.to_string(),
            })?;
            normalize(&mut v);
            Ok(v)
        })
        .collect()
}

/// Exactly one JSON value (`fromjson`).
pub(crate) fn parse_one(text: &[u8]) -> Result<Jv, InputError> {
    if nests_deeper(text, MAX_DEPTH) {
        return Err(InputError::TooDeep);
    }
    let mut v = jaq_json::read::parse_single(text).map_err(|e| InputError::Invalid {
        index: 0,
        reason: e.to_string(),
    })?;
    normalize(&mut v);
    Ok(Jv(v))
}

/// Numbers become what jq 1.6 holds: a double (kept as an integer when it
/// is one that a double holds exactly).
fn normalize(v: &mut Val) {
    match v {
        Val::Num(n) => {
            let exact = matches!(n, Num::Int(i) if i.unsigned_abs() <= 1 << 53);
            if !exact && !matches!(n, Num::Float(_)) {
                *v = Jv::num(num_f64(n)).0;
            }
        }
        Val::Arr(a) => Rc::make_mut(a).iter_mut().for_each(normalize),
        Val::Obj(o) => Rc::make_mut(o).values_mut().for_each(normalize),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_line_is_skipped() {}

    #[test]
    fn numbers_become_doubles() {
        let v = values(b"1 1.50 12345678901234567890 1e400").unwrap();
        let shown: Vec<String> = v.into_iter().map(|v| Jv(v).to_string()).collect();
        assert_eq!(
            shown,
            [
                "1",
                "1.5",
                "12345678901234567000",
                "1.7976931348623157e+308"
            ]
        );
    }
}
