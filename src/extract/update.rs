//! Updates in place (`.[] |= f`, `.[k] |= f`, `.[a:b] |= f`), as jaq does
//! them, on [`Jv`].

use jaq_core::ValX;
use jaq_core::path::Opt;
use jaq_core::val::Range;
use jaq_json::{Rc, Val};

use super::guard::{self, container_cost};
use super::value::{Jv, exn, fail, slice_bounds};

fn rc_unwrap_or_clone<T: Clone>(a: Rc<T>) -> T {
    Rc::try_unwrap(a).unwrap_or_else(|a| (*a).clone())
}

/// `.[] |= f`: every element replaced by the first output of `f`, dropped
/// when there is none.
pub(crate) fn map_values<'a, I: Iterator<Item = ValX<'a, Jv>>>(
    v: Jv,
    opt: Opt,
    f: impl Fn(Jv) -> I,
) -> ValX<'a, Jv> {
    guard::tick();
    match v.0 {
        Val::Arr(a) => {
            guard::charge(container_cost(a.len()));
            let mut out = Vec::with_capacity(a.len());
            for x in rc_unwrap_or_clone(a) {
                if let Some(y) = f(Jv(x)).next() {
                    out.push(y?.0);
                }
            }
            Ok(Jv(Val::Arr(Rc::new(out))))
        }
        Val::Obj(o) => {
            guard::charge(container_cost(o.len()));
            let mut out = jaq_json::Map::default();
            for (k, x) in rc_unwrap_or_clone(o) {
                if let Some(y) = f(Jv(x)).next() {
                    out.insert(k, y?.0);
                }
            }
            Ok(Jv(Val::obj(out)))
        }
        _ => opt.fail(v, |v| {
            exn(fail(format!("Cannot iterate over {}", v.type_name())))
        }),
    }
}

/// `.[k] |= f`.
pub(crate) fn map_index<'a, I: Iterator<Item = ValX<'a, Jv>>>(
    v: Jv,
    index: &Jv,
    opt: Opt,
    f: impl Fn(Jv) -> I,
) -> ValX<'a, Jv> {
    guard::tick();
    match (v.0, &index.0) {
        (Val::Obj(o), Val::TStr(_)) => map_entry(o, index, f),
        (Val::Null, Val::TStr(_)) => map_entry(Rc::default(), index, f),
        (Val::Arr(a), Val::Num(_)) => map_element(a, index, opt, f),
        (Val::Null, Val::Num(_)) => map_element(Rc::default(), index, opt, f),
        (x @ (Val::Arr(_) | Val::Null), Val::Obj(o)) => {
            let get = |k: &str| o.get(&Val::from(k.to_owned())).cloned().map(Jv);
            let (start, end) = (get("start"), get("end"));
            map_range(Jv(x), start.as_ref()..end.as_ref(), opt, f)
        }
        (x, _) => {
            let msg = format!(
                "Cannot index {} with {}",
                Jv(x.clone()).type_name(),
                index.type_name()
            );
            opt.fail(Jv(x), |_| exn(fail(msg)))
        }
    }
}

fn map_entry<'a, I: Iterator<Item = ValX<'a, Jv>>>(
    mut o: Rc<jaq_json::Map>,
    key: &Jv,
    f: impl Fn(Jv) -> I,
) -> ValX<'a, Jv> {
    guard::charge(container_cost(o.len() + 1));
    let m = Rc::make_mut(&mut o);
    let old = m.get(&key.0).cloned().unwrap_or_default();
    match f(Jv(old)).next().transpose()? {
        Some(y) => {
            m.insert(key.0.clone(), y.0);
        }
        None => {
            m.shift_remove(&key.0);
        }
    }
    Ok(Jv(Val::Obj(o)))
}

fn map_element<'a, I: Iterator<Item = ValX<'a, Jv>>>(
    mut a: Rc<Vec<Val>>,
    index: &Jv,
    opt: Opt,
    f: impl Fn(Jv) -> I,
) -> ValX<'a, Jv> {
    use jaq_std::ValT as _;
    let len = a.len() as isize;
    let i = index.as_isize().map(|i| if i < 0 { i + len } else { i });
    let Some(i) = i.filter(|i| *i >= 0) else {
        let msg = format!("Out of bounds index {index}");
        return opt.fail(Jv(Val::Arr(a)), |_| exn(fail(msg)));
    };
    let i = i as usize;
    let x = a.get(i).cloned().unwrap_or_default();
    let y = f(Jv(x)).next().transpose()?;
    // Past the end, jq 1.6 pads the array with nulls (charged first).
    guard::charge(container_cost(a.len().max(i.saturating_add(1))));
    let v = Rc::make_mut(&mut a);
    match y {
        Some(y) if i < v.len() => v[i] = y.0,
        Some(y) => {
            v.resize(i, Val::Null);
            v.push(y.0);
        }
        None if i < v.len() => {
            v.remove(i);
        }
        None => {}
    }
    Ok(Jv(Val::Arr(a)))
}

/// `.[a:b] |= f`: the slice replaced by the first output of `f` (an array).
pub(crate) fn map_range<'a, I: Iterator<Item = ValX<'a, Jv>>>(
    v: Jv,
    range: Range<&Jv>,
    opt: Opt,
    f: impl Fn(Jv) -> I,
) -> ValX<'a, Jv> {
    guard::tick();
    let a = match &v.0 {
        Val::Arr(a) => a.clone(),
        Val::Null => Rc::default(),
        _ => {
            let msg = format!("Cannot update a slice of {}", v.type_name());
            return opt.fail(v, |_| exn(fail(msg)));
        }
    };
    let slice = Jv(Val::Arr(a.clone())).slice(range.clone())?;
    let (skip, end) = slice_bounds(a.len(), &range).unwrap_or((a.len(), a.len()));
    let replaced = match f(slice).next().transpose()? {
        Some(Jv(Val::Arr(y))) => y,
        Some(y) => {
            let msg = format!(
                "A slice of an array can only be assigned another array, not {}",
                y.type_name()
            );
            return Err(exn(fail(msg)));
        }
        None => Rc::default(),
    };
    guard::charge(container_cost(a.len() + replaced.len()));
    let mut out = rc_unwrap_or_clone(a);
    out.splice(skip..end, replaced.iter().cloned());
    Ok(Jv(Val::Arr(Rc::new(out))))
}
