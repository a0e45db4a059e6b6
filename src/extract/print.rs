//! Values printed exactly as jq 1.6 prints them: its number format (the
//! shortest round-trip digits, `1e+17`, `1e-05`, `-0`, NaN as `null`,
//! infinities as `±1.7976931348623157e+308`), its string escapes (`\u007f`,
//! non-ASCII bytes as they are), two-space indentation, keys in insertion
//! order, and `<stripped: exceeds max depth>` past 256 levels.

use jaq_json::{Num, Val};

use super::guard;

/// jq 1.6's `MAX_PRINT_DEPTH`: deeper values print as [`STRIPPED`].
const MAX_PRINT_DEPTH: usize = 256;
const STRIPPED: &str = "<stripped: exceeds max depth>";

/// The printed form would exceed the byte cap given to [`Printer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLong;

/// Where printed bytes go; refuses them past its own cap.
pub(crate) trait Sink {
    /// Takes `bytes`, or refuses them all.
    fn put(&mut self, bytes: &[u8]) -> Result<(), TooLong>;
}

/// A buffer that holds at most `cap` bytes.
pub(crate) struct Capped<'o> {
    out: &'o mut Vec<u8>,
    cap: usize,
}

impl Sink for Capped<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), TooLong> {
        if self.out.len() + bytes.len() > self.cap {
            return Err(TooLong);
        }
        self.out.extend_from_slice(bytes);
        Ok(())
    }
}

/// Prints values as jq 1.6 does, into a [`Sink`].
pub(crate) struct Printer<S> {
    sink: S,
    pretty: bool,
}

impl<'o> Printer<Capped<'o>> {
    /// A printer into `out`, which it never lets grow past `cap` bytes.
    pub(super) fn new(out: &'o mut Vec<u8>, pretty: bool, cap: usize) -> Self {
        Printer {
            sink: Capped { out, cap },
            pretty,
        }
    }
}

impl<S: Sink> Printer<S> {
    /// A printer into `sink`.
    pub(super) fn into_sink(sink: S, pretty: bool) -> Self {
        Printer { sink, pretty }
    }

    /// Appends `v` (without a trailing newline).
    pub(super) fn value(&mut self, v: &Val) -> Result<(), TooLong> {
        self.term(v, 0)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), TooLong> {
        self.sink.put(bytes)
    }

    fn indent(&mut self, level: usize) -> Result<(), TooLong> {
        if self.pretty {
            self.put(b"\n")?;
            for _ in 0..level {
                self.put(b"  ")?;
            }
        }
        Ok(())
    }

    fn term(&mut self, v: &Val, depth: usize) -> Result<(), TooLong> {
        if depth > MAX_PRINT_DEPTH {
            return self.put(STRIPPED.as_bytes());
        }
        match v {
            Val::Null => self.put(b"null"),
            Val::Bool(true) => self.put(b"true"),
            Val::Bool(false) => self.put(b"false"),
            Val::Num(Num::Int(i)) if i.unsigned_abs() <= 1 << 53 => self.put(int(*i, &mut [0; 24])),
            Val::Num(n) => {
                let mut s = String::new();
                number(num_f64(n), &mut s);
                self.put(s.as_bytes())
            }
            Val::TStr(s) | Val::BStr(s) => self.string(s),
            Val::Arr(a) => self.array(a, depth),
            Val::Obj(o) => self.object(o, depth),
        }
    }

    fn array(&mut self, a: &[Val], depth: usize) -> Result<(), TooLong> {
        guard::tick();
        if a.is_empty() {
            return self.put(b"[]");
        }
        self.put(b"[")?;
        for (i, x) in a.iter().enumerate() {
            if i > 0 {
                self.put(b",")?;
            }
            self.indent(depth + 1)?;
            self.term(x, depth + 1)?;
        }
        self.indent(depth)?;
        self.put(b"]")
    }

    fn object(&mut self, o: &jaq_json::Map, depth: usize) -> Result<(), TooLong> {
        guard::tick();
        if o.is_empty() {
            return self.put(b"{}");
        }
        self.put(b"{")?;
        for (i, (k, x)) in o.iter().enumerate() {
            if i > 0 {
                self.put(b",")?;
            }
            self.indent(depth + 1)?;
            self.term(k, depth + 1)?;
            self.put(if self.pretty { b": " } else { b":" })?;
            self.term(x, depth + 1)?;
        }
        self.indent(depth)?;
        self.put(b"}")
    }

    /// A JSON string with jq 1.6's escapes.
    pub(super) fn string(&mut self, s: &[u8]) -> Result<(), TooLong> {
        if !s.iter().any(|&b| needs_escape(b)) {
            self.put(b"\"")?;
            self.put(s)?;
            return self.put(b"\"");
        }
        let mut quoted = Vec::with_capacity(s.len() + 2);
        escape(s, &mut quoted);
        self.put(&quoted)
    }
}

/// Whether jq 1.6 escapes the byte `b` in a string.
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || b == 0x7f
}

/// The decimal digits of `i` (as jq 1.6 prints an integer below 1e17:
/// every integer a double holds exactly is), in `buf`.
fn int(i: isize, buf: &mut [u8; 24]) -> &[u8] {
    let mut at = buf.len();
    let mut n = i.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// `s` as a quoted JSON string, escaped as jq 1.6 does: `"` and `\`,
/// `\b \t \n \f \r`, other control characters and DEL as `\u00XX`;
/// everything else, non-ASCII included, as it is.
pub(crate) fn escape(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0..=0x1f | 0x7f => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        if short.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// A number as the double jq 1.6 holds for it.
pub(crate) fn num_f64(n: &Num) -> f64 {
    match n {
        Num::Int(i) => *i as f64,
        Num::Float(f) => *f,
        Num::BigInt(_) | Num::Dec(_) => n.to_string().parse().unwrap_or(f64::NAN),
    }
}

/// Appends `x` in jq 1.6's format (`jvp_dtoa_fmt`: the shortest digits
/// that read back as `x`, exponent form when the decimal point is more
/// than 15 places past the digits or 4 places before them).
pub(crate) fn number(x: f64, out: &mut String) {
    if x.is_nan() {
        out.push_str("null");
        return;
    }
    let x = x.clamp(-f64::MAX, f64::MAX);
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let decpt = exp.parse::<i32>().unwrap_or(0) + 1;
    if neg {
        out.push('-');
    }
    lay_out(&digits, decpt, out);
}

/// Places the decimal point `decpt` digits into `digits`, as `jvp_dtoa_fmt`.
fn lay_out(digits: &str, decpt: i32, out: &mut String) {
    let n = digits.len() as i32;
    if decpt <= -4 || decpt > n + 15 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", e.unsigned_abs()));
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', decpt.unsigned_abs() as usize));
        out.push_str(digits);
    } else if decpt >= n {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', (decpt - n) as usize));
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(x: f64) -> String {
        let mut s = String::new();
        number(x, &mut s);
        s
    }

    #[test]
    fn numbers_print_as_in_jq_1_6() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (1e20, "1e+20"),
            (1e17, "1e+17"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000"),
            (12345678901234567890.0, "12345678901234567000"),
            (123456789012345678.0, "123456789012345680"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0"),
            (1e308, "1e+308"),
            (f64::INFINITY, "1.7976931348623157e+308"),
            (f64::NEG_INFINITY, "-1.7976931348623157e+308"),
            (f64::NAN, "null"),
            (1.0 / 3.0, "0.3333333333333333"),
            (5e-324, "5e-324"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (x, want) in cases {
            assert_eq!(fmt(x), want, "{x:e}");
        }
    }
}
