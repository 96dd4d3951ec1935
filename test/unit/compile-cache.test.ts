// The bridge's compiled code kept between starts (src/cli/compile-cache.ts): used only in a
// private folder of this user, never where someone else could write the code it runs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { privateFolder } from '../../src/shared/cache-dir.ts';

/** The compile cache folder a Node process ends up with after enableCompileCache(), or '' for none. */
function cacheFolderOf(env: Record<string, string>): string {
  const script =
    `import { enableCompileCache } from ${JSON.stringify(resolve('src/cli/compile-cache.ts'))};` +
    "import { getCompileCacheDir } from 'node:module'; enableCompileCache(); process.stdout.write(getCompileCacheDir() ?? '');";
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('NODE_COMPILE') && key !== 'NODE_DISABLE_COMPILE_CACHE'),
  );
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...clean, ...env }, encoding: 'utf8' });
}

describe("the bridge's compile cache", () => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-compile-cache-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("is made owner-only in the user's cache folder and used", () => {
    const cache = join(dir, 'fresh');
    const used = cacheFolderOf({ CEM_CACHE_DIR: cache });
    assert.ok(used.startsWith(join(cache, 'node-compile-cache')), used);
    assert.equal(statSync(join(cache, 'node-compile-cache')).mode & 0o777, 0o700);
    assert.ok(readdirSync(join(cache, 'node-compile-cache')).length > 0, 'Node made its folder in it');
  });

  test('is not used in a folder others may write, nor through a symbolic link, nor in place of a file', () => {
    const open = join(dir, 'open');
    mkdirSync(join(open, 'node-compile-cache'), { recursive: true });
    chmodSync(join(open, 'node-compile-cache'), 0o777);
    assert.equal(cacheFolderOf({ CEM_CACHE_DIR: open }), '');
    const openParent = join(dir, 'open-parent');
    mkdirSync(openParent);
    chmodSync(openParent, 0o777);
    assert.equal(cacheFolderOf({ CEM_CACHE_DIR: openParent }), '');
    const linked = join(dir, 'linked');
    mkdirSync(linked);
    mkdirSync(join(dir, 'elsewhere'), { mode: 0o700 });
    symlinkSync(join(dir, 'elsewhere'), join(linked, 'node-compile-cache'));
    assert.equal(cacheFolderOf({ CEM_CACHE_DIR: linked }), '');
    const file = join(dir, 'file');
    mkdirSync(file);
    writeFileSync(join(file, 'node-compile-cache'), '');
    assert.equal(cacheFolderOf({ CEM_CACHE_DIR: file }), '');
  });

  test("leaves Node's own NODE_COMPILE_CACHE and NODE_DISABLE_COMPILE_CACHE to Node", () => {
    const own = join(dir, 'own');
    assert.ok(cacheFolderOf({ CEM_CACHE_DIR: join(dir, 'unused'), NODE_COMPILE_CACHE: own }).startsWith(own));
    assert.equal(cacheFolderOf({ CEM_CACHE_DIR: join(dir, 'unused'), NODE_DISABLE_COMPILE_CACHE: '1' }), '');
  });

  test('privateFolder says why a folder is refused', () => {
    const open = join(dir, 'why-open');
    mkdirSync(open);
    chmodSync(open, 0o757);
    const refused = privateFolder(open);
    assert.equal(refused.ok, false);
    assert.match(refused.ok ? '' : refused.why, /others may write/);
    assert.deepEqual(privateFolder(join(dir, 'why-new', 'deeper')), { ok: true });
  });
});
