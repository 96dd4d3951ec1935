import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeFrame, FrameDecoder, FrameTooLargeError } from '../../src/sandbox/protocol/codec.ts';

test('frames round-trip whole and split into single bytes', () => {
  const messages = [{ t: 'out', data: 'héllo \u0000 \n' }, { t: 'done', n: 1 }, { big: 'x'.repeat(100_000) }];
  const bytes = Buffer.concat(messages.map(encodeFrame));
  assert.deepEqual(new FrameDecoder(1 << 20).push(bytes).map((b) => JSON.parse(b)), messages);

  const decoder = new FrameDecoder(1 << 20);
  const seen: unknown[] = [];
  for (const byte of bytes) seen.push(...decoder.push(Buffer.from([byte])).map((b) => JSON.parse(b)));
  assert.deepEqual(seen, messages);
  assert.equal(decoder.pendingBytes, 0);
});

test('an oversized frame is refused from its header, before its body arrives', () => {
  const decoder = new FrameDecoder(1024);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(1025);
  assert.throws(() => decoder.push(header), FrameTooLargeError);
  const ok = new FrameDecoder(1024);
  assert.equal(ok.push(encodeFrame({ s: 'y'.repeat(1000) })).length, 1);
});
