// The executable's Node.js check: one clear line on old Node, silence on supported ones.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { MIN_NODE_MAJOR, nodeTooOld } from '../../src/cli/node-version.ts';

test('Node.js older than 22 gets one line naming the version needed and the one found', () => {
  assert.equal(MIN_NODE_MAJOR, 22);
  assert.equal(
    nodeTooOld('v20.20.2'),
    'code-execution-mode needs Node.js 22 or newer; this is Node.js v20.20.2. Install a current Node.js (https://nodejs.org) and run it again.',
  );
  assert.match(nodeTooOld('v18.0.0') ?? '', /this is Node\.js v18\.0\.0/);
  assert.equal(nodeTooOld('v22.0.0'), undefined);
  assert.equal(nodeTooOld('v24.22.3'), undefined);
  assert.equal(nodeTooOld(process.version), undefined);
});

// Where an old Node is at hand (as /usr/bin/node is on some machines), the built executable is run on it.
const oldNode = (() => {
  try {
    const version = execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).trim();
    return nodeTooOld(version) ? version : undefined;
  } catch {
    return undefined;
  }
})();

test(
  'the built executable refuses old Node.js with that line and exit 1',
  { skip: !oldNode && 'no Node.js older than 22 on this machine' },
  () => {
    const result = spawnSync('/usr/bin/node', ['dist/cli.js', '--help'], { encoding: 'utf8' });
    assert.equal(result.status, 1);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, `${nodeTooOld(oldNode!)}\n`);
  },
);
