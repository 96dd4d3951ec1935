// The OAuth token files and the loopback callback, in isolation: sealing (round trip, wrong key,
// another server's file), file modes, URL binding, the callback's state check, one-shot and
// timeout, and the configuration's rules for secrets.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, stat, writeFile, copyFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { listenForCallback } from '../../src/bridge/proxy/oauth/callback-server.ts';
import { newSignInRequests, openableSignInUrl, SignInBoard, signInFileName } from '../../src/state/sign-in-notices.ts';
import {
  newTokenKey,
  parseTokenKey,
  seal,
  takeTokenKey,
  TOKEN_KEY_ENV,
  tokenFile,
  TokenStore,
  unseal,
} from '../../src/state/oauth-tokens.ts';
import { configSchema } from '../../src/config/schema.ts';

const URL_A = 'https://mcp.example.com/mcp';

test('sealing round-trips, and fails with another key or for another server', () => {
  const key = parseTokenKey(newTokenKey());
  const sealed = seal('{"secret":"abc"}', key, 'one');
  assert.ok(!sealed.includes('abc'));
  assert.equal(unseal(sealed, key, 'one'), '{"secret":"abc"}');
  assert.throws(() => unseal(sealed, parseTokenKey(newTokenKey()), 'one'));
  assert.throws(() => unseal(sealed, key, 'two'));
  const tampered = JSON.parse(sealed) as { data: string };
  tampered.data = Buffer.from('x'.repeat(16)).toString('base64');
  assert.throws(() => unseal(JSON.stringify(tampered), key, 'one'));
});

test('a token key must be 32 bytes of base64, and is taken out of the environment', () => {
  assert.throws(() => parseTokenKey('short'));
  assert.throws(() => parseTokenKey(Buffer.alloc(16).toString('base64')));
  const env: NodeJS.ProcessEnv = { [TOKEN_KEY_ENV]: newTokenKey() };
  assert.equal(takeTokenKey(env)?.length, 32);
  assert.equal(env[TOKEN_KEY_ENV], undefined);
  assert.equal(takeTokenKey({}), undefined);
});

test('the token file is 0600 (its folder 0700), sealed with a key, plain without, and bound to the URL', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-tokens-'));
  const key = parseTokenKey(newTokenKey());
  const store = new TokenStore(dir, 'one', URL_A, key);
  await store.write({ version: 1, url: URL_A, tokens: { access_token: 'at-secret', token_type: 'bearer' } });
  assert.equal((await stat(tokenFile(dir, 'one'))).mode & 0o777, 0o600);
  assert.equal((await stat(join(dir, 'oauth'))).mode & 0o777, 0o700);
  assert.ok(!(await readFile(tokenFile(dir, 'one'), 'utf8')).includes('at-secret'));
  assert.equal((await store.read()).tokens?.access_token, 'at-secret');

  const logs: string[] = [];
  assert.equal((await new TokenStore(dir, 'one', URL_A, undefined, (l) => logs.push(l)).read()).tokens, undefined, 'no key: nothing');
  assert.equal(
    (await new TokenStore(dir, 'one', URL_A, parseTokenKey(newTokenKey()), (l) => logs.push(l)).read()).tokens,
    undefined,
    'wrong key: nothing',
  );
  assert.equal((await new TokenStore(dir, 'one', 'https://other.example.com/mcp', key).read()).tokens, undefined, 'another URL: nothing');
  assert.equal(logs.length, 2);
  // A sealed file copied under another server's name does not open.
  await copyFile(tokenFile(dir, 'one'), tokenFile(dir, 'two'));
  assert.equal((await new TokenStore(dir, 'two', URL_A, key).read()).tokens, undefined);

  const plain = new TokenStore(dir, 'three', URL_A, undefined);
  await plain.write({ version: 1, url: URL_A, tokens: { access_token: 'at-plain', token_type: 'bearer' } });
  assert.match(await readFile(tokenFile(dir, 'three'), 'utf8'), /at-plain/);
  assert.equal((await stat(tokenFile(dir, 'three'))).mode & 0o777, 0o600);
  // An oversized or damaged file is not used.
  await writeFile(tokenFile(dir, 'three'), 'x'.repeat(300 * 1024));
  assert.equal((await plain.read()).tokens, undefined);
  await plain.remove();
  await plain.remove();
});

test('the callback takes one response with the right state, refuses others, and times out', async () => {
  const listener = await listenForCallback(0, () => 'good-state', 5000);
  assert.match(listener.redirectUrl, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
  assert.equal((await fetch(`${listener.redirectUrl}?code=c&state=bad`)).status, 400);
  assert.equal((await fetch(`${listener.redirectUrl}?code=c`)).status, 400);
  assert.equal((await fetch(listener.redirectUrl.replace('/callback', '/other'))).status, 404);
  // Concurrent forged responses do not end the wait; the right one does, once.
  const forged = await Promise.all(Array.from({ length: 20 }, (_v, i) => fetch(`${listener.redirectUrl}?code=x${i}&state=guess${i}`)));
  assert.ok(forged.every((r) => r.status === 400));
  assert.equal((await fetch(`${listener.redirectUrl}?code=the-code&state=good-state`)).status, 200);
  assert.equal(await listener.code, 'the-code');
  await assert.rejects(fetch(`${listener.redirectUrl}?code=again&state=good-state`));

  const denied = await listenForCallback(0, () => 's', 5000);
  assert.equal((await fetch(`${denied.redirectUrl}?error=access_denied&state=s`)).status, 400);
  await assert.rejects(denied.code, /access_denied/);

  const slow = await listenForCallback(0, () => 's', 200);
  await assert.rejects(slow.code, /no sign-in arrived/);
  await assert.rejects(fetch(`${slow.redirectUrl}?code=late&state=s`));
});

test('sign-in URLs: only https or loopback http are opened; the notice file is per window', async () => {
  assert.ok(openableSignInUrl('https://auth.example.com/authorize?x=1'));
  assert.ok(openableSignInUrl('http://127.0.0.1:8080/authorize'));
  assert.equal(openableSignInUrl('http://auth.example.com/authorize'), undefined);
  assert.equal(openableSignInUrl('javascript:alert(1)'), undefined);
  assert.equal(openableSignInUrl('file:///etc/passwd'), undefined);
  assert.equal(openableSignInUrl('https://user:pw@auth.example.com/'), undefined);
  assert.equal(signInFileName('../x'), undefined);

  const dir = await mkdtemp(join(tmpdir(), 'cem-board-'));
  await mkdir(dir, { recursive: true });
  const board = new SignInBoard(dir, 'window-1');
  board.set('one', { id: 'a', server: 'one', url: 'https://auth.example.com/a', expiresAt: Date.now() + 1000 });
  await board.settled();
  const file = join(dir, signInFileName('window-1')!);
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.match(await readFile(file, 'utf8'), /auth\.example\.com/);
  // The extension asks once per request, and never about expired ones or unopenable URLs.
  const shown = new Set<string>();
  assert.deepEqual(
    newSignInRequests(file, shown).map((r) => r.server),
    ['one'],
  );
  assert.deepEqual(newSignInRequests(file, shown), []);
  board.set('two', { id: 'b', server: 'two', url: 'https://auth.example.com/b', expiresAt: Date.now() - 1 });
  board.set('three', { id: 'c', server: 'three', url: 'http://evil.example.com/c', expiresAt: Date.now() + 1000 });
  await board.settled();
  assert.deepEqual(newSignInRequests(file, shown), []);
  await writeFile(file, 'not json');
  assert.deepEqual(newSignInRequests(file, new Set()), []);
  await writeFile(file, `${JSON.stringify({ version: 1, requests: [] })}${' '.repeat(300 * 1024)}`);
  assert.deepEqual(newSignInRequests(file, new Set()), [], 'an oversized file is not read');
  board.set('one', undefined);
  board.set('two', undefined);
  board.set('three', undefined);
  await board.settled();
  await assert.rejects(stat(file));
});

test('oauth settings: the client secret only by reference; scopes are single tokens', () => {
  const parse = (oauth: unknown) => configSchema.safeParse({ servers: { s: { url: URL_A, oauth } } });
  assert.ok(parse({ clientId: 'abc', clientSecret: '${input:s-secret}', scopes: ['read', 'write:all'] }).success);
  assert.ok(parse({ clientId: 'abc', clientSecret: '${env:S_SECRET}' }).success);
  assert.ok(parse(false).success);
  const literal = parse({ clientId: 'abc', clientSecret: 'hunter2' });
  assert.equal(literal.success, false);
  assert.match(JSON.stringify(literal.error?.issues), /clientSecret/);
  assert.equal(parse({ clientSecret: '${input:x}' }).success, false, 'a secret needs a client id');
  assert.equal(parse({ scopes: ['two words'] }).success, false);
  assert.equal(parse({ callbackPort: 80 }).success, false);
  assert.equal(parse({ unknown: 1 }).success, false);
});
