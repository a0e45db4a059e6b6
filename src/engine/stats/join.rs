//! The fold of a large body shared between two threads: the statistics of
//! two runs of records joined into what one pass over both would have
//! left ([`RecordStats::join`]), and the fold that uses it
//! ([`RecordStats::collect_beside`]).
//!
//! This thread folds pieces from the first record on; the other runs its
//! own work first (the SHA-256 of the data lines), then folds pieces from
//! the last record back, each into statistics of its own, until the two
//! meet. The pieces are then joined in order. Where a cap makes the joined
//! figures depend on the order of values that statistics do not keep (a
//! distinct value or a property past the cap), the piece is folded in
//! again instead: the answer is always exactly the one-pass fold's.

use std::sync::Mutex;

use super::RecordStats;
use super::fold::TRACKED_FIELDS;
use super::memory::MemoryCheck;
use crate::beside::{BESIDE_FROM, beside};

/// Bytes of records a piece holds (it ends at the first record boundary
/// past this).
const PIECE: usize = 256 << 10;

impl RecordStats {
    /// The statistics of `body`'s records (each followed by `\n`) and
    /// `side()`, run at once: a large body's fold is shared with the
    /// thread that runs `side()` once that is done (see the module docs).
    pub(crate) fn collect_beside<S: Send>(
        body: &str,
        side: impl FnOnce() -> S + Send,
    ) -> (RecordStats, S) {
        Self::collect_beside_from(BESIDE_FROM, body, side)
    }

    /// [`collect_beside`](Self::collect_beside), on two threads from
    /// `from` bytes of `body` (on one under it).
    pub(crate) fn collect_beside_from<S: Send>(
        from: usize,
        body: &str,
        side: impl FnOnce() -> S + Send,
    ) -> (RecordStats, S) {
        if body.len() < from {
            return (RecordStats::collect(records(body)), side());
        }
        let pieces = pieces(body);
        // The next piece from the front, and the first taken from the back.
        let claims = Mutex::new((0, pieces.len()));
        let claim = |front: bool| {
            let mut c = claims.lock().unwrap_or_else(|p| p.into_inner());
            let (next, back) = &mut *c;
            if *next >= *back {
                return None;
            }
            Some(match front {
                true => std::mem::replace(next, *next + 1),
                false => {
                    *back -= 1;
                    *back
                }
            })
        };
        let (mut first, (side, mut later)) = beside(
            || {
                let side = side();
                let mut later = Vec::new();
                while let Some(i) = claim(false) {
                    later.push((i, RecordStats::collect(records(pieces[i]))));
                }
                (side, later)
            },
            || {
                let mut stats = RecordStats::collect([]);
                while let Some(i) = claim(true) {
                    records(pieces[i]).for_each(|r| stats.fold(r));
                }
                stats
            },
        );
        later.sort_unstable_by_key(|(i, _)| *i);
        for (i, stats) in later {
            if !first.join(stats) {
                records(pieces[i]).for_each(|r| first.fold(r));
            }
        }
        (first, side)
    }

    /// Joins `later`, the statistics of the records that follow these, as
    /// one fold over both would have left them; false, these unchanged,
    /// when that cannot be told from the two (see
    /// [`joinable`](Self::joinable)): the caller folds those records in.
    pub(crate) fn join(&mut self, later: RecordStats) -> bool {
        if !self.joinable(&later) {
            return false;
        }
        self.count += later.count;
        self.objects += later.objects;
        self.strings += later.strings;
        self.numbers += later.numbers;
        self.opaque += later.opaque;
        self.too_deep += later.too_deep;
        self.schema.join(later.schema);
        for (key, field) in later.fields {
            if let Some(mine) = self.fields.get_mut(&key) {
                mine.join(field);
            } else if self.fields.len() < TRACKED_FIELDS {
                self.fields.insert(key, field);
            }
        }
        self.next_field = 0;
        self.provenance_confidence.join(later.provenance_confidence);
        self.memory.join(&later.memory);
        true
    }

    /// Whether [`join`](Self::join) of `later` is what one pass would
    /// leave: `later` tracked every field it met (under the cap), and each
    /// field's distinct values and each schema node's properties join
    /// exactly.
    fn joinable(&self, later: &RecordStats) -> bool {
        // (A run that met the cap of tracked fields met the smaller one of
        // its schema's properties too: the first check is the schema's.)
        later.fields.len() < TRACKED_FIELDS
            && later
                .fields
                .iter()
                .all(|(key, field)| self.fields.get(key).is_none_or(|mine| mine.joinable(field)))
            && self
                .provenance_confidence
                .joinable(&later.provenance_confidence)
            && self.schema.joinable(&later.schema)
    }
}

impl MemoryCheck {
    /// The counts of a later run of records added.
    fn join(&mut self, later: &MemoryCheck) {
        self.core += later.core;
        self.ids += later.ids;
        self.typed += later.typed;
        self.tags += later.tags;
        self.content += later.content;
        self.provenance_shape += later.provenance_shape;
    }
}

/// The records of `body`, each followed by `\n`.
fn records(body: &str) -> impl Iterator<Item = &str> {
    crate::engine::records::RecordsView::new(body, 0).iter()
}

/// `body` cut into pieces of about [`PIECE`] bytes, at record boundaries.
fn pieces(body: &str) -> Vec<&str> {
    let mut pieces = Vec::with_capacity(body.len() / PIECE + 1);
    let mut rest = body;
    while rest.len() > PIECE {
        let Some(end) = memchr::memchr(b'\n', &rest.as_bytes()[PIECE..]) else {
            break;
        };
        let (piece, after) = rest.split_at(PIECE + end + 1);
        pieces.push(piece);
        rest = after;
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::engine::stats::tests::{canonical, json_text};

    /// Everything but the lookup hints, which a join resets.
    fn settled(mut s: RecordStats) -> String {
        s.schema.clear_hints();
        canonical(&s)
    }

    fn one_pass(records: &[String]) -> RecordStats {
        RecordStats::collect(records.iter().map(String::as_str))
    }

    /// Records folded in pieces of `cuts` and joined (folded in again where
    /// they do not join); how many pieces joined.
    fn joined(records: &[String], cuts: &[usize]) -> (RecordStats, usize) {
        let mut bounds = vec![0];
        bounds.extend(cuts.iter().map(|&c| c.min(records.len())));
        bounds.push(records.len());
        bounds.sort_unstable();
        let mut all = one_pass(&records[..bounds[1]]);
        let mut joins = 0;
        for w in bounds[1..].windows(2) {
            let part = &records[w[0]..w[1]];
            match all.join(one_pass(part)) {
                true => joins += 1,
                false => part.iter().for_each(|r| all.fold(r)),
            }
        }
        (all, joins)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Any records, cut anywhere: the joined statistics are the one
        /// pass's.
        #[test]
        fn joined_runs_are_one_pass(
            records in prop::collection::vec(json_text(), 1..16),
            cuts in prop::collection::vec(0usize..16, 0..4),
        ) {
            for r in &records {
                prop_assume!(serde_json::from_str::<serde::de::IgnoredAny>(r).is_ok());
            }
            let (got, _) = joined(&records, &cuts);
            prop_assert_eq!(settled(got), settled(one_pass(&records)), "{:?}", records);
        }
    }

    /// Records that meet every cap across a cut: distinct values of a
    /// category-like field and of `namespace`, a string too long to count,
    /// schema properties (`nested`) or tracked top-level fields (not). What
    /// joins is exact; what cannot is refused (and folded in again).
    #[test]
    fn caps_met_across_a_cut_join_exactly_or_not_at_all() {
        let record = |i: usize, nested: bool| {
            let mut fields: Vec<String> = vec![
                format!("\"kind\":\"k{}\"", i % 60),
                format!("\"namespace\":\"ns{}\"", i % 300),
                format!("\"level\":\"{}\"", ["a", "b"][i % 2]),
                format!("\"n\":{i}"),
            ];
            if i.is_multiple_of(7) {
                fields.push(format!("\"long\":\"{}\"", "x".repeat(200)));
            }
            // A new property every few records, past the cap in the end;
            // and one early and again at the end only: a later run whose
            // properties were capped before it met that one again.
            let mut grown = vec![format!("\"p{}\":{{\"q{}\":1}}", i / 3, i % 70)];
            if !(10..1450).contains(&i) {
                grown.push("\"late\":{\"x\":1}".to_owned());
            }
            match nested {
                true => fields.push(format!("\"o\":{{{}}}", grown.join(","))),
                false => fields.extend(grown),
            }
            format!("{{{}}}", fields.join(","))
        };
        for nested in [true, false] {
            let records: Vec<String> = (0..1500).map(|i| record(i, nested)).collect();
            let whole = settled(one_pass(&records));
            let mut joins = 0;
            for cuts in [
                vec![10],
                vec![40],
                vec![100],
                vec![700],
                vec![1200],
                vec![1400],
                vec![5, 30, 200, 900],
                (1..30).map(|k| k * 50).collect(),
            ] {
                let (got, n) = joined(&records, &cuts);
                assert_eq!(settled(got), whole, "cut at {cuts:?}, nested {nested}");
                joins += n;
            }
            // Some joined, some did not: both ways were taken.
            assert!(joins > 0);
            let (_, all) = joined(&records, &(1..1500).collect::<Vec<_>>());
            assert!(all < 1499, "{all} of 1499 joined");
        }
    }

    /// A body large enough to be shared between the threads: the same
    /// statistics as one pass, for memories and for records whose caps
    /// refuse the joins, and the side's answer.
    #[test]
    fn a_shared_fold_is_the_one_pass_fold() {
        let memories: Vec<String> = (0..6000)
            .map(|i| {
                format!(
                    "{{\"id\":\"m{i}\",\"title\":\"t{i}\",\"namespace\":\"ns{}\",\"content\":\"{}\",\"provenance\":{{\"confidence\":0.{}}},\"tags\":[\"a\",\"b{}\"]}}",
                    i % 9,
                    "word ".repeat(40),
                    i % 10,
                    i % 3
                )
            })
            .collect();
        let wide: Vec<String> = (0..9000)
            .map(|i| {
                format!(
                    "{{\"f{}\":\"v{}\",\"pad\":\"{}\"}}",
                    i % 400,
                    i % 3000,
                    "y".repeat(120)
                )
            })
            .collect();
        for records in [memories, wide] {
            let body: String = records.iter().map(|r| format!("{r}\n")).collect();
            assert!(body.len() > BESIDE_FROM, "{}", body.len());
            assert!(pieces(&body).len() > 4);
            let (got, side) = RecordStats::collect_beside(&body, || 7);
            assert_eq!(side, 7);
            assert_eq!(got.count, records.len());
            assert_eq!(settled(got), settled(one_pass(&records)));
        }
    }

    /// Statistics and a digest begun on the first records (while a text is
    /// told, `engine/ahead.rs`) and finished on all of them: one fold and
    /// one digest of all the records, wherever the first ones end, under
    /// and over the size from which the fold is shared. Records that do
    /// not start with those begun on are folded whole.
    #[test]
    fn begun_ahead_then_finished_is_one_pass() {
        use crate::engine::ahead::{self, Ahead};
        use crate::engine::records::RecordsView;
        let records: Vec<String> = (0..4000)
            .map(|i| {
                format!(
                    "{{\"id\":\"m{i}\",\"namespace\":\"ns{}\",\"content\":\"{}\",\"score\":0.{},\"f{}\":[{i}]}}",
                    i % 7,
                    "word ".repeat(50),
                    i % 10,
                    i % 300
                )
            })
            .collect();
        let lines = |r: &[String]| r.iter().map(|r| format!("{r}\n")).collect::<String>();
        let body = lines(&records);
        assert!(body.len() > BESIDE_FROM, "{}", body.len());
        let all = RecordsView::new(&body, records.len());
        let (once, (whole, _)) = ahead::all(all, || ());
        assert_eq!(whole.count, records.len());
        for k in [0, 1, 700, 3999, 4000] {
            let first = lines(&records[..k]);
            let begun = Ahead::of(RecordsView::new(&first, k));
            let (stats, (contract, side)) = begun.finish(all, || 3);
            assert_eq!(side, 3);
            assert_eq!(contract, whole, "{k}");
            assert_eq!(settled(stats), settled(one_pass(&records)), "{k}");
        }
        assert_eq!(settled(once), settled(one_pass(&records)));
        let short = lines(&records[..10]);
        let view = RecordsView::new(&short, 10);
        let (stats, (contract, ())) = Ahead::of(all).finish(view, || ());
        assert_eq!(contract, ahead::all(view, || ()).1.0);
        assert_eq!(settled(stats), settled(one_pass(&records[..10])));
    }

    #[test]
    fn pieces_end_at_record_boundaries_and_cover_the_body() {
        let body: String = (0..40_000).map(|i| format!("{{\"i\":{i}}}\n")).collect();
        let p = pieces(&body);
        assert!(p.len() > 1);
        assert_eq!(p.concat(), body);
        assert!(p.iter().all(|piece| piece.ends_with('\n')));
        assert_eq!(pieces(""), Vec::<&str>::new());
        assert_eq!(pieces("1\n"), ["1\n"]);
    }
}
