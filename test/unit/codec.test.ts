import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkFrameSize, encodeFrame, FrameDecoder, frameLimit, FrameTooLargeError } from '../../src/sandbox/protocol/codec.ts';

test('frames round-trip whole and split into single bytes', () => {
  const messages = [{ t: 'out', data: 'héllo \u0000 \n' }, { t: 'done', n: 1 }, { big: 'x'.repeat(100_000) }];
  const bytes = Buffer.concat(messages.map(encodeFrame));
  assert.deepEqual(
    new FrameDecoder(1 << 20).push(bytes).map((b) => JSON.parse(b)),
    messages,
  );

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

const LIMITS = { max: 12_000, byType: { out: 1000, req: 5000 } };

function header(size: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(size);
  return bytes;
}

test("a forged length over its type's cap is refused from the body's first bytes, before the rest is buffered", () => {
  // A 30 MB "request" (as sandbox code can write to the protocol descriptor): refused from its header.
  assert.throws(
    () => new FrameDecoder(LIMITS).push(Buffer.concat([header(30_000_000), Buffer.from('{"t":"req"')])),
    /30000000-byte frame; the limit is 12000 bytes/,
  );
  // Under the overall cap but over the type's: refused once the type is named, with nothing more buffered.
  const decoder = new FrameDecoder(LIMITS);
  assert.deepEqual(decoder.push(header(6000)), []);
  assert.deepEqual(decoder.push(Buffer.from('{"t":"r')), [], 'the type is not known yet');
  assert.throws(
    () => decoder.push(Buffer.from('eq","id":1')),
    (error: Error) => error instanceof FrameTooLargeError && /6000-byte "req" frame; the limit is 5000 bytes/.test(error.message),
  );
  assert.ok(decoder.pendingBytes < 64, 'the body was not buffered');
  // Within its type's cap: decoded.
  const ok = new FrameDecoder(LIMITS);
  assert.equal(ok.push(encodeFrame({ t: 'req', params: 'p'.repeat(4900) })).length, 1);
  assert.throws(() => new FrameDecoder(LIMITS).push(encodeFrame({ t: 'out', data: 'o'.repeat(1000) })), /"out" frame; the limit is 1000/);
});

test('a frame that does not start as the kernel writes it is capped by its parsed type', () => {
  const forged = { run: 'r', t: 'out', data: 'o'.repeat(3000) };
  const [body] = new FrameDecoder(LIMITS).push(encodeFrame(forged));
  assert.ok(body, 'passes the decoder: its type is not where the kernel puts it');
  const parsed = JSON.parse(body) as { t: string };
  assert.throws(() => checkFrameSize(LIMITS, parsed.t, body), /"out" frame; the limit is 1000 bytes/);
  // A duplicate `t` names one type first and parses as another: the parsed one counts.
  const twice = `{"t":"req","data":"${'d'.repeat(3000)}","t":"out"}`;
  assert.throws(() => checkFrameSize(LIMITS, (JSON.parse(twice) as { t: string }).t, twice), /"out" frame/);
  // Multi-byte characters count as their UTF-8 bytes.
  assert.throws(() => checkFrameSize(LIMITS, 'out', `{"t":"out","data":"${'é'.repeat(600)}"}`), /"out" frame/);
  checkFrameSize(LIMITS, 'out', `{"t":"out","data":"${'e'.repeat(600)}"}`);
  assert.equal(frameLimit(LIMITS, 'done'), 12_000, 'a type without a cap of its own gets the overall one');
});
