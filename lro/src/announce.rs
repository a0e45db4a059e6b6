//! Registering upstream as an LRO proxy (the spec's step 1), shared by the
//! gateway and the local proxy: the `lro-proxy` header on every request and
//! `clientInfo.proxy: true` in `initialize`, so a server running LRO itself
//! answers in full and the offloading happens once, on our side.

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use tower_lro::offload::DEFAULT_PROXY_HEADER;

/// Adds the proxy header to a request's headers.
pub(crate) fn announce_in_headers(headers: &mut HeaderMap) {
    headers.insert(
        HeaderName::from_static(DEFAULT_PROXY_HEADER),
        HeaderValue::from_static("1"),
    );
}

/// Whether a body may be an `initialize` request (a cheap test before the
/// body is parsed).
pub(crate) fn may_be_initialize(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"initialize").is_some()
}

/// `clientInfo.proxy: true` in an `initialize` request (the spec's step 1);
/// any other message unchanged.
pub(crate) fn announce_in_initialize(bytes: Bytes) -> Bytes {
    if !may_be_initialize(&bytes) {
        return bytes;
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return bytes;
    };
    if value.get("method").and_then(Value::as_str) != Some("initialize") {
        return bytes;
    }
    match value.pointer_mut("/params/clientInfo") {
        Some(Value::Object(info)) => {
            info.insert("proxy".into(), Value::Bool(true));
        }
        _ => return bytes,
    }
    serde_json::to_vec(&value).map(Bytes::from).unwrap_or(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_gets_the_proxy_flag_and_nothing_else_changes() {
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}"#;
        let out: Value =
            serde_json::from_slice(&announce_in_initialize(Bytes::from_static(init))).unwrap();
        assert_eq!(out["params"]["clientInfo"]["proxy"], true);
        let call = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"initialize"}}"#,
        );
        assert_eq!(announce_in_initialize(call.clone()), call);
    }
}
