// The real bridge's tools/list_changed and its lifecycle: the notice is sent once when the listing
// a client would get changes (here "auto" settling on WebAssembly at the first run), and not for
// a configuration reload that leaves it as it was (a server added: the listing names no server;
// the same settings written again). A request other than initialize or ping before initialize is
// answered -32600, and the bridge serves the client that initializes after it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURE, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { until } from '../helpers/wait.ts';

const fixture = { command: process.execPath, args: [FIXTURE] };
/** No engine can run here: "auto" settles on WebAssembly, at the first run (nothing is prewarmed). */
const noEngines = { backend: 'auto', podmanPath: '/nonexistent/podman', dockerPath: '/nonexistent/docker', prewarm: false };

/** Writes the bridge's file anew and waits for its log to say the file was applied. */
async function rewrite(bridge: BridgeHandle, text: string): Promise<string> {
  const before = bridge.stderr().length;
  await writeFile(bridge.configFile, text);
  return until('the configuration file to be applied', () => {
    const logged = bridge.stderr().slice(before);
    return /configuration file .* applied/.test(logged) && logged;
  });
}

const description = async (bridge: BridgeHandle) =>
  (await bridge.client.listTools()).tools.find((t) => t.name === 'run_python')?.description;

test('tools/list_changed is sent once when the listing changes, and not for a reload that leaves it as it was', async () => {
  const bridge = await startBridge({ sandbox: noEngines, servers: { one: fixture } });
  try {
    let notices = 0;
    bridge.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void notices++);
    const first = await description(bridge);
    assert.match(first ?? '', /^Python 3 sandbox/);

    // A server added: applied (its tools callable), the listing unchanged, nothing told.
    const config = JSON.parse(await readFile(bridge.configFile, 'utf8')) as Record<string, unknown>;
    const added = await rewrite(bridge, JSON.stringify({ ...config, servers: { one: fixture, two: fixture } }));
    assert.match(added, /servers reconfigured: added two/);
    // A ping's answer comes after any notice sent while the file was applied.
    await bridge.client.ping();
    assert.equal(notices, 0);
    assert.equal(await description(bridge), first);
    // The same settings written again (another layout): a no-op.
    await rewrite(bridge, JSON.stringify({ ...config, servers: { one: fixture, two: fixture } }, null, 2));
    await bridge.client.ping();
    assert.equal(notices, 0);

    // The first run settles "auto" on WebAssembly: the listing says so, and the client is told once.
    const run = await bridge.call('print(await mcp_two.add(a=1, b=2))');
    assert.equal(structured(run).status, 'ok', textOf(run));
    await until('a tools/list_changed', () => notices > 0);
    assert.match((await description(bridge)) ?? '', /^Python 3 WebAssembly sandbox/);
    await bridge.call('1');
    await bridge.client.ping();
    assert.equal(notices, 1);
  } finally {
    await bridge.close();
  }
});

test('a request before initialize is answered -32600; ping is answered; the client that then initializes is served', async () => {
  const dir = await tempDir('cem-lifecycle-');
  const configFile = join(dir, 'config.json');
  await writeFile(configFile, JSON.stringify({ stateDir: join(dir, 'state'), sandbox: { backend: 'wasm', prewarm: false } }));
  const child = spawn(process.execPath, [resolve('dist/cli.js'), '--config', configFile], { stdio: 'pipe' });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const answers = new Map<number, { result?: Record<string, unknown>; error?: { code: number; message: string } }>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as { id?: number; result?: Record<string, unknown>; error?: { code: number; message: string } };
    if (typeof message.id === 'number') answers.set(message.id, message);
  });
  const request = async (id: number, method: string, params: Record<string, unknown> = {}) => {
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return until(`the answer to ${method}`, () => answers.get(id));
  };
  try {
    const early = await request(1, 'tools/list');
    assert.equal(early.error?.code, -32600, JSON.stringify(early));
    assert.match(early.error?.message ?? '', /before initialize/);
    assert.deepEqual((await request(2, 'ping')).result, {});
    const init = await request(3, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'lifecycle-test', version: '1.0.0' },
    });
    assert.equal(init.error, undefined, JSON.stringify(init));
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const tools = (await request(4, 'tools/list')).result?.tools as Array<{ name: string }> | undefined;
    assert.deepEqual(
      tools?.map((t) => t.name),
      ['run_python'],
    );
    assert.match(stderr, /tools\/list before initialize was answered with an error/);
  } finally {
    child.stdin.end();
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
  }
});
