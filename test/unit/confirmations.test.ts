// Which calls ask the user (confirm, confirmTools, annotations), what the question shows, the
// gate's queue and answers with a scripted asker, and the run log's confirmation lines read back.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ErrorCode, McpError, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { ConfirmationGate, questionFor, shownArguments, MAX_SHOWN_ARGUMENT_CHARS, type ConfirmationAsker } from '../../src/bridge/confirmations.ts';
import { confirmationNeeded } from '../../src/bridge/hub/confirm.ts';
import { parseRunLog, waitingForConfirmation } from '../../src/bridge/run-log-reader.ts';
import { RunLog, RUN_LOG_FILE } from '../../src/bridge/run-log.ts';
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

test('the question names server, tool and title, and shortens the arguments', () => {
  const question = questionFor({ server: 's', tool: 'rm', title: 'Remove', arguments: { path: 'a'.repeat(5000), n: 1 }, timeoutMs: 1000 }, 'default');
  assert.match(question.message, /s\.rm \("Remove"\)/);
  assert.match(question.message, /5000 characters/);
  assert.ok(shownArguments({ list: Array.from({ length: 1000 }, (_, i) => i) }).length < MAX_SHOWN_ARGUMENT_CHARS + 40);
  assert.equal(question.requestedSchema.properties.forSession?.type, 'boolean');
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
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.equal(((outcomes[1] as PromiseRejectedResult).reason as Error).name, 'ConfirmationDeclinedError');
  answer = async () => {
    throw new McpError(ErrorCode.RequestTimeout, 'Request timed out');
  };
  await assert.rejects(gate.confirm(request('t'), context), /no answer .* within 1 s/);
  answer = async () => ({ action: 'accept', content: { forSession: true } });
  await gate.confirm(request('s'), context);
  await gate.confirm(request('s2'), context);
  assert.equal(asked.at(-1), 's', 'allowed for the session: not asked again');
  await gate.confirm(request('o'), { ...context, session: 'other' });
  assert.equal(asked.at(-1), 'o', 'another session is asked');
  canAsk = false;
  await assert.rejects(gate.confirm({ ...request('n'), tool: 'mv' }, context), (e: Error) => e.name === 'ConfirmationNeededError' && /"confirm": "none"/.test(e.message));
  log.close();
  const runs = parseRunLog(await readFile(join(dir, RUN_LOG_FILE), 'utf8'));
  const answers = runs[0]!.confirmations.map((c) => c.answer);
  assert.deepEqual(answers, ['allowed-once', 'declined', 'allowed-once', 'timeout', 'allowed-for-session', 'allowed-for-session', 'no-client']);
  assert.equal(waitingForConfirmation(runs[0]!), false);
  const open1 = parseRunLog(
    `${JSON.stringify({ type: 'run-start', run: 'w', session: 'd', time: new Date().toISOString(), code: 'x' })}\n` +
      `${JSON.stringify({ type: 'confirmation', run: 'w', time: new Date().toISOString(), server: 's', tool: 'rm', arguments: {}, phase: 'asked' })}\n` +
      `${JSON.stringify({ type: 'confirmation-from-the-future', run: 'w', time: 'x' })}\n`,
  );
  assert.equal(waitingForConfirmation(open1[0]!), true);
});
