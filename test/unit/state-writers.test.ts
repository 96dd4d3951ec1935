// One state dir, many writers: several processes (as several VS Code windows' bridges are)
// append to the shared run log through many rotations and save their catalog sections at the
// same time. Every run must be read back whole, no line may be torn, and no writer's servers
// may be erased by another's.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CATALOG_FILE, mergeCatalog, parseCatalogFile } from '../../src/state/catalog-file.ts';
import { RunLogReader } from '../../src/state/run-log/reader.ts';
import { runLogFiles } from '../../src/state/run-log/files.ts';

const WRITERS = ['w1', 'w2', 'w3'];
const RUNS = 150;

function writer(dir: string, name: string): Promise<void> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'state-writer-child.ts'), dir, name, String(RUNS)], {
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${name} exited ${code}: ${stderr}`)))),
  );
}

test('three processes write one run log and one catalog at once, through many rotations', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-writers-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await Promise.all(WRITERS.map((name) => writer(dir, name)));

  const files = runLogFiles(dir);
  assert.ok(files.length > 10, `only ${files.length} files: the test did not rotate`);
  const lines = files.flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean));
  assert.equal(lines.length, WRITERS.length * RUNS * 5, 'every event is in some file the reader reads');
  for (const line of lines) JSON.parse(line); // no torn or interleaved line

  const runs = new RunLogReader(dir, { minRuns: 10_000 }).runs();
  assert.equal(runs.length, WRITERS.length * RUNS);
  for (const run of runs) {
    assert.equal(run.status, 'ok', run.id);
    assert.equal(run.toolCalls.length, 3, run.id);
    assert.ok(run.code.startsWith(`# ${run.id}\n`), run.id);
    assert.equal(run.stdout, `${run.id}\n`);
  }
  // The view's default reading depth sees the newest runs of every writer.
  const recent = new RunLogReader(dir).runs();
  for (const name of WRITERS)
    assert.ok(
      recent.some((r) => r.id === `${name}-${RUNS - 1}`),
      name,
    );

  const sections = parseCatalogFile(readFileSync(join(dir, CATALOG_FILE), 'utf8'));
  assert.deepEqual(sections.map(([, s]) => s.owner).sort(), WRITERS);
  for (const [, section] of sections) {
    const name = section.owner!;
    assert.deepEqual(Object.keys(section.servers).sort(), [`${name}-a`, `${name}-b`]);
    assert.equal(section.servers[`${name}-b`]?.state, 'error');
    assert.deepEqual(
      section.servers[`${name}-b`]?.tools?.map((t) => t.name),
      ['last'],
    );
  }
  // Each window sees its own bridge's states; tool lists of all writers.
  const seenBy = (owner: string) => mergeCatalog(sections, owner, () => true);
  assert.equal(seenBy('w2')['w2-b']?.state, 'error');
  assert.equal(seenBy('w2')['w1-b']?.state, 'not-started', "another window's bridge is not this window's");
  assert.deepEqual(
    seenBy('w2')['w1-b']?.tools?.map((t) => t.name),
    ['last'],
  );
});
