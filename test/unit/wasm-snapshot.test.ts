// The WebAssembly interpreter snapshot's file: where it is kept, which files are used, and that a
// maker already at work (a fresh lock) is not joined by a second one. Making one, and breaking a
// stale lock, is the integration suite's (test/integration/wasm-kernel.test.ts).
import assert from 'node:assert/strict';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { cacheDir } from '../../src/shared/cache-dir.ts';
import { makeSnapshot, snapshotFile, snapshotIdentity, unsound } from '../../src/sandbox/wasm/snapshot.ts';
import { kernelDir, pyodideDir } from '../../src/sandbox/wasm/command.ts';

describe('the WebAssembly interpreter snapshot file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-snapshot-unit-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("is kept in the user's cache folder of each platform, or CEM_CACHE_DIR", () => {
    assert.equal(cacheDir({ CEM_CACHE_DIR: '/x/y' }, 'linux'), '/x/y');
    assert.equal(cacheDir({ XDG_CACHE_HOME: '/xdg' }, 'linux'), join('/xdg', 'code-execution-mode'));
    assert.equal(cacheDir({}, 'linux'), join(homedir(), '.cache', 'code-execution-mode'));
    assert.equal(cacheDir({}, 'darwin'), join(homedir(), 'Library', 'Caches', 'code-execution-mode'));
    assert.equal(cacheDir({ LOCALAPPDATA: 'C:\\L' }, 'win32'), join('C:\\L', 'code-execution-mode', 'cache'));
  });

  test('is named for what it is made from, in the folder asked', () => {
    const file = snapshotFile(dir);
    assert.equal(dirname(file), dir);
    assert.match(file, /pyodide-[0-9a-f]{16}\.snapshot$/);
    assert.equal(snapshotFile(dir), file);
  });

  test('is named for the contents it was made from, not their place: a copy elsewhere shares it, another binary or loader does not', () => {
    /** A copy of the interpreter's files at `where`: Pyodide's package.json and the loader as they are, the binaries as files of their size. */
    const install = (where: string, sizes: { wasm: number; deno: number }, loader = ''): [string, string, string] => {
      const [pyodide, kernel, deno] = ['pyodide', 'kernel', 'deno'].map((d) => join(dir, where, d)) as [string, string, string];
      mkdirSync(pyodide, { recursive: true });
      cpSync(join(pyodideDir(), 'package.json'), join(pyodide, 'package.json'));
      writeFileSync(join(pyodide, 'pyodide.asm.wasm'), '');
      truncateSync(join(pyodide, 'pyodide.asm.wasm'), sizes.wasm);
      writeFileSync(deno, '');
      truncateSync(deno, sizes.deno);
      cpSync(kernelDir(), kernel, { recursive: true });
      if (loader) writeFileSync(join(kernel, 'load-python.ts'), loader);
      return [pyodide, deno, kernel];
    };
    const here = snapshotIdentity(...install('one', { wasm: 1000, deno: 2000 }));
    assert.equal(snapshotIdentity(...install('two', { wasm: 1000, deno: 2000 })), here);
    assert.notEqual(snapshotIdentity(...install('three', { wasm: 1001, deno: 2000 })), here);
    assert.notEqual(snapshotIdentity(...install('four', { wasm: 1000, deno: 2001 })), here);
    assert.notEqual(snapshotIdentity(...install('five', { wasm: 1000, deno: 2000 }, '// another loader\n')), here);
  });

  test('is used only when it is a regular file of this user, of a snapshot size, that nobody else may write', () => {
    const file = join(dir, 'a.snapshot');
    assert.equal(unsound(file), 'there is none');
    writeFileSync(file, 'tiny', { mode: 0o600 });
    assert.match(unsound(file) ?? '', /size \(4 bytes\)/);
    writeFileSync(file, Buffer.alloc(2 * 1024 * 1024), { mode: 0o600 });
    assert.equal(unsound(file), undefined);
    chmodSync(file, 0o620);
    assert.equal(unsound(file), 'others may write it');
    chmodSync(file, 0o600);
    const link = join(dir, 'link.snapshot');
    symlinkSync(file, link);
    assert.equal(unsound(link), 'it is not a regular file');
  });

  test('a maker at work (a fresh lock) is left to it: no second one, no file', async () => {
    const file = join(dir, 'locked.snapshot');
    writeFileSync(`${file}.lock`, '');
    // No wait for it here (a wait of 0): waiting for the other maker is the integration suite's.
    await makeSnapshot(file, 0);
    assert.equal(existsSync(file), false);
    assert.equal(existsSync(`${file}.lock`), true, "the other maker's lock stays");
  });
});
