// A proxied server's relayed request, cancelled: the SDK on all three sides (the proxied server,
// the bridge's upstream client and its own server, the bridge's client), linked in memory. The
// server's notifications/cancelled reaches the bridge's client with the id of the request it was
// asked, and the run log says who cancelled. And a form's answer gets the form's defaults for the
// fields the client left out, never over a field it gave, checked against the form.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  McpError,
  type ElicitRequestFormParams,
  type ElicitResult,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { BridgeClientRelay, ROOTS_RECORD_MS } from '../../src/bridge/client/relay.ts';
import { answerWithDefaults, withDefaults } from '../../src/bridge/client/elicitation-defaults.ts';
import { Flow, GuardedTransport } from '../../src/bridge/proxy/guarded-transport.ts';
import { installRelay, MAX_REASON_CHARS } from '../../src/bridge/proxy/relay.ts';
import { RENAMED_ZERO_ID, zeroIdIn, zeroIdOut } from '../../src/bridge/proxy/zero-id.ts';
import { RunLog, RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { until } from '../helpers/wait.ts';

type Form = ElicitRequestFormParams['requestedSchema'];

/** The bridge's client, its relay, and one proxied server behind it; the client answers with `answer`. */
async function chain(answer: (params: unknown) => ElicitResult | undefined) {
  const dir = await mkdtemp(join(tmpdir(), 'cem-relay-cancel-'));
  const asked: { method: string; id: RequestId; signal: AbortSignal }[] = [];
  const seen: JSONRPCMessage[] = [];
  // The bridge's client: answers, or holds the request until it is cancelled.
  const editor = new Client({ name: 'editor', version: '1' }, { capabilities: { elicitation: { form: {} }, sampling: {} } });
  const held = (method: string) => async (request: { params: unknown }, extra: { requestId: RequestId; signal: AbortSignal }) => {
    asked.push({ method, id: extra.requestId, signal: extra.signal });
    const given = answer(request.params);
    if (given) return given;
    await new Promise((resolve) => extra.signal.addEventListener('abort', resolve, { once: true }));
    throw new Error('cancelled');
  };
  editor.setRequestHandler(ElicitRequestSchema, held('elicitation/create'));
  editor.setRequestHandler(CreateMessageRequestSchema, held('sampling/createMessage') as never);
  const bridge = new Server({ name: 'bridge', version: '1' }, { capabilities: {} });
  const [bridgeSide, editorSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([bridge.connect(bridgeSide), editor.connect(editorSide)]);
  // The SDK client ignores a cancellation of request 0: the bridge's first request is a ping, so
  // that the client's handlers below can see theirs.
  await bridge.ping();
  // Every message the bridge's client gets, as it gets it.
  const deliver = editorSide.onmessage;
  editorSide.onmessage = (message, extra) => {
    seen.push(message);
    deliver?.(message, extra);
  };
  const relay = new BridgeClientRelay(() => bridge, { roots: [], timeoutMs: 10_000 });
  relay.runLog = new RunLog(dir);
  const declared = relay.upstreamCapabilities();
  const upstream = new Client({ name: 'bridge-upstream', version: '1' }, { capabilities: declared });
  installRelay(upstream, 'fx', relay, declared, () => [], 1 << 20);
  const proxied = new Server({ name: 'fx', version: '1' }, { capabilities: {} });
  const [proxiedSide, upstreamSide] = InMemoryTransport.createLinkedPair();
  // As in the bridge: the upstream client reads the server through the guard (which renames request 0).
  const guarded = new GuardedTransport(upstreamSide, { maxPerSecond: 1000, flow: new Flow(), onDropped: () => undefined });
  await Promise.all([proxied.connect(proxiedSide), upstream.connect(guarded)]);
  const relayEvents = async () =>
    (await readFile(join(dir, RUN_LOG_FILE), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((e) => e.type === 'relay');
  const cancelledOf = (id: RequestId) =>
    seen.find((m) => 'method' in m && m.method === 'notifications/cancelled' && m.params?.requestId === id);
  return { asked, proxied, proxiedSide, relayEvents, cancelledOf, close: () => Promise.all([editor.close(), upstream.close()]) };
}

const question: ElicitRequestFormParams = {
  mode: 'form',
  message: 'Your name?',
  requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
};

test("a server's cancellation of its elicitation and its sampling request reaches the bridge's client, with the id it was asked with", async () => {
  const c = await chain(() => undefined);
  try {
    for (const [method, ask] of [
      ['elicitation/create', (signal: AbortSignal) => c.proxied.elicitInput(question, { signal })],
      [
        'sampling/createMessage',
        (signal: AbortSignal) =>
          c.proxied.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 }, { signal }),
      ],
    ] as const) {
      const before = c.asked.length;
      const stop = new AbortController();
      const pending = ask(stop.signal);
      const got = await until(`the client asked ${method}`, () => c.asked[before]);
      assert.equal(got.method, method);
      stop.abort('the server no longer needs it');
      await assert.rejects(pending);
      const cancelled = await until(`notifications/cancelled for ${method}`, () => c.cancelledOf(got.id));
      assert.ok('params' in cancelled);
      assert.equal(cancelled.params?.requestId, got.id);
      assert.equal(got.signal.aborted, true, "the client's handler is told to stop");
      const record = await until(`the ${method} record`, async () => (await c.relayEvents()).find((e) => e.method === method));
      assert.equal(record.outcome, 'cancelled');
      assert.equal(record.error, 'cancelled by the server: the server no longer needs it');
    }
  } finally {
    await c.close();
  }
});

test("a server's reason for cancelling reaches the run log as one line, cut to its cap", async () => {
  const c = await chain(() => undefined);
  try {
    const stop = new AbortController();
    const pending = c.proxied.elicitInput(question, { signal: stop.signal });
    await until('the client asked', () => c.asked[0]);
    stop.abort(`first line\n${'y'.repeat(MAX_REASON_CHARS * 5)}`);
    await assert.rejects(pending);
    const record = await until('the record', async () => (await c.relayEvents()).find((e) => e.outcome === 'cancelled'));
    const error = String(record.error);
    assert.match(error, /^cancelled by the server: first line/);
    assert.doesNotMatch(error, /\n/);
    assert.ok(error.length <= 'cancelled by the server: '.length + MAX_REASON_CHARS, `${error.length} characters`);
  } finally {
    await c.close();
  }
});

test("a server's request 0 is renamed for the SDK and back, and so is its cancellation; nothing else is", () => {
  const request = { jsonrpc: '2.0' as const, id: 0, method: 'elicitation/create', params: {} };
  assert.equal((zeroIdIn(request) as { id: unknown }).id, RENAMED_ZERO_ID);
  const cancelled = { jsonrpc: '2.0' as const, method: 'notifications/cancelled', params: { requestId: 0, reason: 'no' } };
  assert.deepEqual(zeroIdIn(cancelled), { ...cancelled, params: { requestId: RENAMED_ZERO_ID, reason: 'no' } });
  assert.deepEqual(zeroIdOut({ jsonrpc: '2.0', id: RENAMED_ZERO_ID, result: {} }), { jsonrpc: '2.0', id: 0, result: {} });
  // The answer to the bridge's own request 0 (initialize) and other ids pass as they are.
  for (const message of [
    { jsonrpc: '2.0' as const, id: 0, result: {} },
    { jsonrpc: '2.0' as const, id: 3, method: 'roots/list' },
    { jsonrpc: '2.0' as const, method: 'notifications/cancelled', params: { requestId: 3 } },
  ]) {
    assert.equal(zeroIdIn(message), message);
    assert.equal(zeroIdOut(message), message);
  }
});

test("a relayed request whose server's connection closes is cancelled at the bridge's client, and said so", async () => {
  const c = await chain(() => undefined);
  try {
    void c.proxied.elicitInput(question).catch(() => undefined);
    const got = await until('the client asked', () => c.asked[0]);
    await c.proxiedSide.close();
    await until('notifications/cancelled', () => c.cancelledOf(got.id));
    const record = await until('the record', async () => (await c.relayEvents())[0]);
    assert.equal(record.outcome, 'cancelled');
    assert.equal(record.error, "the server's connection closed");
  } finally {
    await c.close();
  }
});

test('roots/list requests a server cancels in a loop are recorded at most once per ROOTS_RECORD_MS per server', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-relay-cancel-roots-'));
  // A client with roots that never answers: each request waits until it is cancelled.
  const fake = {
    getClientCapabilities: () => ({ roots: {} }),
    listRoots: (_params: unknown, options: RequestOptions) =>
      new Promise((_resolve, reject) => options.signal?.addEventListener('abort', () => reject(new Error('cancelled')))),
  } as unknown as Server;
  const relay = new BridgeClientRelay(() => fake, { roots: [], timeoutMs: 10_000 });
  relay.runLog = new RunLog(dir);
  await Promise.all(
    Array.from({ length: 200 }, (_, i) => {
      const stop = new AbortController();
      const asked = relay.listRoots({ server: i % 2 ? 'a' : 'b', runs: [], signal: stop.signal, stopped: () => 'cancelled by the server' });
      stop.abort();
      return asked.catch(() => undefined);
    }),
  );
  const records = (await readFile(join(dir, RUN_LOG_FILE), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.type === 'relay');
  assert.deepEqual(records.map((r) => [r.server, r.outcome]).sort(), [
    ['a', 'cancelled'],
    ['b', 'cancelled'],
  ]);
  assert.ok(ROOTS_RECORD_MS >= 1000);
});

const withDefaultsForm: Form = {
  type: 'object',
  properties: {
    name: { type: 'string', default: 'Ada' },
    count: { type: 'integer', default: 3 },
    subscribe: { type: 'boolean', default: true },
    off: { type: 'boolean', default: true },
    zero: { type: 'number', default: 7 },
    empty: { type: 'string', default: 'filled' },
    colour: { type: 'string', enum: ['red', 'blue'], default: 'red' },
    tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, default: ['a'] },
    note: { type: 'string' },
  },
  required: ['count', 'colour'],
};

test('defaults fill only the fields the client left out; a given false, 0 or empty string stays', () => {
  const given = { name: 'Grace', off: false, zero: 0, empty: '' };
  const filled = withDefaults(withDefaultsForm, given);
  assert.deepEqual(filled, { name: 'Grace', off: false, zero: 0, empty: '', count: 3, subscribe: true, colour: 'red', tags: ['a'] });
  assert.deepEqual(given, { name: 'Grace', off: false, zero: 0, empty: '' }, "the client's answer is not changed in place");
  // A required field with a default may be left out; the answer is checked with the defaults in.
  assert.deepEqual(answerWithDefaults(withDefaultsForm, { action: 'accept', content: {} }).content, withDefaults(withDefaultsForm, {}));
  assert.deepEqual(answerWithDefaults(withDefaultsForm, { action: 'accept' }).content, withDefaults(withDefaultsForm, {}));
  // Types are checked as before: a wrong one from the client is an error, not replaced by the default.
  assert.throws(
    () => answerWithDefaults(withDefaultsForm, { action: 'accept', content: { count: 'three' } }),
    (e: unknown) => e instanceof McpError && e.code === -32602 && /does not match requested schema/.test(e.message),
  );
  // A required field without a default left out is still an error.
  const strict: Form = { type: 'object', properties: { must: { type: 'string' } }, required: ['must'] };
  assert.throws(() => answerWithDefaults(strict, { action: 'accept', content: {} }), /does not match requested schema/);
  // Declined and cancelled answers carry no content: nothing is added.
  assert.deepEqual(answerWithDefaults(withDefaultsForm, { action: 'decline' }), { action: 'decline' });
  assert.deepEqual(answerWithDefaults(strict, { action: 'accept' }), { action: 'accept' });
});

test('the proxied server gets the answer with the defaults; a wrong type from the client is refused to it', async () => {
  let reply: ElicitResult = { action: 'accept', content: { name: 'Grace', off: false } };
  const c = await chain(() => reply);
  try {
    const answer = await c.proxied.elicitInput({ mode: 'form', message: 'Settings?', requestedSchema: withDefaultsForm });
    assert.deepEqual(answer, {
      action: 'accept',
      content: { name: 'Grace', off: false, count: 3, subscribe: true, zero: 7, empty: 'filled', colour: 'red', tags: ['a'] },
    });
    reply = { action: 'accept', content: { count: 'three' } };
    await assert.rejects(
      c.proxied.elicitInput({ mode: 'form', message: 'Settings?', requestedSchema: withDefaultsForm }),
      (e: unknown) => e instanceof McpError && e.code === -32602 && /does not match requested schema/.test(e.message),
    );
    const records = await c.relayEvents();
    assert.deepEqual(
      records.map((r) => [r.outcome, r.action ?? null]),
      [
        ['answered', 'accept'],
        ['failed', null],
      ],
    );
  } finally {
    await c.close();
  }
});
