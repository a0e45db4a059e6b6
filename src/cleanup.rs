//! The `offload_cleanup` custodial task: deletes offloaded files whose
//! time-to-live has passed.
//!
//! [`Custodian::run_once`] scans the output directory for
//! `atlatl-{operation}-{ulid}.jsonl` files and deletes those whose time has
//! passed: the `expires_at` of the file's header line when it has one
//! (processes with different TTLs may share a directory), else the creation
//! time from the ULID in its name plus the ttl. It emits
//! `OffloadFileExpired` for each. It
//! also deletes our own temporary files (`.atlatl-….jsonl.tmp`, left only
//! if the process died mid-write) once they are as old. It never touches
//! anything else: other names, symlinks (even named like ours),
//! directories. It goes on through errors (a file vanishing mid-scan, an
//! unreadable entry) and reports them.
//!
//! [`Custodian::spawn`] runs it on a tokio runtime every `interval` (default
//! one hour, first run at once) until the returned [`CleanupHandle`] is shut
//! down or dropped.
//!
//! # Who runs it
//!
//! * **The layer, by default.** An [`OffloadLayer`](crate::offload::OffloadLayer)
//!   starts the task itself, in the runtime of its first request (first run
//!   at once, then every `cleanup_interval`), and stops it when the last
//!   clone of the layer and its services is dropped. `auto_cleanup(false)`
//!   turns this off.
//! * **You, holding the handle.** [`OffloadLayer::spawn_cleanup`](crate::offload::OffloadLayer::spawn_cleanup)
//!   starts one for the layer's files whose handle you keep
//!   (`handle.shutdown().await` stops it; dropping the handle stops it too);
//!   [`Custodian::for_offloader`] does the same for an engine used without
//!   the layer.
//! * **Your own scheduler.** [`Custodian::run_once`] is one scan, with a
//!   [`CleanupReport`].
//!
//! Expiry does not wait for the cleanup: file headers carry `expires_at`,
//! and [`rebuild_file`](crate::offload::rebuild_file),
//! [`Offloader::rebuild_file`] (which also only reads regular files named
//! like ours inside `output_dir`) and `lro_extract` refuse an expired file
//! even before the cleanup has deleted it.
//!
//! # Shared stores
//!
//! A custodian of a store shared by several processes (object storage,
//! [`Store::shared`]) sweeps the store's prefix instead of a directory
//! ([`SharedFiles::sweep`](crate::store::SharedFiles::sweep)): committed files whose expiry has passed
//! (manifest first, then data), and data left without a manifest for longer
//! than the ttl. Deletes are idempotent, so every replica may run its own
//! sweep at once; each deleted file gets its `OffloadFileExpired` event
//! (with `lro://files/{name}` as its path) from the sweeper that deleted it.
//!
//! Files of the history offload (module `history`, feature `history`) do
//! not expire: do not point a custodian at its `store_dir`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! # let dir = tempfile::tempdir().unwrap();
//! use tower_lro::offload::{EventHook, OffloadLayer};
//!
//! let (hook, mut events) = EventHook::channel(1024);
//! let layer = OffloadLayer::builder()
//! #   .config(tower_lro::config::OffloadConfig::default().output_dir(dir.path()))
//!     .event_hook(hook)                   // OffloadFileExpired for each deleted file
//!     .build();
//! // Own the layer's one cleanup task (it then starts none itself):
//! let cleanup = layer.spawn_cleanup().expect("the first call, in a runtime");
//! // keep the handle: dropping it stops the task
//! // ... serve; events.recv().await gives each OffloadEvent ...
//! cleanup.shutdown().await;
//! # drop(events.try_recv());
//! # }
//! ```
//!
//! Without the layer:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::time::Duration;
//! use tower_lro::cleanup::Custodian;
//! use tower_lro::config::OffloadConfig;
//! use tower_lro::offload::Offloader;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let offloader = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
//! let handle = Custodian::for_offloader(&offloader).spawn(Duration::from_secs(3600));
//! // ... serve ...
//! handle.shutdown().await;
//!
//! let report = Custodian::new(dir.path(), Duration::from_secs(3600)).run_once();
//! assert!(report.errors.is_empty());
//! # }
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::engine::Offloader;
use crate::engine::events::{EventHook, Events, OffloadEvent};
use crate::engine::rebuild::expiry;
use crate::store::{FILE_EXTENSION, FILE_PREFIX, FsStore, Store, no_follow, parse_file_name};

/// Deletes expired offloaded files in one directory, or in one shared
/// store.
#[derive(Clone)]
pub struct Custodian {
    dir: PathBuf,
    ttl: Duration,
    events: Events,
    /// A shared store swept instead of `dir`.
    shared: Option<std::sync::Arc<dyn Store>>,
}

impl std::fmt::Debug for Custodian {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Custodian")
            .field("dir", &self.dir)
            .field("ttl", &self.ttl)
            .field("shared", &self.shared.is_some())
            .finish_non_exhaustive()
    }
}

/// What one cleanup run did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CleanupReport {
    /// Offloaded files (and our temporary files) seen.
    pub scanned: usize,
    /// Files deleted.
    pub deleted: Vec<PathBuf>,
    /// Files that vanished between the scan and the deletion (not errors).
    pub vanished: usize,
    /// Errors met on the way (the run went on after each).
    pub errors: Vec<(PathBuf, io::Error)>,
}

impl Custodian {
    /// A custodian of `dir` (empty: [`FsStore::default_dir`], where a store
    /// given an empty path writes) deleting files older than `ttl`; events
    /// go to `tracing` only.
    pub fn new(dir: impl Into<PathBuf>, ttl: Duration) -> Self {
        let dir: PathBuf = dir.into();
        let dir = if dir.as_os_str().is_empty() {
            FsStore::default_dir()
        } else {
            dir
        };
        Custodian {
            dir: std::path::absolute(&dir).unwrap_or(dir),
            ttl,
            events: Events::default(),
            shared: None,
        }
    }

    /// The custodian of `store`'s files deleting files older than `ttl`
    /// (unless their header says otherwise): a shared store's (object
    /// storage) are swept in the store, others in its directory.
    pub fn for_store(store: std::sync::Arc<dyn Store>, ttl: Duration) -> Self {
        Custodian {
            dir: store.dir().to_owned(),
            ttl,
            events: Events::default(),
            shared: store.shared().is_some().then_some(store),
        }
    }

    /// The custodian of an engine's files: its store's directory (or the
    /// shared store itself), its ttl, its event hook.
    pub fn for_offloader(offloader: &Offloader) -> Self {
        let store = offloader.store_arc();
        Custodian {
            dir: offloader.store().dir().to_owned(),
            ttl: offloader.config().ttl,
            events: offloader.events().clone(),
            shared: store.shared().is_some().then_some(store),
        }
    }

    /// Sends every event to `hook` too (besides `tracing`).
    pub fn with_event_hook(mut self, hook: EventHook) -> Self {
        self.events = Events::new(Some(hook));
        self
    }

    /// The directory cleaned.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One scan, now. Blocking (file-system calls): from async code run it
    /// on the blocking pool, or use [`spawn`](Self::spawn).
    pub fn run_once(&self) -> CleanupReport {
        self.run_once_at(Utc::now())
    }

    /// One scan, as if the time were `now` (for callers with their own clock).
    pub fn run_once_at(&self, now: DateTime<Utc>) -> CleanupReport {
        if let Some(files) = self.shared.as_deref().and_then(|s| s.shared()) {
            return self.sweep(files, now);
        }
        let mut report = CleanupReport::default();
        for (path, created_at) in self.scan(now, &mut report) {
            self.delete(path, created_at, now, &mut report);
        }
        report
    }

    /// One sweep of a shared store, as a report, with an event per file.
    fn sweep(&self, files: &dyn crate::store::SharedFiles, now: DateTime<Utc>) -> CleanupReport {
        let mut report = CleanupReport::default();
        let sweep = match files.sweep(now, self.ttl) {
            Ok(sweep) => sweep,
            Err(e) => {
                tracing::warn!(target: "tower_lro", task = "offload_cleanup", error = %e, "cannot sweep the store");
                report
                    .errors
                    .push((self.dir.clone(), io::Error::other(e.to_string())));
                return report;
            }
        };
        report.scanned = sweep.scanned;
        report.vanished = sweep.vanished;
        for (name, created_at) in sweep.deleted {
            let path = self.dir.join(name);
            let age_seconds = (now - created_at).num_seconds().max(0) as u64;
            self.events.emit(OffloadEvent::OffloadFileExpired {
                path: path.clone(),
                created_at,
                age_seconds,
            });
            report.deleted.push(path);
        }
        for (object, message) in sweep.errors {
            tracing::warn!(target: "tower_lro", task = "offload_cleanup", object = %object, error = %message, "cannot delete an expired offload file");
            report
                .errors
                .push((self.dir.join(object), io::Error::other(message)));
        }
        report
    }

    /// The files a run at `now` would delete, deleting nothing (a dry run).
    pub fn expired_at(&self, now: DateTime<Utc>) -> Vec<PathBuf> {
        let mut report = CleanupReport::default();
        self.scan(now, &mut report)
            .into_iter()
            .map(|(path, _)| path)
            .collect()
    }

    /// The expired offload files of the directory (regular files only,
    /// never through a symlink), with their creation times; counts what it
    /// saw in `report`.
    fn scan(
        &self,
        now: DateTime<Utc>,
        report: &mut CleanupReport,
    ) -> Vec<(PathBuf, DateTime<Utc>)> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            // No directory yet: nothing was ever written.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                report.errors.push((self.dir.clone(), e));
                return Vec::new();
            }
        };
        let mut expired = Vec::new();
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    report.errors.push((self.dir.clone(), e));
                    continue;
                }
            };
            let name = entry.file_name();
            let Some(created_at) = name.to_str().and_then(created_at) else {
                continue;
            };
            let path = entry.path();
            // Never follows symlinks: the entry's own type.
            match entry.file_type() {
                Ok(t) if t.is_file() => {}
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    report.vanished += 1;
                    continue;
                }
                Err(e) => {
                    report.errors.push((path, e));
                    continue;
                }
            }
            report.scanned += 1;
            let expires_at = header_expiry(&path).unwrap_or_else(|| expiry(created_at, self.ttl));
            if now >= expires_at {
                expired.push((path, created_at));
            }
        }
        expired
    }

    /// Deletes one expired file, with its event.
    fn delete(
        &self,
        path: PathBuf,
        created_at: DateTime<Utc>,
        now: DateTime<Utc>,
        report: &mut CleanupReport,
    ) {
        match std::fs::remove_file(&path) {
            Ok(()) => {
                let age_seconds = (now - created_at).num_seconds().max(0) as u64;
                self.events.emit(OffloadEvent::OffloadFileExpired {
                    path: path.clone(),
                    created_at,
                    age_seconds,
                });
                report.deleted.push(path);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => report.vanished += 1,
            Err(e) => {
                tracing::warn!(
                    target: "tower_lro",
                    task = "offload_cleanup",
                    path = %path.display(),
                    error = %e,
                    "cannot delete expired offload file"
                );
                report.errors.push((path, e));
            }
        }
    }

    /// Runs [`run_once`](Self::run_once) on the blocking pool every
    /// `interval` (the first run at once) until the handle is shut down or
    /// dropped. Must be called within a tokio runtime (it panics otherwise,
    /// as `tokio::spawn` does). Each call starts a new task: for a layer's
    /// files use [`OffloadLayer::spawn_cleanup`](crate::OffloadLayer::spawn_cleanup),
    /// which never starts a second one.
    pub fn spawn(self, interval: Duration) -> CleanupHandle {
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let interval = interval.max(Duration::from_millis(1));
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    // A stop request wins over a due run.
                    biased;
                    _ = &mut stopped => break,
                    _ = ticks.tick() => {
                        let custodian = self.clone();
                        let run = tokio::task::spawn_blocking(move || custodian.run_once());
                        tokio::select! {
                            biased;
                            _ = &mut stopped => break,
                            done = run => if let Ok(report) = done {
                                tracing::debug!(
                                    target: "tower_lro",
                                    task = "offload_cleanup",
                                    scanned = report.scanned,
                                    deleted = report.deleted.len(),
                                    errors = report.errors.len(),
                                    "cleanup run finished"
                                );
                            },
                        }
                    }
                }
            }
        });
        CleanupHandle {
            stop: Some(stop),
            task: Some(task),
        }
    }
}

/// The `expires_at` of a file's header line, when it has one: files written
/// by processes with other TTLs share a directory, and each file says when
/// it expires. Read without following a symlink, at most the first 64 KB.
fn header_expiry(path: &Path) -> Option<DateTime<Utc>> {
    use std::io::Read;
    #[derive(serde::Deserialize)]
    struct Header {
        expires_at: Option<String>,
    }
    let mut options = std::fs::OpenOptions::new();
    no_follow(options.read(true));
    let mut head = Vec::with_capacity(4096);
    options
        .open(path)
        .ok()?
        .take(64 << 10)
        .read_to_end(&mut head)
        .ok()?;
    let line = &head[..memchr::memchr(b'\n', &head)?];
    let header: Header = serde_json::from_slice(line).ok()?;
    let at = DateTime::parse_from_rfc3339(&header.expires_at?).ok()?;
    Some(at.with_timezone(&Utc))
}

/// The creation time of one of our files, from the ULID in its name:
/// `atlatl-{op}-{ulid}.jsonl`, or our temporary `.atlatl-{op}-{ulid}.jsonl.tmp`.
fn created_at(name: &str) -> Option<DateTime<Utc>> {
    let name = match name.strip_prefix('.') {
        Some(tmp) => tmp.strip_suffix(".tmp")?,
        None => name,
    };
    debug_assert!(FILE_PREFIX.starts_with("atlatl") && FILE_EXTENSION == ".jsonl");
    let (_, ulid) = parse_file_name(name)?;
    Some(ulid.datetime().into())
}

/// Why [`OffloadLayer::spawn_cleanup`](crate::OffloadLayer::spawn_cleanup)
/// started no task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CleanupError {
    /// The layer's one cleanup task was started before: by the layer itself
    /// (`auto_cleanup` on, at its first request) or by an earlier
    /// `spawn_cleanup`. A layer never runs two.
    #[error("the layer's cleanup task was already started")]
    AlreadyStarted,
    /// Called outside a tokio runtime.
    #[error("no tokio runtime to run the cleanup task on")]
    NoRuntime,
}

/// Handle of the task started by [`Custodian::spawn`]. Dropping it stops
/// the task (after a run in progress, if any, finishes on the blocking pool).
#[derive(Debug)]
pub struct CleanupHandle {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl CleanupHandle {
    /// Stops the task and waits until it has ended.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Whether the task has ended.
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(|t| t.is_finished())
    }
}

impl Drop for CleanupHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
