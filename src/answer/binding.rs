//! The key that binds offloaded files to their caller: a keyed MAC of the
//! caller's credentials or tenant, never the credentials themselves.

use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The key that binds offloaded files to the credentials (or tenant) of
/// the caller that produced them: a file's header holds a keyed MAC
/// (HMAC-SHA256) of the caller's `Authorization` header, or of the tenant
/// the layer's partition function names, never the credentials themselves.
/// The same credentials then read the file from any MCP session (or none);
/// any other caller gets the one refusal every unreadable file gets.
///
/// A layer makes a random key of its own unless given one
/// ([`OffloadLayerBuilder::binding_key`](crate::offload::OffloadLayerBuilder::binding_key)):
/// enough for one process. Replicas that serve each other's files, or a
/// process that must read its files after a restart, share one key, e.g.
/// from a file ([`BindingKey::from_file`]).
///
/// ```
/// use tower_lro::offload::BindingKey;
///
/// let key = BindingKey::from_bytes(&[7u8; 32]).unwrap();
/// assert!(BindingKey::from_bytes(b"too short").is_err());
/// # let _ = key;
/// ```
#[derive(Clone)]
pub struct BindingKey {
    key: std::sync::Arc<[u8]>,
}

/// Why bytes cannot be a [`BindingKey`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindingKeyError {
    /// Fewer than [`BindingKey::MIN_BYTES`] bytes.
    #[error("a binding key needs at least {min} bytes, got {got}")]
    TooShort {
        /// The minimum.
        min: usize,
        /// How many there were.
        got: usize,
    },
    /// The key file could not be read.
    #[error("cannot read the binding key file {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl std::fmt::Debug for BindingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BindingKey(..)")
    }
}

impl BindingKey {
    /// The fewest bytes a key may have (256 bits).
    pub const MIN_BYTES: usize = 32;

    /// A fresh random key (from the operating system's generator).
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // No OS generator (never seen on the platforms we run on): the
            // process's random hasher keys, which std also draws from the OS.
            for (i, chunk) in key.chunks_mut(8).enumerate() {
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_usize(i);
                chunk.copy_from_slice(&h.finish().to_le_bytes());
            }
        }
        BindingKey { key: key.into() }
    }

    /// A key of these bytes (at least [`Self::MIN_BYTES`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BindingKeyError> {
        if bytes.len() < Self::MIN_BYTES {
            return Err(BindingKeyError::TooShort {
                min: Self::MIN_BYTES,
                got: bytes.len(),
            });
        }
        Ok(BindingKey { key: bytes.into() })
    }

    /// The key held by the file at `path`: its bytes, without the ASCII
    /// white space at either end (so `openssl rand -hex 32 > key` makes a
    /// good one: 64 characters). At least [`Self::MIN_BYTES`] remain.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, BindingKeyError> {
        let path = path.as_ref();
        let bytes = fs::read(path).map_err(|source| BindingKeyError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        Self::from_bytes(bytes.trim_ascii())
    }

    /// The owner of files produced with the credentials `authorization`
    /// (the `Authorization` header's values, in order): a keyed MAC, in
    /// 32 hex digits, that names the caller without showing its
    /// credentials.
    pub fn credentials<'a>(&self, authorization: impl Iterator<Item = &'a [u8]>) -> String {
        let mut mac = self.mac("credentials");
        for value in authorization {
            mac.update(value);
            mac.update(b"\n");
        }
        hex(&mac.finalize().into_bytes())
    }

    /// The owner of files produced for the tenant `partition`.
    pub(crate) fn tenant(&self, partition: &str) -> String {
        let mut mac = self.mac("tenant");
        mac.update(partition.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// A MAC over `domain` and a separator, ready for the value.
    fn mac(&self, domain: &str) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(domain.as_bytes());
        mac.update(&[0]);
        mac
    }
}

/// The first 128 bits of a MAC, in hex: what a header's `owner` holds.
fn hex(mac: &[u8]) -> String {
    mac.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_digests_are_keyed_and_domain_separated() {
        let a = BindingKey::random();
        let b = BindingKey::random();
        let creds = |k: &BindingKey, v: &str| k.credentials([v.as_bytes()].into_iter());
        assert_eq!(creds(&a, "Bearer s1"), creds(&a, "Bearer s1"));
        assert_eq!(creds(&a, "Bearer s1").len(), 32);
        assert_ne!(creds(&a, "Bearer s1"), creds(&a, "Bearer s2"));
        assert_ne!(creds(&a, "s1"), a.tenant("s1"));
        assert_ne!(creds(&a, "Bearer s1"), creds(&b, "Bearer s1"));
        // Two values are not one value with the separator inside.
        assert_ne!(
            a.credentials([b"x".as_slice(), b"y".as_slice()].into_iter()),
            creds(&a, "x"),
        );
        assert!(!format!("{a:?}").contains('0'));
        // A shared key gives the same digests in another process.
        let k1 = BindingKey::from_bytes(&[1u8; 32]).unwrap();
        let k2 = BindingKey::from_bytes(&[1u8; 32]).unwrap();
        assert_eq!(creds(&k1, "Bearer t"), creds(&k2, "Bearer t"));
    }

    #[test]
    fn key_files_are_trimmed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        fs::write(&path, format!("{}\n", "ab".repeat(32))).unwrap();
        let k = BindingKey::from_file(&path).unwrap();
        assert_eq!(
            k.tenant("t"),
            BindingKey::from_bytes("ab".repeat(32).as_bytes())
                .unwrap()
                .tenant("t")
        );
        fs::write(&path, "short\n").unwrap();
        assert!(matches!(
            BindingKey::from_file(&path),
            Err(BindingKeyError::TooShort { min: 32, got: 5 })
        ));
        assert!(matches!(
            BindingKey::from_file(dir.path().join("missing")),
            Err(BindingKeyError::Unreadable { .. })
        ));
    }
}
