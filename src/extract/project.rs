//! Which parts of each record a filter can see: a conservative analysis of
//! the parsed filter, so the reader can skip (validate without building)
//! the fields a filter never touches.
//!
//! The analysis follows what the input `.` is as the filter runs: a record
//! at a path of object keys (`Rec`), an array of records nested `d` deep
//! (`Arr(d)`: `-s`'s input, `group_by`'s groups), or a value that depends
//! only on parts already kept whole (`Derived`). It returns a [`Need`]:
//! the record's keys (recursively) a filter reads, or [`Need::All`].
//!
//! Soundness rests on one rule: **whatever the analysis does not model
//! keeps its whole input**. Only these forms are modelled, each by what
//! jq 1.6 does with it: `.`, `.key`, `.[]` / `.[n]` / `.[a:b]` with
//! constant bounds on arrays of records, `|`, `,`, `//`, `and`, `or`,
//! `if`, `try` (`?`), `as $x` (its source kept whole), arithmetic and
//! comparisons (both sides kept whole), object, array and string
//! construction (their parts kept whole), literals, variables, and the
//! library's `select`, `empty`, `not`, `null`, `true`, `false`,
//! `limit`, `first(f)`, and on arrays of records `length`, `map`,
//! `first`, `last`, `group_by`, `sort_by`, `unique_by`, `min_by`,
//! `max_by`. Anything else (other builtins, `def`, `reduce`, `foreach`,
//! `..`, `label`, updates, destructuring) keeps its input whole, and so
//! does the filter's output. A projected record differs from the real one
//! only inside objects, by missing keys no modelled form reads, and keeps
//! its type, so truthiness, `length` of arrays of records and errors
//! (which name types, or values kept whole) are the same.

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Pattern, Term};
use jaq_core::path::{Part, Path};

/// What of each record a filter reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// The whole value.
    All,
    /// When the value is an object, only these keys, each with what of its
    /// value is read; any other value is kept whole.
    Keys(Vec<(Box<[u8]>, Need)>),
}

impl Need {
    /// What of `key`'s value is read, if `key` is.
    pub(super) fn key<'n>(keys: &'n [(Box<[u8]>, Need)], key: &[u8]) -> Option<&'n Need> {
        keys.iter().find(|(k, _)| &k[..] == key).map(|(_, n)| n)
    }

    /// Marks the value at `path` as read: wholly, or its presence only.
    fn mark(&mut self, path: &[Box<[u8]>], whole: bool) {
        let Need::Keys(keys) = self else { return };
        let Some((first, rest)) = path.split_first() else {
            if whole {
                *self = Need::All;
            }
            return;
        };
        let i = match keys.iter().position(|(k, _)| k == first) {
            Some(i) => i,
            None => {
                keys.push((first.clone(), Need::Keys(Vec::new())));
                keys.len() - 1
            }
        };
        keys[i].1.mark(rest, whole);
    }
}

/// What the input of a term is (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Src {
    Derived,
    Arr(usize),
    Rec(Vec<Box<[u8]>>),
}

/// The elements of an array of records nested `d` deep.
fn elem(d: usize) -> Src {
    if d <= 1 {
        Src::Rec(Vec::new())
    } else {
        Src::Arr(d - 1)
    }
}

/// What each record of `filter` needs, read with `-s` when `slurp`.
pub(crate) fn needs(filter: &str, slurp: bool) -> Need {
    let Some(term) = jaq_core::load::parse(filter, |p| p.term()) else {
        return Need::All;
    };
    let mut a = Analysis {
        need: Need::Keys(Vec::new()),
        depth: 0,
    };
    let src = if slurp {
        Src::Arr(1)
    } else {
        Src::Rec(Vec::new())
    };
    let outs = a.term(&term, &src);
    a.wholes(&outs);
    a.need
}

/// What is known of a value: an object, or anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Object,
    Any,
}

/// Whether `filter` (without `-s`) makes exactly one value of any JSON
/// object and cannot fail on one: so its `n`-th output value is its
/// `n`-th record's when every record is an object. Only forms that
/// surely do are accepted, each by what jq 1.6 does with it: `.`, `.key`
/// on an object, object construction with constant keys and such
/// values, `[f]` of such an `f`, string interpolation of such terms
/// (`tostring` never fails), `f // g`, `try f`, `f | g`, `objects` on an
/// object, numbers, strings, `null`, `true`, `false` and variables.
pub(crate) fn one_per_object(filter: &str) -> bool {
    jaq_core::load::parse(filter, |p| p.term())
        .is_some_and(|t| single(&t, Known::Object, 0).is_some())
}

/// What the one value `t` makes of an input known as `input` is, when it
/// surely makes one and cannot fail.
fn single(t: &Term<&str>, input: Known, depth: usize) -> Option<Known> {
    use Known::*;
    if depth >= MAX_DEPTH {
        return None;
    }
    let one = |t: &Term<&str>, input| single(t, input, depth + 1);
    match t {
        Term::Id => Some(input),
        Term::Num(_) | Term::Var(_) | Term::Arr(None) => Some(Any),
        Term::Arr(Some(t)) => never_fails(t, input, depth + 1).then_some(Any),
        Term::Str(None, parts) => parts
            .iter()
            .all(|p| match p {
                StrPart::Term(t) => one(t, input).is_some(),
                _ => true,
            })
            .then_some(Any),
        Term::Obj(entries) => entries
            .iter()
            .all(|(k, v)| {
                constant_key(k).is_some()
                    && match v {
                        None => input == Object,
                        Some(v) => one(v, input).is_some(),
                    }
            })
            .then_some(Object),
        Term::Path(head, path) => path
            .0
            .iter()
            .try_fold(one(head, input)?, |known, (part, _)| match part {
                Part::Index(i) if known == Object && constant_key(i).is_some() => Some(Any),
                _ => None,
            }),
        Term::BinOp(l, BinaryOp::Pipe(None), r) => one(r, one(l, input)?),
        Term::BinOp(l, BinaryOp::Alt, r) => {
            one(l, input)?;
            one(r, input).map(|_| Any)
        }
        Term::TryCatch(t, None) => one(t, input),
        Term::Call(name, args) if args.is_empty() => match *name {
            "objects" if input == Object => Some(Object),
            "null" | "true" | "false" => Some(Any),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `t` surely makes its values (any number of them, in `[t]`)
/// of an input known as `input` without failing: a `,` of such terms.
fn never_fails(t: &Term<&str>, input: Known, depth: usize) -> bool {
    match t {
        Term::BinOp(l, BinaryOp::Comma, r) if depth < MAX_DEPTH => {
            never_fails(l, input, depth + 1) && never_fails(r, input, depth + 1)
        }
        t => single(t, input, depth).is_some(),
    }
}

/// Deeper filters than this keep the whole record.
const MAX_DEPTH: usize = 200;

struct Analysis {
    need: Need,
    depth: usize,
}

/// The outputs of a term, as sources.
type Outs = Vec<Src>;

fn add(outs: &mut Outs, more: Outs) {
    for s in more {
        if !outs.contains(&s) {
            outs.push(s);
        }
    }
}

impl Analysis {
    fn whole(&mut self, s: &Src) {
        match s {
            Src::Derived => {}
            Src::Arr(_) => self.need = Need::All,
            Src::Rec(p) => self.need.mark(p, true),
        }
    }

    fn wholes(&mut self, outs: &[Src]) {
        outs.iter().for_each(|s| self.whole(s));
    }

    /// The term keeps its whole input; its outputs depend on nothing else.
    fn fallback(&mut self, src: &Src) -> Outs {
        self.whole(src);
        vec![Src::Derived]
    }

    /// Analyses `t` and keeps its outputs whole.
    fn used(&mut self, t: &Term<&str>, src: &Src) {
        let outs = self.term(t, src);
        self.wholes(&outs);
    }

    fn term(&mut self, t: &Term<&str>, src: &Src) -> Outs {
        if self.depth >= MAX_DEPTH {
            self.need = Need::All;
            return vec![Src::Derived];
        }
        self.depth += 1;
        let outs = self.step(t, src);
        self.depth -= 1;
        outs
    }

    fn step(&mut self, t: &Term<&str>, src: &Src) -> Outs {
        match t {
            Term::Id => vec![src.clone()],
            Term::Num(_) | Term::Var(_) | Term::Arr(None) => vec![Src::Derived],
            Term::Arr(Some(t)) | Term::Neg(t) => {
                self.used(t, src);
                vec![Src::Derived]
            }
            Term::Str(_, parts) => {
                for part in parts {
                    if let StrPart::Term(t) = part {
                        self.used(t, src);
                    }
                }
                vec![Src::Derived]
            }
            Term::Obj(entries) => self.object(entries, src),
            Term::BinOp(l, op, r) => self.binop(l, op, r, src),
            Term::IfThenElse(arms, otherwise) => self.if_then_else(arms, otherwise.as_deref(), src),
            Term::TryCatch(t, catch) => {
                let mut outs = self.term(t, src);
                if let Some(c) = catch {
                    add(&mut outs, self.term(c, &Src::Derived));
                }
                outs
            }
            Term::Call(name, args) => self.call(name, args, src),
            Term::Path(head, path) => self.path(head, path, src),
            _ => self.fallback(src),
        }
    }

    fn binop(&mut self, l: &Term<&str>, op: &BinaryOp<&str>, r: &Term<&str>, src: &Src) -> Outs {
        match op {
            BinaryOp::Pipe(None) => {
                let mut outs = Vec::new();
                for s in self.term(l, src) {
                    add(&mut outs, self.term(r, &s));
                }
                outs
            }
            BinaryOp::Pipe(Some(Pattern::Var(_))) => {
                self.used(l, src);
                self.term(r, src)
            }
            BinaryOp::Comma | BinaryOp::Alt => {
                let mut outs = self.term(l, src);
                add(&mut outs, self.term(r, src));
                outs
            }
            BinaryOp::Or | BinaryOp::And => {
                self.term(l, src);
                self.term(r, src);
                vec![Src::Derived]
            }
            BinaryOp::Math(_) | BinaryOp::Cmp(_) => {
                self.used(l, src);
                self.used(r, src);
                vec![Src::Derived]
            }
            _ => self.fallback(src),
        }
    }

    fn if_then_else(
        &mut self,
        arms: &[(Term<&str>, Term<&str>)],
        otherwise: Option<&Term<&str>>,
        src: &Src,
    ) -> Outs {
        let mut outs = Vec::new();
        for (cond, then) in arms {
            self.term(cond, src);
            add(&mut outs, self.term(then, src));
        }
        match otherwise {
            Some(e) => add(&mut outs, self.term(e, src)),
            None => add(&mut outs, vec![src.clone()]),
        }
        outs
    }

    fn object(&mut self, entries: &[(Term<&str>, Option<Term<&str>>)], src: &Src) -> Outs {
        for (k, v) in entries {
            match (k, v) {
                (Term::Var(_), None) => {}
                (k, None) => match constant_key(k) {
                    Some(key) => {
                        let outs = self.index_key(src, key);
                        self.wholes(&outs);
                    }
                    None => return self.fallback(src),
                },
                (k, Some(v)) => {
                    self.used(k, src);
                    self.used(v, src);
                }
            }
        }
        vec![Src::Derived]
    }

    fn call(&mut self, name: &str, args: &[Term<&str>], src: &Src) -> Outs {
        match (name, args, src) {
            ("empty", [], _) => Vec::new(),
            ("null" | "true" | "false", [], _) => vec![Src::Derived],
            ("not", [], _) => vec![Src::Derived],
            ("select", [f], _) => {
                self.term(f, src);
                vec![src.clone()]
            }
            ("limit", [n, f], _) => {
                self.used(n, src);
                self.term(f, src)
            }
            ("first", [f], _) => self.term(f, src),
            (_, _, Src::Arr(d)) => self.array_call(name, args, *d),
            _ => self.fallback(src),
        }
    }

    /// Library filters over an array of records nested `d` deep.
    fn array_call(&mut self, name: &str, args: &[Term<&str>], d: usize) -> Outs {
        match (name, args) {
            ("length", []) => vec![Src::Derived],
            ("first" | "last", []) => vec![elem(d), Src::Derived],
            ("map", [f]) => {
                let outs = self.term(f, &elem(d));
                if outs == [elem(d)] {
                    vec![Src::Arr(d)]
                } else {
                    self.wholes(&outs);
                    vec![Src::Derived]
                }
            }
            ("group_by", [f]) => {
                self.used(f, &elem(d));
                vec![Src::Arr(d + 1)]
            }
            ("sort_by" | "unique_by", [f]) => {
                self.used(f, &elem(d));
                vec![Src::Arr(d)]
            }
            ("min_by" | "max_by", [f]) => {
                self.used(f, &elem(d));
                vec![elem(d), Src::Derived]
            }
            _ => self.fallback(&Src::Arr(d)),
        }
    }

    fn path(&mut self, head: &Term<&str>, path: &Path<Term<&str>>, src: &Src) -> Outs {
        let mut outs = self.term(head, src);
        for (part, _) in &path.0 {
            let mut next = Vec::new();
            for target in &outs {
                match self.part(part, target) {
                    Some(o) => add(&mut next, o),
                    None => return self.fallback(src),
                }
            }
            outs = next;
        }
        outs
    }

    /// One step of a path applied to `target`; `None` when the step
    /// depends on the input (its bounds are not constants).
    fn part(&mut self, part: &Part<Term<&str>>, target: &Src) -> Option<Outs> {
        match part {
            Part::Index(i) => {
                if let Some(key) = constant_key(i) {
                    return Some(self.index_key(target, key));
                }
                constant(i).then(|| match target {
                    Src::Arr(d) => vec![Src::Arr(*d), elem(*d), Src::Derived],
                    _ => self.fallback(target),
                })
            }
            Part::Range(from, upto) => {
                let bounds = [from, upto].into_iter().flatten().all(constant);
                bounds.then(|| match (target, from, upto) {
                    (Src::Arr(d), None, None) => vec![elem(*d)],
                    (Src::Arr(d), _, _) => vec![Src::Arr(*d)],
                    _ => self.fallback(target),
                })
            }
        }
    }

    /// `.key` of `target`.
    fn index_key(&mut self, target: &Src, key: Box<[u8]>) -> Outs {
        match target {
            Src::Rec(p) => {
                let mut p = p.clone();
                p.push(key);
                self.need.mark(&p, false);
                vec![Src::Rec(p)]
            }
            _ => vec![Src::Derived],
        }
    }
}

/// The text of a string literal without interpolation.
fn constant_key(t: &Term<&str>) -> Option<Box<[u8]>> {
    let Term::Str(None, parts) = t else {
        return None;
    };
    let mut key = String::new();
    for part in parts {
        match part {
            StrPart::Str(s) => key.push_str(s),
            StrPart::Char(c) => key.push(*c),
            StrPart::Term(_) => return None,
        }
    }
    Some(key.into_bytes().into_boxed_slice())
}

/// A literal that does not read the input.
fn constant(t: &Term<&str>) -> bool {
    match t {
        Term::Num(_) => true,
        Term::Neg(t) => matches!(**t, Term::Num(_)),
        t => constant_key(t).is_some(),
    }
}

#[cfg(test)]
mod tests;
