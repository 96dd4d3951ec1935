// OAuth for proxied HTTP servers, end to end on loopback: a protected MCP server built from the
// SDK's server-side auth pieces (test/fixtures/oauth-server.ts), the bridge's hub (and the real
// bridge process with a podman sandbox) on the client side, over Streamable HTTP and (sign-in and
// step-up) the legacy SSE transport, the browser step scripted (the test follows the
// authorization URL's redirect to the bridge's loopback callback).
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { freePort } from '../../src/bridge/proxy/oauth/callback-server.ts';
import { signOut } from '../../src/bridge/proxy/oauth/sign-out.ts';
import { newTokenKey, parseTokenKey, tokenFile } from '../../src/state/oauth-tokens.ts';
import { configSchema } from '../../src/config/schema.ts';
import { startBridge, startHttpFixture, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { sleep } from '../helpers/wait.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

const FIXTURE = fixtureProgram('oauth');
const BRIDGE = resolve('dist/cli.js');

interface Fixture {
  url: string;
  origin: string;
  child: ChildProcess;
  stats(): Promise<Record<string, number>>;
  tokens(): Promise<{ access: string[]; refresh: string[] }>;
  post(path: string): Promise<void>;
}

async function startFixture(env: Record<string, string> = {}): Promise<Fixture> {
  const child = spawn(process.execPath, [FIXTURE], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((ok, fail) => {
    createInterface({ input: child.stdout }).once('line', (line) => ok(line.trim()));
    child.once('exit', (code) => fail(new Error(`oauth fixture exited (${code})`)));
  });
  const origin = new URL(url).origin;
  return {
    url,
    origin,
    child,
    stats: async () => (await (await fetch(`${origin}/test/stats`)).json()) as Record<string, number>,
    tokens: async () => (await (await fetch(`${origin}/test/tokens`)).json()) as { access: string[]; refresh: string[] },
    post: async (path) => void (await fetch(`${origin}/test/${path}`, { method: 'POST' })).body?.cancel(),
  };
}

const URL_LINE = /open this URL in a browser: (\S+)/g;

/** The latest sign-in URL in the text (the bridge's log), once there are more than `seen`. */
async function signInUrl(text: () => string, seen = 0, timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const urls = [...text().matchAll(URL_LINE)].map((m) => m[1]!);
    if (urls.length > seen) return urls.at(-1)!;
    await sleep(50);
  }
  throw new Error(`no sign-in URL in:\n${text()}`);
}

/** The browser: the authorization server approves at once and redirects to the bridge's callback. */
async function browse(authorizationUrl: string): Promise<Response> {
  const answer = await fetch(authorizationUrl, { redirect: 'manual' });
  assert.equal(answer.status, 302, await answer.text());
  const location = answer.headers.get('location')!;
  assert.match(location, /^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
  return fetch(location);
}

function hubFor(url: string, stateDir: string, logs: string[], extra: Record<string, unknown> = {}, tokenKey?: Buffer): ProxyHub {
  const config = configSchema.parse({ stateDir, servers: { secure: { url, ...extra } } });
  return new ProxyHub({ ...config, tokenKey }, { stateDir, log: (line) => logs.push(line) });
}

const never = () => new AbortController().signal;

/** Every file under dir except the token files, as one text. */
async function stateText(dir: string): Promise<string> {
  let text = '';
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || entry.parentPath.endsWith('oauth')) continue;
    // A temporary file of an atomic write may be renamed away between the listing and the read.
    text += await readFile(join(entry.parentPath, entry.name), 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return '';
      throw error;
    });
  }
  return text;
}

describe('OAuth sign-in through the hub', () => {
  let fixture: Fixture;
  let stateDir: string;

  before(async () => {
    fixture = await startFixture();
    stateDir = await tempDir('cem-oauth-');
  });
  after(() => fixture.child.kill());

  test('first connect asks for a sign-in; a wrong state is refused; concurrent calls share one sign-in', async () => {
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs);
    await hub.start();
    try {
      const calls = [1, 2, 3].map((n) => hub.callTool('secure', 'echo', { message: `hi ${n}` }, never()));
      const url = await signInUrl(() => logs.join('\n'));
      const redirect = new URL(new URL(url).searchParams.get('redirect_uri')!);
      assert.equal(redirect.hostname, '127.0.0.1');
      assert.ok(new URL(url).searchParams.get('code_challenge'), 'PKCE challenge sent');
      // Not the state of this sign-in: refused, and the sign-in goes on.
      const forged = await fetch(`${redirect.href}?code=stolen&state=forged`);
      assert.equal(forged.status, 400);
      assert.doesNotMatch(await forged.text(), /stolen|forged/);
      assert.equal((await fetch(`${redirect.href}?code=stolen`)).status, 400);
      const page = await browse(url);
      assert.equal(page.status, 200);
      const results = await Promise.all(calls);
      assert.deepEqual(
        results.map((r) => (r.result.content as Array<{ text: string }>)[0]!.text),
        ['protected: hi 1', 'protected: hi 2', 'protected: hi 3'],
      );
      assert.equal((await fixture.stats()).authorizations, 1);
      assert.deepEqual(
        (hub.catalog.get('secure')?.tools ?? []).map((t) => t.tool),
        ['echo'],
        'the tools are listed',
      );
      // One-shot: the callback listener is gone.
      await assert.rejects(fetch(`${redirect.href}?code=again`));
    } finally {
      await hub.close();
    }
    const file = tokenFile(stateDir, 'secure');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const { access, refresh } = await fixture.tokens();
    assert.ok((await readFile(file, 'utf8')).includes(refresh.at(-1)!), 'without a key, the file is plain JSON');
    const others = await stateText(stateDir);
    for (const token of [...access, ...refresh]) assert.ok(!others.includes(token), 'no token outside the token file');
    assert.ok(!logs.join('\n').includes(access[0]!), 'no token in the log');
  });

  test('a new hub reuses the stored tokens; an expired token is refreshed', async () => {
    const before = await fixture.stats();
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs);
    await hub.start();
    try {
      const first = await hub.callTool('secure', 'echo', { message: 'again' }, never());
      assert.equal((first.result.content as Array<{ text: string }>)[0]!.text, 'protected: again');
      await fixture.post('expire');
      const second = await hub.callTool('secure', 'echo', { message: 'after expiry' }, never());
      assert.equal((second.result.content as Array<{ text: string }>)[0]!.text, 'protected: after expiry');
    } finally {
      await hub.close();
    }
    const after = await fixture.stats();
    assert.equal(after.authorizations, before.authorizations, 'no new sign-in');
    assert.equal(after.refreshes, (before.refreshes ?? 0) + 1);
    assert.doesNotMatch(logs.join('\n'), /open this URL/);
  });

  test('concurrent calls with an expired token all succeed (one refresh does not undo another)', async () => {
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs);
    await hub.start();
    try {
      await hub.callTool('secure', 'echo', { message: 'warm' }, never());
      for (let round = 0; round < 3; round++) {
        await fixture.post('expire');
        const results = await Promise.all([1, 2, 3, 4].map((n) => hub.callTool('secure', 'echo', { message: `c${n}` }, never())));
        assert.deepEqual(
          results.map((r) => (r.result.content as Array<{ text: string }>)[0]!.text),
          ['protected: c1', 'protected: c2', 'protected: c3', 'protected: c4'],
        );
      }
    } finally {
      await hub.close();
    }
    assert.doesNotMatch(logs.join('\n'), /open this URL/, 'no sign-in asked');
  });

  test('when the refresh fails, a sign-in is asked again and the call waits for it; sign-out deletes the tokens', async () => {
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs);
    await hub.start();
    try {
      await hub.callTool('secure', 'echo', { message: 'warm' }, never());
      await fixture.post('fail-refresh');
      await fixture.post('expire');
      const refused = hub.callTool('secure', 'echo', { message: 'refused, then signed in' }, never());
      assert.equal((await browse(await signInUrl(() => logs.join('\n')))).status, 200);
      assert.equal(((await refused).result.content as Array<{ text: string }>)[0]!.text, 'protected: refused, then signed in');
      const after = await hub.callTool('secure', 'echo', { message: 'signed in again' }, never());
      assert.equal((after.result.content as Array<{ text: string }>)[0]!.text, 'protected: signed in again');

      assert.equal(await signOut(stateDir, 'secure'), true);
      await assert.rejects(stat(tokenFile(stateDir, 'secure')));
      const seen = [...logs.join('\n').matchAll(URL_LINE)].length;
      const signedOut = hub.callTool('secure', 'echo', { message: 'signed out' }, never());
      await browse(await signInUrl(() => logs.join('\n'), seen));
      assert.equal(((await signedOut).result.content as Array<{ text: string }>)[0]!.text, 'protected: signed out');
      assert.equal(await signOut(stateDir, 'never-signed-in'), false);
    } finally {
      await hub.close();
    }
  });
});

describe('OAuth sign-in: configured client, failures, sealed storage', () => {
  let fixture: Fixture;
  before(async () => {
    fixture = await startFixture();
  });
  after(() => fixture.child.kill());

  test('a configured client id, with its secret by reference and a fixed callback port, signs in without registering', async () => {
    const port = await freePort();
    const confidential = await startFixture({ OAUTH_STATIC_CLIENT: `static-client:static-secret-value:${port}` });
    process.env.CEM_TEST_OAUTH_SECRET = 'static-secret-value';
    const stateDir = await tempDir('cem-oauth-static-');
    const logs: string[] = [];
    const hub = hubFor(confidential.url, stateDir, logs, {
      oauth: { clientId: 'static-client', clientSecret: '${env:CEM_TEST_OAUTH_SECRET}', callbackPort: port },
    });
    await hub.start();
    try {
      const call = hub.callTool('secure', 'echo', { message: 'static' }, never());
      const url = new URL(await signInUrl(() => logs.join('\n')));
      assert.equal(url.searchParams.get('client_id'), 'static-client');
      assert.equal(url.searchParams.get('redirect_uri'), `http://127.0.0.1:${port}/callback`);
      await browse(url.href);
      assert.equal(((await call).result.content as Array<{ text: string }>)[0]!.text, 'protected: static');
      assert.equal((await confidential.stats()).registrations, 0);
      assert.ok(!logs.join('\n').includes('static-secret-value'));
      assert.ok(
        !(await readFile(tokenFile(stateDir, 'secure'), 'utf8')).includes('static-secret-value'),
        'the configured secret is not stored',
      );
    } finally {
      await hub.close();
      confidential.child.kill();
      delete process.env.CEM_TEST_OAUTH_SECRET;
    }
  });

  test('a 403 insufficient_scope asks a sign-in for the wider scope; the call waits for it and then succeeds', async () => {
    const fixture = await startFixture({ OAUTH_STEP_UP: '1' });
    const stateDir = await tempDir('cem-oauth-scope-');
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs);
    await hub.start();
    try {
      const first = hub.callTool('secure', 'echo', { message: 'narrow' }, never());
      await browse(await signInUrl(() => logs.join('\n')));
      await first;
      const before = await fixture.stats();
      const seen = [...logs.join('\n').matchAll(URL_LINE)].length;
      const admin = hub.callTool('secure', 'admin', {}, never());
      const url = new URL(await signInUrl(() => logs.join('\n'), seen));
      assert.equal(url.searchParams.get('scope'), 'admin', 'the scope the server named');
      await browse(url.href);
      assert.equal(((await admin).result.content as Array<{ text: string }>)[0]!.text, 'admin: granted');
      const after = await fixture.stats();
      assert.equal(after.stepUps, before.stepUps! + 1);
      assert.equal(after.authorizations, before.authorizations! + 1, 'a new sign-in, not a refresh');
      assert.equal(after.refreshes, before.refreshes);
      const again = await hub.callTool('secure', 'admin', {}, never());
      assert.equal((again.result.content as Array<{ text: string }>)[0]!.text, 'admin: granted');
    } finally {
      await hub.close();
      fixture.child.kill();
    }
  });

  test('over the legacy SSE transport too, a 403 insufficient_scope asks a sign-in for the wider scope; the call waits, then succeeds', async () => {
    const fixture = await startFixture({ OAUTH_STEP_UP: '1' });
    const stateDir = await tempDir('cem-oauth-sse-scope-');
    const logs: string[] = [];
    const hub = hubFor(`${fixture.url}/sse`, stateDir, logs, { type: 'sse' });
    await hub.start();
    try {
      const first = hub.callTool('secure', 'echo', { message: 'narrow' }, never());
      await browse(await signInUrl(() => logs.join('\n')));
      assert.equal(((await first).result.content as Array<{ text: string }>)[0]!.text, 'protected: narrow');
      const before = await fixture.stats();
      const seen = [...logs.join('\n').matchAll(URL_LINE)].length;
      const admin = hub.callTool('secure', 'admin', {}, never());
      const url = new URL(await signInUrl(() => logs.join('\n'), seen));
      assert.equal(url.searchParams.get('scope'), 'admin', 'the scope the server named');
      await browse(url.href);
      assert.equal(((await admin).result.content as Array<{ text: string }>)[0]!.text, 'admin: granted');
      const after = await fixture.stats();
      assert.equal(after.stepUps, before.stepUps! + 1);
      assert.equal(after.authorizations, before.authorizations! + 1, 'a new sign-in, not a refresh');
      assert.equal(after.refreshes, before.refreshes);
      const again = await hub.callTool('secure', 'admin', {}, never());
      assert.equal((again.result.content as Array<{ text: string }>)[0]!.text, 'admin: granted');
    } finally {
      await hub.close();
      fixture.child.kill();
    }
  });

  test('a listing (query_tool_docs) that gets 403 insufficient_scope waits for the sign-in, then lists', async () => {
    const fixture = await startFixture({ OAUTH_LIST_SCOPE: '1' });
    const stateDir = await tempDir('cem-oauth-list-scope-');
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs);
    await hub.start();
    try {
      const listing = hub.listTools('secure');
      await browse(await signInUrl(() => logs.join('\n')));
      const url = new URL(await signInUrl(() => logs.join('\n'), 1));
      assert.equal(url.searchParams.get('scope'), 'list');
      await browse(url.href);
      assert.deepEqual(
        (await listing).map((t) => t.tool),
        ['echo'],
      );
      assert.equal((await fixture.stats()).stepUps, 1);
    } finally {
      await hub.close();
      fixture.child.kill();
    }
  });

  test('where the authorization server takes client ID metadata documents, clientMetadataUrl is the client id: no registration', async () => {
    const port = await freePort();
    const client = 'https://client.example.com/code-execution-mode.json';
    const server = await startFixture({ OAUTH_METADATA_CLIENT: `${port} ${client}` });
    const stateDir = await tempDir('cem-oauth-cimd-');
    const logs: string[] = [];
    const hub = hubFor(server.url, stateDir, logs, { oauth: { clientMetadataUrl: client, callbackPort: port } });
    await hub.start();
    try {
      const call = hub.callTool('secure', 'echo', { message: 'url client' }, never());
      const url = new URL(await signInUrl(() => logs.join('\n')));
      assert.equal(url.searchParams.get('client_id'), client);
      await browse(url.href);
      assert.equal(((await call).result.content as Array<{ text: string }>)[0]!.text, 'protected: url client');
      assert.equal((await server.stats()).registrations, 0);
    } finally {
      await hub.close();
      server.child.kill();
    }
  });

  test('a sign-in nobody completes times out, and its callback stops listening', async () => {
    const stateDir = await tempDir('cem-oauth-timeout-');
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs, { oauth: { signInTimeoutSeconds: 1 } });
    await hub.start();
    try {
      const call = hub.callTool('secure', 'echo', { message: 'x' }, never());
      const url = await signInUrl(() => logs.join('\n'));
      await assert.rejects(call, (error: Error) => /no sign-in arrived within 1 s/.test(error.message) && !/http/.test(error.message));
      const redirect = new URL(url).searchParams.get('redirect_uri')!;
      await assert.rejects(fetch(`${redirect}?code=late`));
      assert.equal(hub.catalog.get('secure')?.state, 'error');
    } finally {
      await hub.close();
    }
  });

  test('a server that answers 401 without the authorization flow is said so, with the way out', async () => {
    const plain = await startHttpFixture({ FIXTURE_TOKEN: 'sesame' });
    const stateDir = await tempDir('cem-oauth-plain-');
    const hub = hubFor(plain.url, stateDir, []);
    await hub.start();
    try {
      await assert.rejects(
        hub.callTool('secure', 'echo', { message: 'x' }, never()),
        /asks for a sign-in \(HTTP 401\), and the OAuth sign-in could not start: .*Authorization header/,
      );
    } finally {
      await hub.close();
      plain.stop();
    }
    // With its token as a header, the flow is not used at all.
    const withToken = await startHttpFixture({ FIXTURE_TOKEN: 'sesame' });
    const hub2 = hubFor(withToken.url, stateDir, [], { headers: { authorization: 'Bearer sesame' } });
    await hub2.start();
    try {
      const result = await hub2.callTool('secure', 'echo', { message: 'token' }, never());
      assert.equal((result.result.content as Array<{ text: string }>)[0]!.text, 'token');
    } finally {
      await hub2.close();
      withToken.stop();
    }
  });

  test("a hub beside the bridge (Refresh Tools) and a second window leave the bridge's waiting sign-in and its registration alone", async () => {
    const stateDir = await tempDir('cem-oauth-beside-');
    const logs: string[] = [];
    const bridgeHub = hubFor(fixture.url, stateDir, logs);
    const config = configSchema.parse({ stateDir, servers: { secure: { url: fixture.url } } });
    const besideLogs: string[] = [];
    const beside = new ProxyHub(config, { stateDir, log: (line) => besideLogs.push(line), interactiveSignIn: false });
    const otherWindow = hubFor(fixture.url, stateDir, []);
    const registrations = (await fixture.stats()).registrations ?? 0;
    await Promise.all([bridgeHub.start(), beside.start(), otherWindow.start()]);
    try {
      const call = bridgeHub.callTool('secure', 'echo', { message: 'waited' }, never());
      const url = await signInUrl(() => logs.join('\n'));
      await assert.rejects(beside.callTool('secure', 'echo', { message: 'x' }, never()), /needs a sign-in/);
      assert.doesNotMatch(besideLogs.join('\n'), /open this URL/);
      await assert.rejects(otherWindow.callTool('secure', 'echo', { message: 'x' }, never()), /in progress in another window/);
      assert.match(await readFile(tokenFile(stateDir, 'secure'), 'utf8'), /"redirectPort"/, 'the registration is kept');
      assert.equal((await browse(url)).status, 200);
      assert.equal(((await call).result.content as Array<{ text: string }>)[0]!.text, 'protected: waited');
      // Once signed in (and past its retry pause), the hub beside uses the stored tokens.
      let listed: Awaited<ReturnType<ProxyHub['callTool']>> | undefined;
      for (const deadline = Date.now() + 10_000; !listed; await sleep(250)) {
        listed = await beside.callTool('secure', 'echo', { message: 'beside' }, never()).catch((error: Error) => {
          if (Date.now() > deadline) throw error;
          return undefined;
        });
      }
      assert.equal((listed.result.content as Array<{ text: string }>)[0]!.text, 'protected: beside');
      assert.equal((await fixture.stats()).registrations, registrations + 1, 'registered once');
    } finally {
      await Promise.all([bridgeHub.close(), beside.close(), otherWindow.close()]);
    }
  });

  test("an error body echoing the Authorization header reaches neither the call's error nor the log", async () => {
    const echoing = await startFixture();
    const stateDir = await tempDir('cem-oauth-echo-');
    const logs: string[] = [];
    const hub = hubFor(echoing.url, stateDir, logs);
    await hub.start();
    try {
      const call = hub.callTool('secure', 'echo', { message: 'x' }, never());
      assert.equal((await browse(await signInUrl(() => logs.join('\n')))).status, 200);
      await call;
      await echoing.post('echo-auth');
      const message = await hub.callTool('secure', 'echo', { message: 'y' }, never()).then(
        () => 'resolved',
        (error: Error) => `${error.message} ${JSON.stringify(error)}`,
      );
      assert.match(message, /Authorization: Bearer \*\*\*/);
      const { access, refresh } = await echoing.tokens();
      for (const token of [...access, ...refresh]) {
        assert.ok(!message.includes(token), 'no token in the error');
        assert.ok(!logs.join('\n').includes(token), 'no token in the log');
      }
    } finally {
      await hub.close();
      echoing.child.kill();
    }
  });

  test('a callback port already in use is said at once', async () => {
    const port = await freePort();
    const blocker = createServer().listen(port, '127.0.0.1');
    await once(blocker, 'listening');
    const stateDir = await tempDir('cem-oauth-busy-');
    const hub = hubFor(fixture.url, stateDir, [], { oauth: { callbackPort: port } });
    await hub.start();
    try {
      await assert.rejects(hub.callTool('secure', 'echo', { message: 'x' }, never()), new RegExp(`callback port ${port} cannot be used`));
    } finally {
      await hub.close();
      blocker.close();
    }
  });

  test('closing the hub while a sign-in waits ends the wait at once', async () => {
    const stateDir = await tempDir('cem-oauth-close-');
    const logs: string[] = [];
    const hub = hubFor(fixture.url, stateDir, logs);
    await hub.start();
    const call = hub.callTool('secure', 'echo', { message: 'x' }, never()).then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    const url = await signInUrl(() => logs.join('\n'));
    const started = Date.now();
    await hub.close();
    assert.match(await call, /shut down/);
    assert.ok(Date.now() - started < 5000, `closed in ${Date.now() - started} ms`);
    await assert.rejects(fetch(`${new URL(url).searchParams.get('redirect_uri')}?code=late`));
  });

  test('with a key the token file is sealed; another key cannot open it and a sign-in is asked', async () => {
    const stateDir = await tempDir('cem-oauth-sealed-');
    const key = parseTokenKey(newTokenKey());
    const logs: string[] = [];
    let hub = hubFor(fixture.url, stateDir, logs, {}, key);
    await hub.start();
    try {
      const call = hub.callTool('secure', 'echo', { message: 'sealed' }, never());
      await browse(await signInUrl(() => logs.join('\n')));
      await call;
    } finally {
      await hub.close();
    }
    const text = await readFile(tokenFile(stateDir, 'secure'), 'utf8');
    assert.match(text, /^\{"sealed":"aes-256-gcm"/);
    const { access, refresh } = await fixture.tokens();
    for (const token of [...access, ...refresh]) assert.ok(!text.includes(token));

    const before = (await fixture.stats()).authorizations;
    const again: string[] = [];
    hub = hubFor(fixture.url, stateDir, again, {}, parseTokenKey(newTokenKey()));
    await hub.start();
    try {
      const call = hub.callTool('secure', 'echo', { message: 'other key' }, never());
      await browse(await signInUrl(() => again.join('\n')));
      await call;
    } finally {
      await hub.close();
    }
    assert.match(again.join('\n'), /cannot be read/);
    assert.equal((await fixture.stats()).authorizations, (before ?? 0) + 1);
  });
});

const [runtime = 'podman'] = testRuntimes();

describe(`OAuth through the bridge process (token key given, as VS Code does) on ${runtime}`, () => {
  let fixture: Fixture;
  let bridge: BridgeHandle;
  let dir: string;
  let configFile: string;
  const key = newTokenKey();

  before(async () => {
    fixture = await startFixture();
    dir = await tempDir('cem-oauth-bridge-');
    const config = {
      stateDir: join(dir, 'state'),
      sandbox: { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 30, maxTimeoutSeconds: 60, prewarm: false },
      servers: { secure: { type: 'http', url: fixture.url } },
    };
    configFile = join(dir, 'config.json');
    await writeFile(configFile, JSON.stringify(config));
    // As VS Code starts it: with a key for the token files, in the environment.
    bridge = await startBridge(config, { CODE_EXECUTION_MODE_TOKEN_KEY: key });
  });
  after(async () => {
    await bridge?.close();
    fixture.child.kill();
  });

  test('run_python calls a protected tool once the person signed in; no token reaches the sandbox, run log or catalog', async () => {
    const run = bridge.call("r = await mcp_secure.echo(message='from python')\nprint(r)\nimport os\nprint(sorted(os.environ.items()))");
    const url = await signInUrl(bridge.stderr);
    assert.equal((await browse(url)).status, 200);
    const result = await run;
    const text = textOf(result);
    assert.match(text, /protected: from python/);
    assert.match(text, /\('PATH', /, 'the sandbox environment was printed');
    const { access, refresh } = await fixture.tokens();
    assert.ok(access.length > 0);
    const state = await stateText(join(dir, 'state'));
    for (const token of [...access, ...refresh]) {
      assert.ok(!text.includes(token), 'not in the sandbox or its output');
      assert.ok(!state.includes(token), 'not in the run log or catalog');
      assert.ok(!bridge.stderr().includes(token), 'not in the log');
    }
    assert.ok(!text.includes(key), 'the token key is not in the sandbox');
    const file = tokenFile(join(dir, 'state'), 'secure');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.match(await readFile(file, 'utf8'), /^\{"sealed":"aes-256-gcm"/);
  });

  test('a new bridge process reuses the stored tokens: no sign-in, and the tools are listed', async () => {
    const before = (await fixture.stats()).authorizations;
    const again = await startBridge(JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>, {
      CODE_EXECUTION_MODE_TOKEN_KEY: key,
    });
    try {
      const result = await again.call("[t['tool'] for t in await query_tool_docs('secure')], await mcp_secure.echo(message='reused')");
      assert.match(textOf(result), /\['echo'\]/);
      assert.match(textOf(result), /protected: reused/);
      assert.doesNotMatch(again.stderr(), /open this URL/);
    } finally {
      await again.close();
    }
    assert.equal((await fixture.stats()).authorizations, before);
  });

  test('`sign-out SERVER` deletes the tokens; the next call waits for a new sign-in', async () => {
    const out = spawnSync(process.execPath, [BRIDGE, 'sign-out', 'secure', '--config', configFile], { encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /signed out of secure/);
    await assert.rejects(stat(tokenFile(join(dir, 'state'), 'secure')));
    const seen = [...bridge.stderr().matchAll(URL_LINE)].length;
    const run = bridge.call("await mcp_secure.echo(message='after sign-out')");
    await browse(await signInUrl(bridge.stderr, seen));
    assert.match(textOf(await run), /protected: after sign-out/);
    const bad = spawnSync(process.execPath, [BRIDGE, 'sign-out', '../x', '--config', configFile], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
  });
});
