// A task call the run stops: the server is asked to cancel the task (tasks/cancel), and
// notifications/cancelled goes only for the request still in flight, never for the tools/call
// that created the task nor for tasks/get polls already answered. The SDK's client over the
// guarded transport every proxied server link uses; the server is a fake that answers by hand.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Flow, GuardedTransport } from '../../src/bridge/proxy/guarded-transport.ts';
import { callAsTask } from '../../src/bridge/proxy/task-call.ts';
import { until } from '../helpers/wait.ts';

type Request = { id: string | number; method: string; params?: Record<string, unknown> };

/**
 * A server with one task: `holdPolls` leaves tasks/get unanswered (one in flight); `done` makes
 * the task complete, its result then read with tasks/result.
 */
async function taskServer(options: { holdPolls: () => boolean; done?: () => boolean }) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: JSONRPCMessage[] = [];
  const answered = new Set<string | number>();
  const task = (status: string) => ({
    taskId: 't1',
    status,
    ttl: null,
    createdAt: '2026-01-01T00:00:00Z',
    lastUpdatedAt: '2026-01-01T00:00:00Z',
    pollInterval: 5,
  });
  const answers: Record<string, (request: Request) => Record<string, unknown> | undefined> = {
    initialize: () => ({
      protocolVersion: '2025-11-25',
      capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } }, cancel: {} } },
      serverInfo: { name: 'tasks', version: '1' },
    }),
    'tools/call': () => ({ task: task('working') }),
    'tasks/get': () => (options.holdPolls() ? undefined : task(options.done?.() ? 'completed' : 'working')),
    'tasks/result': () => ({ content: [{ type: 'text', text: 'done' }] }),
    'tasks/cancel': () => task('cancelled'),
    ping: () => ({}),
  };
  serverSide.onmessage = (message) => {
    received.push(message);
    if (!('method' in message) || !('id' in message)) return;
    const result = answers[message.method]?.(message as Request);
    if (!result) return;
    answered.add(message.id);
    void serverSide.send({ jsonrpc: '2.0', id: message.id, result });
  };
  await serverSide.start();
  const guarded = new GuardedTransport(clientSide, { maxPerSecond: 1000, flow: new Flow(), onDropped: () => {} });
  const client = new Client({ name: 'task-test', version: '1' });
  await client.connect(guarded);
  const requests = (method: string) =>
    received.filter((m): m is JSONRPCMessage & Request => 'method' in m && m.method === method && 'id' in m);
  const cancelledIds = () =>
    received.flatMap((m) =>
      'method' in m && m.method === 'notifications/cancelled' ? [(m.params as { requestId: unknown }).requestId] : [],
    );
  return { client, requests, cancelledIds, answered };
}

test('a stopped task call cancels only its request in flight, and the task itself', async () => {
  let hold = false;
  const server = await taskServer({ holdPolls: () => hold });
  const stop = new AbortController();
  const cancelled: string[] = [];
  const call = callAsTask(
    server.client,
    { name: 'slow', arguments: {} },
    { signal: stop.signal, timeout: 10_000 },
    () => {},
    (id) => cancelled.push(id),
  );
  await until('three answered polls', () => server.requests('tasks/get').length >= 3);
  hold = true;
  const polls = server.requests('tasks/get').length;
  await until('a poll left in flight', () => server.requests('tasks/get').length > polls);
  stop.abort(new Error('the run was stopped'));
  await assert.rejects(call);
  await until('tasks/cancel', () => cancelled.length > 0);
  assert.deepEqual(cancelled, ['t1']);
  const inFlight = server.requests('tasks/get').at(-1)!.id;
  assert.deepEqual(server.cancelledIds(), [inFlight], 'only the poll still in flight');
  assert.ok(!server.answered.has(inFlight));
});

test('a task call that ends with its result sends no notifications/cancelled', async () => {
  let polled = 0;
  const server = await taskServer({ holdPolls: () => false, done: () => ++polled >= 3 });
  const result = await callAsTask(
    server.client,
    { name: 'slow', arguments: {} },
    { signal: new AbortController().signal, timeout: 10_000 },
    () => {},
    () => {},
  );
  assert.deepEqual(result.content, [{ type: 'text', text: 'done' }]);
  // The notices would have been sent as the call ended; a ping after them comes back after them.
  await server.client.ping();
  assert.deepEqual(server.cancelledIds(), []);
  assert.deepEqual(server.requests('tasks/cancel'), []);
});
