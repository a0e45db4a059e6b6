//! Tests of [`BucketStore`] over `object_store`'s in-memory store (the
//! same code as against S3; `tests/command/fleet.rs` runs it against a
//! real S3-compatible server).

use std::io::{self, Read};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::{BucketStore, SharedFiles, Store, StoreError};

fn store() -> (Arc<InMemory>, BucketStore, tempfile::TempDir) {
    let memory = Arc::new(InMemory::new());
    let cache = tempfile::tempdir().unwrap();
    let store = BucketStore::new(memory.clone(), "fleet/a")
        .unwrap()
        .with_cache(Some(&cache.path().join("c")), 64 << 20)
        .unwrap();
    (memory, store, cache)
}

fn name_at(at: SystemTime) -> String {
    format!("atlatl-list-{}.jsonl", ulid::Ulid::from_datetime(at))
}

fn keys(memory: &Arc<InMemory>) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut out: Vec<String> = memory
            .list(None)
            .map(|m| m.unwrap().location.to_string())
            .collect()
            .await;
        out.sort();
        out
    })
}

/// `n` bytes of records after a header line.
struct Records {
    left: usize,
    fail_after: Option<usize>,
}

impl Read for Records {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(limit) = self.fail_after
            && self.left <= limit
        {
            return Err(io::Error::other("the spill file broke"));
        }
        let n = buf.len().min(self.left).min(4096);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = if (self.left - i).is_multiple_of(64) {
                b'\n'
            } else {
                b'x'
            };
        }
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn a_large_file_is_uploaded_in_parts_and_committed_by_its_manifest() {
    let (memory, store, _cache) = store();
    let name = name_at(SystemTime::now());
    let head = b"{\"type\":\"lro_header\",\"owner\":\"ab\"}\n";
    let size = 20 << 20;
    let mut body = Records {
        left: size,
        fail_after: None,
    };
    let path = store.write_from(&name, head, &mut body).unwrap();
    assert_eq!(path.to_str().unwrap(), format!("lro://files/{name}"));
    assert_eq!(
        keys(&memory),
        [
            format!("fleet/a/{name}"),
            format!("fleet/a/{name}.manifest")
        ]
    );
    let manifest = store.manifest(&name).unwrap().expect("committed");
    assert_eq!(manifest.size, (head.len() + size) as u64);
    assert_eq!(
        manifest.header,
        "{\"type\":\"lro_header\",\"owner\":\"ab\"}"
    );
    let copy = store.local_copy(&name, &manifest).unwrap();
    let bytes = std::fs::read(&copy).unwrap();
    assert_eq!(bytes.len(), head.len() + size);
    assert!(
        bytes.starts_with(head)
            && bytes[head.len()..]
                .iter()
                .all(|b| *b == b'x' || *b == b'\n')
    );
    // The second read comes from the cache: the data object is not read.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(memory.delete(&Path::from(format!("fleet/a/{name}"))))
        .unwrap();
    assert_eq!(store.local_copy(&name, &manifest).unwrap(), copy);
    assert_eq!(store.committed().unwrap(), std::slice::from_ref(&name));
    // Create-only: the same name again is refused, the manifest kept.
    assert!(store.write(&name, b"{}\n").is_err());
    assert_eq!(store.manifest(&name).unwrap(), Some(manifest));
}

#[test]
fn a_write_that_fails_leaves_nothing_visible() {
    let (memory, store, _cache) = store();
    // Mid-upload (two parts sent) and within the first part.
    for fail_after in [4 << 20, 19 << 20] {
        let name = name_at(SystemTime::now());
        let mut body = Records {
            left: 20 << 20,
            fail_after: Some(fail_after),
        };
        let e = store.write_from(&name, b"{}\n", &mut body).unwrap_err();
        assert!(matches!(e, StoreError::Write { .. }), "{e}");
        assert_eq!(store.manifest(&name).unwrap(), None);
    }
    assert!(keys(&memory).is_empty(), "{:?}", keys(&memory));
    // No header line: refused before anything is written.
    let name = name_at(SystemTime::now());
    assert!(store.write(&name, b"no line break").is_err());
    assert!(store.write("../x.jsonl", b"{}\n").is_err());
    assert!(keys(&memory).is_empty());
}

#[test]
fn sweeps_delete_expired_files_and_orphans_and_can_run_twice() {
    let (memory, store, _cache) = store();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let expired = name_at(hour_ago);
    let header = "{\"type\":\"lro_header\",\"expires_at\":\"2000-01-01T00:00:00Z\"}\n";
    store.write(&expired, header.as_bytes()).unwrap();
    // Its header says it expires later than the ttl would: kept.
    let kept = name_at(hour_ago);
    let later = "{\"type\":\"lro_header\",\"expires_at\":\"2999-01-01T00:00:00Z\"}\n";
    store.write(&kept, later.as_bytes()).unwrap();
    let fresh = name_at(SystemTime::now());
    store.write(&fresh, b"{\"type\":\"lro_header\"}\n").unwrap();
    // Data without a manifest: an old one (a writer died) and a new one
    // (a write in progress).
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let orphan = name_at(hour_ago);
    let writing = name_at(SystemTime::now());
    for n in [&orphan, &writing] {
        let key = Path::from(format!("fleet/a/{n}"));
        rt.block_on(memory.put(&key, PutPayload::from_static(b"{}\n")))
            .unwrap();
    }
    let ttl = Duration::from_secs(60);
    let now = chrono::Utc::now();
    let sweep = store.sweep(now, ttl).unwrap();
    assert_eq!(
        sweep.deleted.iter().map(|d| &d.0).collect::<Vec<_>>(),
        [&expired]
    );
    assert_eq!((sweep.orphans, sweep.scanned), (1, 5));
    assert!(sweep.errors.is_empty());
    let mut left = store.committed().unwrap();
    left.sort();
    let mut want = vec![kept.clone(), fresh.clone()];
    want.sort();
    assert_eq!(left, want);
    assert_eq!(
        keys(&memory).len(),
        5,
        "two files, their manifests, the write in progress"
    );
    let again = store.sweep(now, ttl).unwrap();
    assert!(again.deleted.is_empty() && again.orphans == 0 && again.errors.is_empty());
    assert_eq!(store.manifest(&expired).unwrap(), None);
    assert!(store.remove(&fresh).unwrap());
    assert!(!store.remove(&fresh).unwrap());
}

#[test]
fn urls_pick_the_backend_and_bad_ones_say_why() {
    let memory = super::from_url("memory:///lro", std::path::Path::new("/unused"), false).unwrap();
    assert!(memory.shared().is_some());
    assert_eq!(memory.dir().to_str(), Some("lro://files"));
    let dir = tempfile::tempdir().unwrap();
    let local = format!("file://{}", dir.path().display());
    let fs = super::from_url(&local, std::path::Path::new("/unused"), false).unwrap();
    assert!(fs.shared().is_none() && fs.dir() == dir.path());
    for bad in ["ftp://host/x", "file://relative", "s3://"] {
        let e = super::from_url(bad, std::path::Path::new("/unused"), false)
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(matches!(e, StoreError::Url { .. }), "{bad}: {e}");
    }
    assert_eq!(
        super::redact("s3://key:secret@bucket/p?token=x"),
        "s3://bucket/p"
    );
}

#[test]
fn the_writer_keeps_its_upload_and_other_replicas_read_ranges() {
    let (memory, writer, _cache) = store();
    let name = name_at(SystemTime::now());
    let head = b"{\"type\":\"lro_header\"}\n";
    let size = 3 << 20;
    let mut body = Records {
        left: size,
        fail_after: None,
    };
    writer.write_from(&name, head, &mut body).unwrap();
    let manifest = writer.manifest(&name).unwrap().unwrap();
    let whole = |mut r: Box<dyn Read + Send>| {
        let mut out = Vec::new();
        r.read_to_end(&mut out).map(|_| out)
    };
    // Another replica: ranged reads, the whole object or a part of it.
    let cache_b = tempfile::tempdir().unwrap();
    let other = BucketStore::new(memory.clone(), "fleet/a")
        .unwrap()
        .with_cache(Some(&cache_b.path().join("c")), 64 << 20)
        .unwrap();
    let from_other = whole(other.open(&name, &manifest).unwrap()).unwrap();
    assert_eq!(from_other.len() as u64, manifest.size);
    assert!(from_other.starts_with(head));
    let mut first = [0u8; 100];
    other
        .open(&name, &manifest)
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    assert_eq!(&first[..], &from_other[..100]);
    // The writer reads what it uploaded with the data object gone.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let data = Path::from(format!("fleet/a/{name}"));
    rt.block_on(memory.delete(&data)).unwrap();
    assert_eq!(
        whole(writer.open(&name, &manifest).unwrap()).unwrap(),
        from_other
    );
    // An object shorter than its manifest says is an error, not a short
    // file.
    rt.block_on(memory.put(&data, PutPayload::from(from_other[..1 << 20].to_vec())))
        .unwrap();
    let e = whole(other.open(&name, &manifest).unwrap()).unwrap_err();
    assert!(!e.to_string().is_empty());
}

#[test]
fn an_object_that_is_not_what_its_header_says_is_refused_as_damaged() {
    use sha2::Digest;
    let (memory, writer, _cache) = store();
    let name = name_at(SystemTime::now());
    let data: Vec<u8> = (0..20_000)
        .flat_map(|i| format!("{{\"i\":{i}}}\n").into_bytes())
        .collect();
    let sha: String = sha2::Sha256::digest(&data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let head = format!(
        "{{\"type\":\"lro_header\",\"count\":20000,\"data_bytes\":{},\"data_sha256\":\"{sha}\"}}\n",
        data.len()
    );
    writer
        .write_from(&name, head.as_bytes(), &mut data.as_slice())
        .unwrap();
    let manifest = writer.manifest(&name).unwrap().unwrap();
    let cache_b = tempfile::tempdir().unwrap();
    let other = || {
        BucketStore::new(memory.clone(), "fleet/a")
            .unwrap()
            .with_cache(Some(&cache_b.path().join("c")), 64 << 20)
            .unwrap()
    };
    let read_all = |store: &BucketStore| {
        let mut out = Vec::new();
        store
            .open(&name, &manifest)
            .unwrap()
            .read_to_end(&mut out)
            .map(|_| out)
    };
    // Whole: checked and read.
    let whole = read_all(&other()).unwrap();
    assert_eq!(&whole[head.len()..], data.as_slice());
    // The same size, one byte changed: a whole read is refused, by ranges
    // and into the cache alike; a page's part still reads.
    let mut changed = whole.clone();
    let at = changed.len() - 3;
    changed[at] = b'7';
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(memory.put(
        &Path::from(format!("fleet/a/{name}")),
        PutPayload::from(changed),
    ))
    .unwrap();
    let b = other();
    let e = read_all(&b).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    assert!(e.to_string().contains(&sha), "{e}");
    match b.local_copy(&name, &manifest) {
        Err(StoreError::Damaged { detail, .. }) => assert!(detail.contains("SHA-256")),
        other => panic!("{other:?}"),
    }
    let mut first = [0u8; 64];
    b.open(&name, &manifest)
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
}
