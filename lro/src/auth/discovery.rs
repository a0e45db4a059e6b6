//! Finding the authorization server of an MCP server: the `401`'s
//! `WWW-Authenticate` challenge, the protected resource metadata (RFC 9728)
//! it points to or the well-known URL, then the authorization server's
//! metadata (RFC 8414, or OpenID Connect discovery).

use bytes::Bytes;
use http::header::ACCEPT;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::Url;

use super::AuthError;
use crate::fetch::{HttpClient, fetch};

/// What a `401` challenge says (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs.
    pub scope: Option<String>,
    /// `error`: e.g. `invalid_token`, `insufficient_scope`.
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge of a `WWW-Authenticate` value (the parameters
    /// of the first challenge when there is no `Bearer` one).
    pub(crate) fn parse(value: &str) -> Challenge {
        let at = value
            .to_ascii_lowercase()
            .find("bearer")
            .map_or(0, |i| i + "bearer".len());
        let mut challenge = Challenge::default();
        for (name, v) in auth_params(&value[at..]) {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(v),
                "scope" => challenge.scope = Some(v),
                "error" => challenge.error = Some(v),
                _ => {}
            }
        }
        challenge
    }
}

/// `name=value` and `name="quoted \"value\""` pairs, comma separated.
fn auth_params(text: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut rest = text.trim_start();
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim().trim_start_matches(',').trim().to_owned();
        let after = &rest[eq + 1..];
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => quoted_string(quoted),
            None => {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            }
        };
        if name.contains(char::is_whitespace) {
            // The next challenge's scheme: its parameters are not ours.
            break;
        }
        params.push((name, value));
        rest = next.trim_start_matches([',', ' ', '\t']);
    }
    params
}

/// The content of a quoted string (after its opening quote) and what
/// follows its closing quote.
fn quoted_string(text: &str) -> (String, &str) {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            '"' => return (value, &text[i + 1..]),
            _ => value.push(c),
        }
    }
    (value, "")
}

/// An authorization server, as the proxy needs it (stored with the tokens,
/// so that a refresh needs no discovery).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ServerMeta {
    /// The authorization server's issuer.
    #[serde(default)]
    pub issuer: Option<String>,
    /// Where the user signs in.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes, refresh tokens and client credentials become tokens.
    pub token_endpoint: String,
    /// RFC 7591 dynamic client registration.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// RFC 8628 device authorization (`--device-code`).
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
    /// Whether an https URL of a client ID metadata document may serve as
    /// the client id (`--client-metadata-url`).
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// How clients may authenticate at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// PKCE methods (`S256` is required by OAuth 2.1 for MCP).
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    /// The resource's own name for itself (RFC 9728 `resource`).
    #[serde(default)]
    pub resource: Option<String>,
    /// The scopes the resource lists (`scopes_supported` of its metadata).
    #[serde(default)]
    pub resource_scopes: Vec<String>,
}

/// Whether an endpoint may be used: `https`, `http` on loopback, or any
/// `http` when the user allowed it.
pub(crate) fn usable_endpoint(url: &str, allow_http: bool) -> Result<Url, AuthError> {
    let parsed = Url::parse(url).map_err(|_| AuthError::Discovery(format!("bad URL {url:?}")))?;
    let loopback = matches!(parsed.host(), Some(url::Host::Domain("localhost")))
        || matches!(parsed.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
        || matches!(parsed.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback());
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback || allow_http => Ok(parsed),
        _ => Err(AuthError::Discovery(format!(
            "{url} is not https (pass --allow-http to allow plain http)"
        ))),
    }
}

/// Discovers the authorization server of the MCP server at `server`.
pub(crate) async fn discover(
    client: &HttpClient,
    server: &Url,
    challenge: &Challenge,
    allow_http: bool,
) -> Result<ServerMeta, AuthError> {
    let resource = resource_metadata(client, server, challenge, allow_http).await?;
    let issuer = match resource
        .as_ref()
        .and_then(|r| r.get("authorization_servers"))
    {
        Some(Value::Array(servers)) => servers
            .iter()
            .find_map(Value::as_str)
            .ok_or_else(|| AuthError::Discovery("no authorization server listed".into()))?
            .to_owned(),
        // Servers of the 2025-03-26 revision: the MCP server's own origin.
        _ => server.origin().ascii_serialization(),
    };
    let issuer = usable_endpoint(&issuer, allow_http)?;
    let mut meta = authorization_server(client, &issuer).await?;
    if let Some(resource) = resource {
        meta.resource = resource
            .get("resource")
            .and_then(Value::as_str)
            .map(str::to_owned);
        meta.resource_scopes = strings(resource.get("scopes_supported"));
    }
    for endpoint in [
        &meta.authorization_endpoint,
        &meta.registration_endpoint,
        &meta.device_authorization_endpoint,
    ]
    .into_iter()
    .flatten()
    .chain([&meta.token_endpoint])
    {
        usable_endpoint(endpoint, allow_http)?;
    }
    Ok(meta)
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The protected resource metadata: from the challenge's URL, else the
/// well-known URLs for the server's path and for its root; `None` when the
/// server publishes none.
async fn resource_metadata(
    client: &HttpClient,
    server: &Url,
    challenge: &Challenge,
    allow_http: bool,
) -> Result<Option<Value>, AuthError> {
    if let Some(url) = &challenge.resource_metadata {
        let url = usable_endpoint(url, allow_http)?;
        return match get_json(client, &url).await? {
            Some(v) => Ok(Some(v)),
            None => Err(AuthError::Discovery(format!(
                "the resource metadata at {url} cannot be read"
            ))),
        };
    }
    for url in well_known(server, "oauth-protected-resource") {
        if let Some(v) = get_json(client, &url).await? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// The authorization server's metadata (RFC 8414, then OpenID Connect).
async fn authorization_server(client: &HttpClient, issuer: &Url) -> Result<ServerMeta, AuthError> {
    let mut candidates = well_known(issuer, "oauth-authorization-server");
    candidates.extend(well_known(issuer, "openid-configuration"));
    if issuer.path() != "/" {
        let mut appended = issuer.clone();
        let path = format!(
            "{}/.well-known/openid-configuration",
            issuer.path().trim_end_matches('/')
        );
        appended.set_path(&path);
        candidates.push(appended);
    }
    for url in candidates {
        if let Some(v) = get_json(client, &url).await? {
            return serde_json::from_value(v).map_err(|e| {
                AuthError::Discovery(format!("the authorization server metadata at {url}: {e}"))
            });
        }
    }
    Err(AuthError::Discovery(format!(
        "no authorization server metadata for {issuer}"
    )))
}

/// `{origin}/.well-known/{name}{path}`, then `{origin}/.well-known/{name}`
/// when the URL has a path.
fn well_known(base: &Url, name: &str) -> Vec<Url> {
    let path = base.path().trim_end_matches('/');
    let mut urls = Vec::new();
    let mut at = |p: String| {
        let mut url = base.clone();
        url.set_path(&p);
        url.set_query(None);
        url.set_fragment(None);
        urls.push(url);
    };
    at(format!("/.well-known/{name}{path}"));
    if !path.is_empty() {
        at(format!("/.well-known/{name}"));
    }
    urls
}

/// A JSON document; `None` for a `404` (or any answer that is not a JSON
/// object).
async fn get_json(client: &HttpClient, url: &Url) -> Result<Option<Value>, AuthError> {
    let request = Request::builder()
        .method(Method::GET)
        .uri(url.as_str())
        .header(ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .map_err(|_| AuthError::Discovery(format!("bad URL {url}")))?;
    let response = fetch(client, request, url.as_str()).await?;
    if response.status() != StatusCode::OK {
        return Ok(None);
    }
    Ok(serde_json::from_slice::<Value>(response.body())
        .ok()
        .filter(Value::is_object))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_parameters() {
        let c = Challenge::parse(
            r#"Bearer error="invalid_token", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", scope="a b""#,
        );
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("a b"));
    }

    #[test]
    fn quoted_values_unescape_and_other_challenges_are_not_read() {
        let c =
            Challenge::parse(r#"Basic realm="x", Bearer scope="say \"hi\"", error=invalid_token"#);
        assert_eq!(c.scope.as_deref(), Some(r#"say "hi""#));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        let c = Challenge::parse(r#"Bearer scope=a, Basic realm="x""#);
        assert_eq!(c.scope.as_deref(), Some("a"));
        assert_eq!(c.resource_metadata, None);
    }

    #[test]
    fn well_known_urls_insert_the_name_before_the_path() {
        let u = Url::parse("https://as.example/tenant/1").unwrap();
        let got: Vec<String> = well_known(&u, "oauth-authorization-server")
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant/1",
                "https://as.example/.well-known/oauth-authorization-server"
            ]
        );
    }

    #[test]
    fn plain_http_is_for_loopback_or_when_allowed() {
        assert!(usable_endpoint("http://127.0.0.1:9/x", false).is_ok());
        assert!(usable_endpoint("http://localhost:9/x", false).is_ok());
        assert!(usable_endpoint("http://as.example/x", false).is_err());
        assert!(usable_endpoint("http://as.example/x", true).is_ok());
        assert!(usable_endpoint("ftp://as.example/x", true).is_err());
    }
}
