// Cancellations across the relay, both ways, and a form's defaults, with the real bridge process,
// an SDK client on its side (declaring form elicitation and sampling) and the relay fixture
// server behind it; the code runs in the WebAssembly sandbox (nothing here needs a container).
// Server -> client: the fixture cancels its own elicitation and sampling request, and the client
// sees notifications/cancelled for the very request it was asked. Client -> server: the client
// cancels a run whose code waits on a tool call, a resource and a prompt, and a resources/read
// and a prompts/get of the re-exposed server; the fixture sees each of them cancelled.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitResult,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { RUN_LOG_FILE } from '../../src/state/run-log/files.ts';
import { tempDir, textOf } from '../helpers/bridge.ts';
import { until } from '../helpers/wait.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

const RELAY_FIXTURE = fixtureProgram('relay');
const EXPOSED = 'code-execution-mode://server/relay/';

describe('cancellations across the relay, both ways; form defaults (wasm)', () => {
  let client: Client;
  let stateDir: string;
  let cancelLog: string;
  let stderr = '';
  /** The requests the client was asked, with the signal the SDK aborts when the bridge cancels one. */
  const asked: { method: string; id: RequestId; params: unknown }[] = [];
  /** Every message the client got from the bridge, as it got it. */
  const seen: JSONRPCMessage[] = [];
  /** What the client answers a request with; undefined: it waits until the request is cancelled. */
  let answer: (method: string, params: unknown) => ElicitResult | undefined = () => undefined;

  const cancelledOf = (id: RequestId) =>
    seen.find((m) => 'method' in m && m.method === 'notifications/cancelled' && m.params?.requestId === id);
  const cancelLines = async () => (await readFile(cancelLog, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const relayEvents = async () =>
    (await readFile(join(stateDir, RUN_LOG_FILE), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((e) => e.type === 'relay');
  const run = async (code: string, signal?: AbortSignal) =>
    (await client.callTool({ name: 'run_python', arguments: { code } }, undefined, {
      timeout: 120_000,
      ...(signal ? { signal } : {}),
    })) as CallToolResult;

  before(async () => {
    const dir = await tempDir('cem-relay-cancel-');
    stateDir = join(dir, 'state');
    cancelLog = join(dir, 'cancelled.log');
    const configFile = join(dir, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        stateDir,
        servers: { relay: { command: process.execPath, args: [RELAY_FIXTURE, '--cancel-log', cancelLog], confirm: 'none' } },
        sandbox: { backend: 'wasm', timeoutSeconds: 60, maxTimeoutSeconds: 60 },
      }),
    );
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [resolve('dist/cli.js'), '--config', configFile],
      env: process.env as Record<string, string>,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    client = new Client({ name: 'relay-cancel-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, sampling: {} } });
    // The client's handler ends when the bridge cancels its request: the SDK aborts its signal, or
    // (for request id 0, whose cancellation the SDK client ignores) the notification is seen.
    const handle = (method: string) => async (request: { params: unknown }, extra: { requestId: RequestId; signal: AbortSignal }) => {
      asked.push({ method, id: extra.requestId, params: request.params });
      const given = answer(method, request.params);
      if (given) return given;
      await until(`the bridge to cancel ${method}`, () => extra.signal.aborted || cancelledOf(extra.requestId) !== undefined, 60_000);
      throw new Error('cancelled');
    };
    client.setRequestHandler(ElicitRequestSchema, handle('elicitation/create'));
    client.setRequestHandler(CreateMessageRequestSchema, handle('sampling/createMessage') as never);
    await client.connect(transport);
    const deliver = transport.onmessage;
    transport.onmessage = (message) => {
      seen.push(message);
      deliver?.(message);
    };
  });
  after(async () => {
    await client?.close();
  });

  for (const kind of ['form', 'sampling'] as const) {
    const method = kind === 'form' ? 'elicitation/create' : 'sampling/createMessage';
    test(`server -> client: the server cancels its ${method}; the client gets notifications/cancelled for that request`, async () => {
      const before = asked.length;
      const result = await run(`print(await call_tool("relay", "ask-then-cancel", {"kind": "${kind}", "ms": 1500}))`);
      const got = asked[before];
      assert.ok(got, `the client was asked: ${textOf(result)} ${stderr.slice(-2000)}`);
      assert.equal(got.method, method);
      const cancelled = await until('notifications/cancelled', () => cancelledOf(got.id));
      assert.ok('params' in cancelled);
      assert.equal(cancelled.params?.requestId, got.id);
      assert.match(String(cancelled.params?.reason), /the server no longer needs it/);
      // The server got no answer: its own cancel ended its wait.
      assert.match(textOf(result), /"cancelled": ?true/);
      const record = await until(`the ${method} record`, async () =>
        (await relayEvents()).find((e) => e.method === method && e.outcome === 'cancelled'),
      );
      assert.equal(record.error, 'cancelled by the server: the server no longer needs it');
      assert.ok(Array.isArray(record.runs) && record.runs.length === 1, JSON.stringify(record));
    });
  }

  test('form defaults: fields the client left out get the form default; what it gave is kept', async () => {
    answer = (method) => (method === 'elicitation/create' ? { action: 'accept', content: { name: 'Grace' } } : undefined);
    try {
      const result = await run('print(await call_tool("relay", "ask-defaults", {}))');
      const line = textOf(result)
        .split('\n')
        .find((l) => l.startsWith('{"ok"'));
      assert.ok(line, textOf(result));
      assert.deepEqual(JSON.parse(line), {
        ok: { action: 'accept', content: { name: 'Grace', count: 3, subscribe: true, colour: 'red' } },
      });
    } finally {
      answer = () => undefined;
    }
  });

  test('client -> server: a cancelled run cancels its tool call, resource read and prompt at the server', async () => {
    const before = (await cancelLines()).length;
    const stop = new AbortController();
    const running = run(
      [
        'import asyncio',
        'await asyncio.gather(',
        '    call_tool("relay", "wait-for-cancel", {}),',
        '    read_resource("relay", "relay://slow"),',
        '    get_prompt("relay", "slow", {}),',
        ')',
      ].join('\n'),
      stop.signal,
    );
    await until('the three requests to start', async () => (await cancelLines()).slice(before).length >= 3);
    stop.abort('the user stopped it');
    await assert.rejects(running);
    const lines = await until('the three cancellations', async () => {
      const now = (await cancelLines()).slice(before).filter((l) => l.startsWith('cancelled '));
      return now.length >= 3 && now;
    });
    assert.deepEqual(lines.map((l) => l.split(' ')[1]).sort(), ['prompt', 'resource', 'tool']);
  });

  test("client -> server: a cancelled resources/read or prompts/get of the bridge's own server is cancelled at the server", async () => {
    for (const [kind, send] of [
      ['resource', (signal: AbortSignal) => client.readResource({ uri: `${EXPOSED}relay://slow` }, { signal })],
      ['prompt', (signal: AbortSignal) => client.getPrompt({ name: 'relay.slow' }, { signal })],
    ] as const) {
      const before = (await cancelLines()).length;
      const stop = new AbortController();
      const pending = send(stop.signal);
      await until(`the ${kind} to start`, async () => (await cancelLines()).slice(before).includes(`started ${kind}`));
      stop.abort('no longer wanted');
      await assert.rejects(pending);
      await until(`the ${kind} cancelled at the server`, async () =>
        (await cancelLines()).slice(before).some((l) => l.startsWith(`cancelled ${kind}`)),
      );
    }
  });
});
