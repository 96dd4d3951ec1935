// Forged oversized frames from sandboxed code, through the real bridge: a frame bigger than its
// kind can need ends the session with a protocol error, refused from its first bytes, so the
// bridge's memory does not grow with what the sandbox claims to send.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { KERNEL_FRAME_LIMITS, MAX_KERNEL_FRAME_BYTES } from '../../src/sandbox/protocol/kernel-process.ts';
import { startBridge, structured, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

/** The bridge's peak resident memory so far, in bytes (VmHWM: a peak between two reads is not missed). */
function peakRss(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(match, 'VmHWM in /proc/PID/status');
  return Number(match[1]) * 1024;
}

/** Python that writes one request frame of `size` bytes (as declared and as sent) to the protocol descriptor. */
function forgedRequest(size: number): string {
  return [
    'import __main__, os, struct, time',
    `size = ${size}`,
    `head = b'{"t":"req","id":1,"run":"x","method":"call_tool","params":{"server":"s","tool":"t","arguments":{"a":"'`,
    `frame = struct.pack(">I", size) + head + b"A" * (size - len(head) - 4) + b'"}}}'`,
    'view = memoryview(frame)',
    'try:',
    '    while view:',
    '        view = view[os.write(__main__._out_fd, view):]',
    'except OSError:',
    '    pass',
    'time.sleep(30)',
  ].join('\n');
}

for (const runtime of testRuntimes()) {
  describe(`forged oversized frames on ${runtime}`, () => {
    let bridge: BridgeHandle;
    before(async () => {
      bridge = await startBridge({ sandbox: { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 15, maxTimeoutSeconds: 30 } });
    });
    after(async () => {
      await bridge?.close();
    });

    test('a 30 MB request frame ends the session with a protocol error, and the bridge never buffers it', async () => {
      const warm = await bridge.call('kept = 1', { session: 'f' });
      assert.equal(structured(warm).status, 'ok', textOf(warm));
      const before = peakRss(bridge.pid!);
      const result = await bridge.call(forgedRequest(30_000_000), { session: 'f' });
      const grew = peakRss(bridge.pid!) - before;
      assert.equal(structured(result).status, 'error', textOf(result));
      assert.equal(structured(result).sessionLost, true);
      assert.match(
        textOf(result),
        new RegExp(`protocol error: sandbox sent a 30000000-byte frame; the limit is ${MAX_KERNEL_FRAME_BYTES} bytes`),
      );
      assert.ok(grew < 16 * 1024 * 1024, `the bridge's peak memory grew by ${(grew / 1024 / 1024).toFixed(1)} MB`);
      const next = await bridge.call('"kept" in globals()', { session: 'f' });
      assert.equal(structured(next).status, 'ok', textOf(next));
      assert.match(textOf(next), /False/, 'a fresh session');
    });

    test("a request frame under the overall cap but over a request's is refused as a request", async () => {
      const size = KERNEL_FRAME_LIMITS.req + 1024 * 1024;
      assert.ok(size < MAX_KERNEL_FRAME_BYTES);
      const before = peakRss(bridge.pid!);
      const result = await bridge.call(forgedRequest(size), { session: 'g' });
      const grew = peakRss(bridge.pid!) - before;
      assert.equal(structured(result).status, 'error', textOf(result));
      assert.match(
        textOf(result),
        new RegExp(`protocol error: sandbox sent a ${size}-byte "req" frame; the limit is ${KERNEL_FRAME_LIMITS.req} bytes`),
      );
      assert.ok(grew < 8 * 1024 * 1024, `the bridge's peak memory grew by ${(grew / 1024 / 1024).toFixed(1)} MB`);
    });
  });
}
