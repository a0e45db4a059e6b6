//! [`Jv`] as jaq's value type, and extraction's data kind: the glue between
//! jaq's interpreter and the files below (values, updates, the guard).

use bytes::Bytes;
use jaq_core::box_iter::{BoxIter, box_once};
use jaq_core::data::{DataT, HasLut};
use jaq_core::path::Opt;
use jaq_core::val::Range;
use jaq_core::{Lut, ValR, ValX};
use jaq_json::{Map, Num, Val};

use super::guard::{self, container_cost, tick};
use super::print::num_f64;
use super::value::{EXACT_INT, Jv, fail, iterate_error, shown};

impl jaq_core::ValT for Jv {
    fn from_num(n: &str) -> ValR<Self> {
        n.parse::<f64>()
            .map(Jv::num)
            .map_err(|_| fail(format!("cannot parse {n} as a number")))
    }

    fn from_map<I: IntoIterator<Item = (Self, Self)>>(iter: I) -> ValR<Self> {
        guard::charge(container_cost(0));
        let mut m = Map::default();
        for (k, v) in iter {
            if !matches!(k.0, Val::TStr(_)) {
                return Err(fail(format!("Cannot use {} as object key", shown(&k))));
            }
            guard::charge(guard::SLOT_BYTES);
            m.insert(k.0, v.0);
        }
        Ok(Jv(Val::obj(m)))
    }

    fn key_values(self) -> BoxIter<'static, ValR<(Self, Self), Self>> {
        guard::tick();
        match self.0 {
            Val::Arr(a) => Box::new((0..a.len()).map(move |i| Ok((Jv::from(i), Jv(a[i].clone()))))),
            Val::Obj(o) => {
                let entries: Vec<(Val, Val)> =
                    o.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                Box::new(entries.into_iter().map(|(k, v)| Ok((Jv(k), Jv(v)))))
            }
            _ => box_once(Err(iterate_error(&self))),
        }
    }

    fn values(self) -> Box<dyn Iterator<Item = ValR<Self>>> {
        guard::tick();
        match self.0 {
            Val::Arr(a) => Box::new((0..a.len()).map(move |i| Ok(Jv(a[i].clone())))),
            Val::Obj(o) => {
                let values: Vec<Val> = o.values().cloned().collect();
                Box::new(values.into_iter().map(|v| Ok(Jv(v))))
            }
            _ => box_once(Err(iterate_error(&self))),
        }
    }

    fn index(self, index: &Self) -> ValR<Self> {
        self.index_val(index)
    }

    fn range(self, range: Range<&Self>) -> ValR<Self> {
        self.slice(range)
    }

    fn map_values<'a, I: Iterator<Item = ValX<'a, Self>>>(
        self,
        opt: Opt,
        f: impl Fn(Self) -> I,
    ) -> ValX<'a, Self> {
        super::update::map_values(self, opt, f)
    }

    fn map_index<'a, I: Iterator<Item = ValX<'a, Self>>>(
        self,
        index: &Self,
        opt: Opt,
        f: impl Fn(Self) -> I,
    ) -> ValX<'a, Self> {
        super::update::map_index(self, index, opt, f)
    }

    fn map_range<'a, I: Iterator<Item = ValX<'a, Self>>>(
        self,
        range: Range<&Self>,
        opt: Opt,
        f: impl Fn(Self) -> I,
    ) -> ValX<'a, Self> {
        super::update::map_range(self, range, opt, f)
    }

    fn as_bool(&self) -> bool {
        !matches!(self.0, Val::Null | Val::Bool(false))
    }

    fn into_string(self) -> Self {
        match self.0 {
            Val::TStr(_) => self,
            _ => Jv(Val::utf8_str(self.to_json())),
        }
    }
}

impl jaq_std::ValT for Jv {
    fn into_seq<S: FromIterator<Self>>(self) -> Result<S, Self> {
        match &self.0 {
            Val::Arr(a) => {
                guard::charge(container_cost(a.len()));
                Ok(a.iter().cloned().map(Jv).collect())
            }
            _ => Err(self),
        }
    }

    fn is_int(&self) -> bool {
        matches!(self.0, Val::Num(Num::Int(_) | Num::BigInt(_)))
    }

    fn as_isize(&self) -> Option<isize> {
        match &self.0 {
            Val::Num(Num::Int(i)) => Some(*i),
            Val::Num(n) => {
                let f = num_f64(n);
                (f.fract() == 0.0 && f.abs() <= EXACT_INT).then_some(f as isize)
            }
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        self.as_number()
    }

    fn is_utf8_str(&self) -> bool {
        matches!(self.0, Val::TStr(_))
    }

    fn as_bytes(&self) -> Option<&[u8]> {
        self.as_str_bytes().map(|b| &b[..])
    }

    fn as_sub_str(&self, sub: &[u8]) -> Self {
        match &self.0 {
            Val::TStr(b) | Val::BStr(b) => Jv(Val::utf8_str(b.slice_ref(sub))),
            _ => Jv(Val::Null),
        }
    }

    fn from_utf8_bytes(b: impl AsRef<[u8]> + Send + 'static) -> Self {
        Jv::string(Bytes::from_owner(b))
    }
}

/// jaq's data kind for extraction: values are [`Jv`], and every look-up of
/// the program (one per step of the interpreter) is a [`tick`].
pub(crate) struct Eval;

impl DataT for Eval {
    type V<'a> = Jv;
    type Data<'a> = Hooked<'a>;
}

/// The program's look-up table, handed out one step at a time.
#[derive(Clone)]
pub(crate) struct Hooked<'a>(pub &'a Lut<Eval>);

impl<'a> HasLut<'a, Eval> for Hooked<'a> {
    fn lut(&self) -> &'a Lut<Eval> {
        tick();
        self.0
    }
}
