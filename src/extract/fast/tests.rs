//! Tests of the parent module.

use super::*;

#[test]
fn skipped_fields_are_checked_as_read_ones() {
    let need_a = Need::Keys(vec![(b"a".to_vec().into_boxed_slice(), Need::All)]);
    let read = |text: &str| -> Result<Vec<String>, String> {
        Records::new(Bytes::copy_from_slice(text.as_bytes()), need_a.clone())
            .map(|r| r.map(|v| Jv(v).to_string()).map_err(|e| e.to_string()))
            .collect()
    };
    let good =
        r#"{"b":"x\"\n\u00e9\ud83d\ude00","a":1,"c":[{"d":[1e400,-0.5,null]}]} {"a":{"b":2}} 3"#;
    assert_eq!(read(good).unwrap(), [r#"{"a":1}"#, r#"{"a":{"b":2}}"#, "3"]);
    for bad in [
        "{\"b\":\"\u{1}\",\"a\":1}",
        r#"{"b":"\ud800","a":1}"#,
        r#"{"b":[1,],"a":1}"#,
        r#"{"b":nul,"a":1}"#,
        r#"{"b" 1,"a":1}"#,
        r#"{"a":1,"b":{"c":}}"#,
    ] {
        let r = read(&format!("{{\"a\":0}}\n{bad}\n"));
        assert!(
            r.as_ref().is_err_and(|e| e.contains("record 2")),
            "{bad}: {r:?}"
        );
    }
    let deep = format!("{{\"b\":{}{}, \"a\":1}}", "[".repeat(300), "]".repeat(300));
    assert!(read(&deep).is_err());
}

#[test]
fn reads_what_jaqs_reader_reads() {
    let text = Bytes::from_static(
            br#"{"a":"x\"y\u00e9\ud83d\ude00","b":[1,-2,0,0.5,1e400,12345678901234567890,-0.0,{}],"a":null}
            [] "plain" true"#,
        );
    let fast: Vec<String> = values(&text)
        .unwrap()
        .into_iter()
        .map(|v| Jv(v).to_string())
        .collect();
    let slow: Vec<String> = super::super::input::values(&text)
        .unwrap()
        .into_iter()
        .map(|v| Jv(v).to_string())
        .collect();
    assert_eq!(fast, slow);
    for bad in [
        &b"[1,]"[..],
        b"{\"a\" 1}",
        b"01",
        b"1.",
        b"\"\\ud800\"",
        b"nul",
    ] {
        assert!(values(&Bytes::copy_from_slice(bad)).is_none(), "{bad:?}");
    }
}
