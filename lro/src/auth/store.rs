//! Where tokens live: one private (`0700`) directory per user, files
//! `{key}_{name}.json` (`0600`) per server, written whole (a temporary file
//! renamed into place), and `{key}.lock`, which the instances for one server
//! hold while they sign in, so that only one of them does.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Digest;

use super::AuthError;

/// How often a waiting instance tries the lock again.
const LOCK_POLL: Duration = Duration::from_millis(200);

/// The default token directory: `$LRO_AUTH_DIR`; else `lro-v1` in
/// `$MCP_REMOTE_CONFIG_DIR` (the place `mcp-remote` users already chose);
/// else `$XDG_CONFIG_HOME/lro/auth`; else `~/.config/lro/auth`; else
/// `lro-auth-{uid}` in the system temp dir.
pub(crate) fn default_dir() -> PathBuf {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = env("LRO_AUTH_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = env("MCP_REMOTE_CONFIG_DIR") {
        return PathBuf::from(dir).join("lro-v1");
    }
    if let Some(dir) = env("XDG_CONFIG_HOME") {
        return PathBuf::from(dir).join("lro").join("auth");
    }
    if let Some(home) = env("HOME") {
        return PathBuf::from(home).join(".config").join("lro").join("auth");
    }
    #[cfg(unix)]
    let name = format!("lro-auth-{}", rustix::process::geteuid().as_raw());
    #[cfg(not(unix))]
    let name = "lro-auth".to_owned();
    std::env::temp_dir().join(name)
}

/// The key of one server's files: a hash of everything that decides which
/// tokens are valid for it (its URL, resource, headers, extra parameters).
pub(crate) fn key_of(parts: &[&str]) -> String {
    let mut hash = sha2::Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One server's files in the token directory.
#[derive(Debug, Clone)]
pub(crate) struct TokenStore {
    dir: PathBuf,
    key: String,
}

/// The sign-in lock of one server, released when dropped (or when the
/// process ends, whatever the way).
#[derive(Debug)]
pub(crate) struct SignInLock {
    _file: fs::File,
}

impl TokenStore {
    /// The files of server `key` in `dir` (created private on first use).
    pub(crate) fn new(dir: PathBuf, key: String) -> Self {
        TokenStore { dir, key }
    }

    /// The key, which also names the server in logs.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{}_{name}.json", self.key))
    }

    /// A stored value; `None` when absent or unreadable (it is then made
    /// again: a sign-in, a registration).
    pub(crate) fn read<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        let bytes = fs::read(self.path(name)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Stores `value` whole, readable by this user only.
    pub(crate) fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<(), AuthError> {
        self.ensure_dir()?;
        let path = self.path(name);
        let bytes =
            serde_json::to_vec_pretty(value).map_err(|e| AuthError::Store(e.to_string()))?;
        let temp = self
            .dir
            .join(format!(".{}_{name}.{}.tmp", self.key, ulid::Ulid::new()));
        let written = write_private(&temp, &bytes).and_then(|()| fs::rename(&temp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written.map_err(|e| AuthError::Store(format!("{}: {e}", path.display())))
    }

    /// Forgets a stored value.
    pub(crate) fn remove(&self, name: &str) {
        let _ = fs::remove_file(self.path(name));
    }

    fn ensure_dir(&self) -> Result<(), AuthError> {
        ensure_private_dir(&self.dir).map_err(AuthError::Store)
    }

    /// Takes the sign-in lock, waiting at most `wait` for another instance
    /// to finish with it.
    pub(crate) async fn lock(&self, wait: Duration) -> Result<SignInLock, AuthError> {
        self.ensure_dir()?;
        let path = self.dir.join(format!("{}.lock", self.key));
        let file = open_private(&path, false)
            .map_err(|e| AuthError::Store(format!("{}: {e}", path.display())))?;
        let deadline = tokio::time::Instant::now() + wait;
        let mut announced = false;
        loop {
            if try_lock(&file)? {
                return Ok(SignInLock { _file: file });
            }
            if !announced {
                tracing::warn!(target: "tower_lro", "another lro proxy is signing in to this server; waiting for it");
                announced = true;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(AuthError::Timeout("another instance's sign-in"));
            }
            tokio::time::sleep(LOCK_POLL).await;
        }
    }
}

/// Whether the lock was taken (`false`: another process holds it).
#[cfg(unix)]
fn try_lock(file: &fs::File) -> Result<bool, AuthError> {
    use rustix::fs::{FlockOperation, flock};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(AuthError::Store(format!("lock: {e}"))),
    }
}

/// Without `flock`, instances do not coordinate.
#[cfg(not(unix))]
fn try_lock(_file: &fs::File) -> Result<bool, AuthError> {
    Ok(true)
}

fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = open_private(path, true)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Opens (creating, `0600`) a file; `fresh`: it must not exist yet.
fn open_private(path: &Path, fresh: bool) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true);
    if fresh {
        options.create_new(true);
    } else {
        options.create(true).truncate(false);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Readable by this user only, and never through a symbolic link:
        // our files are never reached through one.
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Creates `dir` (`0700`, its parents as needed) unless it exists, then
/// checks it is private to this user, as the offload store checks its
/// output directory: a directory, not a symbolic link, owned by this user,
/// not writable by group or others. The error names the directory.
fn ensure_private_dir(dir: &Path) -> Result<(), String> {
    let failed = |e: io::Error| format!("token directory {}: {e}", dir.display());
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent).map_err(failed)?;
            }
            let mut builder = fs::DirBuilder::new();
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                builder.mode(0o700);
            }
            match builder.create(dir) {
                // Someone made it meanwhile: vetted below like any other.
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(failed(e)),
                _ => {}
            }
        }
        Err(e) => return Err(failed(e)),
    }
    let meta = fs::symlink_metadata(dir).map_err(failed)?;
    match not_private(&meta) {
        Some(reason) => Err(format!(
            "token directory {} is not private: {reason}; use a directory of your own (mode 0700)",
            dir.display()
        )),
        None => Ok(()),
    }
}

/// What makes a directory's own entry (not followed if a link) unfit to
/// hold tokens, if anything.
fn not_private(meta: &fs::Metadata) -> Option<String> {
    if meta.file_type().is_symlink() {
        return Some("it is a symbolic link".into());
    }
    if !meta.is_dir() {
        return Some("it is not a directory".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Some(format!(
                "it is owned by uid {}, not by this user ({me})",
                meta.uid()
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Some(format!(
                "it is writable by group or others (mode {:o})",
                meta.mode() & 0o7777
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_directory_is_made_private_and_a_foreign_one_refused() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("a").join("auth");
        ensure_private_dir(&dir).unwrap();
        assert!(dir.is_dir());
        ensure_private_dir(&dir).unwrap();
        let file = temp.path().join("file");
        fs::write(&file, b"").unwrap();
        let refused = ensure_private_dir(&file).unwrap_err();
        assert!(refused.contains("not a directory"), "{refused}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |d: &Path| fs::metadata(d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir), 0o700);
            let link = temp.path().join("link");
            std::os::unix::fs::symlink(&dir, &link).unwrap();
            let refused = ensure_private_dir(&link).unwrap_err();
            assert!(refused.contains("symbolic link"), "{refused}");
            let open = temp.path().join("open");
            fs::create_dir(&open).unwrap();
            fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
            let refused = ensure_private_dir(&open).unwrap_err();
            assert!(refused.contains("writable by group or others"), "{refused}");
        }
    }
}
