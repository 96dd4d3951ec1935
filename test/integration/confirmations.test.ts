// Confirmations of proxied tool calls, through the real bridge process, a real container and
// real MCP SDK clients on both sides: a client that takes form elicitations answers them
// (accept, accept for the session, decline, cancel, no answer; the earlier form's boolean
// allows one call only), a client without elicitation
// gets "needs-confirmation", and so do arguments too large for the question to show whole;
// arguments are shown escaped; the per-server `confirm` and `confirmTools` decide who asks; calls
// from asyncio.gather ask one at a time, in order; the wait is not charged to the run's timeout;
// every question and answer is in the run log.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { ALLOW_FIELD, ALLOW_FOR_SESSION, ALLOW_ONCE } from '../../src/bridge/client/confirmations.ts';
import { parseRunLog, waitingForConfirmation } from '../../src/state/run-log/reader.ts';
import { RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { structured, tempDir } from '../helpers/bridge.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';
import { sleep } from '../helpers/wait.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

const [runtime = 'podman'] = testRuntimes();
const CONFIRM_FIXTURE = fixtureProgram('confirm');

type Answer = (question: ElicitRequestFormParams, signal: AbortSignal) => Promise<ElicitResult> | ElicitResult;

interface Bridge {
  client: Client;
  stateDir: string;
  questions: ElicitRequestFormParams[];
  /** How the next questions are answered (accept with nothing filled in, by default). */
  answer: Answer;
  /** Most questions open at the same time so far. */
  maxOpen: number;
  run(code: string, extra?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

const server = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [CONFIRM_FIXTURE], ...extra });

async function start(elicitation: boolean, sandbox: Record<string, unknown> = {}): Promise<Bridge> {
  const dir = await tempDir('cem-confirm-');
  const stateDir = join(dir, 'state');
  const configFile = join(dir, 'config.json');
  const config = {
    stateDir,
    servers: {
      fx: server({ confirmTimeoutSeconds: 2 }),
      all: server({ confirm: 'all' }),
      never: server({ confirm: 'none' }),
      listed: server({ confirmTools: ['look'] }),
    },
    sandbox: { ...testSandbox(runtime), prewarm: false, ...sandbox },
  };
  await writeFile(configFile, JSON.stringify(config));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [resolve('dist/cli.js'), '--config', configFile],
    env: process.env as Record<string, string>,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'confirm-test', version: '1.0.0' }, elicitation ? { capabilities: { elicitation: { form: {} } } } : {});
  let open = 0;
  const bridge: Bridge = {
    client,
    stateDir,
    questions: [],
    answer: () => ({ action: 'accept', content: {} }),
    maxOpen: 0,
    async run(code, extra = {}) {
      const result = (await client.callTool({ name: 'run_python', arguments: { code, ...extra } }, undefined, {
        timeout: 120_000,
      })) as CallToolResult;
      return structured(result);
    },
    close: () => client.close(),
  };
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      const question = request.params as ElicitRequestFormParams;
      bridge.questions.push(question);
      open++;
      bridge.maxOpen = Math.max(bridge.maxOpen, open);
      try {
        return await bridge.answer(question, extra.signal);
      } finally {
        open--;
      }
    });
  }
  await client.connect(transport);
  return bridge;
}

/** Python that calls one tool and prints what happened: the result, or the ToolError's kind. */
const attempt = (call: string) => `
try:
    print("ok:", await ${call})
except ToolError as error:
    print("error:", error.kind, str(error))
`;

function logEvents(stateDir: string): Array<Record<string, unknown>> {
  return readFileSync(join(stateDir, RUN_LOG_FILE), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// The same whichever sandbox runs the code that asks: the first runtime and WebAssembly.
for (const { label, sandbox: shown } of [
  { label: runtime, sandbox: {} },
  { label: 'wasm', sandbox: { backend: 'wasm' } },
]) {
  describe(`confirmations (${label})`, { timeout: 600_000 }, () => {
    let bridge: Bridge;
    before(async () => {
      bridge = await start(true, shown);
    });
    after(async () => {
      await bridge?.close();
    });

    test('a destructive tool asks, naming the server, the tool, its title, its hints and the arguments; accept allows this call once', async () => {
      bridge.questions.length = 0;
      bridge.answer = () => ({ action: 'accept' });
      const first = await bridge.run(attempt('mcp_fx.remove(id="item-1")'));
      assert.equal(first.status, 'ok', JSON.stringify(first));
      assert.match(String(first.stdout), /ok: removed item-1/);
      assert.equal(bridge.questions.length, 1);
      const message = bridge.questions[0]!.message;
      assert.match(message, /fx\.remove/);
      assert.match(message, /Remove an item/);
      assert.match(message, /"id":"item-1"/);
      assert.match(message, /hints about it \(its own, not checked\): destructive\./);
      const field = bridge.questions[0]!.requestedSchema.properties[ALLOW_FIELD] as { default?: string; oneOf?: { const: string }[] };
      assert.deepEqual(
        field.oneOf?.map((o) => o.const),
        [ALLOW_ONCE, ALLOW_FOR_SESSION],
        'the form offers "this call only" first, then "for the rest of this session"',
      );
      assert.equal(field.default, ALLOW_ONCE);
      // Allowed once: the next call asks again.
      const second = await bridge.run(attempt('mcp_fx.remove(id="item-2")'));
      assert.match(String(second.stdout), /ok: removed item-2/);
      assert.equal(bridge.questions.length, 2);
    });

    test('decline and cancel raise ToolError of kind "declined"; the tool is not called', async () => {
      bridge.answer = () => ({ action: 'decline' });
      const declined = await bridge.run(attempt('mcp_fx.remove(id="d")'));
      assert.match(String(declined.stdout), /error: declined .*declined the call of fx\.remove/);
      assert.doesNotMatch(String(declined.stdout), /removed/);
      bridge.answer = () => ({ action: 'cancel' });
      const cancelled = await bridge.run(attempt('call_tool("fx", "remove", {"id": "c"})'));
      assert.match(String(cancelled.stdout), /error: declined .*cancelled the call/);
    });

    test('arguments too large for the question to show whole are refused, not cut: nothing is asked and the tool is not called', async () => {
      bridge.questions.length = 0;
      bridge.answer = () => ({ action: 'accept' });
      const result = await bridge.run(
        `${attempt('mcp_fx.remove(id="harmless.txt" + " " * 5000 + "AND EVERYTHING ELSE")')}print("reached:", await mcp_fx.removed())`,
      );
      const stdout = String(result.stdout);
      assert.match(
        stdout,
        /error: needs-confirmation .*over the 4000 a confirmation can show whole.*Split the work into smaller calls.*"confirm": "none" on server "fx"/,
      );
      assert.equal(bridge.questions.length, 0);
      assert.match(stdout, /reached: \[/);
      assert.doesNotMatch(stdout, /EVERYTHING/, 'the call did not reach the server');
      const events = logEvents(bridge.stateDir);
      assert.ok(events.some((e) => e.type === 'confirmation' && e.answer === 'too-large'));
      assert.ok(
        events.some(
          (e) =>
            e.type === 'tool-call' &&
            e.tool === 'remove' &&
            e.outcome === 'denied' &&
            /a confirmation can show whole/.test(String(e.error)),
        ),
      );
    });

    test('bidi and invisible characters in the arguments are shown as escapes; the call gets them unchanged', async () => {
      bridge.questions.length = 0;
      bridge.answer = () => ({ action: 'accept' });
      const result = await bridge.run(
        `${attempt('mcp_fx.remove(id="report\\u202etxt\\u200b.exe")')}import json\nprint("reached:", ascii(json.loads(await mcp_fx.removed())[-1]))`,
      );
      assert.match(String(result.stdout), /ok: removed report/);
      assert.match(String(result.stdout), /reached: 'report\\u202etxt\\u200b\.exe'/);
      const message = bridge.questions[0]?.message ?? '';
      assert.ok(message.includes('"id":"report\\u{202E}txt\\u{200B}.exe"'), message);
      assert.doesNotMatch(message, /[\u202e\u200b]/);
    });

    test('no answer within confirmTimeoutSeconds: declined', async () => {
      bridge.answer = (_q, signal) =>
        new Promise((resolveAnswer) => signal.addEventListener('abort', () => resolveAnswer({ action: 'cancel' })));
      const started = Date.now();
      const result = await bridge.run(attempt('mcp_fx.remove(id="t")'));
      assert.match(String(result.stdout), /error: declined .*no answer .*within 2 s \(confirmTimeoutSeconds\)/);
      assert.ok(Date.now() - started < 15_000);
    });

    test('the default choice and the earlier form\'s `forSession: true` allow one call; "for the rest of this session" stops asking in that session only', async () => {
      bridge.questions.length = 0;
      const onlyOnce: NonNullable<ElicitResult['content']>[] = [{ [ALLOW_FIELD]: ALLOW_ONCE }, { forSession: true }];
      for (const content of onlyOnce) {
        bridge.answer = () => ({ action: 'accept', content });
        const once = await bridge.run(`${attempt('mcp_fx.remove(id="o1")')}${attempt('mcp_fx.remove(id="o2")')}`, { session: 'trusting' });
        assert.match(String(once.stdout), /ok: removed o1\nok: removed o2/);
      }
      assert.equal(bridge.questions.length, 4, 'each call asked');
      bridge.questions.length = 0;
      bridge.answer = () => ({ action: 'accept', content: { [ALLOW_FIELD]: ALLOW_FOR_SESSION } });
      const code = `${attempt('mcp_fx.remove(id="s1")')}${attempt('mcp_fx.remove(id="s2")')}`;
      const result = await bridge.run(code, { session: 'trusting' });
      assert.match(String(result.stdout), /ok: removed s1\nok: removed s2/);
      const again = await bridge.run(attempt('mcp_fx.remove(id="s3")'), { session: 'trusting' });
      assert.match(String(again.stdout), /ok: removed s3/);
      assert.equal(bridge.questions.length, 1, 'asked once for the session');
      await bridge.run(attempt('mcp_fx.remove(id="other")'), { session: 'other' });
      assert.equal(bridge.questions.length, 2, 'another session asks');
    });

    test('read-only and unannotated tools never ask by default; confirmTools asks even for read-only; "none" never asks; "all" asks for all but read-only', async () => {
      bridge.questions.length = 0;
      bridge.answer = () => ({ action: 'accept' });
      const quiet = await bridge.run(
        [
          attempt('mcp_fx.look(id="a")'),
          attempt('mcp_fx.plain(id="b")'),
          attempt('mcp_never.remove(id="c")'),
          attempt('mcp_all.look(id="d")'),
        ].join(''),
      );
      assert.match(String(quiet.stdout), /ok: looked at a\nok: plain b\nok: removed c\nok: looked at d/);
      assert.equal(bridge.questions.length, 0, JSON.stringify(bridge.questions.map((q) => q.message)));
      const asking = await bridge.run(
        [attempt('mcp_listed.look(id="e")'), attempt('mcp_all.plain(id="f")'), attempt('mcp_all.remove(id="g")')].join(''),
      );
      assert.match(String(asking.stdout), /ok: looked at e\nok: plain f\nok: removed g/);
      assert.deepEqual(
        bridge.questions.map((q) => /listed\.look|all\.plain|all\.remove/.exec(q.message)?.[0]),
        ['listed.look', 'all.plain', 'all.remove'],
      );
    });

    test('calls from asyncio.gather ask one at a time, in order', async () => {
      bridge.questions.length = 0;
      bridge.maxOpen = 0;
      bridge.answer = async (question) => {
        await sleep(300);
        return /"id":"g2"/.test(question.message) ? { action: 'decline' } : { action: 'accept' };
      };
      const code = `
import asyncio
results = await asyncio.gather(*(mcp_fx.remove(id="g%d" % i) for i in (1, 2, 3)), return_exceptions=True)
print([r if isinstance(r, str) else r.kind for r in results])
`;
      const result = await bridge.run(code);
      assert.match(String(result.stdout), /\['removed g1', 'declined', 'removed g3'\]/);
      assert.equal(bridge.maxOpen, 1);
      assert.deepEqual(
        bridge.questions.map((q) => /"id":"(g\d)"/.exec(q.message)?.[1]),
        ['g1', 'g2', 'g3'],
      );
    });

    test('the wait for an answer is not charged to the run timeout; meanwhile the log shows the run waiting for confirmation', async () => {
      let waitingSeen: boolean | undefined;
      bridge.answer = async () => {
        await sleep(500);
        const runs = parseRunLog(readFileSync(join(bridge.stateDir, RUN_LOG_FILE), 'utf8'));
        waitingSeen = waitingForConfirmation(runs.at(-1)!);
        await sleep(3000);
        return { action: 'accept' };
      };
      const result = await bridge.run(attempt('mcp_all.plain(id="slow")'), { timeout: 2 });
      assert.equal(result.status, 'ok', JSON.stringify(result));
      assert.match(String(result.stdout), /ok: plain slow/);
      assert.equal(waitingSeen, true);
    });

    test('every question and answer is in the run log, and the reader folds them into the run', async () => {
      const events = logEvents(bridge.stateDir).filter((e) => e.type === 'confirmation');
      const answers = events.filter((e) => e.phase === 'answered').map((e) => e.answer);
      for (const answer of ['allowed-once', 'allowed-for-session', 'declined', 'cancelled', 'timeout'])
        assert.ok(answers.includes(answer), answer);
      const asked = events.find((e) => e.phase === 'asked' && e.tool === 'remove');
      assert.deepEqual(asked?.arguments, { id: 'item-1' });
      assert.equal(typeof asked?.time, 'string');
      const declinedCall = logEvents(bridge.stateDir).find((e) => e.type === 'tool-call' && e.outcome === 'declined');
      assert.ok(declinedCall, 'the declined call is logged as a tool call with outcome "declined"');
      const runs = parseRunLog(readFileSync(join(bridge.stateDir, RUN_LOG_FILE), 'utf8'));
      const first = runs.find((r) => r.confirmations.some((c) => (c.arguments as { id?: string }).id === 'item-1'));
      assert.ok(first);
      assert.equal(first.confirmations[0]!.answer, 'allowed-once');
      assert.ok(runs.every((r) => !waitingForConfirmation(r)));
    });
  });
}

describe(`confirmations without elicitation (${runtime})`, { timeout: 300_000 }, () => {
  let bridge: Bridge;
  before(async () => {
    bridge = await start(false);
  });
  after(async () => {
    await bridge?.close();
  });

  test('a call that needs confirmation is refused with kind "needs-confirmation", naming the setting', async () => {
    const result = await bridge.run(
      [attempt('mcp_fx.remove(id="x")'), attempt('mcp_fx.look(id="y")'), attempt('mcp_never.remove(id="z")')].join(''),
    );
    const stdout = String(result.stdout);
    assert.match(stdout, /error: needs-confirmation .*does not support elicitation.*"confirm": "none" on server "fx"/);
    assert.match(stdout, /ok: looked at y\nok: removed z/);
    const answered = logEvents(bridge.stateDir).find((e) => e.type === 'confirmation' && e.answer === 'no-client');
    assert.ok(answered);
  });
});
