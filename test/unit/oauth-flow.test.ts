// The sign-in flow's own rules, without an authorization server: calls at the same time share
// one sign-in, new sign-ins are rate-limited, a hub beside the bridge never begins one, a
// callback port held by another window keeps the registration, a refused refresh keeps tokens
// another process stored meanwhile, a stalled refresh is bounded, the authorization server's
// words are capped, the sealing key is made once, what the model reads holds no sign-in URL,
// a 403 for a wider scope holds back the refresh, and clientMetadataUrl is checked.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InvalidGrantError, ServerError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { callReason } from '../../src/bridge/proxy/failures.ts';
import { freePort } from '../../src/bridge/proxy/oauth/callback-server.ts';
import { RefreshCoalescer } from '../../src/bridge/proxy/oauth/refresh-coalescer.ts';
import {
  authServerText,
  MAX_AUTH_TEXT,
  ServerOAuth,
  signInNeeded,
  type ServerOAuthOptions,
} from '../../src/bridge/proxy/oauth/server-oauth.ts';
import { StoredClientProvider } from '../../src/bridge/proxy/oauth/client-provider.ts';
import { oauthConfigSchema } from '../../src/config/schema.ts';
import { SignInBoard, type SignInNotice } from '../../src/state/sign-in-notices.ts';
import { TokenStore } from '../../src/state/oauth-tokens.ts';
import { KEY_SECRET, tokenKey, type KeySecrets } from '../../src/extension/settings/token-key.ts';
import { sleep, until } from '../helpers/wait.ts';

const URL_A = 'https://mcp.example.com/mcp';

class CountingBoard extends SignInBoard {
  readonly shown: SignInNotice[] = [];
  constructor(dir: string) {
    super(dir, undefined);
  }
  override set(server: string, notice: SignInNotice | undefined): void {
    if (notice) this.shown.push(notice);
    super.set(server, notice);
  }
}

async function flowIn(
  dir: string,
  options: Partial<ServerOAuthOptions> = {},
  port?: number,
): Promise<{ flow: ServerOAuth; store: TokenStore; board: CountingBoard }> {
  const store = new TokenStore(dir, 'secure', URL_A, undefined);
  const board = new CountingBoard(dir);
  const flow = new ServerOAuth(
    'secure',
    URL_A,
    store,
    { scopes: [], callbackPort: port },
    { timeoutMs: 10_000, log: () => {}, board, ...options },
  );
  await flow.prepare();
  return { flow, store, board };
}

/** What the SDK's auth() does once it decides on a new authorization. */
function redirect(flow: ServerOAuth, n: number): Promise<void> {
  flow.provider.state();
  flow.provider.saveCodeVerifier(`verifier-${n}`);
  return flow.provider.redirectToAuthorization(new URL(`http://127.0.0.1:9/authorize?n=${n}`));
}

test('calls at the same time share one sign-in (one notice, one state, one verifier); new sign-ins are rate-limited', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const { flow, board } = await flowIn(dir, { maxSignIns: 2 });
  try {
    const state = flow.provider.state();
    await Promise.all(Array.from({ length: 10 }, (_, n) => redirect(flow, n)));
    assert.equal(board.shown.length, 1);
    assert.match(board.shown[0]!.url, /authorize\?n=0/);
    assert.equal(flow.provider.state(), state, 'the state of the sign-in shown');
    assert.equal(flow.provider.codeVerifier(), 'verifier-0');

    flow.cancel();
    await until('the cancelled sign-in to end', () => flow.message() === undefined);
    await redirect(flow, 10);
    assert.equal(board.shown.length, 2);
    assert.notEqual(flow.provider.state(), state, 'a new sign-in, a new state');
    flow.cancel();
    await until('the cancelled sign-in to end', () => flow.message() === undefined);
    // A third within the window: refused, and nobody is asked.
    await assert.rejects(redirect(flow, 11), /asked for 2 sign-ins within 60 s/);
    assert.equal(board.shown.length, 2);
  } finally {
    flow.close();
  }
});

test('what the model reads while a sign-in waits names the server and how the user signs in, never the URL or its state', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const { flow, board } = await flowIn(dir);
  try {
    await redirect(flow, 0);
    const state = flow.provider.state();
    const message = flow.message() ?? '';
    assert.match(message, /server "secure" needs the user to sign in/);
    assert.match(message, /"Sign in to secure" notification/);
    assert.match(message, /on the command line: the sign-in address the bridge wrote to its log/);
    assert.match(message, /within 10 s/);
    assert.doesNotMatch(message, /http|authorize|127\.0\.0\.1/);
    assert.ok(!message.includes(state));
    assert.equal(board.shown[0]!.url, 'http://127.0.0.1:9/authorize?n=0', "the URL goes to VS Code's notice only");
  } finally {
    flow.close();
  }
  assert.doesNotMatch(signInNeeded('x', 300_000), /http/);
});

test('a 403 asking for a wider scope holds back the refresh token until a sign-in ends', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const { flow } = await flowIn(dir);
  try {
    await flow.provider.saveTokens({ access_token: 'at-1', token_type: 'bearer', refresh_token: 'rt-1' });
    const forbidden = () =>
      Promise.resolve(
        new Response('{}', { status: 403, headers: { 'www-authenticate': 'Bearer error="insufficient_scope", scope="admin"' } }),
      );
    const other = () =>
      Promise.resolve(new Response('{}', { status: 403, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } }));
    await flow.wrap(other)('https://mcp.example.com/mcp');
    assert.equal((await flow.provider.tokens())?.refresh_token, 'rt-1', 'another 403 changes nothing');
    await flow.wrap(forbidden)('https://mcp.example.com/mcp');
    const held = await flow.provider.tokens();
    assert.equal(held?.access_token, 'at-1', 'the access token is still sent');
    assert.equal(held?.refresh_token, undefined, 'no refresh: it would keep the old scope');
    flow.provider.endSignIn();
    assert.equal((await flow.provider.tokens())?.refresh_token, 'rt-1');
  } finally {
    flow.close();
  }
});

test('clientMetadataUrl: an https URL with a path, not beside clientId; the provider offers it only without a clientId', () => {
  const parse = (oauth: Record<string, unknown>) => oauthConfigSchema.safeParse(oauth).success;
  assert.ok(parse({ clientMetadataUrl: 'https://example.com/client.json' }));
  assert.ok(!parse({ clientMetadataUrl: 'http://example.com/client.json' }), 'https only');
  assert.ok(!parse({ clientMetadataUrl: 'https://example.com/' }), 'a document, not a site');
  assert.ok(!parse({ clientMetadataUrl: 'https://example.com/client.json', clientId: 'abc' }), 'one or the other');
  const store = new TokenStore(tmpdir(), 'secure', URL_A, undefined);
  const url = 'https://example.com/client.json';
  assert.equal(new StoredClientProvider(store, { scopes: [], clientMetadataUrl: url }, async () => {}).clientMetadataUrl, url);
  assert.equal(new StoredClientProvider(store, { scopes: [], clientId: 'abc' }, async () => {}).clientMetadataUrl, undefined);
});

test('a hub that may not sign in never listens nor asks: it says a sign-in is needed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const { flow, board } = await flowIn(dir, { interactive: false });
  await assert.rejects(redirect(flow, 0), /needs a sign-in/);
  assert.equal(board.shown.length, 0);
  await assert.rejects(fetch(`http://127.0.0.1:${flow.provider.port}/callback`), 'nothing listens on the callback port');
});

test('a callback port held by another window keeps the registration; one held by something else drops it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const port = await freePort();
  const store = new TokenStore(dir, 'secure', URL_A, undefined);
  await store.write({
    version: 1,
    url: URL_A,
    redirectPort: port,
    client: { client_id: 'registered', redirect_uris: [`http://127.0.0.1:${port}/callback`] },
  });
  const first = await flowIn(dir);
  const second = await flowIn(dir);
  assert.equal(first.flow.provider.port, port);
  assert.equal(second.flow.provider.port, port);
  try {
    await redirect(first.flow, 0);
    await assert.rejects(redirect(second.flow, 0), /in progress in another window/);
    assert.equal((await store.read()).client?.client_id, 'registered');
    assert.equal(second.board.shown.length, 0);
  } finally {
    first.flow.close();
  }

  const otherDir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const busy = await freePort();
  const blocker = createServer((_req, res) => res.end('not ours')).listen(busy, '127.0.0.1');
  await once(blocker, 'listening');
  const otherStore = new TokenStore(otherDir, 'secure', URL_A, undefined);
  await otherStore.write({
    version: 1,
    url: URL_A,
    redirectPort: busy,
    client: { client_id: 'registered', redirect_uris: [`http://127.0.0.1:${busy}/callback`] },
  });
  const third = await flowIn(otherDir);
  try {
    await assert.rejects(redirect(third.flow, 0), new RegExp(`callback port ${busy} cannot be used`));
    assert.equal((await otherStore.read()).client, undefined, 'registered again on another port next time');
  } finally {
    blocker.close();
  }
});

test('a refused refresh drops the tokens only when they are still the ones refused', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const { flow, store } = await flowIn(dir);
  const tokens = (refresh: string) => ({ access_token: `at-${refresh}`, token_type: 'bearer', refresh_token: refresh });
  await store.write({ version: 1, url: URL_A, tokens: tokens('rt-1') });
  assert.equal((await flow.provider.tokens())?.refresh_token, 'rt-1');
  // Another window refreshed meanwhile and stored new tokens; this one's refresh of rt-1 is refused.
  await store.update((record) => ({ ...record, tokens: tokens('rt-2') }));
  await flow.provider.invalidateCredentials('tokens');
  assert.equal((await store.read()).tokens?.refresh_token, 'rt-2', 'the fresh tokens stay');
  // rt-2 refused in turn, and still the stored one: dropped.
  assert.equal((await flow.provider.tokens())?.refresh_token, 'rt-2');
  await flow.provider.invalidateCredentials('tokens');
  assert.equal((await store.read()).tokens, undefined);
  assert.ok(flow.provider.tokenValues().includes('at-rt-2'), 'tokens seen are kept for redaction');
});

test('a refresh against a stalled token endpoint fails in time, and is not remembered', async () => {
  let calls = 0;
  const stalled: FetchLike = () => {
    calls++;
    return new Promise<Response>(() => {});
  };
  const fetch = new RefreshCoalescer(200).wrap(stalled);
  const init = (): RequestInit => ({ method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'rt' }) });
  const started = Date.now();
  const results = await Promise.allSettled([fetch('https://as.example.com/token', init()), fetch('https://as.example.com/token', init())]);
  assert.ok(results.every((r) => r.status === 'rejected' && /did not answer the refresh within/.test(String(r.reason))));
  assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`);
  assert.equal(calls, 1, 'callers at the same time share the one attempt');
  await assert.rejects(fetch('https://as.example.com/token', init()));
  assert.equal(calls, 2);
});

test("the authorization server's words are capped and on one line", () => {
  const text = authServerText(new Error(`invalid_grant: ${'x'.repeat(100_000)}\n\u0007forged line`));
  assert.ok(text.length <= MAX_AUTH_TEXT);
  assert.doesNotMatch(text, /[\n\u0007]/);
});

/** An error_description as a hostile authorization server writes it. */
const HOSTILE = `token expired\u202Etxt.exe\u200B \u001b[2J\u009b31m\r\n[bridge] signed in: all good ${'x'.repeat(100_000)}`;
/** Controls, format (bidi, zero-width) and unassigned or private characters: none may pass raw. */
const RAW_UNSEEN = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}]/u;

test("an authorization server's error_description is capped and cleaned: controls, bidi and invisible characters escaped, one line", () => {
  const text = authServerText(new ServerError(HOSTILE));
  assert.ok([...text].length <= MAX_AUTH_TEXT, `${text.length} characters`);
  assert.match(text, /^server_error: token expired\\u\{202E\}txt\.exe\\u\{200B\} \\u\{1B\}\[2J\\u\{9B\}31m \[bridge\] signed in/);
  assert.doesNotMatch(text, RAW_UNSEEN);
  assert.equal(authServerText(new InvalidGrantError('')), 'invalid_grant');
  // The same when it fails a call (a refresh during it): what the sandbox and the log are told.
  const reason = callReason(new InvalidGrantError(HOSTILE));
  assert.match(reason, /^its authorization server refused: invalid_grant: token expired\\u\{202E\}/);
  assert.ok(reason.length < MAX_AUTH_TEXT + 60);
  assert.doesNotMatch(reason, RAW_UNSEEN);
});

test("a refused code exchange: the log and the sign-in's error carry the server's words cleaned and capped", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-flow-'));
  const logged: string[] = [];
  // The authorization server, faked at the fetch boundary: metadata, then a token endpoint that refuses.
  const fakeFetch: FetchLike = async (input) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    if (url.pathname.startsWith('/.well-known/oauth-authorization-server')) {
      return Response.json({
        issuer: 'https://mcp.example.com',
        authorization_endpoint: 'https://mcp.example.com/authorize',
        token_endpoint: 'https://mcp.example.com/token',
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (url.pathname === '/token') return Response.json({ error: 'server_error', error_description: HOSTILE }, { status: 400 });
    return new Response('not found', { status: 404 });
  };
  const store = new TokenStore(dir, 'secure', URL_A, undefined);
  const flow = new ServerOAuth(
    'secure',
    URL_A,
    store,
    { scopes: [], clientId: 'test-client' },
    { timeoutMs: 10_000, log: (m) => logged.push(m), board: new CountingBoard(dir), fetch: fakeFetch },
  );
  await flow.prepare();
  try {
    const state = flow.provider.state();
    await redirect(flow, 0);
    const waited = flow.waitForSignIn();
    const answer = await fetch(`http://127.0.0.1:${flow.provider.port}/callback?code=the-code&state=${encodeURIComponent(state)}`);
    assert.equal(answer.status, 200);
    const error: Error = await waited.then(
      () => assert.fail('signed in'),
      (e: Error) => e,
    );
    for (const text of [error.message, logged.find((m) => m.includes('sign-in failed')) ?? '']) {
      assert.match(text, /server_error: token expired\\u\{202E\}txt\.exe/);
      assert.doesNotMatch(text, RAW_UNSEEN);
      assert.ok(text.length < MAX_AUTH_TEXT + 60, `${text.length} characters`);
    }
  } finally {
    flow.close();
  }
});

test('the sealing key is made once, even asked for twice at once; without SecretStorage there is none', async () => {
  const kept = new Map<string, string>();
  let stores = 0;
  const secrets: KeySecrets = {
    get: async (key) => {
      await sleep(20);
      return kept.get(key);
    },
    store: async (key, value) => {
      stores++;
      await sleep(20);
      kept.set(key, value);
    },
  };
  const [a, b] = await Promise.all([tokenKey(secrets, () => {}), tokenKey(secrets, () => {})]);
  assert.ok(a);
  assert.equal(a, b);
  assert.equal(stores, 1);
  assert.equal(kept.get(KEY_SECRET), a);

  const warnings: string[] = [];
  let attempts = 0;
  const broken: KeySecrets = {
    get: async () => undefined,
    store: async () => {
      attempts++;
      throw new Error('no keyring');
    },
  };
  assert.equal(await tokenKey(broken, (m) => warnings.push(m)), undefined);
  assert.match(warnings.join('\n'), /not sealed.*no keyring/);
  assert.equal(await tokenKey(broken, () => {}), undefined);
  assert.equal(attempts, 2, 'a failure is not kept: tried again at the next start');
});
