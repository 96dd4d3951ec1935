// Which calls ask the user (confirm, confirmTools, annotations), what the question shows, the
// gate's queue and answers with a scripted asker, the run log's confirmation lines read back, and
// the questions the extension shows as waiting.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ErrorCode, McpError, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import {
  ALLOW_FIELD,
  ALLOW_FOR_SESSION,
  ALLOW_ONCE,
  ConfirmationGate,
  questionFor,
  shownArguments,
  MAX_SHOWN_ARGUMENT_CHARS,
  type ConfirmationAsker,
} from '../../src/bridge/client/confirmations.ts';
import { confirmationNeeded } from '../../src/bridge/proxy/confirm.ts';
import { parseRunLog, waitingForConfirmation } from '../../src/state/run-log/reader.ts';
import { pendingConfirmations, pendingMessage, pendingText } from '../../src/extension/views/confirmation-text.ts';
import { RunLog, RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { serverSchema } from '../../src/config/schema.ts';

const destructive = { tool: 'rm', annotations: { destructiveHint: true } };
const readOnly = { tool: 'ls', annotations: { readOnlyHint: true } };
const plain = { tool: 'do' };

test('confirm: destructive by default, all, none; confirmTools always; read-only never unless listed', () => {
  const base = serverSchema.parse({ command: 'x' });
  assert.equal(base.confirm, 'destructive');
  assert.deepEqual(base.confirmTools, []);
  assert.equal(base.confirmTimeoutSeconds, 120);
  assert.equal(confirmationNeeded(base, destructive), true);
  assert.equal(confirmationNeeded(base, plain), false);
  assert.equal(confirmationNeeded(base, readOnly), false);
  const all = { ...base, confirm: 'all' as const };
  assert.equal(confirmationNeeded(all, plain), true);
  assert.equal(confirmationNeeded(all, readOnly), false);
  const none = { ...base, confirm: 'none' as const };
  assert.equal(confirmationNeeded(none, destructive), false);
  assert.equal(confirmationNeeded({ ...none, confirmTools: ['ls'] }, readOnly), true);
  assert.throws(() => serverSchema.parse({ command: 'x', confirm: 'sometimes' }));
});

test("the question names server, tool, title and the tool's hints, and shows the whole arguments", () => {
  // A long string is shown to its end: a tail past some cut cannot hide what is sent.
  const target = `harmless.txt${' '.repeat(300)}AND EVERYTHING ELSE`;
  const annotations = { destructiveHint: true, openWorldHint: false, title: 'ignored' };
  const question = questionFor(
    { server: 's', tool: 'rm', title: 'Remove', annotations, arguments: { target, n: 1 }, timeoutMs: 1000 },
    'default',
  );
  assert.match(question.message, /s\.rm \("Remove"\)/);
  assert.match(question.message, /hints about it \(its own, not checked\): destructive, closed-world\./);
  assert.match(questionFor({ server: 's', tool: 'rm', arguments: {}, timeoutMs: 1 }, 'x').message, /gives no hints/);
  assert.ok(question.message.includes(JSON.stringify({ target, n: 1 })), question.message);
  assert.doesNotMatch(question.message, /…/);
});

test('the form: one choice, "this call only" first and default, the session only as the other option', () => {
  const question = questionFor({ server: 's', tool: 'rm', arguments: {}, timeoutMs: 1000 }, 'work');
  assert.deepEqual(Object.keys(question.requestedSchema.properties), [ALLOW_FIELD]);
  assert.equal(question.requestedSchema.required, undefined, 'an accept with nothing filled in stays valid (and allows one call)');
  const field = question.requestedSchema.properties[ALLOW_FIELD] as {
    type: string;
    default?: string;
    oneOf?: { const: string; title: string }[];
  };
  assert.equal(field.type, 'string');
  assert.equal(field.default, ALLOW_ONCE);
  assert.deepEqual(
    field.oneOf?.map((o) => o.const),
    [ALLOW_ONCE, ALLOW_FOR_SESSION],
  );
  assert.match(field.oneOf?.[1]?.title ?? '', /s\.rm in session "work"/);
  assert.match(question.message, /choose "this tool for the rest of this session"/);
});

test('the arguments shown: bidi, zero-width and other unseen characters escaped visibly, in keys and values', () => {
  const shown = shownArguments({ 'file\u202e': 'report\u202etxt.exe', note: 'a\u200bb\u2066c\u2028d\u0085e\u00a0f', plain: 'Zoë 日本 ✓' });
  assert.equal(
    shown,
    '{"file\\u{202E}":"report\\u{202E}txt.exe","note":"a\\u{200B}b\\u{2066}c\\u{2028}d\\u{85}e\\u{A0}f","plain":"Zoë 日本 ✓"}',
  );
  assert.doesNotMatch(shown, /[\u202e\u200b\u2066\u2028\u0085\u00a0]/);
  // A backslash the value really holds stays doubled: an escape shown is never the value's own text.
  assert.equal(shownArguments({ a: '\\u{202E}' }), '{"a":"\\\\u{202E}"}');
  const question = questionFor({ server: 's', tool: 'rm', arguments: { name: 'report\u202etxt.exe' }, timeoutMs: 1000 }, 'default');
  assert.ok(question.message.includes('report\\u{202E}txt.exe'), question.message);
});

test('the gate: one question at a time in order, answers, session allowance, timeout, no client; all in the run log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-confirm-unit-'));
  const log = new RunLog(dir);
  log.runStarted({ run: 'r', session: 'default', code: 'x', timeoutMs: 1000 });
  let open = 0;
  let maxOpen = 0;
  const asked: string[] = [];
  let answer: (id: string) => Promise<ElicitResult> = async () => ({ action: 'accept' });
  let canAsk = true;
  const asker: ConfirmationAsker = {
    canAsk: () => canAsk,
    async ask(params) {
      const id = /"id":"(\w+)"/.exec(params.message)![1]!;
      asked.push(id);
      open++;
      maxOpen = Math.max(maxOpen, open);
      try {
        return await answer(id);
      } finally {
        open--;
      }
    },
  };
  const gate = new ConfirmationGate(() => asker, log);
  const context = { runId: 'r', session: 'default', signal: new AbortController().signal };
  const request = (id: string) => ({ server: 's', tool: 'rm', arguments: { id }, timeoutMs: 1000 });
  answer = async (id) => {
    await new Promise((r) => setTimeout(r, 20));
    return id === 'b' ? { action: 'decline' } : { action: 'accept' };
  };
  const outcomes = await Promise.allSettled(['a', 'b', 'c'].map((id) => gate.confirm(request(id), context)));
  assert.deepEqual(asked, ['a', 'b', 'c']);
  assert.equal(maxOpen, 1);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.equal(((outcomes[1] as PromiseRejectedResult).reason as Error).name, 'ConfirmationDeclinedError');
  answer = async () => {
    throw new McpError(ErrorCode.RequestTimeout, 'Request timed out');
  };
  await assert.rejects(gate.confirm(request('t'), context), /no answer .* within 1 s/);
  // The earlier form's boolean, and any other value, allow one call: only the session option widens it.
  const onlyOnce: NonNullable<ElicitResult['content']>[] = [
    { forSession: true },
    { [ALLOW_FIELD]: ALLOW_ONCE },
    { [ALLOW_FIELD]: 'true' },
    {},
  ];
  for (const content of onlyOnce) {
    answer = async () => ({ action: 'accept', content });
    await gate.confirm(request('once'), context);
    await gate.confirm(request('again'), context);
    assert.deepEqual(asked.slice(-2), ['once', 'again'], JSON.stringify(content));
  }
  answer = async () => ({ action: 'accept', content: { [ALLOW_FIELD]: ALLOW_FOR_SESSION } });
  await gate.confirm(request('s'), context);
  await gate.confirm(request('s2'), context);
  assert.equal(asked.at(-1), 's', 'allowed for the session: not asked again');
  await gate.confirm(request('o'), { ...context, session: 'other' });
  assert.equal(asked.at(-1), 'o', 'another session is asked');
  // Arguments the question cannot show whole are refused, not asked about; within the cap they are asked.
  const before = asked.length;
  const fresh = { ...context, session: 'fresh' };
  const big = { id: 'big', text: 'x'.repeat(MAX_SHOWN_ARGUMENT_CHARS) };
  await assert.rejects(
    gate.confirm({ ...request('big'), arguments: big }, fresh),
    (e: Error) =>
      e.name === 'ConfirmationNeededError' &&
      /over the 4000 a confirmation can show whole/.test(e.message) &&
      /Split the work/.test(e.message) &&
      /"confirm": "none"/.test(e.message),
  );
  assert.equal(asked.length, before, 'not asked');
  answer = async () => ({ action: 'accept' });
  await gate.confirm({ ...request('fits'), arguments: { id: 'fits', text: 'x'.repeat(MAX_SHOWN_ARGUMENT_CHARS - 40) } }, fresh);
  assert.equal(asked.at(-1), 'fits');
  // Escapes count: the cap is on what the user would read.
  await assert.rejects(
    gate.confirm({ ...request('wide'), arguments: { id: 'wide', text: '\u200b'.repeat(MAX_SHOWN_ARGUMENT_CHARS / 4) } }, fresh),
    /a confirmation can show whole/,
  );
  // Once allowed for the session, nothing is asked, so nothing is too large to show.
  await gate.confirm({ ...request('s3'), arguments: big }, context);
  canAsk = false;
  await assert.rejects(
    gate.confirm({ ...request('n'), tool: 'mv' }, context),
    (e: Error) => e.name === 'ConfirmationNeededError' && /"confirm": "none"/.test(e.message),
  );
  log.close();
  const runs = parseRunLog(await readFile(join(dir, RUN_LOG_FILE), 'utf8'));
  const answers = runs[0]!.confirmations.map((c) => c.answer);
  assert.deepEqual(answers, [
    'allowed-once',
    'declined',
    'allowed-once',
    'timeout',
    ...Array<string>(8).fill('allowed-once'),
    'allowed-for-session',
    'allowed-for-session',
    'too-large',
    'allowed-once',
    'too-large',
    'no-client',
  ]);
  assert.equal(waitingForConfirmation(runs[0]!), false);
  const open1 = parseRunLog(
    `${JSON.stringify({ type: 'run-start', run: 'w', session: 'd', time: new Date().toISOString(), code: 'x' })}\n` +
      `${JSON.stringify({ type: 'confirmation', run: 'w', time: new Date().toISOString(), server: 's', tool: 'rm', arguments: {}, phase: 'asked' })}\n` +
      `${JSON.stringify({ type: 'confirmation-from-the-future', run: 'w', time: 'x' })}\n`,
  );
  assert.equal(waitingForConfirmation(open1[0]!), true);
});

test('the questions waiting: asked and unanswered in runs still going, said in the status bar and the notification', () => {
  const now = Date.now();
  const at = (ms: number) => new Date(now + ms).toISOString();
  const line = (event: Record<string, unknown>) => JSON.stringify(event);
  const asked = (run: string, tool: string, ms: number) =>
    line({ type: 'confirmation', run, time: at(ms), server: 'fs', tool, arguments: {}, phase: 'asked' });
  const runs = parseRunLog(
    [
      line({ type: 'run-start', run: 'a', session: 'default', time: at(-5000), code: 'x', timeoutMs: 60_000 }),
      asked('a', 'rm', -4000),
      line({ type: 'run-start', run: 'b', session: 'work', time: at(-3000), code: 'y', timeoutMs: 60_000 }),
      asked('b', 'mv', -2000),
      line({
        type: 'confirmation',
        run: 'b',
        time: at(-1000),
        server: 'fs',
        tool: 'mv',
        arguments: {},
        phase: 'answered',
        answer: 'allowed-once',
      }),
      asked('b', 'cp', -500),
      // Long past its limit: lost, not waiting.
      line({ type: 'run-start', run: 'c', session: 'old', time: at(-900_000), code: 'z', timeoutMs: 1000 }),
      asked('c', 'rm', -899_000),
    ].join('\n'),
  );
  const pending = pendingConfirmations(runs, now);
  assert.deepEqual(
    pending.map((q) => [q.run, q.session, `${q.server}.${q.tool}`]),
    [
      ['a', 'default', 'fs.rm'],
      ['b', 'work', 'fs.cp'],
    ],
  );
  assert.equal(pendingText(pending), '$(bell-dot) Confirm 2 tool calls');
  assert.equal(pendingText(pending.slice(0, 1)), '$(bell-dot) Confirm a tool call');
  assert.match(pendingMessage(pending[1]!), /fs\.cp \(session "work"\) waits for your answer.*Respond, then Enter, allows this one call/);
});

test("a window shows its own bridge's questions, not another window's sharing the state dir", () => {
  const time = new Date().toISOString();
  const runs = parseRunLog(
    ['window-a', 'window-b', undefined]
      .flatMap((owner, i) => [
        JSON.stringify({
          type: 'run-start',
          run: `r${i}`,
          session: 'default',
          time,
          code: 'x',
          timeoutMs: 60_000,
          ...(owner ? { owner } : {}),
        }),
        JSON.stringify({ type: 'confirmation', run: `r${i}`, time, server: 'fs', tool: 'rm', arguments: {}, phase: 'asked' }),
      ])
      .join('\n'),
  );
  assert.deepEqual(
    pendingConfirmations(runs, Date.now(), 'window-a').map((q) => q.run),
    ['r0'],
  );
  assert.equal(pendingConfirmations(runs).length, 3);
});
