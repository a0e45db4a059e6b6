//! A bounded local cache of files fetched from object storage, so that jq
//! runs on a local file and a second page of the same file costs no
//! download. Its directory is private to the process (`0700`, a fresh
//! `.lro-cache-{pid}-{ulid}` in the private per-user directory, removed
//! when the store is dropped), its files `0600`, created new and renamed
//! into place whole. Objects are immutable (create-only names), so a cached
//! copy never goes stale; expiry and binding are checked on the manifest
//! before every use. Past `max_bytes`, the least recently used files are
//! evicted.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{FsStore, Store, StoreError, private_file};

/// The default size of the cache.
pub(super) const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// A cached file.
#[derive(Debug)]
struct Entry {
    size: u64,
    used: u64,
}

/// The cache's index: what is there, and a use counter.
#[derive(Debug, Default)]
struct Index {
    entries: HashMap<String, Entry>,
    total: u64,
    clock: u64,
}

/// The local cache.
#[derive(Debug)]
pub(super) struct Cache {
    dir: PathBuf,
    max_bytes: u64,
    index: Mutex<Index>,
}

impl Cache {
    /// A cache of at most `max_bytes` in a new private directory under
    /// `base` (`None`: [`FsStore::default_dir`]).
    pub(super) fn new(base: Option<&Path>, max_bytes: u64) -> Result<Self, StoreError> {
        let base = base.map_or_else(FsStore::default_dir, Path::to_owned);
        FsStore::new(&base).check()?;
        remove_stale(&base);
        let dir = base.join(format!(
            ".lro-cache-{}-{}",
            std::process::id(),
            ulid::Ulid::new()
        ));
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(&dir)
            .map_err(|source| StoreError::Directory {
                path: dir.clone(),
                source,
            })?;
        Ok(Cache {
            dir,
            max_bytes,
            index: Mutex::new(Index::default()),
        })
    }

    /// The cached copy of `name`, if there is one of `size` bytes.
    pub(super) fn get(&self, name: &str, size: u64) -> Option<PathBuf> {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        index.clock += 1;
        let now = index.clock;
        let entry = index.entries.get_mut(name)?;
        if entry.size != size {
            return None;
        }
        entry.used = now;
        Some(self.dir.join(name))
    }

    /// Caches `name` (`size` bytes) with what `fill` writes, evicting the
    /// least recently used files to make room, and returns its path.
    /// `fill` must write exactly `size` bytes.
    pub(super) fn insert_with(
        &self,
        name: &str,
        size: u64,
        fill: impl FnOnce(&mut dyn Write) -> Result<(), StoreError>,
    ) -> Result<PathBuf, StoreError> {
        if size > self.max_bytes {
            return Err(StoreError::Remote {
                object: name.to_owned(),
                message: format!("larger than the local cache ({} bytes)", self.max_bytes),
            });
        }
        self.make_room(size);
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!(".{name}.{}.part", ulid::Ulid::new()));
        let werr = |p: &Path| {
            let p = p.to_owned();
            move |source| StoreError::Write { path: p, source }
        };
        let mut options = fs::OpenOptions::new();
        private_file(options.write(true).create_new(true));
        let file = options.open(&tmp).map_err(werr(&tmp))?;
        let mut counted = Counted {
            inner: io::BufWriter::new(file),
            n: 0,
        };
        let filled = fill(&mut counted).and_then(|()| counted.flush().map_err(werr(&tmp)));
        let written = counted.n;
        drop(counted);
        let done = filled.and_then(|()| {
            if written != size {
                return Err(StoreError::Remote {
                    object: name.to_owned(),
                    message: format!("{written} bytes read, the manifest says {size}"),
                });
            }
            fs::rename(&tmp, &path).map_err(werr(&path))
        });
        if let Err(e) = done {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        self.indexed(name, size);
        Ok(path)
    }

    /// Counts `name` (`size` bytes, in place) as cached and just used.
    fn indexed(&self, name: &str, size: u64) {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        index.clock += 1;
        let used = index.clock;
        if let Some(old) = index.entries.insert(name.to_owned(), Entry { size, used }) {
            index.total -= old.size;
        }
        index.total += size;
    }

    /// A copy of `name` being written as it is uploaded: cached by
    /// [`Pending::commit`], dropped otherwise (or when it grows past the
    /// cache's size, or the disk refuses it: a cache is best effort).
    pub(super) fn pending(&self, name: &str) -> Pending<'_> {
        let tmp = self.dir.join(format!(".{name}.{}.part", ulid::Ulid::new()));
        let mut options = fs::OpenOptions::new();
        private_file(options.write(true).create_new(true));
        let file = options.open(&tmp).ok().map(io::BufWriter::new);
        Pending {
            cache: self,
            name: name.to_owned(),
            tmp,
            file,
            n: 0,
        }
    }

    /// Evicts the least recently used files until `incoming` more bytes fit.
    fn make_room(&self, incoming: u64) {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        while index.total + incoming > self.max_bytes {
            let Some(oldest) = index
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(n, _)| n.clone())
            else {
                break;
            };
            if let Some(e) = index.entries.remove(&oldest) {
                index.total -= e.size;
            }
            let _ = fs::remove_file(self.dir.join(&oldest));
        }
    }

    /// Bytes cached now.
    #[cfg(test)]
    fn total(&self) -> u64 {
        self.index.lock().unwrap().total
    }
}

/// A file of the cache being written ([`Cache::pending`]).
pub(super) struct Pending<'c> {
    cache: &'c Cache,
    name: String,
    tmp: PathBuf,
    /// `None` once given up.
    file: Option<io::BufWriter<fs::File>>,
    n: u64,
}

impl Pending<'_> {
    /// Appends `bytes`; past the cache's size or on a write error, the
    /// copy is given up.
    pub(super) fn write(&mut self, bytes: &[u8]) {
        let Some(file) = &mut self.file else { return };
        let n = self.n + bytes.len() as u64;
        if n > self.cache.max_bytes || file.write_all(bytes).is_err() {
            self.give_up();
            return;
        }
        self.n = n;
    }

    /// Puts the copy in the cache, if it was written whole.
    pub(super) fn commit(mut self) {
        let Some(mut file) = self.file.take() else {
            return;
        };
        if file.flush().is_err() {
            drop(file);
            let _ = fs::remove_file(&self.tmp);
            return;
        }
        drop(file);
        self.cache.make_room(self.n);
        if fs::rename(&self.tmp, self.cache.dir.join(&self.name)).is_ok() {
            self.cache.indexed(&self.name, self.n);
        } else {
            let _ = fs::remove_file(&self.tmp);
        }
    }

    fn give_up(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.give_up();
    }
}

/// Removes the caches that processes which are gone left in `base` (a
/// crash skips the removal on drop). Linux only (`/proc` says which
/// processes run); elsewhere they stay.
fn remove_stale(base: &Path) {
    #[cfg(target_os = "linux")]
    {
        let Ok(entries) = fs::read_dir(base) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(".lro-cache-")) else {
                continue;
            };
            let Some(Ok(pid)) = rest.split_once('-').map(|(p, _)| p.parse::<u32>()) else {
                continue;
            };
            let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
            // The entry's own type: a symbolic link named like a cache is left.
            if !alive && entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = base;
}

impl Drop for Cache {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A writer that counts the bytes written.
struct Counted<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(cache: &Cache, name: &str, bytes: &[u8]) -> Result<PathBuf, StoreError> {
        cache.insert_with(name, bytes.len() as u64, |w| {
            w.write_all(bytes).map_err(|source| StoreError::Write {
                path: name.into(),
                source,
            })
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn caches_of_processes_that_are_gone_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join("base");
        let first = Cache::new(Some(&base), 10).unwrap();
        // No process has this id (Linux ids stop at 2^22).
        let stale = base.join(".lro-cache-999999999-01J00000000000000000000000");
        fs::create_dir(&stale).unwrap();
        fs::write(stale.join("f"), b"x").unwrap();
        let other = base.join("keep");
        fs::create_dir(&other).unwrap();
        let second = Cache::new(Some(&base), 10).unwrap();
        assert!(!stale.exists(), "stale cache left");
        assert!(first.dir.exists() && second.dir.exists() && other.exists());
    }

    #[test]
    fn the_cache_is_private_bounded_and_evicts_the_least_recently_used() {
        let root = tempfile::tempdir().unwrap();
        let cache = Cache::new(Some(&root.path().join("base")), 10).unwrap();
        let a = put(&cache, "a", b"aaaa").unwrap();
        put(&cache, "b", b"bbbb").unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"aaaa");
        assert!(cache.get("a", 4).is_some()); // a is now the most recent
        assert!(cache.get("a", 5).is_none()); // another size: not this object
        put(&cache, "c", b"cccc").unwrap(); // evicts b
        assert!(cache.get("b", 4).is_none());
        assert!(cache.get("a", 4).is_some() && cache.get("c", 4).is_some());
        assert_eq!(cache.total(), 8);
        assert!(put(&cache, "big", &[0; 11]).is_err());
        // A fill that writes less than announced leaves nothing.
        let short = cache.insert_with("d", 2, |w| {
            w.write_all(b"d").map_err(|source| StoreError::Write {
                path: "d".into(),
                source,
            })
        });
        assert!(short.is_err() && cache.get("d", 2).is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let dir = a.parent().unwrap().to_owned();
            let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
            let fmode = fs::metadata(&a).unwrap().permissions().mode() & 0o777;
            assert_eq!(fmode, 0o600);
            let names: Vec<_> = fs::read_dir(&dir).unwrap().collect();
            assert_eq!(names.len(), 2, "no partial file left");
            drop(cache);
            assert!(!dir.exists(), "removed with the store");
        }
    }
}
