//! Tests of the parent module.

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

#[test]
fn references_resolve_inside_the_output_dir_only() {
    let dir = tempfile::tempdir().unwrap();
    let name = "atlatl-recall-01J00000000000000000000000.jsonl";
    let d = dir.path();
    assert_eq!(file_name_in_dir(d, name).as_deref(), Some(name));
    let full = d.join(name);
    assert_eq!(
        file_name_in_dir(d, full.to_str().unwrap()).as_deref(),
        Some(name)
    );
    for bad in [
        format!("/etc/{name}"),
        format!("{}/../{name}", d.display()),
        format!("{}/x/{name}", d.display()),
        "atlatl-recall-x.jsonl".to_owned(),
        "/etc/passwd".to_owned(),
        String::new(),
    ] {
        assert_eq!(file_name_in_dir(d, &bad), None, "{bad}");
    }
}
