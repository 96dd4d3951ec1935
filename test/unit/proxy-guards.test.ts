// The guards between the bridge and untrusted proxied servers: the caps and their defaults,
// failures said in our words, the rate limit and size cap on what a server sends, capped tool
// lists, and the recognition of entries and nested bridges that would start the bridge again.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { callReason, startReason, StartTimeout } from '../../src/bridge/proxy/failures.ts';
import { Flow, GuardedTransport } from '../../src/bridge/proxy/guarded-transport.ts';
import { FakeClock } from '../helpers/fake-clock.ts';
import { limitedFetch } from '../../src/bridge/proxy/limited-fetch.ts';
import { sizeText } from '../../src/shared/byte-size.ts';
import { ProxyLimitError } from '../../src/bridge/proxy/limits.ts';
import { bridgeDepth, markerEnv, MAX_DEPTH, nestedRefusal, startsThisBridge } from '../../src/bridge/proxy/self-proxy.ts';
import { shellWords } from '../../src/shared/command-line.ts';
import { readToolList, type Page } from '../../src/bridge/proxy/tool-list.ts';
import { childOf, isStdioOversize, stdioTransport } from '../../src/bridge/proxy/transports.ts';
import { parseConfig } from '../../src/config/load.ts';
import type { StdioServerConfig } from '../../src/config/schema.ts';

const server = (raw: unknown) => parseConfig({ servers: { s: raw } }).servers.s!;

test('proxy caps: defaults, and out-of-range values are refused with the field named', () => {
  const { proxy } = parseConfig({});
  assert.deepEqual(
    [
      proxy.maxResultBytes,
      proxy.maxArgumentBytes,
      proxy.maxToolsPerServer,
      proxy.maxToolListBytes,
      proxy.maxToolSchemaBytes,
      proxy.maxNotificationsPerSecond,
    ],
    [10 * 1024 * 1024, 4 * 1024 * 1024, 1000, 4 * 1024 * 1024, 64 * 1024, 100],
  );
  assert.throws(() => parseConfig({ proxy: { maxResultBytes: 10 } }), /proxy\.maxResultBytes/);
  assert.throws(() => parseConfig({ proxy: { maxToolsPerServer: 20_000 } }), /proxy\.maxToolsPerServer/);
  assert.throws(() => parseConfig({ proxy: { maxNotificationsPerSecond: 0 } }), /proxy\.maxNotificationsPerSecond/);
  assert.deepEqual(
    [
      sizeText(10 * 1024 * 1024),
      sizeText(64 * 1024),
      sizeText(2000),
      sizeText(1024 * 1024 + 100_000),
      sizeText(12 * 1024 + 300),
      sizeText(5.6 * 1024 * 1024),
      sizeText(512),
    ],
    ['10 MiB', '64 KiB', '2000 bytes', '1.1 MiB', '12 KiB', '5.6 MiB', '512 bytes'],
  );
});

test('self-proxy: recognised by name, real path, symlink, relative path and inside shell command lines', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-self-'));
  await mkdir(join(dir, 'dist'));
  const own = join(dir, 'dist', 'cli.js');
  await writeFile(own, '');
  await symlink(own, join(dir, 'other-name.js'));
  const starts = (command: string, args: string[] = [], cwd?: string) =>
    startsThisBridge(server({ command, args, ...(cwd ? { cwd } : {}) }), own);
  assert.equal(starts('node', [`${dir}/dist/./cli.js`]), true);
  assert.equal(starts('node', [`${dir}/dist/../dist/cli.js`]), true);
  assert.equal(starts('node', [join(dir, 'other-name.js')]), true, 'a symlink');
  assert.equal(starts('node', ['./dist/cli.js'], dir), true, 'relative to its cwd');
  assert.equal(starts(own), true, 'the script itself as the command');
  assert.equal(starts('sh', ['-c', `node ${dir}/dist/cli.js --config x.json`]), true);
  assert.equal(starts('bash', ['-lc', `cd /tmp && exec node "${dir}/dist/./cli.js"`]), true);
  assert.equal(starts('sh', ['-c', `sh -c 'node ${join(dir, 'other-name.js')}'`]), true, 'a shell inside a shell');
  assert.equal(starts('cmd', ['/c', 'npx -y code-execution-mode']), true);
  assert.equal(starts('env', ['A=1', 'node', `--script=${own}`]), true);
  assert.equal(starts('npx', ['-y', 'code-execution-mode@0.3.1']), true);
  assert.equal(starts('node', ['/srv/app/node_modules/code-execution-mode/dist/cli.js']), true);
  assert.equal(starts('C:\\tools\\code-execution-mode.cmd'), true);
  assert.equal(starts('node', [join(dir, 'dist', 'other.js')]), false);
  assert.equal(starts('sh', ['-c', 'npx -y @modelcontextprotocol/server-memory']), false);
  assert.equal(starts('npx', ['-y', 'code-execution-mode-helper']), false);
  assert.equal(startsThisBridge(server({ url: 'http://127.0.0.1:1/mcp' }), own), false);
  assert.deepEqual(shellWords(`a "b c" 'd'e;f&&g|h $(i)`), ['a', 'b c', 'de', 'f', 'g', 'h', 'i']);
});

test('nesting: a bridge started under another starts no stdio servers, unless allowed one level, never past MAX_DEPTH', () => {
  assert.equal(bridgeDepth({}), 0);
  assert.equal(nestedRefusal({}), undefined);
  assert.match(
    nestedRefusal({ CODE_EXECUTION_MODE_DEPTH: '1' }) ?? '',
    /started by a proxied server of another Code Execution Mode bridge \(CODE_EXECUTION_MODE_DEPTH=1\)/,
  );
  assert.equal(nestedRefusal({ CODE_EXECUTION_MODE_DEPTH: '1', CODE_EXECUTION_MODE_NESTING: 'allowed' }), undefined);
  assert.match(
    nestedRefusal({ CODE_EXECUTION_MODE_DEPTH: String(MAX_DEPTH), CODE_EXECUTION_MODE_NESTING: 'allowed' }) ?? '',
    /nested 3 levels deep/,
  );
  assert.equal(nestedRefusal({ CODE_EXECUTION_MODE_DEPTH: 'junk' }), undefined);
  assert.deepEqual(markerEnv(server({ command: 'x' }), {}), { CODE_EXECUTION_MODE_DEPTH: '1', CODE_EXECUTION_MODE_NESTING: 'no' });
  assert.deepEqual(markerEnv(server({ command: 'x', allowSelfProxy: true }), { CODE_EXECUTION_MODE_DEPTH: '1' }), {
    CODE_EXECUTION_MODE_DEPTH: '2',
    CODE_EXECUTION_MODE_NESTING: 'allowed',
  });
});

test('failures in our words: codes and our facts, never the server text', () => {
  const exit = { code: 1, signal: null };
  assert.equal(
    startReason(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'), exit, 6000),
    'could not start: it exited with code 1',
  );
  assert.equal(startReason(new StartTimeout(), undefined, 6000), 'did not finish starting within 6 s (proxy.connectTimeoutSeconds)');
  assert.equal(
    startReason(Object.assign(new Error('spawn nope ENOENT'), { code: 'ENOENT' }), undefined, 6000, 'nope'),
    'could not start: the command "nope" was not found',
  );
  assert.equal(
    startReason(new StreamableHTTPError(401, 'Error POSTing to endpoint: token sk-123 is invalid'), undefined, 1000),
    'could not start: its URL answered with HTTP status 401',
  );
  assert.equal(
    startReason(new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } }), undefined, 1000),
    'could not start: its URL could not be reached (ECONNREFUSED)',
  );
  assert.equal(
    startReason(new Error("Server's protocol version is not supported: <b>x</b>"), undefined, 1000),
    'could not start: it speaks a version of MCP this bridge does not support',
  );
  assert.equal(startReason(new Error('something the server said: secret'), undefined, 1000), 'could not start: its connection failed');
  let parseError: unknown;
  try {
    JSON.parse('{"token": "sk-live-secret" oops');
  } catch (error) {
    parseError = error;
  }
  assert.equal(callReason(parseError), 'it answered with something that is not a valid MCP message');
  assert.equal(
    callReason(new McpError(-32602, 'bad argument "q"')),
    'MCP error -32602: bad argument "q"',
    "a JSON-RPC error is the server's answer",
  );
});

test('tool lists: capped by count, total bytes, bytes per tool and pages, each cut said', async () => {
  const tool = (name: string, pad = 0) => ({ name, description: 'd'.repeat(pad), inputSchema: { type: 'object' } });
  const pages =
    (list: unknown[], size: number) =>
    async (cursor: string | undefined): Promise<Page> => {
      const start = Number(cursor ?? 0);
      return { tools: list.slice(start, start + size), ...(start + size < list.length ? { nextCursor: String(start + size) } : {}) };
    };
  const caps = { maxTools: 10, maxBytes: 10_000, maxToolBytes: 2000, maxPages: 50 };
  const many = await readToolList(
    pages(
      Array.from({ length: 25 }, (_, i) => tool(`t${i}`)),
      7,
    ),
    caps,
  );
  assert.equal(many.tools.length, 10);
  assert.deepEqual(many.notes, ['it lists more than 10 tools; the first 10 are kept (proxy.maxToolsPerServer)']);
  const heavy = await readToolList(
    pages(
      Array.from({ length: 9 }, (_, i) => tool(`h${i}`, 1500)),
      3,
    ),
    caps,
  );
  assert.equal(heavy.tools.length, 6);
  assert.match(heavy.notes[0]!, /^its tool list is over 10000 bytes; the first 6 tools are kept \(proxy\.maxToolListBytes\)$/);
  const fat = await readToolList(pages([tool('a'), tool('big', 5000), tool('b'), tool('x'.repeat(100), 5000)], 10), caps);
  assert.deepEqual(
    fat.tools.map((t) => (t as { name: string }).name),
    ['a', 'b'],
  );
  assert.deepEqual(fat.notes, ['2 tools were left out for being over 2000 bytes each (proxy.maxToolSchemaBytes)']);
  assert.deepEqual(fat.oversized, ['big', `${'x'.repeat(61)}...`]);
  let calls = 0;
  const endless = await readToolList(async () => ({ tools: [tool(`p${calls++}`)], nextCursor: 'more' }), {
    ...caps,
    maxTools: 1000,
    maxPages: 5,
  });
  assert.equal(calls, 5);
  assert.deepEqual(endless.notes, ['its tool list goes on past 5 pages; the rest is not read']);
  const whole = await readToolList(pages([tool('a')], 10), caps);
  assert.deepEqual([whole.tools.length, whole.notes], [1, []]);
});

/** A transport that delivers what the test pushes. */
class FakeTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  closed = 0;
  async start(): Promise<void> {}
  async send(): Promise<void> {}
  async close(): Promise<void> {
    this.closed++;
    this.onclose?.();
  }
}

test('notifications over the rate are dropped (responses never), and reading is held', async () => {
  const inner = new FakeTransport();
  const clock = new FakeClock();
  const flow = new Flow(clock);
  let held = 0;
  let resumed = 0;
  flow.attach({ pause: () => held++, resume: () => resumed++ });
  const drops: number[] = [];
  const guarded = new GuardedTransport(inner, { maxPerSecond: 5, flow, onDropped: (n) => drops.push(n), clock });
  const seen: JSONRPCMessage[] = [];
  guarded.onmessage = (m) => seen.push(m);
  await guarded.start();
  for (let i = 0; i < 20; i++) inner.onmessage!({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: i } });
  inner.onmessage!({ jsonrpc: '2.0', id: 1, result: {} });
  assert.equal(seen.length, 6, 'five notifications and the response');
  assert.deepEqual(seen.at(-1), { jsonrpc: '2.0', id: 1, result: {} });
  assert.equal(drops.at(-1), 15);
  assert.equal(held, 1, 'held once, not once per drop');
  let released = false;
  const reading = flow.wait().then(() => (released = true));
  clock.advance(99);
  assert.equal(resumed, 0, 'reading waits while held');
  clock.advance(1);
  assert.equal(resumed, 1, 'and goes on shortly after (the rest of the second, at most 100 ms)');
  await reading;
  assert.equal(released, true);
  // The next second: notifications pass again.
  clock.advance(900);
  inner.onmessage!({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'later' } });
  assert.equal(seen.length, 7);
  await guarded.close();
});

test('a message over the size cap ends the connection at once: pending requests fail now, close fires once', async () => {
  const inner = new FakeTransport();
  let oversize = 0;
  let closes = 0;
  const guarded = new GuardedTransport(inner, {
    maxPerSecond: 100,
    flow: new Flow(),
    onDropped: () => undefined,
    isOversize: isStdioOversize,
    onOversize: () => oversize++,
  });
  guarded.onclose = () => closes++;
  await guarded.start();
  inner.onerror!(new Error('ReadBuffer exceeded maximum size of 1024 bytes'));
  assert.deepEqual([oversize, closes, inner.closed], [1, 1, 1]);
  inner.onmessage!({ jsonrpc: '2.0', id: 2, result: {} });
  await guarded.close();
  assert.equal(closes, 1);
});

/** A fetch that answers with `chunks` as the body, of the content type given. */
function answering(chunks: string[], type: string) {
  return async () =>
    new Response(
      new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
          controller.close();
        },
      }),
      { status: 200, headers: { 'content-type': type } },
    );
}

test('HTTP bodies are cut at the cap: a JSON body whole, an event stream per event', async () => {
  let over = 0;
  const limits = { maxBytes: 100, flow: new Flow(), onOversize: () => over++ };
  const small = await limitedFetch(answering(['{"a":', '1}'], 'application/json'), limits)('http://x');
  assert.deepEqual(await small.json(), { a: 1 });
  const big = await limitedFetch(answering(['{"a":"', 'x'.repeat(80), 'x'.repeat(80), '"}'], 'application/json'), limits)('http://x');
  await assert.rejects(
    big.json(),
    (error: Error) => error instanceof ProxyLimitError && /more than 100 bytes \(proxy\.maxResultBytes\)/.test(error.message),
  );
  assert.equal(over, 1);
  // Many small events, far more than the cap in all, with CRLF and boundaries split over reads.
  const event = `data: ${'y'.repeat(40)}\r\n\r`;
  const stream = await limitedFetch(
    answering(
      Array.from({ length: 20 }, () => `${event}`).map((e) => `\n${e}`),
      'text/event-stream',
    ),
    limits,
  )('http://x');
  assert.equal((await stream.text()).length, 20 * (event.length + 1));
  assert.equal(over, 1);
  const huge = await limitedFetch(
    answering(['data: a\n\n', `data: ${'z'.repeat(60)}`, 'z'.repeat(60), '\n\n'], 'text/event-stream'),
    limits,
  )('http://x');
  await assert.rejects(huge.text(), ProxyLimitError);
  assert.equal(over, 2);
});

test('the stdio transport exposes its process (exit code, paused stdout) on the SDK in use', async () => {
  const config = server({ command: process.execPath, args: ['-e', 'process.stdin.resume()'] }) as StdioServerConfig;
  const transport = stdioTransport(config, {}, 1024);
  await transport.start();
  const child = childOf(transport);
  assert.ok(child?.stdout, 'the SDK keeps its child process where childOf looks');
  assert.equal(typeof child.pid, 'number');
  await transport.close();
});
