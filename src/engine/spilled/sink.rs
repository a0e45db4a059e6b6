//! Where the records of a spilled result go as they are made: a private
//! temporary file (the file's data lines), the completeness digest, the
//! statistics (each record folded in as it ends) and a sample of the first
//! records for the recipes and the preview. Memory: the sample, one record
//! up to [`FOLD_MAX`] bytes, and the file's write buffer.

use std::io::{BufWriter, Seek, Write};

use super::super::stats::RecordStats;
use super::scan::{CHUNK, NotStreamable};
use crate::contract::{DataContract, DataDigest};

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
    pub stats: RecordStats,
    sample: String,
    sample_count: usize,
    /// The record being written, while it is small enough to fold.
    current: Vec<u8>,
    current_len: u64,
    count: usize,
    /// Characters written, the newlines included.
    chars: usize,
}

impl Sink {
    /// Records into `file` (a new, empty private temporary file).
    pub(super) fn new(file: std::fs::File) -> Sink {
        Sink {
            out: Some(BufWriter::with_capacity(CHUNK, file)),
            ..Sink::dry()
        }
    }

    /// A sink that keeps only the digest (to compare a source with another).
    pub(super) fn dry() -> Sink {
        Sink {
            out: None,
            digest: DataDigest::default(),
            stats: RecordStats::collect(std::iter::empty()),
            sample: String::new(),
            sample_count: 0,
            current: Vec::new(),
            current_len: 0,
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
            self.current.extend_from_slice(bytes);
        } else {
            self.current = Vec::new();
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
        match std::str::from_utf8(&self.current) {
            Ok(record) if held => {
                self.stats.fold(record);
                if self.sample.len() + record.len() < SAMPLE_BYTES {
                    self.sample.push_str(record);
                    self.sample.push('\n');
                    self.sample_count += 1;
                }
            }
            _ => self.stats.fold_unread(),
        }
        self.current.clear();
        self.current_len = 0;
        Ok(())
    }

    /// The records' statistics, a view of the sample, the contract, and
    /// the data file rewound to its start.
    pub(super) fn finish(self) -> Result<Finished, NotStreamable> {
        let out = self.out.ok_or(NotStreamable("a dry run has no file"))?;
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        file.flush()?;
        file.rewind()?;
        Ok(Finished {
            stats: self.stats,
            sample: self.sample,
            sample_count: self.sample_count,
            contract: self.digest.finish(),
            chars: self.chars.saturating_sub(1),
            file,
        })
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
