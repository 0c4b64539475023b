// The OpenID provider the sign-in tests run (tests/fakes/oidc_server.py starts it): panva's certified
// oidc-provider with a fixed account table, a plain login form, consent given at once, clients registered
// by the tests (POST /_test/clients), a key rotation on demand (POST /_test/rotate), and accounts the tests
// change at the provider (POST /_test/accounts/<login> with {"groups"}, {"removed": true} or
// {"disabled": true}; POST /_test/accounts-reset puts the table back).
// Usage: node server.mjs PORT   (prints "ready <issuer>" once it listens)
import http from 'node:http';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;

const INITIAL_ACCOUNTS = {
  alice: { password: 'alice-pw', email: 'alice@example.com', email_verified: true, name: 'Alice',
           groups: ['engineering', 'loft-admins'] },
  bob: { password: 'bob-pw', email: 'bob@other.example', email_verified: false, name: 'Bob',
         groups: ['sales'] },
  carol: { password: 'carol-pw', email: 'carol@example.com', email_verified: true, name: 'Carol',
           groups: [] },
};
// What the provider knows now: a removed account is gone (its login is refused like a wrong password); a
// disabled one signs in and is sent back to the client with access_denied, as providers that block an
// account after authenticating it do.
let ACCOUNTS = structuredClone(INITIAL_ACCOUNTS);

// One store for every provider instance, so a rotation keeps clients, sessions and codes.
const store = new Map();
class MemoryAdapter {
  constructor(model) { this.model = model; }
  key(id) { return `${this.model}:${id}`; }
  async upsert(id, payload, expiresIn) {
    store.set(this.key(id), { payload, expires: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
    if (payload.grantId) {
      const grantKey = `grant:${payload.grantId}`;
      store.set(grantKey, [...(store.get(grantKey) || []), this.key(id)]);
    }
    if (payload.uid) store.set(`uid:${this.model}:${payload.uid}`, id);
    if (payload.userCode) store.set(`userCode:${this.model}:${payload.userCode}`, id);
  }
  async find(id) {
    const entry = store.get(this.key(id));
    if (!entry || (entry.expires && entry.expires < Date.now())) return undefined;
    return entry.payload;
  }
  async findByUid(uid) { const id = store.get(`uid:${this.model}:${uid}`); return id && this.find(id); }
  async findByUserCode(code) { const id = store.get(`userCode:${this.model}:${code}`); return id && this.find(id); }
  async consume(id) { const entry = store.get(this.key(id)); if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000); }
  async destroy(id) { store.delete(this.key(id)); }
  async revokeByGrantId(grantId) {
    for (const key of store.get(`grant:${grantId}`) || []) store.delete(key);
    store.delete(`grant:${grantId}`);
  }
}

function newKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'RS256' };
}

function makeProvider(key) {
  const provider = new Provider(issuer, {
    adapter: MemoryAdapter,
    jwks: { keys: [key] },
    cookies: { keys: ['agentloft-test-oidc-cookie-key'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username', 'name'],
              groups: ['groups'] },
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, id) {
      const account = ACCOUNTS[id];
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: `sub-${id}`, preferred_username: id, name: account.name, email: account.email,
                   email_verified: account.email_verified, groups: account.groups };
        },
      };
    },
  });
  provider.proxy = false;
  return provider;
}

let provider = makeProvider(newKey());

function page(uid, error) {
  return `<!doctype html><html><head><title>Test provider sign-in</title></head><body>
<h1>Test identity provider</h1>${error ? `<p class="error">${error}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<label>Login <input name="login" autofocus></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in to the test provider</button></form>
<form method="post" action="/interaction/${uid}/abort"><button type="submit">Cancel</button></form>
</body></html>`;
}

async function readBody(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}

async function readForm(req) {
  return new URLSearchParams(await readBody(req));
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (action === 'abort') {
    return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the user cancelled' },
      { mergeWithLastSubmission: false });
  }
  if (details.prompt.name === 'consent') {
    const grant = details.grantId ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } },
      { mergeWithLastSubmission: true });
  }
  if (action !== 'login') {
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end(page(uid));
  }
  const form = await readForm(req);
  const account = ACCOUNTS[form.get('login')];
  if (!account || account.password !== form.get('password')) {
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end(page(uid, 'Wrong login or password'));
  }
  if (account.disabled) {
    return provider.interactionFinished(req, res,
      { error: 'access_denied', error_description: 'the account is disabled' }, { mergeWithLastSubmission: false });
  }
  return provider.interactionFinished(req, res, { login: { accountId: form.get('login') } },
    { mergeWithLastSubmission: false });
}

async function control(req, res, path) {
  if (path === '/_test/clients') {
    const client = JSON.parse(await readBody(req));
    await new MemoryAdapter('Client').upsert(client.client_id, client);
  } else if (path === '/_test/rotate') {
    provider = makeProvider(newKey());
  } else if (path === '/_test/accounts-reset') {
    ACCOUNTS = structuredClone(INITIAL_ACCOUNTS);
  } else if (path.startsWith('/_test/accounts/')) {
    const login = decodeURIComponent(path.slice('/_test/accounts/'.length));
    const change = JSON.parse(await readBody(req));
    if (change.removed) delete ACCOUNTS[login];
    else ACCOUNTS[login] = { ...ACCOUNTS[login], ...change };
  }
  res.writeHead(204);
  res.end();
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    const match = url.pathname.match(/^\/interaction\/([^/]+)(?:\/(login|abort))?$/);
    if (match) return await interaction(req, res, match[1], match[2]);
    if (url.pathname.startsWith('/_test/') && req.method === 'POST') return await control(req, res, url.pathname);
    return provider.callback()(req, res);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(String(err && err.stack || err));
  }
});
server.listen(port, '127.0.0.1', () => console.log(`ready ${issuer}`));
