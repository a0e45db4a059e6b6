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
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::engine::Offloader;
use crate::engine::descriptor::{HEADER_TYPE, OffloadHeader};
use crate::engine::rebuild::expiry;
use crate::store::{no_follow, parse_file_name};

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
    /// Readable, but larger than a whole read may be.
    #[error("the file is larger than {max} bytes: read it in parts with lro_extract")]
    TooLarge {
        /// The limit.
        max: u64,
    },
}

/// A keyed digest of who produced a file (a session or a tenant): what
/// [`OffloadHeader::owner`] holds. The key is random per layer, so the
/// digest tells nothing about the session id and cannot be forged from it.
///
/// SipHash (std's `RandomState`) keyed with two independent random keys,
/// 128 bits in all.
#[derive(Clone)]
pub(crate) struct OwnerKey {
    keys: [std::collections::hash_map::RandomState; 2],
}

impl std::fmt::Debug for OwnerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OwnerKey(..)")
    }
}

impl OwnerKey {
    /// A fresh random key.
    pub(crate) fn random() -> Self {
        OwnerKey {
            keys: [Default::default(), Default::default()],
        }
    }

    /// The owner of files produced in the MCP session `id`.
    pub(crate) fn session(&self, id: &str) -> String {
        self.digest("session", id)
    }

    /// The owner of files produced for the tenant `partition`.
    pub(crate) fn tenant(&self, partition: &str) -> String {
        self.digest("tenant", partition)
    }

    fn digest(&self, domain: &str, value: &str) -> String {
        let mut out = String::with_capacity(32);
        for key in &self.keys {
            let mut h = key.build_hasher();
            h.write(domain.as_bytes());
            h.write_u8(0);
            h.write(value.as_bytes());
            out.push_str(&format!("{:016x}", h.finish()));
        }
        out
    }
}

/// An offload file the caller may read: its path and header.
#[derive(Debug)]
pub(crate) struct Readable {
    /// Its path (in the output directory, as the store names it).
    pub path: PathBuf,
    /// Its file name.
    pub name: String,
    /// Its header.
    pub header: OffloadHeader,
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
    let name = file_name_in_dir(offloader.store().dir(), reference).ok_or_else(unavailable)?;
    let path = offloader.store().dir().join(&name);
    let header = read_header(&path).ok_or_else(unavailable)?;
    if !may_read(&header, &name, owner, offloader.config().ttl, now) {
        return Err(unavailable());
    }
    Ok(Readable { path, name, header })
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
pub(crate) fn read_header(path: &Path) -> Option<OffloadHeader> {
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
    (header.header_type == HEADER_TYPE).then_some(header)
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
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<(ulid::Ulid, String)> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| Some((parse_file_name(&n)?.1, n)))
        .collect();
    names.sort_unstable_by_key(|n| std::cmp::Reverse(n.0));
    let ttl = offloader.config().ttl;
    names
        .into_iter()
        .take(cap.saturating_mul(4))
        .filter_map(|(_, name)| {
            let path = dir.join(&name);
            let header = read_header(&path)?;
            may_read(&header, &name, owner, ttl, now).then_some(Readable { path, name, header })
        })
        .take(cap)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_digests_are_keyed_and_domain_separated() {
        let a = OwnerKey::random();
        let b = OwnerKey::random();
        assert_eq!(a.session("s1"), a.session("s1"));
        assert_eq!(a.session("s1").len(), 32);
        assert_ne!(a.session("s1"), a.session("s2"));
        assert_ne!(a.session("s1"), a.tenant("s1"));
        assert_ne!(a.session("s1"), b.session("s1"));
        assert!(!format!("{a:?}").contains('0'));
    }

    #[test]
    fn references_resolve_inside_the_output_dir_only() {
        let dir = tempfile::tempdir().unwrap();
        let name = "atlatl-recall-01J00000000000000000000000.jsonl";
        let d = dir.path();
        assert_eq!(file_name_in_dir(d, name).as_deref(), Some(name));
        let full = d.join(name);
        assert_eq!(
            file_name_in_dir(d, full.to_str().unwrap()).as_deref(),
            Some(name)
        );
        for bad in [
            format!("/etc/{name}"),
            format!("{}/../{name}", d.display()),
            format!("{}/x/{name}", d.display()),
            "atlatl-recall-x.jsonl".to_owned(),
            "/etc/passwd".to_owned(),
            String::new(),
        ] {
            assert_eq!(file_name_in_dir(d, &bad), None, "{bad}");
        }
    }
}
