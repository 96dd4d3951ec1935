// The small helpers of src/shared that several rooms use, each written once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { processAlive } from '../../src/shared/process-alive.ts';

test('processAlive: this process is alive, an exited child is not', () => {
  assert.equal(processAlive(process.pid), true);
  const child = spawnSync(process.execPath, ['-e', '0']);
  assert.equal(processAlive(child.pid), false);
});
