//! The history's files in `store_dir`: content-addressed names, written
//! once and idempotently (the same name always holds the same bytes, so a
//! second turn, or a second process, finding the file there is a success),
//! and read back for remembered summaries.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

use crate::store::{FsStore, Store, StoreError, no_follow};

/// Prefix of the history's own files (tool outputs kept as text, stored
/// message groups, remembered summaries).
pub const HISTORY_FILE_PREFIX: &str = "history-";

/// The most bytes read back from a remembered summary file.
const MAX_SUMMARY_FILE_BYTES: u64 = 1 << 20;
/// The largest checkpoint file read back (a rewritten history is within
/// its budget; a file past this is not one of ours).
const MAX_CHECKPOINT_FILE_BYTES: u64 = 16 << 20;

/// A SHA-256 of `parts`, each prefixed by its length (so that parts cannot
/// run into each other).
pub(crate) fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// The first `bytes` bytes of `digest` in lower-case hex.
pub(crate) fn hex(digest: &[u8; 32], bytes: usize) -> String {
    use std::fmt::Write;
    digest[..bytes.min(32)]
        .iter()
        .fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// A ULID made from `digest`: time 0 (the file's content, not its time,
/// names it) and 80 bits of the digest.
pub(crate) fn content_ulid(digest: &[u8; 32]) -> ulid::Ulid {
    let mut random = [0u8; 16];
    random[6..].copy_from_slice(&digest[..10]);
    ulid::Ulid::from_parts(0, u128::from_be_bytes(random))
}

/// `id` reduced to `[a-z0-9_-]`, at most 64 characters, never empty.
pub(crate) fn name_part(id: &str) -> String {
    let part: String = id
        .chars()
        .filter_map(|c| {
            let c = c.to_ascii_lowercase();
            (c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_').then_some(c)
        })
        .take(64)
        .collect();
    if part.is_empty() { "chat".into() } else { part }
}

/// The file store of the history: [`FsStore`] (private directory,
/// create-new, never through a symlink), made idempotent for
/// content-addressed names.
#[derive(Debug, Clone)]
pub(crate) struct HistoryStore {
    fs: FsStore,
    /// Set by [`Store::write`] when it created its file (see
    /// [`recording`](Self::recording)).
    created: Option<Arc<AtomicBool>>,
    /// Where the files also go, for the other processes of a fleet.
    remote: Option<Arc<dyn Remote>>,
}

/// A store the history's files are also written to and read back from
/// when they are not in the directory (object storage shared by a fleet).
pub(crate) trait Remote: Send + Sync + std::fmt::Debug {
    /// Writes `file_name` unless it is there; `true` when written.
    fn put_new(&self, file_name: &str, contents: &[u8]) -> Result<bool, StoreError>;
    /// `file_name` when it is there, at most `max` bytes.
    fn get(&self, file_name: &str, max: u64) -> Result<Option<Vec<u8>>, StoreError>;
}

impl HistoryStore {
    pub(crate) fn new(fs: FsStore) -> Self {
        HistoryStore {
            fs,
            created: None,
            remote: None,
        }
    }

    /// The same store, its files also in `remote`.
    #[cfg(feature = "object-store")]
    pub(crate) fn with_remote(mut self, remote: Arc<dyn Remote>) -> Self {
        self.remote = Some(remote);
        self
    }

    /// Fetches `file_name` from the remote store into the directory when
    /// it is not there; `true` when it is there now. Blocking.
    pub(crate) fn fetch(&self, file_name: &str, max: u64) -> bool {
        let path = self.fs.dir().join(file_name);
        if std::fs::symlink_metadata(&path).is_ok() {
            return true;
        }
        let Some(remote) = &self.remote else {
            return false;
        };
        match remote.get(file_name, max) {
            Ok(Some(bytes)) => self
                .write_local(file_name, &bytes, |n, c| self.fs.publish(n, c))
                .is_ok(),
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(target: "tower_lro", file = file_name, error = %e, "cannot read a history file from the shared store");
                false
            }
        }
    }

    /// Writes `contents` as `file_name` (a name this module built); `true`
    /// when the file is new, `false` when it was there with these bytes.
    pub(crate) fn put(
        &self,
        file_name: &str,
        contents: &[u8],
    ) -> Result<(PathBuf, bool), StoreError> {
        self.write_once(file_name, contents, |n, c| self.fs.publish(n, c))
    }

    /// The same store, noting in the flag returned whether a write through
    /// it created its file (for the engine's writes, which return only
    /// the path).
    pub(crate) fn recording(&self) -> (HistoryStore, Arc<AtomicBool>) {
        let created = Arc::new(AtomicBool::new(false));
        let store = HistoryStore {
            fs: self.fs.clone(),
            created: Some(created.clone()),
            remote: self.remote.clone(),
        };
        (store, created)
    }

    /// Writes with `write`, settling a file found there. Another writer of
    /// the same content (the same history rewritten twice at once) holds
    /// the temporary name until it publishes: wait for it, a bounded time;
    /// a temporary file still there after that was left by a crash, and is
    /// removed for one last try. Then into the remote store, when there is
    /// one. Blocking: runs on the blocking pool.
    fn write_once(
        &self,
        file_name: &str,
        contents: &[u8],
        write: impl Fn(&str, &[u8]) -> Result<PathBuf, StoreError>,
    ) -> Result<(PathBuf, bool), StoreError> {
        let result = self.write_local(file_name, contents, write)?;
        if let Some(remote) = &self.remote {
            // Every write, new here or not: another process may have
            // written it here before the store was shared, or failed to.
            remote.put_new(file_name, contents)?;
        }
        Ok(result)
    }

    /// [`write_once`](Self::write_once) in the directory only.
    fn write_local(
        &self,
        file_name: &str,
        contents: &[u8],
        write: impl Fn(&str, &[u8]) -> Result<PathBuf, StoreError>,
    ) -> Result<(PathBuf, bool), StoreError> {
        let attempt = || self.settle(file_name, contents, write(file_name, contents));
        let mut result = attempt();
        for _ in 0..BUSY_ROUNDS {
            if !self.is_busy(file_name, &result) {
                return result;
            }
            std::thread::sleep(BUSY_PAUSE);
            result = attempt();
        }
        if self.is_busy(file_name, &result) {
            let stale = self.fs.dir().join(format!(".{file_name}.tmp"));
            let _ = std::fs::remove_file(stale);
            result = attempt();
        }
        result
    }

    /// A file already there with the same bytes is this write done before.
    fn settle(
        &self,
        file_name: &str,
        contents: &[u8],
        written: Result<PathBuf, StoreError>,
    ) -> Result<(PathBuf, bool), StoreError> {
        match written {
            Ok(path) => Ok((path, true)),
            Err(StoreError::Write { path, source })
                if source.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                let len = contents.len() as u64 + 1;
                match self.read(file_name, len) {
                    Some(found) if found.as_bytes() == contents => {
                        Ok((self.fs.dir().join(file_name), false))
                    }
                    _ => Err(StoreError::Write { path, source }),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Whether a write failed because the name is taken but the file is
    /// not there: another writer is between its temporary file and
    /// publishing (a file there with other bytes is no reason to wait).
    fn is_busy(&self, file_name: &str, result: &Result<(PathBuf, bool), StoreError>) -> bool {
        let taken = matches!(result, Err(StoreError::Write { source, .. })
            if source.kind() == std::io::ErrorKind::AlreadyExists);
        taken && std::fs::symlink_metadata(self.fs.dir().join(file_name)).is_err()
    }

    /// The text of `file_name` when it is a regular file (never through a
    /// symlink) of at most `max` bytes.
    fn read(&self, file_name: &str, max: u64) -> Option<String> {
        let mut options = std::fs::OpenOptions::new();
        let file = no_follow(options.read(true))
            .open(self.fs.dir().join(file_name))
            .ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        // Used: the sweep keeps it (see `sweep_history_dir`).
        let _ = file.set_modified(std::time::SystemTime::now());
        let mut text = String::new();
        file.take(max).read_to_string(&mut text).ok()?;
        Some(text)
    }

    /// A remembered checkpoint (see `budget`), from the remote store when
    /// it is not here and `remote`.
    pub(crate) fn read_checkpoint(&self, file_name: &str, remote: bool) -> Option<String> {
        if remote {
            self.fetch(file_name, MAX_CHECKPOINT_FILE_BYTES);
        }
        self.read(file_name, MAX_CHECKPOINT_FILE_BYTES)
    }

    /// A remembered summary (see [`put`](Self::put)), from the remote
    /// store when it is not here.
    pub(crate) fn read_summary(&self, file_name: &str) -> Option<String> {
        self.fetch(file_name, MAX_SUMMARY_FILE_BYTES);
        self.read(file_name, MAX_SUMMARY_FILE_BYTES)
    }
}

/// How many times, and how long apart, a write waits for another writer
/// of the same file (about a second in all).
const BUSY_ROUNDS: usize = 100;
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

impl Store for HistoryStore {
    fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
        let (path, new) = self.write_once(file_name, contents, |n, c| self.fs.write(n, c))?;
        if let Some(created) = &self.created {
            created.store(new, Ordering::Relaxed);
        }
        Ok(path)
    }

    fn dir(&self) -> &std::path::Path {
        self.fs.dir()
    }

    fn check(&self) -> Result<(), StoreError> {
        self.fs.check()
    }
}

/// A [`BucketStore`](crate::store::BucketStore) as the history's remote
/// store: its files under `under` (a path below the bucket's prefix).
#[cfg(feature = "object-store")]
#[derive(Debug)]
pub(crate) struct BucketRemote {
    pub(crate) store: Arc<crate::store::BucketStore>,
    pub(crate) under: String,
}

#[cfg(feature = "object-store")]
impl BucketRemote {
    fn path(&self, file_name: &str) -> String {
        match self.under.trim_matches('/') {
            "" => file_name.to_owned(),
            under => format!("{under}/{file_name}"),
        }
    }
}

#[cfg(feature = "object-store")]
impl Remote for BucketRemote {
    fn put_new(&self, file_name: &str, contents: &[u8]) -> Result<bool, StoreError> {
        self.store.put_new(&self.path(file_name), contents.to_vec())
    }

    fn get(&self, file_name: &str, max: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let found = self.store.get_small(&self.path(file_name), max)?;
        Ok(found.map(|b| b.to_vec()))
    }
}

/// What one [`sweep_history_dir`] did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct HistorySweep {
    /// History files seen.
    pub scanned: usize,
    /// History files deleted.
    pub deleted: usize,
    /// Files or directories that could not be read or deleted, and why
    /// (the sweep went on).
    pub errors: Vec<(PathBuf, String)>,
}

/// Deletes the history's files unused for `ttl` as of `now` in `dir` and in
/// its `owner-*` directories (one per caller, as `lro history` keeps them):
/// regular files named `history-…` or `atlatl-…` (never through a symbolic
/// link, never another name) whose modification time is older; a file is
/// touched each time it is used (written again, read back, read as a
/// checkpoint or summary). A conversation that comes back after its files
/// went gets its answers offloaded again from what it resends; only its
/// read back of an answer it no longer resends, and its remembered
/// rewrite, are lost. Blocking.
pub fn sweep_history_dir(
    dir: &std::path::Path,
    ttl: std::time::Duration,
    now: std::time::SystemTime,
) -> HistorySweep {
    let mut sweep = HistorySweep::default();
    sweep_one(dir, ttl, now, true, &mut sweep);
    sweep
}

fn sweep_one(
    dir: &std::path::Path,
    ttl: std::time::Duration,
    now: std::time::SystemTime,
    owners: bool,
    sweep: &mut HistorySweep,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => return sweep.errors.push((dir.to_owned(), e.to_string())),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() && owners && name.starts_with("owner-") {
            sweep_one(&path, ttl, now, false, sweep);
            continue;
        }
        let ours = name.starts_with(HISTORY_FILE_PREFIX) || name.starts_with("atlatl-");
        if !kind.is_file() || !ours {
            continue;
        }
        sweep.scanned += 1;
        let modified = entry.metadata().and_then(|m| m.modified());
        let old = modified.is_ok_and(|m| now.duration_since(m).is_ok_and(|age| age > ttl));
        if !old {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => sweep.deleted += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => sweep.errors.push((path, e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[cfg(unix)]
    #[test]
    fn the_sweep_deletes_unused_history_files_only_and_use_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let owner = dir.path().join("owner-ab");
        std::fs::create_dir(&owner).unwrap();
        let store = HistoryStore::new(FsStore::new(&owner));
        let day = Duration::from_secs(24 * 3600);
        let old = SystemTime::now() - 3 * day;
        let age = |path: &std::path::Path| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        };
        for name in [
            "history-tool-a-1.txt",
            "history-checkpoint-1.json",
            "atlatl-a-01J0000000000000000000000.jsonl",
            "notes.txt",
        ] {
            std::fs::write(owner.join(name), "x").unwrap();
            age(&owner.join(name));
        }
        std::fs::write(dir.path().join("history-tool-b-2.txt"), "y").unwrap();
        age(&dir.path().join("history-tool-b-2.txt"));
        std::os::unix::fs::symlink(owner.join("notes.txt"), owner.join("history-link.txt"))
            .unwrap();
        // Used since: written again with the same bytes, read as a checkpoint.
        store.put("history-tool-a-1.txt", b"x").unwrap();
        assert!(
            store
                .read_checkpoint("history-checkpoint-1.json", false)
                .is_some()
        );
        let sweep = sweep_history_dir(dir.path(), day, SystemTime::now());
        assert_eq!((sweep.scanned, sweep.deleted), (4, 2), "{sweep:?}");
        let left: std::collections::BTreeSet<String> = std::fs::read_dir(&owner)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let want = [
            "history-checkpoint-1.json",
            "history-link.txt",
            "history-tool-a-1.txt",
            "notes.txt",
        ];
        assert_eq!(left, want.iter().map(|s| s.to_string()).collect());
        assert!(!dir.path().join("history-tool-b-2.txt").exists());
        assert!(sweep.errors.is_empty(), "{sweep:?}");
    }
}
