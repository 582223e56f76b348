// The TypeScript SDK's example server with its demo authorization server
// (examples/server/simpleStreamableHttp.js --oauth of the pinned
// @modelcontextprotocol/sdk), run as it is, but for one thing the demo
// leaves out: its in-memory provider issues no refresh token
// (exchangeRefreshToken throws "Not implemented for example demo"). Here its
// provider class gains the refresh grant — a refresh token with every
// token, rotated at every use, refused (invalid_grant) once spent — so the
// harness's refresh is tried against the SDK's own token endpoint, client
// authentication and bearer middleware. Everything else is the SDK's.
//
//   node sdk-oauth-refresh.mjs <the SDK's dist/esm/examples/server folder>
//
// MCP_PORT and MCP_AUTH_PORT as for the example. Each refresh prints
// "refresh-grant <n>" on stdout.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const examples = process.argv[2];
const load = (rel) => import(pathToFileURL(path.join(examples, rel)).href);
const { DemoInMemoryAuthProvider } = await load('demoInMemoryOAuthProvider.js');
const { InvalidGrantError } = await load('../../server/auth/errors.js');

const P = DemoInMemoryAuthProvider.prototype;
const exchangeCode = P.exchangeAuthorizationCode;
let grants = 0;

function issueRefresh(provider, clientId, access) {
  provider.refreshTokens ??= new Map();
  const rt = randomUUID();
  provider.refreshTokens.set(rt, { clientId, scopes: access.scopes, resource: access.resource });
  return rt;
}

P.exchangeAuthorizationCode = async function (client, code, verifier) {
  const t = await exchangeCode.call(this, client, code, verifier);
  const access = this.tokens.get(t.access_token);
  return { ...t, refresh_token: issueRefresh(this, client.client_id, access) };
};

P.exchangeRefreshToken = async function (client, refreshToken, _scopes, _resource) {
  const r = this.refreshTokens?.get(refreshToken);
  if (!r || r.clientId !== client.client_id) {
    throw new InvalidGrantError('the refresh token is unknown or was spent');
  }
  this.refreshTokens.delete(refreshToken); // rotated: spent
  const token = randomUUID();
  const access = { token, clientId: client.client_id, scopes: r.scopes, expiresAt: Date.now() + 3600000, resource: r.resource, type: 'access' };
  this.tokens.set(token, access);
  grants++;
  console.log(`refresh-grant ${grants}`);
  return { access_token: token, token_type: 'bearer', expires_in: 3600, scope: r.scopes.join(' '), refresh_token: issueRefresh(this, client.client_id, access) };
};

process.argv.push('--oauth');
await load('simpleStreamableHttp.js');
