// The sandbox's network questions through the real bridge (createBridge, in this process) and a
// real MCP SDK client that answers form elicitations, with a real container running the code. The
// requests are a stand-in for the egress proxy: the sandbox's execute is wrapped so that, before
// the code runs, it asks the run's EgressHandler about hosts and records requests, as the proxy
// does. Checked: the question the client gets, each answer (once, session, always, deny), a client
// without elicitation, the run log's egress and network-question lines under the run, and a change
// of sandbox.network applied without a restart (the session keeps its variables).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { NETWORK_ALWAYS, NETWORK_FIELD, NETWORK_SESSION } from '../../src/bridge/client/network-questions.ts';
import { createBridge, type Bridge } from '../../src/bridge/server.ts';
import { parseConfig } from '../../src/config/load.ts';
import type { EgressTarget, ExecuteOptions } from '../../src/sandbox/index.ts';
import { parseRunLog } from '../../src/state/run-log/reader.ts';
import { RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { structured, tempDir, textOf } from '../helpers/bridge.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';

const [runtime = 'podman'] = testRuntimes();

interface Harness {
  bridge: Bridge;
  client: Client;
  stateDir: string;
  questions: ElicitRequestFormParams[];
  /** How the next question is answered. */
  answer: (question: ElicitRequestFormParams) => ElicitResult;
  /** The targets the next run asks about before its code runs, and what each got. */
  targets: EgressTarget[];
  /** An answer, or "refused: why" when ask rejected. */
  answers: string[];
  run(code: string, session?: string): Promise<CallToolResult>;
  close(): Promise<void>;
}

async function start(elicitation: boolean): Promise<Harness> {
  const dir = await tempDir('cem-network-');
  const stateDir = join(dir, 'state');
  const config = parseConfig({
    stateDir,
    servers: {},
    sandbox: { ...testSandbox(runtime), prewarm: false, network: { ask: true } },
  });
  const bridge = await createBridge(config);
  const harness: Harness = {
    bridge,
    client: new Client({ name: 'network-test', version: '1.0.0' }, elicitation ? { capabilities: { elicitation: { form: {} } } } : {}),
    stateDir,
    questions: [],
    answer: () => ({ action: 'accept', content: {} }),
    targets: [],
    answers: [],
    async run(code, session) {
      return (await harness.client.callTool({ name: 'run_python', arguments: { code, ...(session ? { session } : {}) } }, undefined, {
        timeout: 120_000,
      })) as CallToolResult;
    },
    async close() {
      await harness.client.close();
      await bridge.close();
    },
  };
  // The stand-in for the egress proxy: what it would ask and record for this run's requests.
  const execute = bridge.sandbox.execute.bind(bridge.sandbox);
  bridge.sandbox.execute = async (code: string, options: ExecuteOptions = {}) => {
    const egress = options.egress;
    assert.ok(egress, 'run_python passes each run its EgressHandler');
    const context = {
      runId: options.runId!,
      session: options.session ?? 'default',
      signal: options.signal ?? new AbortController().signal,
    };
    for (const target of harness.targets.splice(0)) {
      const started = performance.now();
      const answer = await egress.ask(target, context).catch((error: Error) => `refused: ${error.message}`);
      harness.answers.push(answer);
      const through = answer === 'once' || answer === 'session' || answer === 'always';
      egress.record({
        runId: context.runId,
        host: target.host,
        port: target.port,
        method: 'CONNECT',
        decision: through ? 'asked' : answer === 'deny' ? 'denied' : 'refused',
        bytesOut: through ? 100 : 0,
        bytesIn: through ? 2000 : 0,
        durationMs: performance.now() - started,
        ...(through ? {} : { reason: String(answer) }),
      });
    }
    return execute(code, options);
  };
  if (elicitation)
    harness.client.setRequestHandler(ElicitRequestSchema, (request) => {
      const question = request.params as ElicitRequestFormParams;
      harness.questions.push(question);
      return harness.answer(question);
    });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([bridge.server.connect(serverSide), harness.client.connect(clientSide)]);
  return harness;
}

function runLog(stateDir: string) {
  return parseRunLog(readFileSync(join(stateDir, RUN_LOG_FILE), 'utf8'));
}

describe(`network questions through the bridge (${runtime})`, { timeout: 600_000 }, () => {
  let harness: Harness;
  before(async () => {
    harness = await start(true);
  });
  after(async () => {
    await harness?.close();
  });

  test('the client is asked about the host; accept as offered allows this request only', async () => {
    harness.targets.push({ host: 'api.example.com', port: 443 });
    const result = await harness.run('x = 41\nprint("ran")');
    assert.equal(structured(result).status, 'ok', textOf(result));
    assert.deepEqual(harness.answers.splice(0), ['once']);
    const [question] = harness.questions.splice(0);
    assert.equal(question!.message, 'Code Execution Mode: allow the sandbox to reach api.example.com:443?');
    assert.deepEqual(Object.keys(question!.requestedSchema.properties), [NETWORK_FIELD]);
    // Once: the next request to it is asked about again.
    harness.targets.push({ host: 'api.example.com', port: 443 });
    await harness.run('print(x + 1)');
    assert.equal(harness.questions.splice(0).length, 1);
    assert.deepEqual(harness.answers.splice(0), ['once']);
  });

  test('"this session" holds for the session only; "always" for every session; decline denies', async () => {
    harness.answer = () => ({ action: 'accept', content: { [NETWORK_FIELD]: NETWORK_SESSION } });
    harness.targets.push({ host: 'session.example', port: 443 });
    await harness.run('print(1)', 'a');
    harness.targets.push({ host: 'session.example', port: 443 });
    await harness.run('print(2)', 'a');
    assert.equal(harness.questions.splice(0).length, 1, 'asked once for session a');
    harness.answer = () => ({ action: 'accept', content: { [NETWORK_FIELD]: NETWORK_ALWAYS } });
    harness.targets.push({ host: 'always.example', port: 80 });
    await harness.run('print(3)', 'b');
    harness.targets.push({ host: 'always.example', port: 80 });
    await harness.run('print(4)', 'c');
    assert.equal(harness.questions.splice(0).length, 1, 'always: not asked again in another session');
    harness.answer = () => ({ action: 'decline' });
    harness.targets.push({ host: 'no.example', port: 443 });
    await harness.run('print(5)');
    assert.deepEqual(harness.answers.splice(0), ['session', 'session', 'always', 'always', 'deny']);
  });

  test('every request and every answer is in the run log under its run', () => {
    const runs = runLog(harness.stateDir);
    const withRequests = runs.filter((run) => run.egress.length > 0);
    assert.equal(withRequests.length, 7);
    const first = withRequests[0]!;
    assert.deepEqual(
      { host: first.egress[0]!.host, port: first.egress[0]!.port, method: first.egress[0]!.method, decision: first.egress[0]!.decision },
      { host: 'api.example.com', port: 443, method: 'CONNECT', decision: 'asked' },
    );
    assert.equal(first.egress[0]!.bytesIn, 2000);
    assert.deepEqual(
      runs.flatMap((run) => run.networkQuestions.map((q) => q.answer)),
      ['once', 'once', 'session', 'always', 'declined'],
    );
    assert.equal(withRequests.at(-1)!.egress[0]!.decision, 'denied');
  });

  test('a change of sandbox.network applies without a restart: the session keeps its variables', async () => {
    await harness.run('kept = "still here"', 'live');
    const next = parseConfig({
      stateDir: harness.stateDir,
      servers: {},
      sandbox: { ...testSandbox(runtime), prewarm: false, network: { allow: ['pypi.org:443'], ask: false } },
    });
    await harness.bridge.reconfigure(next);
    assert.ok(
      harness.bridge.sandbox.list().some((session) => session.name === 'live'),
      'the session is still there',
    );
    const result = await harness.run('print(kept)', 'live');
    assert.match(textOf(result), /still here/);
    // The listing says what the sandbox may reach now.
    const { tools } = await harness.client.listTools();
    assert.match(tools[0]!.description ?? '', /network: listed hosts only/);
  });
});

describe(`network questions without elicitation (${runtime})`, { timeout: 300_000 }, () => {
  let harness: Harness;
  before(async () => {
    harness = await start(false);
  });
  after(async () => {
    await harness?.close();
  });

  test('a client that cannot ask: refused with a message naming sandbox.network.allow, on record', async () => {
    harness.targets.push({ host: 'api.example.com', port: 443 });
    const result = await harness.run('print("ran")');
    assert.equal(structured(result).status, 'ok', textOf(result));
    const [answer] = harness.answers;
    assert.match(
      String(answer),
      /^refused: the bridge's client cannot ask \(none is connected, or it lacks form elicitation\): list "api\.example\.com:443" in sandbox\.network\.allow/,
    );
    const run = runLog(harness.stateDir).find((r) => r.egress.length > 0)!;
    assert.equal(run.egress[0]!.decision, 'refused');
    assert.deepEqual(
      run.networkQuestions.map((q) => q.answer),
      ['no-client'],
    );
  });
});
