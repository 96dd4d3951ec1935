import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseConfig } from '../../src/config/load.ts';
import { toolAllowed } from '../../src/bridge/proxy/policy.ts';
import { startsThisBridge } from '../../src/bridge/proxy/transports.ts';
import { RunLog } from '../../src/state/run-log/writer.ts';
import { displayStatus, parseRunLog } from '../../src/state/run-log/reader.ts';
import { toSandboxResult } from '../../src/bridge/results/tool-results.ts';
import type { RunResult } from '../../src/sandbox/sessions/run-result.ts';
import { runResult } from '../helpers/run-result.ts';

const server = (raw: unknown) => parseConfig({ servers: { s: raw } }).servers.s!;

test('policy: deny wins over allow; no allow list allows the rest', () => {
  assert.equal(toolAllowed(server({ command: 'x' }), 'any'), true);
  assert.equal(toolAllowed(server({ command: 'x', denyTools: ['rm'] }), 'rm'), false);
  assert.equal(toolAllowed(server({ command: 'x', allowTools: ['read'] }), 'write'), false);
  assert.equal(toolAllowed(server({ command: 'x', allowTools: ['rm'], denyTools: ['rm'] }), 'rm'), false);
});

test('entries that would start this bridge again are recognised', () => {
  assert.equal(startsThisBridge(server({ command: 'npx', args: ['-y', 'code-execution-mode'] })), true);
  assert.equal(startsThisBridge(server({ command: 'npx', args: ['-y', 'code-execution-mode@0.2.0'] })), true);
  assert.equal(startsThisBridge(server({ command: '/usr/local/bin/code-execution-mode' })), true);
  assert.equal(startsThisBridge(server({ command: 'node', args: ['/opt/x/dist/cli.js'] }), '/opt/x/dist/cli.js'), true);
  assert.equal(startsThisBridge(server({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] })), false);
  assert.equal(startsThisBridge(server({ url: 'http://127.0.0.1:1/mcp' })), false);
});

test('tool results: structured content wins, text otherwise, a list for several items; images found, not attached', () => {
  assert.deepEqual(toSandboxResult({ content: [{ type: 'text', text: '5' }], structuredContent: { sum: 5 } }).value, { sum: 5 });
  assert.equal(toSandboxResult({ content: [{ type: 'text', text: 'hi' }] }).value, 'hi');
  const mixed = toSandboxResult({
    content: [
      { type: 'text', text: 'a' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
    ],
  });
  assert.deepEqual(mixed.value, ['a', { type: 'image', mimeType: 'image/png', data: 'AAAA' }]);
  assert.deepEqual(mixed.images, [{ mime: 'image/png', data: 'AAAA' }]);
  assert.deepEqual(
    toSandboxResult({ content: [{ type: 'image', data: 'not base64!', mimeType: 'image/png' }] }).images,
    [],
    'bad base64 is no image',
  );
  assert.deepEqual(
    toSandboxResult({ content: [{ type: 'image', data: 'AAAA', mimeType: 'text/html' }] }).images,
    [],
    'nor is another type',
  );
  const error = toSandboxResult({ content: [{ type: 'text', text: 'boom' }], isError: true });
  assert.deepEqual([error.isError, error.errorText], [true, 'boom']);
});

function result(overrides: Partial<RunResult>): RunResult {
  return runResult(overrides);
}

test('the run log appends JSON lines and rotates by size', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-runlog-'));
  const log = new RunLog(dir, { maxFileBytes: 2000, keepFiles: 2 });
  for (let i = 0; i < 30; i++) log.runStarted({ run: `r${i}`, session: 's', code: 'x'.repeat(200), timeoutMs: 1000 });
  log.close();
  const files = (await readdir(dir)).sort();
  assert.deepEqual(files, ['runs.1.jsonl', 'runs.2.jsonl', 'runs.jsonl']);
  const current = (await readFile(join(dir, 'runs.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { run: string });
  assert.equal(current[current.length - 1]!.run, 'r29');
  for (const file of files) assert.ok((await readFile(join(dir, file))).length <= 2000);
});

test('the run log caps what it records of huge output and arguments', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-runlog-cap-'));
  const log = new RunLog(dir);
  log.toolCall({ run: 'r', server: 's', tool: 't', arguments: { blob: 'a'.repeat(200_000) }, outcome: 'ok', durationMs: 1 });
  log.runEnded(result({ stdout: 'b'.repeat(200_000) }), { toolCalls: 1 });
  log.close();
  const [call, end] = (await readFile(join(dir, 'runs.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(Object.keys(call!.arguments as object), ['truncated', 'preview']);
  assert.ok(String(end!.stdout).length < 70_000);
  assert.match(String(end!.stdout), /characters not logged\]$/);
});

test('the run log reads back into runs; half-written lines are skipped; unended runs age into "lost"', () => {
  const lines = [
    JSON.stringify({ type: 'run-start', run: 'a', session: 's', time: '2026-01-01T00:00:00.000Z', code: 'print(1)', timeoutMs: 1000 }),
    JSON.stringify({
      type: 'tool-call',
      run: 'a',
      time: '2026-01-01T00:00:00.100Z',
      server: 'm',
      tool: 't',
      arguments: { x: 1 },
      outcome: 'ok',
      durationMs: 2,
    }),
    JSON.stringify({
      type: 'run-end',
      run: 'a',
      session: 's',
      time: '2026-01-01T00:00:00.200Z',
      status: 'ok',
      durationMs: 200,
      stdout: '1\n',
      value: null,
      error: null,
      toolCalls: 1,
    }),
    JSON.stringify({
      type: 'run-start',
      run: 'b',
      session: 's',
      time: '2026-01-01T00:01:00.000Z',
      code: 'while True: pass',
      timeoutMs: 1000,
    }),
    '{"type": "run-end", "run": "b", "sta',
  ];
  const runs = parseRunLog(lines.join('\n'));
  assert.deepEqual(
    runs.map((r) => [r.id, r.status, r.toolCalls.length]),
    [
      ['a', 'ok', 1],
      ['b', undefined, 0],
    ],
  );
  const b = runs[1]!;
  assert.equal(displayStatus(b, Date.parse('2026-01-01T00:01:30.000Z')), 'running');
  assert.equal(displayStatus(b, Date.parse('2026-01-01T00:03:00.000Z')), 'lost');
  assert.equal(displayStatus(runs[0]!), 'ok');
});

test('a run that fails before it starts is logged with its duration, and old records get one from their times', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-runlog-failed-'));
  const log = new RunLog(dir);
  log.runStarted({ run: 'f', session: 's', code: '1', timeoutMs: 1000 });
  await new Promise((resolve) => setTimeout(resolve, 20));
  log.runFailed({ run: 'f', session: 's', type: 'ImageMissingError', message: 'The sandbox image "x" is not present in podman' });
  log.close();
  const [failed] = parseRunLog(await readFile(join(dir, 'runs.jsonl'), 'utf8'));
  assert.equal(failed!.status, 'error');
  // The error under the name the model read, marked as a run no sandbox ran.
  assert.deepEqual([failed!.error?.type, failed!.notRun], ['ImageMissingError', true]);
  assert.ok(failed!.durationMs !== undefined && failed!.durationMs >= 15, `durationMs ${failed!.durationMs}`);
  const legacy = parseRunLog(
    [
      JSON.stringify({ type: 'run-start', run: 'g', session: 's', time: '2026-01-01T00:00:00.000Z', code: '1', timeoutMs: 1000 }),
      JSON.stringify({
        type: 'run-end',
        run: 'g',
        session: 's',
        time: '2026-01-01T00:00:00.350Z',
        status: 'error',
        error: { type: 'SandboxUnavailable', message: 'no image', traceback: '' },
      }),
    ].join('\n'),
  );
  assert.equal(legacy[0]!.durationMs, 350);
});

test("the run log keeps why a run's session started fresh, and reads it back for the run panel", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-runlog-change-'));
  const log = new RunLog(dir);
  log.runStarted({ run: 'r1', session: 's', code: 'x', timeoutMs: 1000 });
  const sessionChange = { kind: 'reaped' as const, reason: 'closed after 10 min idle (sandbox.idleSeconds)' };
  log.runEnded(result({ runId: 'r1', session: 's', status: 'error', sessionChange }), { toolCalls: 0 });
  log.close();
  const [run] = parseRunLog(await readFile(join(dir, 'runs.jsonl'), 'utf8'));
  assert.deepEqual(run?.sessionChange, sessionChange);
});
