//! [`FsStore`]: offloaded files in a private directory of the local file
//! system.

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
        self.publish_with(file_name, |file| file.write_all(contents))
    }

    /// [`FsStore::publish`] of what `fill` writes to the new file.
    fn publish_with(
        &self,
        file_name: &str,
        fill: impl FnOnce(&mut fs::File) -> io::Result<()>,
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
        let written = fill(&mut file).and_then(|()| file.flush());
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

/// `Ok` when `file_name` is an offloaded file's name (what an [`FsStore`]
/// writes), else the error that says it is not.
fn offload_name(file_name: &str) -> Result<(), StoreError> {
    match is_offload_file_name(file_name) {
        true => Ok(()),
        false => Err(StoreError::InvalidName(file_name.to_owned())),
    }
}

impl Store for FsStore {
    fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
        offload_name(file_name)?;
        self.publish(file_name, contents)
    }

    fn write_from(
        &self,
        file_name: &str,
        head: &[u8],
        body: &mut dyn io::Read,
    ) -> Result<PathBuf, StoreError> {
        offload_name(file_name)?;
        // `body` copied in bounded memory.
        self.publish_with(file_name, |file| {
            file.write_all(head)?;
            io::copy(body, file).map(drop)
        })
    }

    fn write_parts(
        &self,
        file_name: &str,
        head: &[u8],
        body: &[u8],
    ) -> Result<PathBuf, StoreError> {
        offload_name(file_name)?;
        self.publish_with(file_name, |file| {
            file.write_all(head)?;
            file.write_all(body)
        })
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    fn check(&self) -> Result<(), StoreError> {
        self.ensure_dir()
    }
}
