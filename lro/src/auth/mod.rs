//! OAuth 2.1 for MCP, as the specification's authorization section
//! describes it, for the proxy's requests to a protected server:
//!
//! 1. a `401` names the protected resource metadata (RFC 9728), which names
//!    the authorization server, whose metadata (RFC 8414 or OpenID Connect
//!    discovery) gives its endpoints (`discovery`);
//! 2. the proxy registers itself (RFC 7591) or uses the static client
//!    information it was given (`token`);
//! 3. the user signs in in a browser: authorization code with PKCE, the
//!    redirect taken by a listener on `127.0.0.1` (`flow`); or approves a
//!    device code on any device (`device`, RFC 8628); machines use the
//!    client-credentials grant instead;
//! 4. tokens are stored per server in a private directory (`store`) and
//!    renewed silently with the refresh token; a `401` with a token renews
//!    it, or signs in again when the renewal is refused.
//!
//! Instances for the same server share the tokens: the one that signs in
//! holds the server's lock file, the others wait for it and then use what
//! it stored (no second browser, no fight over the callback port).

mod device;
mod discovery;
mod flow;
mod sign_in;
mod store;
mod token;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use http::HeaderValue;
use http::header::HeaderMap;
use serde_json::Value;
use url::Url;

pub(crate) use store::default_dir;

use crate::fetch::{FetchError, HttpClient};
use discovery::{Challenge, ServerMeta, discover, usable_endpoint};
use flow::{Callback, Pkce, derived_port, open_browser, random_text};
use store::{TokenStore, key_of};
use token::{ClientInfo, Grant, Tokens, register, request_tokens};

/// The stored tokens.
const TOKENS: &str = "tokens";
/// The dynamically registered client.
const CLIENT: &str = "client_info";
/// The client registered for the device authorization grant.
const DEVICE_CLIENT: &str = "device_client_info";
/// The authorization server's metadata.
const SERVER: &str = "server";
/// How much longer than a sign-in a waiting instance waits for the lock.
const LOCK_MARGIN: Duration = Duration::from_secs(30);

/// How the proxy signs in to a protected server.
#[derive(Debug, Clone)]
pub(crate) struct AuthOptions {
    /// Where tokens are stored (default: [`default_dir`]).
    pub store_dir: PathBuf,
    /// The host name of the redirect URI (the listener is always on
    /// `127.0.0.1`).
    pub callback_host: String,
    /// The callback port, used exactly (default: one derived from the
    /// server, or one of the 7 after it when taken).
    pub callback_port: Option<u16>,
    /// The callback path (default `/oauth/callback`).
    pub callback_path: String,
    /// How long the user has to sign in.
    pub auth_timeout: Duration,
    /// The RFC 8707 resource indicator (default: the resource's metadata,
    /// else the server URL).
    pub resource: Option<String>,
    /// Whether the resource indicator is sent at all.
    pub send_resource: bool,
    /// Extra parameters of the authorization request.
    pub authorize_params: Vec<(String, String)>,
    /// A pre-registered client (`client_id`, `client_secret`, ...): no
    /// dynamic registration.
    pub static_client_info: Option<Value>,
    /// Merged over the registration's client metadata (e.g. `scope`).
    pub static_client_metadata: Option<Value>,
    /// The client-credentials grant (machines: no user, no browser).
    pub client_credentials: bool,
    /// The device authorization grant (RFC 8628): the user approves a code
    /// on another device; no callback listener.
    pub device_code: bool,
    /// The https URL of the proxy's client ID metadata document, its
    /// client id where the authorization server takes such documents
    /// (else the proxy registers, as without it).
    pub client_metadata_url: Option<String>,
    /// A known token endpoint (client credentials only): no discovery.
    pub token_endpoint: Option<String>,
    /// Sends the OpenID Connect ID token instead of the access token.
    pub use_id_token: bool,
    /// Where the browser goes after a successful sign-in.
    pub success_url: Option<String>,
    /// Plain `http` allowed for non-loopback endpoints.
    pub allow_http: bool,
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions {
            store_dir: default_dir(),
            callback_host: "127.0.0.1".into(),
            callback_port: None,
            callback_path: "/oauth/callback".into(),
            auth_timeout: Duration::from_secs(30),
            resource: None,
            send_resource: true,
            authorize_params: Vec::new(),
            static_client_info: None,
            static_client_metadata: None,
            client_credentials: false,
            device_code: false,
            client_metadata_url: None,
            token_endpoint: None,
            use_id_token: false,
            success_url: None,
            allow_http: false,
        }
    }
}

/// Why signing in or renewing a token failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthError {
    /// The authorization server or its metadata cannot be found or used.
    #[error("discovery: {0}")]
    Discovery(String),
    /// The client could not be registered.
    #[error("client registration: {0}")]
    Registration(String),
    /// The token endpoint refused the grant.
    #[error("{0}")]
    Rejected(String),
    /// The user or the server refused the sign-in.
    #[error("sign-in refused: {0}")]
    Denied(String),
    /// The callback listener failed.
    #[error("callback: {0}")]
    Callback(String),
    /// Something did not happen in time.
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
    /// The token directory cannot be used.
    #[error("token store: {0}")]
    Store(String),
    /// Static client information or options that cannot be used.
    #[error("{0}")]
    Config(String),
    /// An endpoint cannot be reached or did not answer.
    #[error("{0}")]
    Unreachable(String),
}

impl From<FetchError> for AuthError {
    fn from(e: FetchError) -> Self {
        AuthError::Unreachable(e.to_string())
    }
}

/// The sign-in state of one proxy run.
pub(crate) struct Auth {
    options: AuthOptions,
    client: HttpClient,
    server: Url,
    store: TokenStore,
    /// The `Authorization` value sent now.
    bearer: Mutex<Option<HeaderValue>>,
    /// One renewal at a time within this process.
    renewing: tokio::sync::Mutex<()>,
}

impl Auth {
    /// The sign-in state for `server`, with the tokens stored for it (the
    /// key covers the URL, the resource, the headers and extra parameters).
    pub(crate) fn new(
        options: AuthOptions,
        server: &str,
        headers: &HeaderMap,
        client: HttpClient,
    ) -> Result<Auth, AuthError> {
        let url = Url::parse(server).map_err(|_| AuthError::Config(format!("bad URL {server}")))?;
        let mut options = options;
        if let Some(success) = &options.success_url {
            // Written into a `Location` header: its parsed, encoded form.
            let parsed = usable_endpoint(success, options.allow_http)
                .map_err(|_| AuthError::Config(format!("--auth-success-url {success:?}: expected an https URL (http on loopback, or with --allow-http)")))?;
            options.success_url = Some(parsed.to_string());
        }
        let mut parts: Vec<String> = vec![server.to_owned()];
        parts.push(options.resource.clone().unwrap_or_default());
        let mut named: Vec<String> = headers
            .iter()
            .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
            .collect();
        named.sort();
        parts.extend(named);
        parts.extend(
            options
                .authorize_params
                .iter()
                .map(|(k, v)| format!("{k}={v}")),
        );
        parts.push(options.token_endpoint.clone().unwrap_or_default());
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let store = TokenStore::new(options.store_dir.clone(), key_of(&refs));
        let auth = Auth {
            options,
            client,
            server: url,
            store,
            bearer: Mutex::new(None),
            renewing: tokio::sync::Mutex::new(()),
        };
        if let Some(tokens) = auth.store.read::<Tokens>(TOKENS) {
            auth.set(&tokens);
        }
        Ok(auth)
    }

    /// How long a sign-in may take.
    pub(crate) fn sign_in_time(&self) -> Duration {
        self.options.auth_timeout
    }

    /// The `Authorization` header value to send, when there is a token.
    pub(crate) fn bearer(&self) -> Option<HeaderValue> {
        self.bearer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set(&self, tokens: &Tokens) {
        let token = match (&tokens.id_token, self.options.use_id_token) {
            (Some(id), true) => id,
            _ => &tokens.access_token,
        };
        let value = HeaderValue::from_str(&format!("Bearer {token}")).ok();
        *self.bearer.lock().unwrap_or_else(|e| e.into_inner()) = value;
    }

    /// Before the first request: an expired stored token is renewed, and a
    /// machine (client credentials) gets its token without waiting for a
    /// `401`.
    pub(crate) async fn prepare(&self) -> Result<(), AuthError> {
        let stored = self.store.read::<Tokens>(TOKENS);
        let due = match &stored {
            Some(tokens) => tokens.expired(),
            None => self.options.client_credentials,
        };
        if due {
            self.renew(None, self.bearer().as_ref()).await?;
        }
        Ok(())
    }

    /// After a `401` to a request that carried `failed` (`None`: no token):
    /// a new token, by refresh, client credentials or sign-in. Nothing is
    /// done when another request has renewed the token meanwhile.
    pub(crate) async fn renew(
        &self,
        challenge: Option<&str>,
        failed: Option<&HeaderValue>,
    ) -> Result<(), AuthError> {
        let _one = self.renewing.lock().await;
        if self.bearer().as_ref() != failed {
            return Ok(());
        }
        let _lock = self
            .store
            .lock(self.options.auth_timeout + LOCK_MARGIN)
            .await?;
        // Another instance may have signed in while this one waited.
        let stored = self.store.read::<Tokens>(TOKENS);
        if let Some(tokens) = &stored {
            self.set(tokens);
            if !tokens.expired() && self.bearer().as_ref() != failed {
                return Ok(());
            }
        }
        let challenge = challenge.map(Challenge::parse).unwrap_or_default();
        let tokens = self.obtain(&challenge, stored).await?;
        self.store.write(TOKENS, &tokens)?;
        self.set(&tokens);
        Ok(())
    }

    /// New tokens: by the refresh token when there is one and the server
    /// takes it, else by client credentials or an interactive sign-in.
    async fn obtain(
        &self,
        challenge: &Challenge,
        old: Option<Tokens>,
    ) -> Result<Tokens, AuthError> {
        let refresh = old.and_then(|t| t.refresh_token);
        let meta = self.store.read::<ServerMeta>(SERVER);
        let info = self.known_client();
        if let (Some(refresh), Some(meta), Some(info)) = (&refresh, &meta, &info) {
            let grant = Grant::Refresh(refresh);
            match self.exchange(meta, info, grant).await {
                Ok(tokens) => return Ok(tokens),
                Err(AuthError::Rejected(why)) => {
                    tracing::warn!(target: "tower_lro", "the refresh token was refused ({why}); signing in again");
                    self.store.remove(TOKENS);
                }
                Err(e) => return Err(e),
            }
        }
        if self.options.client_credentials {
            return self.machine_tokens(challenge).await;
        }
        if self.options.device_code {
            return self.device_sign_in(challenge).await;
        }
        self.sign_in(challenge).await
    }

    /// `grant` exchanged at the token endpoint, with the resource indicator.
    async fn exchange(
        &self,
        meta: &ServerMeta,
        info: &ClientInfo,
        grant: Grant<'_>,
    ) -> Result<Tokens, AuthError> {
        let resource = self.resource(meta);
        request_tokens(&self.client, meta, info, grant, resource.as_deref()).await
    }

    /// The static client, or the one registered earlier.
    fn known_client(&self) -> Option<ClientInfo> {
        match &self.options.static_client_info {
            Some(info) => serde_json::from_value(info.clone()).ok(),
            None if self.options.device_code => self.store.read(DEVICE_CLIENT),
            None => self.store.read(CLIENT),
        }
    }

    /// The RFC 8707 resource indicator, unless turned off.
    fn resource(&self, meta: &ServerMeta) -> Option<String> {
        if !self.options.send_resource {
            return None;
        }
        self.options
            .resource
            .clone()
            .or_else(|| meta.resource.clone())
            .or_else(|| Some(self.server.to_string()))
    }

    /// The scope asked for: the static metadata's, the challenge's, or all
    /// the resource lists.
    fn scope(&self, meta: &ServerMeta, challenge: &Challenge) -> Option<String> {
        let configured = self
            .options
            .static_client_metadata
            .as_ref()
            .and_then(|m| m.get("scope"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        configured
            .or_else(|| challenge.scope.clone())
            .or_else(|| (!meta.resource_scopes.is_empty()).then(|| meta.resource_scopes.join(" ")))
    }

    /// The authorization server, discovered (and stored for refreshes).
    async fn server_meta(&self, challenge: &Challenge) -> Result<ServerMeta, AuthError> {
        if let Some(endpoint) = &self.options.token_endpoint {
            usable_endpoint(endpoint, self.options.allow_http)?;
            return Ok(ServerMeta {
                token_endpoint: endpoint.clone(),
                ..ServerMeta::default()
            });
        }
        let meta = discover(
            &self.client,
            &self.server,
            challenge,
            self.options.allow_http,
        )
        .await?;
        self.store.write(SERVER, &meta)?;
        Ok(meta)
    }

    /// The client-credentials grant with the static client information.
    async fn machine_tokens(&self, challenge: &Challenge) -> Result<Tokens, AuthError> {
        let info = self.known_client().ok_or_else(|| {
            AuthError::Config(
                "--client-credentials needs --static-oauth-client-info with client_id and client_secret"
                    .into(),
            )
        })?;
        let meta = self.server_meta(challenge).await?;
        let scope = self.scope(&meta, challenge);
        let grant = Grant::ClientCredentials {
            scope: scope.as_deref(),
        };
        self.exchange(&meta, &info, grant).await
    }
}
