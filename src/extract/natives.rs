//! The library a query sees: jaq's standard library, less what reaches out
//! of the evaluation (`env`, `localtime`, `strflocaltime`, `input`,
//! `debug`, `stderr`, `halt`, modules), its regular-expression natives
//! behind a check of their work,
//! with jq 1.6's own definitions where jaq's differ (`join`,
//! `from_entries`, `with_entries`, `@html`, `@uri`) and what jaq lacks (`@csv`,
//! `@tsv`, `IN`, `INDEX`, `leaf_paths`); `range` counts its steps.

use bytes::Bytes;
use jaq_core::load::parse::{Def, Term};
use jaq_core::native::{Filter, Fun, bome, run, unary, v};
use jaq_core::{RunPtr, ValR};
use jaq_json::Val;

use super::guard;
use super::input;
use super::print::{num_f64, number};
use super::traits::Eval;
use super::value::{Jv, cmp, equal, fail, indices, kind, shown};

/// jq 1.6's definitions, and what jaq lacks.
const DEFS: &str = r#"
def join($x): reduce .[] as $i (null; (if . == null then "" else . + $x end) + ($i | if . == null then "" elif type == "string" then . else tojson end)) // "";
def from_entries: map({(.key // .name): .value}) | add + {} // {};
def with_entries(f): to_entries | map(f) | from_entries;
def IN(s): any(s == .; .);
def IN(src; s): any(src == s; .);
def INDEX(stream; idx_expr): reduce stream as $row ({}; .[$row | idx_expr | tostring] |= $row);
def INDEX(idx_expr): INDEX(.[]; idx_expr);
def leaf_paths: paths(scalars);
"#;

/// Definitions of the libraries that are left out: they reach out of the
/// evaluation, or ours replace them (a definition replaced by one of
/// `DEFS` stays, since definitions before it may call it).
const LEFT_OUT_DEFS: [&str; 6] = ["stderr", "debug", "halt", "halt_error", "@html", "@uri"];
/// Native filters that are left out: they reach out of the evaluation
/// (`env` reads the server's environment, `localtime` and `strflocaltime`
/// its time zone, `halt` would end the process, `debug_empty` and
/// `stderr_empty` write to its stderr; `tobytes` makes byte strings, which
/// jq 1.6 does not have).
const LEFT_OUT_FUNS: [&str; 7] = [
    "env",
    "localtime",
    "strflocaltime",
    "halt",
    "debug_empty",
    "stderr_empty",
    "tobytes",
];

/// jaq's regular-expression natives, and the names they run under here:
/// names with a space, which no filter can write, so every match goes
/// through the definitions of [`REGEX_GUARDS`].
const REGEX_NATIVES: [(&str, &str); 3] = [
    ("matches", "matches native"),
    ("split_matches", "split_matches native"),
    ("split_", "split_ native"),
];

/// The regular-expression natives behind a check of their work (written
/// with `lro_native_` names, renamed after parsing, see [`REGEX_NATIVES`]).
/// They come before jaq's library, whose `test`, `match`, `capture`,
/// `scan`, `split`, `sub` and `gsub` call them.
const REGEX_GUARDS: &str = r#"
def matches($re; $flags): lro_native_check($re) | lro_native_matches($re; $flags);
def split_matches($re; $flags): lro_native_check($re) | lro_native_split_matches($re; $flags);
def split_($re; $flags): lro_native_check($re) | lro_native_split_($re; $flags);
"#;

/// The name a guard calls, as the native is named.
fn native_name(placeholder: &str) -> Option<&'static str> {
    let name = placeholder.strip_prefix("lro_native_")?;
    if name == "check" {
        return Some(REGEX_CHECK);
    }
    REGEX_NATIVES
        .iter()
        .find(|(theirs, _)| *theirs == name)
        .map(|(_, ours)| *ours)
}

/// The native that checks the work of a regular expression.
const REGEX_CHECK: &str = "regex work check";

/// Renames the calls of a guard's body (pipes of calls) to the natives.
fn rename_calls(t: &mut Term<&'static str>) {
    match t {
        Term::Call(name, args) => {
            if let Some(n) = native_name(name) {
                *name = n;
            }
            args.iter_mut().for_each(rename_calls);
        }
        Term::BinOp(l, _, r) => {
            rename_calls(l);
            rename_calls(r);
        }
        _ => {}
    }
}

fn regex_guards() -> Vec<Def<&'static str>> {
    let mut defs = jaq_core::load::parse(REGEX_GUARDS, |p| p.defs()).unwrap_or_default();
    defs.iter_mut().for_each(|d| rename_calls(&mut d.body));
    defs
}

/// Every definition a query can call.
pub(crate) fn defs() -> impl Iterator<Item = Def<&'static str>> {
    let ours = jaq_core::load::parse(DEFS, |p| p.defs()).unwrap_or_default();
    jaq_core::defs()
        .chain(regex_guards())
        .chain(jaq_std::defs())
        .chain(jaq_json::defs())
        .filter(|d| !LEFT_OUT_DEFS.contains(&d.name))
        .chain(ours)
}

/// Every native filter a query can call; ours first, so they win.
pub(crate) fn funs() -> Vec<Fun<Eval>> {
    let ours = ours().into_vec().into_iter().map(run::<Eval>);
    let theirs = jaq_core::funs::<Eval>().chain(jaq_std::funs::<Eval>());
    let theirs = theirs.map(|(name, args, f)| {
        let renamed = REGEX_NATIVES.iter().find(|(n, _)| *n == name);
        (renamed.map_or(name, |(_, ours)| *ours), args, f)
    });
    ours.chain(theirs.filter(|(name, ..)| !LEFT_OUT_FUNS.contains(name)))
        .collect()
}

fn ours() -> Box<[Filter<RunPtr<Eval>>]> {
    Box::new([
        ("length", v(0), |cv| bome(length(&cv.1))),
        ("tojson", v(0), |cv| {
            bome(Ok(Jv(Val::utf8_str(cv.1.to_json()))))
        }),
        ("fromjson", v(0), |cv| bome(fromjson(&cv.1))),
        ("contains", v(1), |cv| {
            unary(cv, |x, y| contains_checked(&x, &y))
        }),
        ("has", v(1), |cv| unary(cv, |x, k| has(&x, &k))),
        ("indices", v(1), |cv| unary(cv, |x, i| indices(&x, &i))),
        ("bsearch", v(1), |cv| unary(cv, |a, x| bsearch(&a, &x))),
        ("range", v(3), |mut cv| {
            let by = cv.0.pop_var();
            let upto = cv.0.pop_var();
            let from = cv.0.pop_var();
            match (from.as_number(), upto.as_number(), by.as_number()) {
                (Some(f), Some(u), Some(b)) => Box::new(range(f, u, b).map(|x| Ok(Jv::num(x)))),
                _ => bome(Err(fail("Range bounds must be numeric"))),
            }
        }),
        (REGEX_CHECK, v(1), |cv| {
            unary(cv, |s, re| regex_check(s, &re))
        }),
        ("@csv", v(0), |cv| bome(row(&cv.1, true))),
        ("@tsv", v(0), |cv| bome(row(&cv.1, false))),
        ("@html", v(0), |cv| {
            bome(Ok(escape_with(tostring(cv.1), html)))
        }),
        ("@uri", v(0), |cv| {
            bome(Ok(escape_with(tostring(cv.1), uri)))
        }),
    ])
}

/// Most work one regular-expression call may do, in string bytes times
/// automaton states (about a second): a match cannot be stopped once it
/// runs, so its work is checked before.
const REGEX_WORK: usize = 30_000_000;

/// `s`, unless matching `re` against it could take longer than
/// [`REGEX_WORK`]: the matcher (a Pike VM) takes time in proportion to the
/// string's length times its automaton's size, estimated from the pattern:
/// its length, times every counted repetition (`{n}`, `{n,m}`) in it.
fn regex_check(s: Jv, re: &Jv) -> ValR<Jv> {
    let (Some(text), Some(pattern)) = (s.as_str_bytes(), re.as_str_bytes()) else {
        return Ok(s);
    };
    let work = text.len().saturating_mul(automaton_size(pattern));
    if work > REGEX_WORK {
        return Err(fail(format!(
            "the regular expression is too costly on a string of {} bytes (at most {REGEX_WORK} bytes times pattern states)",
            text.len()
        )));
    }
    Ok(s)
}

/// A bound on the states of `pattern`'s automaton.
fn automaton_size(pattern: &[u8]) -> usize {
    let mut size = pattern.len().saturating_add(1);
    let mut rest = pattern;
    while let Some(i) = memchr::memchr(b'{', rest) {
        rest = &rest[i + 1..];
        let end = memchr::memchr(b'}', rest).unwrap_or(rest.len());
        let counts = rest[..end].split(|&b| b == b',');
        let most = counts
            .filter_map(|c| std::str::from_utf8(c).ok()?.trim().parse::<usize>().ok())
            .max()
            .unwrap_or(1);
        size = size.saturating_mul(most.max(1));
    }
    size
}

/// jq 1.6's `range($from; $upto; $by)`: nothing when `$by` is 0.
fn range(from: f64, upto: f64, by: f64) -> impl Iterator<Item = f64> {
    let mut x = from;
    std::iter::from_fn(move || {
        guard::tick();
        let more = (by > 0.0 && x < upto) || (by < 0.0 && x > upto);
        more.then(|| {
            let y = x;
            x += by;
            y
        })
    })
}

fn length(v: &Jv) -> ValR<Jv> {
    Ok(match &v.0 {
        Val::Null => Jv::num(0.0),
        Val::Bool(_) => return Err(fail(format!("{} has no length", shown(v)))),
        Val::Num(n) => Jv::num(num_f64(n).abs()),
        Val::TStr(s) | Val::BStr(s) => {
            Jv::num(s.iter().filter(|&&b| (b as i8) >= -0x40).count() as f64)
        }
        Val::Arr(a) => Jv::num(a.len() as f64),
        Val::Obj(o) => Jv::num(o.len() as f64),
    })
}

fn tostring(v: Jv) -> Jv {
    match v.0 {
        Val::TStr(_) => v,
        _ => Jv(Val::utf8_str(v.to_json())),
    }
}

fn fromjson(v: &Jv) -> ValR<Jv> {
    let Some(s) = v.as_str_bytes() else {
        return Err(fail(format!("{} cannot be parsed as JSON", shown(v))));
    };
    guard::charge(guard::string_cost(s.len()).saturating_mul(4));
    input::parse_one(s).map_err(|e| fail(format!("{e} (while parsing '{v}')")))
}

/// jq 1.6's `contains`: an error unless both sides are of one kind.
fn contains_checked(a: &Jv, b: &Jv) -> ValR<Jv> {
    if kind(&a.0) == kind(&b.0) {
        Ok(Jv::from(contains(&a.0, &b.0)))
    } else {
        Err(fail(format!(
            "{} and {} cannot have their containment checked",
            shown(a),
            shown(b)
        )))
    }
}

fn contains(a: &Val, b: &Val) -> bool {
    guard::tick();
    match (a, b) {
        _ if kind(a) != kind(b) => false,
        (Val::Obj(x), Val::Obj(y)) => y
            .iter()
            .all(|(k, yv)| x.get(k).is_some_and(|xv| contains(xv, yv))),
        (Val::Arr(x), Val::Arr(y)) => y.iter().all(|yv| x.iter().any(|xv| contains(xv, yv))),
        (Val::TStr(x), Val::TStr(y)) => memchr::memmem::find(x, y).is_some(),
        _ => equal(a, b),
    }
}

fn has(v: &Jv, k: &Jv) -> ValR<Jv> {
    match (&v.0, &k.0) {
        (Val::Obj(o), Val::TStr(_)) => Ok(Jv::from(o.contains_key(&k.0))),
        (Val::Arr(a), Val::Num(n)) => {
            let i = num_f64(n);
            Ok(Jv::from(i >= 0.0 && i < a.len() as f64))
        }
        _ => Err(fail(format!(
            "Cannot check whether {} has a {} key",
            v.type_name(),
            k.type_name()
        ))),
    }
}

fn bsearch(a: &Jv, x: &Jv) -> ValR<Jv> {
    let Val::Arr(items) = &a.0 else {
        return Err(fail(format!("{} cannot be searched from", shown(a))));
    };
    let at = items.binary_search_by(|y| cmp(y, &x.0));
    Ok(Jv::num(match at {
        Ok(i) => i as f64,
        Err(i) => -1.0 - i as f64,
    }))
}

/// jq 1.6's `@csv` and `@tsv` of an array.
fn row(v: &Jv, csv: bool) -> ValR<Jv> {
    let fmt = if csv { "csv" } else { "tsv" };
    let Val::Arr(a) = &v.0 else {
        return Err(fail(format!(
            "{} cannot be {fmt}-formatted, only an array can be",
            shown(v)
        )));
    };
    let mut out = Vec::new();
    for (i, x) in a.iter().enumerate() {
        if i > 0 {
            out.push(if csv { b',' } else { b'\t' });
        }
        cell(x, csv, &mut out).map_err(|_| {
            fail(format!(
                "{} is not valid in a csv row",
                shown(&Jv(x.clone()))
            ))
        })?;
    }
    Ok(Jv::string(Bytes::from(out)))
}

fn cell(x: &Val, csv: bool, out: &mut Vec<u8>) -> Result<(), ()> {
    match x {
        Val::Null => {}
        Val::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Val::Num(n) if num_f64(n).is_nan() => {}
        Val::Num(n) => {
            let mut s = String::new();
            number(num_f64(n), &mut s);
            out.extend_from_slice(s.as_bytes());
        }
        Val::TStr(s) | Val::BStr(s) if csv => {
            out.push(b'"');
            for &c in s.iter() {
                out.extend_from_slice(if c == b'"' {
                    b"\"\""
                } else {
                    std::slice::from_ref(&c)
                });
            }
            out.push(b'"');
        }
        Val::TStr(s) | Val::BStr(s) => {
            for &c in s.iter() {
                let esc: &[u8] = match c {
                    b'\\' => b"\\\\",
                    b'\t' => b"\\t",
                    b'\n' => b"\\n",
                    b'\r' => b"\\r",
                    _ => std::slice::from_ref(&c),
                };
                out.extend_from_slice(esc);
            }
        }
        _ => return Err(()),
    }
    Ok(())
}

fn escape_with(v: Jv, f: fn(u8, &mut Vec<u8>)) -> Jv {
    let Some(s) = v.as_str_bytes() else { return v };
    let mut out = Vec::with_capacity(s.len());
    for &c in s.iter() {
        f(c, &mut out);
    }
    Jv::string(Bytes::from(out))
}

fn html(c: u8, out: &mut Vec<u8>) {
    let esc: &[u8] = match c {
        b'<' => b"&lt;",
        b'>' => b"&gt;",
        b'&' => b"&amp;",
        b'\'' => b"&#39;",
        b'"' => b"&quot;",
        _ => std::slice::from_ref(&c),
    };
    out.extend_from_slice(esc);
}

fn uri(c: u8, out: &mut Vec<u8>) {
    if c.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&c) {
        out.push(c);
    } else {
        out.extend_from_slice(format!("%{c:02X}").as_bytes());
    }
}
