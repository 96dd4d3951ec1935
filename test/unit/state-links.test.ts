// Links and other non-regular files planted in the state dir: for every kind of file the
// bridge writes there (run log, images, locks, catalog, image packages, OAuth tokens, snippets,
// sign-in notices), nothing is written, appended, removed or tightened through a symbolic link
// (to a file outside, or a folder outside), and a FIFO never hangs a writer or a reader.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readCatalogSections, saveCatalogSection } from '../../src/state/catalog-file.ts';
import { rememberImagePackages } from '../../src/state/image-packages-file.ts';
import { readLearnedReturns, saveLearnedReturns, toolSchemaHash } from '../../src/state/learned-returns-file.ts';
import { SignInBoard, newSignInRequests, signInFileName } from '../../src/state/sign-in-notices.ts';
import { TokenStore } from '../../src/state/oauth-tokens.ts';
import { ensurePrivateDir, ensurePrivateSubdir, UnsafeStatePathError } from '../../src/state/private-files.ts';
import { RunLog } from '../../src/state/run-log/writer.ts';
import { RunLogReader } from '../../src/state/run-log/reader.ts';
import { writeSnippet } from '../../src/state/snippets.ts';
import { withLockSync } from '../../src/state/lock.ts';
import type { RunResult } from '../../src/sandbox/sessions/run-result.ts';
import { runResult } from '../helpers/run-result.ts';

const posix = process.platform !== 'win32';
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(56, 7)]).toString('base64');
const LINK_REFUSED = /refusing .*: it is a symbolic link.*remove the link/;

const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A state dir, and outside it a file and a folder (0644 / 0755) that links will point at. */
async function setup(): Promise<{ state: string; outsideFile: string; outsideDir: string; untouched: () => void }> {
  const root = await mkdtemp(join(tmpdir(), 'cem-links-'));
  made.push(root);
  const state = join(root, 'state');
  ensurePrivateDir(state);
  const outsideFile = join(root, 'victim.txt');
  writeFileSync(outsideFile, 'original\n');
  chmodSync(outsideFile, 0o644);
  const outsideDir = join(root, 'victim-dir');
  mkdirSync(outsideDir);
  chmodSync(outsideDir, 0o755);
  writeFileSync(join(outsideDir, 'r0-0.png'), 'keep');
  chmodSync(join(outsideDir, 'r0-0.png'), 0o644);
  const untouched = () => {
    assert.equal(readFileSync(outsideFile, 'utf8'), 'original\n', 'nothing written to the file outside');
    assert.equal(statSync(outsideFile).mode & 0o777, 0o644, "the outside file's mode is unchanged");
    assert.deepEqual(readdirSync(outsideDir), ['r0-0.png'], 'nothing added to or removed from the folder outside');
    assert.equal(statSync(outsideDir).mode & 0o777, 0o755, "the outside folder's mode is unchanged");
    assert.equal(readFileSync(join(outsideDir, 'r0-0.png'), 'utf8'), 'keep');
  };
  return { state, outsideFile, outsideDir, untouched };
}

function result(run: string, overrides: Partial<RunResult> = {}): RunResult {
  return runResult({ runId: run, session: 's', stdout: 'out', durationMs: 5, ...overrides });
}

test('runs.jsonl as a link to a file outside: nothing appended or tightened, and the problem is said', { skip: !posix }, async () => {
  const { state, outsideFile, untouched } = await setup();
  symlinkSync(outsideFile, join(state, 'runs.jsonl'));
  const told: Array<string | undefined> = [];
  const log = new RunLog(state, { onProblem: (problem) => told.push(problem) });
  assert.match(log.check() ?? '', LINK_REFUSED);
  log.runStarted({ run: 'r1', session: 's', code: 'print(1)', timeoutMs: 1000 });
  log.runEnded(result('r1'), { toolCalls: 0 });
  log.close();
  untouched();
  assert.ok(lstatSync(join(state, 'runs.jsonl')).isSymbolicLink(), 'the link is left for the person to see');
  assert.match(told.at(-1) ?? '', /cannot write the run log .*runs\.jsonl: refusing/);
  // The reader does not read through it either.
  assert.deepEqual(new RunLogReader(state).runs(), []);
});

test('runs.jsonl as a link to a folder outside, or a FIFO: refused, nothing hangs', { skip: !posix }, async () => {
  const { state, outsideDir, untouched } = await setup();
  symlinkSync(outsideDir, join(state, 'runs.jsonl'));
  const log = new RunLog(state);
  assert.match(log.check() ?? '', LINK_REFUSED);
  log.close();
  untouched();

  const other = (await setup()).state;
  execFileSync('mkfifo', [join(other, 'runs.jsonl')]);
  const fifo = new RunLog(other);
  assert.match(fifo.check() ?? '', /refusing .*runs\.jsonl: it is a FIFO( or device)?, not a regular file/);
  fifo.close();
  assert.deepEqual(new RunLogReader(other).runs(), [], 'the reader skips the FIFO instead of waiting on it');
});

test('images/ as a link to a folder outside: no image written there, none pruned or dropped from it', { skip: !posix }, async () => {
  const { state, outsideDir, untouched } = await setup();
  symlinkSync(outsideDir, join(state, 'images'));
  // A tiny total budget would prune every image there, and rotation drops the images of old runs.
  const log = new RunLog(state, { maxImageBytes: 1, maxFileBytes: 300, keepFiles: 1 });
  for (const run of ['r0', 'r1', 'r2', 'r3']) {
    log.runStarted({ run, session: 's', code: 'x'.repeat(100), timeoutMs: 1000 });
    log.runEnded(result(run, { images: [{ mime: 'image/png', data: PNG }] }), { toolCalls: 0 });
  }
  log.close();
  untouched();
  const line = readFileSync(join(state, 'runs.jsonl'), 'utf8').trim().split('\n').at(-1)!;
  assert.match(line, /"skipped":"not written: refusing .*images: it is a symbolic link/);
});

test('an image name planted as a link inside images/ is replaced, never written through', { skip: !posix }, async () => {
  const { state, outsideFile, untouched } = await setup();
  mkdirSync(join(state, 'images'), { mode: 0o700 });
  symlinkSync(outsideFile, join(state, 'images', 'r1-0.png'));
  const log = new RunLog(state);
  log.runStarted({ run: 'r1', session: 's', code: '1', timeoutMs: 1000 });
  log.runEnded(result('r1', { images: [{ mime: 'image/png', data: PNG }] }), { toolCalls: 0 });
  log.close();
  untouched();
  assert.ok(lstatSync(join(state, 'images', 'r1-0.png')).isFile());
});

test('the rotation and catalog locks as links: broken as stale, the target left alone', { skip: !posix }, async () => {
  const { state, outsideFile, untouched } = await setup();
  symlinkSync(outsideFile, join(state, 'runs.lock'));
  assert.deepEqual(
    withLockSync(join(state, 'runs.lock'), () => 'held', { timeoutMs: 2000 }),
    { value: 'held' },
  );
  execFileSync('mkfifo', [join(state, 'catalog.lock')]);
  await saveCatalogSection(state, { s: { state: 'running' } });
  untouched();
  assert.equal(existsSync(join(state, 'runs.lock')), false);
});

test(
  "catalog.json, image-packages.json and learned-returns.json as links: replaced by the bridge's own file, the target unchanged",
  { skip: !posix },
  async () => {
    const { state, outsideFile, untouched } = await setup();
    symlinkSync(outsideFile, join(state, 'catalog.json'));
    symlinkSync(outsideFile, join(state, 'image-packages.json'));
    symlinkSync(outsideFile, join(state, 'learned-returns.json'));
    assert.deepEqual(await readCatalogSections(state), [], 'not read through the link');
    const learned = await readLearnedReturns(state);
    assert.deepEqual(learned.entries, [], 'not read through the link');
    assert.match(String(learned.problem), /learned-returns\.json ignored \(.*symbolic link/);
    await saveCatalogSection(state, { s: { state: 'running' } });
    await rememberImagePackages(state, 'img', 'key', { names: ['numpy'], more: 0 });
    await saveLearnedReturns(state, [{ server: 's', tool: 't', schema: toolSchemaHash({}, undefined), seen: 'text', learnedAt: 1 }]);
    untouched();
    for (const name of ['catalog.json', 'image-packages.json', 'learned-returns.json']) {
      const stat = lstatSync(join(state, name));
      assert.ok(stat.isFile() && (stat.mode & 0o777) === 0o600, name);
    }
  },
);

test('oauth/ as a link to a folder outside, and a token file as a link: refused, said, nothing written', { skip: !posix }, async () => {
  const { state, outsideDir, outsideFile, untouched } = await setup();
  symlinkSync(outsideDir, join(state, 'oauth'));
  const store = new TokenStore(state, 'srv', 'https://example.test/mcp', undefined);
  await assert.rejects(
    store.write({ version: 1, url: 'https://example.test/mcp', tokens: { access_token: 'secret' } }),
    UnsafeStatePathError,
  );
  untouched();

  const other = (await setup()).state;
  mkdirSync(join(other, 'oauth'), { mode: 0o700 });
  symlinkSync(outsideFile, join(other, 'oauth', 'srv.json'));
  const logged: string[] = [];
  const linked = new TokenStore(other, 'srv', 'https://example.test/mcp', undefined, (m) => logged.push(m));
  assert.deepEqual(await linked.read(), { version: 1, url: 'https://example.test/mcp' });
  assert.match(logged.join('\n'), LINK_REFUSED);
  await linked.write({ version: 1, url: 'https://example.test/mcp' });
  untouched();
});

test(
  'snippets/ as a link to a folder outside: no snippet saved there; a linked snippet file is replaced only on overwrite',
  { skip: !posix },
  async () => {
    const { state, outsideDir, outsideFile, untouched } = await setup();
    symlinkSync(outsideDir, join(state, 'snippets'));
    await assert.rejects(writeSnippet(join(state, 'snippets'), 'evil', 'def main():\n    pass\n'), LINK_REFUSED);
    untouched();

    const other = (await setup()).state;
    mkdirSync(join(other, 'snippets'), { mode: 0o700 });
    symlinkSync(outsideFile, join(other, 'snippets', 'name.py'));
    await assert.rejects(writeSnippet(join(other, 'snippets'), 'name', 'def main():\n    pass\n'), /EEXIST/);
    await writeSnippet(join(other, 'snippets'), 'name', 'def main():\n    pass\n', { overwrite: true });
    untouched();
    assert.ok(lstatSync(join(other, 'snippets', 'name.py')).isFile());
  },
);

test('sign-in notices as a link: not read through, replaced when written', { skip: !posix }, async () => {
  const { state, outsideFile, untouched } = await setup();
  const file = join(state, signInFileName('w1')!);
  symlinkSync(outsideFile, file);
  assert.deepEqual(newSignInRequests(file, new Set()), []);
  const board = new SignInBoard(state, 'w1');
  board.set('srv', { id: 'a', server: 'srv', url: 'https://example.test/auth', expiresAt: Date.now() + 60_000 });
  await board.settled();
  untouched();
  assert.ok(lstatSync(file).isFile());
});

test(
  'a folder of the state dir that is a link is refused; the state dir itself may be a link the user made',
  { skip: !posix },
  async () => {
    const { state, outsideDir, untouched } = await setup();
    symlinkSync(outsideDir, join(state, 'sub'));
    assert.throws(() => ensurePrivateSubdir(join(state, 'sub')), LINK_REFUSED);
    untouched();
    writeFileSync(join(state, 'file'), '');
    assert.throws(() => ensurePrivateSubdir(join(state, 'file')), /is not a folder/);

    const root = (await setup()).state;
    const own = join(root, '..', 'linked-state');
    symlinkSync(root, own);
    chmodSync(root, 0o755);
    ensurePrivateDir(own);
    assert.equal(statSync(root).mode & 0o777, 0o700, "the user's own linked state dir is used (and kept owner-only)");
  },
);
