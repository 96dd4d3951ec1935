import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { kernelSource } from '../../src/sandbox/container/kernel/source.ts';

test('the kernel parses as Python 3.9', () => {
  // ast.parse with feature_version rejects syntax newer than 3.9 (match, except*, X | Y in defs...).
  const check = 'import ast, sys; ast.parse(sys.stdin.read(), feature_version=(3, 9)); print("ok")';
  assert.equal(execFileSync('python3', ['-c', check], { input: kernelSource() }).toString().trim(), 'ok');
});

test('the kernel fits in one exec argument (a restart passes it on the command line)', () => {
  // Linux's MAX_ARG_STRLEN is 128 KiB per argument; keep a margin.
  assert.ok(kernelSource().length < 120 * 1024, `${kernelSource().length} bytes`);
});
