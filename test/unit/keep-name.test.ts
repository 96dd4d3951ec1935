// A built image keeps its name: podman 4 can lose a name another podman process changes at the
// same moment, so the build checks the name by the image's ID and sets it again, NAME_ATTEMPTS
// times at most. A faked runtime CLI loses the name a given number of times, or always.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeScript } from '../helpers/script-file.ts';
import { keepName, NAME_ATTEMPTS, PackageBuildError } from '../../src/sandbox/image/build.ts';

const ID = 'a'.repeat(64);
const TAG = 'localhost/code-execution-mode-sandbox:test';

/** A CLI whose `tag` takes hold only from its `holdsAt`-th call (0: the name was never lost). */
function fakeCli(t: { after(fn: () => void): void }, holdsAt: number): { cli: string; tags: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'cem-keep-name-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const log = join(dir, 'tags.log');
  writeFileSync(log, '');
  const cli = writeScript(dir, 'podman', [
    `n=$(wc -l < '${log}')`,
    'case "$1" in',
    `  image) if [ "$n" -ge ${holdsAt} ]; then echo sha256:${ID}; else echo sha256:${'b'.repeat(64)}; fi ;;`,
    `  tag) echo "$2 $3" >> '${log}' ;;`,
    '  *) exit 1 ;;',
    'esac',
  ]);
  return { cli, tags: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

test('a name that stayed is not set again', async (t) => {
  const { cli, tags } = fakeCli(t, 0);
  await keepName(cli, ID, TAG, {});
  assert.deepEqual(tags(), []);
});

test('a lost name is set again by the image ID until it holds', async (t) => {
  const { cli, tags } = fakeCli(t, 2);
  await keepName(cli, ID, TAG, {});
  assert.deepEqual(tags(), [`${ID} ${TAG}`, `${ID} ${TAG}`]);
});

test('a name that never holds: NAME_ATTEMPTS tries, then the build fails saying so; so for each of builds at once', async (t) => {
  const { cli, tags } = fakeCli(t, Number.MAX_SAFE_INTEGER);
  const results = await Promise.allSettled([0, 1, 2].map(() => keepName(cli, ID, TAG, {})));
  for (const result of results) {
    assert.equal(result.status, 'rejected');
    const error = (result as PromiseRejectedResult).reason as unknown;
    assert.ok(error instanceof PackageBuildError);
    assert.match(
      error.message,
      /was built, but the runtime did not keep its name localhost\/code-execution-mode-sandbox:test\. Build again\./,
    );
  }
  assert.equal(tags().length, 3 * NAME_ATTEMPTS);
});
