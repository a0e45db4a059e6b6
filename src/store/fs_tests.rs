//! Tests of [`FsStore`](super::FsStore).

use super::*;
use std::fs;

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

    // In two parts, as the engine writes: head, then body, as they are.
    let parts = format!("atlatl-list-{}.jsonl", ulid::Ulid::new());
    let body = b"{\"a\":1}\n".repeat(100_000);
    let path = store.write_parts(&parts, b"{}\n", &body).unwrap();
    let written = fs::read(&path).unwrap();
    assert_eq!((&written[..3], &written[3..]), (&b"{}\n"[..], &body[..]));
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(matches!(
        store.write_parts(&parts, b"", b"x"),
        Err(StoreError::Write { .. })
    ));
    assert_eq!(fs::read(&path).unwrap(), written, "never overwritten");
    assert!(matches!(
        store.write_parts("../evil.jsonl", b"", b""),
        Err(StoreError::InvalidName(_))
    ));
    let leftovers: Vec<_> = fs::read_dir(root.path().join("out")).unwrap().collect();
    assert_eq!(leftovers.len(), 3, "no temporary file left behind");
}

/// A store that has only `write` gets the two parts joined, through
/// `write_from`'s default.
#[test]
fn write_parts_by_default_is_one_write_of_both() {
    struct Joined(std::sync::Mutex<Vec<(String, Vec<u8>)>>);
    impl Store for Joined {
        fn write(&self, file_name: &str, contents: &[u8]) -> Result<PathBuf, StoreError> {
            let mut got = self.0.lock().unwrap();
            got.push((file_name.to_owned(), contents.to_vec()));
            Ok(PathBuf::from("/nowhere").join(file_name))
        }
        fn dir(&self) -> &Path {
            Path::new("/nowhere")
        }
    }
    let store = Joined(Default::default());
    let path = store.write_parts("f.jsonl", b"head\n", b"body\n").unwrap();
    assert_eq!(path, Path::new("/nowhere/f.jsonl"));
    let got = store.0.into_inner().unwrap();
    assert_eq!(got, [("f.jsonl".to_owned(), b"head\nbody\n".to_vec())]);
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
