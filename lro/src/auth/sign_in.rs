//! The interactive sign-in: the client to use (stored, given or
//! registered), the browser to the authorization endpoint with PKCE, and
//! the code back on the loopback callback, exchanged for tokens.

use super::*;

impl Auth {
    /// The interactive sign-in: the browser to the authorization endpoint,
    /// the code back on the loopback callback, exchanged with its verifier.
    pub(super) async fn sign_in(&self, challenge: &Challenge) -> Result<Tokens, AuthError> {
        let meta = self.server_meta(challenge).await?;
        let options = &self.options;
        let callback = Callback::bind(
            &options.callback_host,
            options.callback_port,
            derived_port(self.store.key()),
            &options.callback_path,
        )
        .await?;
        let scope = self.scope(&meta, challenge);
        let info = self
            .client_for(&meta, &callback.redirect_uri, scope.as_deref())
            .await?;
        let pkce = Pkce::new()?;
        let state = random_text(16)?;
        let url = self.authorize_url(&meta, &info, &callback.redirect_uri, &pkce, &state, scope)?;
        open_browser(&url);
        let (code, mut browser) = tokio::time::timeout(options.auth_timeout, callback.code(&state))
            .await
            .map_err(|_| AuthError::Timeout("the sign-in in the browser"))??;
        let grant = Grant::Code {
            code: &code,
            verifier: &pkce.verifier,
            redirect_uri: &callback.redirect_uri,
        };
        let tokens = self.exchange(&meta, &info, grant).await;
        match (&tokens, &options.success_url) {
            (Ok(_), Some(url)) => flow::redirect(&mut browser, url).await,
            (Ok(_), None) => {
                let done = "Signed in. You can close this window.";
                flow::answer(&mut browser, "200 OK", done).await
            }
            (Err(_), _) => {
                let failed = "The sign-in failed; see the lro proxy's log.";
                flow::answer(&mut browser, "502 Bad Gateway", failed).await
            }
        }
        tokens
    }

    /// The static client, or the registered one when it was registered for
    /// this redirect URI, else a new registration.
    async fn client_for(
        &self,
        meta: &ServerMeta,
        redirect_uri: &str,
        scope: Option<&str>,
    ) -> Result<ClientInfo, AuthError> {
        if let Some(info) = &self.options.static_client_info {
            return serde_json::from_value(info.clone())
                .map_err(|e| AuthError::Config(format!("--static-oauth-client-info: {e}")));
        }
        if let Some(url) = &self.options.client_metadata_url {
            if meta.client_id_metadata_document_supported {
                let info = ClientInfo {
                    client_id: url.clone(),
                    client_secret: None,
                    redirect_uris: vec![redirect_uri.to_owned()],
                    token_endpoint_auth_method: Some("none".to_owned()),
                };
                self.store.write(CLIENT, &info)?;
                return Ok(info);
            }
            tracing::info!(target: "tower_lro", "the authorization server takes no client ID metadata documents; registering instead");
        }
        if let Some(info) = self.store.read::<ClientInfo>(CLIENT)
            && info.redirect_uris.iter().any(|u| u == redirect_uri)
        {
            return Ok(info);
        }
        let info = register(
            &self.client,
            meta,
            Some(redirect_uri),
            scope,
            self.options.static_client_metadata.as_ref(),
        )
        .await?;
        self.store.write(CLIENT, &info)?;
        Ok(info)
    }

    /// The authorization request's URL.
    fn authorize_url(
        &self,
        meta: &ServerMeta,
        info: &ClientInfo,
        redirect_uri: &str,
        pkce: &Pkce,
        state: &str,
        scope: Option<String>,
    ) -> Result<Url, AuthError> {
        let endpoint = meta.authorization_endpoint.as_deref().ok_or_else(|| {
            AuthError::Discovery("the authorization server has no authorization endpoint".into())
        })?;
        let mut url = usable_endpoint(endpoint, self.options.allow_http)?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &info.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", state);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
            if let Some(resource) = self.resource(meta) {
                query.append_pair("resource", &resource);
            }
            for (k, v) in &self.options.authorize_params {
                query.append_pair(k, v);
            }
        }
        Ok(url)
    }
}
