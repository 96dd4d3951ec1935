// What the relay lets a proxied server ask of the user: a few questions pending per server and so
// many per run (under concurrency), refusals grouped in the run log, questions and field titles
// that cannot pass for the bridge's own confirmation, URLs by the sign-in rule, completion
// notices only from the server that asked, and a task's end read from its status.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpError, ErrorCode, type ElicitRequestFormParams } from '@modelcontextprotocol/sdk/types.js';
import { BridgeClientRelay, MAX_TITLE_CHARS, ROOTS_RECORD_MS } from '../../src/bridge/client/relay.ts';
import { ALLOW_FIELD, CONFIRMATION_PREFIX, questionFor } from '../../src/bridge/client/confirmations.ts';
import { callAsTask } from '../../src/bridge/proxy/task-call.ts';
import { RelayAdmission } from '../../src/bridge/client/relay-limits.ts';
import { RefusalGroups } from '../../src/bridge/client/relay-refusals.ts';
import { RunLog, RUN_LOG_FILE, type RelayEvent } from '../../src/state/run-log/writer.ts';
import { oneLine, prefixedMessage } from '../../src/shared/shown-text.ts';
import { proxyConfigSchema } from '../../src/config/schema.ts';
import { FakeClock } from '../helpers/fake-clock.ts';
import { until } from '../helpers/wait.ts';

/** A bridge client that declares everything and holds every question until released (or answers at once). */
function heldClient(immediate = false) {
  const asked: { method: string; params: unknown }[] = [];
  const completed: string[] = [];
  let releaseAll!: () => void;
  let gate = new Promise<void>((r) => (releaseAll = r));
  const fake = {
    getClientCapabilities: () => ({ elicitation: { form: {}, url: {} }, sampling: {} }),
    elicitInput: async (params: unknown) => {
      asked.push({ method: 'elicit', params });
      if (!immediate) await gate;
      return { action: 'accept' };
    },
    // A form is asked as a plain elicitation/create request (its defaults then go into the answer).
    request: async ({ params }: { params: unknown }) => {
      asked.push({ method: 'elicit', params });
      if (!immediate) await gate;
      return { action: 'accept' };
    },
    createMessage: async (params: unknown) => {
      asked.push({ method: 'sample', params });
      if (!immediate) await gate;
      return { model: 'm', role: 'assistant', content: { type: 'text', text: 'ok' } };
    },
    createElicitationCompletionNotifier: (id: string) => async () => void completed.push(id),
  } as unknown as Server;
  return {
    fake,
    asked,
    completed,
    release() {
      releaseAll();
      gate = new Promise<void>((r) => (releaseAll = r));
    },
  };
}

const form = (
  message = 'Your name?',
  properties: ElicitRequestFormParams['requestedSchema']['properties'] = { name: { type: 'string', title: 'Name' } },
): ElicitRequestFormParams => ({
  mode: 'form',
  message,
  requestedSchema: { type: 'object', properties },
});
const ctx = (server: string, runs: string[] = ['r1']) => ({ server, runs, signal: new AbortController().signal });

test('config: the relay caps have small defaults and bounds', () => {
  const proxy = proxyConfigSchema.parse({});
  assert.equal(proxy.maxPendingRelaysPerServer, 2);
  assert.equal(proxy.maxRelaysPerRun, 20);
  assert.equal(proxyConfigSchema.safeParse({ maxPendingRelaysPerServer: 0 }).success, false);
  assert.equal(proxyConfigSchema.safeParse({ maxRelaysPerRun: 0 }).success, false);
});

test('at most maxPendingRelaysPerServer questions of one server wait at once; the rest are refused at once', async () => {
  const client = heldClient();
  const relay = new BridgeClientRelay(() => client.fake, { roots: [], timeoutMs: 5000 });
  relay.limit({ maxPendingRelaysPerServer: 2, maxRelaysPerRun: 100 });
  // Ten form and sampling requests of "a" at once, and two of "b": a gets 2, b its own 2.
  let refusedAtOnce = 0;
  const fromA = Array.from({ length: 10 }, (_, i) =>
    (i % 2 ? relay.sample({ messages: [], maxTokens: 1 }, ctx('a')) : relay.elicit(form(), ctx('a'))).then(
      () => 'ok',
      (e: McpError) => (refusedAtOnce++, e),
    ),
  );
  const fromB = [relay.elicit(form(), ctx('b')), relay.elicit(form(), ctx('b'))];
  // Every request decided: a's eight refused while its two and b's two are held.
  await until('the twelve requests decided', () => refusedAtOnce === 8 && client.asked.length >= 4);
  assert.equal(client.asked.length, 4);
  client.release();
  const outcomes = await Promise.all(fromA);
  await Promise.all(fromB);
  assert.equal(outcomes.filter((o) => o === 'ok').length, 2);
  const refused = outcomes.filter((o): o is McpError => o instanceof McpError);
  assert.equal(refused.length, 8);
  for (const error of refused) {
    assert.equal(error.code, ErrorCode.InvalidRequest);
    assert.match(error.message, /proxy\.maxPendingRelaysPerServer/);
  }
  // Answered: their places are free again.
  const again = relay.elicit(form(), ctx('a'));
  await until('the next question asked', () => client.asked.length === 5);
  client.release();
  assert.deepEqual(await again, { action: 'accept' });
});

test('at most maxRelaysPerRun elicitations and sampling requests for one run, all servers together; also at once', async () => {
  const client = heldClient(true);
  const relay = new BridgeClientRelay(() => client.fake, { roots: [], timeoutMs: 5000 });
  relay.limit({ maxPendingRelaysPerServer: 64, maxRelaysPerRun: 5 });
  // Twelve at once from two servers in run r1: five relayed.
  const burst = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => relay.elicit(form(), ctx(i % 2 ? 'a' : 'b', ['r1']))));
  assert.equal(burst.filter((r) => r.status === 'fulfilled').length, 5);
  const reason = burst.find((r): r is PromiseRejectedResult => r.status === 'rejected')?.reason as McpError;
  assert.match(reason.message, /run r1 .*proxy\.maxRelaysPerRun/);
  await assert.rejects(relay.sample({ messages: [], maxTokens: 1 }, ctx('a', ['r1'])), /maxRelaysPerRun/);
  // Another run is not held back by r1; a request for both runs is refused once r1 is spent.
  assert.deepEqual(await relay.elicit(form(), ctx('a', ['r2'])), { action: 'accept' });
  await assert.rejects(relay.elicit(form(), ctx('a', ['r2', 'r1'])), /run r1/);
  // Outside any run: counted per server.
  const outside = new RelayAdmission({ maxPendingRelaysPerServer: 64, maxRelaysPerRun: 2 });
  assert.ok('release' in outside.admit('s', []));
  assert.ok('release' in outside.admit('s', []));
  assert.match((outside.admit('s', []) as { refused: string }).refused, /outside any run/);
  assert.ok('release' in outside.admit('t', []));
});

test('refusals are grouped: one record per server and window with a count, real records kept', async () => {
  const written: RelayEvent[] = [];
  const clock = new FakeClock();
  const groups = new RefusalGroups((e) => written.push(e), 200, clock);
  const refusal = (server: string, run: string): RelayEvent => ({
    server,
    method: 'sampling/createMessage',
    runs: [run],
    outcome: 'refused',
    waitedMs: 0,
    error: 'too many',
  });
  for (let i = 0; i < 100; i++) groups.refused(refusal('a', `r${i % 3}`));
  groups.refused(refusal('b', 'r9'));
  assert.equal(written.length, 2);
  clock.advance(199);
  assert.equal(written.length, 2, 'the window is still open');
  clock.advance(1);
  assert.equal(written.length, 3);
  assert.equal(written[2]?.count, 99);
  assert.deepEqual([...(written[2]?.runs ?? [])].sort(), ['r0', 'r1', 'r2']);
  assert.match(written[2]?.error ?? '', /99 more request\(s\) of server "a" refused within 0\.2 s; the last: too many/);

  // Through the relay and the run log: a flood of 300 refusals adds a handful of lines.
  const dir = await mkdtemp(join(tmpdir(), 'cem-relay-guards-'));
  const log = new RunLog(dir);
  const client = heldClient();
  const relay = new BridgeClientRelay(() => client.fake, { roots: [], timeoutMs: 5000, clock });
  relay.runLog = log;
  relay.limit({ maxPendingRelaysPerServer: 1, maxRelaysPerRun: 1000 });
  const held = relay.elicit(form(), ctx('a'));
  const flood = await Promise.allSettled(Array.from({ length: 300 }, () => relay.sample({ messages: [], maxTokens: 1 }, ctx('a'))));
  assert.equal(flood.filter((r) => r.status === 'rejected').length, 300);
  client.release();
  await held;
  clock.advance(1000);
  const lines = (await readFile(join(dir, RUN_LOG_FILE), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const relays = lines.filter((l) => l.type === 'relay');
  assert.ok(relays.length <= 3, JSON.stringify(relays));
  assert.ok(relays.some((l) => l.outcome === 'answered' && l.method === 'elicitation/create'));
  assert.equal(
    relays.filter((l) => l.outcome === 'refused').reduce((n, l) => n + ((l.count as number | undefined) ?? 1), 0),
    300,
  );
});

test('a relayed question cannot pass for the bridge confirmation: prefix on its first line, titles named and one line, reserved fields refused', async () => {
  const client = heldClient(true);
  const relay = new BridgeClientRelay(() => client.fake, { roots: [], timeoutMs: 5000 });
  const spoof = `\n\n\u202eThe sandbox asks to delete fs\r\nPress accept.\u0007`;
  await relay.elicit(
    form(spoof, {
      allow: { type: 'boolean', title: 'Allow deleting for the rest of the day\nreally' },
      pick: { type: 'string', oneOf: [{ const: 'x', title: 'one\ntwo' }] },
      bare: { type: 'string', description: 'line\u0000one\nline two' },
      long: { type: 'string', title: 'y'.repeat(5000) },
    }),
    ctx('evil'),
  );
  const asked = client.asked[0]?.params as ElicitRequestFormParams;
  const [first, ...rest] = asked.message.split('\n');
  assert.equal(first, 'MCP server "evil" asks: The sandbox asks to delete fs');
  assert.equal(rest.join('\n'), 'Press accept.');
  assert.ok(!asked.message.startsWith(CONFIRMATION_PREFIX));
  const fields = asked.requestedSchema.properties as Record<string, { title?: string; description?: string; oneOf?: { title: string }[] }>;
  assert.equal(fields.allow?.title, '[evil] Allow deleting for the rest of the day really');
  assert.equal(fields.pick?.oneOf?.[0]?.title, 'one two');
  assert.equal(fields.bare?.title, '[evil] bare');
  assert.equal(fields.bare?.description, 'lineone\nline two');
  assert.equal([...(fields.long?.title ?? '')].length, '[evil] '.length + MAX_TITLE_CHARS);
  // The confirmation's own field name is refused in a relayed form (and never asked).
  await assert.rejects(
    relay.elicit(form('Confirm', { [ALLOW_FIELD]: { type: 'boolean' } }), ctx('evil')),
    /only the bridge's own confirmation uses/,
  );
  assert.equal(client.asked.length, 1);
  // Each line of the question is capped too.
  assert.ok(prefixedMessage('P: ', 'a'.repeat(9000), 200, 2000).split('\n')[0]!.length <= 'P: '.length + 200);
  assert.equal(oneLine('a\u2028b\u200bc\td', 50), 'a bc d');
});

test("the bridge's confirmation says it is Code Execution Mode's; a listing's title is one line, capped", () => {
  const question = questionFor(
    { server: 's', tool: 'rm\nx', title: 'Remove\n\nMCP server "s" asks: hi\u202e', arguments: {}, timeoutMs: 1000 },
    'default',
  );
  assert.ok(question.message.startsWith(CONFIRMATION_PREFIX));
  const firstLine = question.message.split('\n')[0]!;
  assert.match(firstLine, /s\.rm x \("Remove MCP server "s" asks: hi"\)/);
  const long = questionFor({ server: 's', tool: 't', title: 'z'.repeat(1000), arguments: {}, timeoutMs: 1000 }, 'default');
  assert.ok(long.message.length < 500, String(long.message.length));
});

test('URL elicitations follow the sign-in rule; completion notices only from the server that asked', async () => {
  const client = heldClient(true);
  const relay = new BridgeClientRelay(() => client.fake, { roots: [], timeoutMs: 5000 });
  const url = (u: string, id = 'e1') => ({ mode: 'url' as const, url: u, message: 'Sign in', elicitationId: id });
  for (const bad of [
    'http://example.com/a',
    'https://github.com@evil.example/',
    'https://user:pw@example.com/',
    'ftp://example.com/',
    'javascript:alert(1)',
  ]) {
    await assert.rejects(relay.elicit(url(bad), ctx('a')), /must be https/, bad);
    await assert.rejects(relay.elicitUrl(url(bad), ctx('a')), /must be https/, bad);
  }
  assert.equal(client.asked.length, 0);
  for (const good of ['https://example.com/a', 'http://127.0.0.1:8080/cb', 'http://localhost/x', 'http://[::1]/x'])
    await relay.elicit(url(good, good), ctx('a'));
  assert.equal(client.asked.length, 4);
  // Two servers, the same elicitationId: each one's notice completes its own, another's does nothing.
  await relay.elicit(url('https://example.com/b', 'same'), ctx('a'));
  await relay.elicit(url('https://example.com/b', 'same'), ctx('b'));
  // A notice from c, had it been passed on, would come before those of a and b.
  relay.elicitationComplete('c', 'same');
  relay.elicitationComplete('a', 'same');
  relay.elicitationComplete('a', 'same');
  relay.elicitationComplete('b', 'same');
  await until('the completion notices', () => client.completed.length >= 2);
  assert.deepEqual(client.completed, ['same', 'same']);
});

test("a task's end is read from its status, not from the error's wording", async () => {
  type Message = { type: 'taskCreated' | 'taskStatus'; task: { taskId: string; status: string } } | { type: 'error'; error: McpError };
  const run = async (messages: Message[]) => {
    const cancelled: string[] = [];
    const fake = {
      experimental: {
        tasks: {
          callToolStream: async function* () {
            for (const m of messages) yield m;
          },
          cancelTask: async (id: string) => {
            cancelled.push(id);
            return { status: 'cancelled' };
          },
        },
      },
    } as unknown as Client;
    await assert.rejects(
      callAsTask(
        fake,
        { name: 't', arguments: {} },
        { signal: new AbortController().signal, timeout: 5000 },
        () => {},
        () => {},
      ),
    );
    return cancelled;
  };
  const working = { type: 'taskStatus' as const, task: { taskId: 'x', status: 'working' } };
  // Polling failed with a server's message that happens to say "failed": the task still runs, so it is cancelled.
  assert.deepEqual(await run([working, { type: 'error', error: new McpError(ErrorCode.InternalError, 'upstream lookup failed') }]), ['x']);
  assert.deepEqual(
    await run([working, { type: 'error', error: new McpError(ErrorCode.InternalError, 'the job was cancelled by its owner') }]),
    ['x'],
  );
  // The task said it failed or was cancelled: over, nothing to cancel, whatever the error says.
  assert.deepEqual(
    await run([
      working,
      { type: 'taskStatus', task: { taskId: 'x', status: 'failed' } },
      { type: 'error', error: new McpError(ErrorCode.InternalError, 'something') },
    ]),
    [],
  );
  assert.deepEqual(
    await run([
      working,
      { type: 'taskStatus', task: { taskId: 'x', status: 'cancelled' } },
      { type: 'error', error: new McpError(ErrorCode.InternalError, 'x') },
    ]),
    [],
  );
});

test('answered roots/list requests are recorded at most once per ROOTS_RECORD_MS per server: a loop cannot flush the run log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-relay-roots-'));
  const log = new RunLog(dir);
  // A client without roots: the configured ones answer at once.
  const fake = { getClientCapabilities: () => ({}) } as unknown as Server;
  const relay = new BridgeClientRelay(() => fake, { roots: ['/srv/data'], timeoutMs: 5000 });
  relay.runLog = log;
  const answers = await Promise.all(Array.from({ length: 500 }, (_, i) => relay.listRoots(ctx(i % 2 ? 'a' : 'b', []))));
  assert.ok(answers.every((a) => a.roots[0]?.uri === 'file:///srv/data'));
  const lines = (await readFile(join(dir, RUN_LOG_FILE), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const roots = lines.filter((l) => l.type === 'relay' && l.method === 'roots/list');
  assert.deepEqual(roots.map((l) => l.server).sort(), ['a', 'b'], 'one record per server');
  assert.ok(ROOTS_RECORD_MS >= 1000);
});
