//! Where offloaded files are written.
//!
//! [`FsStore`] writes `{output_dir}/atlatl-{operation}-{ulid}.jsonl`:
//! the directory is created `0700`, the file is created `0600` under a
//! temporary dot-name that the cleanup pattern never matches, with
//! `O_CREAT | O_EXCL | O_NOFOLLOW` (never through a symlink, never over an
//! existing file), filled, then hard-linked to its final name (which fails
//! rather than replace an existing file) and the temporary name removed. A
//! reader therefore never sees a half-written file. Implement [`Store`] to
//! write elsewhere or to inject faults in tests.
//!
//! # Threat model: the output directory
//!
//! Other local users must not be able to read, replace or plant files where
//! the agent reads them (a replaced file makes a recipe print forged
//! records; a symlink planted at a final name makes every offload fail).
//! So the directory must be ours and private: [`FsStore`] refuses one that
//! is a symbolic link, is owned by another user, or is writable by group or
//! others ([`StoreError::Untrusted`]), unless the user opts in
//! ([`FsStore::trust_dir`], the `trust_output_dir` setting). By default it
//! writes into a per-user subdirectory of the system temp dir
//! ([`FsStore::default_dir`]), created `0700`, never directly into the
//! shared, world-writable temp dir. The check runs before every write (a
//! refused directory means the spec's fallback for that call) and once when
//! a layer is built (an error in the log at start-up).
//!
//! # Names
//!
//! Files are named `atlatl-{operation}-{ulid}.jsonl` ([`FILE_PREFIX`],
//! [`FILE_EXTENSION`], [`is_offload_file_name`]): the operation is the
//! spec's (`recall`, `search`, ...) or the tool's name reduced to
//! `[a-z0-9_]`, so a tool name can never steer a path out of the directory.
//! Over MCP a file is the resource `lro://files/{name}` ([`resource_uri`],
//! [`file_name_of_uri`]).
//!
//! # Backends
//!
//! [`FsStore`], the default, writes into a directory of this machine.
//! With the feature `object-store`, [`BucketStore`] writes into object
//! storage (S3 and S3-compatible servers, GCS, Azure) through the
//! `object_store` crate, so that the replicas of a fleet read each other's
//! files: [`from_url`] picks the backend from the `store` setting
//! (`s3://bucket/prefix`, `gs://…`, `az://…`, `file:///dir`). A file of a
//! shared store is committed by a manifest written after its data and
//! read first ([`shared`]); over MCP it is `lro://files/{name}`, which is
//! also its descriptor's `file_path` (no directory of any one replica).
//!
//! # A fleet of replicas
//!
//! Several `lro gateway` replicas (or layers) behind a load balancer with
//! no session affinity, given the same store URL and the same binding key
//! file (`--store`, `--binding-key-file`; the README shows three).
//!
//! What they share: **the store URL** (files live there, as two objects
//! each: the data, then a small create-only manifest that commits it) and
//! **the key file** (the owner MAC in each file is keyed with it: without
//! it, each process has a random key, which is right for one replica, but
//! then no other replica, and no restarted one, can read a file bound to
//! credentials). A descriptor's `file_path` is `lro://files/{name}`, which
//! every replica resolves (the shell recipes in it assume a local file:
//! over MCP, use `lro_extract`). `lro_extract`, `lro_list` and
//! `resources/read` read the manifest first (one round trip: expiry and
//! binding are checked on every read, by every replica), then the data.
//! `lro_extract` reads it as its query goes: from a bounded private local
//! cache (1 GiB, least recently used evicted) when it holds the file (the
//! replica that wrote it keeps its upload there), else through ranged
//! `GET`s of what the query reads (a page of browsing: the object's first
//! MiB or two, whatever its size; a count: all of it); such a page
//! says whether more follows, not how many (the rest is not fetched to
//! count it). The manifest indexes every 256th record line
//! ([`LineIndex`]): a page of a query that makes one value per object
//! record (`.`, `{id, title}`, `.key`, …) starts at the indexed record
//! before it, with one ranged `GET` wherever it is in the file, and says
//! the total. `resources/read` fetches the whole file into the cache. A
//! large result is uploaded in 8 MiB parts, two in flight, so
//! memory stays bounded whatever its size.
//!
//! The credentials need, on the prefix: `GetObject`, `PutObject`,
//! `DeleteObject`, `AbortMultipartUpload` and `ListBucket` (the sweep and
//! `lro_list` list the prefix; without `ListBucket`, S3 answers a missing
//! object with 403, which the start-up check reports as an error).
//!
//! What happens when something fails:
//!
//! | failure | what clients see | what is left |
//! |---|---|---|
//! | a replica dies (even `SIGKILL`) | calls in flight on it fail; every descriptor it returned stays readable from the others | at most a data object without a manifest (invisible; swept after the ttl) or an incomplete multipart upload (aborted by the bucket lifecycle rule below) |
//! | the store is down, refuses (403) or is too slow (`AWS_TIMEOUT`, default 30 s; 3 retries within 20 s) while writing | the spec's fallback: the result truncated inline with its warning (`OffloadWriteFailed`, `lro_store_errors_total{operation="write"}`); the gateway goes on serving | nothing visible: no manifest is written, the data written is deleted or its upload aborted |
//! | the store is down while reading | the one refusal every unreadable file gets (logged as a store error) | — |
//! | the store is unreachable at start | the gateway exits with the store's error; `/readyz` answers `503` while a probe file cannot be written and removed | — |
//! | an object that is not what its header says (changed, cut short) | a page reading its start is served; a query or `resources/read` reading it whole is refused as damaged (`OffloadFileDamaged`, `lro_offload_files_damaged`), its copy not cached | — |
//! | a replica without the shared key | reads none of the others' files bound to credentials (the one refusal) | — |
//! | other credentials, on any replica | the one refusal, identical everywhere | — |
//!
//! Expiry: each replica's cleanup task sweeps the store's prefix (expired
//! manifests, then their data; data left without a manifest for longer than
//! the ttl); deletes are idempotent, so every replica may sweep, and `lro
//! cleanup --store s3://agent-results/lro` does the same once. Give the bucket
//! a lifecycle rule that aborts incomplete multipart uploads (S3:
//! `AbortIncompleteMultipartUpload` with `DaysAfterInitiation: 1` on the
//! prefix), for uploads cut by a replica that died mid-write.
//! `tests/command/fleet.rs` runs three replicas on one `moto_server` bucket
//! and key with the official Python SDK client sending each call to another
//! replica (both protocol generations), 100 concurrent calls with a replica
//! killed by `SIGKILL` and restarted, expiry and sweeps;
//! `tests/command/fleet_faults.rs` the store faults;
//! `tests/command/fleet_azure.rs` two replicas on Azurite (the Azure
//! Storage emulator, Shared Key signatures checked).
//!
//! # Example
//!
//! A store of your own, here one that counts the writes of an
//! [`FsStore`] (a fault-injecting one fails instead), given to the engine
//! (or to the layer with
//! [`OffloadLayerBuilder::store`](crate::offload::OffloadLayerBuilder::store)):
//!
//! ```
//! use std::path::{Path, PathBuf};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use tower_lro::config::OffloadConfig;
//! use tower_lro::offload::{Offloader, Outcome, ToolCall};
//! use tower_lro::store::{FsStore, Store, StoreError, is_offload_file_name};
//!
//! struct Counting { inner: FsStore, writes: Arc<AtomicUsize> }
//!
//! impl Store for Counting {
//!     fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
//!         self.writes.fetch_add(1, Ordering::Relaxed);
//!         self.inner.write(file_name, contents)
//!     }
//!     fn dir(&self) -> &Path { self.inner.dir() }
//!     fn check(&self) -> Result<(), StoreError> { self.inner.check() }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let writes = Arc::new(AtomicUsize::new(0));
//! let offloader = Offloader::new(OffloadConfig::default())
//!     .with_store(Counting { inner: FsStore::new(dir.path()), writes: writes.clone() });
//!
//! let rows: Vec<_> = (0..500).map(|i| serde_json::json!({"id": i, "msg": "worker started"})).collect();
//! let result = serde_json::json!({"content": [{"type": "text", "text": serde_json::to_string(&rows)?}]});
//! let outcome = offloader.process(&ToolCall::new("query_logs", None), result.to_string().as_bytes())?;
//! let Outcome::Offloaded(offloaded) = outcome else { panic!("over the threshold") };
//! assert_eq!(writes.load(Ordering::Relaxed), 1);
//! let name = offloaded.file.path.file_name().unwrap().to_str().unwrap();
//! assert!(name.starts_with("atlatl-query_logs-") && is_offload_file_name(name));
//! # Ok(()) }
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

#[cfg(feature = "object-store")]
mod bridge;
#[cfg(feature = "object-store")]
mod cache;
#[cfg(test)]
mod fs_tests;
#[cfg(feature = "object-store")]
mod index;
mod local;
#[cfg(feature = "object-store")]
mod object;
#[cfg(all(test, feature = "object-store"))]
mod object_tests;
#[cfg(feature = "object-store")]
mod ranged;
pub mod shared;
#[cfg(feature = "object-store")]
mod transport;
mod url;

pub use local::FsStore;
#[cfg(feature = "object-store")]
pub use object::BucketStore;
pub use shared::{LineIndex, Manifest, SharedFiles, Sweep};
pub use url::from_url;
pub(crate) use url::from_url_or_unusable;
#[cfg(feature = "object-store")]
pub(crate) use url::redact;

/// Prefix of every offloaded file name.
pub const FILE_PREFIX: &str = "atlatl-";
/// Extension of every offloaded file name.
pub const FILE_EXTENSION: &str = ".jsonl";

/// Errors of a [`Store`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The output directory cannot be created or is not a directory.
    #[error("output directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Creating, writing or publishing the file failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A name that is not an offload file name was requested.
    #[error("invalid offload file name {0:?}")]
    InvalidName(String),
    /// A `store` URL that names no backend this build has.
    #[error("store {url:?}: {reason}")]
    Url {
        /// The URL, without credentials.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A shared store's file whose data is not what its header's
    /// completeness contract says (`data_bytes`, `data_sha256`): refused.
    #[error("{object} is damaged: {detail}")]
    Damaged {
        /// The file's name.
        object: String,
        /// What differs.
        detail: String,
    },
    /// The object store failed (unreachable, refused, timed out, or an
    /// object it holds is not what we wrote).
    #[error("object store, {object}: {message}")]
    Remote {
        /// The object (its key).
        object: String,
        /// What went wrong.
        message: String,
    },
    /// The output directory is not private (see the module docs).
    #[error(
        "output directory {path} is not private: {reason}; use a directory of your own \
         (mode 0700) or set trust_output_dir"
    )]
    Untrusted {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// Persists offloaded JSONL files. Calls are blocking; the engine runs them
/// off the async executor.
pub trait Store: Send + Sync + 'static {
    /// Writes `contents` as a new file called `file_name` and returns its
    /// absolute path. Must never replace an existing file and never expose a
    /// partially written file under `file_name`.
    fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError>;

    /// Writes a new file called `file_name` whose contents are `head`
    /// followed by everything `body` reads (to its end), with the
    /// guarantees of [`Store::write`], and returns its absolute path. A
    /// large result is written this way from where it was spilled, so a
    /// store should stream it: the default reads `body` into memory and
    /// calls [`Store::write`]; [`FsStore`] copies it in bounded memory.
    fn write_from(
        &self,
        file_name: &str,
        head: &[u8],
        body: &mut dyn io::Read,
    ) -> Result<PathBuf, StoreError> {
        let mut contents = head.to_vec();
        body.read_to_end(&mut contents)
            .map_err(|source| StoreError::Write {
                path: self.dir().join(file_name),
                source,
            })?;
        self.write(file_name, &contents)
    }

    /// Writes a new file called `file_name` whose contents are `head`
    /// followed by `body`, with the guarantees of [`Store::write`], and
    /// returns its absolute path. The engine writes an offloaded file so:
    /// its header line, then the records where they lie, neither joined
    /// nor copied. The default hands them to [`Store::write_from`];
    /// [`FsStore`] writes the two slices as they are.
    fn write_parts(
        &self,
        file_name: &str,
        head: &[u8],
        body: &[u8],
    ) -> Result<PathBuf, StoreError> {
        self.write_from(file_name, head, &mut &*body)
    }

    /// The directory files are written to.
    fn dir(&self) -> &Path;

    /// Checks, without writing, that files can be written (for a report at
    /// start-up). The default says yes.
    fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Deletes the file `file_name` (an offload file name); `Ok(false)`
    /// when there was none. The default deletes it from [`Store::dir`],
    /// never through a symbolic link.
    fn remove(&self, file_name: &str) -> Result<bool, StoreError> {
        if parse_file_name(file_name).is_none() {
            return Err(StoreError::InvalidName(file_name.to_owned()));
        }
        let path = self.dir().join(file_name);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StoreError::Write { path, source }),
        }
    }

    /// The files of a store shared with other processes (object storage),
    /// which readers and the cleanup reach through it rather than in
    /// [`Store::dir`]; `None` (the default): they are in `dir()`.
    fn shared(&self) -> Option<&dyn SharedFiles> {
        None
    }

    /// A URL naming this store that `lro --store` takes (without secrets),
    /// for a shared store made from one: descriptors of its files say how
    /// to read them from a shell with it. `None` (the default): no such
    /// URL, or files on this machine.
    fn url(&self) -> Option<&str> {
        None
    }
}

/// Makes `options` refuse to open a symbolic link (`O_NOFOLLOW`) where the
/// platform can: our files are never reached through one.
pub(crate) fn no_follow(options: &mut fs::OpenOptions) -> &mut fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options
}

/// `options` for a file only this user may read (`0600`), never opened
/// through a symbolic link.
pub(crate) fn private_file(options: &mut fs::OpenOptions) -> &mut fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    no_follow(options)
}

/// Whether `name` is an offload file name we write: `atlatl-{op}-{ulid}.jsonl`
/// with `op` in `[a-z0-9_]+`.
pub fn is_offload_file_name(name: &str) -> bool {
    parse_file_name(name).is_some()
}

/// The name of the file for an offload of `operation` (already reduced to
/// `[a-z0-9_]`, see [`operation_name`](crate::offload::operation_name)) with id `id`.
pub(crate) fn file_name(operation: &str, id: ulid::Ulid) -> String {
    format!("{FILE_PREFIX}{operation}-{id}{FILE_EXTENSION}")
}

/// Scheme and authority of the MCP resource URI of an offload file:
/// `lro://files/{file name}` (see [`resource_uri`]).
pub const RESOURCE_URI_PREFIX: &str = "lro://files/";

/// The MCP resource URI of the offload file `file_name`, as the rewritten
/// result's `resource_link` block names it and `resources/read` accepts it.
pub fn resource_uri(file_name: &str) -> String {
    format!("{RESOURCE_URI_PREFIX}{file_name}")
}

/// The offload file name a resource URI names, when it is one of ours
/// ([`RESOURCE_URI_PREFIX`] and a well-formed offload file name: never a
/// path).
pub fn file_name_of_uri(uri: &str) -> Option<&str> {
    let name = uri.strip_prefix(RESOURCE_URI_PREFIX)?;
    is_offload_file_name(name).then_some(name)
}

/// Splits an offload file name into operation and ULID.
pub(crate) fn parse_file_name(name: &str) -> Option<(&str, ulid::Ulid)> {
    let stem = name
        .strip_prefix(FILE_PREFIX)?
        .strip_suffix(FILE_EXTENSION)?;
    let (op, id) = stem.rsplit_once('-')?;
    if op.is_empty()
        || !op
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        || id.len() != 26
    {
        return None;
    }
    ulid::Ulid::from_string(id).ok().map(|u| (op, u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_offload_file_name(
            "atlatl-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl"
        ));
        assert!(is_offload_file_name(
            "atlatl-my_tool2-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl"
        ));
        assert!(!is_offload_file_name(
            "atlatl--01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl"
        ));
        assert!(!is_offload_file_name(
            "atlatl-../x-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl"
        ));
        assert!(!is_offload_file_name(
            ".atlatl-recall-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl.tmp"
        ));
        assert!(!is_offload_file_name("atlatl-recall-notaulid.jsonl"));
    }
}
