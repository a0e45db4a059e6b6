//! The device authorization grant (RFC 8628, `--device-code`), for a
//! machine whose user signs in elsewhere (an SSH session, a container): the
//! proxy asks the authorization server for a device code, tells the user
//! (on stderr, and `$BROWSER` when set) where to approve it and with which
//! user code, and polls the token endpoint at the interval the server
//! asks for until the user approved, refused, or the time ran out (the
//! code's life, at most `--auth-timeout`). No callback listener is opened.
//! The client is the static one, or one registered for this grant (kept
//! apart from the browser sign-in's).

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::discovery::{Challenge, ServerMeta, usable_endpoint};
use super::flow::open_browser;
use super::token::{ClientInfo, Tokens, client_request, oauth_error, poll_device_tokens, register};
use super::{Auth, AuthError, DEVICE_CLIENT};
use crate::fetch::fetch;

/// The interval of RFC 8628 when the server names none.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// What `slow_down` adds to the interval (RFC 8628, section 3.5).
const SLOW_DOWN: Duration = Duration::from_secs(5);

/// The device authorization answer (RFC 8628, section 3.2).
#[derive(Debug, Deserialize)]
struct DeviceAuthorization {
    device_code: String,
    user_code: String,
    verification_uri: String,
    #[serde(default)]
    verification_uri_complete: Option<String>,
    expires_in: u64,
    #[serde(default)]
    interval: Option<u64>,
}

/// The device authorization request (RFC 8628, section 3.1).
fn device_request(
    endpoint: &str,
    info: &ClientInfo,
    scope: Option<&str>,
    resource: Option<&str>,
) -> Result<http::Request<http_body_util::Full<bytes::Bytes>>, AuthError> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    if let Some(scope) = scope {
        form.append_pair("scope", scope);
    }
    if let Some(resource) = resource {
        form.append_pair("resource", resource);
    }
    client_request(endpoint, info, form)
}

impl Auth {
    /// A sign-in with a device code: asked for, shown, polled for.
    pub(super) async fn device_sign_in(&self, challenge: &Challenge) -> Result<Tokens, AuthError> {
        let meta = self.server_meta(challenge).await?;
        let endpoint = meta.device_authorization_endpoint.clone().ok_or_else(|| {
            AuthError::Discovery(
                "the authorization server offers no device authorization endpoint (RFC 8628); sign in without --device-code".into(),
            )
        })?;
        let scope = self.scope(&meta, challenge);
        let info = self.device_client(&meta, scope.as_deref()).await?;
        let resource = self.resource(&meta);
        let request = device_request(&endpoint, &info, scope.as_deref(), resource.as_deref())?;
        let response = fetch(&self.client, request, &endpoint).await?;
        if !response.status().is_success() {
            return Err(AuthError::Rejected(format!(
                "the device authorization endpoint answered HTTP {}: {}",
                response.status().as_u16(),
                oauth_error(response.body())
            )));
        }
        let device: DeviceAuthorization = serde_json::from_slice(response.body())
            .map_err(|e| AuthError::Rejected(format!("the device authorization answer: {e}")))?;
        self.show(&device)?;
        let life = Duration::from_secs(device.expires_in).min(self.options.auth_timeout);
        let deadline = Instant::now() + life;
        let mut interval = device
            .interval
            .map_or(DEFAULT_INTERVAL, Duration::from_secs)
            .max(Duration::from_secs(1));
        // Bounded by the deadline: each turn waits the interval first.
        while Instant::now() + interval < deadline {
            tokio::time::sleep(interval).await;
            let polled = poll_device_tokens(
                &self.client,
                &meta,
                &info,
                &device.device_code,
                resource.as_deref(),
            )
            .await?;
            match polled {
                Ok(tokens) => return Ok(tokens),
                Err((code, _)) if code == "authorization_pending" => {}
                Err((code, _)) if code == "slow_down" => interval += SLOW_DOWN,
                Err((code, text)) if code == "access_denied" => {
                    return Err(AuthError::Denied(text));
                }
                Err((_, text)) => {
                    return Err(AuthError::Rejected(format!(
                        "the token endpoint refused the device code: {text}"
                    )));
                }
            }
        }
        Err(AuthError::Timeout("the sign-in with the device code"))
    }

    /// Tells the user where to approve the code: stderr, and the browser
    /// (the URL with the code in it, when the server gives one).
    fn show(&self, device: &DeviceAuthorization) -> Result<(), AuthError> {
        let allow_http = self.options.allow_http;
        let page = usable_endpoint(&device.verification_uri, allow_http)?;
        eprintln!(
            "lro proxy: to sign in, open {page} on any device and enter the code {}",
            device.user_code
        );
        let complete = device
            .verification_uri_complete
            .as_deref()
            .and_then(|u| usable_endpoint(u, allow_http).ok());
        if std::env::var_os("BROWSER").is_some() {
            open_browser(&complete.unwrap_or(page));
        }
        Ok(())
    }

    /// The static client, or the one registered for the device grant
    /// earlier, else a new registration.
    async fn device_client(
        &self,
        meta: &ServerMeta,
        scope: Option<&str>,
    ) -> Result<ClientInfo, AuthError> {
        if let Some(info) = self.known_client() {
            return Ok(info);
        }
        let metadata = self.options.static_client_metadata.as_ref();
        let info = register(&self.client, meta, None, scope, metadata).await?;
        self.store.write(DEVICE_CLIENT, &info)?;
        Ok(info)
    }
}
