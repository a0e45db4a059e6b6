//! Statistics of one top-level field of object records: its types, its
//! string values (distinct ones counted, capped) and its numeric range.

use super::{FastHashMap, ty};

/// Distinct string values counted for the category field named first
/// ([`NAMED_CATEGORY`], whose most frequent values are used whatever their
/// number).
const DISTINCT_CAP: usize = 1024;
/// Distinct values a category-like field has at most.
const CATEGORY_DISTINCT: usize = 50;
/// The field that is the category field whenever it holds strings.
pub(crate) const NAMED_CATEGORY: &str = "namespace";
/// Longer strings are not counted as distinct values (the field is then no
/// category), so the counts hold short strings only.
const DISTINCT_MAX_BYTES: usize = 128;

/// Statistics of one top-level field of object records.
#[derive(Debug, Default)]
pub(crate) struct FieldStats {
    /// Records in which the field is present.
    pub present: usize,
    /// Types seen (bit flags).
    types: u8,
    /// Present and a string.
    pub strings: usize,
    /// Present and a number.
    pub numbers: usize,
    /// Strings that look like ISO 8601 dates.
    pub dates: usize,
    /// Total length of the string values, in bytes.
    pub string_bytes: usize,
    /// Occurrences of each distinct string value (capped).
    pub distinct: FastHashMap<String, usize>,
    /// More distinct values than counted (or some too long to count).
    pub distinct_overflow: bool,
    /// Every distinct value is counted, up to [`DISTINCT_CAP`], and counts
    /// go on past it ([`NAMED_CATEGORY`]). Other fields count up to one
    /// more than a category has and stop at the first value past that or
    /// too long to count: their counts are only read while they can still
    /// be a category, so nothing read changes, and most fields (ids,
    /// titles, dates) then stop being hashed after a few records.
    all_counted: bool,
    /// Smallest numeric value.
    pub min: f64,
    /// Largest numeric value.
    pub max: f64,
}

impl FieldStats {
    /// Everything held, in an order that does not depend on hashing.
    #[cfg(test)]
    pub(super) fn canonical(&self) -> String {
        let mut distinct: Vec<_> = self.distinct.iter().collect();
        distinct.sort();
        format!(
            "{} {} {} {} {} {} {distinct:?} {} {} {:?} {:?}",
            self.present,
            self.types,
            self.strings,
            self.numbers,
            self.dates,
            self.string_bytes,
            self.distinct_overflow,
            self.all_counted,
            self.min,
            self.max
        )
    }

    pub(super) fn observe_type(&mut self, t: u8) {
        self.present += 1;
        self.types |= t;
    }

    pub(super) fn observe_str(&mut self, s: &str) {
        self.strings += 1;
        self.string_bytes += s.len();
        if looks_like_date(s) {
            self.dates += 1;
        }
        if self.stopped() {
            return;
        }
        let cap = self.cap();
        // A string too long to count is never in the map: not hashed.
        if s.len() > DISTINCT_MAX_BYTES {
            self.distinct_overflow = true;
        } else if let Some(n) = self.distinct.get_mut(s) {
            *n += 1;
        } else if self.distinct.len() < cap {
            self.distinct.insert(s.to_owned(), 1);
        } else {
            self.distinct_overflow = true;
        }
    }

    /// Whether distinct values are no longer counted (past the cap of a
    /// field that is not [`NAMED_CATEGORY`]).
    fn stopped(&self) -> bool {
        self.distinct_overflow && !self.all_counted
    }

    /// Distinct values counted at most.
    fn cap(&self) -> usize {
        match self.all_counted {
            true => DISTINCT_CAP,
            false => CATEGORY_DISTINCT + 1,
        }
    }

    /// The statistics of top-level field `name`, none seen yet.
    pub(super) fn for_field(name: &str) -> FieldStats {
        FieldStats {
            all_counted: name == NAMED_CATEGORY,
            ..FieldStats::default()
        }
    }

    pub(super) fn observe_number(&mut self, f: f64) {
        if self.numbers == 0 {
            self.min = f;
            self.max = f;
        } else {
            self.min = self.min.min(f);
            self.max = self.max.max(f);
        }
        self.numbers += 1;
    }

    /// Whether every value seen is a string.
    pub(crate) fn all_strings(&self) -> bool {
        self.types == ty::STRING
    }

    /// The most frequent values, most frequent first (ties by value).
    pub(crate) fn top_values(&self, n: usize) -> Vec<(&str, usize)> {
        let mut v: Vec<(&str, usize)> = self
            .distinct
            .iter()
            .map(|(k, c)| (k.as_str(), *c))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        v.truncate(n);
        v
    }
}

/// Whether `s` starts like an ISO 8601 date (`YYYY-MM-DD`).
fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// A string field present in most records with repeated values.
pub(crate) fn is_category_like(f: &FieldStats, objects: usize) -> bool {
    f.all_strings()
        && !f.distinct_overflow
        && f.present * 2 >= objects
        && !f.distinct.is_empty()
        && f.distinct.len() <= CATEGORY_DISTINCT
        && f.distinct.len() < f.strings
        && f.string_bytes / f.strings.max(1) <= 64
}
