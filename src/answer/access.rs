//! Which offload files a client may read, and their headers.
//!
//! A file is readable when all of these hold: it is named by a bare offload
//! file name, or by a path whose directory is the output directory and
//! whose name is an offload file name; it is a regular file opened without
//! following a symbolic link; its first line is an LRO header (read up to
//! [`MAX_HEADER_BYTES`]); it has not expired (the header's `expires_at`,
//! else the creation time in its name plus the ttl); and its `owner`, when
//! it has one, is the caller's. Every refusal is the same
//! [`AccessError::Unavailable`]: a client learns nothing about files that
//! are not its own (whether they exist, are someone else's, or expired).

use std::fs;

use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::engine::Offloader;
use crate::engine::descriptor::{HEADER_TYPE, OffloadHeader};
use crate::engine::events::OffloadEvent;
use crate::engine::rebuild::expiry;
use crate::extract::Query;
use crate::store::StoreError;
use crate::store::{Manifest, RESOURCE_URI_PREFIX, SharedFiles, no_follow, parse_file_name};

/// Longest header line read (headers keep the rebuild layout, which can
/// hold a result's non-record fields).
pub(crate) const MAX_HEADER_BYTES: u64 = 8 << 20;

/// Why a file cannot be read; the message never tells which check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AccessError {
    /// Missing, foreign, expired, outside the output directory, a symbolic
    /// link, or not an offload file: deliberately one answer.
    #[error(
        "no offloaded file {0:?} is available to this client (offloaded files expire; \
         use file_path from a recent descriptor, or lro_list)"
    )]
    Unavailable(String),
    /// Readable, but not what its header says: refused rather than
    /// served in part.
    #[error(
        "the offloaded file {name:?} is damaged ({detail}): it cannot be read; \
         call the tool again for a new one"
    )]
    Damaged {
        /// The file's name.
        name: String,
        /// What does not match.
        detail: String,
    },
    /// Readable, but larger than a whole read may be.
    #[error("the file is larger than {max} bytes: read it in parts with lro_extract")]
    TooLarge {
        /// The limit.
        max: u64,
    },
}

/// The refusal of `file`, found damaged (`detail`), after its event.
pub(crate) fn damaged(offloader: &Offloader, file: &Readable, detail: String) -> AccessError {
    offloader.events().emit(OffloadEvent::OffloadFileDamaged {
        path: file.path.clone(),
        detail: detail.clone(),
    });
    AccessError::Damaged {
        name: file.name.clone(),
        detail,
    }
}

/// Where the data of a file comes from, for `lro_extract`.
pub(crate) enum Input {
    /// A file of this machine.
    Path(PathBuf),
    /// A reader of the whole file, and its size.
    Reader(Box<dyn std::io::Read + Send>, u64),
    /// A reader from the line of a record to the end of an
    /// objects-only file, that record, and the file's records.
    Records(Box<dyn std::io::Read + Send>, (u64, u64)),
}

/// An offload file the caller may read: its path and header.
#[derive(Debug)]
pub(crate) struct Readable {
    /// Its path (in the output directory, as the store names it; in a
    /// shared store, `lro://files/{name}`).
    pub path: PathBuf,
    /// Its file name.
    pub name: String,
    /// Its header.
    pub header: OffloadHeader,
    /// Its manifest, when it is in a shared store.
    manifest: Option<Manifest>,
}

impl Readable {
    /// A local path of the whole file, for jq or a whole read: the file
    /// itself, or a shared store's cached copy (fetched if needed).
    /// Blocking.
    pub(crate) fn local_path(&self, offloader: &Offloader) -> Result<PathBuf, AccessError> {
        match (&self.manifest, offloader.store().shared()) {
            (Some(manifest), Some(shared)) => {
                shared.local_copy(&self.name, manifest).map_err(|e| match e {
                    StoreError::Damaged { detail, .. } => damaged(offloader, self, detail),
                    e => {
                        tracing::warn!(target: "tower_lro", file = %self.name, error = %e, "cannot fetch an offloaded file from the store");
                        AccessError::Unavailable(quoted(&self.name))
                    }
                })
            }
            _ => Ok(self.path.clone()),
        }
    }

    /// What `lro_extract` reads for `query`'s page from value `offset`:
    /// the file itself, or a shared store's cached copy, or a reader of
    /// its object that fetches as it is read; for a query that makes one
    /// value per object record of an objects-only file, from the indexed
    /// record nearest before the page's first. Blocking.
    pub(crate) fn input(
        &self,
        offloader: &Offloader,
        query: &Query,
        offset: usize,
    ) -> Result<Input, AccessError> {
        let (Some(manifest), Some(shared)) = (&self.manifest, offloader.store().shared()) else {
            return Ok(Input::Path(self.path.clone()));
        };
        // Value n of such a query is record n's: the page starts at its
        // record, and the total is the records'.
        let from_record = manifest
            .lines
            .as_ref()
            .filter(|ix| ix.objects_only && query.one_value_per_object())
            .and_then(|ix| Some((ix.record_at(offset as u64)?, ix.records)));
        let opened = match from_record {
            Some(((record, at), records)) => shared
                .open_at(&self.name, manifest, at)
                .map(|reader| Input::Records(reader, (record, records))),
            None => shared
                .open(&self.name, manifest)
                .map(|reader| Input::Reader(reader, manifest.size)),
        };
        opened.map_err(|e| {
            tracing::warn!(target: "tower_lro", file = %self.name, error = %e, "cannot read an offloaded file from the store");
            AccessError::Unavailable(quoted(&self.name))
        })
    }

    /// Its size in bytes, when a manifest says it.
    pub(crate) fn size(&self) -> Option<u64> {
        self.manifest.as_ref().map(|m| m.size)
    }
}

/// Resolves `reference` (a bare file name or a path in the output
/// directory) for a caller whose owner digest is `owner`, as of `now`.
/// Blocking: file-system calls.
pub(crate) fn open_readable(
    offloader: &Offloader,
    reference: &str,
    owner: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Readable, AccessError> {
    let unavailable = || AccessError::Unavailable(quoted(reference));
    if let Some(shared) = offloader.store().shared() {
        let name = reference
            .strip_prefix(RESOURCE_URI_PREFIX)
            .unwrap_or(reference);
        parse_file_name(name).ok_or_else(unavailable)?;
        let readable = shared_readable(offloader, shared, name).ok_or_else(unavailable)?;
        if !may_read(&readable.header, name, owner, offloader.config().ttl, now) {
            return Err(unavailable());
        }
        return Ok(readable);
    }
    let name = file_name_in_dir(offloader.store().dir(), reference).ok_or_else(unavailable)?;
    let path = offloader.store().dir().join(&name);
    let (header, header_len) = read_header_sized(&path).ok_or_else(unavailable)?;
    if !may_read(&header, &name, owner, offloader.config().ttl, now) {
        return Err(unavailable());
    }
    if let Some(detail) = size_mismatch(&path, &header, header_len) {
        offloader.events().emit(OffloadEvent::OffloadFileDamaged {
            path: path.clone(),
            detail: detail.clone(),
        });
        return Err(AccessError::Damaged { name, detail });
    }
    Ok(Readable {
        path,
        name,
        header,
        manifest: None,
    })
}

/// The file `name` of a shared store, from its manifest (no manifest: no
/// file). A store that cannot be reached is logged and reads as no file.
fn shared_readable(
    offloader: &Offloader,
    shared: &dyn SharedFiles,
    name: &str,
) -> Option<Readable> {
    let manifest = match shared.manifest(name) {
        Ok(m) => m?,
        Err(e) => {
            tracing::warn!(target: "tower_lro", file = %name, error = %e, "cannot read an offloaded file's manifest");
            return None;
        }
    };
    let header: OffloadHeader = serde_json::from_str(&manifest.header).ok()?;
    (header.header_type == HEADER_TYPE).then(|| Readable {
        path: offloader.store().dir().join(name),
        name: name.to_owned(),
        header,
        manifest: Some(manifest),
    })
}

/// What a refusal quotes of a reference: its last component, cut (never a
/// directory of the server, whatever the client sent).
pub(crate) fn quoted(reference: &str) -> String {
    let last = reference.rsplit(['/', '\\']).next().unwrap_or_default();
    super::args::cut(last)
}

/// The offload file name `reference` names, when it is a bare offload file
/// name or a path whose directory is `dir`.
fn file_name_in_dir(dir: &Path, reference: &str) -> Option<String> {
    let path = Path::new(reference);
    let name = path.file_name()?.to_str()?;
    parse_file_name(name)?;
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return None;
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        let same = parent == dir
            || match (fs::canonicalize(parent), fs::canonicalize(dir)) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            };
        if !same {
            return None;
        }
    }
    Some(name.to_owned())
}

/// Whether `header` (of the file `name`) may be read by `owner` at `now`.
fn may_read(
    header: &OffloadHeader,
    name: &str,
    owner: Option<&str>,
    ttl: std::time::Duration,
    now: DateTime<Utc>,
) -> bool {
    let expires = match header.expires_at.as_deref() {
        Some(at) => match DateTime::parse_from_rfc3339(at) {
            Ok(t) => t.with_timezone(&Utc),
            Err(_) => return false,
        },
        None => match parse_file_name(name) {
            Some((_, ulid)) => expiry(ulid.datetime().into(), ttl),
            None => return false,
        },
    };
    if now >= expires {
        return false;
    }
    match header.owner.as_deref() {
        None => true,
        Some(o) => owner == Some(o),
    }
}

/// The header of the file at `path`: opened without following a symbolic
/// link, a regular file, its first line an LRO header of at most
/// [`MAX_HEADER_BYTES`].
/// Why the records of the file at `path` are not the `data_bytes` its
/// header counts (a file cut short on disk, or grown), if they are not.
/// Headers without `data_bytes` (older files) are not checked.
fn size_mismatch(path: &Path, header: &OffloadHeader, header_len: u64) -> Option<String> {
    let counted = header.data_bytes?;
    let size = fs::metadata(path).ok()?.len();
    let records = size.saturating_sub(header_len);
    (records != counted).then(|| format!("{records} bytes of records, its header counts {counted}"))
}

/// [`read_header`], and the header line's length with its newline.
fn read_header_sized(path: &Path) -> Option<(OffloadHeader, u64)> {
    let mut options = fs::OpenOptions::new();
    let file = no_follow(options.read(true)).open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut line = Vec::new();
    BufReader::new(file.take(MAX_HEADER_BYTES + 1))
        .read_until(b'\n', &mut line)
        .ok()?;
    if line.last() != Some(&b'\n') {
        return None; // longer than the cap, or no record line at all
    }
    let header: OffloadHeader = serde_json::from_slice(&line).ok()?;
    (header.header_type == HEADER_TYPE).then_some((header, line.len() as u64))
}

pub(crate) fn read_header(path: &Path) -> Option<OffloadHeader> {
    read_header_sized(path).map(|(header, _)| header)
}

/// Reads the whole file at `path` (opened without following a symbolic
/// link), if it is at most `max` bytes.
pub(crate) fn read_capped(path: &Path, max: u64) -> Option<String> {
    let mut options = fs::OpenOptions::new();
    let file = no_follow(options.read(true)).open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut text = String::new();
    file.take(max).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The files `owner` may read, newest first, at most `cap` of them, each
/// with its header. Only names are listed for all files; headers are read
/// for the newest until `cap` readable ones are found (and at most
/// `4 * cap` headers in all).
pub(crate) fn list_readable(
    offloader: &Offloader,
    owner: Option<&str>,
    cap: usize,
    now: DateTime<Utc>,
) -> Vec<Readable> {
    let dir = offloader.store().dir();
    let shared = offloader.store().shared();
    let listed: Vec<String> = match shared {
        Some(shared) => match shared.committed() {
            Ok(names) => names,
            Err(e) => {
                tracing::warn!(target: "tower_lro", error = %e, "cannot list the offloaded files of the store");
                return Vec::new();
            }
        },
        None => match fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect(),
            Err(_) => return Vec::new(),
        },
    };
    let mut names: Vec<(ulid::Ulid, String)> = listed
        .into_iter()
        .filter_map(|n| Some((parse_file_name(&n)?.1, n)))
        .collect();
    names.sort_unstable_by_key(|n| std::cmp::Reverse(n.0));
    let ttl = offloader.config().ttl;
    names
        .into_iter()
        .take(cap.saturating_mul(4))
        .filter_map(|(_, name)| {
            let readable = match shared {
                Some(shared) => shared_readable(offloader, shared, &name)?,
                None => {
                    let path = dir.join(&name);
                    let header = read_header(&path)?;
                    Readable {
                        path,
                        name,
                        header,
                        manifest: None,
                    }
                }
            };
            let mine = may_read(&readable.header, &readable.name, owner, ttl, now);
            mine.then_some(readable)
        })
        .take(cap)
        .collect()
}

#[cfg(test)]
mod tests;
