//! [`BucketStore`]: offloaded files in object storage (feature
//! `object-store`), through the `object_store` crate.
//!
//! Under the URL's prefix, a file `atlatl-{op}-{ulid}.jsonl` is two
//! objects: its data under its name, and its manifest under
//! `{name}.manifest` ([`Manifest`]). A write uploads the data (one `PUT`,
//! create-only, when it fits in one part of 8 MiB; else a multipart upload
//! of 8 MiB parts, two in flight, so memory stays bounded whatever the
//! size), then creates the manifest (`PutMode::Create`). A write that fails
//! aborts the upload or deletes the data it wrote, and no manifest is ever
//! written for it: readers, who look for the manifest first, never see it.
//! A process killed mid-upload leaves at most data without a manifest
//! (which the sweep deletes once it is `ttl` old) or an incomplete
//! multipart upload (which the bucket's lifecycle rule aborts).
//!
//! Readers ([`SharedFiles`]) read the manifest (one round trip: header,
//! binding, expiry, size), then the data: from a bounded local cache when
//! it holds the file (the replica that wrote a file keeps what it
//! uploaded; a whole read, such as `resources/read`, fills it), else
//! through ranged `GET`s as far as the reader reads (a first range of
//! 1 MiB, each next one twice as large up to 8 MiB, one ahead), so a
//! page of `lro_extract` fetches about what its records take. The upload
//! also builds the manifest's [`LineIndex`](super::LineIndex), so a
//! reader can start at a record deep in the file
//! ([`SharedFiles::open_at`]).

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read};
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use object_store::path::Path;
use object_store::{
    BackoffConfig, ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutMode, PutOptions, PutPayload,
    RetryConfig,
};

use super::bridge::Bridge;
use super::cache::{Cache, DEFAULT_MAX_BYTES, Pending};
use super::index::LineIndexer;
use super::ranged::Ranged;
use super::shared::{ContractCheck, MAX_MANIFEST_BYTES, Manifest, SharedFiles, Sweep};
use super::{RESOURCE_URI_PREFIX, Store, StoreError, parse_file_name, redact};

mod error;
mod read;

use error::one_line;

/// Bytes per uploaded part (S3 wants at least 5 MiB but for the last).
const PART_BYTES: usize = 8 << 20;
/// Parts uploading at once.
const PARTS_IN_FLIGHT: usize = 2;
/// What follows a file's name in its manifest's.
const MANIFEST_SUFFIX: &str = ".manifest";
/// Objects one listing returns at most.
const MAX_LISTED: usize = 1_000_000;

/// Offloaded files in object storage, shared by every process that uses
/// the same URL: S3 and S3-compatible servers (`s3://bucket/prefix`),
/// Google Cloud Storage (`gs://bucket/prefix`), Azure (`az://container/prefix`,
/// and the other forms `object_store` parses), configured by their standard
/// environment variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`, `AWS_TIMEOUT`,
/// …; `GOOGLE_*`; `AZURE_*`).
///
/// Its files are `lro://files/{name}` ([`Store::dir`] is `lro://files`):
/// that is the descriptor's `file_path`, which every replica resolves.
///
/// ```
/// use std::sync::Arc;
/// use tower_lro::store::{BucketStore, Store};
///
/// let store = BucketStore::new(Arc::new(object_store::memory::InMemory::new()), "lro").unwrap();
/// let name = format!("atlatl-list-{}.jsonl", ulid::Ulid::new());
/// let path = store.write(&name, b"{\"type\":\"lro_header\"}\n{\"a\":1}\n").unwrap();
/// assert_eq!(path.to_str().unwrap(), format!("lro://files/{name}"));
/// let shared = store.shared().unwrap();
/// let manifest = shared.manifest(&name).unwrap().expect("committed");
/// assert_eq!(manifest.size, 30);
/// let copy = shared.local_copy(&name, &manifest).unwrap();
/// assert_eq!(std::fs::read(copy).unwrap(), b"{\"type\":\"lro_header\"}\n{\"a\":1}\n");
/// ```
pub struct BucketStore {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    url: String,
    /// The URL it was made from, without secrets (`from_url`).
    location: Option<String>,
    dir: PathBuf,
    bridge: Arc<Bridge>,
    cache: Cache,
}

impl std::fmt::Debug for BucketStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl BucketStore {
    /// The store `url` names (`s3://`, `gs://`, `az://` and the other forms
    /// of those `object_store` parses; `memory:///` for tests), configured
    /// from the environment. Requests are retried 3 times within 20 s.
    pub fn from_url(url: &str) -> Result<Self, StoreError> {
        // object_store's messages quote the URL: never its user info.
        let bad = |reason: String| StoreError::Url {
            url: redact(url),
            reason: reason.replace(url, &redact(url)),
        };
        let parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        let (scheme, prefix) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 3,
            retry_timeout: Duration::from_secs(20),
        };
        let built = |e: object_store::Error| bad(one_line(&e.to_string()));
        let store: Arc<dyn ObjectStore> = match scheme {
            ObjectStoreScheme::AmazonS3 => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(url)
                    .with_retry(retry.clone())
                    .with_http_connector(super::transport::Hyper)
                    .build()
                    .map_err(built)?,
            ),
            ObjectStoreScheme::GoogleCloudStorage => Arc::new(
                object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(url)
                    .with_retry(retry.clone())
                    .with_http_connector(super::transport::Hyper)
                    .build()
                    .map_err(built)?,
            ),
            ObjectStoreScheme::MicrosoftAzure => Arc::new(
                object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(url)
                    .with_retry(retry.clone())
                    .with_http_connector(super::transport::Hyper)
                    .build()
                    .map_err(built)?,
            ),
            ObjectStoreScheme::Memory => Arc::new(object_store::memory::InMemory::new()),
            other => {
                return Err(bad(format!(
                    "{other:?} is not an object store scheme we use"
                )));
            }
        };
        let mut this = Self::new(store, prefix.as_ref())?;
        this.url = redact(url);
        this.location = Some(this.url.clone());
        Ok(this)
    }

    /// A store of the files under `prefix` of `store` (any `object_store`
    /// implementation), with a local cache of 1 GiB.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str) -> Result<Self, StoreError> {
        let prefix = Path::parse(prefix.trim_matches('/')).map_err(|e| StoreError::Url {
            url: redact(prefix),
            reason: e.to_string(),
        })?;
        let bridge = Arc::new(Bridge::new().map_err(|source| StoreError::Directory {
            path: PathBuf::from("lro-store runtime"),
            source,
        })?);
        Ok(BucketStore {
            url: format!("{store}/{prefix}"),
            store,
            prefix,
            location: None,
            dir: PathBuf::from(RESOURCE_URI_PREFIX.trim_end_matches('/')),
            bridge,
            cache: Cache::new(None, DEFAULT_MAX_BYTES)?,
        })
    }

    /// Replaces the local cache: at most `max_bytes`, in a new private
    /// directory under `base` (`None`: the private per-user directory in
    /// the system temp dir).
    pub fn with_cache(mut self, base: Option<&FsPath>, max_bytes: u64) -> Result<Self, StoreError> {
        self.cache = Cache::new(base, max_bytes)?;
        Ok(self)
    }

    fn data_key(&self, name: &str) -> Path {
        self.prefix.clone().join(name)
    }

    fn manifest_key(&self, name: &str) -> Path {
        self.prefix
            .clone()
            .join(format!("{name}{MANIFEST_SUFFIX}").as_str())
    }

    /// The object at `path` under the prefix (`/`-separated), written
    /// create-only: `true` when it was written, `false` when one was there
    /// (content-addressed names: the same bytes). Blocking.
    #[cfg(feature = "history")]
    pub(crate) fn put_new(&self, path: &str, bytes: Vec<u8>) -> Result<bool, StoreError> {
        let key = Path::from(format!("{}/{path}", self.prefix));
        let (store, k) = (self.store.clone(), key.clone());
        let put = async move {
            let opts = PutOptions::from(PutMode::Create);
            store.put_opts(&k, PutPayload::from(bytes), opts).await
        };
        match self.bridge.run(path, put)? {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(Self::remote(&key, e)),
        }
    }

    /// The object at `path` under the prefix, when there is one of at most
    /// `max` bytes. Blocking.
    #[cfg(feature = "history")]
    pub(crate) fn get_small(&self, path: &str, max: u64) -> Result<Option<Bytes>, StoreError> {
        let key = Path::from(format!("{}/{path}", self.prefix));
        let (store, k) = (self.store.clone(), key.clone());
        let get = async move {
            let got = store.get(&k).await?;
            if got.meta.size > max {
                return Ok(None);
            }
            got.bytes().await.map(Some)
        };
        match self.bridge.run(path, get)? {
            Ok(found) => Ok(found),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Self::remote(&key, e)),
        }
    }

    /// The error of a failed request on `key`.
    fn remote(key: &Path, e: impl std::fmt::Display) -> StoreError {
        StoreError::Remote {
            object: key.to_string(),
            message: one_line(&e.to_string()),
        }
    }

    /// Uploads the data of `name`: all `reader` reads. Returns its size
    /// and its first line (the header).
    /// What it uploads is also written to `keep`.
    fn upload(
        &self,
        name: &str,
        reader: &mut dyn Read,
        keep: &mut Pending<'_>,
        index: &mut LineIndexer,
    ) -> Result<(u64, String), StoreError> {
        let key = self.data_key(name);
        let read_err = |e: io::Error| StoreError::Write {
            path: self.dir.join(name),
            source: e,
        };
        let first = read_chunk(reader, PART_BYTES).map_err(read_err)?;
        let Some(end) = memchr::memchr(b'\n', &first) else {
            return Err(read_err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no header line within the first 8 MiB",
            )));
        };
        let header = String::from_utf8_lossy(&first[..end]).into_owned();
        keep.write(&first);
        index.feed(&first);
        if first.len() < PART_BYTES {
            let size = first.len() as u64;
            let (store, k) = (self.store.clone(), key.clone());
            let put = async move {
                let opts = PutOptions::from(PutMode::Create);
                store.put_opts(&k, PutPayload::from(first), opts).await
            };
            self.bridge
                .run(name, put)?
                .map_err(|e| Self::remote(&key, e))?;
            return Ok((size, header));
        }
        let (store, k) = (self.store.clone(), key.clone());
        let mut upload = self
            .bridge
            .run(name, async move { store.put_multipart(&k).await })?
            .map_err(|e| Self::remote(&key, e))?;
        let mut in_flight = VecDeque::new();
        let mut size = 0u64;
        let mut chunk = first;
        let parts: Result<(), StoreError> = loop {
            if chunk.is_empty() {
                break Ok(());
            }
            size += chunk.len() as u64;
            let part = upload.put_part(PutPayload::from(Bytes::from(chunk)));
            in_flight.extend(self.bridge.spawn(part));
            if in_flight.len() >= PARTS_IN_FLIGHT
                && let Err(e) = self.settle(name, &key, in_flight.pop_front())
            {
                break Err(e);
            }
            chunk = match read_chunk(reader, PART_BYTES) {
                Ok(c) => c,
                Err(e) => break Err(read_err(e)),
            };
            keep.write(&chunk);
            index.feed(&chunk);
        };
        let parts = parts.and_then(|()| {
            while let Some(h) = in_flight.pop_front() {
                self.settle(name, &key, Some(h))?;
            }
            Ok(())
        });
        let finished = match parts {
            Ok(()) => self
                .bridge
                .run(name, async move { upload.complete().await })?
                .map(|_| ())
                .map_err(|e| Self::remote(&key, e)),
            Err(e) => {
                for h in in_flight {
                    h.abort();
                }
                let _ = self.bridge.run(name, async move { upload.abort().await });
                Err(e)
            }
        };
        finished.map(|()| (size, header))
    }

    /// Waits for one part's upload.
    fn settle(
        &self,
        name: &str,
        key: &Path,
        part: Option<tokio::task::JoinHandle<object_store::Result<()>>>,
    ) -> Result<(), StoreError> {
        let Some(part) = part else { return Ok(()) };
        match self.bridge.run(name, part)? {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Self::remote(key, e)),
            Err(e) => Err(Self::remote(key, e)),
        }
    }

    /// Deletes `key`; a missing object is no error.
    fn delete_key(&self, key: &Path) -> Result<(), StoreError> {
        let (store, k) = (self.store.clone(), key.clone());
        match self
            .bridge
            .run(key.as_ref(), async move { store.delete(&k).await })?
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Self::remote(key, e)),
        }
    }

    /// The names directly under the prefix, each with whether it is a
    /// manifest (else data), of our files only.
    fn listing(&self) -> Result<Vec<(String, bool)>, StoreError> {
        let (store, prefix) = (self.store.clone(), self.prefix.clone());
        let list = async move {
            let mut stream = store.list(Some(&prefix));
            let mut out = Vec::new();
            while let Some(meta) = stream.next().await {
                let meta = meta?;
                let parts = meta.location.prefix_match(&prefix).map(|p| p.count());
                if parts == Some(1)
                    && let Some(name) = meta.location.filename()
                {
                    out.push(name.to_owned());
                }
                if out.len() >= MAX_LISTED {
                    break;
                }
            }
            Ok::<_, object_store::Error>(out)
        };
        let names = self
            .bridge
            .run(self.prefix.as_ref(), list)?
            .map_err(|e| Self::remote(&self.prefix, e))?;
        Ok(names
            .into_iter()
            .filter_map(|n| match n.strip_suffix(MANIFEST_SUFFIX) {
                Some(stem) => parse_file_name(stem).map(|_| (stem.to_owned(), true)),
                None => parse_file_name(&n).map(|_| (n.clone(), false)),
            })
            .collect())
    }
}

/// Up to `cap` bytes of `reader` (fewer only at its end).
fn read_chunk(reader: &mut dyn Read, cap: usize) -> io::Result<Vec<u8>> {
    let mut chunk = Vec::with_capacity(cap.min(1 << 20));
    reader.take(cap as u64).read_to_end(&mut chunk)?;
    Ok(chunk)
}

impl Store for BucketStore {
    fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
        self.write_from(file_name, contents, &mut io::empty())
    }

    fn write_from(
        &self,
        file_name: &str,
        head: &[u8],
        body: &mut dyn Read,
    ) -> Result<PathBuf, StoreError> {
        if parse_file_name(file_name).is_none() {
            return Err(StoreError::InvalidName(file_name.to_owned()));
        }
        let mut reader = head.chain(body);
        // The writer keeps its upload: its first read costs no download.
        let mut keep = self.cache.pending(file_name);
        let mut index = LineIndexer::default();
        let (size, header) = self.upload(file_name, &mut reader, &mut keep, &mut index)?;
        let manifest = Manifest::new(file_name, size, &header).with_lines(index.finish());
        let bytes = serde_json::to_vec(&manifest).unwrap_or_default();
        let (store, key) = (self.store.clone(), self.manifest_key(file_name));
        let k = key.clone();
        let put = async move {
            let opts = PutOptions::from(PutMode::Create);
            store.put_opts(&k, PutPayload::from(bytes), opts).await
        };
        let committed = self
            .bridge
            .run(file_name, put)
            .and_then(|r| r.map_err(|e| Self::remote(&key, e)));
        if let Err(e) = committed {
            // Nothing was committed: the data goes too (best effort; the
            // sweep deletes what this leaves).
            let _ = self.delete_key(&self.data_key(file_name));
            return Err(e);
        }
        keep.commit();
        Ok(self.dir.join(file_name))
    }

    fn dir(&self) -> &FsPath {
        &self.dir
    }

    /// Reads a manifest that does not exist (the store answers, and these
    /// credentials may read it: a missing object is no error) and lists
    /// the prefix (the bucket or container exists: S3 and Azure answer a
    /// missing one with a 404 to reads of its objects too).
    fn check(&self) -> Result<(), StoreError> {
        let probe = format!("atlatl-check-{}.jsonl", ulid::Ulid::new());
        self.manifest(&probe)?;
        self.listing().map(|_| ())
    }

    fn remove(&self, file_name: &str) -> Result<bool, StoreError> {
        if parse_file_name(file_name).is_none() {
            return Err(StoreError::InvalidName(file_name.to_owned()));
        }
        let existed = self.manifest(file_name)?.is_some();
        self.delete_key(&self.manifest_key(file_name))?;
        self.delete_key(&self.data_key(file_name))?;
        Ok(existed)
    }

    fn shared(&self) -> Option<&dyn SharedFiles> {
        Some(self)
    }

    fn url(&self) -> Option<&str> {
        self.location.as_deref()
    }
}
