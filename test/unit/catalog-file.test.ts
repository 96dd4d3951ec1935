// catalog.json with a section per writer: merging for a window's view, the cache across
// writers, the legacy format, stale sections and the lock that keeps rewrites apart.
import assert from 'node:assert/strict';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  CATALOG_FILE,
  cachedTools,
  mergeCatalog,
  parseCatalogFile,
  saveCatalogSection,
  setCatalogWriter,
  type CatalogSection,
} from '../../src/state/catalog-file.ts';
import { withLock, withLockSync } from '../../src/state/lock.ts';

const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
const temp = async (prefix: string) => {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
};

const section = (over: Partial<CatalogSection>): CatalogSection => ({
  role: 'bridge',
  pid: 1,
  host: 'h',
  updatedAt: '2026-01-01T00:00:00.000Z',
  servers: {},
  ...over,
});

test("a window's view: states from its own live bridge, tool lists from the newest listing of the same config", () => {
  const sections: Array<[string, CatalogSection]> = [
    [
      'mine',
      section({
        owner: 'A',
        updatedAt: '2026-01-01T00:00:02.000Z',
        servers: { memory: { fingerprint: 'f1', state: 'running' }, web: { fingerprint: 'w', state: 'error', error: 'boom' } },
      }),
    ],
    [
      'refresh',
      section({
        role: 'refresh',
        owner: 'A',
        updatedAt: '2026-01-01T00:00:03.000Z',
        servers: {
          memory: { fingerprint: 'f1', state: 'running', updatedAt: '2026-01-01T00:00:03.000Z', tools: [{ name: 'read_graph' }] },
        },
      }),
    ],
    [
      'other',
      section({
        owner: 'B',
        updatedAt: '2026-01-01T00:00:04.000Z',
        servers: {
          memory: {
            fingerprint: 'f2',
            state: 'error',
            error: 'other config',
            updatedAt: '2026-01-01T00:00:04.000Z',
            tools: [{ name: 'elsewhere' }],
          },
          docs: { fingerprint: 'd', state: 'running', updatedAt: '2026-01-01T00:00:01.000Z', tools: [{ name: 'search' }] },
        },
      }),
    ],
  ];
  const view = mergeCatalog(sections, 'A', () => true);
  assert.equal(view.memory?.state, 'running');
  assert.deepEqual(
    view.memory?.tools?.map((t) => t.name),
    ['read_graph'],
    'another config of the same name is not mixed in',
  );
  assert.deepEqual([view.web?.state, view.web?.error], ['error', 'boom']);
  assert.equal(view.docs?.state, 'not-started', "window B's server does not run in window A");
  assert.deepEqual(
    view.docs?.tools?.map((t) => t.name),
    ['search'],
  );
  // When A's bridge is gone, its servers are not running any more.
  const gone = mergeCatalog(sections, 'A', (s) => s.owner !== 'A');
  assert.equal(gone.memory?.state, 'not-started');
  assert.equal(gone.web?.error, undefined);
  // Without an owner (a standalone reader): the newest live bridge of each server.
  assert.equal(mergeCatalog(sections, undefined, () => true).memory?.state, 'error');
  assert.deepEqual(
    cachedTools(sections, 'memory', 'f1')?.tools?.map((t) => t.name),
    ['read_graph'],
  );
  assert.deepEqual(
    cachedTools(sections, 'memory', 'f2')?.tools?.map((t) => t.name),
    ['elsewhere'],
  );
});

test("a restarted bridge's predecessor, still shutting down, does not speak for the window even when it wrote last", () => {
  const old = section({
    owner: 'A',
    pid: 2,
    startedAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:01:00.000Z',
    servers: { memory: { fingerprint: 'f1', state: 'not-started' } },
  });
  const current = section({
    owner: 'A',
    pid: 3,
    startedAt: '2026-01-01T00:00:30.000Z',
    updatedAt: '2026-01-01T00:00:40.000Z',
    servers: { memory: { fingerprint: 'f1', state: 'running' } },
  });
  assert.equal(
    mergeCatalog(
      [
        ['old', old],
        ['current', current],
      ],
      'A',
      () => true,
    ).memory?.state,
    'running',
  );
  // Once it is gone, or for writers that do not say when they started: the newest written.
  assert.equal(
    mergeCatalog(
      [
        ['old', old],
        ['current', current],
      ],
      'A',
      (s) => s.pid !== 3,
    ).memory?.state,
    'not-started',
  );
  const { startedAt: _a, ...oldUnstamped } = old;
  const { startedAt: _b, ...currentUnstamped } = current;
  assert.equal(
    mergeCatalog(
      [
        ['old', oldUnstamped],
        ['current', currentUnstamped],
      ],
      'A',
      () => true,
    ).memory?.state,
    'not-started',
  );
});

test('the legacy single-writer catalog is read as one stale section and replaced on the next save', async () => {
  const dir = await temp('cem-catalog-legacy-');
  const legacy = {
    version: 1,
    servers: { memory: { fingerprint: 'f', state: 'running', updatedAt: '2026-01-01T00:00:00.000Z', tools: [{ name: 'read_graph' }] } },
  };
  writeFileSync(join(dir, CATALOG_FILE), JSON.stringify(legacy));
  const sections = parseCatalogFile(JSON.stringify(legacy));
  assert.equal(sections.length, 1);
  assert.deepEqual(
    cachedTools(sections, 'memory', 'f')?.tools?.map((t) => t.name),
    ['read_graph'],
  );
  assert.equal(mergeCatalog(sections, undefined).memory?.state, 'not-started', 'nobody runs it now');
  setCatalogWriter({ role: 'bridge', owner: 'test' });
  await saveCatalogSection(dir, { fresh: { state: 'running' } });
  const saved = parseCatalogFile(await readFile(join(dir, CATALOG_FILE), 'utf8'));
  assert.deepEqual(
    saved.map(([, s]) => Object.keys(s.servers)),
    [['fresh']],
  );
  if (process.platform !== 'win32') assert.equal(statSync(join(dir, CATALOG_FILE)).mode & 0o777, 0o600);
});

test('saving keeps other writers, drops sections of long-dead writers, and replaces only its own', async () => {
  const dir = await temp('cem-catalog-sections-');
  const now = Date.now();
  const file = {
    version: 2,
    writers: {
      live: section({
        host: hostname(),
        pid: process.ppid,
        owner: 'B',
        updatedAt: new Date(now - 3600_000).toISOString(),
        servers: { b: { state: 'running' } },
      }),
      recentDead: section({
        host: hostname(),
        pid: 2 ** 22 + 12345,
        updatedAt: new Date(now - 60_000).toISOString(),
        servers: { c: { state: 'running' } },
      }),
      oldDead: section({
        host: hostname(),
        pid: 2 ** 22 + 12346,
        updatedAt: new Date(now - 3 * 24 * 3600_000).toISOString(),
        servers: { d: { state: 'running' } },
      }),
    },
  };
  writeFileSync(join(dir, CATALOG_FILE), JSON.stringify(file));
  setCatalogWriter({ role: 'bridge', owner: 'A' });
  await saveCatalogSection(dir, { a: { state: 'starting' } });
  await saveCatalogSection(dir, { a: { state: 'running' } });
  const sections = parseCatalogFile(await readFile(join(dir, CATALOG_FILE), 'utf8'));
  const ids = sections.map(([id]) => id).sort();
  assert.deepEqual(ids, [`bridge:${hostname()}:${process.pid}`, 'live', 'recentDead'].sort());
  assert.equal(mergeCatalog(sections, 'A').a?.state, 'running');
  assert.equal(mergeCatalog(sections, 'B').b?.state, 'running');
  assert.equal(mergeCatalog(sections, 'B').c?.state, 'not-started', 'its writer is dead');
});

test('the lock: exclusive, waits its turn, breaks a lock left by a dead process', async () => {
  const dir = await temp('cem-lock-');
  const lock = join(dir, 'x.lock');
  const order: string[] = [];
  await Promise.all(
    ['a', 'b', 'c'].map((name) =>
      withLock(lock, async () => {
        order.push(`${name}+`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        order.push(`${name}-`);
      }),
    ),
  );
  for (let i = 0; i < order.length; i += 2) assert.equal(order[i]!.slice(0, 1), order[i + 1]!.slice(0, 1), order.join(' '));
  // Held by this process: a second taker times out.
  const nested = withLockSync(lock, () => withLockSync(lock, () => 'inner', { timeoutMs: 100 }));
  assert.deepEqual(nested, { value: undefined });
  // Left behind by a process that no longer exists: broken at once.
  writeFileSync(lock, `${2 ** 22 + 999}\n${hostname()}\n`);
  const started = Date.now();
  assert.deepEqual(
    withLockSync(lock, () => 'got it', { timeoutMs: 2000 }),
    { value: 'got it' },
  );
  assert.ok(Date.now() - started < 1000);
});
