// How long discovery waits for proxied servers, with a real server that starts slowly: search
// and discovered_servers() wait a bounded time and say who is not ready; the Tools view's
// refresh (discover(Infinity)) waits for every start to end.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DISCOVERY_WAIT_MS, ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { configSchema } from '../../src/config/schema.ts';
import { FIXTURE, tempDir } from '../helpers/bridge.ts';

const START_DELAY_MS = DISCOVERY_WAIT_MS + 1500;

async function slowHub(t: { after(fn: () => unknown): void }): Promise<ProxyHub> {
  const dir = await tempDir('cem-discovery-');
  const hub = new ProxyHub(
    configSchema.parse({
      stateDir: join(dir, 'state'),
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
