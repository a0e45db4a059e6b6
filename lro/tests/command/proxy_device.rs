//! `--device-code`: `lro proxy` signs in with the device authorization
//! grant (RFC 8628) at `oidc-provider` (the world of
//! [`oauth`](super::oauth)): it registers a client for the grant, shows the
//! user code, and polls the token endpoint while the "user"
//! (`interop/oauth_browser.mjs` as `$BROWSER`, given the verification URL
//! with the code) confirms the code, logs in and consents; no callback
//! listener. The next start uses the stored tokens.

use super::oauth::{session, sign_ins, stored, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_code_sign_in_then_the_stored_tokens() {
    let Some(world) = world(3600).await else {
        return;
    };
    let flags = ["--device-code", "--auth-timeout", "60"];
    let result = session(&world, &flags, &[]).await;
    assert!(result["content"].is_array(), "{result}");
    assert_eq!(
        sign_ins(&world),
        vec!["device 200"],
        "approved on the device page"
    );
    let (_, client) = stored(&world, "_device_client_info.json");
    assert!(client["client_id"].is_string(), "{client}");
    assert!(client["redirect_uris"].as_array().is_none_or(Vec::is_empty));
    let (_, tokens) = stored(&world, "_tokens.json");
    assert!(tokens["access_token"].is_string());
    // The next start: the stored tokens, no second sign-in.
    session(&world, &flags, &[]).await;
    assert_eq!(sign_ins(&world).len(), 1);
}
