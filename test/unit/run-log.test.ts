// The run log as the audit record: private files, a loss that is said out loud, per-run budgets
// that keep one run from pushing the others out, images pruned with the log, and a reader that
// follows rotation.
import assert from 'node:assert/strict';
import fs, { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { RunLog } from '../../src/state/run-log/writer.ts';
import { recordRefusedRequest } from '../../src/bridge/sandbox-api/host-methods.ts';
import { parseRunLog, RunLogReader } from '../../src/state/run-log/reader.ts';
import { runLogFiles } from '../../src/state/run-log/files.ts';
import type { RunResult } from '../../src/sandbox/sessions/run-result.ts';
import { runResult } from '../helpers/run-result.ts';

const posix = process.platform !== 'win32';
const mode = (path: string) => statSync(path).mode & 0o777;
const PNG = Buffer.from('89504e470d0a1a0a', 'hex');

function result(run: string, overrides: Partial<RunResult> = {}): RunResult {
  return runResult({ runId: run, session: 's', durationMs: 5, ...overrides });
}

function image(bytes: number): { mime: string; data: string } {
  return { mime: 'image/png', data: Buffer.concat([PNG, Buffer.alloc(bytes - PNG.length, 7)]).toString('base64') };
}

const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

async function temp(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

test('the state dir and everything the log writes are owner-only, also when made by an older version', { skip: !posix }, async () => {
  const root = await temp('cem-private-');
  const dir = join(root, 'state');
  // As an older version left it: a world-readable folder and log.
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'runs.jsonl'), '', { mode: 0o644 });
  chmodSync(join(dir, 'runs.jsonl'), 0o644);
  const log = new RunLog(dir, { maxFileBytes: 4096, keepFiles: 2 });
  for (let i = 0; i < 20; i++) {
    log.runStarted({ run: `r${i}`, session: 's', code: 'x'.repeat(400), timeoutMs: 1000 });
    log.runEnded(result(`r${i}`, { images: [image(64)] }), { toolCalls: 0 });
  }
  log.close();
  assert.equal(mode(dir), 0o700);
  assert.equal(mode(join(dir, 'images')), 0o700);
  for (const file of runLogFiles(dir)) assert.equal(mode(file), 0o600, file);
  assert.ok(runLogFiles(dir).length >= 2, 'rotated');
  for (const name of readdirSync(join(dir, 'images'))) assert.equal(mode(join(dir, 'images', name)), 0o600, name);
});

test('an unwritable state dir is a problem the bridge is told about, until it is fixed', async () => {
  const root = await temp('cem-unwritable-');
  // A file where the folder should be: unwritable for anyone, root included.
  const dir = join(root, 'state');
  writeFileSync(dir, 'not a folder');
  const told: Array<string | undefined> = [];
  const log = new RunLog(dir, { onProblem: (problem) => told.push(problem) });
  assert.match(log.check() ?? '', /cannot write the run log/, 'said at start, before any run');
  log.runStarted({ run: 'a', session: 's', code: '1', timeoutMs: 1000 });
  log.runEnded(result('a'), { toolCalls: 0 });
  assert.equal(told.length, 1, 'said once, not per event');
  assert.match(told[0]!, new RegExp(`cannot write the run log ${join(dir, 'runs.jsonl').replace(/[\\/.]/g, '\\$&')}`));
  assert.equal(log.problem, told[0]);
  rmSync(dir);
  log.runStarted({ run: 'b', session: 's', code: '2', timeoutMs: 1000 });
  log.close();
  assert.deepEqual(told.slice(1), [undefined]);
  assert.equal(log.problem, undefined);
  assert.deepEqual(
    parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8')).map((r) => r.id),
    ['b'],
  );
});

test("a window's bridge records the window on each run's start; other launchers leave it out", async () => {
  const dir = await temp('cem-owner-');
  const windowLog = new RunLog(dir, { owner: 'window-a' });
  windowLog.runStarted({ run: 'a', session: 's', code: '1', timeoutMs: 1000 });
  windowLog.close();
  const cliLog = new RunLog(dir);
  cliLog.runStarted({ run: 'b', session: 's', code: '1', timeoutMs: 1000 });
  cliLog.close();
  const runs = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
  assert.deepEqual(
    runs.map((run) => [run.id, run.owner]),
    [
      ['a', 'window-a'],
      ['b', undefined],
    ],
  );
});

test('a deleted state dir is made again at the next event, and the log goes on', async () => {
  const dir = join(await temp('cem-deleted-'), 'state');
  const log = new RunLog(dir);
  log.runStarted({ run: 'a', session: 's', code: '1', timeoutMs: 1000 });
  rmSync(dir, { recursive: true });
  log.runEnded(result('a'), { toolCalls: 0 });
  log.close();
  const [run] = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
  assert.equal(run?.status, 'ok');
  assert.equal(log.problem, undefined);
});

test('one run with 1,280 large tool calls does not rotate the earlier runs out of the log', async () => {
  const dir = await temp('cem-budget-');
  const options = { maxFileBytes: 1024 * 1024, keepFiles: 2 };
  const log = new RunLog(dir, options);
  for (let i = 0; i < 20; i++) {
    log.runStarted({ run: `early-${i}`, session: 's', code: `print(${i})`, timeoutMs: 1000 });
    log.runEnded(result(`early-${i}`), { toolCalls: 0 });
  }
  log.runStarted({ run: 'flood', session: 's', code: 'for i in range(1280): await mcp_x.big(blob=...)', timeoutMs: 1000 });
  for (let i = 0; i < 1280; i++) {
    log.toolCall({
      run: 'flood',
      server: 'x',
      tool: i % 2 ? 'big' : 'other',
      arguments: { blob: 'b'.repeat(60_000) },
      outcome: i % 10 ? 'ok' : 'failed',
      durationMs: 1,
    });
  }
  log.runEnded(result('flood'), { toolCalls: 1280 });
  log.close();
  const total = runLogFiles(dir).reduce((sum, f) => sum + statSync(f).size, 0);
  assert.ok(total < 3 * 1024 * 1024, `the flood took ${total} bytes`);
  const runs = new RunLogReader(dir).runs();
  assert.deepEqual(
    runs.slice(0, 20).map((r) => r.id),
    Array.from({ length: 20 }, (_, i) => `early-${i}`),
  );
  const flood = runs.find((r) => r.id === 'flood')!;
  assert.ok(flood.toolCalls.length > 0 && flood.toolCalls.length <= 100, `${flood.toolCalls.length} calls in full`);
  assert.equal(flood.toolCallCount, 1280);
  assert.equal(flood.omittedToolCalls?.count, 1280 - flood.toolCalls.length);
  const byTool = flood.omittedToolCalls.byTool;
  assert.equal((byTool['x.big'] ?? 0) + (byTool['x.other'] ?? 0), flood.omittedToolCalls.count);
  assert.equal(
    Object.values(flood.omittedToolCalls.byOutcome).reduce((a, b) => a + b, 0),
    flood.omittedToolCalls.count,
  );
  assert.ok((flood.omittedToolCalls.byOutcome.failed ?? 0) > 0);
});

test('the per-run count of tool calls logged in full is a cap of its own', async () => {
  const dir = await temp('cem-budget-count-');
  const log = new RunLog(dir, { fullToolCallsPerRun: 3 });
  log.runStarted({ run: 'r', session: 's', code: '1', timeoutMs: 1000 });
  for (let i = 0; i < 10; i++) log.toolCall({ run: 'r', server: 'x', tool: 't', arguments: { i }, outcome: 'ok', durationMs: 1 });
  log.runEnded(result('r'), { toolCalls: 10 });
  // Another run has its own budget.
  log.runStarted({ run: 'q', session: 's', code: '2', timeoutMs: 1000 });
  for (let i = 0; i < 2; i++) log.toolCall({ run: 'q', server: 'x', tool: 't', arguments: { i }, outcome: 'ok', durationMs: 1 });
  log.runEnded(result('q'), { toolCalls: 2 });
  log.close();
  const [r, q] = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
  assert.deepEqual(
    r!.toolCalls.map((c) => (c.arguments as { i: number }).i),
    [0, 1, 2],
  );
  assert.deepEqual(r!.omittedToolCalls, { count: 7, byTool: { 'x.t': 7 }, byOutcome: { ok: 7 } });
  assert.equal(q!.toolCalls.length, 2);
  assert.equal(q!.omittedToolCalls, undefined);
});

test('images: a per-run budget, a total cap with the oldest pruned first, and they leave with their run', async () => {
  const dir = await temp('cem-images-');
  const images = () => readdirSync(join(dir, 'images')).sort();
  const log = new RunLog(dir, { maxImageBytes: 10_000, maxImageBytesPerRun: 5_000, maxFileBytes: 1_500, keepFiles: 1 });
  // Over the per-run budget: the third image is listed, not stored.
  log.runStarted({ run: 'a', session: 's', code: '1', timeoutMs: 1000 });
  log.runEnded(result('a', { images: [image(2_000), image(2_000), image(2_000)] }), { toolCalls: 0 });
  assert.deepEqual(images(), ['a-0.png', 'a-1.png']);
  const [a] = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
  assert.match(a!.images[2]!.skipped ?? '', /per-run image budget/);
  // Over the total cap: the oldest go first.
  for (const run of ['b', 'c', 'd']) {
    await new Promise((resolve) => setTimeout(resolve, 15)); // distinct modification times
    log.runStarted({ run, session: 's', code: '1', timeoutMs: 1000 });
    log.runEnded(result(run, { images: [image(3_000)] }), { toolCalls: 0 });
  }
  const total = images().reduce((sum, name) => sum + statSync(join(dir, 'images', name)).size, 0);
  assert.ok(total <= 10_000, `${total} bytes of images`);
  assert.ok(!images().includes('a-0.png'), `oldest kept: ${images().join(', ')}`);
  assert.ok(images().includes('d-0.png'));
  // Runs rotated out of the log (keepFiles 1) take their images with them.
  for (let i = 0; i < 12; i++) {
    log.runStarted({ run: `z${i}`, session: 's', code: 'y'.repeat(200), timeoutMs: 1000 });
    log.runEnded(result(`z${i}`), { toolCalls: 0 });
  }
  log.close();
  const logged = new Set(new RunLogReader(dir).runs().map((r) => r.id));
  for (const name of images()) assert.ok(logged.has(name.replace(/-\d+\.png$/, '')), `${name} outlived its run`);
  assert.ok(!existsSync(join(dir, 'images', 'd-0.png')));
});

test('the reader follows rotation: runs split across files, rotated files, lines appended since', async () => {
  const dir = await temp('cem-reader-');
  const log = new RunLog(dir, { maxFileBytes: 2_000, keepFiles: 50 });
  const reader = new RunLogReader(dir);
  log.runStarted({ run: 'long', session: 's', code: 'x', timeoutMs: 1000 });
  for (let i = 0; i < 30; i++) {
    log.runStarted({ run: `r${i}`, session: 's', code: 'z'.repeat(300), timeoutMs: 1000 });
    log.runEnded(result(`r${i}`), { toolCalls: 0 });
    if (i === 10) assert.ok(reader.runs().some((r) => r.id === 'r10' && r.status === 'ok'));
  }
  log.runEnded(result('long'), { toolCalls: 0 });
  log.close();
  assert.ok(runLogFiles(dir).length > 5);
  const runs = reader.runs();
  assert.equal(runs.length, 31);
  assert.equal(runs[0]!.id, 'long');
  assert.equal(runs[0]!.status, 'ok', 'its start and end are in different files');
  assert.ok(runs.every((r) => r.status === 'ok'));
});

test("two writers in one state dir: each follows the other's rotation, nothing lands in a file nobody reads", async () => {
  const dir = await temp('cem-two-');
  const a = new RunLog(dir, { maxFileBytes: 3_000, keepFiles: 100 });
  const b = new RunLog(dir, { maxFileBytes: 3_000, keepFiles: 100 });
  for (let i = 0; i < 40; i++) {
    for (const [log, name] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      log.runStarted({ run: `${name}${i}`, session: name, code: 'c'.repeat(150), timeoutMs: 1000 });
      log.runEnded(result(`${name}${i}`), { toolCalls: 0 });
    }
  }
  a.close();
  b.close();
  const runs = new RunLogReader(dir).runs();
  assert.equal(runs.length, 80);
  assert.ok(runs.every((r) => r.status === 'ok' && r.code.length === 150));
  for (const file of runLogFiles(dir)) assert.ok(statSync(file).size <= 3_000 + 600, `${file}: ${statSync(file).size} bytes`);
});

test('files from /work/out are kept beside the images (0600), named in the log, and leave with their run', async () => {
  const dir = await temp('cem-outfiles-');
  const log = new RunLog(dir, { maxFileBytes: 1_500, keepFiles: 1 });
  log.runStarted({ run: 'f', session: 's', code: '1', timeoutMs: 1000 });
  const data = Buffer.from('a,b\n1,2\n');
  log.runEnded(
    result('f', {
      files: [
        { path: 'data/t.csv', bytes: data.length, data: data.toString('base64') },
        { path: 'big.bin', bytes: 9e6, skipped: 'size' },
      ],
    }),
    { toolCalls: 0 },
  );
  const [run] = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
  assert.deepEqual(run!.files, [
    { path: 'data/t.csv', bytes: 8, file: 'images/f-out-0.dat' },
    { path: 'big.bin', bytes: 9e6, skipped: 'not returned: size' },
  ]);
  const saved = join(dir, 'images', 'f-out-0.dat');
  assert.deepEqual(readFileSync(saved), data);
  if (posix) assert.equal(mode(saved), 0o600);
  for (let i = 0; i < 12; i++) {
    log.runStarted({ run: `z${i}`, session: 's', code: 'y'.repeat(200), timeoutMs: 1000 });
    log.runEnded(result(`z${i}`), { toolCalls: 0 });
  }
  log.close();
  assert.ok(!existsSync(saved), 'the file outlived its run');
});

// Images and /work/out files share one per-run budget; an event costs one stat of the log.
const outFile = (path: string, bytes: number) => ({ path, bytes, data: Buffer.alloc(bytes, 1).toString('base64') });

type Entry = { file?: string; skipped?: string; bytes: number };
const ended = (dir: string) =>
  readFileSync(join(dir, 'runs.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; run: string; images?: Entry[]; files?: Entry[] })
    .filter((e) => e.type === 'run-end');

test('images and /work/out files of a run share one per-run budget', async () => {
  const dir = await temp('cem-log-budget-');
  const log = new RunLog(dir, { maxImageBytesPerRun: 5_000, maxImageBytes: 1_000_000 });
  log.runStarted({ run: 'a', session: 's', code: '1', timeoutMs: 1000 });
  // 3,000 bytes of images: 2,000 left for files, so the second file is over it.
  log.runEnded(result('a', { images: [image(3_000)], files: [outFile('one.csv', 1_500), outFile('two.csv', 1_500)] }), { toolCalls: 0 });
  log.close();
  const [end] = ended(dir);
  assert.equal(end!.images![0]!.file, 'images/a-0.png');
  assert.equal(end!.files![0]!.file, 'images/a-out-0.dat');
  assert.equal(end!.files![1]!.file, undefined);
  assert.match(end!.files![1]!.skipped ?? '', /per-run image budget \(images and \/work\/out files together\)/);
  const stored = readdirSync(join(dir, 'images')).reduce((sum, name) => sum + statSync(join(dir, 'images', name)).size, 0);
  assert.ok(stored <= 5_000, `${stored} bytes stored for one run`);
});

test('concurrent runs each keep their own budget, and the total stays within its cap', async () => {
  const dir = await temp('cem-log-budget-');
  const log = new RunLog(dir, { maxImageBytesPerRun: 4_000, maxImageBytes: 12_000 });
  const runs = Array.from({ length: 6 }, (_, i) => `r${i}`);
  for (const run of runs) log.runStarted({ run, session: 's', code: '1', timeoutMs: 1000 });
  await Promise.all(
    runs.map(async (run) => {
      await new Promise((resolve) => setImmediate(resolve));
      log.runEnded(result(run, { images: [image(2_500)], files: [outFile('a.bin', 1_000), outFile('b.bin', 1_000)] }), { toolCalls: 0 });
    }),
  );
  log.close();
  for (const end of ended(dir)) {
    assert.ok(end.files![0]!.file, `${end.run}: the first file fits`);
    assert.match(end.files![1]!.skipped ?? '', /per-run image budget/, `${end.run}: the second is over`);
  }
  const stored = readdirSync(join(dir, 'images')).reduce((sum, name) => sum + statSync(join(dir, 'images', name)).size, 0);
  assert.ok(stored <= 12_000, `${stored} bytes stored in all`);
});

test('an event stats the log once', async (t) => {
  const dir = await temp('cem-log-budget-');
  const log = new RunLog(dir);
  log.runStarted({ run: 'a', session: 's', code: '1', timeoutMs: 1000 });
  const stat = t.mock.method(fs, 'statSync');
  const fstat = t.mock.method(fs, 'fstatSync');
  syncBuiltinESMExports();
  t.after(() => {
    stat.mock.restore();
    fstat.mock.restore();
    syncBuiltinESMExports();
  });
  for (let i = 0; i < 10; i++) log.toolCall({ run: 'a', server: 's', tool: 't', arguments: { i }, outcome: 'ok', durationMs: 1 });
  assert.equal(stat.mock.callCount() + fstat.mock.callCount(), 10, 'one stat per event');
  log.close();
  assert.equal(readFileSync(join(dir, 'runs.jsonl'), 'utf8').trim().split('\n').length, 11);
});

test('a request refused because its run had ended is on record as a denied call, with the reason', async () => {
  const dir = await temp('cem-refused-');
  const log = new RunLog(dir);
  log.runStarted({ run: 'r1', session: 's', code: 'start a thread', timeoutMs: 1000 });
  log.runEnded(result('r1'), { toolCalls: 0 });
  const reason = 'the call came from code of run r1 after its end; calls are served only while their run is in progress';
  recordRefusedRequest(log, {
    run: 'r1',
    method: 'call_tool',
    params: { server: 'memory', tool: 'read_graph', arguments: { a: 1 } },
    reason,
  });
  // Whatever the sandbox put in the request, the record holds only well-formed names.
  recordRefusedRequest(log, { run: 'r1', method: 'search_tools', params: { server: 7, query: 'x' }, reason });
  log.close();
  const [run] = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
  assert.deepEqual(
    run?.toolCalls.map((c) => [c.server, c.tool, c.outcome, c.error]),
    [
      ['memory', 'read_graph', 'denied', reason],
      ['(bridge)', 'search_tools', 'denied', reason],
    ],
  );
});
