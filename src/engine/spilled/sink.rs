//! Where the records of a spilled result go as they are made: a private
//! temporary file (the file's data lines), the completeness digest, the
//! statistics (the records folded in batches, on a thread of their own
//! with the configuration's `parallel` switch on: [`Background`]) and a
//! sample of the first records for the recipes and the preview. Memory:
//! the sample, the batches (each [`CHUNK`] bytes and one record up to
//! [`FOLD_MAX`]; three at most), and the file's write buffer.

use std::io::{BufWriter, Seek, Write};
use std::ops::Range;

use super::super::stats::RecordStats;
use super::scan::{CHUNK, NotStreamable};
use crate::contract::{DataContract, DataDigest};
use crate::parallel::Background;

/// Records up to this size are folded into the statistics; larger ones are
/// counted (as opaque) but not held.
pub(super) const FOLD_MAX: usize = 1 << 20;
/// Bytes of whole records kept from the start for the recipes and the
/// preview.
const SAMPLE_BYTES: usize = 256 * 1024;

/// The records of a spilled result, being written.
pub(super) struct Sink {
    /// `None`: a dry run (only the digest is wanted).
    out: Option<BufWriter<std::fs::File>>,
    digest: DataDigest,
    stats: Background<RecordStats, Batch>,
    /// The records ended since the last batch went to `stats`, and the
    /// current one while it is small enough to fold (from `current_start`).
    batch: Batch,
    current_start: usize,
    current_len: u64,
    sample: String,
    sample_count: usize,
    count: usize,
    /// Characters written, the newlines included.
    chars: usize,
}

impl Sink {
    /// Records into `file` (a new, empty private temporary file), their
    /// statistics folded on a thread of their own when `parallel`.
    pub(super) fn new(file: std::fs::File, parallel: bool) -> Sink {
        Sink {
            out: Some(BufWriter::with_capacity(CHUNK, file)),
            stats: Background::new(parallel, no_records, fold_batch),
            ..Sink::dry()
        }
    }

    /// A sink that keeps only the digest (to compare a source with another).
    pub(super) fn dry() -> Sink {
        Sink {
            out: None,
            digest: DataDigest::default(),
            stats: Background::new(false, no_records, fold_batch),
            batch: Batch::default(),
            current_start: 0,
            current_len: 0,
            sample: String::new(),
            sample_count: 0,
            count: 0,
            chars: 0,
        }
    }

    /// The contract of the records so far.
    pub(super) fn contract(&self) -> DataContract {
        self.digest.clone().finish()
    }

    /// Records written so far.
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// The next bytes of the current record (compact JSON, no newline).
    pub(super) fn write(&mut self, bytes: &[u8]) -> Result<(), NotStreamable> {
        self.digest.update(bytes, 0);
        // Characters: every byte but UTF-8's continuation bytes.
        self.chars += bytes.iter().filter(|&&b| (b as i8) >= -0x40).count();
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        out.write_all(bytes)?;
        self.current_len += bytes.len() as u64;
        if self.current_len <= FOLD_MAX as u64 {
            self.batch.text.extend_from_slice(bytes);
        } else {
            self.batch.text.truncate(self.current_start);
        }
        Ok(())
    }

    /// A whole record.
    pub(super) fn record(&mut self, bytes: &[u8]) -> Result<(), NotStreamable> {
        self.write(bytes)?;
        self.end()
    }

    /// Ends the current record.
    pub(super) fn end(&mut self) -> Result<(), NotStreamable> {
        self.digest.update(b"\n", 1);
        self.count += 1;
        self.chars += 1;
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        out.write_all(b"\n")?;
        let held = self.current_len <= FOLD_MAX as u64;
        let record = self.current_start..self.batch.text.len();
        let room = self.sample.len() + record.len() < SAMPLE_BYTES;
        if held
            && room
            && let Ok(text) = std::str::from_utf8(&self.batch.text[record.clone()])
        {
            self.sample.push_str(text);
            self.sample.push('\n');
            self.sample_count += 1;
        }
        self.batch.records.push(held.then_some(record));
        if self.batch.text.len() >= CHUNK {
            self.stats.push(std::mem::take(&mut self.batch));
        }
        self.current_start = self.batch.text.len();
        self.current_len = 0;
        Ok(())
    }

    /// The records' statistics, a view of the sample, the contract, and
    /// the data file rewound to its start.
    pub(super) fn finish(mut self) -> Result<Finished, NotStreamable> {
        self.stats.push(self.batch);
        let out = self.out.ok_or(NotStreamable("a dry run has no file"))?;
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        file.flush()?;
        file.rewind()?;
        Ok(Finished {
            stats: self.stats.finish(),
            sample: self.sample,
            sample_count: self.sample_count,
            contract: self.digest.finish(),
            chars: self.chars.saturating_sub(1),
            file,
        })
    }
}

/// Records on their way to the statistics: their bytes, and where each
/// is in them (`None`: one too large to read, counted as opaque).
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    records: Vec<Option<Range<usize>>>,
}

/// The statistics of no records.
fn no_records() -> RecordStats {
    RecordStats::collect(std::iter::empty())
}

/// Folds the records of `batch` into `stats`, in order (one that is not
/// UTF-8 counts as opaque).
fn fold_batch(stats: &mut RecordStats, batch: Batch) {
    for record in batch.records {
        match record.and_then(|r| std::str::from_utf8(&batch.text[r]).ok()) {
            Some(text) => stats.fold(text),
            None => stats.fold_unread(),
        }
    }
}

/// A finished [`Sink`].
pub(super) struct Finished {
    pub stats: RecordStats,
    /// The first records, each followed by `\n` (for the recipes and
    /// the preview), `sample_count` of them.
    pub sample: String,
    pub sample_count: usize,
    pub contract: DataContract,
    /// All the records joined by newlines, in characters.
    pub chars: usize,
    pub file: std::fs::File,
}
