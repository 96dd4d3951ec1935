// Servers that wait for the user's consent (in VS Code: those a workspace defines), on the
// bridge's side: the hub never starts, lists or searches one until the decisions file allows
// its hash, asks for a decision in the requests file, stops it when consent is withdrawn and
// starts it afresh when allowed again; through the real bridge process and a real container,
// sandboxed code sees "awaiting-consent" and a ToolError of kind "needs-consent".
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { configSchema } from '../../src/config/schema.ts';
import { FIXTURE, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { quietFor, until } from '../helpers/wait.ts';

const [runtime = 'podman'] = testRuntimes();
const HASH = 'c0ffee'.repeat(5).slice(0, 32);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A workspace-like setup: one gated server (given `args`) that leaves its pid in a marker file when it starts, one free server. */
async function setup(prefix: string, args: string[] = [FIXTURE]) {
  const dir = await tempDir(prefix);
  const marker = join(dir, 'started.pid');
  const decisionsFile = join(dir, 'consent.json');
  const requestsFile = join(dir, 'consent-requests.json');
  const config = {
    servers: {
      ws: { command: process.execPath, args, env: { FIXTURE_PID_FILE: marker }, description: 'Defined by the workspace' },
      free: { command: process.execPath, args: [FIXTURE], description: 'Defined by the user' },
    },
    proxy: { connectTimeoutSeconds: 20 },
    consent: { decisionsFile, requestsFile, servers: { ws: HASH } },
  };
  // As the extension writes it: a new file put in place.
  const decide = async (allowed: string[], denied: string[] = []) => {
    await writeFile(`${decisionsFile}.tmp`, JSON.stringify({ version: 1, allowed, denied }));
    await rename(`${decisionsFile}.tmp`, decisionsFile);
  };
  return { dir, marker, requestsFile, config, decide };
}

describe('the hub and a server awaiting consent', () => {
  let hub: ProxyHub;
  let env: Awaited<ReturnType<typeof setup>>;

  before(async () => {
    env = await setup('cem-consent-hub-');
    hub = new ProxyHub(configSchema.parse(env.config));
    await hub.start();
  });
  after(async () => {
    await hub?.close();
    rmSync(env.dir, { recursive: true, force: true });
  });

  test('discovery and search leave it alone, ask for a decision, and a call is refused', async () => {
    const notReady = await hub.discover();
    assert.deepEqual(notReady, [{ server: 'ws', state: 'awaiting-consent' }]);
    assert.ok(hub.search('add two numbers', 10).some((t) => t.server === 'free'));
    assert.ok(!hub.search('add two numbers', 10).some((t) => t.server === 'ws'));
    const request = JSON.parse(
      await until('the consent request', () => existsSync(env.requestsFile) && readFileSync(env.requestsFile, 'utf8')),
    ) as { servers: unknown };
    assert.deepEqual(request.servers, [{ name: 'ws', hash: HASH }]);
    await assert.rejects(hub.callTool('ws', 'add', { a: 1, b: 2 }, new AbortController().signal), (error: Error) => {
      assert.equal(error.name, 'ConsentNeededError');
      assert.match(error.message, /not allowed it to run yet; they have been asked/);
      return true;
    });
    await assert.rejects(hub.listTools('ws'), { name: 'ConsentNeededError' });
    // A started server writes its marker from its own process, some time after the hub spawned
    // it; nothing the hub does later comes after that, so a short quiet spell shows it.
    await quietFor(500);
    assert.equal(existsSync(env.marker), false, 'the server was started');
  });

  test('allowed, it starts and is searched; withdrawn, its process stops and its cached tools are hidden; allowed again, it starts afresh', async () => {
    await env.decide([HASH]);
    const { result } = await hub.callTool('ws', 'add', { a: 20, b: 22 }, new AbortController().signal);
    assert.deepEqual(result.structuredContent, { sum: 42 });
    const pid = Number(readFileSync(env.marker, 'utf8'));
    assert.ok(alive(pid));
    assert.ok(hub.search('add two numbers', 10).some((t) => t.server === 'ws'));

    await env.decide([], [HASH]);
    await until('the withdrawn server to stop', () => !alive(pid));
    assert.equal(hub.consentState('ws'), 'declined');
    assert.ok(hub.catalog.get('ws')?.tools, 'its tools are still known (as a cache)');
    assert.ok(!hub.search('add two numbers', 10).some((t) => t.server === 'ws'), 'a declined server was searched');
    await assert.rejects(hub.callTool('ws', 'add', { a: 1, b: 2 }, new AbortController().signal), /did not allow server "ws"/);

    rmSync(env.marker);
    await env.decide([HASH]);
    const again = await hub.callTool('ws', 'add', { a: 1, b: 2 }, new AbortController().signal);
    assert.deepEqual(again.result.structuredContent, { sum: 3 });
    assert.notEqual(Number(readFileSync(env.marker, 'utf8')), pid, 'a new process');
  });
});

// The hub checks the decisions every second (a mocked interval here, ticked by hand): whatever
// happened between two checks, a server not allowed at a check is stopped, and at once.
describe('revoking consent stops the server, whatever the timing', () => {
  const signal = new AbortController().signal;
  const markerPid = (marker: string) =>
    until(
      'the server to start',
      () => existsSync(marker) && Number(readFileSync(marker, 'utf8')) > 0 && Number(readFileSync(marker, 'utf8')),
    );

  async function withHub(
    t: TestContext,
    prefix: string,
    args: string[] | undefined,
    body: (hub: ProxyHub, env: Awaited<ReturnType<typeof setup>>) => Promise<void>,
  ) {
    t.mock.timers.enable({ apis: ['setInterval'] });
    const env = await setup(prefix, args);
    const hub = new ProxyHub(configSchema.parse(env.config));
    try {
      await hub.start();
      await body(hub, env);
    } finally {
      await hub.close();
      rmSync(env.dir, { recursive: true, force: true });
    }
  }

  test('allowed, started and revoked between two checks (no check saw it allowed): its process stops', (t) =>
    withHub(t, 'cem-consent-between-', undefined, async (hub, env) => {
      await env.decide([HASH]);
      // Started on a fresh read of the decisions, before any check saw the change.
      const { result } = await hub.callTool('ws', 'add', { a: 1, b: 2 }, signal);
      assert.deepEqual(result.structuredContent, { sum: 3 });
      const pid = await markerPid(env.marker);
      await env.decide([]);
      t.mock.timers.tick(1000);
      await until('the revoked server to stop', () => !alive(pid), 5000);
      await assert.rejects(hub.callTool('ws', 'add', { a: 1, b: 2 }, signal), { name: 'ConsentNeededError' });
    }));

  test('revoked while it is starting: its process stops now, not when its start times out', (t) =>
    // Never answers initialize: the start would last the whole connect timeout (20 s).
    withHub(t, 'cem-consent-starting-', [FIXTURE, '--hang'], async (hub, env) => {
      await env.decide([HASH]);
      t.mock.timers.tick(1000);
      const call = hub.callTool('ws', 'add', { a: 1, b: 2 }, signal);
      call.catch(() => undefined);
      const pid = await markerPid(env.marker);
      await env.decide([]);
      t.mock.timers.tick(1000);
      await until('the revoked server to stop', () => !alive(pid), 5000);
      await assert.rejects(call, /server "ws" is shut down/);
      assert.equal(hub.catalog.get('ws')?.state, 'not-started');
    }));

  test('revoked, a server that ignores both its stdin closing and SIGTERM is still stopped within seconds', (t) =>
    withHub(
      t,
      'cem-consent-stubborn-',
      ['--import', `data:text/javascript,${encodeURIComponent('process.on("SIGTERM", () => {}); setInterval(() => {}, 1e9);')}`, FIXTURE],
      async (hub, env) => {
        await env.decide([HASH]);
        t.mock.timers.tick(1000);
        await hub.callTool('ws', 'add', { a: 1, b: 2 }, signal);
        const pid = await markerPid(env.marker);
        await env.decide([]);
        t.mock.timers.tick(1000);
        await until('the revoked server to stop', () => !alive(pid), 8000);
      },
    ));
});

describe(`sandboxed code and a server awaiting consent (${runtime})`, () => {
  let bridge: BridgeHandle;
  let env: Awaited<ReturnType<typeof setup>>;

  before(async () => {
    env = await setup('cem-consent-bridge-');
    bridge = await startBridge({ ...env.config, sandbox: { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 20 } });
  });
  after(async () => {
    await bridge?.close();
    rmSync(env.dir, { recursive: true, force: true });
  });

  test('search skips it, discovered_servers() says awaiting-consent, a call raises ToolError "needs-consent"; allowed, the same session calls it', async () => {
    const code = [
      'import json',
      'kept = "from before consent"',
      'out = {"hits": sorted({h["server"] for h in await search_tool_docs("add two numbers", limit=10)})}',
      'out["servers"] = {s["name"]: [s["status"], s["tools"]] for s in discovered_servers()}',
      'try:',
      '    await mcp_ws.add(a=1, b=2)',
      'except ToolError as e:',
      '    out["error"] = [e.kind, str(e)]',
      'print(json.dumps(out))',
    ].join('\n');
    const result = await bridge.call(code);
    assert.equal(structured(result).status, 'ok', textOf(result));
    const out = JSON.parse(String(structured(result).stdout)) as {
      hits: string[];
      servers: Record<string, [string, number | null]>;
      error: [string, string];
    };
    assert.deepEqual(out.hits, ['free']);
    assert.deepEqual(out.servers.ws, ['awaiting-consent', null]);
    assert.equal(out.servers.free?.[0], 'running');
    assert.equal(out.error[0], 'needs-consent');
    assert.match(out.error[1], /^ws\.add: server "ws" is defined by this workspace's settings and the user has not allowed it to run yet/);
    assert.equal(existsSync(env.marker), false, 'the server was started');

    await env.decide([HASH]);
    const allowed = await bridge.call('(kept, await mcp_ws.add(a=20, b=22))');
    assert.equal(structured(allowed).value, "('from before consent', {'sum': 42})", textOf(allowed));
    assert.ok(existsSync(env.marker), 'the allowed server did not start');
  });
});
