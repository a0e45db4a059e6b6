//! Tests of the parent module.

use super::*;

#[test]
fn requests_and_answers_are_told_apart_by_id_and_method() {
    let (id, init) = request_of(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#);
    assert_eq!((id.as_deref(), init), (Some("7"), false));
    let (id, init) = request_of(
            br#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2024-11-05"}}"#,
        );
    assert_eq!((id.as_deref(), init), (Some("\"a\""), true));
    for not_a_request in [
        &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
        br#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
        b"not json",
    ] {
        assert_eq!(request_of(not_a_request).0, None);
    }
    assert_eq!(
        answer_id(br#"{"result":{"content":[]},"jsonrpc":"2.0","id":7}"#).as_deref(),
        Some("7"),
        "the id of an answer, wherever it is"
    );
    assert_eq!(
        answer_id(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#),
        None
    );
    assert_eq!(
        answer_id(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#),
        None
    );
    // Large ones, read at their edges or whole: the same ids.
    let big = "x".repeat(100_000);
    for (message, id) in [
        (
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"t":"{big}"}}}}"#),
            Some("7"),
        ),
        (
            format!(r#"{{"result":{{"t":"{big}"}},"jsonrpc":"2.0","id":"b"}}"#),
            Some("\"b\""),
        ),
        (
            format!(r#"{{"result":{{"t":"{big}"}},"id":8,"jsonrpc":"2.0"}}"#),
            Some("8"),
        ),
        (
            format!(r#"{{"error":{{"message":"{big}"}},"id":6}}"#),
            Some("6"),
        ),
        (
            format!(r#"{{"id":9,"method":"x","params":{{"t":"{big}"}}}}"#),
            None,
        ),
        (
            format!(r#"{{"method":"x","params":{{"t":"{big}"}},"id":9}}"#),
            None,
        ),
    ] {
        assert_eq!(
            answer_id(message.as_bytes()).as_deref(),
            id,
            "{}",
            &message[..40]
        );
    }
}

#[test]
fn a_gone_stream_tells_its_waiters_and_takes_no_more() {
    let legacy = LegacySse::default();
    let endpoint: Uri = "http://127.0.0.1:1/messages?session_id=1".parse().unwrap();
    legacy.lock().open = Some((endpoint, 1));
    let mut waiting = legacy.expect("1", 1).expect("the stream is open");
    assert_eq!(
        legacy.expect("2", 2).err(),
        Some(NoWait::Gone),
        "not the open stream"
    );
    assert_eq!(
        legacy.expect("1", 1).err(),
        Some(NoWait::InUse),
        "an id in use"
    );
    assert!(waiting.try_recv().is_err(), "still waiting: nothing yet");
    legacy.dropped(1);
    assert!(
        matches!(
            waiting.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ),
        "notified: its sender is gone"
    );
    assert!(legacy.lock().pending.is_empty());
    assert_eq!(
        legacy.expect("3", 1).err(),
        Some(NoWait::Gone),
        "the stream is gone"
    );
}
