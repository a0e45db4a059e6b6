//! Step 3 begun during step 1: the statistics and the digest of the
//! records of `structuredContent`, made while a large text is still being
//! told against it.
//!
//! A result with a text copy of its `structuredContent` (what the MCP SDKs
//! send) is read twice in step 1, at once: one thread takes the records of
//! `structuredContent`, the other tells whether the text lays it out. The
//! first finishes well before the other (the text is the larger, escaped
//! and indented). Its records are then folded into their statistics at
//! once, and their SHA-256 left to whichever thread is free first (see
//! [`RecordStats::collect_beside`]): the thread telling the text takes it
//! when done, and the rest of the fold is shared. Work that waited for
//! step 1 to end now fills the time the first thread spent waiting.
//!
//! The split (step 2) only adds records after these (the records of other
//! texts); [`Ahead::finish`] folds those in, and the answer is the one a
//! fold of all the records at once gives.

use super::contract::{DataContract, DataDigest};
use super::records::RecordsView;
use super::stats::RecordStats;

/// The statistics and the digest of the first records of a result.
pub(super) struct Ahead {
    stats: RecordStats,
    digest: DataDigest,
    /// The records they cover: their number and bytes.
    count: usize,
    bytes: usize,
}

impl Ahead {
    /// Of `records`, on the engine's threads when they are large.
    pub(super) fn of(records: RecordsView<'_>) -> Ahead {
        let body = records.body();
        // Beside a text being told, whatever their size: the digest is
        // taken by the thread telling it once that is done.
        let (stats, digest) = RecordStats::collect_beside_from(0, body, || {
            let mut digest = DataDigest::default();
            digest.update(body.as_bytes(), records.len());
            digest
        });
        Ahead {
            stats,
            digest,
            count: records.len(),
            bytes: body.len(),
        }
    }

    /// The statistics and the contract of `records`, which start with the
    /// records these were made of, and `side()`, run beside the records
    /// that follow them. (Records that do not start so are folded whole.)
    pub(super) fn finish<S: Send>(
        self,
        records: RecordsView<'_>,
        side: impl FnOnce() -> S + Send,
    ) -> (RecordStats, (DataContract, S)) {
        let Ahead {
            mut stats,
            mut digest,
            count,
            bytes,
        } = self;
        let (Some(rest), Some(rest_count)) = (
            records.body().get(bytes..),
            records.len().checked_sub(count),
        ) else {
            return all(records, side);
        };
        let (later, (contract, s)) = RecordStats::collect_beside(rest, || {
            digest.update(rest.as_bytes(), rest_count);
            (digest.finish(), side())
        });
        if !stats.join(later) {
            RecordsView::new(rest, rest_count)
                .iter()
                .for_each(|r| stats.fold(r));
        }
        (stats, (contract, s))
    }
}

/// The statistics and the contract of `records`, and `side()` beside.
pub(super) fn all<S: Send>(
    records: RecordsView<'_>,
    side: impl FnOnce() -> S + Send,
) -> (RecordStats, (DataContract, S)) {
    RecordStats::collect_beside(records.body(), || {
        let contract = DataDigest::of(records.body().as_bytes(), records.len());
        (contract, side())
    })
}
