// The sandbox's network as the bridge answers for it: the question (wording, form, escaping), the
// answers with a scripted asker (once, session, always, deny), no client to ask, a timeout, the
// run's clock paused and its signal, the shared queue with confirmations; and the run log's
// egress and network-question lines, written and read back, with the cap on records per run; the
// run panel's Network section, which "always" answers the extension adds to the user's setting, and
// a question waiting for its answer as the status bar and the notification say it.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ErrorCode, McpError, type ElicitRequestFormParams, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { ConfirmationGate, type ConfirmationAsker } from '../../src/bridge/client/confirmations.ts';
import {
  NETWORK_ALWAYS,
  NETWORK_FIELD,
  NETWORK_ONCE,
  NETWORK_SESSION,
  NetworkGrants,
  networkHandler,
  networkQuestion,
  type NetworkQuestionsOptions,
} from '../../src/bridge/client/network-questions.ts';
import { confirmationWordingReason, reservedFieldReason } from '../../src/bridge/client/relay-imitation.ts';
import { parseRunLog, waitingForNetworkQuestion } from '../../src/state/run-log/reader.ts';
import { MAX_EGRESS_RECORDS_PER_RUN, RunLog, RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import type { EgressRecord } from '../../src/sandbox/index.ts';
import { alwaysAnswers, networkSection, withAllowed } from '../../src/extension/views/network-text.ts';
import {
  pendingConfirmations,
  pendingNetworkMessage,
  pendingNetworkQuestions,
  pendingText,
} from '../../src/extension/views/confirmation-text.ts';

const target = { host: 'api.example.com', port: 443 };
const context = (session = 'default') => ({ runId: 'r', session, signal: new AbortController().signal });

/** An asker that answers with `answer` and keeps what it was asked. */
function scripted(answer: (params: ElicitRequestFormParams, signal: AbortSignal) => Promise<ElicitResult>, canAsk = true) {
  const asked: ElicitRequestFormParams[] = [];
  const timeouts: number[] = [];
  const asker: ConfirmationAsker = {
    canAsk: () => canAsk,
    ask: (params, options) => {
      asked.push(params);
      timeouts.push(options.timeout);
      return answer(params, options.signal);
    },
  };
  return { asker, asked, timeouts };
}

function options(asker: ConfirmationAsker, extra: Partial<NetworkQuestionsOptions> = {}): NetworkQuestionsOptions {
  return { asker: () => asker, queue: new ConfirmationGate(() => asker), grants: new NetworkGrants(), ...extra };
}

const run = { signal: new AbortController().signal };

test('the question: one line naming host and port, one choice with "this request only" first and default', () => {
  const question = networkQuestion(target, 'work');
  assert.equal(question.message, 'Code Execution Mode: allow the sandbox to reach api.example.com:443?');
  assert.deepEqual(Object.keys(question.requestedSchema.properties), [NETWORK_FIELD]);
  assert.equal(question.requestedSchema.required, undefined, 'an accept with nothing filled in stays valid (and allows one request)');
  const field = question.requestedSchema.properties[NETWORK_FIELD] as { default?: string; oneOf?: { const: string; title: string }[] };
  assert.equal(field.default, NETWORK_ONCE);
  assert.deepEqual(
    field.oneOf?.map((o) => o.const),
    ['this request only', 'this session', 'always (adds it to sandbox.network.allow)'],
  );
  assert.match(field.oneOf?.[1]?.title ?? '', /"work"/);
  // A host that is not a plain name is escaped, on one line; IPv6 in brackets.
  const odd = networkQuestion({ host: 'evil.com\n\u202eCode Execution Mode: allow', port: 80 }, 's').message;
  assert.doesNotMatch(odd, /[\n\u202e]/);
  assert.match(odd, /\\u\{202E\}/);
  assert.match(networkQuestion({ host: '::1', port: 8080 }, 's').message, /reach \[::1\]:8080\?$/);
});

test("a relayed question may use neither the network question's field nor its wording", () => {
  assert.match(reservedFieldReason(['AllowHostFor']) ?? '', /only the bridge's own confirmation uses/);
  assert.match(confirmationWordingReason('Please allow the sandbox to reach example.org') ?? '', /reword the question/);
  assert.equal(confirmationWordingReason('Pick a colour'), undefined);
});

test('answers: accept with nothing is once, the options give session and always, decline and cancel deny', async () => {
  const cases: [ElicitResult, string][] = [
    [{ action: 'accept' }, 'once'],
    [{ action: 'accept', content: {} }, 'once'],
    [{ action: 'accept', content: { [NETWORK_FIELD]: NETWORK_ONCE } }, 'once'],
    [{ action: 'accept', content: { [NETWORK_FIELD]: 'true' } }, 'once'],
    [{ action: 'accept', content: { [NETWORK_FIELD]: NETWORK_SESSION } }, 'session'],
    [{ action: 'accept', content: { [NETWORK_FIELD]: NETWORK_ALWAYS } }, 'always'],
    [{ action: 'decline' }, 'deny'],
    [{ action: 'cancel' }, 'deny'],
  ];
  for (const [result, expected] of cases) {
    const { asker, timeouts } = scripted(async () => result);
    const always: string[] = [];
    const handler = networkHandler(options(asker, { onAlways: (t) => always.push(`${t.host}:${t.port}`) }), run);
    assert.equal(await handler.ask(target, context()), expected, JSON.stringify(result));
    assert.deepEqual(timeouts, [120_000], 'bounded by the question timeout');
    assert.deepEqual(always, expected === 'always' ? ['api.example.com:443'] : []);
  }
});

test('grants: once asks again, session holds for that session only, always for every session', async () => {
  const { asker, asked } = scripted(async (params) => ({
    action: 'accept',
    content: {
      [NETWORK_FIELD]: params.message.includes('session.example')
        ? NETWORK_SESSION
        : params.message.includes('always.example')
          ? NETWORK_ALWAYS
          : NETWORK_ONCE,
    },
  }));
  const shared = options(asker);
  const handler = networkHandler(shared, run);
  await handler.ask(target, context());
  await handler.ask(target, context());
  assert.equal(asked.length, 2, 'once: asked each time');
  const session = { host: 'session.example', port: 443 };
  assert.equal(await handler.ask(session, context('a')), 'session');
  assert.equal(await networkHandler(shared, run).ask(session, context('a')), 'session');
  assert.equal(asked.length, 3, 'a later run of the session is not asked');
  await networkHandler(shared, run).ask(session, context('b'));
  assert.equal(asked.length, 4, 'another session is asked');
  const always = { host: 'always.example', port: 80 };
  assert.equal(await handler.ask(always, context('a')), 'always');
  assert.equal(await networkHandler(shared, run).ask(always, context('c')), 'always');
  assert.equal(asked.length, 5, 'always: no session is asked again');
});

test("the run's own session names the grant and the question, whatever session the proxy was started for", async () => {
  const { asker, asked } = scripted(async () => ({ action: 'accept', content: { [NETWORK_FIELD]: NETWORK_SESSION } }));
  const shared = options(asker);
  // Two sessions whose containers' proxies were both started as the spare.
  assert.equal(await networkHandler(shared, { ...run, session: 'a' }).ask(target, context('spare')), 'session');
  assert.match(JSON.stringify(asked[0]!.requestedSchema), /session \\"a\\"/);
  await networkHandler(shared, { ...run, session: 'b' }).ask(target, context('spare'));
  assert.equal(asked.length, 2, "session a's grant is not session b's");
  await networkHandler(shared, { ...run, session: 'a' }).ask(target, context('spare'));
  assert.equal(asked.length, 2);
});

test('no client to ask: rejected with a message naming the setting, and on record', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-network-unit-'));
  const runLog = new RunLog(dir);
  const { asker, asked } = scripted(async () => ({ action: 'accept' }), false);
  const handler = networkHandler(options(asker, { runLog }), run);
  await assert.rejects(
    handler.ask(target, context()),
    (e: Error) =>
      e.name === 'NetworkQuestionUnavailable' &&
      /codeExecutionMode\.sandbox\.network\.allow/.test(e.message) &&
      /"api\.example\.com:443"/.test(e.message) &&
      e.message.length <= 200,
  );
  const none = networkHandler({ ...options(asker), asker: () => undefined }, run);
  await assert.rejects(none.ask(target, context()), /cannot ask \(none is connected/);
  assert.equal(asked.length, 0);
  runLog.close();
  const [record] = parseRunLog(await readFile(join(dir, RUN_LOG_FILE), 'utf8'));
  assert.deepEqual(
    record!.networkQuestions.map((q) => q.answer),
    ['no-client'],
  );
});

test('a timeout denies; the run signal and the request signal stop the question and deny', async () => {
  const { asker } = scripted(async () => {
    throw new McpError(ErrorCode.RequestTimeout, 'Request timed out');
  });
  const dir = await mkdtemp(join(tmpdir(), 'cem-network-unit-'));
  const runLog = new RunLog(dir);
  assert.equal(await networkHandler(options(asker, { runLog, timeoutMs: 50 }), run).ask(target, context()), 'deny');
  // The question waits until its signal aborts, as the client's request would.
  const waiting = scripted(
    (_params, signal) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })),
  );
  const stopRun = new AbortController();
  const pending = networkHandler(options(waiting.asker, { runLog }), { signal: stopRun.signal }).ask(target, context());
  await new Promise((r) => setImmediate(r));
  stopRun.abort();
  assert.equal(await pending, 'deny');
  const stopRequest = new AbortController();
  const second = networkHandler(options(waiting.asker, { runLog }), run).ask(target, { ...context(), signal: stopRequest.signal });
  await new Promise((r) => setImmediate(r));
  stopRequest.abort();
  assert.equal(await second, 'deny');
  // Stopped before its turn came: not asked at all.
  const before = waiting.asked.length;
  assert.equal(await networkHandler(options(waiting.asker, { runLog }), { signal: AbortSignal.abort() }).ask(target, context()), 'deny');
  assert.equal(waiting.asked.length, before);
  runLog.close();
  const [record] = parseRunLog(await readFile(join(dir, RUN_LOG_FILE), 'utf8'));
  assert.deepEqual(
    record!.networkQuestions.map((q) => q.answer),
    ['timeout', 'stopped', 'stopped', 'stopped'],
  );
});

test("the run's clock is paused while the user is asked (the ask context's clock first, else the run's)", async () => {
  let release!: () => void;
  const { asker } = scripted(() => new Promise((resolve) => (release = () => resolve({ action: 'accept' }))));
  const paused: string[] = [];
  const pause =
    (name: string) =>
    <T>(work: Promise<T>): Promise<T> => {
      paused.push(`${name} start`);
      return work.finally(() => paused.push(`${name} end`));
    };
  const handler = networkHandler(options(asker), { ...run, untimed: pause('run') });
  const answer = handler.ask(target, context());
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(paused, ['run start'], 'paused while the question is open');
  release();
  assert.equal(await answer, 'once');
  assert.deepEqual(paused, ['run start', 'run end']);
  paused.length = 0;
  const second = handler.ask(target, { ...context(), untimed: pause('request') } as Parameters<typeof handler.ask>[1]);
  await new Promise((r) => setImmediate(r));
  release();
  await second;
  assert.deepEqual(paused, ['request start', 'request end']);
});

test('network questions wait their turn behind a confirmation being asked (one question at a time)', async () => {
  const order: string[] = [];
  let releaseFirst!: () => void;
  const asker: ConfirmationAsker = {
    canAsk: () => true,
    ask: async (params) => {
      const what = params.message.includes('reach') ? 'network' : 'confirmation';
      order.push(`${what} asked`);
      if (what === 'confirmation') await new Promise<void>((resolve) => (releaseFirst = resolve));
      order.push(`${what} answered`);
      return { action: 'accept' };
    },
  };
  const gate = new ConfirmationGate(() => asker);
  const confirmed = gate.confirm({ server: 's', tool: 'rm', arguments: {}, timeoutMs: 1000 }, context());
  const network = networkHandler({ asker: () => asker, queue: gate, grants: new NetworkGrants() }, run).ask(target, context());
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['confirmation asked']);
  releaseFirst();
  await Promise.all([confirmed, network]);
  assert.deepEqual(order, ['confirmation asked', 'confirmation answered', 'network asked', 'network answered']);
});

test('records: each request a run-log line under its run, read back; beyond the cap counted in one line', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-network-unit-'));
  const runLog = new RunLog(dir);
  runLog.runStarted({ run: 'r', session: 'default', code: 'x', timeoutMs: 1000 });
  const handler = networkHandler({ ...options(scripted(async () => ({ action: 'accept' })).asker), runLog }, run);
  const entry: EgressRecord = {
    runId: 'r',
    host: 'api.example.com',
    port: 443,
    method: 'CONNECT',
    address: '93.184.216.34',
    decision: 'allowed',
    bytesOut: 517,
    bytesIn: 5120,
    durationMs: 12.345,
  };
  handler.record(entry);
  handler.record({
    ...entry,
    method: 'GET',
    port: 80,
    decision: 'refused',
    bytesIn: 0,
    bytesOut: 0,
    reason: 'not listed in sandbox.network.allow',
  });
  for (let i = 0; i < MAX_EGRESS_RECORDS_PER_RUN + 5; i++) handler.record({ ...entry, decision: i % 2 ? 'capped' : 'allowed' });
  runLog.runEnded(
    {
      runId: 'r',
      session: 'default',
      status: 'ok',
      durationMs: 5,
      stdout: '',
      stderr: '',
      value: null,
      error: null,
      images: [],
      truncated: false,
      sessionLost: false,
    } as unknown as Parameters<RunLog['runEnded']>[0],
    { toolCalls: 0 },
  );
  runLog.close();
  const [record] = parseRunLog(await readFile(join(dir, RUN_LOG_FILE), 'utf8'));
  assert.equal(record!.egress.length, MAX_EGRESS_RECORDS_PER_RUN);
  const { time: _time, ...first } = record!.egress[0]!;
  assert.deepEqual(first, {
    host: 'api.example.com',
    port: 443,
    method: 'CONNECT',
    address: '93.184.216.34',
    decision: 'allowed',
    bytesOut: 517,
    bytesIn: 5120,
    durationMs: 12.3,
  });
  assert.equal(record!.egress[1]!.reason, 'not listed in sandbox.network.allow');
  assert.equal(record!.omittedEgress?.count, 7);
  assert.equal((record!.omittedEgress?.byDecision.allowed ?? 0) + (record!.omittedEgress?.byDecision.capped ?? 0), 7);
  // A line of a later bridge with a decision this reader does not know still reads.
  const [later] = parseRunLog(
    JSON.stringify({
      type: 'egress',
      time: '2026-01-01T00:00:00Z',
      run: 'x',
      host: 'h',
      port: 1,
      method: 'GET',
      decision: 'new-kind',
      bytesOut: 0,
      bytesIn: 0,
      durationMs: 0,
    }),
  );
  assert.equal(later!.egress[0]!.decision, 'new-kind');
});

test("the run panel's Network section: each request and question, escaped; the count beyond the budget", () => {
  const html = networkSection({
    egress: [
      {
        time: 't',
        host: 'api.example.com',
        port: 443,
        method: 'CONNECT',
        address: '93.184.216.34',
        decision: 'allowed',
        bytesOut: 517,
        bytesIn: 20480,
        durationMs: 1500,
      },
      {
        time: 't',
        host: '<b>x</b>',
        port: 80,
        method: 'GET',
        decision: 'refused',
        bytesOut: 0,
        bytesIn: 0,
        durationMs: 1,
        reason: 'not <listed>',
      },
    ],
    omittedEgress: { count: 3, byDecision: { capped: 3 } },
    networkQuestions: [{ time: '2026-01-01T00:00:00.000Z', host: '::1', port: 8080, answer: 'declined', waitedMs: 2000 }],
  });
  assert.match(html, /<code>api\.example\.com:443<\/code> <span class="note">\(93\.184\.216\.34\)<\/span>/);
  assert.match(html, /<td><code>CONNECT<\/code><\/td><td>allowed<\/td><td>517 bytes<\/td><td>20 KiB<\/td>/);
  assert.match(html, /class="bad"><td><code>&lt;b&gt;x&lt;\/b&gt;:80<\/code>/);
  assert.match(html, /not &lt;listed&gt;/);
  assert.doesNotMatch(html, /<b>x/);
  assert.match(html, /3 more requests not logged one by one .*capped 3/);
  assert.match(html, /<code>\[::1\]:8080<\/code><\/td><td>declined<\/td>/);
  assert.equal(networkSection({ egress: [], networkQuestions: [] }), '');
});

test('"always" answers of this window\'s runs only, each once; the user\'s list gets the host once', () => {
  const runs = parseRunLog(
    [
      { type: 'run-start', run: 'a', session: 's', time: '2026-01-01T00:00:00.000Z', code: 'x', owner: 'me' },
      {
        type: 'network-question',
        run: 'a',
        session: 's',
        time: '2026-01-01T00:00:01.000Z',
        host: 'api.example.com',
        port: 443,
        answer: 'always',
        waitedMs: 5,
      },
      {
        type: 'network-question',
        run: 'a',
        session: 's',
        time: '2026-01-01T00:00:02.000Z',
        host: 'other.example',
        port: 80,
        answer: 'once',
        waitedMs: 5,
      },
      { type: 'run-start', run: 'b', session: 's', time: '2026-01-01T00:00:03.000Z', code: 'x', owner: 'another window' },
      {
        type: 'network-question',
        run: 'b',
        session: 's',
        time: '2026-01-01T00:00:04.000Z',
        host: 'theirs.example',
        port: 443,
        answer: 'always',
        waitedMs: 5,
      },
    ]
      .map((line) => JSON.stringify(line))
      .join('\n'),
  );
  assert.deepEqual(
    alwaysAnswers(runs, 'me').map((a) => a.entry),
    ['api.example.com:443'],
  );
  assert.deepEqual(alwaysAnswers(runs, undefined), []);
  assert.deepEqual(withAllowed(['pypi.org'], 'api.example.com:443'), ['pypi.org', 'api.example.com:443']);
  assert.deepEqual(withAllowed(['API.example.com:443'], 'api.example.com:443'), ['API.example.com:443']);
});

test('grants: forgetting "always" (the setting decides from then on) asks again', async () => {
  const grants = new NetworkGrants();
  grants.grant('s', target, 'always');
  grants.grant('s', { host: 'b', port: 1 }, 'session');
  assert.equal(grants.answerFor('other', target), 'always');
  grants.forgetAlways();
  assert.equal(grants.answerFor('other', target), undefined);
  assert.equal(grants.answerFor('s', { host: 'b', port: 1 }), 'session');
});

test('a question waiting for its answer: on record when asked, said in the status bar and the notification, gone once answered', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-network-unit-'));
  const runLog = new RunLog(dir);
  runLog.runStarted({ run: 'r', session: 'work', code: 'x', timeoutMs: 60_000 });
  let release!: () => void;
  const { asker } = scripted(() => new Promise((resolve) => (release = () => resolve({ action: 'decline' }))));
  const pending = networkHandler(options(asker, { runLog }), run).ask({ host: 'localhost', port: 8080 }, context('work'));
  await new Promise((r) => setImmediate(r));
  const waiting = parseRunLog(await readFile(join(dir, RUN_LOG_FILE), 'utf8'));
  assert.equal(waitingForNetworkQuestion(waiting[0]!), true);
  const open = pendingNetworkQuestions(waiting);
  assert.deepEqual(
    open.map((q) => [q.run, q.session, q.host, q.port]),
    [['r', 'work', 'localhost', 8080]],
  );
  assert.equal(pendingText([], open), '$(bell-dot) Answer a network question');
  assert.equal(pendingText([], [...open, ...open]), '$(bell-dot) Answer 2 network questions');
  assert.match(
    pendingNetworkMessage(open[0]!),
    /session "work" asks to reach localhost:8080 and waits for your answer.*Respond, then Enter, allows this one request/,
  );
  assert.match(networkSection(waiting[0]!), /<code>localhost:8080<\/code><\/td><td>waiting for your answer<\/td>/);
  // Another window's bridge: not this window's to show.
  assert.deepEqual(pendingNetworkQuestions(waiting, Date.now(), 'another window'), []);
  release();
  assert.equal(await pending, 'deny');
  runLog.close();
  const [answered] = parseRunLog(await readFile(join(dir, RUN_LOG_FILE), 'utf8'));
  assert.equal(waitingForNetworkQuestion(answered!), false);
  assert.deepEqual(pendingNetworkQuestions([answered!]), []);
  assert.deepEqual(
    answered!.networkQuestions.map((q) => [q.host, q.answer, q.asked !== undefined, typeof q.waitedMs]),
    [['localhost', 'declined', true, 'number']],
  );
});

test('the status bar with both kinds waiting counts them together; tool confirmations alone keep their words', () => {
  const time = new Date().toISOString();
  const runs = parseRunLog(
    [
      { type: 'run-start', run: 'a', session: 'default', time, code: 'x', timeoutMs: 60_000 },
      { type: 'confirmation', run: 'a', time, server: 'fs', tool: 'rm', arguments: {}, phase: 'asked' },
      { type: 'run-start', run: 'b', session: 'default', time, code: 'y', timeoutMs: 60_000 },
      { type: 'network-question', run: 'b', session: 'default', time, phase: 'asked', host: 'pypi.org', port: 443 },
      // Lines of an older bridge (answered only) never wait.
      { type: 'network-question', run: 'b', session: 'default', time, host: 'old.example', port: 80, answer: 'once', waitedMs: 1 },
    ]
      .map((line) => JSON.stringify(line))
      .join('\n'),
  );
  const tools = pendingConfirmations(runs);
  const network = pendingNetworkQuestions(runs);
  assert.deepEqual(
    network.map((q) => q.host),
    ['pypi.org'],
  );
  assert.equal(pendingText(tools, network), '$(bell-dot) Answer 2 questions');
  assert.equal(pendingText(tools), '$(bell-dot) Confirm a tool call');
});
