// The small helpers of src/shared that several rooms use, each written once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { base64Bytes, base64Capacity } from '../../src/shared/byte-size.ts';
import { clip } from '../../src/shared/clip.ts';
import { shellWords, splitCommandLine } from '../../src/shared/command-line.ts';
import { formatDuration, secondsText } from '../../src/shared/durations.ts';
import { plural } from '../../src/shared/plural.ts';
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

test('plural: one is singular, zero and many take the plural, an irregular plural is given', () => {
  assert.equal(plural(1, 'image'), '1 image');
  assert.equal(plural(0, 'image'), '0 images');
  assert.equal(plural(3, 'request from servers', 'requests from servers'), '3 requests from servers');
});

test('base64Bytes: the decoded size, padding taken off; base64Capacity: what a cap in base64 characters holds', () => {
  for (const bytes of ['', 'a', 'ab', 'abc', 'abcd', 'abcde'])
    assert.equal(base64Bytes(Buffer.from(bytes).toString('base64')), bytes.length);
  assert.equal(base64Capacity(8), 6);
  assert.equal(base64Capacity(10), 7);
});

test('command lines: a typed command keeps shell operators as characters, a shell line ends words at them', () => {
  const line = `npx "my server" --flag='a b' x;y $HOME`;
  assert.deepEqual(splitCommandLine(line), ['npx', 'my server', "--flag='a", "b'", 'x;y', '$HOME']);
  assert.deepEqual(shellWords(line), ['npx', 'my server', '--flag=a b', 'x', 'y', 'HOME']);
});

test('durations: how long something took in whole units, a wait in seconds to the tenth', () => {
  assert.deepEqual([420.4, 1234, 12_345, 125_000].map(formatDuration), ['420 ms', '1.2 s', '12 s', '2 min 5 s']);
  assert.equal(formatDuration(undefined), '');
  assert.deepEqual([1500, 30_000, 1234].map(secondsText), ['1.5 s', '30 s', '1.2 s']);
});
