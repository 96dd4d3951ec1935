// Runs last (test/run.mjs puts it there): every suite must have removed its containers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listOwnedContainers } from '../../src/sandbox/cleanup.ts';
import { testRuntimes } from '../helpers/env.ts';

test('nothing with our label is left after the suites', async () => {
  for (const runtime of testRuntimes()) {
    assert.deepEqual(await listOwnedContainers(runtime), [], `${runtime} still has containers`);
  }
});
