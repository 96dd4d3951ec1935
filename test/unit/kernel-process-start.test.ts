// A kernel process whose source cannot be read (a file missing from the installation): the
// start fails at once with a start error that says so, and the process it spawned, which waits
// for its source on stdin, is ended rather than left to hold the bridge open.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxStartError } from '../../src/sandbox/errors.ts';
import { KernelProcess } from '../../src/sandbox/protocol/kernel-process.ts';

class UnreadableKernel extends KernelProcess {
  constructor() {
    super(
      {
        name: 'unreadable',
        // Waits on stdin for ever, as a kernel waits for its source.
        command: process.execPath,
        args: ['-e', 'process.stdin.resume()'],
        source: () => {
          throw new Error("ENOENT: no such file or directory, open 'dist/modules.py'");
        },
        imageKey: 'test',
        what: 'test sandbox',
      },
      {},
    );
  }

  static attempt(kernel: UnreadableKernel): Promise<UnreadableKernel> {
    return KernelProcess.launch(kernel, 600_000);
  }
}

test('a kernel whose source cannot be read fails to start at once, says why, and its process ends', async () => {
  const kernel = new UnreadableKernel();
  const error = await UnreadableKernel.attempt(kernel).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof SandboxStartError, String(error));
  assert.match(error.message, /The test sandbox's kernel could not be read: ENOENT: .*dist\/modules\.py/);
  // Ended by the host, not left waiting for a source that never comes (the start's own time
  // limit, ten minutes here, would be the only other way out).
  const exit = await kernel.exited;
  assert.equal(exit.killedByHost, true);
  assert.equal(exit.reason, 'start failed');
});
