//! Tests of the parent module.

use super::*;

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
