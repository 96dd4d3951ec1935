// Runs last (test/run.mjs puts it there): no container started during this test run may
// outlive its owner. Containers of live processes (a bridge the user runs in VS Code) and
// those older than this run (not ours to judge) are left out, so the check holds on any host.
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { listOwnedContainers } from '../../src/sandbox/container/cleanup.ts';
import { runCli } from '../../src/sandbox/engines/cli.ts';
import { OWNER_LABEL } from '../../src/sandbox/engines/commands.ts';
import type { RuntimeName } from '../../src/config/schema.ts';
import { testRuntimes } from '../helpers/env.ts';

/** When test/run.mjs started; without it, the last hour. */
const SINCE = Number(process.env.CEM_TEST_STARTED ?? Date.now() - 3_600_000);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Our containers created since SINCE whose owner on this host has exited. */
async function leftovers(runtime: RuntimeName): Promise<string[]> {
  const ids = (await listOwnedContainers({ name: runtime, command: runtime })).map((c) => c.id);
  if (ids.length === 0) return [];
  const out = await runCli(runtime, [
    'container',
    'inspect',
    '--format',
    `{{.Id}}\t{{.Created}}\t{{index .Config.Labels "${OWNER_LABEL}"}}`,
    ...ids,
  ]).catch(() => ({ stdout: '' }));
  return out.stdout.split('\n').flatMap((line) => {
    const [id, created, owner] = line.split('\t');
    const match = /^(.*)\/(\d+)$/.exec(owner ?? '');
    // Podman prints "2026-12-01 03:55:26.1 +0000 UTC", Docker RFC 3339.
    const time = Date.parse((created ?? '').replace(/ \+0000 UTC$/, 'Z').replace(' ', 'T'));
    if (!id || !match || match[1] !== hostname() || alive(Number(match[2]))) return [];
    return Number.isNaN(time) || time >= SINCE - 1000 ? [id.slice(0, 12)] : [];
  });
}

test('no container started by the suites outlives its owner', async () => {
  for (const runtime of testRuntimes()) {
    // Docker removes an exited --rm container a moment after its client returns.
    let left = await leftovers(runtime);
    for (let i = 0; i < 20 && left.length > 0; i++) {
      await sleep(500);
      left = await leftovers(runtime);
    }
    assert.deepEqual(left, [], `${runtime} still has containers of exited owners`);
  }
});
