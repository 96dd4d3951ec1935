// The limits on what the authorization server sends, and one refresh per refresh token under
// concurrency (refresh-coalescer.ts), with fake fetches.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { authFetch, MAX_AUTH_RESPONSE_BYTES } from '../../src/bridge/proxy/oauth/hub-oauth.ts';
import { RefreshCoalescer } from '../../src/bridge/proxy/oauth/refresh-coalescer.ts';

const refreshInit = (token: string): RequestInit => ({
  method: 'POST',
  body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }),
});

test('concurrent refreshes of one token make one request; every caller gets the same answer', async () => {
  let calls = 0;
  const base: FetchLike = async () => {
    calls++;
    await new Promise((r) => setTimeout(r, 50));
    return new Response(JSON.stringify({ access_token: `at-${calls}`, token_type: 'bearer', refresh_token: `rt-${calls}` }), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  const coalescer = new RefreshCoalescer();
  const fetch = coalescer.wrap(base);
  const answers = await Promise.all(
    Array.from({ length: 20 }, () => fetch('https://as.example.com/token', refreshInit('rt-0')).then((r) => r.json())),
  );
  assert.equal(calls, 1);
  assert.ok(answers.every((a) => (a as { access_token: string }).access_token === 'at-1'));
  // A caller that read the old token after the refresh finished gets the same answer, not a refusal.
  assert.equal(
    ((await (await fetch('https://as.example.com/token', refreshInit('rt-0'))).json()) as { access_token: string }).access_token,
    'at-1',
  );
  assert.equal(calls, 1);
  // Another token is its own refresh; other requests pass through.
  await fetch('https://as.example.com/token', refreshInit('rt-1'));
  await fetch('https://as.example.com/token', {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code: 'c' }),
  });
  await fetch('https://as.example.com/token', {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code: 'c' }),
  });
  assert.equal(calls, 4);
});

test('a refused refresh is not remembered; an oversized answer is refused', async () => {
  let calls = 0;
  const refusing: FetchLike = async () => {
    calls++;
    return new Response('{"error":"invalid_grant"}', { status: 400 });
  };
  const fetch = new RefreshCoalescer().wrap(refusing);
  assert.equal((await fetch('https://as.example.com/token', refreshInit('rt'))).status, 400);
  assert.equal((await fetch('https://as.example.com/token', refreshInit('rt'))).status, 400);
  assert.equal(calls, 2);

  const huge: FetchLike = async () => new Response(new Uint8Array(2 * 1024 * 1024), { status: 200 });
  await assert.rejects(new RefreshCoalescer().wrap(huge)('https://as.example.com/token', refreshInit('rt')), /over 1048576 bytes/);
});

test('answers of the authorization server are capped in size, and requests in time', async () => {
  const huge: FetchLike = async () => new Response(new Uint8Array(MAX_AUTH_RESPONSE_BYTES + 1024), { status: 200 });
  const response = await authFetch(huge)('https://as.example.com/token', { method: 'POST' });
  await assert.rejects(response.arrayBuffer(), /more than/);

  const hanging: FetchLike = (_url, init) =>
    new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason as Error), { once: true }));
  const started = Date.now();
  await assert.rejects(authFetch(hanging, 200)('https://as.example.com/token', { method: 'POST' }));
  assert.ok(Date.now() - started < 2000);
});
