// The pure parts of relaying proxied servers' requests: configured roots (validated, turned into
// file:// URIs), what upstream clients declare for a given bridge client, the -32042 data read
// from an untrusted error, and which listed tools run as tasks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { BridgeClientRelay, configuredRoot } from '../../src/bridge/client/relay.ts';
import { MAX_URL_ELICITATIONS, urlElicitationsOf } from '../../src/bridge/proxy/url-elicitation.ts';
import { taskSupportOf } from '../../src/bridge/catalog/catalog.ts';
import { configSchema, MAX_CONFIG_ROOTS, proxyConfigSchema } from '../../src/config/schema.ts';
import { FakeClock } from '../helpers/fake-clock.ts';

test('config: roots are absolute folders or file:// URIs, at most so many; the relay has its defaults', () => {
  assert.deepEqual(configSchema.parse({ roots: ['/srv/data', 'file:///home/ada/project'] }).roots, [
    '/srv/data',
    'file:///home/ada/project',
  ]);
  for (const bad of [['relative/dir'], ['https://example.com/x'], [''], Array(MAX_CONFIG_ROOTS + 1).fill('/x')]) {
    const parsed = configSchema.safeParse({ roots: bad });
    assert.equal(parsed.success, false, JSON.stringify(bad).slice(0, 80));
    assert.equal(parsed.error?.issues[0]?.path[0], 'roots');
  }
  const proxy = proxyConfigSchema.parse({});
  assert.equal(proxy.relayTimeoutSeconds, 120);
  assert.equal(proxy.maxRelayBytes, 1024 * 1024);
  assert.equal(proxyConfigSchema.safeParse({ relayTimeoutSeconds: 0 }).success, false);
  assert.equal(proxyConfigSchema.safeParse({ maxRelayBytes: 10 }).success, false);
});

test('a configured root becomes a file:// URI named by its last part', () => {
  assert.deepEqual(configuredRoot('/srv/my data/'), { uri: 'file:///srv/my%20data/', name: 'my data' });
  assert.deepEqual(configuredRoot('file:///home/ada/project'), { uri: 'file:///home/ada/project', name: 'project' });
});

test('upstream clients declare what the bridge client declared (roots also from config)', async () => {
  const relayFor = (capabilities: ClientCapabilities | undefined, roots: string[] = []) =>
    new BridgeClientRelay(() => ({ getClientCapabilities: () => capabilities }) as unknown as Server, { roots, timeoutMs: 1000 });
  assert.deepEqual(relayFor(undefined).upstreamCapabilities(), {});
  assert.deepEqual(relayFor({}, ['/srv']).upstreamCapabilities(), { roots: { listChanged: true } });
  assert.deepEqual(relayFor({ roots: {}, elicitation: {}, sampling: {} }).upstreamCapabilities(), {
    roots: { listChanged: true },
    elicitation: { form: {} },
    sampling: {},
  });
  assert.deepEqual(relayFor({ elicitation: { url: {} }, sampling: { tools: {} } }).upstreamCapabilities(), {
    elicitation: { url: {} },
    sampling: { tools: {} },
  });
  assert.deepEqual(relayFor({ elicitation: { form: {}, url: {} } }).upstreamCapabilities(), { elicitation: { form: {}, url: {} } });
  // A client without roots: the configured ones answer roots/list.
  const { roots } = await relayFor({}, ['/srv/a', 'file:///b']).listRoots({ server: 's', runs: [], signal: new AbortController().signal });
  assert.deepEqual(roots, [
    { uri: 'file:///srv/a', name: 'a' },
    { uri: 'file:///b', name: 'b' },
  ]);
});

test('ready(): at once without a client to wait for; else at initialize, or after the bound', async () => {
  const server = () => ({ getClientCapabilities: () => ({}) }) as unknown as Server;
  await new BridgeClientRelay(server, { roots: [], timeoutMs: 1000 }).ready();
  const clock = new FakeClock();
  const waiting = new BridgeClientRelay(server, { roots: [], timeoutMs: 1000, awaitClientMs: 60_000, clock });
  const ready = waiting.ready();
  clock.advance(59_999);
  assert.equal(clock.waiting, 1, 'still waiting for the client');
  waiting.markInitialized();
  await ready;
  assert.equal(clock.waiting, 0, 'the bound is cleared');
  const lines: string[] = [];
  const bounded = new BridgeClientRelay(server, { roots: [], timeoutMs: 1000, awaitClientMs: 30, log: (l) => lines.push(l), clock });
  const boundedReady = bounded.ready();
  clock.advance(30);
  await boundedReady;
  assert.match(lines[0] ?? '', /did not initialize within/);
});

test('-32042 data: only well-formed URL elicitations, at most a few, are asked', () => {
  const one = { mode: 'url', url: 'https://example.com/a', message: 'Sign in', elicitationId: 'e1' };
  assert.deepEqual(urlElicitationsOf({ elicitations: [one] }), [one]);
  assert.deepEqual(urlElicitationsOf({ elicitations: [{ ...one, extra: 1 }] }), [one]);
  for (const bad of [
    undefined,
    'text',
    {},
    { elicitations: [] },
    { elicitations: [{ ...one, mode: 'form' }] },
    { elicitations: [{ ...one, url: 'x'.repeat(5000) }] },
    { elicitations: Array(MAX_URL_ELICITATIONS + 1).fill(one) },
  ]) {
    assert.deepEqual(urlElicitationsOf(bad), [], String(JSON.stringify(bad)).slice(0, 80));
  }
});

test('tools that run as tasks are read from the listing; anything else is ignored', () => {
  const found = taskSupportOf([
    { name: 'a', execution: { taskSupport: 'required' } },
    { name: 'b', execution: { taskSupport: 'optional' } },
    { name: 'c', execution: { taskSupport: 'forbidden' } },
    { name: 'd', execution: 'required' },
    { name: 5, execution: { taskSupport: 'required' } },
    null,
  ]);
  assert.deepEqual(
    [...found],
    [
      ['a', 'required'],
      ['b', 'optional'],
    ],
  );
});

test('a URL elicitation resent while open is one question, naming the server that asks; what the client lacks is refused', async () => {
  const asked: unknown[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const fake = {
    getClientCapabilities: () => ({ elicitation: { url: {} } }),
    elicitInput: async (params: unknown) => {
      asked.push(params);
      await gate;
      return { action: 'accept' };
    },
  } as unknown as Server;
  const relay = new BridgeClientRelay(() => fake, { roots: [], timeoutMs: 1000 });
  const context = { server: 'docs', runs: ['r1'], signal: new AbortController().signal };
  const params = { mode: 'url' as const, url: 'https://example.com/a', message: 'Sign in', elicitationId: 'e1' };
  const both = Promise.all([relay.elicit(params, context), relay.elicit(params, context)]);
  release();
  assert.deepEqual(await both, [{ action: 'accept' }, { action: 'accept' }]);
  assert.equal(asked.length, 1);
  assert.deepEqual(asked[0], { ...params, message: 'MCP server "docs" asks: Sign in' });
  // Not an http(s) URL, a form to a URL-only client, sampling to a client without it: refused with -32600.
  await assert.rejects(relay.elicit({ ...params, url: 'javascript:alert(1)', elicitationId: 'e2' }, context), { code: -32600 });
  await assert.rejects(relay.elicit({ mode: 'form', message: 'x', requestedSchema: { type: 'object', properties: {} } }, context), {
    code: -32600,
  });
  await assert.rejects(relay.sample({ messages: [], maxTokens: 1 }, context), { code: -32600 });
  assert.equal(asked.length, 1);
});
