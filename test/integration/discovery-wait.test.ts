// How long discovery waits for proxied servers, with a real server that starts slowly: search
// and discovered_servers() wait a bounded time (proxy.discoveryWaitSeconds, off the run's clock)
// and say who is not ready, and search never answers an empty list because of a start; the
// Tools view's refresh (discover(Infinity)) waits for every start to end.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { configSchema } from '../../src/config/schema.ts';
import { FIXTURE, startBridge, structured, tempDir, textOf } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

const DISCOVERY_WAIT_SECONDS = 1;
const START_DELAY_MS = DISCOVERY_WAIT_SECONDS * 1000 + 1500;

async function slowHub(t: { after(fn: () => unknown): void }): Promise<ProxyHub> {
  const dir = await tempDir('cem-discovery-');
  const hub = new ProxyHub(
    configSchema.parse({
      stateDir: join(dir, 'state'),
      proxy: { discoveryWaitSeconds: DISCOVERY_WAIT_SECONDS },
      servers: { slow: { command: process.execPath, args: [FIXTURE, '--start-delay', String(START_DELAY_MS)] } },
    }),
  );
  t.after(async () => {
    await hub.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await hub.start();
  return hub;
}

test('discovery waits a bounded time for a slow server, then Infinity waits for its start to end', async (t) => {
  const hub = await slowHub(t);
  let started = Date.now();
  const notReady = await hub.discover();
  const bounded = Date.now() - started;
  assert.deepEqual(
    notReady.map((n) => n.server),
    ['slow'],
    'not ready after the bounded wait',
  );
  assert.ok(bounded < START_DELAY_MS, `waited ${bounded} ms`);
  started = Date.now();
  assert.deepEqual(await hub.discover(Infinity), []);
  assert.ok(hub.catalog.get('slow')?.tools?.length, 'its tools are known');
  assert.ok(bounded + Date.now() - started >= START_DELAY_MS - 200, 'it waited for the start');
});

test('discover(Infinity) on a fresh hub waits for the whole start', async (t) => {
  const hub = await slowHub(t);
  const started = Date.now();
  assert.deepEqual(await hub.discover(Infinity), []);
  assert.ok(Date.now() - started >= START_DELAY_MS - 200, `waited ${Date.now() - started} ms`);
  assert.ok(hub.catalog.get('slow')?.tools?.length);
});

test("the Tools view's refresh lists a server afresh even when its tools are cached; discovery does not start it", async (t) => {
  const dir = await tempDir('cem-refresh-');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const config = configSchema.parse({ stateDir: join(dir, 'state'), servers: { fx: { command: process.execPath, args: [FIXTURE] } } });
  const first = new ProxyHub(config, { stateDir: config.stateDir });
  await first.start();
  assert.deepEqual(await first.discover(Infinity), []);
  await first.catalog.flush();
  const cachedAt = first.catalog.get('fx')?.updatedAt;
  await first.close();
  assert.ok(cachedAt, 'the first hub listed the tools');

  const hub = new ProxyHub(config, { stateDir: config.stateDir });
  t.after(() => hub.close());
  await hub.start();
  assert.equal(hub.catalog.get('fx')?.updatedAt, cachedAt, 'the second hub starts from the cached list');
  assert.deepEqual(await hub.discover(Infinity), []);
  assert.equal(hub.catalog.get('fx')?.state, 'not-started', 'discovery is served by the cache');
  assert.deepEqual(await hub.refresh(), []);
  assert.equal(hub.catalog.get('fx')?.state, 'running');
  assert.ok((hub.catalog.get('fx')?.updatedAt ?? '') > cachedAt, 'listed again');
  assert.ok(hub.catalog.findTool('fx', 'add'), "with the server's tools");
});

function slowServer(delayMs: number) {
  return { slow: { command: process.execPath, args: [FIXTURE, '--start-delay', String(delayMs)] } };
}

const sandbox = { runtime: testRuntimes()[0], image: TEST_IMAGE };

test("search_tool_docs waits for a starting server off the run's clock, and finds its tools", async () => {
  // The server answers 8 s after its start; the run may take 2 s of its own. The wait's bound is
  // far beyond the start, so that a loaded machine's slower start still ends within it.
  const bridge = await startBridge({
    sandbox: { ...sandbox, timeoutSeconds: 2 },
    proxy: { discoveryWaitSeconds: 120 },
    servers: slowServer(8000),
  });
  try {
    const result = await bridge.call('print([h["tool"] for h in await search_tool_docs("add two numbers")])');
    assert.equal(structured(result).status, 'ok', textOf(result));
    assert.match(String(structured(result).stdout), /'add'/);
  } finally {
    await bridge.close();
  }
});

test('with no hit while a server is still starting, search_tool_docs names it instead of answering []', async () => {
  const bridge = await startBridge({ sandbox, proxy: { discoveryWaitSeconds: 0.5 }, servers: slowServer(600_000) });
  try {
    const code = [
      'try:',
      '    print(await search_tool_docs("add two numbers"))',
      'except ToolError as e:',
      '    print(e.kind, "|", e)',
      'print([(s["name"], s["status"]) for s in discovered_servers()])',
    ].join('\n');
    const result = await bridge.call(code);
    const stdout = String(structured(result).stdout);
    assert.match(stdout, /^unavailable \| .*still starting after 0\.5 s: slow\b/m, textOf(result));
    assert.match(stdout, /\[\('slow', 'starting'\)\]/);
  } finally {
    await bridge.close();
  }
});
