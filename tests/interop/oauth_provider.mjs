// A real OAuth 2.1 / OpenID Connect authorization server for tests/oauth.rs:
// `oidc-provider` on 127.0.0.1 (a free port), with dynamic client
// registration, PKCE, refresh tokens, the client-credentials grant,
// the device authorization grant (RFC 8628), client ID metadata documents,
// introspection, revocation, resource indicators (opaque access tokens for
// the MCP server) and its development login and consent pages.
//
//   node oauth_provider.mjs            # prints "LISTENING <port>" when ready
//
// ACCESS_TTL (seconds, default 3600): the access tokens' lifetime.
// Static clients: `resource-server` / `rs-secret` (introspects tokens) and
// `machine` / `machine-secret` (client credentials).
import http from 'node:http';
import Provider from 'oidc-provider';

const ttl = Number(process.env.ACCESS_TTL || 3600);
const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'resource-server',
      client_secret: 'rs-secret',
      redirect_uris: [],
      response_types: [],
      grant_types: [],
    },
    {
      client_id: 'machine',
      client_secret: 'machine-secret',
      redirect_uris: [],
      response_types: [],
      grant_types: ['client_credentials'],
      scope: 'mcp',
    },
  ],
  scopes: ['openid', 'offline_access', 'mcp'],
  cookies: { keys: ['tower-lro-test-cookie-key'] },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    // Client ID metadata documents, fetched from the test's own https
    // server on loopback (its CA in NODE_EXTRA_CA_CERTS).
    clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: 'mcp',
        audience: resource,
        accessTokenFormat: 'opaque',
        accessTokenTTL: ttl,
      }),
    },
  },
  // Loopback only, in tests: the documents' server is on 127.0.0.1, which
  // the provider's SSRF guard (its dispatcher) would refuse.
  fetch: (url, options) => {
    delete options.dispatcher;
    return fetch(url, options);
  },
  // Every client allowed refresh tokens gets one (no offline_access dance).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: {
    AccessToken: ttl,
    ClientCredentials: ttl,
    RefreshToken: 24 * 3600,
    Grant: 24 * 3600,
    Session: 24 * 3600,
    Interaction: 600,
  },
});
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
provider.on('authorization.error', (_ctx, err) => console.error('authorization.error', err.message, err.error_description || '', err.cause?.message || '', err.cause?.cause?.message || ''));
provider.on('grant.error', (_ctx, err) => console.error('grant.error', err.message, err.error_description || ''));
server.on('request', provider.callback());
console.log(`LISTENING ${port}`);
