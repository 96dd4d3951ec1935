// The sandbox's way out (sandbox.network), wired, against real Podman and real Docker: each
// container gets a private folder with its proxy's unix socket mounted at /run/cem-net, the
// kernel's forwarder on loopback makes it an ordinary HTTP_PROXY, and the container keeps no
// interface but loopback. The proxy here is a stand-in on the socket (it answers every request
// "200 hello" and tunnels CONNECT to an echo), recording what it got and which run owned it.
// The WebAssembly sandbox has none, and says why.
import assert from 'node:assert/strict';
import { chmodSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import { SessionManager } from '../../src/sandbox/sessions/manager.ts';
import type { StartEgressProxy } from '../../src/sandbox/container/egress-link.ts';
import { TEST_DATA_IMAGE, testRuntimes, testSandbox } from '../helpers/env.ts';
import { servePipIndex } from '../helpers/pip-index.ts';
import { until } from '../helpers/wait.ts';

const NETWORK = { allow: ['127.0.0.1:8080'], ask: false, maxRequestsPerRun: 256, maxBytesPerRun: 1 << 30, maxConnections: 16 };

interface Seen {
  line: string;
  run: string | undefined;
}

/**
 * A stand-in proxy per container: `seen` are the request lines it got, with the run that owned
 * each. Plain HTTP to 127.0.0.1:`forward` (a server of the test's) is passed on to it.
 */
function standIn(forward?: number) {
  const seen: Seen[] = [];
  const sockets: string[] = [];
  const runs: string[] = [];
  const servers: Server[] = [];
  const start: StartEgressProxy = async ({ socketPath }) => {
    let current: string | undefined;
    const server = createServer((socket) => serve(socket, () => current, seen, forward));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    chmodSync(socketPath, 0o666);
    sockets.push(socketPath);
    servers.push(server);
    return {
      beginRun: (runId) => {
        current = runId;
        runs.push(runId);
      },
      endRun: () => (current = undefined),
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  };
  return { start, seen, sockets, runs, servers };
}

/** Reads a request head; CONNECT becomes an echo tunnel, a request for `forward` goes there, anything else gets "200 hello". */
function serve(socket: Socket, run: () => string | undefined, seen: Seen[], forward?: number): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) return;
    socket.off('data', onData);
    const line = head.subarray(0, head.indexOf('\r\n')).toString();
    seen.push({ line, run: run() });
    if (line.startsWith('CONNECT ')) {
      socket.write('HTTP/1.1 200 Connection established\r\n\r\n');
      const rest = head.subarray(end + 4);
      if (rest.length > 0) socket.write(rest);
      // An echo that ends when the code ends its side.
      socket.pipe(socket);
      return;
    }
    if (forward && line.includes(` http://127.0.0.1:${forward}/`)) {
      // The origin takes the absolute form of every request on this connection as it comes.
      const origin = connect(forward, '127.0.0.1', () => origin.write(head));
      origin.on('error', () => socket.destroy());
      socket.pipe(origin).pipe(socket);
      return;
    }
    socket.end('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello');
  };
  socket.on('data', onData);
  socket.on('error', () => undefined);
}

const FETCH = `
import os, urllib.request
out = {
    'body': urllib.request.urlopen('http://127.0.0.1:8080/x', timeout=10).read().decode(),
    'env': {k: os.environ.get(k) for k in ('HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY', 'no_proxy')},
    'interfaces': sorted(os.listdir('/sys/class/net')),
    'dev': sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]),
}
out
`;

/** Through the forwarder by hand: a CONNECT tunnel, 1 MiB each way, and the half-close passed on. */
const TUNNEL = `
import os, socket
port = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])
s = socket.create_connection(('127.0.0.1', port), timeout=20)
s.sendall(b'CONNECT example.com:443 HTTP/1.1\\r\\nHost: example.com:443\\r\\n\\r\\n')
reply = b''
while b'\\r\\n\\r\\n' not in reply:
    reply += s.recv(100)
payload = os.urandom(1 << 20)
s.sendall(payload)
s.shutdown(socket.SHUT_WR)
back = b''
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    back += chunk
(reply.split(b'\\r\\n')[0].decode(), back == payload)
`;

for (const runtime of testRuntimes()) {
  describe(`the sandbox's way out on ${runtime}`, () => {
    let proxy: ReturnType<typeof standIn>;
    let manager: SessionManager;
    before(() => {
      proxy = standIn();
      manager = new SessionManager(testSandbox(runtime, { network: NETWORK, prewarm: false }), { egressProxy: proxy.start });
    });
    after(() => manager.close());

    test('urllib reaches the proxy through HTTP_PROXY, owned by the run, and the container has only loopback', async () => {
      const result = await manager.execute(FETCH, { session: 'net', runId: 'run-fetch' });
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      // This machine's engines run containers on its own kernel (no VM, engines/vm.ts): nothing said about the network.
      assert.doesNotMatch(result.stderr, /sandbox\.network is set/);
      const value = result.value ?? '';
      assert.match(value, /'body': 'hello'/);
      const port = /'HTTP_PROXY': 'http:\/\/127\.0\.0\.1:(\d+)'/.exec(value)?.[1];
      assert.ok(port, value);
      for (const name of ['HTTPS_PROXY', 'http_proxy', 'https_proxy'])
        assert.match(value, new RegExp(`'${name}': 'http://127.0.0.1:${port}'`));
      assert.match(value, /'NO_PROXY': '', 'no_proxy': ''/);
      assert.match(value, /'interfaces': \['lo'\]/);
      assert.match(value, /'dev': \['lo'\]/);
      assert.deepEqual(
        proxy.seen.filter((s) => s.line.startsWith('GET ')),
        [{ line: 'GET http://127.0.0.1:8080/x HTTP/1.1', run: 'run-fetch' }],
      );
    });

    test('a CONNECT tunnel carries a megabyte each way and its end', async () => {
      const result = await manager.execute(TUNNEL, { session: 'net', runId: 'run-tunnel' });
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      assert.equal(result.value, "('HTTP/1.1 200 Connection established', True)");
      assert.deepEqual(proxy.seen.at(-1), { line: 'CONNECT example.com:443 HTTP/1.1', run: 'run-tunnel' });
    });

    test('the forwarder is no thread left running by an interrupted run, and survives a reset', async () => {
      const stopped = await manager.execute('import time\ntime.sleep(60)', { session: 'net', timeoutMs: 1000 });
      assert.equal(stopped.status, 'timeout');
      assert.equal(stopped.sessionLost, false, JSON.stringify(stopped.error));
      const again = await manager.execute('import urllib.request\nurllib.request.urlopen("http://127.0.0.1:8080/after-timeout").read()', {
        session: 'net',
      });
      assert.equal(again.value, "b'hello'", JSON.stringify(again.error));
      const reset = await manager.execute('import urllib.request\nurllib.request.urlopen("http://127.0.0.1:8080/after-reset").read()', {
        session: 'net',
        reset: true,
        runId: 'run-reset',
      });
      assert.equal(reset.value, "b'hello'", JSON.stringify(reset.error));
      assert.deepEqual(proxy.seen.at(-1), { line: 'GET http://127.0.0.1:8080/after-reset HTTP/1.1', run: 'run-reset' });
    });

    test('requests after a run ended belong to no run', async () => {
      const result = await manager.execute(
        'import threading, time, urllib.request\n' +
          'def late():\n    time.sleep(0.5)\n    urllib.request.urlopen("http://127.0.0.1:8080/late").read()\n' +
          'threading.Thread(target=late, daemon=True).start()',
        { session: 'net' },
      );
      assert.equal(result.status, 'ok', JSON.stringify(result.error));
      const late = await until('the late request', () => proxy.seen.find((s) => s.line.includes('/late')));
      assert.equal(late.run, undefined);
    });

    test("the socket folder goes with the session's container, and every one with the sandbox", async () => {
      const live = () => proxy.sockets.filter((socket) => existsSync(socket));
      const before = live();
      assert.ok(before.length > 0);
      assert.equal(await manager.closeSession('net'), true);
      await until("the session's socket folder removed", () => live().length === before.length - 1);
      await manager.close();
      await until('every socket folder removed', () => live().length === 0);
    });

    test('with the network off: no mount, no proxy variables, no proxy started', async () => {
      const plainProxy = standIn();
      const plain = new SessionManager(testSandbox(runtime, { prewarm: false }), { egressProxy: plainProxy.start });
      try {
        const result = await plain.execute(
          "import os\n(os.path.exists('/run/cem-net'), sorted(k for k in os.environ if 'proxy' in k.lower() and os.environ[k]))",
        );
        assert.equal(result.value, '(False, [])', JSON.stringify(result.error));
        assert.deepEqual(plainProxy.sockets, []);
      } finally {
        await plain.close();
      }
    });

    test('a socket no proxy answers (as in a VM the check did not recognise): the request gets a 502 that says why', async () => {
      // A socket file nothing listens on: what a container sees of a socket its engine's VM cannot carry.
      const deaf: StartEgressProxy = async ({ socketPath }) => {
        execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', socketPath]);
        chmodSync(socketPath, 0o666);
        return { beginRun: () => undefined, endRun: () => undefined, close: async () => undefined };
      };
      const unreached = new SessionManager(testSandbox(runtime, { network: NETWORK, prewarm: false }), { egressProxy: deaf });
      try {
        const result = await unreached.execute(
          'import urllib.request, urllib.error\nout = None\n' +
            'try:\n    urllib.request.urlopen("http://127.0.0.1:8080/x", timeout=10).read()\n' +
            'except urllib.error.HTTPError as e:\n    out = (e.code, e.read().decode())\nout',
        );
        assert.match(result.value ?? '', /^\(502, "The sandbox's network proxy could not be reached \(/, JSON.stringify(result.error));
        assert.match(
          result.value ?? '',
          /runs containers in a VM, which cannot carry the proxy's socket: sandbox\.network needs an engine on this machine's kernel/,
        );
      } finally {
        await unreached.close();
      }
    });

    test('turned on after the spare started: a new session gets a container with the way out, not that spare', async () => {
      const laterProxy = standIn();
      const config = testSandbox(runtime, { prewarm: true });
      const later = new SessionManager(config, { egressProxy: laterProxy.start });
      try {
        await later.prewarm();
        // As the bridge applies a changed setting: the same configuration object, its network replaced.
        config.network = NETWORK;
        const result = await later.execute("import os\nos.path.exists('/run/cem-net')", { session: 'later' });
        assert.equal(result.value, 'True', JSON.stringify(result.error));
        assert.equal(laterProxy.sockets.length > 0, true);
      } finally {
        await later.close();
      }
    });

    test('with the index listed, an import error says how pip installs into the session, and that works', async () => {
      const index = await servePipIndex({ 'cem-hello': { version: '1.0', value: 'hello' } });
      const indexProxy = standIn(Number(new URL(index.url).port));
      const network = { ...NETWORK, allow: [new URL(index.url).host] };
      const pip = new SessionManager(testSandbox(runtime, { image: TEST_DATA_IMAGE, network, pipIndexUrl: index.url, prewarm: false }), {
        egressProxy: indexProxy.start,
      });
      try {
        const missing = await pip.execute('import cem_hello');
        assert.equal(missing.error?.type, 'ModuleNotFoundError');
        const command = `python3 -m pip install --target /tmp/pkgs --index-url ${index.url} cem_hello`;
        assert.ok(missing.error?.message.includes(command), missing.error?.message);
        const installed = await pip.execute(
          'import subprocess, sys\n' +
            `done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", "/tmp/pkgs", "--index-url", "${index.url}", "cem_hello"], capture_output=True, text=True)\n` +
            'sys.path.insert(0, "/tmp/pkgs")\nimport cem_hello\n(done.returncode, cem_hello.VALUE)',
          { timeoutMs: 120_000 },
        );
        assert.equal(installed.value, "(0, 'hello')", JSON.stringify(installed.error) + installed.stdout + installed.stderr);
        assert.ok(
          index.requests.some((path) => path.startsWith('/files/')),
          index.requests.join(' '),
        );
      } finally {
        await pip.close();
        await index.close();
      }
    });
  });
}

describe('the WebAssembly sandbox with sandbox.network set', () => {
  let manager: SessionManager;
  before(() => {
    manager = new SessionManager(defaultSandboxConfig({ backend: 'wasm', prewarm: false, network: NETWORK }));
  });
  after(() => manager.close());

  test('has no network, says why once, and urlopen raises an error that names it', async () => {
    const first = await manager.execute("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:8080/x', timeout=5).read()");
    assert.equal(first.status, 'error');
    assert.match(first.stderr, /^\[sandbox\] sandbox\.network is set, but the WebAssembly sandbox has no network at all/);
    assert.equal(first.error?.type, 'URLError');
    assert.match(
      first.error?.message ?? '',
      /The WebAssembly sandbox has no network, whatever sandbox\.network allows: only the container sandbox/,
    );
    const second = await manager.execute('import os\nsorted(k for k in os.environ if "proxy" in k.lower())');
    assert.equal(second.value, '[]', JSON.stringify(second.error));
    assert.doesNotMatch(second.stderr, /sandbox\.network/, 'said once');
  });
});
