//! Files that live in a store shared by several processes (object storage),
//! not in a directory of this machine: how readers, the cleanup and the
//! readiness probe reach them ([`SharedFiles`]), and the manifest that
//! commits each file ([`Manifest`]).
//!
//! A file is committed in two steps: its data object, then its manifest,
//! created only if none exists. Readers look for the manifest first: no
//! manifest, no file (a write that failed half-way, or a data object whose
//! manifest was swept, is never seen). The manifest holds what a reader
//! checks before it fetches a byte of data: the file's header line (its
//! `expires_at` and `owner`, the binding), its size, and when it expires.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::StoreError;
#[cfg(feature = "object-store")]
use crate::contract::{DataContract, DataDigest};

/// The version of the manifest format written.
pub const MANIFEST_VERSION: u32 = 1;

/// Longest manifest read (a header keeps a result's non-record fields, up
/// to the header cap of 8 MiB).
pub const MAX_MANIFEST_BYTES: u64 = 9 << 20;

/// What commits a file in a shared store, and what a reader checks first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Manifest {
    /// [`MANIFEST_VERSION`] when written by this version.
    pub version: u32,
    /// The file name (`atlatl-{operation}-{ulid}.jsonl`).
    pub name: String,
    /// The size of the data object in bytes.
    pub size: u64,
    /// The header's `expires_at`, when it has one (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The file's first line (its LRO header, without the line break).
    pub header: String,
    /// Where its record lines start, every `stride`-th one: how a reader
    /// jumps to a page deep in the file. Absent from manifests of older
    /// writers and of files without a header line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineIndex>,
}

/// Where a file's record lines start, at a fixed stride: the byte offset
/// of record `k * stride` (0 the first line after the header) is
/// `offsets[k]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LineIndex {
    /// Records from one offset to the next (a power of two).
    pub stride: u64,
    /// Byte offsets in the data object.
    pub offsets: Vec<u64>,
    /// Record lines in the file.
    pub records: u64,
    /// Whether every record line is one JSON object that jq 1.6 reads
    /// (not nested past its parser's limit) and the file ends with a line
    /// break: then a filter that makes one value of any object makes one
    /// per line, and a page of its output can start at its record.
    pub objects_only: bool,
}

impl LineIndex {
    /// The indexed record nearest before `record` (or at it), and the
    /// byte offset where its line starts; `None` when nothing is indexed.
    pub fn record_at(&self, record: u64) -> Option<(u64, u64)> {
        let k = usize::try_from(record / self.stride.max(1)).unwrap_or(usize::MAX);
        let k = k.min(self.offsets.len().checked_sub(1)?);
        Some((k as u64 * self.stride, self.offsets[k]))
    }
}

impl Manifest {
    /// The manifest of the file `name` of `size` bytes whose first line is
    /// `header` (without its line break).
    pub fn new(name: &str, size: u64, header: &str) -> Self {
        #[derive(Deserialize)]
        struct Expiry {
            expires_at: Option<String>,
        }
        let expires_at = serde_json::from_str::<Expiry>(header)
            .ok()
            .and_then(|e| e.expires_at);
        Manifest {
            version: MANIFEST_VERSION,
            name: name.to_owned(),
            size,
            expires_at,
            header: header.to_owned(),
            lines: None,
        }
    }

    /// The same manifest with the line index `lines`.
    pub fn with_lines(mut self, lines: Option<LineIndex>) -> Self {
        self.lines = lines;
        self
    }

    /// The manifest in `bytes`, if it is one (of any version with the
    /// fields this one reads) for the file `name`.
    pub fn parse(bytes: &[u8], name: &str) -> Option<Self> {
        let manifest: Manifest = serde_json::from_slice(bytes).ok()?;
        (manifest.name == name && !manifest.header.contains('\n')).then_some(manifest)
    }
}

/// Checks a file's data lines (the bytes after its header line) against
/// the completeness contract its manifest's header states (`count`,
/// `data_bytes`, `data_sha256`) as they are read: a replica reading a file
/// whole for the first time refuses an object that is not what was written.
#[cfg(feature = "object-store")]
pub(crate) struct ContractCheck {
    want: DataContract,
    digest: DataDigest,
    past_header: bool,
}

#[cfg(feature = "object-store")]
impl ContractCheck {
    /// The check of the file `manifest` describes; `None` when its header
    /// states no SHA-256 (files of older writers).
    pub(crate) fn of(manifest: &Manifest) -> Option<Self> {
        #[derive(Deserialize)]
        struct Contract {
            count: usize,
            data_bytes: Option<u64>,
            data_sha256: Option<String>,
        }
        let c: Contract = serde_json::from_str(&manifest.header).ok()?;
        Some(ContractCheck {
            want: DataContract {
                count: c.count,
                bytes: c.data_bytes?,
                sha256: c.data_sha256?,
            },
            digest: DataDigest::default(),
            past_header: false,
        })
    }

    /// Folds in the next bytes of the file (header line first).
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        if !self.past_header {
            let Some(end) = memchr::memchr(b'\n', bytes) else {
                return;
            };
            self.past_header = true;
            bytes = &bytes[end + 1..];
        }
        let lines = memchr::memchr_iter(b'\n', bytes).count();
        self.digest.update(bytes, lines);
    }

    /// Whether everything folded in is what the header says; else what
    /// differs.
    pub(crate) fn finish(self) -> Result<(), String> {
        let got = self.digest.finish();
        if got != self.want {
            return Err(format!(
                "its data is {} lines, {} bytes with SHA-256 {}; its header says {} lines, {} \
                 bytes with {}",
                got.count,
                got.bytes,
                got.sha256,
                self.want.count,
                self.want.bytes,
                self.want.sha256
            ));
        }
        Ok(())
    }
}

/// A shared store's files, as readers, the cleanup and the readiness probe
/// reach them. Calls are blocking (run them off the async executor). A
/// store returns one from [`Store::shared`](super::Store::shared).
pub trait SharedFiles: Send + Sync {
    /// The manifest of the committed file `file_name`, `None` when there is
    /// none (never written, not yet committed, or deleted).
    fn manifest(&self, file_name: &str) -> Result<Option<Manifest>, StoreError>;

    /// A complete local copy of the committed file `file_name` (described
    /// by `manifest`), private to this user, for jq: from a bounded local
    /// cache, else fetched into it.
    fn local_copy(&self, file_name: &str, manifest: &Manifest) -> Result<PathBuf, StoreError>;

    /// A reader of the committed file `file_name` (described by
    /// `manifest`), from its start, that fetches only what is read: a
    /// page of `lro_extract` reads the records it needs. By default, the
    /// whole [`local_copy`](Self::local_copy).
    fn open(
        &self,
        file_name: &str,
        manifest: &Manifest,
    ) -> Result<Box<dyn std::io::Read + Send>, StoreError> {
        let path = self.local_copy(file_name, manifest)?;
        let file = std::fs::File::open(&path).map_err(|e| StoreError::Remote {
            object: file_name.to_owned(),
            message: format!("its cached copy: {e}"),
        })?;
        Ok(Box::new(file))
    }

    /// A reader of the committed file `file_name` from byte `offset` (a
    /// record line's start, from its manifest's [`LineIndex`]) to its end,
    /// that fetches only what is read. By default, the whole
    /// [`local_copy`](Self::local_copy) from there.
    fn open_at(
        &self,
        file_name: &str,
        manifest: &Manifest,
        offset: u64,
    ) -> Result<Box<dyn std::io::Read + Send>, StoreError> {
        use std::io::Seek;
        let path = self.local_copy(file_name, manifest)?;
        let cached = |e: std::io::Error| StoreError::Remote {
            object: file_name.to_owned(),
            message: format!("its cached copy: {e}"),
        };
        let mut file = std::fs::File::open(&path).map_err(cached)?;
        file.seek(std::io::SeekFrom::Start(offset))
            .map_err(cached)?;
        Ok(Box::new(file))
    }

    /// The names of the committed files (those with a manifest), in no
    /// particular order.
    fn committed(&self) -> Result<Vec<String>, StoreError>;

    /// One sweep of the store: deletes each committed file that has
    /// expired at `now` (manifest first, then data; `ttl` for a manifest
    /// without `expires_at`), and data objects left without a manifest
    /// for longer than `ttl`. Idempotent: several sweepers may run at once.
    fn sweep(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        ttl: std::time::Duration,
    ) -> Result<Sweep, StoreError>;
}

/// What one [`SharedFiles::sweep`] did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Sweep {
    /// Committed files and orphaned data objects seen.
    pub scanned: usize,
    /// The files deleted (committed ones), with their creation times.
    pub deleted: Vec<(String, chrono::DateTime<chrono::Utc>)>,
    /// Data objects deleted that had no manifest (failed or cut writes).
    pub orphans: usize,
    /// Files another sweeper deleted first.
    pub vanished: usize,
    /// Errors met on the way, by object (the sweep went on).
    pub errors: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_carry_the_header_and_its_expiry() {
        let header = r#"{"type":"lro_header","expires_at":"2026-01-01T00:00:00Z","owner":"ab"}"#;
        let name = "atlatl-list-01J00000000000000000000000.jsonl";
        let m = Manifest::new(name, 42, header);
        assert_eq!(m.expires_at.as_deref(), Some("2026-01-01T00:00:00Z"));
        let bytes = serde_json::to_vec(&m).unwrap();
        assert_eq!(Manifest::parse(&bytes, name), Some(m.clone()));
        assert_eq!(Manifest::parse(&bytes, "atlatl-list-other.jsonl"), None);
        assert_eq!(Manifest::parse(b"{}", name), None);
        let no_expiry = Manifest::new(name, 1, "{}");
        assert_eq!(no_expiry.expires_at, None);
    }
}
