//! [`FsStore`]: the store of a directory of this machine (see the parent
//! module's docs for its rules).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{Store, StoreError, is_offload_file_name, private_file};

/// The file-system store.
#[derive(Debug, Clone)]
pub struct FsStore {
    dir: PathBuf,
    /// Use the directory even when it is not private.
    trusted: bool,
}

impl FsStore {
    /// A store writing into `dir` (created `0700` on first write). An
    /// empty path means [`FsStore::default_dir`]. A relative path is made
    /// absolute against the current directory.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir: PathBuf = dir.into();
        let dir = if dir.as_os_str().is_empty() {
            Self::default_dir()
        } else {
            dir
        };
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        FsStore {
            dir,
            trusted: false,
        }
    }

    /// The default output directory: `tower-lro-{uid}` in the system temp
    /// dir (`tower-lro` where there are no user ids), private to this user.
    pub fn default_dir() -> PathBuf {
        #[cfg(unix)]
        let name = format!("tower-lro-{}", rustix::process::geteuid().as_raw());
        #[cfg(not(unix))]
        let name = "tower-lro".to_owned();
        std::env::temp_dir().join(name)
    }

    /// Uses the directory even when it is not private (a symbolic link,
    /// owned by another user, or writable by others). Off by default; see
    /// the module docs for what that exposes.
    pub fn trust_dir(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// Creates the directory if needed and checks that it is private.
    fn ensure_dir(&self) -> Result<(), StoreError> {
        let err = |source| StoreError::Directory {
            path: self.dir.clone(),
            source,
        };
        match fs::symlink_metadata(&self.dir) {
            Ok(m) => return self.vet(&m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(err(e)),
        }
        if let Some(parent) = self.dir.parent() {
            fs::create_dir_all(parent).map_err(err)?;
        }
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        match builder.create(&self.dir) {
            Ok(()) => {}
            // Someone made it meanwhile: vetted below like any other.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(err(e)),
        }
        let m = fs::symlink_metadata(&self.dir).map_err(err)?;
        self.vet(&m)
    }

    /// Checks the directory's own entry (not followed if a link).
    fn vet(&self, m: &fs::Metadata) -> Result<(), StoreError> {
        let untrusted = |reason: String| StoreError::Untrusted {
            path: self.dir.clone(),
            reason,
        };
        if m.file_type().is_symlink() {
            if !self.trusted {
                return Err(untrusted("it is a symbolic link".into()));
            }
            let target = fs::metadata(&self.dir).map_err(|source| StoreError::Directory {
                path: self.dir.clone(),
                source,
            })?;
            return self.vet(&target);
        }
        if !m.is_dir() {
            return Err(StoreError::Directory {
                path: self.dir.clone(),
                source: io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "exists and is not a directory",
                ),
            });
        }
        if self.trusted {
            return Ok(());
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let me = rustix::process::geteuid().as_raw();
            if m.uid() != me {
                return Err(untrusted(format!(
                    "it is owned by uid {}, not by this user ({me})",
                    m.uid()
                )));
            }
            if m.mode() & 0o022 != 0 {
                return Err(untrusted(format!(
                    "it is writable by group or others (mode {:o})",
                    m.mode() & 0o7777
                )));
            }
        }
        Ok(())
    }
}

impl FsStore {
    /// [`Store::write`] without the offload-name check, for the files of
    /// other modules (the history's): `file_name` must be a plain file name
    /// the caller built (no separator, no leading dot).
    pub(crate) fn publish(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
        self.publish_from(file_name, contents, &mut io::empty())
    }

    /// [`FsStore::publish`] of `head` then all of `body`, copied in bounded
    /// memory.
    fn publish_from(
        &self,
        file_name: &str,
        head: &[u8],
        body: &mut dyn io::Read,
    ) -> Result<PathBuf, StoreError> {
        if file_name.is_empty() || file_name.starts_with('.') || file_name.contains(['/', '\\']) {
            return Err(StoreError::InvalidName(file_name.to_owned()));
        }
        self.ensure_dir()?;
        let path = self.dir.join(file_name);
        let tmp = self.dir.join(format!(".{file_name}.tmp"));
        let werr = |p: &Path| {
            let p = p.to_owned();
            move |source| StoreError::Write { path: p, source }
        };
        let mut options = fs::OpenOptions::new();
        private_file(options.write(true).create_new(true));
        let mut file = options.open(&tmp).map_err(werr(&tmp))?;
        let written = file
            .write_all(head)
            .and_then(|()| io::copy(body, &mut file))
            .and_then(|_| file.flush());
        drop(file);
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(werr(&tmp)(e));
        }
        let published = fs::hard_link(&tmp, &path).or_else(|e| {
            // File systems without hard links: rename, having checked that
            // nothing is there (names are ULIDs, so no one else races for it).
            if e.kind() == io::ErrorKind::AlreadyExists {
                return Err(e);
            }
            match fs::symlink_metadata(&path) {
                Ok(_) => Err(io::Error::from(io::ErrorKind::AlreadyExists)),
                Err(_) => fs::rename(&tmp, &path),
            }
        });
        let _ = fs::remove_file(&tmp);
        published.map_err(werr(&path))?;
        Ok(path)
    }
}

impl Store for FsStore {
    fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
        if !is_offload_file_name(file_name) {
            return Err(StoreError::InvalidName(file_name.to_owned()));
        }
        self.publish(file_name, contents)
    }

    fn write_from(
        &self,
        file_name: &str,
        head: &[u8],
        body: &mut dyn io::Read,
    ) -> Result<PathBuf, StoreError> {
        if !is_offload_file_name(file_name) {
            return Err(StoreError::InvalidName(file_name.to_owned()));
        }
        self.publish_from(file_name, head, body)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    fn check(&self) -> Result<(), StoreError> {
        self.ensure_dir()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn writes_private_files_and_never_overwrites() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let store = FsStore::new(root.path().join("out"));
        let name = format!("atlatl-list-{}.jsonl", ulid::Ulid::new());
        let path = store.write(&name, b"{\"type\":\"lro_header\"}\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{\"type\":\"lro_header\"}\n");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = fs::metadata(root.path().join("out"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dmode, 0o700);
        assert!(matches!(
            store.write(&name, b"other"),
            Err(StoreError::Write { .. })
        ));
        assert_eq!(fs::read(&path).unwrap(), b"{\"type\":\"lro_header\"}\n");
        let leftovers: Vec<_> = fs::read_dir(root.path().join("out")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
        let streamed = format!("atlatl-list-{}.jsonl", ulid::Ulid::new());
        let mut body: &[u8] = b"{\"a\":1}\n";
        let path = store.write_from(&streamed, b"{}\n", &mut body).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{}\n{\"a\":1}\n");
        let mut again: &[u8] = b"x";
        assert!(store.write_from(&streamed, b"", &mut again).is_err());
        assert!(matches!(
            store.write("../evil.jsonl", b""),
            Err(StoreError::InvalidName(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_to_write_through_a_symlink() {
        let root = tempfile::tempdir().unwrap();
        let store = FsStore::new(root.path());
        let name = format!("atlatl-list-{}.jsonl", ulid::Ulid::new());
        let target = root.path().join("target");
        fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, root.path().join(format!(".{name}.tmp"))).unwrap();
        assert!(store.write(&name, b"data").is_err());
        assert_eq!(fs::read(&target).unwrap(), b"keep");
    }

    #[cfg(unix)]
    fn untrusted(store: &FsStore) -> String {
        match store.write(&format!("atlatl-list-{}.jsonl", ulid::Ulid::new()), b"x") {
            Err(StoreError::Untrusted { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_directory_others_can_write_unless_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let shared = root.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        let reason = untrusted(&FsStore::new(&shared));
        assert!(
            reason.contains("writable by group or others (mode 1777)"),
            "{reason}"
        );
        assert!(matches!(
            FsStore::new(&shared).check(),
            Err(StoreError::Untrusted { .. })
        ));
        let trusted = FsStore::new(&shared).trust_dir(true);
        assert!(trusted.check().is_ok());
        let name = format!("atlatl-list-{}.jsonl", ulid::Ulid::new());
        assert!(trusted.write(&name, b"x").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_symlinked_directory_unless_trusted() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(untrusted(&FsStore::new(&link)).contains("symbolic link"));
        assert!(FsStore::new(&link).trust_dir(true).check().is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_directory_of_another_user() {
        let root = tempfile::tempdir().unwrap();
        let theirs = root.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        // Giving a directory away needs root (as in CI); elsewhere this
        // case cannot be set up.
        if std::os::unix::fs::chown(&theirs, Some(65534), None).is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root: chown must work"
            );
            eprintln!("skipped: chown needs root");
            return;
        }
        assert!(untrusted(&FsStore::new(&theirs)).contains("owned by uid 65534"));
    }

    #[cfg(unix)]
    #[test]
    fn the_default_directory_is_private_and_per_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = FsStore::default_dir();
        assert_eq!(dir.parent().unwrap(), std::env::temp_dir());
        let uid = rustix::process::geteuid().as_raw();
        assert_eq!(
            dir.file_name().unwrap(),
            format!("tower-lro-{uid}").as_str()
        );
        // A new directory is created 0700 (and then accepted).
        let root = tempfile::tempdir().unwrap();
        let store = FsStore::new(root.path().join("a/b"));
        store.check().unwrap();
        let mode = fs::metadata(root.path().join("a/b"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_file_where_the_directory_should_be_fails() {
        let root = tempfile::tempdir().unwrap();
        let blocker = root.path().join("blocker");
        fs::write(&blocker, b"").unwrap();
        let store = FsStore::new(blocker.join("sub"));
        let name = format!("atlatl-list-{}.jsonl", ulid::Ulid::new());
        assert!(matches!(
            store.write(&name, b"x"),
            Err(StoreError::Directory { .. })
        ));
    }
}
