// The small helpers of src/shared that several rooms use, each written once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { clip } from '../../src/shared/clip.ts';
import { processAlive } from '../../src/shared/process-alive.ts';

test('processAlive: this process is alive, an exited child is not', () => {
  assert.equal(processAlive(process.pid), true);
  const child = spawnSync(process.execPath, ['-e', '0']);
  assert.equal(processAlive(child.pid), false);
});

test('clip: text that fits stays; longer text keeps max - 3 and "...", max in all', () => {
  assert.equal(clip('abcdef', 6), 'abcdef');
  assert.equal(clip('abcdefg', 6), 'abc...');
  assert.equal(clip('abcdefg', 6).length, 6);
  assert.equal(clip('', 3), '');
});
