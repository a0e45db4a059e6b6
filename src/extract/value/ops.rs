//! jq 1.6's arithmetic on [`Jv`]: `+` (concatenation and merging too),
//! `-`, `*` (string repetition, deep merge, split), `/`, `%` on integers,
//! and negation; every new string or container charged to the budget.

use super::*;

fn concat(l: &[u8], r: &[u8]) -> Bytes {
    guard::charge(string_cost(l.len().saturating_add(r.len())));
    let mut buf = BytesMut::with_capacity(l.len() + r.len());
    buf.put_slice(l);
    buf.put_slice(r);
    buf.freeze()
}

fn math_error(l: &Jv, r: &Jv, what: &str) -> Error<Jv> {
    fail(format!("{} and {} cannot be {what}", shown(l), shown(r)))
}

impl std::ops::Add for Jv {
    type Output = ValR<Jv>;
    fn add(self, r: Self) -> ValR<Jv> {
        match (self.0, r.0) {
            (Val::Null, x) | (x, Val::Null) => Ok(Jv(x)),
            (Val::Num(x), Val::Num(y)) => Ok(Jv::num(num_f64(&x) + num_f64(&y))),
            (Val::TStr(x), Val::TStr(y)) => Ok(Jv(Val::utf8_str(concat(&x, &y)))),
            (Val::Arr(mut x), Val::Arr(y)) => {
                guard::charge(container_cost(x.len().saturating_add(y.len())));
                match Rc::try_unwrap(y) {
                    Ok(y) => Rc::make_mut(&mut x).extend(y),
                    Err(y) => Rc::make_mut(&mut x).extend(y.iter().cloned()),
                }
                Ok(Jv(Val::Arr(x)))
            }
            (Val::Obj(mut x), Val::Obj(y)) => {
                guard::charge(container_cost(x.len().saturating_add(y.len())));
                match Rc::try_unwrap(y) {
                    Ok(y) => Rc::make_mut(&mut x).extend(y),
                    Err(y) => {
                        Rc::make_mut(&mut x).extend(y.iter().map(|(k, v)| (k.clone(), v.clone())))
                    }
                }
                Ok(Jv(Val::Obj(x)))
            }
            (x, y) => Err(math_error(&Jv(x), &Jv(y), "added")),
        }
    }
}

impl std::ops::Sub for Jv {
    type Output = ValR<Jv>;
    fn sub(self, r: Self) -> ValR<Jv> {
        match (&self.0, &r.0) {
            (Val::Num(x), Val::Num(y)) => Ok(Jv::num(num_f64(x) - num_f64(y))),
            (Val::Arr(x), Val::Arr(y)) => {
                let kept = x.iter().filter(|a| {
                    guard::tick();
                    !y.iter().any(|b| equal(a, b))
                });
                Ok(Jv::array(kept.cloned().collect()))
            }
            _ => Err(math_error(&self, &r, "subtracted")),
        }
    }
}

/// jq 1.6's `"s" * n`: `null` when `n <= 0`, else `s` repeated
/// `max(1, trunc(n))` times (`trunc(n - 1)` more copies).
fn repeat(s: &Bytes, n: f64) -> Jv {
    let more = (n - 1.0).trunc();
    if more < 0.0 {
        return Jv(Val::Null);
    }
    let times = more as usize + 1;
    guard::charge(string_cost(s.len().saturating_mul(times)));
    Jv(Val::utf8_str(Bytes::from(s.repeat(times))))
}

/// Deep merge of objects (`*`).
fn merge(mut l: Rc<Map>, r: &Map) -> Rc<Map> {
    guard::charge(container_cost(l.len().saturating_add(r.len())));
    let m = Rc::make_mut(&mut l);
    for (k, v) in r.iter() {
        let merged = match (m.get(k), v) {
            (Some(Val::Obj(a)), Val::Obj(b)) => Val::Obj(merge(a.clone(), b)),
            _ => v.clone(),
        };
        m.insert(k.clone(), merged);
    }
    l
}

impl std::ops::Mul for Jv {
    type Output = ValR<Jv>;
    fn mul(self, r: Self) -> ValR<Jv> {
        match (&self.0, &r.0) {
            (Val::Num(x), Val::Num(y)) => Ok(Jv::num(num_f64(x) * num_f64(y))),
            (Val::TStr(s), Val::Num(n)) | (Val::Num(n), Val::TStr(s)) => Ok(repeat(s, num_f64(n))),
            (Val::Obj(x), Val::Obj(y)) => Ok(Jv(Val::Obj(merge(x.clone(), y)))),
            _ => Err(math_error(&self, &r, "multiplied")),
        }
    }
}

/// `"a,b" / ","`: the parts between separators (none for an empty string).
fn split(s: &Bytes, sep: &[u8]) -> Jv {
    let mut parts = Vec::new();
    if s.is_empty() {
    } else if sep.is_empty() {
        let offs = char_offsets(s);
        parts.extend(offs.windows(2).map(|w| s.slice(w[0]..w[1])));
    } else {
        let mut start = 0;
        while let Some(i) = memchr::memmem::find(&s[start..], sep) {
            parts.push(s.slice(start..start + i));
            start += i + sep.len();
        }
        parts.push(s.slice(start..));
    }
    guard::charge(string_cost(0).saturating_mul(parts.len()));
    Jv::array(parts.into_iter().map(Val::utf8_str).collect())
}

impl std::ops::Div for Jv {
    type Output = ValR<Jv>;
    fn div(self, r: Self) -> ValR<Jv> {
        match (&self.0, &r.0) {
            (Val::Num(x), Val::Num(y)) if num_f64(y) == 0.0 => {
                let _ = x;
                Err(math_error(&self, &r, "divided because the divisor is zero"))
            }
            (Val::Num(x), Val::Num(y)) => Ok(Jv::num(num_f64(x) / num_f64(y))),
            (Val::TStr(x), Val::TStr(y)) => Ok(split(x, y)),
            _ => Err(math_error(&self, &r, "divided")),
        }
    }
}

impl std::ops::Rem for Jv {
    type Output = ValR<Jv>;
    fn rem(self, r: Self) -> ValR<Jv> {
        match (&self.0, &r.0) {
            (Val::Num(x), Val::Num(y)) => {
                let (a, b) = (num_f64(x) as i64, num_f64(y) as i64);
                if b == 0 {
                    return Err(math_error(&self, &r, "divided because the divisor is zero"));
                }
                Ok(Jv::num(a.checked_rem(b).unwrap_or(0) as f64))
            }
            _ => Err(math_error(&self, &r, "divided")),
        }
    }
}

impl std::ops::Neg for Jv {
    type Output = ValR<Jv>;
    fn neg(self) -> ValR<Jv> {
        match &self.0 {
            Val::Num(n) => Ok(Jv::num(-num_f64(n))),
            _ => Err(fail(format!("{} cannot be negated", shown(&self)))),
        }
    }
}
