//! The completeness contract: every descriptor and header says how many
//! record lines the file holds, how many bytes they are and their SHA-256,
//! and those figures are the file's (recomputed here from the file, and by
//! `sha256sum`/`wc` where they are installed).

use crate::shapes;

use sha2::{Digest, Sha256};
use tower_lro::config::OffloadConfig;
use tower_lro::descriptor::OffloadHeader;
use tower_lro::offload::{Offloader, Outcome};

/// Count, bytes and SHA-256 (hex) of the data lines of `file` (every byte
/// after the header line).
pub(crate) fn data_figures(file: &[u8]) -> (usize, u64, String) {
    let at = file.iter().position(|&b| b == b'\n').unwrap() + 1;
    let data = &file[at..];
    let lines = data.iter().filter(|&&b| b == b'\n').count();
    let sha: String = Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (lines, data.len() as u64, sha)
}

#[test]
fn every_shape_says_how_to_tell_the_file_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let o = Offloader::new(OffloadConfig::default().output_dir(dir.path()));
    for case in shapes::all() {
        let body = case.result.to_string();
        let Outcome::Offloaded(off) = o.process(&case.call, body.as_bytes()).unwrap() else {
            panic!("{}: expected an offload", case.name);
        };
        let file = std::fs::read(&off.file.path).unwrap();
        let (lines, bytes, sha) = data_figures(&file);
        let header: OffloadHeader =
            serde_json::from_slice(&file[..file.iter().position(|&b| b == b'\n').unwrap()])
                .unwrap();
        let s = &off.response.summary;
        assert_eq!((s.count, header.count), (lines, lines), "{}", case.name);
        assert_eq!(s.data_bytes, Some(bytes), "{}", case.name);
        assert_eq!(header.data_bytes, Some(bytes), "{}", case.name);
        assert_eq!(s.data_sha256.as_deref(), Some(&*sha), "{}", case.name);
        assert_eq!(header.data_sha256.as_deref(), Some(&*sha), "{}", case.name);
        assert_eq!(off.file.header.data_sha256.as_deref(), Some(&*sha));
        // The descriptor the client reads carries it too.
        let sent: serde_json::Value = serde_json::from_str(&off.result).unwrap();
        let text = sent["content"][0]["text"].as_str().unwrap();
        let descriptor: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(descriptor["summary"]["data_sha256"], sha.as_str());
        assert_eq!(descriptor["summary"]["data_bytes"], bytes);
        // The commands the rustdoc names agree, where they exist.
        let shell = format!(
            "tail -n +2 '{}' | sha256sum",
            off.file.path.to_string_lossy()
        );
        if let Ok(out) = std::process::Command::new("sh")
            .arg("-c")
            .arg(&shell)
            .output()
            && out.status.success()
        {
            let printed = String::from_utf8_lossy(&out.stdout);
            assert!(printed.starts_with(&sha), "{}: {printed}", case.name);
        }
    }
}
