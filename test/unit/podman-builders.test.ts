// The listing of podman's build containers that a stopped build reads to remove its own: podman 4
// fails the whole listing ("container not known") while another process removes a build
// container, so a failed listing is tried again, LISTING_ATTEMPTS times at most. A faked podman
// fails a given number of times, or always; the pauses between tries are recorded, not waited.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeScript } from '../helpers/script-file.ts';
import { LISTING_ATTEMPTS, podmanBuilders } from '../../src/sandbox/image/build.ts';

const LINE = `${'c'.repeat(64)}|cem-base-working-container|${'d'.repeat(64)}`;

/** A podman whose `ps` fails as podman 4 does for its first `failures` calls (-1: always). */
function fakePodman(t: { after(fn: () => void): void }, failures: number): { cli: string; calls: () => number } {
  const dir = mkdtempSync(join(tmpdir(), 'cem-podman-builders-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  const cli = writeScript(dir, 'podman', [
    `echo "$*" >> '${log}'`,
    `n=$(wc -l < '${log}')`,
    `if [ ${failures} -lt 0 ] || [ "$n" -le ${failures} ]; then`,
    `  echo "Error: determining buildah container for container ${'e'.repeat(64)}: container not known" >&2`,
    '  exit 125',
    'fi',
    `echo '${LINE}'`,
  ]);
  return { cli, calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean).length };
}

/** A pause that records its length and returns at once. */
function recordedPauses(): { pause: (ms: number) => Promise<void>; pauses: number[] } {
  const pauses: number[] = [];
  const pause = (ms: number): Promise<void> => {
    pauses.push(ms);
    return Promise.resolve();
  };
  return { pauses, pause };
}

test('a listing that answers at once is read once', async (t) => {
  const { cli, calls } = fakePodman(t, 0);
  const { pause, pauses } = recordedPauses();
  assert.equal(await podmanBuilders(cli, {}, pause), LINE);
  assert.equal(calls(), 1);
  assert.deepEqual(pauses, []);
});

test('a listing that fails while another build container goes is tried again until it answers', async (t) => {
  const { cli, calls } = fakePodman(t, 2);
  const { pause, pauses } = recordedPauses();
  assert.equal(await podmanBuilders(cli, {}, pause), LINE);
  assert.equal(calls(), 3);
  assert.deepEqual(pauses, [200, 400]);
});

test('a listing that keeps failing gives nothing, after LISTING_ATTEMPTS tries, pausing longer each time', async (t) => {
  const { cli, calls } = fakePodman(t, -1);
  const { pause, pauses } = recordedPauses();
  assert.equal(await podmanBuilders(cli, {}, pause), '');
  assert.equal(calls(), LISTING_ATTEMPTS);
  assert.deepEqual(pauses, [200, 400, 600, 800]);
});
