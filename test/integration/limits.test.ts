// Resource limits are really enforced by the runtimes: memory and process count.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';

for (const runtime of testRuntimes()) {
  describe(`limits on ${runtime}`, () => {
    let sandbox: SessionManager;
    before(() => {
      sandbox = new SessionManager(testSandbox(runtime, { memory: '128m', pids: 32 }));
    });
    after(async () => {
      await sandbox.close();
    });

    test('a memory bomb is killed and reported as out of memory', async () => {
      await sandbox.execute('before = 1');
      const result = await sandbox.execute('hog = []\nwhile True:\n    hog.append(b"x" * (16 * 1024 * 1024))');
      assert.equal(result.status, 'error');
      assert.ok(
        result.error?.type === 'OutOfMemory' || result.error?.type === 'MemoryError',
        `${result.error?.type}: ${result.error?.message}`,
      );
      if (result.error?.type === 'OutOfMemory') {
        assert.equal(result.sessionLost, true);
        assert.match(result.error.message, /memory limit of 128m/);
      }
      assert.equal(existsSync('oom'), false, 'the runtime left an "oom" file in the working directory');
      const next = await sandbox.execute('"before" in globals()');
      assert.equal(next.status, 'ok');
    });

    test('a fork bomb is held by the process limit', async () => {
      const result = await sandbox.execute(
        [
          'import os, time',
          'children, error = [], None',
          'try:',
          '    for _ in range(500):',
          '        pid = os.fork()',
          '        if pid == 0:',
          '            time.sleep(2)',
          '            os._exit(0)',
          '        children.append(pid)',
          'except OSError as e:',
          '    error = type(e).__name__',
          'for pid in children:',
          '    os.waitpid(pid, 0)',
          '(len(children), error)',
        ].join('\n'),
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      const match = /^\((\d+), '(\w+)'\)$/.exec(result.value ?? '');
      assert.ok(match, result.value ?? '');
      assert.ok(Number(match[1]) < 32, `forked ${match[1]} children with a limit of 32`);
      assert.equal(match[2], 'BlockingIOError');
    });
  });
}
