//! The store the `store` setting names ([`from_url`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "object-store")]
use super::BucketStore;
use super::{FsStore, RESOURCE_URI_PREFIX, Store, StoreError};

/// The store the `store` setting names: empty, the [`FsStore`] of
/// `output_dir` (trusted as `trust_output_dir` says); `file:///dir` the
/// `FsStore` of that directory; `s3://bucket/prefix`, `gs://…`, `az://…`
/// (as `object_store` parses them) a [`BucketStore`] (feature
/// `object-store`) configured from the standard environment variables.
pub fn from_url(
    url: &str,
    output_dir: &Path,
    trust_dir: bool,
) -> Result<Arc<dyn Store>, StoreError> {
    let url = url.trim();
    if url.is_empty() {
        return Ok(Arc::new(FsStore::new(output_dir).trust_dir(trust_dir)));
    }
    if let Some(path) = url.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(StoreError::Url {
                url: url.to_owned(),
                reason: "a file:// URL needs an absolute path (file:///dir)".into(),
            });
        }
        return Ok(Arc::new(FsStore::new(path).trust_dir(trust_dir)));
    }
    #[cfg(feature = "object-store")]
    {
        Ok(Arc::new(BucketStore::from_url(url)?))
    }
    #[cfg(not(feature = "object-store"))]
    {
        Err(StoreError::Url {
            url: redact(url),
            reason: "object storage needs the `object-store` feature of tower-lro".into(),
        })
    }
}

/// [`from_url`], or, when the URL cannot be used, a store whose every
/// write and check fails with the reason (a layer built with it logs it,
/// or `try_build` returns it, and each large result falls back to the
/// spec's truncation).
pub(crate) fn from_url_or_unusable(
    url: &str,
    output_dir: &Path,
    trust_dir: bool,
) -> Arc<dyn Store> {
    from_url(url, output_dir, trust_dir).unwrap_or_else(|e| {
        Arc::new(Unusable {
            url: redact(url),
            reason: match e {
                StoreError::Url { reason, .. } => reason,
                e => e.to_string(),
            },
            dir: PathBuf::from(RESOURCE_URI_PREFIX.trim_end_matches('/')),
        })
    })
}

/// A store that cannot be used (see [`from_url_or_unusable`]).
#[derive(Debug)]
struct Unusable {
    url: String,
    reason: String,
    dir: PathBuf,
}

impl Unusable {
    fn error(&self) -> StoreError {
        StoreError::Url {
            url: self.url.clone(),
            reason: self.reason.clone(),
        }
    }
}

impl Store for Unusable {
    fn write(&self, _: &str, _: &[u8]) -> Result<PathBuf, StoreError> {
        Err(self.error())
    }
    fn dir(&self) -> &Path {
        &self.dir
    }
    fn check(&self) -> Result<(), StoreError> {
        Err(self.error())
    }
    fn remove(&self, _: &str) -> Result<bool, StoreError> {
        Err(self.error())
    }
}

/// A URL without what could be credentials (user info, query), for
/// messages and logs.
pub(crate) fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let cut: String = rest.chars().take(200).collect();
    if scheme.is_empty() {
        cut
    } else {
        format!("{scheme}://{cut}")
    }
}
