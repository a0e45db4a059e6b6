//! The roles the fields of object records play (an id, a label, a text,
//! a category, a number, a date), found from their statistics and
//! well-known names, for the recipes built on them.

use super::super::stats::{FieldStats, RecordStats};
use super::{path, quotable};

/// Field roles found in object records.
pub(super) struct Roles<'s> {
    pub(super) id: Option<&'s str>,
    pub(super) label: Option<&'s str>,
    pub(super) text: Option<&'s str>,
    pub(super) category: Option<(&'s str, String)>,
    pub(super) number: Option<String>,
    pub(super) number_name: Option<&'s str>,
    pub(super) date: Option<&'s str>,
}

// Well-known names of each role, most telling first.
const ID_NAMES: [&str; 4] = ["id", "uuid", "key", "_id"];
const LABEL_NAMES: [&str; 8] = [
    "title", "name", "path", "subject", "summary", "label", "message", "msg",
];
const DATE_NAMES: [&str; 7] = [
    "created",
    "created_at",
    "timestamp",
    "time",
    "date",
    "modified",
    "updated_at",
];
const TEXT_NAMES: [&str; 6] = [
    "content",
    "text",
    "body",
    "message",
    "description",
    "summary",
];

/// The role each field plays, as far as the statistics tell.
pub(super) fn roles(stats: &RecordStats) -> Roles<'_> {
    let fields = RoleFinder { stats };
    let id = fields.id();
    let date = fields.date();
    let (number, number_name) = fields.number(id);
    Roles {
        id,
        label: fields.common_string(&LABEL_NAMES),
        text: fields.text(date),
        category: fields.category(),
        number,
        number_name,
        date,
    }
}

/// Finds each role among the fields of object records: a well-known name
/// first, else any field that fits. Fields whose names are too long to
/// quote are never used.
struct RoleFinder<'s> {
    stats: &'s RecordStats,
}

impl<'s> RoleFinder<'s> {
    /// Present in at least half of the object records.
    fn common(&self, f: &FieldStats) -> bool {
        f.present * 2 >= self.stats.objects
    }

    /// The fields whose names a recipe may quote.
    fn usable(&self) -> impl Iterator<Item = (&'s String, &'s FieldStats)> {
        self.stats.fields.iter().filter(|(k, _)| quotable(k))
    }

    /// The first of `names` that is a common field holding strings.
    fn common_string(&self, names: &[&str]) -> Option<&'s str> {
        names.iter().find_map(|n| {
            self.stats
                .fields
                .get_key_value(*n)
                .filter(|(_, f)| f.strings > 0 && self.common(f))
                .map(|(k, _)| k.as_str())
        })
    }

    /// A common field with a well-known id name, else the first common
    /// `*_id` or `*Id` field.
    fn id(&self) -> Option<&'s str> {
        let fields = &self.stats.fields;
        ID_NAMES
            .iter()
            .find_map(|n| {
                fields
                    .get_key_value(*n)
                    .filter(|(_, f)| self.common(f))
                    .map(|(k, _)| k.as_str())
            })
            .or_else(|| {
                self.usable()
                    .find(|(k, f)| self.common(f) && (k.ends_with("_id") || k.ends_with("Id")))
                    .map(|(k, _)| k.as_str())
            })
    }

    /// A field with a well-known date name whose strings are mostly dates,
    /// else the first common field whose values are mostly dates.
    fn date(&self) -> Option<&'s str> {
        let fields = &self.stats.fields;
        DATE_NAMES
            .iter()
            .find_map(|n| {
                fields
                    .get_key_value(*n)
                    .filter(|(_, f)| f.dates > 0 && f.dates * 2 >= f.strings)
                    .map(|(k, _)| k.as_str())
            })
            .or_else(|| {
                self.usable()
                    .find(|(_, f)| f.dates > 0 && f.dates * 2 >= f.present && self.common(f))
                    .map(|(k, _)| k.as_str())
            })
    }

    /// A common string field with a well-known text name, else the string
    /// field (the date aside) with the longest strings on average.
    fn text(&self, date: Option<&str>) -> Option<&'s str> {
        self.common_string(&TEXT_NAMES).or_else(|| {
            self.usable()
                .filter(|(k, f)| f.strings > 0 && Some(k.as_str()) != date)
                .max_by_key(|(_, f)| f.string_bytes / f.strings.max(1))
                .map(|(k, _)| k.as_str())
        })
    }

    /// The category field and its most common value (both short enough to
    /// quote).
    fn category(&self) -> Option<(&'s str, String)> {
        let name = self.stats.category_field().filter(|n| quotable(n))?;
        let (top, _) = *self.stats.fields.get(name)?.top_values(1).first()?;
        quotable(top).then(|| (name, top.to_owned()))
    }

    /// The score-like field, else the first common numeric field that is
    /// not the id: its jq path and its name.
    fn number(&self, id: Option<&str>) -> (Option<String>, Option<&'s str>) {
        match self.stats.score_field() {
            // `?`: in some records `provenance` may be no object.
            Some(("provenance.confidence", _)) => (
                Some(".provenance.confidence?".to_owned()),
                Some("provenance.confidence"),
            ),
            Some((k, _)) if quotable(k) => (Some(path(k)), Some(k)),
            _ => self
                .usable()
                .find(|(k, f)| f.numbers > 0 && self.common(f) && Some(k.as_str()) != id)
                .map(|(k, _)| (Some(path(k)), Some(k.as_str())))
                .unwrap_or((None, None)),
        }
    }
}
