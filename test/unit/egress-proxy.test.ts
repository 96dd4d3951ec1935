// The egress proxy end to end over its unix socket, with node's own HTTP client and sockets as
// the sandbox: plain requests forwarded, CONNECT tunnels, refusals a person can act on, asking
// (one question for concurrent requests), each per-run cap hit alone and under concurrency,
// requests outside a run, a run's end closing its tunnels, and a record for every request.
// Names resolve through a fake resolver and every connection goes to a loopback server started
// here: no test sends DNS or traffic beyond loopback.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, createServer as createHttpServer, request, type IncomingHttpHeaders } from 'node:http';
import { connect as netConnect, createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { EgressProxy } from '../../src/sandbox/egress/proxy.ts';
import type { NetworkConfig } from '../../src/sandbox/egress/policy.ts';
import type { EgressAnswer, EgressHandler, EgressRecord, EgressTarget } from '../../src/sandbox/egress/types.ts';
import { until } from '../helpers/wait.ts';

const PUBLIC = '93.184.216.34';
const made: string[] = [];
const servers: Server[] = [];
const proxies: EgressProxy[] = [];
after(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
  for (const server of servers) server.close();
  await Promise.all(made.map((dir) => rm(dir, { recursive: true, force: true })));
});

function network(overrides: Partial<NetworkConfig> = {}): NetworkConfig {
  return { allow: [], ask: false, maxRequestsPerRun: 256, maxBytesPerRun: 512 * 1024 * 1024, maxConnections: 16, ...overrides };
}

async function listening<T extends Server>(server: T): Promise<number> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** An HTTP server that answers with what it received (method, path, headers) and counts connections. */
async function echoHttp(body?: string): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = createHttpServer((req, res) => {
    let received = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (received += chunk));
    req.on('end', () => {
      res.setHeader('X-Answer', 'yes');
      res.end(body ?? JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: received }));
    });
  });
  server.on('connection', () => connections++);
  return { port: await listening(server), connections: () => connections };
}

/** A TCP server that sends back what it gets. */
async function echoTcp(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    socket.on('error', () => socket.destroy());
    socket.pipe(socket);
  });
  return { port: await listening(server), connections: () => connections };
}

/** A handler that records, answers questions as told, and lets a test await records. */
function handler(answer: (target: EgressTarget, signal: AbortSignal) => Promise<EgressAnswer> = async () => 'deny') {
  const records: EgressRecord[] = [];
  const asked: EgressTarget[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const self: EgressHandler & { records: EgressRecord[]; asked: EgressTarget[]; recorded: (count: number) => Promise<EgressRecord[]> } = {
    records,
    asked,
    ask(target, context) {
      asked.push(target);
      return answer(target, context.signal);
    },
    record(entry) {
      records.push(entry);
      for (const waiter of waiters.filter((w) => records.length >= w.count)) waiter.resolve();
    },
    async recorded(count) {
      if (records.length < count) await new Promise<void>((resolve) => waiters.push({ count, resolve }));
      return records;
    },
  };
  return self;
}

interface Setup {
  proxy: EgressProxy;
  socketPath: string;
  config: { current: NetworkConfig };
  lookups: string[];
  connects: string[];
}

/**
 * A proxy on a fresh socket. Names in `names` resolve to their addresses (others do not
 * resolve); `routes` sends a public address to a loopback port, and loopback goes where it says.
 */
async function startProxy(
  config: NetworkConfig,
  names: Record<string, string[]> = {},
  routes: Record<string, number> = {},
): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'cem-egress-'));
  made.push(dir);
  const socketPath = join(dir, 'proxy.sock');
  const lookups: string[] = [];
  const connects: string[] = [];
  const holder = { current: config };
  const proxy = new EgressProxy({
    socketPath,
    session: 's1',
    network: () => holder.current,
    lookup: async (name) => {
      lookups.push(name);
      const found = names[name];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
    connect: (address, port) => {
      connects.push(`${address} ${port}`);
      if (address === '127.0.0.1') return netConnect({ host: address, port });
      const routed = routes[address];
      if (routed === undefined) throw new Error(`the test routes no traffic to ${address}`);
      return netConnect({ host: '127.0.0.1', port: routed });
    },
  });
  await proxy.listen();
  proxies.push(proxy);
  return { proxy, socketPath, config: holder, lookups, connects };
}

interface Answer {
  status: number;
  statusMessage: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A plain-HTTP request through the proxy (absolute form, as an HTTP_PROXY client sends it). */
function get(
  socketPath: string,
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
  body?: string[],
  agent?: Agent,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path: url, headers, agent: agent ?? false });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    for (const part of body ?? []) req.write(part);
    req.end();
  });
}

/** `CONNECT authority` through the proxy: the status, and the socket (a tunnel when 200) or the refusal's body. */
function connectThrough(
  socketPath: string,
  authority: string,
): Promise<{ status: number; statusMessage: string; socket: Socket; body: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method: 'CONNECT', path: authority, agent: false });
    req.on('connect', (res, socket: Socket, head: Buffer) => {
      const body = new Promise<string>((done) => {
        let text = head.toString();
        socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
        socket.on('close', () => done(text));
        socket.on('error', () => socket.destroy());
      });
      resolve({ status: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', socket, body });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends `text` through a tunnel and waits for `length` bytes back (or the tunnel's close). */
async function roundTrip(socket: Socket, text: string, length = Buffer.byteLength(text)): Promise<string> {
  let got = '';
  const done = new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      got += chunk.toString();
      if (got.length >= length) finish();
    };
    const finish = () => {
      socket.off('data', onData).off('close', finish);
      resolve();
    };
    socket.on('data', onData).once('close', finish);
  });
  socket.write(text);
  await done;
  return got;
}

const run = (proxy: EgressProxy, h: EgressHandler | undefined, id = 'r1', signal = new AbortController().signal) =>
  proxy.beginRun(id, h, signal);

test('the socket is made 0666 for the container user, and close() removes it', async () => {
  const { proxy, socketPath } = await startProxy(network());
  assert.equal(statSync(socketPath).mode & 0o777, 0o666);
  await proxy.close();
  assert.equal(existsSync(socketPath), false);
});

test('a plain GET to an exactly listed loopback server is forwarded in origin form, hop-by-hop headers dropped', async () => {
  const target = await echoHttp();
  const { proxy, socketPath } = await startProxy(network({ allow: [`127.0.0.1:${target.port}`] }));
  const h = handler();
  run(proxy, h);
  const answer = await get(socketPath, `http://127.0.0.1:${target.port}/path?q=1`, {
    'X-Custom': 'kept',
    'Proxy-Authorization': 'Basic c2VjcmV0',
    'Proxy-Connection': 'keep-alive',
    Connection: 'keep-alive, X-Hop',
    'X-Hop': 'dropped',
  });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers['x-answer'], 'yes');
  const seen = JSON.parse(answer.body) as { method: string; url: string; headers: IncomingHttpHeaders };
  assert.equal(seen.method, 'GET');
  assert.equal(seen.url, '/path?q=1');
  assert.equal(seen.headers['x-custom'], 'kept');
  assert.equal(seen.headers.host, `127.0.0.1:${target.port}`);
  assert.equal(seen.headers.connection, 'close');
  for (const name of ['proxy-authorization', 'proxy-connection', 'x-hop']) assert.equal(seen.headers[name], undefined, name);
  const [record] = await h.recorded(1);
  assert.equal(record?.decision, 'allowed');
  assert.equal(record?.method, 'GET');
  assert.equal(record?.address, '127.0.0.1');
  assert.equal(record?.runId, 'r1');
  assert.ok(record && record.bytesOut > 50 && record.bytesIn > answer.body.length, JSON.stringify(record));
  assert.doesNotMatch(JSON.stringify(record), /secret|c2VjcmV0|kept|path\?q/);
  await proxy.close();
});

test('request bodies go on, with their length or chunked', async () => {
  const target = await echoHttp();
  const { proxy, socketPath } = await startProxy(network({ allow: [`127.0.0.1:${target.port}`] }));
  run(proxy, handler());
  const url = `http://127.0.0.1:${target.port}/submit`;
  const sized = JSON.parse((await get(socketPath, url, { 'Content-Type': 'application/json' }, 'POST', ['{"a":1}'])).body) as {
    body: string;
    method: string;
  };
  assert.deepEqual([sized.method, sized.body], ['POST', '{"a":1}']);
  const chunked = JSON.parse((await get(socketPath, url, {}, 'PUT', ['part one, ', 'part two'])).body) as {
    body: string;
    headers: IncomingHttpHeaders;
  };
  assert.equal(chunked.body, 'part one, part two');
  assert.equal(chunked.headers['transfer-encoding'], 'chunked');
  await proxy.close();
});

test('a name is resolved once, on the host, and the proxy connects to the address it checked', async () => {
  const target = await echoHttp();
  const { proxy, socketPath, lookups, connects } = await startProxy(
    network({ allow: ['*.example.test'] }),
    { 'api.example.test': [PUBLIC] },
    { [PUBLIC]: target.port },
  );
  const h = handler();
  run(proxy, h);
  const answer = await get(socketPath, 'http://api.example.test:8080/v1');
  assert.equal(answer.status, 200);
  assert.equal((JSON.parse(answer.body) as { headers: IncomingHttpHeaders }).headers.host, 'api.example.test:8080');
  assert.deepEqual(lookups, ['api.example.test']);
  assert.deepEqual(connects, [`${PUBLIC} 8080`]);
  const [record] = await h.recorded(1);
  assert.deepEqual([record?.host, record?.port, record?.address, record?.decision], ['api.example.test', 8080, PUBLIC, 'allowed']);
  await proxy.close();
});

test('CONNECT tunnels bytes both ways to a loopback TCP server, and the record counts them', async () => {
  const echo = await echoTcp();
  const { proxy, socketPath } = await startProxy(network({ allow: [`127.0.0.1:${echo.port}`] }));
  const h = handler();
  run(proxy, h);
  const tunnel = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(tunnel.status, 200);
  assert.equal(await roundTrip(tunnel.socket, 'hello through the tunnel'), 'hello through the tunnel');
  tunnel.socket.end();
  const [record] = await h.recorded(1);
  assert.deepEqual(
    [record?.method, record?.decision, record?.bytesOut, record?.bytesIn, record?.address],
    ['CONNECT', 'allowed', 24, 24, '127.0.0.1'],
  );
  await proxy.close();
});

test('refusals: 403 text/plain saying what to set; unlisted names are never resolved; refused servers never see a connection', async () => {
  const target = await echoHttp();
  const echo = await echoTcp();
  const { proxy, socketPath, lookups, connects } = await startProxy(
    network({ allow: ['*.example.test', 'loop.example.net', `loop.example.net:${target.port}`, '127.0.0.1', `[::1]:${echo.port}`] }),
    { 'inside.example.test': ['10.0.0.7'], 'loop.example.net': ['127.0.0.1'], 'mixed.example.test': [PUBLIC, '127.0.0.1'] },
  );
  const h = handler();
  run(proxy, h);

  const unlisted = await get(socketPath, 'http://api.other.test/x');
  assert.equal(unlisted.status, 403);
  assert.match(String(unlisted.headers['content-type']), /^text\/plain/);
  assert.equal(
    unlisted.body,
    'Code Execution Mode refused api.other.test:80: not in sandbox.network.allow. Add "api.other.test:80" (or "*.other.test") to sandbox.network.allow, or set sandbox.network.ask to ask each time.\n',
  );
  assert.equal(unlisted.statusMessage, unlisted.body.trim());

  const wildcardToPrivate = await get(socketPath, 'http://inside.example.test/');
  assert.equal(wildcardToPrivate.status, 403);
  assert.match(wildcardToPrivate.body, /resolves to 10\.0\.0\.7, a private address.*never through a name/);

  const nameToLoopback = await get(socketPath, `http://loop.example.net:${target.port}/`);
  assert.equal(nameToLoopback.status, 403);
  assert.match(nameToLoopback.body, /resolves to 127\.0\.0\.1, a loopback address/);

  const mixed = await connectThrough(socketPath, 'mixed.example.test:443');
  assert.equal(mixed.status, 403);
  assert.match(await mixed.body, /resolves to 127\.0\.0\.1/);

  const portless = await get(socketPath, `http://127.0.0.1:${target.port}/`);
  assert.equal(portless.status, 403);
  assert.match(portless.body, new RegExp(`lists it exactly with its port, as "127\\.0\\.0\\.1:${target.port}"`));

  const tunnel = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(tunnel.status, 403);
  assert.match(tunnel.statusMessage, /^Code Execution Mode refused 127\.0\.0\.1:\d+: 127\.0\.0\.1 is a loopback address/);
  assert.match(await tunnel.body, /Content-Type|reached only when/);

  assert.deepEqual(lookups.sort(), ['inside.example.test', 'loop.example.net', 'mixed.example.test']);
  assert.deepEqual(connects, []);
  assert.equal(target.connections(), 0);
  assert.equal(echo.connections(), 0);
  const records = await h.recorded(6);
  assert.deepEqual(
    records.map((r) => r.decision),
    ['refused', 'private', 'private', 'private', 'private', 'private'],
  );
  assert.ok(records.every((r) => r.reason && r.bytesIn === 0 && r.bytesOut === 0 && r.address === undefined));
  await proxy.close();
});

test('a request the proxy cannot read is a 400 with a one-line reason', async () => {
  const { proxy, socketPath } = await startProxy(network());
  run(proxy, handler());
  const origin = await get(socketPath, '/just/a/path');
  assert.equal(origin.status, 400);
  assert.match(origin.body, /absolute-form/);
  const https = await get(socketPath, 'https://example.test/');
  assert.equal(https.status, 400);
  assert.match(https.body, /CONNECT/);
  const badConnect = await connectThrough(socketPath, 'no-port.example.test');
  assert.equal(badConnect.status, 400);
  const huge = await get(socketPath, 'http://example.test/', { 'X-Big': 'x'.repeat(20_000) });
  assert.equal(huge.status, 400);
  assert.match(huge.body, /headers are over 16 KiB/);
  await proxy.close();
});

test('a request outside a run is refused (no-run), before the first run and after the last', async () => {
  const echo = await echoTcp();
  const { proxy, socketPath } = await startProxy(network({ allow: [`127.0.0.1:${echo.port}`] }));
  const before = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(before.status, 403);
  assert.match(await before.body, /no run of this session is in progress/);
  const h = handler();
  run(proxy, h);
  await proxy.endRun();
  const afterwards = await get(socketPath, `http://127.0.0.1:${echo.port}/`);
  assert.equal(afterwards.status, 403);
  assert.match(afterwards.body, /no run/);
  assert.equal(echo.connections(), 0);
  assert.deepEqual(h.records, []);
  await proxy.close();
});

test('endRun closes an open tunnel and resolves once its record is written', async () => {
  const echo = await echoTcp();
  const { proxy, socketPath } = await startProxy(network({ allow: [`127.0.0.1:${echo.port}`] }));
  const h = handler();
  run(proxy, h);
  const tunnel = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(await roundTrip(tunnel.socket, 'ping'), 'ping');
  const closed = once(tunnel.socket, 'close');
  await proxy.endRun();
  assert.equal(h.records.length, 1);
  assert.equal(h.records[0]?.reason, 'closed when the run ended');
  await closed;
  await proxy.close();
});

test('a changed setting applies to the next request', async () => {
  const target = await echoHttp();
  const { proxy, socketPath, config } = await startProxy(network());
  run(proxy, handler());
  assert.equal((await get(socketPath, `http://127.0.0.1:${target.port}/`)).status, 403);
  config.current = network({ allow: [`127.0.0.1:${target.port}`] });
  assert.equal((await get(socketPath, `http://127.0.0.1:${target.port}/`)).status, 200);
  await proxy.close();
});

test('ask: "once" lets this request through and asks again next time; "session" allows the host:port; "deny" refuses', async () => {
  const target = await echoHttp();
  const answers: EgressAnswer[] = ['once', 'once', 'session', 'deny'];
  const { proxy, socketPath } = await startProxy(
    network({ ask: true }),
    { 'api.example.test': [PUBLIC], 'other.example.test': [PUBLIC] },
    { [PUBLIC]: target.port },
  );
  const h = handler(async () => answers.shift() ?? 'deny');
  run(proxy, h);
  assert.equal((await get(socketPath, 'http://api.example.test/')).status, 200);
  assert.equal((await get(socketPath, 'http://api.example.test/')).status, 200);
  assert.equal(h.asked.length, 2);
  assert.equal((await get(socketPath, 'http://api.example.test/')).status, 200);
  assert.equal((await get(socketPath, 'http://api.example.test/')).status, 200);
  assert.equal(h.asked.length, 3, 'a session grant asks no more');
  const denied = await get(socketPath, 'http://other.example.test/');
  assert.equal(denied.status, 403);
  assert.match(denied.body, /the user did not allow it/);
  assert.deepEqual(h.asked.at(-1), { host: 'other.example.test', port: 80 });
  const records = await h.recorded(5);
  assert.deepEqual(
    records.map((r) => r.decision),
    ['asked', 'asked', 'asked', 'allowed', 'denied'],
  );
  await proxy.close();
});

test('ask: "always" holds until sandbox.network changes (Undo), then the bridge is asked again; "session" stays', async () => {
  const target = await echoHttp();
  const answers: EgressAnswer[] = ['always', 'session', 'deny'];
  const names = { 'always.example.test': [PUBLIC], 'session.example.test': [PUBLIC] };
  const { proxy, socketPath, config } = await startProxy(network({ ask: true }), names, { [PUBLIC]: target.port });
  const h = handler(async () => answers.shift() ?? 'deny');
  run(proxy, h);
  assert.equal((await get(socketPath, 'http://always.example.test/')).status, 200);
  assert.equal((await get(socketPath, 'http://session.example.test/')).status, 200);
  assert.equal((await get(socketPath, 'http://always.example.test/')).status, 200);
  assert.equal(h.asked.length, 2, 'granted: not asked again while the setting stands');
  // The setting changes (a reload: VS Code's Undo takes the host out of sandbox.network.allow).
  config.current = network({ ask: true });
  assert.equal((await get(socketPath, 'http://session.example.test/')).status, 200);
  assert.equal(h.asked.length, 2, 'a session grant outlives the change');
  const again = await get(socketPath, 'http://always.example.test/');
  assert.equal(again.status, 403);
  assert.deepEqual(h.asked.at(-1), { host: 'always.example.test', port: 80 });
  assert.deepEqual(
    (await h.recorded(5)).map((r) => r.decision),
    ['asked', 'asked', 'allowed', 'allowed', 'denied'],
  );
  await proxy.close();
});

test('ask: a rejected question, a run that ends while asking, ask off and no handler each refuse without connecting', async () => {
  const target = await echoHttp();
  const names = { 'api.example.test': [PUBLIC] };
  const routes = { [PUBLIC]: target.port };
  const { proxy, socketPath, config, connects } = await startProxy(network({ ask: true }), names, routes);

  const cannot = handler(() => Promise.reject(new Error('the client cannot ask (no elicitation)')));
  run(proxy, cannot);
  const rejected = await get(socketPath, 'http://api.example.test/');
  assert.equal(rejected.status, 403);
  assert.match(rejected.body, /asking failed \(the client cannot ask \(no elicitation\)\)\. Add "api\.example\.test:80"/);
  await proxy.endRun();

  const stop = new AbortController();
  const waiting = handler(
    (_, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')))),
  );
  run(proxy, waiting, 'r2', stop.signal);
  const pending = get(socketPath, 'http://api.example.test/');
  await until('the question', () => waiting.asked.length === 1);
  stop.abort();
  const aborted = await pending;
  assert.equal(aborted.status, 403);
  assert.equal((await waiting.recorded(1))[0]?.decision, 'denied');
  await proxy.endRun();

  const noHandler = await (async () => {
    run(proxy, undefined, 'r3');
    return get(socketPath, 'http://api.example.test/');
  })();
  assert.equal(noHandler.status, 403);
  assert.match(noHandler.body, /not in sandbox\.network\.allow/);

  config.current = network({ ask: false });
  const off = handler(async () => 'once');
  run(proxy, off, 'r4');
  assert.equal((await get(socketPath, 'http://api.example.test/')).status, 403);
  assert.equal(off.asked.length, 0);
  assert.equal((await off.recorded(1))[0]?.decision, 'refused');
  assert.deepEqual(connects, []);
  await proxy.close();
});

test('ask: five concurrent requests to one host share one question', async () => {
  const target = await echoHttp();
  const { proxy, socketPath } = await startProxy(network({ ask: true }), { 'api.example.test': [PUBLIC] }, { [PUBLIC]: target.port });
  let answer: (value: EgressAnswer) => void = () => {};
  const h = handler(() => new Promise<EgressAnswer>((resolve) => (answer = resolve)));
  run(proxy, h);
  const requests = Array.from({ length: 5 }, () => get(socketPath, 'http://api.example.test/'));
  await until('five requests waiting', () => proxy.openRequests === 5);
  assert.equal(h.asked.length, 1);
  answer('once');
  const answers = await Promise.all(requests);
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200, 200],
  );
  assert.equal(h.asked.length, 1);
  assert.deepEqual(
    (await h.recorded(5)).map((r) => r.decision),
    Array(5).fill('asked'),
  );
  await proxy.close();
});

test('caps, one at a time: requests per run, connections at once, bytes per run; each resets with the next run', async () => {
  const target = await echoHttp('x'.repeat(4096));
  const echo = await echoTcp();
  const allow = [`127.0.0.1:${target.port}`, `127.0.0.1:${echo.port}`];
  const { proxy, socketPath, config } = await startProxy(network({ allow, maxRequestsPerRun: 2 }));
  const url = `http://127.0.0.1:${target.port}/`;

  const first = handler();
  run(proxy, first);
  assert.equal((await get(socketPath, url)).status, 200);
  assert.equal((await get(socketPath, url)).status, 200);
  const third = await get(socketPath, url);
  assert.equal(third.status, 403);
  assert.match(third.body, /this run made 2 requests through the proxy, the limit of sandbox\.network\.maxRequestsPerRun/);
  assert.equal((await first.recorded(3))[2]?.decision, 'capped');
  await proxy.endRun();

  config.current = network({ allow, maxConnections: 2 });
  const second = handler();
  run(proxy, second, 'r2');
  assert.equal((await get(socketPath, url)).status, 200, 'a new run has a new count');
  const a = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  const b = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.deepEqual([a.status, b.status], [200, 200]);
  const c = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(c.status, 403);
  assert.match(await c.body, /2 connections through the proxy are open already, the limit of sandbox\.network\.maxConnections/);
  a.socket.end();
  await second.recorded(3);
  const d = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(d.status, 200, 'a closed tunnel frees its place');
  await proxy.endRun();

  config.current = network({ allow, maxBytesPerRun: 1024 });
  const third2 = handler();
  run(proxy, third2, 'r3');
  const tunnel = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(await roundTrip(tunnel.socket, 'y'.repeat(400)), 'y'.repeat(400));
  const cut = await roundTrip(tunnel.socket, 'z'.repeat(400));
  assert.ok(cut.length < 400, 'the echo that goes over the cap is not passed on');
  const [record] = await third2.recorded(1);
  assert.equal(record?.decision, 'capped');
  assert.match(record?.reason ?? '', /1 KiB through the proxy, the limit of sandbox\.network\.maxBytesPerRun/);
  assert.ok(record!.bytesIn + record!.bytesOut <= 1024);
  const later = await get(socketPath, url);
  assert.equal(later.status, 403);
  assert.match(later.body, /maxBytesPerRun/);
  await proxy.endRun();

  run(proxy, handler(), 'r4');
  const big = await get(socketPath, url);
  assert.equal(big.status, 403, 'a response over the cap is refused before its headers go out');
  assert.match(big.body, /maxBytesPerRun/);
  await proxy.close();
});

test('caps under concurrency: 20 requests against maxRequestsPerRun 5, 10 tunnels against maxConnections 3', async () => {
  const target = await echoHttp();
  const echo = await echoTcp();
  const allow = [`127.0.0.1:${target.port}`, `127.0.0.1:${echo.port}`];
  const { proxy, socketPath, config } = await startProxy(network({ allow, maxRequestsPerRun: 5 }));
  const h = handler();
  run(proxy, h);
  const answers = await Promise.all(Array.from({ length: 20 }, () => get(socketPath, `http://127.0.0.1:${target.port}/`)));
  assert.equal(answers.filter((a) => a.status === 200).length, 5);
  assert.equal(answers.filter((a) => a.status === 403 && /maxRequestsPerRun/.test(a.body)).length, 15);
  const records = await h.recorded(20);
  assert.equal(records.filter((r) => r.decision === 'capped').length, 15);
  await proxy.endRun();

  config.current = network({ allow, maxConnections: 3 });
  run(proxy, handler(), 'r2');
  const tunnels = await Promise.all(Array.from({ length: 10 }, () => connectThrough(socketPath, `127.0.0.1:${echo.port}`)));
  assert.equal(tunnels.filter((t) => t.status === 200).length, 3);
  assert.equal(tunnels.filter((t) => t.status === 403).length, 7);
  await proxy.close();
});

test('a listed name that does not resolve, or a host that refuses the connection, is a 502 recorded as failed', async () => {
  const closedPort = await (async () => {
    const server = createTcpServer();
    const port = await listening(server);
    server.close();
    await once(server, 'close');
    return port;
  })();
  const { proxy, socketPath } = await startProxy(network({ allow: ['*.example.test', `127.0.0.1:${closedPort}`] }));
  const h = handler();
  run(proxy, h);
  const unresolved = await get(socketPath, 'http://nowhere.example.test/');
  assert.equal(unresolved.status, 502);
  assert.match(unresolved.body, /could not reach nowhere\.example\.test:80: the name did not resolve \(getaddrinfo ENOTFOUND/);
  const refused = await connectThrough(socketPath, `127.0.0.1:${closedPort}`);
  assert.equal(refused.status, 502);
  assert.match(refused.statusMessage, /the connection failed/);
  assert.deepEqual(
    (await h.recorded(2)).map((r) => r.decision),
    ['failed', 'failed'],
  );
  await proxy.close();
});

test('one keep-alive connection carries many requests; an upgrade is a 400; close() ends tunnels and idle connections', async () => {
  const target = await echoHttp();
  const echo = await echoTcp();
  const { proxy, socketPath } = await startProxy(network({ allow: [`127.0.0.1:${target.port}`, `127.0.0.1:${echo.port}`] }));
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  const h = handler();
  run(proxy, h);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 15; i++)
    assert.equal((await get(socketPath, `http://127.0.0.1:${target.port}/${i}`, {}, 'GET', undefined, agent)).status, 200);
  const upgrade = await get(socketPath, `http://127.0.0.1:${target.port}/`, { Connection: 'Upgrade', Upgrade: 'websocket' }).catch(
    (error: Error) => error,
  );
  assert.ok(!(upgrade instanceof Error) && upgrade.status === 400 && /CONNECT/.test(upgrade.body), String(upgrade));
  const tunnel = await connectThrough(socketPath, `127.0.0.1:${echo.port}`);
  assert.equal(await roundTrip(tunnel.socket, 'still open'), 'still open');
  const tunnelClosed = once(tunnel.socket, 'close');
  await proxy.close();
  await tunnelClosed;
  agent.destroy();
  process.off('warning', onWarning);
  assert.deepEqual(warnings, []);
  assert.equal(h.records.length, 16);
});

test('the byte cap under concurrency: four tunnels echoing at once move no more than maxBytesPerRun together', async () => {
  const echo = await echoTcp();
  const { proxy, socketPath } = await startProxy(network({ allow: [`127.0.0.1:${echo.port}`], maxBytesPerRun: 1024 }));
  const h = handler();
  run(proxy, h);
  const tunnels = await Promise.all(Array.from({ length: 4 }, () => connectThrough(socketPath, `127.0.0.1:${echo.port}`)));
  assert.deepEqual(
    tunnels.map((t) => t.status),
    [200, 200, 200, 200],
  );
  const echoed = await Promise.all(tunnels.map((t) => roundTrip(t.socket, 'w'.repeat(300))));
  assert.ok(echoed.filter((text) => text.length === 300).length <= 1, 'at most one full round trip fits in 1 KiB');
  await proxy.endRun();
  const records = await h.recorded(4);
  assert.ok(records.reduce((sum, r) => sum + r.bytesIn + r.bytesOut, 0) <= 1024);
  assert.ok(records.filter((r) => r.decision === 'capped').length >= 3, JSON.stringify(records));
  await proxy.close();
});

test('an IPv6 loopback server listed exactly as [::1]:PORT is reached', async (t) => {
  const server = createTcpServer((socket) => socket.pipe(socket));
  servers.push(server);
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, '::1', () => resolve(true));
  });
  if (!bound) return t.skip('no IPv6 loopback here');
  const port = (server.address() as AddressInfo).port;
  const dir = await mkdtemp(join(tmpdir(), 'cem-egress-'));
  made.push(dir);
  const proxy = new EgressProxy({
    socketPath: join(dir, 'p.sock'),
    session: 's',
    network: () => network({ allow: [`[::1]:${port}`] }),
    lookup: () => Promise.reject(new Error('no lookup expected')),
  });
  proxies.push(proxy);
  await proxy.listen();
  run(proxy, handler());
  const tunnel = await connectThrough(proxy.socketPath, `[0:0::1]:${port}`);
  assert.equal(tunnel.status, 200);
  assert.equal(await roundTrip(tunnel.socket, 'six'), 'six');
  const other = await connectThrough(proxy.socketPath, `[::1]:${port + 1 > 65535 ? 1 : port + 1}`);
  assert.equal(other.status, 403);
  await proxy.close();
});
