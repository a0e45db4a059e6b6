//! The client's identity at the authorization server (RFC 7591 dynamic
//! registration, or static client information) and the token endpoint:
//! an authorization code with its PKCE verifier, a refresh token, or the
//! client's own credentials become tokens.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request};
use http_body_util::Full;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::AuthError;
use super::discovery::ServerMeta;
use crate::fetch::{HttpClient, fetch};

/// Who the proxy is at the authorization server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ClientInfo {
    /// The client id.
    pub client_id: String,
    /// The secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URIs it was registered with.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// `none`, `client_secret_post` or `client_secret_basic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

/// Tokens as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Tokens {
    /// The bearer token for the MCP server.
    pub access_token: String,
    /// For a silent renewal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// OpenID Connect's identity token, sent instead with `--use-id-token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    /// When the access token expires (seconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// Seconds before its expiry a token is renewed.
const EXPIRY_MARGIN_SECS: u64 = 30;

impl Tokens {
    /// Whether the access token is past (or about to be past) its expiry.
    pub(crate) fn expired(&self) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now_secs() + EXPIRY_MARGIN_SECS)
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What is exchanged for tokens.
pub(crate) enum Grant<'a> {
    /// An authorization code, with its PKCE verifier and redirect URI.
    Code {
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    },
    /// A refresh token.
    Refresh(&'a str),
    /// The client's own credentials, for `scope`.
    ClientCredentials { scope: Option<&'a str> },
    /// A device code the user has (or has not yet) approved (RFC 8628).
    DeviceCode(&'a str),
}

/// The device authorization grant type (RFC 8628).
pub(crate) const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Registers the proxy as a client (RFC 7591): `static_metadata` is merged
/// over the defaults. Without a redirect URI, a client of the device
/// authorization grant.
pub(crate) async fn register(
    client: &HttpClient,
    meta: &ServerMeta,
    redirect_uri: Option<&str>,
    scope: Option<&str>,
    static_metadata: Option<&Value>,
) -> Result<ClientInfo, AuthError> {
    let Some(endpoint) = &meta.registration_endpoint else {
        return Err(AuthError::Registration(
            "the authorization server offers no dynamic client registration; pass --static-oauth-client-info".into(),
        ));
    };
    let mut body = match redirect_uri {
        Some(redirect_uri) => json!({
            "client_name": "lro proxy",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": auth_method(meta),
        }),
        None => json!({
            "client_name": "lro proxy",
            "redirect_uris": [],
            "grant_types": [DEVICE_GRANT, "refresh_token"],
            "response_types": [],
            "token_endpoint_auth_method": auth_method(meta),
        }),
    };
    if let Some(scope) = scope {
        body["scope"] = Value::from(scope);
    }
    if let (Some(Value::Object(extra)), Value::Object(base)) = (static_metadata, &mut body) {
        base.extend(extra.clone());
    }
    let request = Request::builder()
        .method(Method::POST)
        .uri(endpoint.as_str())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|_| AuthError::Registration(format!("bad URL {endpoint}")))?;
    let response = fetch(client, request, endpoint).await?;
    if !response.status().is_success() {
        return Err(AuthError::Registration(format!(
            "HTTP {}: {}",
            response.status().as_u16(),
            oauth_error(response.body())
        )));
    }
    let mut info: ClientInfo = serde_json::from_slice(response.body())
        .map_err(|e| AuthError::Registration(format!("the answer: {e}")))?;
    if let Some(redirect_uri) = redirect_uri
        && info.redirect_uris.is_empty()
    {
        info.redirect_uris.push(redirect_uri.to_owned());
    }
    Ok(info)
}

/// `none` when the server takes public clients (or says nothing), else
/// `client_secret_post`, else `client_secret_basic`.
fn auth_method(meta: &ServerMeta) -> &'static str {
    let supported = &meta.token_endpoint_auth_methods_supported;
    let has = |m: &str| supported.iter().any(|s| s == m);
    if supported.is_empty() || has("none") {
        "none"
    } else if has("client_secret_post") {
        "client_secret_post"
    } else {
        "client_secret_basic"
    }
}

/// Exchanges `grant` at the token endpoint; `resource` is the RFC 8707
/// indicator (omitted when `None`).
pub(crate) async fn request_tokens(
    client: &HttpClient,
    meta: &ServerMeta,
    info: &ClientInfo,
    grant: Grant<'_>,
    resource: Option<&str>,
) -> Result<Tokens, AuthError> {
    let (request, refresh) = grant_request(meta, info, grant, resource)?;
    let response = fetch(client, request, &meta.token_endpoint).await?;
    if !response.status().is_success() {
        return Err(AuthError::Rejected(format!(
            "the token endpoint answered HTTP {}: {}",
            response.status().as_u16(),
            oauth_error(response.body())
        )));
    }
    tokens_of(response.body(), refresh)
}

/// One poll of the device grant: the tokens, or the OAuth error code the
/// token endpoint answered (`authorization_pending`, `slow_down`, ...)
/// with its whole text.
pub(crate) async fn poll_device_tokens(
    client: &HttpClient,
    meta: &ServerMeta,
    info: &ClientInfo,
    device_code: &str,
    resource: Option<&str>,
) -> Result<Result<Tokens, (String, String)>, AuthError> {
    let grant = Grant::DeviceCode(device_code);
    let (request, _) = grant_request(meta, info, grant, resource)?;
    let response = fetch(client, request, &meta.token_endpoint).await?;
    if response.status().is_success() {
        return tokens_of(response.body(), None).map(Ok);
    }
    let v: Value = serde_json::from_slice(response.body()).unwrap_or_default();
    let code = v.get("error").and_then(Value::as_str).unwrap_or_default();
    Ok(Err((code.to_owned(), oauth_error(response.body()))))
}

/// The token request for `grant`, and the refresh token it spends.
fn grant_request<'a>(
    meta: &ServerMeta,
    info: &ClientInfo,
    grant: Grant<'a>,
    resource: Option<&str>,
) -> Result<(Request<Full<Bytes>>, Option<&'a str>), AuthError> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    let refresh = match grant {
        Grant::Code {
            code,
            verifier,
            redirect_uri,
        } => {
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("code_verifier", verifier)
                .append_pair("redirect_uri", redirect_uri);
            None
        }
        Grant::Refresh(token) => {
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", token);
            Some(token)
        }
        Grant::ClientCredentials { scope } => {
            form.append_pair("grant_type", "client_credentials");
            if let Some(scope) = scope {
                form.append_pair("scope", scope);
            }
            None
        }
        Grant::DeviceCode(code) => {
            form.append_pair("grant_type", DEVICE_GRANT)
                .append_pair("device_code", code);
            None
        }
    };
    if let Some(resource) = resource {
        form.append_pair("resource", resource);
    }
    Ok((client_request(&meta.token_endpoint, info, form)?, refresh))
}

/// A POST of `form` to `endpoint` (the token endpoint, the device
/// authorization endpoint), with the client authenticated the way it was
/// registered.
pub(crate) fn client_request(
    endpoint: &str,
    info: &ClientInfo,
    mut form: form_urlencoded::Serializer<'_, String>,
) -> Result<Request<Full<Bytes>>, AuthError> {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(endpoint)
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(ACCEPT, "application/json");
    let method = info.token_endpoint_auth_method.as_deref();
    match &info.client_secret {
        Some(secret) if method != Some("client_secret_post") => {
            let encode =
                |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", encode(&info.client_id), encode(secret));
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            request = request.header(AUTHORIZATION, format!("Basic {basic}"));
        }
        Some(secret) => {
            form.append_pair("client_id", &info.client_id)
                .append_pair("client_secret", secret);
        }
        None => {
            form.append_pair("client_id", &info.client_id);
        }
    }
    request
        .body(Full::new(Bytes::from(form.finish())))
        .map_err(|_| AuthError::Discovery(format!("bad URL {endpoint}")))
}

/// The tokens of a token endpoint answer; a refresh that brings no new
/// refresh token keeps the one it used.
fn tokens_of(body: &[u8], refresh: Option<&str>) -> Result<Tokens, AuthError> {
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        #[serde(default)]
        refresh_token: Option<String>,
        #[serde(default)]
        id_token: Option<String>,
        #[serde(default)]
        expires_in: Option<u64>,
    }
    let answer: Answer = serde_json::from_slice(body)
        .map_err(|e| AuthError::Rejected(format!("the token endpoint's answer: {e}")))?;
    Ok(Tokens {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token.or(refresh.map(str::to_owned)),
        id_token: answer.id_token,
        expires_at: answer.expires_in.map(|s| now_secs() + s),
    })
}

/// The `error` (and `error_description`) of an OAuth error answer.
pub(crate) fn oauth_error(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body).unwrap_or_default();
    match (
        v.get("error").and_then(Value::as_str),
        v.get("error_description").and_then(Value::as_str),
    ) {
        (Some(e), Some(d)) => format!("{e} ({d})"),
        (Some(e), None) => e.to_owned(),
        _ => "no OAuth error given".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_without_a_new_refresh_token_keeps_the_old_one() {
        let t = tokens_of(br#"{"access_token":"a","expires_in":60}"#, Some("r")).unwrap();
        assert_eq!(t.refresh_token.as_deref(), Some("r"));
        assert!(!t.expired());
        let t = tokens_of(
            br#"{"access_token":"a","refresh_token":"n","expires_in":1}"#,
            Some("r"),
        )
        .unwrap();
        assert_eq!(t.refresh_token.as_deref(), Some("n"));
        assert!(t.expired(), "within the margin");
    }

    #[test]
    fn the_auth_method_prefers_public_then_post() {
        let mut meta = ServerMeta::default();
        assert_eq!(auth_method(&meta), "none");
        meta.token_endpoint_auth_methods_supported =
            vec!["client_secret_basic".into(), "client_secret_post".into()];
        assert_eq!(auth_method(&meta), "client_secret_post");
        meta.token_endpoint_auth_methods_supported = vec!["client_secret_basic".into()];
        assert_eq!(auth_method(&meta), "client_secret_basic");
    }
}
