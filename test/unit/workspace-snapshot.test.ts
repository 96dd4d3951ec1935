// The workspace snapshot a remote engine's sandbox gets: which files (a git repository's without
// .git and ignored files, else all but .git; no links), the cap's refusal, and the tar itself,
// extracted by the kernel's own workspace.py (in this machine's python3, into a temporary
// folder standing for /workspace) with every file read-only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import {
  listSnapshot,
  snapshotArchive,
  snapshotMaxBytes,
  SnapshotRefusedError,
  snapshotText,
  type SnapshotListing,
} from '../../src/sandbox/container/workspace-snapshot.ts';

const root = mkdtempSync(join(tmpdir(), 'cem-snapshot-'));
// The extracted copies are read-only: made writable again to be removed.
after(() => {
  execFileSync('chmod', ['-R', 'u+w', root]);
  rmSync(root, { recursive: true, force: true });
});

const LONG = `${'deep-folder-name/'.repeat(9)}${'a-file-name-that-is-long'.repeat(5)}.txt`;

/** A folder with a nested file, a path longer than ustar's fields, a link out of it and a .git. */
function project(name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'src', 'pkg'), { recursive: true });
  mkdirSync(join(dir, 'build'), { recursive: true });
  writeFileSync(join(dir, 'README.md'), 'hello\n');
  writeFileSync(join(dir, 'src', 'pkg', 'mod.py'), 'x = 1\n');
  writeFileSync(join(dir, 'build', 'out.bin'), Buffer.alloc(3000, 7));
  mkdirSync(join(dir, LONG, '..'), { recursive: true });
  writeFileSync(join(dir, LONG), 'long\n');
  writeFileSync(join(root, 'secret.txt'), 'outside\n');
  symlinkSync(join(root, 'secret.txt'), join(dir, 'link-out.txt'));
  return dir;
}

const names = (listing: SnapshotListing) => listing.entries.map((e) => `${e.name}${e.type === 'dir' ? '/' : ''}`).sort();

/** The tar extracted by the kernel's workspace.py into a folder of its own; its files and their modes. */
function extract(listing: SnapshotListing, archive: Buffer): string {
  const target = mkdtempSync(join(root, 'ws-'));
  const tarFile = join(target, '..', `${target.split('/').pop()}.tar`);
  writeFileSync(tarFile, archive);
  const kernel = new URL('../../src/sandbox/container/kernel/workspace.py', import.meta.url).pathname;
  const script = [
    'import base64, sys',
    '_kernel_threads = set()',
    'exec(compile(open(sys.argv[1]).read(), "workspace.py", "exec"))',
    '_WORKSPACE_ROOT = sys.argv[2]',
    'data = open(sys.argv[3], "rb").read()',
    '_workspace_frame({"t": "ws", "op": "begin"})',
    'for i in range(0, len(data), 4096): _workspace_frame({"t": "ws", "op": "data", "data": base64.b64encode(data[i:i + 4096]).decode()})',
    '_workspace_frame({"t": "ws", "op": "end"})',
    'print(workspace_error())',
  ].join('\n');
  const out = execFileSync('python3', ['-c', script, kernel, target, tarFile], { encoding: 'utf8' });
  assert.equal(out.trim(), 'None', `extraction of ${listing.files} files failed: ${out}`);
  return target;
}

async function tarOf(listing: SnapshotListing): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of snapshotArchive(listing)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

test('a plain folder: every file and folder but .git, no links; the kernel extracts it read-only', async () => {
  const dir = project('plain');
  mkdirSync(join(dir, '.git'));
  writeFileSync(join(dir, '.git', 'config'), '[core]\n');
  const listing = await listSnapshot([{ dir, target: '/workspace' }], 10 * 1024 * 1024);
  assert.ok(names(listing).includes('README.md'));
  assert.ok(names(listing).includes('build/out.bin'));
  assert.ok(names(listing).includes(LONG));
  assert.ok(!names(listing).some((n) => n.startsWith('.git')), names(listing).join(' '));
  assert.ok(!names(listing).includes('link-out.txt'), 'a link is never followed');
  assert.equal(listing.files, 4);
  assert.equal(listing.bytes, 6 + 6 + 3000 + 5);
  assert.match(snapshotText(listing), /^snapshot of .*plain \(4 files, 0\.0 MB\), taken at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const archive = await tarOf(listing);
  // GNU tar reads it too, long path included.
  const listed = execFileSync('tar', ['-tf', '-'], { input: archive, encoding: 'utf8' });
  assert.ok(listed.split('\n').includes(LONG), listed);
  const out = extract(listing, archive);
  assert.equal(readFileSync(join(out, 'src', 'pkg', 'mod.py'), 'utf8'), 'x = 1\n');
  assert.equal(readFileSync(join(out, LONG), 'utf8'), 'long\n');
  assert.deepEqual(readFileSync(join(out, 'build', 'out.bin')), Buffer.alloc(3000, 7));
  for (const path of ['README.md', 'src', join('src', 'pkg', 'mod.py')]) {
    assert.equal(statSync(join(out, path)).mode & 0o222, 0, `${path} is read-only`);
  }
});

test('a git repository: tracked and untracked files, not ignored ones, never .git', async () => {
  const dir = project('repo');
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
  git('init', '-q');
  writeFileSync(join(dir, '.gitignore'), 'build/\n*.log\n');
  writeFileSync(join(dir, 'debug.log'), 'noise\n');
  git('add', 'README.md', '.gitignore');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'first');
  writeFileSync(join(dir, 'untracked.txt'), 'new\n');
  const listing = await listSnapshot([{ dir, target: '/workspace' }], 10 * 1024 * 1024);
  const found = names(listing);
  for (const name of ['README.md', '.gitignore', 'untracked.txt', 'src/pkg/mod.py', LONG]) assert.ok(found.includes(name), name);
  for (const name of ['build/out.bin', 'debug.log']) assert.ok(!found.includes(name), name);
  assert.ok(!found.some((n) => n.startsWith('.git/')), found.join(' '));
  assert.ok(!found.includes('link-out.txt'));
  // Several folders: each under its own name.
  const two = await listSnapshot(
    [
      { dir, target: '/workspace/repo' },
      { dir: join(root, 'plain'), target: '/workspace/plain' },
    ],
    10 * 1024 * 1024,
  );
  assert.ok(names(two).includes('repo/README.md') && names(two).includes('plain/build/out.bin'), names(two).join(' '));
  const out = extract(two, await tarOf(two));
  assert.equal(readFileSync(join(out, 'repo', 'untracked.txt'), 'utf8'), 'new\n');
});

test('over the cap, the snapshot is refused with its size, the cap and the key', async () => {
  const dir = join(root, 'big');
  mkdirSync(dir);
  writeFileSync(join(dir, 'a.bin'), Buffer.alloc(3 * 1024 * 1024));
  const config = defaultSandboxConfig({ workspace: { path: dir, access: 'read-only', snapshotMaxMB: 2 } });
  assert.equal(snapshotMaxBytes(config), 2 * 1024 * 1024);
  assert.equal(snapshotMaxBytes(defaultSandboxConfig({ workspace: { path: dir, access: 'read-only' } })), 200 * 1024 * 1024);
  await assert.rejects(listSnapshot([{ dir, target: '/workspace' }], snapshotMaxBytes(config)), (error: Error) => {
    assert.ok(error instanceof SnapshotRefusedError);
    assert.match(error.message, /3\.0 MB in 1 file, over the cap of 2\.0 MB \(sandbox\.workspace\.snapshotMaxMB\)/);
    assert.match(error.message, /runs go on without \/workspace/);
    return true;
  });
});
