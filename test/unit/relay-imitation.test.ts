// A proxied server's form cannot imitate the bridge's confirmation: field names that fold to the
// confirmation's (case, invisible and format characters, accents, compatibility forms) and the
// confirmation's own wording, in the message or anywhere in the form, are refused before the
// user is asked, and the refusal is in the run log.
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ElicitRequestFormParams } from '@modelcontextprotocol/sdk/types.js';
import { BridgeClientRelay } from '../../src/bridge/client/relay.ts';
import { CONFIRMATION_PREFIX, confirmationFields, confirmationWording, questionFor } from '../../src/bridge/client/confirmations.ts';
import { confirmationWordingReason, foldedName, foldedWords, reservedFieldReason } from '../../src/bridge/client/relay-imitation.ts';
import { RunLog, RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';

test("the reserved names are the confirmation form's own (and its earlier form's), and the fold meets every look-alike of them", () => {
  const question = questionFor({ server: 's', tool: 't', arguments: {}, timeoutMs: 0 }, 'default');
  assert.deepEqual(confirmationFields(), [...Object.keys(question.requestedSchema.properties), 'forSession']);
  for (const field of confirmationFields()) {
    const upper = field.toUpperCase();
    const fullWidth = [...field].map((c) => String.fromCodePoint(c.codePointAt(0)! + 0xfee0)).join('');
    for (const alike of [
      field,
      field.toLowerCase(),
      upper,
      `${field}\u200b`,
      `\u202e${field}`,
      `${field.slice(0, 3)}\u00ad${field.slice(3)}`,
      fullWidth,
      ` ${field}\ufe0f`,
    ]) {
      assert.equal(foldedName(alike), foldedName(field), JSON.stringify(alike));
      assert.match(
        reservedFieldReason(['name', alike]) ?? '',
        new RegExp(`only the bridge's own confirmation uses \\("${field}"`),
        JSON.stringify(alike),
      );
    }
  }
  assert.equal(foldedName('forSessıon'), 'forsession');
  assert.equal(foldedName('FORSESSİON'), 'forsession');
  assert.equal(reservedFieldReason(['name', 'for_session', 'session', 'email']), undefined);
  // The name is shown escaped in the reason (it reaches the log and the server).
  assert.match(reservedFieldReason(['forSession\u200b'])!, /"forSession\\u\{200B\}"/);
});

test("the confirmation's wording is refused in any disguise, ordinary questions are not", () => {
  assert.ok(confirmationWording().includes(CONFIRMATION_PREFIX));
  const real = questionFor({ server: 'fs', tool: 'delete', arguments: { path: '/x' }, timeoutMs: 0 }, 'default').message;
  for (const message of [
    real,
    `${CONFIRMATION_PREFIX}hello`,
    'code execution mode: hello',
    'CodeExecutionMode: hello',
    'Code\u200bExecution\u2060Mode',
    'ＣＯＤＥ ＥＸＥＣＵＴＩＯＮ ＭＯＤＥ',
    'Code-Execution-Mode',
    'The sandbox WANTS TO CALL THE TOOL rm',
    'Please accept to allow this call.',
  ]) {
    assert.match(confirmationWordingReason(message) ?? '', /wording of the bridge's own confirmation/, JSON.stringify(message));
  }
  const titled = { type: 'object', properties: { ok: { type: 'boolean', title: 'Allow this tool for the rest of this session' } } };
  assert.match(confirmationWordingReason('Your name?', titled) ?? '', /"this tool for the rest of this session"/);
  const option = {
    type: 'object',
    properties: { ok: { type: 'string', oneOf: [{ const: 'This-Tool for the REST of this\u00a0ses\u200bsion', title: 'x' }] } },
  };
  assert.match(confirmationWordingReason('Pick one', option) ?? '', /"this tool for the rest of this session"/);
  const described = { type: 'object', properties: { ok: { type: 'string', oneOf: [{ const: 'y', title: 'code execution mode' }] } } };
  assert.ok(confirmationWordingReason('Pick one', described));
  for (const message of [
    'Your name?',
    'Which code execution model?',
    'decode execution modes',
    'Accept the terms',
    'The tool wants your email',
  ]) {
    assert.equal(
      confirmationWordingReason(message, { type: 'object', properties: { name: { type: 'string', title: 'Name' } } }),
      undefined,
      message,
    );
  }
  assert.equal(foldedWords('Code\u200bExecution Mode!'), ' code execution mode ');
});

test('a relayed form using a folded field name or the wording is refused, never asked, and logged', async () => {
  const asked: unknown[] = [];
  const fake = {
    getClientCapabilities: () => ({ elicitation: { form: {}, url: {} } }),
    elicitInput: async (params: unknown) => {
      asked.push(params);
      return { action: 'accept' };
    },
    request: async ({ params }: { params: unknown }) => {
      asked.push(params);
      return { action: 'accept' };
    },
  } as unknown as Server;
  const dir = await mkdtemp(join(tmpdir(), 'cem-imitation-'));
  const log = new RunLog(dir);
  const relay = new BridgeClientRelay(() => fake, { roots: [], timeoutMs: 5000 });
  relay.runLog = log;
  const ctx = (server: string) => ({ server, runs: [], signal: new AbortController().signal });
  const form = (message: string, properties: ElicitRequestFormParams['requestedSchema']['properties']): ElicitRequestFormParams => ({
    mode: 'form',
    message,
    requestedSchema: { type: 'object', properties },
  });
  await assert.rejects(
    relay.elicit(form('Remember?', { forsession: { type: 'boolean' } }), ctx('a')),
    /field named "forsession", which only the bridge's own confirmation uses/,
  );
  await assert.rejects(
    relay.elicit(form('Remember?', { 'forSession\u200b': { type: 'boolean' } }), ctx('b')),
    /field named "forSession\\u\{200B\}"/,
  );
  await assert.rejects(
    relay.elicit(
      form(`${CONFIRMATION_PREFIX}code running in the sandbox wants to call the tool fs.delete`, { ok: { type: 'boolean' } }),
      ctx('c'),
    ),
    /reword the question/,
  );
  await assert.rejects(
    relay.elicit({ mode: 'url', message: 'Code Execution Mode: sign in', url: 'https://example.com/a', elicitationId: 'e' }, ctx('d')),
    /reword the question/,
  );
  await assert.rejects(
    relay.elicitUrl({ mode: 'url', message: 'Code Execution Mode: sign in', url: 'https://example.com/a', elicitationId: 'e' }, ctx('e')),
    /reword the question/,
  );
  assert.equal(asked.length, 0);
  await relay.elicit(form('Your name?', { name: { type: 'string' } }), ctx('a'));
  assert.equal(asked.length, 1);
  log.close();
  const refused = (await readFile(join(dir, RUN_LOG_FILE), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; outcome?: string; server?: string; error?: string })
    .filter((e) => e.type === 'relay' && e.outcome === 'refused');
  assert.deepEqual(
    refused.map((e) => e.server),
    ['a', 'b', 'c', 'd', 'e'],
  );
});
