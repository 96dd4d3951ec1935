// The bridge's stdio transport: the line reader's cap (skipping to the newline as bytes arrive),
// lines split across chunks and CRLF, the id read from an oversized line's first bytes, and the
// answers to malformed, non-JSON-RPC and batched messages.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { LineReader, OVERSIZED_HEAD_BYTES, readMessageHead, type LineEvent } from '../../src/bridge/stdio-lines.ts';
import { BridgeStdioTransport, MAX_CLIENT_MESSAGE_BYTES } from '../../src/bridge/stdio-transport.ts';
import { MAX_CODE_CHARS } from '../../src/bridge/tool/run-python.ts';

const lines = (events: LineEvent[]) => events.map((e) => (e.kind === 'line' ? e.line : `<oversized ${e.head.length}>`));

test('lines split across chunks are joined; CRLF and LF both end a line', () => {
  const reader = new LineReader(100);
  assert.deepEqual(lines(reader.push(Buffer.from('{"a":'))), []);
  assert.deepEqual(lines(reader.push(Buffer.from('1}\r\n{"b"'))), ['{"a":1}']);
  assert.deepEqual(lines(reader.push(Buffer.from(':2}\n\n{"c":3}\n'))), ['{"b":2}', '', '{"c":3}']);
});

test('a line over the cap is told once, as soon as it passes the cap, and skipped to its newline', () => {
  const reader = new LineReader(10);
  assert.deepEqual(lines(reader.push(Buffer.from('12345'))), []);
  assert.deepEqual(lines(reader.push(Buffer.from('678901'))), ['<oversized 11>']);
  // Nothing of it is kept while it goes on, however long.
  for (let i = 0; i < 100; i++) assert.deepEqual(lines(reader.push(Buffer.alloc(1000, 0x41))), []);
  assert.deepEqual(lines(reader.push(Buffer.from('AAA\nok\n'))), ['ok']);
  // Whole in one chunk, with its newline, and a line exactly at the cap.
  assert.deepEqual(lines(reader.push(Buffer.from(`${'x'.repeat(11)}\n${'y'.repeat(10)}\n`))), ['<oversized 11>', 'y'.repeat(10)]);
});

test('an oversized line keeps only its first bytes for its id', () => {
  const reader = new LineReader(1024 * 1024);
  const events = reader.push(Buffer.alloc(2 * 1024 * 1024, 0x41));
  const [event] = events;
  assert.equal(events.length, 1);
  assert.equal(event?.kind === 'oversized' && event.head.length, OVERSIZED_HEAD_BYTES);
});

test('the id is read from the first bytes of a message, at the top level only', () => {
  const cut = (json: string, at: number) => readMessageHead(json.slice(0, at));
  const request = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"x = 1"}}}';
  assert.deepEqual(cut(request, 60), { id: 7, method: true, response: false });
  assert.deepEqual(readMessageHead(' { "id" : "a\\"b" , "method":"m"'), { id: 'a"b', method: true, response: false });
  // An id after the huge params cannot be read; an "id" inside params is not the message's.
  const late = '{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":3,"code":"' + 'A'.repeat(100);
  assert.deepEqual(readMessageHead(late), { method: true, response: false });
  // A response to one of the bridge's requests.
  assert.deepEqual(readMessageHead('{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"AAA'), {
    id: 4,
    method: false,
    response: true,
  });
  // Ids cut off, or of the wrong kind, are not used.
  assert.deepEqual(readMessageHead('{"id":12'), { method: false, response: false });
  assert.deepEqual(readMessageHead('{"id":{"x":1},"method":"m"'), { method: true, response: false });
  assert.deepEqual(readMessageHead('{"id":null,"method":"m"'), { method: true, response: false });
  assert.deepEqual(readMessageHead('[{"id":1}'), { method: false, response: false });
  assert.deepEqual(readMessageHead('not json'), { method: false, response: false });
});

test('the message cap sits above the largest legal run_python request', () => {
  // Every character of the code escaped as \uXXXX (six bytes), and room for the rest of the request.
  assert.ok(MAX_CLIENT_MESSAGE_BYTES > MAX_CODE_CHARS * 6 + 64 * 1024);
});

/** A transport over in-memory streams: what it answered, what it passed on, what it logged. */
function harness(max = 64) {
  const input = new PassThrough();
  const output = new PassThrough();
  const logs: string[] = [];
  const messages: JSONRPCMessage[] = [];
  const transport = new BridgeStdioTransport((line) => logs.push(line), input, output, max);
  transport.onmessage = (message) => messages.push(message);
  let written = '';
  output.on('data', (chunk: Buffer) => (written += chunk.toString()));
  const answers = () =>
    written
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id: unknown; error?: { code: number; message: string } });
  return { input, transport, logs, messages, answers };
}

test('malformed JSON, non-JSON-RPC values and batches are answered; good messages pass on', async () => {
  const h = harness();
  await h.transport.start();
  h.input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n');
  h.input.write('{not json\n');
  h.input.write('\n   \n');
  h.input.write('[{"jsonrpc":"2.0","id":2,"method":"ping"}]\n');
  h.input.write('{"hello":"world","id":"q"}\n');
  h.input.write('42\n');
  h.input.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  await new Promise(setImmediate);
  assert.deepEqual(h.messages, [
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  ]);
  assert.deepEqual(
    h.answers().map((a) => [a.id, a.error?.code]),
    [
      [null, -32700],
      [null, -32600],
      ['q', -32600],
      [null, -32600],
    ],
  );
  assert.match(h.answers()[1]!.error!.message, /batches are not supported/);
});

test('an error answer carries its text once: the prefix the SDK puts in its message is left to the client', async () => {
  const h = harness();
  await h.transport.send({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'MCP error -32602: Resource x not found' } });
  await h.transport.send({ jsonrpc: '2.0', id: 8, error: { code: -32603, message: 'plain words' } });
  assert.deepEqual(
    h.answers().map((a) => [a.id, a.error?.message]),
    [
      [7, 'Resource x not found'],
      [8, 'plain words'],
    ],
  );
});

test('an oversized request is answered with its id, and the next message still passes', async () => {
  const h = harness();
  await h.transport.start();
  h.input.write(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"code":"${'A'.repeat(40)}`);
  h.input.write(`${'A'.repeat(1000)}"}}\n{"jsonrpc":"2.0","id":10,"method":"ping"}\n`);
  await new Promise(setImmediate);
  assert.deepEqual(
    h.answers().map((a) => [a.id, a.error?.code]),
    [[9, -32600]],
  );
  assert.match(h.answers()[0]!.error!.message, /over the 64 bytes the bridge reads in one message/);
  assert.deepEqual(h.messages, [{ jsonrpc: '2.0', id: 10, method: 'ping' }]);
  assert.match(h.logs.join('\n'), /\(id 9\) was answered with an error/);
});

test("an oversized or malformed answer of the client fails the bridge's request instead of being answered", async () => {
  const h = harness();
  await h.transport.start();
  h.input.write(`{"jsonrpc":"2.0","id":3,"result":{"content":"${'A'.repeat(100)}"}}\n`);
  h.input.write('{"jsonrpc":"2.0","id":4,"result":"not an object"}\n');
  await new Promise(setImmediate);
  assert.deepEqual(h.answers(), []);
  assert.deepEqual(
    h.messages.map((m) => ['id' in m ? m.id : undefined, 'error' in m ? m.error.code : undefined]),
    [
      [3, -32600],
      [4, -32600],
    ],
  );
});

/** The harness after an initialize that settled `version`. */
async function initialized(version: string) {
  const h = harness(1024);
  await h.transport.start();
  h.input.write('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n');
  await new Promise(setImmediate);
  await h.transport.send({ jsonrpc: '2.0', id: 0, result: { protocolVersion: version } });
  h.messages.length = 0;
  return h;
}

test('a client on 2025-03-26 has its batch taken message by message, answered as one array', async () => {
  const h = await initialized('2025-03-26');
  h.input.write(
    `${JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
      { hello: 'world' },
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { jsonrpc: '2.0', id: 3, method: 'initialize', params: {} },
    ])}\n`,
  );
  await new Promise(setImmediate);
  assert.deepEqual(
    h.messages.map((m) => ('method' in m ? m.method : '')),
    ['ping', 'notifications/roots/list_changed', 'ping'],
  );
  // The answers wait until every request of the batch has its own.
  await h.transport.send({ jsonrpc: '2.0', id: 2, result: {} });
  await h.transport.send({ jsonrpc: '2.0', id: 99, result: {} });
  await h.transport.send({ jsonrpc: '2.0', id: 1, result: {} });
  const written = h.answers() as unknown[];
  assert.equal(written.length, 3, JSON.stringify(written));
  assert.deepEqual((written[1] as { id: unknown }).id, 99);
  const batch = written[2] as Array<{ id: unknown; error?: { code: number } }>;
  assert.ok(Array.isArray(batch));
  assert.deepEqual(
    batch.map((a) => [a.id, a.error?.code]),
    [
      [null, -32600],
      [3, -32600],
      [2, undefined],
      [1, undefined],
    ],
  );
  // Notifications only: nothing to answer. An empty batch: one error.
  h.input.write('[{"jsonrpc":"2.0","method":"notifications/initialized"}]\n[]\n');
  await new Promise(setImmediate);
  assert.deepEqual((h.answers().at(-1) as { error?: { message: string } }).error?.message, 'Invalid Request: the batch is empty');
  assert.equal(h.answers().length, 4);
});

test('a client on a later revision has its batch refused as a whole', async () => {
  const h = await initialized('2025-06-18');
  h.input.write('[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n');
  await new Promise(setImmediate);
  assert.deepEqual(h.messages, []);
  assert.match(h.answers().at(-1)?.error?.message ?? '', /batches are not supported \(MCP 2025-06-18\)/);
});

test("a cancelled request of a batch does not hold back the batch's other answers", async () => {
  const h = await initialized('2025-03-26');
  h.input.write('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call"}]\n');
  await new Promise(setImmediate);
  await h.transport.send({ jsonrpc: '2.0', id: 1, result: {} });
  assert.deepEqual(h.answers().slice(1), [], 'only the answer to initialize');
  h.input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}\n');
  await new Promise(setImmediate);
  assert.deepEqual(h.answers().slice(1), [[{ jsonrpc: '2.0', id: 1, result: {} }]]);
});

test('a request before initialize is refused (-32600), ping and notifications pass, and after initialize all do', async () => {
  const h = harness(1024);
  await h.transport.start();
  h.input.write('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n');
  h.input.write('{"jsonrpc":"2.0","id":2,"method":"ping"}\n');
  h.input.write('{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}\n');
  h.input.write('{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}\n');
  h.input.write('{"jsonrpc":"2.0","id":4,"method":"tools/list"}\n');
  await new Promise(setImmediate);
  assert.deepEqual(
    h.messages.map((m) => ('method' in m ? m.method : '')),
    ['ping', 'notifications/roots/list_changed', 'initialize', 'tools/list'],
  );
  assert.deepEqual(
    h.answers().map((a) => [a.id, a.error?.code]),
    [[1, -32600]],
  );
  assert.match(h.answers()[0]!.error!.message, /tools\/list before initialize; send initialize first/);
  assert.match(h.logs.join('\n'), /\(id 1\) for tools\/list before initialize was answered with an error/);
});
