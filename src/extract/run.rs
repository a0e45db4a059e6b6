//! One evaluation: the query compiled against the extraction library, run
//! over the input values as jq 1.6 runs it (each input in turn, or all of
//! them as one array with `-s`; an error ends the outputs of that input
//! only), every output printed into a [`Pager`] that keeps one page of
//! lines and counts the others.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars};
use jaq_json::{Map, Rc, Val};

use super::input::InputError;
use super::print::{Printer, Sink, TooLong};
use super::project::Need;
use super::traits::{Eval, Hooked};
use super::value::Jv;
use super::{ExtractError, JqFlags, Paging, Query};

/// A query ready to run.
pub(crate) struct Compiled {
    filter: jaq_core::Filter<Eval>,
    vars: Vec<Jv>,
    flags: JqFlags,
    needs: Need,
}

impl Compiled {
    /// What of each record the filter reads.
    pub(super) fn needs(&self) -> Need {
        self.needs.clone()
    }
}

/// Compiles `query`: its filter, with `$ARGS` and one variable per
/// parameter (`--argjson NAME VALUE`).
pub(crate) fn compile(query: &Query) -> Result<Compiled, ExtractError> {
    let mut names = vec!["$ARGS".to_owned()];
    names.extend(query.vars.iter().map(|(n, _)| format!("${n}")));
    let arena = Arena::default();
    let loader = Loader::new(super::natives::defs());
    let file = File {
        code: query.filter.as_str(),
        path: (),
    };
    let modules = loader
        .load(&arena, file)
        .map_err(|errs| ExtractError::Syntax(load_errors(&errs)))?;
    let filter = Compiler::default()
        .with_funs(super::natives::funs())
        .with_global_vars(names.iter().map(String::as_str))
        .compile(modules)
        .map_err(|errs| ExtractError::Syntax(compile_errors(&errs)))?;
    Ok(Compiled {
        filter,
        vars: variables(query),
        flags: query.flags,
        needs: super::project::needs(&query.filter, query.flags.slurp),
    })
}

/// The values of `$ARGS` and of each parameter, in the order of their names.
fn variables(query: &Query) -> Vec<Jv> {
    let named: Map = query
        .vars
        .iter()
        .map(|(n, v)| (Val::from(n.clone()), json_to_val(v)))
        .collect();
    let mut args = Map::default();
    args.insert(Val::from("positional".to_owned()), Val::Arr(Rc::default()));
    args.insert(Val::from("named".to_owned()), Val::obj(named));
    let mut vars = vec![Jv(Val::obj(args))];
    vars.extend(query.vars.iter().map(|(_, v)| Jv(json_to_val(v))));
    vars
}

/// A parameter as jq 1.6 holds it.
pub(crate) fn json_to_val(v: &serde_json::Value) -> Val {
    use serde_json::Value as J;
    match v {
        J::Null => Val::Null,
        J::Bool(b) => Val::Bool(*b),
        J::Number(n) => Jv::num(n.as_f64().unwrap_or(f64::NAN)).0,
        J::String(s) => Val::from(s.clone()),
        J::Array(a) => Val::Arr(Rc::new(a.iter().map(json_to_val).collect())),
        J::Object(o) => Val::obj(
            o.iter()
                .map(|(k, v)| (Val::from(k.clone()), json_to_val(v)))
                .collect(),
        ),
    }
}

fn load_errors(errs: &jaq_core::load::Errors<&str, ()>) -> String {
    use jaq_core::load::Error;
    let mut msgs = Vec::new();
    for (_, e) in errs {
        match e {
            Error::Io(items) => msgs.extend(
                items
                    .iter()
                    .map(|(p, m)| format!("cannot load module {p:?}: {m}")),
            ),
            Error::Lex(items) => msgs.extend(
                items
                    .iter()
                    .map(|(exp, at)| format!("expected {} near {:?}", exp.as_str(), cut(at))),
            ),
            Error::Parse(items) => msgs.extend(
                items
                    .iter()
                    .map(|(exp, at)| format!("expected {} near {:?}", exp.as_str(), cut(at))),
            ),
        }
    }
    msgs.join("; ")
}

fn compile_errors(errs: &jaq_core::compile::Errors<&str, ()>) -> String {
    let mut msgs = Vec::new();
    for (_, items) in errs {
        msgs.extend(
            items
                .iter()
                .map(|(name, undef)| format!("undefined {} {name}", undef.as_str())),
        );
    }
    msgs.join("; ")
}

/// The first 40 characters of the text where a syntax error is.
fn cut(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Runs `c` over `inputs`, printing into `pager` until the outputs end or
/// the pager is full. `Err` when the input is not valid JSON (the outputs
/// of the values before the bad one are printed first, as jq prints them).
pub(crate) fn evaluate(
    c: &Compiled,
    inputs: impl Iterator<Item = Result<Val, InputError>>,
    pager: &mut Pager,
) -> Result<(), InputError> {
    let ctx = Ctx::<Eval>::new(Hooked(&c.filter.lut), Vars::new(c.vars.iter().cloned()));
    if c.flags.slurp {
        let all = inputs.collect::<Result<Vec<Val>, _>>()?;
        // A full pager says so in `pager.full`.
        let _ = run_one(c, &ctx, Jv::array(all).0, pager);
    } else {
        for input in inputs {
            if run_one(c, &ctx, input?, pager).is_err() {
                return Ok(());
            }
        }
    }
    pager.finished = pager.full.is_none();
    Ok(())
}

/// The outputs of one input; `Err` when the pager is full.
fn run_one(c: &Compiled, ctx: &Ctx<Eval>, input: Val, pager: &mut Pager) -> Result<(), TooLong> {
    for out in c.filter.id.run((ctx.clone(), Jv(input))) {
        match out {
            Ok(v) => pager.output(&v, c.flags)?,
            Err(e) => {
                pager.error(e);
                break;
            }
        }
    }
    Ok(())
}

/// Why the pager stopped taking output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// More than `max_output_bytes` printed in all.
    Output,
    /// The page's lines would pass `max_page_bytes`.
    PageBytes,
    /// Enough lines past the page were counted.
    Counted,
}

/// Keeps the lines of one page of the output, counts the rest.
pub(crate) struct Pager {
    offset: usize,
    end: usize,
    count_until: usize,
    /// Index of the line being printed.
    line: usize,
    current: Vec<u8>,
    /// Printed bytes not yet split into lines (at most [`PENDING`]).
    pending: Vec<u8>,
    pub lines: Vec<String>,
    page_bytes: usize,
    max_page_bytes: usize,
    printed: usize,
    max_output_bytes: usize,
    pub full: Option<Full>,
    pub finished: bool,
    pub errors: Vec<String>,
    pub error_count: usize,
    /// Entries are whole values, not lines (`Query::by_value`).
    by_value: bool,
    /// The page's only entry is a value's start, cut at `max_page_bytes`.
    pub cut: bool,
}

/// How many error messages a page keeps (the others are only counted).
const KEPT_ERRORS: usize = 10;

impl Pager {
    /// A pager for `paging`; `by_value`: entries are whole values.
    pub(super) fn new(paging: Paging, limits: &super::ExtractLimits, by_value: bool) -> Pager {
        let end = paging.offset.saturating_add(paging.limit);
        Pager {
            offset: paging.offset,
            end,
            count_until: end.saturating_add(limits.max_counted_lines),
            line: 0,
            current: Vec::new(),
            pending: Vec::new(),
            lines: Vec::new(),
            page_bytes: 0,
            max_page_bytes: limits.max_page_bytes,
            printed: 0,
            max_output_bytes: limits.max_output_bytes,
            full: None,
            finished: false,
            errors: Vec::new(),
            error_count: 0,
            by_value,
            cut: false,
        }
    }

    /// Counts one line past the page, no more: enough to know more
    /// follows, without reading the rest of the input for a total.
    pub(super) fn count_one_past_the_page(&mut self) {
        self.count_until = self.end.saturating_add(1);
    }

    /// Lines printed so far (the total, once the evaluation finished).
    pub(super) fn lines_seen(&self) -> usize {
        self.line
    }

    /// Whether every line of the page is there.
    pub(super) fn page_complete(&self) -> bool {
        self.line >= self.end
    }

    fn output(&mut self, v: &Jv, flags: JqFlags) -> Result<(), TooLong> {
        match (&v.0, flags.raw) {
            (Val::TStr(s), true) => self.put(s)?,
            _ => match Printer::into_sink(&mut *self, !flags.compact).value(&v.0) {
                Ok(()) => self.flush()?,
                Err(e) => {
                    self.pending.clear();
                    return Err(e);
                }
            },
        }
        if self.by_value {
            // The value ends here, whatever line breaks a raw string held.
            self.count_printed(1)?;
            return self.end_line();
        }
        self.put(b"\n")
    }

    /// Counts `n` more bytes printed; stops past `max_output_bytes`.
    fn count_printed(&mut self, n: usize) -> Result<(), TooLong> {
        self.printed += n;
        if self.printed > self.max_output_bytes {
            return self.stop(Full::Output);
        }
        Ok(())
    }

    /// Passes on what the printer left in `pending`.
    fn flush(&mut self) -> Result<(), TooLong> {
        let mut pending = std::mem::take(&mut self.pending);
        let r = self.put(&pending);
        pending.clear();
        self.pending = pending;
        r
    }

    fn error(&mut self, e: jaq_core::Exn<'_, Jv>) {
        self.error_count += 1;
        if self.errors.len() >= KEPT_ERRORS {
            return;
        }
        let msg = match e.get_err() {
            Ok(err) => match err.into_val() {
                Jv(Val::TStr(s)) => String::from_utf8_lossy(&s).into_owned(),
                other => format!("{other} (not a string)"),
            },
            Err(_) => "unsupported control flow".to_owned(),
        };
        self.errors.push(msg);
    }

    fn stop(&mut self, why: Full) -> Result<(), TooLong> {
        self.full = Some(why);
        Err(TooLong)
    }

    fn in_page(&self) -> bool {
        self.line >= self.offset && self.line < self.end
    }

    fn take(&mut self, seg: &[u8]) -> Result<(), TooLong> {
        if self.in_page() {
            let room = self.max_page_bytes.saturating_sub(self.page_bytes);
            self.page_bytes += seg.len();
            if self.page_bytes > self.max_page_bytes {
                if self.by_value && self.lines.is_empty() {
                    self.keep_cut(&seg[..room.min(seg.len())]);
                }
                return self.stop(Full::PageBytes);
            }
            self.current.extend_from_slice(seg);
        }
        Ok(())
    }

    /// The page's first value is longer than the page may be: its start,
    /// `seg` completing it to `max_page_bytes` (less a split character),
    /// is the page's only entry.
    fn keep_cut(&mut self, seg: &[u8]) {
        let mut start = std::mem::take(&mut self.current);
        start.extend_from_slice(seg);
        if let Err(e) = std::str::from_utf8(&start)
            && e.error_len().is_none()
        {
            start.truncate(e.valid_up_to());
        }
        self.lines
            .push(String::from_utf8_lossy(&start).into_owned());
        self.cut = true;
    }

    fn end_line(&mut self) -> Result<(), TooLong> {
        if self.in_page() {
            let line = match std::str::from_utf8(&self.current) {
                Ok(s) => s.to_owned(),
                Err(_) => String::from_utf8_lossy(&self.current).into_owned(),
            };
            self.lines.push(line);
            self.current.clear();
        }
        self.line += 1;
        if self.line >= self.count_until {
            return self.stop(Full::Counted);
        }
        Ok(())
    }
}

/// Bytes the printer collects before the pager looks at them.
const PENDING: usize = 8 << 10;

impl Sink for &mut Pager {
    fn put(&mut self, bytes: &[u8]) -> Result<(), TooLong> {
        if self.pending.len() + bytes.len() > PENDING {
            self.flush()?;
            if bytes.len() > PENDING {
                return Pager::put(self, bytes);
            }
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }
}

impl Pager {
    fn put(&mut self, bytes: &[u8]) -> Result<(), TooLong> {
        self.count_printed(bytes.len())?;
        if self.by_value {
            return self.take(bytes);
        }
        let mut rest = bytes;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.take(&rest[..i])?;
            self.end_line()?;
            rest = &rest[i + 1..];
        }
        self.take(rest)
    }
}
